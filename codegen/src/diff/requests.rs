//! Requests: parameters (matched by location and name, path parameters by position) and
//! request bodies, compared as data flowing from clients to the server.

use super::{Differ, Dir, Finding, Level, OpCx, Side, schema, tokens};
use crate::ir::{Body, Location, Operation, Param};

fn location(l: Location) -> &'static str {
    l.wire()
}

/// Parameters match by location and name (a header's in any case); path parameters by position (their names are not on
/// the wire, so a new name is a rename).
fn param_match<'p>(old: &'p [Param], n: &Param, new_all: &[Param]) -> Option<&'p Param> {
    // Header names are case-insensitive (RFC 9110); query and cookie names are not (`type` and
    // `Type` are two parameters).
    let same = |p: &&Param| {
        p.location == n.location
            && (p.name == n.name
                || (n.location == Location::Header && p.name.eq_ignore_ascii_case(&n.name)))
    };
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
    pub(super) fn params(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
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

    /// How a parameter is written on the wire (its style, explode, `content`), and its
    /// deprecation.
    fn param_style(&mut self, cx: &OpCx, op: &Param, np: &Param) {
        let (was, now) = (wire_form(op), wire_form(np));
        if was != now {
            let f = Finding {
                id: "request-parameter-style-changed".into(),
                level: Level::Breaking,
                pointer: &np.pointer,
                message: format!(
                    "parameter `{}` was sent as {was} and is now read as {now}",
                    np.name,
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

    pub(super) fn body(&mut self, cx: &mut OpCx, o: &Operation, n: &Operation) {
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
        tokens(side.emit.body_field_type(b))
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

/// How a parameter's value is written, in words: two parameters written the same way read the
/// same requests. Only what changes the wire counts (`explode` of a scalar in `simple` style
/// does not).
fn wire_form(p: &Param) -> String {
    use crate::ir::{Kind, PathStyle};

    if p.query_string {
        let media = p.content_type.as_deref().unwrap_or("text/plain");
        return format!("the whole query string, of type `{media}`");
    }
    if let Some(media) = &p.content_type {
        return format!("a document of type `{media}`");
    }
    if p.deep_object {
        return format!("bracketed keys (`{}[key]=value`)", p.name);
    }
    let items = match (
        matches!(p.schema.kind, Kind::Array(_)),
        p.location,
        p.path_style,
    ) {
        (false, _, _) => String::new(),
        (true, Location::Path, Some(PathStyle::Label)) if p.explode => {
            "items separated by `.`".to_string()
        }
        (true, Location::Path, Some(PathStyle::Matrix)) if p.explode => {
            format!("each item as `;{}=value`", p.name)
        }
        (true, Location::Path, _) => "items separated by `,`".to_string(),
        (true, _, _) if p.explode => "repeated keys".to_string(),
        (true, _, _) => format!("one value separated by `{}`", p.delimiter),
    };
    let style = match p.path_style {
        Some(PathStyle::Label) => "label style",
        Some(PathStyle::Matrix) => "matrix style",
        None => "",
    };
    match (style.is_empty(), items.is_empty()) {
        (true, true) => "a plain value".to_string(),
        (true, false) => items,
        (false, true) => style.to_string(),
        (false, false) => format!("{style}, {items}"),
    }
}
