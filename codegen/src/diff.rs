//! `codegen diff`: what an edit of a document does to the platforms calling the API (a level per
//! change) and to the server implementing it (the generated items and handlers it alters).
//!
//! Both documents go through the parser, so the comparison is of what the generator
//! understood: operations match by method and path template (parameter names aside), types by
//! what references them, and the server side is named from the same IR the emitter renders.
//!
//! The server model: a handler written against the old crate reads every input field it knew,
//! builds every response variant and every response model with struct literals, and matches
//! request enums exhaustively. A change `breaks_build` when such a handler stops compiling
//! (`tests/diff_compiler.rs` holds the report to the compiler on that model).

mod render;
mod schema;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::emit::Emitter;
use crate::ir::{Api, AuthMode, Body, Location, Operation, Param, Requirement, Response, Status};

pub use render::Format;

/// How a change can affect a client written against the old document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    /// Can fail some clients (a new enum value or error status in a response).
    Warning,
    /// A client written against the old document can fail.
    Breaking,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Breaking => "breaking",
        }
    }
}

/// Which way data flows where a schema changed: what the client sends, or what it receives
/// (responses and callback payloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Request,
    Response,
}

impl Dir {
    fn prefix(self) -> &'static str {
        match self {
            Dir::Request => "request",
            Dir::Response => "response",
        }
    }
    /// A narrower set of accepted values: breaks senders, reassures receivers.
    fn tighter(self) -> Level {
        match self {
            Dir::Request => Level::Breaking,
            Dir::Response => Level::Info,
        }
    }
    /// A wider set: harmless to senders, a surprise for receivers that relied on the bound.
    fn looser(self) -> Level {
        match self {
            Dir::Request => Level::Info,
            Dir::Response => Level::Warning,
        }
    }
}

/// One change between the two documents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The rule (kebab-case, stable).
    pub id: String,
    pub level: Level,
    /// `METHOD /path` when the change concerns exactly one operation.
    pub operation: Option<String>,
    /// Every operation it concerns (a shared schema's change is reported once for all).
    pub operations: Vec<String>,
    /// Where, in the new document (in the old one for what was removed).
    pub pointer: String,
    pub message: String,
    pub server: ServerImpact,
}

/// The server side of a change.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ServerImpact {
    /// Whether a server that built against the old crate stops building.
    pub breaks_build: bool,
    /// The generated items it alters (`BookTransfersApi::create_book_transfer`,
    /// `book_transfers::CreateBookTransferInput`, `models::BookTransfer`).
    pub items: Vec<String>,
    /// The handlers implementing them (`Trait::method`).
    pub handlers: Vec<String>,
}

/// Counts by level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Summary {
    pub breaking: usize,
    pub warning: usize,
    pub info: usize,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub base: String,
    pub spec: String,
    pub changes: Vec<Change>,
    pub summary: Summary,
}

impl Report {
    pub fn new(base: &str, spec: &str, changes: Vec<Change>) -> Report {
        let mut summary = Summary::default();
        for c in &changes {
            match c.level {
                Level::Breaking => summary.breaking += 1,
                Level::Warning => summary.warning += 1,
                Level::Info => summary.info += 1,
            }
        }
        Report {
            base: base.to_string(),
            spec: spec.to_string(),
            changes,
            summary,
        }
    }

    /// Whether some change is at `level` or worse.
    pub fn has(&self, level: Level) -> bool {
        self.changes.iter().any(|c| c.level >= level)
    }
}

/// Every change from `old` to `new`, in the new document's order (removals after).
pub fn diff(old: &Api, new: &Api) -> Vec<Change> {
    let mut d = Differ {
        old: Side::new(old),
        new: Side::new(new),
        renames: BTreeMap::new(),
        out: Vec::new(),
    };
    d.renamed_types();
    d.security_schemes();
    d.operations();
    merge(d.out)
}

/// One document and its emitter (for the Rust types its items get).
pub(crate) struct Side<'a> {
    pub(crate) api: &'a Api,
    pub(crate) emit: Emitter<'a>,
}

impl<'a> Side<'a> {
    fn new(api: &'a Api) -> Self {
        Side {
            api,
            emit: Emitter::new(api),
        }
    }

    fn tag_of(&self, o: &Operation) -> (&'a str, &'a str) {
        let tag = self
            .api
            .tags
            .iter()
            .find(|t| t.name == o.tag)
            .expect("every operation's tag is listed");
        (&tag.rust, &tag.module)
    }

