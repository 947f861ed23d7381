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

/// The report as text, Markdown or JSON.
mod render;
/// Parameters and request bodies.
mod requests;
/// Responses and callbacks.
mod responses;
/// Schemas, through references, in the direction their data flows.
mod schema;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::emit::Emitter;
use crate::ir::{Api, AuthMode, Operation, Requirement};

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
    d.webhooks();
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
    format!("{} {}", o.http_method(), o.path)
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
