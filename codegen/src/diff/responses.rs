//! Responses (statuses, bodies, headers) and callbacks, compared as data flowing from the
//! server to clients.

use super::{Differ, Dir, Finding, Level, OpCx, Side, schema, tokens};
use crate::ir::{Body, Operation, Response, Status};

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
        _ => return written_as_finding(or, nr, at),
    })
}

/// A media type that `Accept` could choose for a response and no longer can (a client asking
/// for it now gets the primary type), or a new one: another name of the payload's type, or a
/// type the handler writes itself (`Response::other_media`).
fn written_as_finding(or: &Response, nr: &Response, at: &str) -> Option<Found> {
    let key = nr.status.key();
    let choosable = |r: &Response| -> Vec<String> {
        r.written_as
            .iter()
            .skip(1)
            .chain(&r.other_media)
            .map(|t| t.to_ascii_lowercase())
            .collect()
    };
    let missing = |a: &Response, b: &Response| {
        let theirs = choosable(b);
        choosable(a).into_iter().find(|t| !theirs.contains(t))
    };
    if let Some(t) = missing(or, nr) {
        return Some((
            "response-media-type-removed",
            Level::Breaking,
            format!("status {key} is no longer written as `{t}` when `Accept` asks for it"),
            format!("{at}/content"),
        ));
    }
    let t = missing(nr, or)?;
    Some((
        "response-media-type-added",
        Level::Info,
        format!("status {key} can now be written as `{t}` when `Accept` asks for it"),
        format!("{at}/content"),
    ))
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
    pub(super) fn responses(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
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
    pub(super) fn callbacks(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
        let outgoing = |c: &crate::ir::Callback| callback_cx(cx, c);
        self.outgoing(&o.callbacks, &n.callbacks, "callback", &outgoing);
    }

    /// Top-level `webhooks` (OpenAPI 3.1+): compared like callbacks, by name and method; the
    /// server's side is its `Webhooks` method.
    pub(crate) fn webhooks(&mut self) {
        let (old, new) = (self.old.api, self.new.api);
        let outgoing = |c: &crate::ir::Callback| OpCx {
            operation: format!("webhook {} ({})", c.name, c.method.to_uppercase()),
            handler: format!("Webhooks::{}", c.rust),
            input: format!("callbacks::Webhooks::{}", c.rust),
            response: format!("callbacks::Webhooks::{}", c.rust),
            visited: Vec::new(),
        };
        self.outgoing(&old.webhooks, &new.webhooks, "webhook", &outgoing);
    }

    /// Requests the server sends (`kind`: `callback` or `webhook`): new ones (a method the
    /// server must add), removed ones (clients stop receiving them) and their payloads, which
    /// flow like responses.
    fn outgoing(
        &mut self,
        old: &[crate::ir::Callback],
        new: &[crate::ir::Callback],
        kind: &str,
        cx_of: &dyn Fn(&crate::ir::Callback) -> OpCx,
    ) {
        for nc in new {
            let mut ccx = cx_of(nc);
            let Some(oc) = old.iter().find(|c| callback_key(c) == callback_key(nc)) else {
                let place = if nc.expression.is_empty() {
                    nc.method.to_uppercase()
                } else {
                    format!("{} {}", nc.method.to_uppercase(), nc.expression)
                };
                let f = Finding {
                    id: format!("{kind}-added"),
                    level: Level::Info,
                    pointer: &nc.pointer,
                    message: format!("new {kind} `{}` ({place})", nc.name),
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
                    what: format!("the payload of {kind} `{}`", nc.name),
                    item: ccx.input.clone(),
                    field_types: None,
                };
                self.schema(&mut ccx, &at, &ob.schema, &nb.schema);
            }
        }
        for oc in old {
            if !new.iter().any(|c| callback_key(c) == callback_key(oc)) {
                let ccx = cx_of(oc);
                let f = Finding {
                    id: format!("{kind}-removed"),
                    level: Level::Warning,
                    pointer: &oc.pointer,
                    message: format!(
                        "{kind} `{}` was removed: clients stop receiving it",
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