    /// `Trait::method`, as the compiler names a handler.
    pub(crate) fn handler(&self, o: &Operation) -> String {
        format!("{}Api::{}", self.tag_of(o).0, o.rust)
    }

    pub(crate) fn input(&self, o: &Operation) -> String {
        format!("{}::{}Input", self.tag_of(o).1, o.type_stem)
    }

    pub(crate) fn response(&self, o: &Operation) -> String {
        format!("{}::{}Response", self.tag_of(o).1, o.type_stem)
    }

    pub(crate) fn model(&self, type_name: &str) -> String {
        format!("models::{}", self.emit.typedef(type_name).rust)
    }
}

/// What the changes found in one operation share.
pub(crate) struct OpCx {
    pub(crate) operation: String,
    pub(crate) handler: String,
    pub(crate) input: String,
    pub(crate) response: String,
    /// (old type, new type, direction) pairs already compared in this operation (recursion).
    pub(crate) visited: Vec<(String, String, bool)>,
}

pub(crate) struct Differ<'a> {
    pub(crate) old: Side<'a>,
    pub(crate) new: Side<'a>,
    /// Old type name → new type name, for schemas renamed with the same content.
    pub(crate) renames: BTreeMap<String, String>,
    out: Vec<Change>,
}

/// A change before its server side is attached.
pub(crate) struct Finding<'s> {
    pub(crate) id: String,
    pub(crate) level: Level,
    pub(crate) pointer: &'s str,
    pub(crate) message: String,
    pub(crate) breaks_build: bool,
    pub(crate) items: Vec<String>,
}

fn tokens(t: proc_macro2::TokenStream) -> String {
    t.to_string()
}

fn op_label(o: &Operation) -> String {
    format!("{} {}", o.method.to_uppercase(), o.path)
}

/// The path template with parameter names blanked: `/a/{id}` and `/a/{a_id}` are one path.
fn path_key(o: &Operation) -> (String, String) {
    let mut key = String::new();
    let mut in_param = false;
    for ch in o.path.chars() {
        match ch {
            '{' => {
                in_param = true;
                key.push_str("{}");
            }
            '}' => in_param = false,
            _ if in_param => {}
            _ => key.push(ch),
        }
    }
    (o.method.to_lowercase(), key)
}

impl<'a> Differ<'a> {
    pub(crate) fn push(&mut self, cx: Option<&OpCx>, f: Finding) {
        let mut handlers = Vec::new();
        if let Some(cx) = cx {
            handlers.push(cx.handler.clone());
        }
        self.push_with(cx, f, handlers);
    }

    /// Several findings of one operation at one place, with one server side.
    fn push_all(
        &mut self,
        cx: &OpCx,
        found: Vec<(&str, Level, String, String)>,
        breaks_build: bool,
        item: &str,
    ) {
        for (id, level, message, pointer) in found {
            let f = Finding {
                id: id.into(),
                level,
                pointer: &pointer,
                message,
                breaks_build,
                items: vec![item.to_string()],
            };
            self.push(Some(cx), f);
        }
    }

    fn push_with(&mut self, cx: Option<&OpCx>, f: Finding, handlers: Vec<String>) {
        let operations: Vec<String> = cx.map(|c| c.operation.clone()).into_iter().collect();
        self.out.push(Change {
            id: f.id,
            level: f.level,
            operation: operations.first().cloned(),
            operations,
            pointer: f.pointer.to_string(),
            message: f.message,
            server: ServerImpact {
                breaks_build: f.breaks_build,
                items: f.items,
                handlers,
            },
        });
    }

    fn operations(&mut self) {
        let old_ops: BTreeMap<(String, String), &Operation> = self
            .old
            .api
            .operations
            .iter()
            .map(|o| (path_key(o), o))
            .collect();
        let new_keys: Vec<(String, String)> =
            self.new.api.operations.iter().map(path_key).collect();
        for n in &self.new.api.operations {
            match old_ops.get(&path_key(n)) {
                Some(o) => self.operation(o, n),
                None => self.operation_added(n),
            }
        }
        for o in &self.old.api.operations {
            if !new_keys.contains(&path_key(o)) {
                self.operation_removed(o);
            }
        }
    }

    fn op_items(side: &Side, o: &Operation) -> Vec<String> {
        vec![side.handler(o), side.input(o), side.response(o)]
    }

    fn operation_added(&mut self, n: &Operation) {
        let handler = self.new.handler(n);
        let f = Finding {
            id: "operation-added".into(),
            level: Level::Info,
            pointer: &n.pointer,
            message: format!("new operation `{}` ({})", n.id, op_label(n)),
            breaks_build: true,
            items: Self::op_items(&self.new, n),
        };
        let cx = self.cx(n, n);
        self.push_with(Some(&cx), f, vec![handler]);
    }

    fn operation_removed(&mut self, o: &Operation) {
        let handler = self.old.handler(o);
        let f = Finding {
            id: "operation-removed".into(),
            level: Level::Breaking,
            pointer: &o.pointer,
            message: format!("operation `{}` ({}) was removed", o.id, op_label(o)),
            breaks_build: true,
            items: Self::op_items(&self.old, o),
        };
        let cx = OpCx {
            operation: op_label(o),
            handler: handler.clone(),
            input: self.old.input(o),
            response: self.old.response(o),
            visited: Vec::new(),
        };
        self.push_with(Some(&cx), f, vec![handler]);
    }

    fn cx(&self, _o: &Operation, n: &Operation) -> OpCx {
        OpCx {
            operation: op_label(n),
            handler: self.new.handler(n),
            input: self.new.input(n),
            response: self.new.response(n),
            visited: Vec::new(),
        }
    }

    fn operation(&mut self, o: &Operation, n: &Operation) {
        let mut cx = self.cx(o, n);
        self.identity(&cx, o, n);
        self.security(&cx, o, n);
        self.params(&mut cx, o, n);
        self.body(&mut cx, o, n);
        self.responses(&mut cx, o, n);
        self.callbacks(&mut cx, o, n);
    }

    /// operationId, the trait that holds it, `deprecated`.
    fn identity(&mut self, cx: &OpCx, o: &Operation, n: &Operation) {
        let (old_handler, new_handler) = (self.old.handler(o), self.new.handler(n));
        let mut renamed = vec![old_handler.clone()];
        if new_handler != old_handler {
            renamed.push(new_handler.clone());
        }
        if o.id != n.id {
            let f = Finding {
                id: "operation-id-changed".into(),
                level: Level::Warning,
                pointer: &n.pointer,
                message: format!(
                    "operationId `{}` became `{}` (clients generated from the document rename their method)",
                    o.id, n.id
                ),
                breaks_build: o.rust != n.rust || o.type_stem != n.type_stem,
                items: renamed.clone(),
            };
            self.push_with(Some(cx), f, renamed.clone());
        }
        if self.old.tag_of(o).0 != self.new.tag_of(n).0 {
            let f = Finding {
                id: "operation-tag-changed".into(),
                level: Level::Warning,
                pointer: &n.pointer,
                message: format!(
                    "the operation moved from tag `{}` to `{}` (clients generated by tag move the method)",
                    o.tag, n.tag
                ),
                breaks_build: true,
                items: renamed.clone(),
            };
            self.push_with(Some(cx), f, renamed);
        }
        if o.deprecated != n.deprecated {
            let (id, message) = if n.deprecated {
                ("operation-deprecated", "the operation is deprecated")
            } else {
                (
                    "operation-undeprecated",
                    "the operation is no longer deprecated",
                )
            };
            let f = Finding {
                id: id.into(),
                level: Level::Info,
                pointer: &n.pointer,
                message: message.into(),
                breaks_build: false,
                items: vec![cx.handler.clone()],
            };
            self.push(Some(cx), f);
        }
    }
}

/// Whether alternative `a` is at least as demanding as `b`: it needs every scheme of `b` with
/// at least `b`'s scopes (so a caller meeting `a` also meets `b`).
fn covers(a: &Requirement, b: &Requirement) -> bool {
    b.iter().all(|(scheme, scopes)| {
        a.iter()
            .any(|(s, sc)| s == scheme && scopes.iter().all(|x| sc.contains(x)))
    })
}

fn describe(reqs: &[Requirement]) -> String {
    if reqs.is_empty() {
        return "none".into();
    }
    reqs.iter()
        .map(|alt| {
            if alt.is_empty() {
                return "anonymous".to_string();
            }
            alt.iter()
                .map(|(s, scopes)| {
                    if scopes.is_empty() {
                        s.clone()
                    } else {
                        format!("{s}[{}]", scopes.join(" "))
                    }
                })
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

impl<'a> Differ<'a> {
    /// A caller that met some old alternative must meet a new one; the principal argument
    /// follows the mode (none, required, optional).
    fn security(&mut self, cx: &OpCx, o: &Operation, n: &Operation) {
        // No requirement at all admits everyone, like an anonymous alternative.
        let open = |reqs: &[Requirement]| -> Vec<Requirement> {
            if reqs.is_empty() {
                vec![Vec::new()]
            } else {
                reqs.to_vec()
            }
        };
        let (old, new) = (open(&o.security), open(&n.security));
        let tightened = old.iter().any(|a| !new.iter().any(|b| covers(a, b)));
        let loosened = new.iter().any(|b| !old.iter().any(|a| covers(b, a)));
        let breaks_build = o.auth_mode() != n.auth_mode();
        let mode = |m: AuthMode| match m {
            AuthMode::None => "no principal",
            AuthMode::Required => "a principal",
            AuthMode::Optional => "an optional principal",
        };
        let message = format!(
            "security requirement `{}` became `{}`{}",
            describe(&o.security),
            describe(&n.security),
            if breaks_build {
                format!(
                    " (the handler takes {} instead of {})",
                    mode(n.auth_mode()),
                    mode(o.auth_mode())
                )
            } else {
                String::new()
            }
        );
        // Where the requirement is written: the operation's own, or the document's it inherits.
        let pointer = match (&n.security_json, &o.security_json) {
            (Some(_), _) => format!("{}/security", n.pointer),
            (None, Some(_)) => format!("{}/security", o.pointer),
            (None, None) => "#/security".to_string(),
        };
        for (id, level, happened) in [
            ("security-requirement-tightened", Level::Breaking, tightened),
            (
                "security-requirement-loosened",
                Level::Info,
                loosened && !tightened,
            ),
        ] {
            if happened {
                let f = Finding {
                    id: id.into(),
                    level,
                    pointer: &pointer,
                    message: message.clone(),
                    breaks_build,
                    items: vec![cx.handler.clone()],
                };
                self.push(Some(cx), f);
            }
        }
    }

    /// Declared schemes: a removed or changed scheme breaks the callers that used it.
    fn security_schemes(&mut self) {
        for o in &self.old.api.security_schemes {
            let pointer = format!(
                "#/components/securitySchemes/{}",
                crate::names::escape(&o.name)
            );
            let (id, level, message) = match self
                .new
                .api
                .security_schemes
                .iter()
                .find(|n| n.name == o.name)
            {
                None => (
                    "security-scheme-removed",
                    Level::Info,
                    format!(
                        "security scheme `{}` was removed (each operation that required it reports its own change)",
                        o.name
                    ),
                ),
                Some(n) if n.kind != o.kind => (
                    "security-scheme-changed",
                    Level::Breaking,
                    format!(
                        "security scheme `{}` changed from {:?} to {:?}",
                        o.name, o.kind, n.kind
                    ),
                ),
                Some(_) => continue,
            };
            let f = Finding {
                id: id.into(),
                level,
                pointer: &pointer,
                message,
                breaks_build: false,
                items: vec!["runtime::Hooks::authenticate".into()],
            };
            self.push(None, f);
        }
        self.security_schemes_added();
    }

    /// Newly declared schemes (information: no operation requires them yet, or its own change
    /// says so).
    fn security_schemes_added(&mut self) {
        for n in &self.new.api.security_schemes {
            if !self
                .old
                .api
                .security_schemes
                .iter()
                .any(|o| o.name == n.name)
            {
                let pointer = format!(
                    "#/components/securitySchemes/{}",
                    crate::names::escape(&n.name)
                );
                let f = Finding {
                    id: "security-scheme-added".into(),
                    level: Level::Info,
                    pointer: &pointer,
                    message: format!("new security scheme `{}`", n.name),
                    breaks_build: false,
                    items: vec!["runtime::Hooks::authenticate".into()],
                };
                self.push(None, f);
            }
        }
    }
}

fn location(l: Location) -> &'static str {
    l.wire()
}

/// Parameters match by location and name; path parameters by position (their names are not on
/// the wire, so a new name is a rename).
fn param_match<'p>(old: &'p [Param], n: &Param, new_all: &[Param]) -> Option<&'p Param> {
    let same = |p: &&Param| p.location == n.location && p.name.eq_ignore_ascii_case(&n.name);
    if n.location == Location::Path {
        let pos = new_all
            .iter()
            .filter(|p| p.location == Location::Path)
            .position(|p| p.name == n.name)?;
        return old.iter().filter(|p| p.location == Location::Path).nth(pos);
    }
    old.iter().find(same)
}

impl<'a> Differ<'a> {
    fn params(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
        for np in &n.params {
            let Some(op) = param_match(&o.params, np, &n.params) else {
                self.param_added(cx, o, np);
                continue;
            };
            self.param(cx, op, np);
        }
        for op in &o.params {
            if param_match(&n.params, op, &o.params).is_none() {
                let moved = n.params.iter().find(|p| p.name == op.name);
                let f = match moved {
                    Some(np) => Finding {
                        id: "request-parameter-moved".into(),
                        level: Level::Breaking,
                        pointer: &np.pointer,
                        message: format!(
                            "parameter `{}` moved from {} to {}",
                            op.name,
                            location(op.location),
                            location(np.location)
                        ),
                        breaks_build: op.rust != np.rust,
                        items: vec![cx.input.clone()],
                    },
                    None => Finding {
                        id: "request-parameter-removed".into(),
                        level: Level::Warning,
                        pointer: &op.pointer,
                        message: format!(
                            "{} parameter `{}` was removed (clients still sending it may be refused or ignored)",
                            location(op.location),
                            op.name
                        ),
                        breaks_build: true,
                        items: vec![cx.input.clone()],
                    },
                };
                self.push(Some(cx), f);
            }
        }
    }

    fn param_added(&mut self, cx: &OpCx, o: &Operation, np: &Param) {
        if o.params.iter().any(|p| p.name == np.name) {
            return; // reported as moved
        }
        let (id, level) = if np.required {
            ("request-required-parameter-added", Level::Breaking)
        } else {
            ("request-optional-parameter-added", Level::Info)
        };
        let f = Finding {
            id: id.into(),
            level,
            pointer: &np.pointer,
            message: format!(
                "new {} {} parameter `{}`",
                if np.required { "required" } else { "optional" },
                location(np.location),
                np.name
            ),
            breaks_build: false,
            items: vec![cx.input.clone()],
        };
        self.push(Some(cx), f);
    }

    fn param(&mut self, cx: &mut OpCx, op: &Param, np: &Param) {
        let breaks_build = tokens(self.old.emit.param_type(op, false))
            != tokens(self.new.emit.param_type(np, false));
        if op.name != np.name {
            let f = Finding {
                id: "request-parameter-renamed".into(),
                level: Level::Info,
                pointer: &np.pointer,
                message: format!("path parameter `{}` was renamed `{}`", op.name, np.name),
                breaks_build: op.rust != np.rust,
                items: vec![cx.input.clone()],
            };
            self.push(Some(cx), f);
        }
        self.param_required(cx, op, np, breaks_build);
        self.param_style(cx, op, np);
        let at = schema::At {
            dir: Dir::Request,
            old_pointer: format!("{}/schema", op.pointer),
            new_pointer: format!("{}/schema", np.pointer),
            what: format!("parameter `{}`", np.name),
            item: cx.input.clone(),
            field_types: Some((
                tokens(self.old.emit.param_type(op, false)),
                tokens(self.new.emit.param_type(np, false)),
            )),
        };
        self.schema(cx, &at, &op.schema, &np.schema);
    }

    /// A parameter that became required (breaking) or optional.
    fn param_required(&mut self, cx: &OpCx, op: &Param, np: &Param, breaks_build: bool) {
        if op.required != np.required {
            let (id, level, what) = if np.required {
                (
                    "request-parameter-became-required",
                    Level::Breaking,
                    "required",
                )
            } else {
                ("request-parameter-became-optional", Level::Info, "optional")
            };
            let f = Finding {
                id: id.into(),
                level,
                pointer: &np.pointer,
                message: format!("parameter `{}` became {what}", np.name),
                breaks_build,
                items: vec![cx.input.clone()],
            };
            self.push(Some(cx), f);
        }
    }

    /// How an array parameter is written (repeated keys or one delimited value), and its
    /// deprecation.
    fn param_style(&mut self, cx: &OpCx, op: &Param, np: &Param) {
        let is_array = |p: &Param| matches!(p.schema.kind, crate::ir::Kind::Array(_));
        if is_array(op) && is_array(np) && (op.explode, op.delimiter) != (np.explode, np.delimiter)
        {
            let style = |p: &Param| {
                if p.explode {
                    "repeated keys".to_string()
                } else {
                    format!("one value separated by `{}`", p.delimiter)
                }
            };
            let f = Finding {
                id: "request-parameter-style-changed".into(),
                level: Level::Breaking,
                pointer: &np.pointer,
                message: format!(
                    "array parameter `{}` was sent as {} and is now read as {}",
                    np.name,
                    style(op),
                    style(np)
                ),
                breaks_build: false,
                items: vec![cx.input.clone()],
            };
            self.push(Some(cx), f);
        }
        if op.deprecated != np.deprecated && np.deprecated {
            let f = Finding {
                id: "request-parameter-deprecated".into(),
                level: Level::Info,
                pointer: &np.pointer,
                message: format!("parameter `{}` is deprecated", np.name),
                breaks_build: false,
                items: vec![cx.input.clone()],
            };
            self.push(Some(cx), f);
        }
    }

    fn body(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
        let pointer = match n.body {
            Some(_) => format!("{}/requestBody", n.pointer),
            None => format!("{}/requestBody", o.pointer),
        };
        let finding = |id: &str, level, message: String, breaks_build| Finding {
            id: id.into(),
            level,
            pointer: &pointer,
            message,
            breaks_build,
            items: vec![cx.input.clone()],
        };
        let f = match (&o.body, &n.body) {
            (None, None) => return,
            (None, Some(b)) if b.required => finding(
                "request-required-body-added",
                Level::Breaking,
                "a required request body was added".into(),
                false,
            ),
            (None, Some(_)) => finding(
                "request-body-added",
                Level::Info,
                "an optional request body was added".into(),
                false,
            ),
            (Some(_), None) => finding(
                "request-body-removed",
                Level::Warning,
                "the request body was removed (clients still sending one may be refused)".into(),
                true,
            ),
            (Some(ob), Some(nb)) => return self.body_changed(cx, o, n, ob, nb),
        };
        self.push(Some(cx), f);
    }

    fn body_type(side: &Side, b: &Body) -> String {
        let t = side.emit.body_inner_type(b);
        tokens(if b.required {
            t
        } else {
            quote::quote!(::std::option::Option<#t>)
        })
    }

    fn body_changed(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation, ob: &Body, nb: &Body) {
        let pointer = format!("{}/requestBody", n.pointer);
        let types = (
            Self::body_type(&self.old, ob),
            Self::body_type(&self.new, nb),
        );
        let breaks_build = types.0 != types.1;
        let mut found = Vec::new();
        if ob.required != nb.required {
            found.push(if nb.required {
                (
                    "request-body-became-required",
                    Level::Breaking,
                    "the request body became required".to_string(),
                    pointer.clone(),
                )
            } else {
                (
                    "request-body-became-optional",
                    Level::Info,
                    "the request body became optional".to_string(),
                    pointer.clone(),
                )
            });
        }
        if ob.content_type != nb.content_type {
            found.push((
                "request-media-type-changed",
                Level::Breaking,
                format!(
                    "the request body's media type `{}` became `{}`",
                    ob.content_type, nb.content_type
                ),
                format!("{pointer}/content"),
            ));
        }
        self.push_all(cx, found, breaks_build, &cx.input.clone());
        if ob.content_type == nb.content_type {
            let media = crate::names::escape(&nb.content_type);
            let at = schema::At {
                dir: Dir::Request,
                old_pointer: format!(
                    "{}/requestBody/content/{}/schema",
                    o.pointer,
                    crate::names::escape(&ob.content_type)
                ),
                new_pointer: format!("{pointer}/content/{media}/schema"),
                what: "the request body".into(),
                item: cx.input.clone(),
                field_types: Some(types),
            };
            self.schema(cx, &at, &ob.schema, &nb.schema);
        }
    }
}

/// 2xx (and `2XX`) statuses: the answers a client is written to expect.
fn is_success(s: Status) -> bool {
    matches!(s, Status::Code(200..=299) | Status::Range(2))
}

/// A finding of a response: rule, level, message and pointer.
type Found = (&'static str, Level, String, String);

/// What a response's body says to clients: added, removed, or of another media type.
fn body_finding(or: &Response, nr: &Response, at: &str, old_at: &str) -> Option<Found> {
    let key = nr.status.key();
    Some(match (&or.content, &nr.content) {
        (None, Some(_)) => (
            "response-body-added",
            Level::Info,
            format!("status {key} now has a body"),
            format!("{at}/content"),
        ),
        (Some(_), None) => (
            "response-body-removed",
            Level::Breaking,
            format!("status {key} no longer has a body"),
            format!("{old_at}/content"),
        ),
        (Some((_, oc, _)), Some((_, nc, _))) if oc != nc => (
            "response-media-type-changed",
            Level::Breaking,
            format!("status {key}'s media type `{oc}` became `{nc}`"),
            format!("{at}/content"),
        ),
        _ => return None,
    })
}

/// What a response's headers say to clients: new, removed, or required no longer or now.
fn header_findings(or: &Response, nr: &Response, at: &str, old_at: &str) -> Vec<Found> {
    let key = nr.status.key();
    let header =
        |place: &str, name: &str| format!("{place}/headers/{}", crate::names::escape(name));
    let mut found = Vec::new();
    for nh in &nr.headers {
        let same = or
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(&nh.name));
        let (id, level, what) = match same {
            None => ("response-header-added", Level::Info, "is new"),
            Some(oh) if oh.required && !nh.required => (
                "response-header-became-optional",
                Level::Breaking,
                "became optional",
            ),
            Some(oh) if !oh.required && nh.required => (
                "response-header-became-required",
                Level::Info,
                "became required",
            ),
            Some(_) => continue,
        };
        let message = format!("header `{}` of status {key} {what}", nh.name);
        found.push((id, level, message, header(at, &nh.name)));
    }
    for oh in &or.headers {
        if !nr
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case(&oh.name))
        {
            let level = if oh.required {
                Level::Breaking
            } else {
                Level::Warning
            };
            let message = format!("header `{}` of status {key} was removed", oh.name);
            found.push((
                "response-header-removed",
                level,
                message,
                header(old_at, &oh.name),
            ));
        }
    }
    found
}

impl<'a> Differ<'a> {
    fn responses(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
        for nr in &n.responses {
            let pointer = format!("{}/responses/{}", n.pointer, nr.status.key());
            match o.responses.iter().find(|r| r.status == nr.status) {
                Some(or) => self.response(cx, o, n, or, nr),
                None => {
                    let kind = if is_success(nr.status) {
                        "success"
                    } else {
                        "error"
                    };
                    let f = Finding {
                        id: "response-status-added".into(),
                        level: Level::Warning,
                        pointer: &pointer,
                        message: format!(
                            "new {kind} status {} (clients may not expect it)",
                            nr.status.key()
                        ),
                        breaks_build: false,
                        items: vec![cx.response.clone()],
                    };
                    self.push(Some(cx), f);
                }
            }
        }
        for or in &o.responses {
            if n.responses.iter().any(|r| r.status == or.status) {
                continue;
            }
            let pointer = format!("{}/responses/{}", o.pointer, or.status.key());
            let (id, level, message) = if is_success(or.status) {
                (
                    "response-success-status-removed",
                    Level::Breaking,
                    format!("success status {} was removed", or.status.key()),
                )
            } else {
                (
                    "response-error-status-removed",
                    Level::Info,
                    format!("error status {} is no longer documented", or.status.key()),
                )
            };
            let f = Finding {
                id: id.into(),
                level,
                pointer: &pointer,
                message,
                breaks_build: true,
                items: vec![cx.response.clone()],
            };
            self.push(Some(cx), f);
        }
    }

    fn variant_types(side: &Side, r: &Response) -> String {
        side.emit
            .response_fields(r)
            .into_iter()
            .map(tokens)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A status both documents declare: its body and headers, then its body's schema.
    fn response(
        &mut self,
        cx: &mut OpCx,
        o: &Operation,
        n: &Operation,
        or: &Response,
        nr: &Response,
    ) {
        let pointer = format!("{}/responses/{}", n.pointer, nr.status.key());
        let old_pointer = format!("{}/responses/{}", o.pointer, or.status.key());
        let breaks_build = Self::variant_types(&self.old, or) != Self::variant_types(&self.new, nr);
        let mut found: Vec<Found> = body_finding(or, nr, &pointer, &old_pointer)
            .into_iter()
            .collect();
        found.extend(header_findings(or, nr, &pointer, &old_pointer));
        self.push_all(cx, found, breaks_build, &cx.response.clone());
        self.response_schema(cx, o, or, nr, &pointer);
    }

    /// The body schema of a response whose media type stayed, compared as data flowing to
    /// clients.
    fn response_schema(
        &mut self,
        cx: &mut OpCx,
        o: &Operation,
        or: &Response,
        nr: &Response,
        pointer: &str,
    ) {
        let key = nr.status.key();
        if let (Some((_, oc, os)), Some((_, nc, ns))) = (&or.content, &nr.content)
            && oc == nc
        {
            let media = crate::names::escape(nc);
            let at = schema::At {
                dir: Dir::Response,
                old_pointer: format!(
                    "{}/responses/{}/content/{media}/schema",
                    o.pointer,
                    or.status.key()
                ),
                new_pointer: format!("{pointer}/content/{media}/schema"),
                what: format!("the body of status {key}"),
                item: cx.response.clone(),
                field_types: Some((
                    Self::variant_types(&self.old, or),
                    Self::variant_types(&self.new, nr),
                )),
            };
            self.schema(cx, &at, os, ns);
        }
    }

    /// Callbacks: the server sends them, so their bodies flow like responses.
    fn callbacks(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
        for nc in &n.callbacks {
            let mut ccx = callback_cx(cx, nc);
            let Some(oc) = o
                .callbacks
                .iter()
                .find(|c| callback_key(c) == callback_key(nc))
            else {
                let f = Finding {
                    id: "callback-added".into(),
                    level: Level::Info,
                    pointer: &nc.pointer,
                    message: format!(
                        "new callback `{}` ({} {})",
                        nc.name,
                        nc.method.to_uppercase(),
                        nc.expression
                    ),
                    breaks_build: true,
                    items: vec![ccx.input.clone()],
                };
                self.push(Some(&ccx), f);
                continue;
            };
            if let (Some(ob), Some(nb)) = (&oc.body, &nc.body) {
                let schema_at = |c: &crate::ir::Callback, b: &Body| {
                    let media = crate::names::escape(&b.content_type);
                    format!("{}/requestBody/content/{media}/schema", c.pointer)
                };
                let at = schema::At {
                    dir: Dir::Response,
                    old_pointer: schema_at(oc, ob),
                    new_pointer: schema_at(nc, nb),
                    what: format!("the payload of callback `{}`", nc.name),
                    item: ccx.input.clone(),
                    field_types: None,
                };
                self.schema(&mut ccx, &at, &ob.schema, &nb.schema);
            }
        }
        self.callbacks_removed(cx, o, n);
    }

    /// Callbacks the new document no longer declares: clients stop receiving them.
    fn callbacks_removed(&mut self, cx: &OpCx, o: &Operation, n: &Operation) {
        for oc in &o.callbacks {
            if !n
                .callbacks
                .iter()
                .any(|c| callback_key(c) == callback_key(oc))
            {
                let ccx = callback_cx(cx, oc);
                let f = Finding {
                    id: "callback-removed".into(),
                    level: Level::Warning,
                    pointer: &oc.pointer,
                    message: format!(
                        "callback `{}` was removed: clients stop receiving it",
                        oc.name
                    ),
                    breaks_build: true,
                    items: vec![ccx.input.clone()],
                };
                self.push(Some(&ccx), f);
            }
        }
    }
}

/// A callback's identity across documents: its name and method.
fn callback_key(c: &crate::ir::Callback) -> (String, String) {
    (c.name.clone(), c.method.clone())
}

/// The server's side of a callback: its `Callbacks` method, which builds the payload.
fn callback_cx(cx: &OpCx, c: &crate::ir::Callback) -> OpCx {
    OpCx {
        operation: cx.operation.clone(),
        handler: format!("Callbacks::{}", c.rust),
        input: format!("callbacks::Callbacks::{}", c.rust),
        response: format!("callbacks::Callbacks::{}", c.rust),
        visited: Vec::new(),
    }
}

/// One change per rule and place: a schema shared by several operations is reported once,
/// with every operation and handler it concerns (first-seen order).
fn merge(changes: Vec<Change>) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let mut index: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for c in changes {
        let key = (c.id.clone(), c.pointer.clone(), c.message.clone());
        match index.get(&key) {
            Some(&i) => {
                let m = &mut out[i];
                for op in c.operations {
                    if !m.operations.contains(&op) {
                        m.operations.push(op);
                    }
                }
                for h in c.server.handlers {
                    if !m.server.handlers.contains(&h) {
                        m.server.handlers.push(h);
                    }
                }
                for it in c.server.items {
                    if !m.server.items.contains(&it) {
                        m.server.items.push(it);
                    }
                }
                m.server.breaks_build |= c.server.breaks_build;
                m.level = m.level.max(c.level);
                if m.operations.len() > 1 {
                    m.operation = None;
                }
            }
            None => {
                index.insert(key, out.len());
                out.push(c);
            }
        }
    }
    out
}
