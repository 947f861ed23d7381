//! Schemas compared in the direction their data flows: properties, requiredness, types,
//! formats, enums, nullability, constraints, members of `oneOf`/`anyOf`, through references.

use super::{Differ, Dir, Finding, Level, OpCx, tokens};
use crate::ir::{Additional, Constraints, Kind, Property, Schema, TypeDef};

/// Where a schema comparison stands.
#[derive(Clone)]
pub(crate) struct At {
    pub(crate) dir: Dir,
    pub(crate) old_pointer: String,
    pub(crate) new_pointer: String,
    /// What holds the schema, for messages (`property `amount` of `BookTransfer``).
    pub(crate) what: String,
    /// The generated item it is part of (input struct, response enum, model).
    pub(crate) item: String,
    /// The Rust types of the field that holds it (old, new); `None` at the top of a model.
    pub(crate) field_types: Option<(String, String)>,
}

impl At {
    /// Whether the holding field's Rust type changed (a model's own shape: always).
    fn retyped(&self) -> bool {
        self.field_types.as_ref().is_none_or(|(o, n)| o != n)
    }

    fn in_model(&self) -> bool {
        self.item.starts_with("models::")
    }
}

/// The type category a client sees.
fn category(k: &Kind) -> &'static str {
    match k {
        Kind::Ref(_) => "reference",
        Kind::String { .. } => "string",
        Kind::Integer { .. } => "integer",
        Kind::Number { .. } => "number",
        Kind::Boolean => "boolean",
        Kind::Array(_) => "array",
        Kind::Object(_) | Kind::AllOf(_) => "object",
        Kind::AnyOf(_) => "anyOf",
        Kind::OneOf { .. } => "oneOf",
        Kind::Any => "any value",
    }
}

/// Whether null is allowed, also where a one-member `allOf` carries `nullable` for a `$ref`.
fn nullable(s: &Schema) -> bool {
    s.nullable
        || match &s.kind {
            Kind::AllOf(m) if m.len() == 1 => nullable(&m[0]),
            _ => false,
        }
}

/// Numeric formats by width; a wider one accepts every value of a narrower one.
fn width(format: &str) -> Option<u8> {
    Some(match format {
        "int8" => 1,
        "int16" => 2,
        "int32" => 3,
        "int64" => 4,
        "float" => 5,
        "double" => 6,
        _ => return None,
    })
}

/// `allOf` of one member is that member (a nullable or described `$ref`).
fn unwrap(s: &Schema) -> &Schema {
    match &s.kind {
        Kind::AllOf(m) if m.len() == 1 => unwrap(&m[0]),
        _ => s,
    }
}

/// The type a `oneOf`/`anyOf` member names (`None` for an inline member).
fn member_name(s: &Schema) -> Option<String> {
    match &unwrap(s).kind {
        Kind::Ref(r) => Some(r.clone()),
        _ => None,
    }
}

/// Whether old member `a` (at `i`) is new member `b` (at `j`): the same type (or one the new
/// document renamed), or inline members at the same position.
fn members_match(
    a: &Schema,
    i: usize,
    b: &Schema,
    j: usize,
    renames: &std::collections::BTreeMap<String, String>,
) -> bool {
    match (member_name(a), member_name(b)) {
        (Some(x), Some(y)) => x == y || renames.get(&x) == Some(&y),
        (None, None) => i == j,
        _ => false,
    }
}

impl<'a> Differ<'a> {
    /// Reports a finding at `at` (the new pointer, or the old one for a removal).
    fn report(
        &mut self,
        cx: &OpCx,
        at: &At,
        rule: &str,
        level: Level,
        message: String,
        breaks_build: bool,
    ) {
        let removal = rule.ends_with("-removed");
        let pointer = if removal {
            &at.old_pointer
        } else {
            &at.new_pointer
        };
        let f = Finding {
            id: format!("{}-{rule}", at.dir.prefix()),
            level,
            pointer,
            message: format!("{}: {message}", at.what),
            breaks_build,
            items: vec![at.item.clone()],
        };
        self.push(Some(cx), f);
    }

    pub(crate) fn schema(&mut self, cx: &mut OpCx, at: &At, o: &Schema, n: &Schema) {
        self.nullable(cx, at, nullable(o), nullable(n));
        let (o, n) = (unwrap(o), unwrap(n));
        if let (Kind::Ref(on), Kind::Ref(nn)) = (&o.kind, &n.kind) {
            return self.refs(cx, at, on, nn);
        }
        let (o, at_o) = self.resolve(&self.old, o, at, true);
        let (n, at) = self.resolve(&self.new, n, &at_o, false);
        if category(&o.kind) != category(&n.kind) {
            return self.retyped(cx, &at, o, n);
        }
        self.constraints(cx, &at, &o.constraints, &n.constraints);
        self.default(cx, &at, o, n);
        match (&o.kind, &n.kind) {
            (
                Kind::String {
                    format: of,
                    enum_values: oe,
                },
                Kind::String {
                    format: nf,
                    enum_values: ne,
                },
            ) => {
                self.format(cx, &at, of, nf);
                self.enums(cx, &at, oe, ne);
            }
            (Kind::Integer { format: of }, Kind::Integer { format: nf })
            | (Kind::Number { format: of }, Kind::Number { format: nf }) => {
                self.format(cx, &at, of, nf)
            }
            (Kind::Array(oi), Kind::Array(ni)) => {
                let inner = At {
                    old_pointer: format!("{}/items", at.old_pointer),
                    new_pointer: format!("{}/items", at.new_pointer),
                    what: format!("{} (items)", at.what),
                    ..at.clone()
                };
                self.schema(cx, &inner, oi, ni);
            }
            (Kind::Object(_) | Kind::AllOf(_), Kind::Object(_) | Kind::AllOf(_)) => {
                self.object(cx, &at, o, n)
            }
            (Kind::OneOf { variants: ov, .. }, Kind::OneOf { variants: nv, .. }) => {
                self.members(cx, &at, "one-of", ov, nv)
            }
            (Kind::AnyOf(ov), Kind::AnyOf(nv)) => self.members(cx, &at, "any-of", ov, nv),
            _ => {}
        }
    }

    /// A request's default value: a changed one changes what the server reads when a client
    /// leaves the value out.
    fn default(&mut self, cx: &OpCx, at: &At, o: &Schema, n: &Schema) {
        if at.dir == Dir::Request && o.default != n.default {
            let message = format!(
                "the default {} became {}",
                o.default
                    .as_ref()
                    .map_or("(none)".into(), |v| v.to_string()),
                n.default
                    .as_ref()
                    .map_or("(none)".into(), |v| v.to_string())
            );
            self.report(cx, at, "default-changed", Level::Warning, message, false);
        }
    }

    /// A reference on one side only: compare with the referenced schema, at its own place.
    fn resolve<'s>(
        &self,
        side: &super::Side<'s>,
        s: &'s Schema,
        at: &At,
        old: bool,
    ) -> (&'s Schema, At) {
        let Kind::Ref(name) = &s.kind else {
            return (s, at.clone());
        };
        let t: &'s TypeDef = side.emit.typedef(name);
        let mut at = at.clone();
        if old {
            at.old_pointer = t.pointer.clone();
        } else {
            at.new_pointer = t.pointer.clone();
            at.item = side.model(name);
        }
        (unwrap(&t.schema), at)
    }

    fn refs(&mut self, cx: &mut OpCx, at: &At, on: &str, nn: &str) {
        let renamed = self.renames.get(on).is_some_and(|r| r == nn);
        if on != nn && !renamed {
            let message = format!("now refers to `{nn}` instead of `{on}`");
            let breaks = at.retyped();
            self.report(cx, at, "schema-ref-changed", Level::Info, message, breaks);
        }
        let key = (on.to_string(), nn.to_string(), at.dir == Dir::Request);
        if cx.visited.contains(&key) {
            return;
        }
        cx.visited.push(key);
        let (ot, nt) = (self.old.emit.typedef(on), self.new.emit.typedef(nn));
        let inner = At {
            dir: at.dir,
            old_pointer: ot.pointer.clone(),
            new_pointer: nt.pointer.clone(),
            what: format!("`{}`", nt.name),
            item: self.new.model(nn),
            field_types: None,
        };
        self.schema(cx, &inner, &ot.schema, &nt.schema);
    }

    fn nullable(&mut self, cx: &OpCx, at: &At, o: bool, n: bool) {
        if o == n {
            return;
        }
        let (rule, level, message) = match (n, at.dir) {
            (true, Dir::Request) => ("became-nullable", Level::Info, "now accepts null"),
            (true, Dir::Response) => ("became-nullable", Level::Breaking, "can now be null"),
            (false, Dir::Request) => (
                "became-not-nullable",
                Level::Breaking,
                "no longer accepts null",
            ),
            (false, Dir::Response) => {
                ("became-not-nullable", Level::Info, "is never null any more")
            }
        };
        self.report(cx, at, rule, level, message.into(), at.retyped());
    }

    fn retyped(&mut self, cx: &OpCx, at: &At, o: &Schema, n: &Schema) {
        let (oc, nc) = (category(&o.kind), category(&n.kind));
        // Anything accepted (a request) or promised less (a response) is harmless.
        let level = match (at.dir, oc, nc) {
            (Dir::Request, _, "any value") | (Dir::Response, "any value", _) => Level::Info,
            (Dir::Request, "integer", "number") | (Dir::Response, "number", "integer") => {
                Level::Info
            }
            _ => Level::Breaking,
        };
        let message = format!("type {oc} became {nc}");
        self.report(cx, at, "type-changed", level, message, at.retyped());
    }

    fn format(&mut self, cx: &OpCx, at: &At, o: &Option<String>, n: &Option<String>) {
        if o == n {
            return;
        }
        let show = |f: &Option<String>| f.clone().unwrap_or_else(|| "(none)".into());
        let (rule, level) = match (o, n) {
            (None, Some(_)) => ("format-set", at.dir.tighter()),
            (Some(_), None) => ("format-removed", at.dir.looser()),
            (Some(a), Some(b)) => match (width(a), width(b)) {
                (Some(x), Some(y)) if y > x => ("format-widened", at.dir.looser()),
                (Some(x), Some(y)) if y < x => ("format-narrowed", at.dir.tighter()),
                _ => ("format-changed", Level::Breaking),
            },
            (None, None) => return,
        };
        let message = format!("format {} became {}", show(o), show(n));
        self.report(cx, at, rule, level, message, at.retyped());
    }

    /// String enums. A Rust enum breaks the build when a value goes (a handler names it) and,
    /// in a request, when one comes (a handler matches every value).
    fn enums(&mut self, cx: &OpCx, at: &At, o: &[String], n: &[String]) {
        let rust_enum = at.in_model() && at.field_types.is_none();
        if o.is_empty() != n.is_empty() {
            let (rule, level, message) = if n.is_empty() {
                (
                    "enum-removed",
                    at.dir.looser(),
                    "any string is allowed (the enum was removed)".to_string(),
                )
            } else {
                (
                    "enum-set",
                    at.dir.tighter(),
                    format!("only {} are allowed", n.join(", ")),
                )
            };
            return self.report(cx, at, rule, level, message, at.retyped());
        }
        let added: Vec<&String> = n.iter().filter(|v| !o.contains(v)).collect();
        let removed: Vec<&String> = o.iter().filter(|v| !n.contains(v)).collect();
        for v in added {
            let level = at.dir.looser();
            let breaks = rust_enum && at.dir == Dir::Request;
            self.report(
                cx,
                at,
                "enum-value-added",
                level,
                format!("new value `{v}`"),
                breaks,
            );
        }
        for v in removed {
            let level = at.dir.tighter();
            self.report(
                cx,
                at,
                "enum-value-removed",
                level,
                format!("value `{v}` was removed"),
                rust_enum,
            );
        }
    }

    /// Numeric and length bounds, patterns, and the enums of non-string schemas.
    fn constraints(&mut self, cx: &OpCx, at: &At, o: &Constraints, n: &Constraints) {
        if o == n {
            return;
        }
        let size = |v: Option<usize>| v.map(|x| x as f64);
        let bounds: [(&str, Option<f64>, Option<f64>, bool); 8] = [
            ("max-length", size(o.max_length), size(n.max_length), true),
            ("min-length", size(o.min_length), size(n.min_length), false),
            ("maximum", o.maximum, n.maximum, true),
            ("minimum", o.minimum, n.minimum, false),
            ("max-items", size(o.max_items), size(n.max_items), true),
            ("min-items", size(o.min_items), size(n.min_items), false),
            (
                "max-properties",
                size(o.max_properties),
                size(n.max_properties),
                true,
            ),
            (
                "min-properties",
                size(o.min_properties),
                size(n.min_properties),
                false,
            ),
        ];
        for (name, ov, nv, is_max) in bounds {
            self.bound(cx, at, name, ov, nv, is_max);
        }
        self.flags(cx, at, o, n);
        self.multiple_of(cx, at, o.multiple_of, n.multiple_of);
        self.pattern(cx, at, &o.pattern, &n.pattern);
        self.value_enums(cx, at, &o.enum_values, &n.enum_values);
    }

    /// `exclusiveMaximum`, `exclusiveMinimum` and `uniqueItems`, each set or removed.
    fn flags(&mut self, cx: &OpCx, at: &At, o: &Constraints, n: &Constraints) {
        for (name, ov, nv) in [
            (
                "exclusive-maximum",
                o.exclusive_maximum,
                n.exclusive_maximum,
            ),
            (
                "exclusive-minimum",
                o.exclusive_minimum,
                n.exclusive_minimum,
            ),
            ("unique-items", o.unique_items, n.unique_items),
        ] {
            if ov != nv {
                let (verb, level) = if nv {
                    ("set", at.dir.tighter())
                } else {
                    ("removed", at.dir.looser())
                };
                let message = format!("`{name}` {verb}");
                self.report(cx, at, &format!("{name}-{verb}"), level, message, false);
            }
        }
    }

    /// The `enum` of a non-string schema: values added or removed, or the list set or removed.
    fn value_enums(
        &mut self,
        cx: &OpCx,
        at: &At,
        oe: &[serde_json::Value],
        ne: &[serde_json::Value],
    ) {
        if oe != ne {
            let show = |v: &[serde_json::Value]| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            for v in ne.iter().filter(|v| !oe.is_empty() && !oe.contains(v)) {
                self.report(
                    cx,
                    at,
                    "enum-value-added",
                    at.dir.looser(),
                    format!("new value `{v}`"),
                    false,
                );
            }
            for v in oe.iter().filter(|v| !ne.is_empty() && !ne.contains(v)) {
                self.report(
                    cx,
                    at,
                    "enum-value-removed",
                    at.dir.tighter(),
                    format!("value `{v}` was removed"),
                    false,
                );
            }
            if oe.is_empty() != ne.is_empty() {
                let (rule, level) = if ne.is_empty() {
                    ("enum-removed", at.dir.looser())
                } else {
                    ("enum-set", at.dir.tighter())
                };
                let message = format!("allowed values [{}] became [{}]", show(oe), show(ne));
                self.report(cx, at, rule, level, message, false);
            }
        }
    }

    fn bound(
        &mut self,
        cx: &OpCx,
        at: &At,
        name: &str,
        o: Option<f64>,
        n: Option<f64>,
        is_max: bool,
    ) {
        let (verb, tighter) = match (o, n) {
            (None, Some(_)) => ("set", true),
            (Some(_), None) => ("removed", false),
            (Some(a), Some(b)) if b < a => ("decreased", is_max),
            (Some(a), Some(b)) if b > a => ("increased", !is_max),
            _ => return,
        };
        self.bound_changed(cx, at, (name, name), verb, tighter, (o, n));
    }

    fn multiple_of(&mut self, cx: &OpCx, at: &At, o: Option<f64>, n: Option<f64>) {
        let (verb, tighter) = match (o, n) {
            (None, Some(_)) => ("set", true),
            (Some(_), None) => ("removed", false),
            // Every multiple of the old step is a multiple of a step that divides it.
            (Some(a), Some(b)) if a != b => ("changed", ((a / b) - (a / b).round()).abs() > 1e-9),
            _ => return,
        };
        self.bound_changed(cx, at, ("multiple-of", "multipleOf"), verb, tighter, (o, n));
    }

    /// Reports a numeric keyword (`(rule stem, keyword)`) that moved from `values.0` to `.1`.
    fn bound_changed(
        &mut self,
        cx: &OpCx,
        at: &At,
        (stem, keyword): (&str, &str),
        verb: &str,
        tighter: bool,
        values: (Option<f64>, Option<f64>),
    ) {
        let level = if tighter {
            at.dir.tighter()
        } else {
            at.dir.looser()
        };
        let show = |v: Option<f64>| v.map_or("(none)".to_string(), |x| x.to_string());
        let message = format!("`{keyword}` {} became {}", show(values.0), show(values.1));
        self.report(cx, at, &format!("{stem}-{verb}"), level, message, false);
    }

    fn pattern(&mut self, cx: &OpCx, at: &At, o: &Option<String>, n: &Option<String>) {
        let (rule, level) = match (o, n) {
            (None, Some(_)) => ("pattern-set", at.dir.tighter()),
            (Some(_), None) => ("pattern-removed", at.dir.looser()),
            // Two patterns cannot be ordered in general: some values may change sides.
            (Some(a), Some(b)) if a != b => ("pattern-changed", Level::Warning),
            _ => return,
        };
        let show = |p: &Option<String>| {
            p.as_deref()
                .map_or("(none)".to_string(), |x| format!("`{x}`"))
        };
        let message = format!("pattern {} became {}", show(o), show(n));
        self.report(cx, at, rule, level, message, false);
    }
}

/// The properties a direction sees: a `readOnly` one is never sent, a `writeOnly` one never
/// received.
fn visible(dir: Dir, p: &Property) -> bool {
    match dir {
        Dir::Request => !p.schema.read_only,
        Dir::Response => !p.schema.write_only,
    }
}

fn additional(s: &Schema) -> &Additional {
    match &s.kind {
        Kind::Object(o) => &o.additional,
        _ => &Additional::Open,
    }
}

impl<'a> Differ<'a> {
    /// Objects (with `allOf` members merged, as the generated struct merges them).
    fn object(&mut self, cx: &mut OpCx, at: &At, o: &Schema, n: &Schema) {
        let (op, or) = self.old.emit.object_parts(o);
        let (np, nr) = self.new.emit.object_parts(n);
        let dir = at.dir;
        for p in np.iter().filter(|p| visible(dir, p)) {
            let required = nr.contains(&p.name);
            match op.iter().find(|x| x.name == p.name && visible(dir, x)) {
                Some(old) => self.property(cx, at, old, or.contains(&old.name), p, required),
                None => self.property_added(cx, at, p, required),
            }
        }
        for p in op.iter().filter(|p| visible(dir, p)) {
            if !np.iter().any(|x| x.name == p.name && visible(dir, x)) {
                self.property_removed(cx, at, p, additional(n));
            }
        }
        self.additional(cx, at, additional(o), additional(n));
    }

    fn property_at(
        &self,
        at: &At,
        old: Option<&Property>,
        new: &Property,
        types: Option<(String, String)>,
    ) -> At {
        let segment = |p: &Property| format!("/properties/{}", crate::names::escape(&p.name));
        At {
            dir: at.dir,
            old_pointer: format!("{}{}", at.old_pointer, segment(old.unwrap_or(new))),
            new_pointer: format!("{}{}", at.new_pointer, segment(new)),
            what: format!("property `{}` of {}", new.name, at.what),
            item: at.item.clone(),
            field_types: types,
        }
    }

    /// The Rust type of a property's field in the model `at` is in.
    fn field_type(&self, side: &super::Side, at: &At, p: &Property, required: bool) -> String {
        let model = at.item.strip_prefix("models::").unwrap_or_default();
        let t = side.api.types.iter().find(|t| t.rust == model);
        let (multipart, container) = t.map_or((false, ""), |t| (t.multipart, t.name.as_str()));
        tokens(
            side.emit
                .field_type(&p.schema, required, multipart, container),
        )
    }

    fn property(
        &mut self,
        cx: &mut OpCx,
        at: &At,
        op: &Property,
        oreq: bool,
        np: &Property,
        nreq: bool,
    ) {
        let types = (
            self.field_type(&self.old, at, op, oreq),
            self.field_type(&self.new, at, np, nreq),
        );
        let pat = self.property_at(at, Some(op), np, Some(types));
        if oreq != nreq {
            let (rule, level, message) = match (nreq, at.dir) {
                (true, Dir::Request) => (
                    "property-became-required",
                    Level::Breaking,
                    "became required",
                ),
                (false, Dir::Request) => {
                    ("property-became-optional", Level::Info, "became optional")
                }
                (true, Dir::Response) => (
                    "property-became-required",
                    Level::Info,
                    "is now always present",
                ),
                (false, Dir::Response) => (
                    "property-became-optional",
                    Level::Breaking,
                    "may now be absent",
                ),
            };
            self.report(cx, &pat, rule, level, message.into(), pat.retyped());
        }
        if np.schema.deprecated && !op.schema.deprecated {
            self.report(
                cx,
                &pat,
                "property-deprecated",
                Level::Info,
                "is deprecated".into(),
                false,
            );
        }
        self.schema(cx, &pat, &op.schema, &np.schema);
    }

    fn property_added(&mut self, cx: &OpCx, at: &At, p: &Property, required: bool) {
        let pat = self.property_at(at, None, p, None);
        let (rule, level, message) = match (at.dir, required) {
            (Dir::Request, true) => (
                "required-property-added",
                Level::Breaking,
                "new, and required",
            ),
            (Dir::Request, false) => ("optional-property-added", Level::Info, "new, optional"),
            (Dir::Response, _) => ("property-added", Level::Info, "new"),
        };
        // A handler builds the models of its responses with struct literals.
        let breaks = at.dir == Dir::Response && at.in_model();
        self.report(cx, &pat, rule, level, message.into(), breaks);
    }

    fn property_removed(&mut self, cx: &OpCx, at: &At, p: &Property, now: &Additional) {
        let pat = self.property_at(at, Some(p), p, None);
        let (level, message) = match (at.dir, now) {
            (Dir::Request, Additional::Closed) => (
                Level::Breaking,
                "was removed, and unknown properties are refused",
            ),
            (Dir::Request, _) => (
                Level::Warning,
                "was removed (clients still sending it are ignored)",
            ),
            (Dir::Response, _) => (Level::Breaking, "was removed"),
        };
        self.report(
            cx,
            &pat,
            "property-removed",
            level,
            message.into(),
            at.in_model(),
        );
    }

    fn additional(&mut self, cx: &mut OpCx, at: &At, o: &Additional, n: &Additional) {
        let rank = |a: &Additional| match a {
            Additional::Closed => 0,
            Additional::Schema(_) => 1,
            Additional::Open => 2,
        };
        if let (Additional::Schema(os), Additional::Schema(ns)) = (o, n) {
            let inner = At {
                old_pointer: format!("{}/additionalProperties", at.old_pointer),
                new_pointer: format!("{}/additionalProperties", at.new_pointer),
                what: format!("{} (additional properties)", at.what),
                ..at.clone()
            };
            return self.schema(cx, &inner, os, ns);
        }
        let (ro, rn) = (rank(o), rank(n));
        if ro == rn {
            return;
        }
        let (rule, level) = if rn < ro {
            ("additional-properties-restricted", at.dir.tighter())
        } else {
            ("additional-properties-allowed", at.dir.looser())
        };
        // Only a map of additional properties is a field of the struct.
        let breaks = matches!(o, Additional::Schema(_)) != matches!(n, Additional::Schema(_));
        let message = "the properties beyond the declared ones are now ".to_string()
            + ["refused", "constrained by a schema", "allowed"][rn];
        self.report(cx, at, rule, level, message, breaks && at.in_model());
    }

    /// `oneOf` / `anyOf` members, matched by the type they name (or position when inline).
    fn members(&mut self, cx: &mut OpCx, at: &At, rule: &str, o: &[Schema], n: &[Schema]) {
        let renames = self.renames.clone();
        for (j, nm) in n.iter().enumerate() {
            let found = o
                .iter()
                .enumerate()
                .find(|(i, om)| members_match(om, *i, nm, j, &renames));
            match found {
                Some((i, om)) => {
                    let inner = At {
                        old_pointer: format!("{}/{}/{i}", at.old_pointer, camel(rule)),
                        new_pointer: format!("{}/{}/{j}", at.new_pointer, camel(rule)),
                        ..at.clone()
                    };
                    self.schema(cx, &inner, om, nm);
                }
                None => {
                    let what =
                        member_name(nm).map_or(format!("member {j}"), |r| format!("member `{r}`"));
                    let breaks =
                        at.dir == Dir::Request && at.in_model() && at.field_types.is_none();
                    self.report(
                        cx,
                        at,
                        &format!("{rule}-member-added"),
                        at.dir.looser(),
                        format!("new {what}"),
                        breaks,
                    );
                }
            }
        }
        for (i, om) in o.iter().enumerate() {
            if !n
                .iter()
                .enumerate()
                .any(|(j, nm)| members_match(om, i, nm, j, &renames))
            {
                let what =
                    member_name(om).map_or(format!("member {i}"), |r| format!("member `{r}`"));
                self.report(
                    cx,
                    at,
                    &format!("{rule}-member-removed"),
                    at.dir.tighter(),
                    format!("{what} was removed"),
                    true,
                );
            }
        }
    }

    /// Schemas of the old document that the new one names differently, with the same content.
    pub(crate) fn renamed_types(&mut self) {
        let (old, new) = (self.old.api, self.new.api);
        for ot in old.types.iter().filter(|t| !t.inline) {
            if new.types.iter().any(|t| t.name == ot.name) {
                continue;
            }
            let Some(nt) = new.types.iter().find(|nt| {
                !nt.inline && nt.schema == ot.schema && !old.types.iter().any(|t| t.name == nt.name)
            }) else {
                continue;
            };
            self.renames.insert(ot.name.clone(), nt.name.clone());
            let handlers: Vec<String> = new
                .operations
                .iter()
                .filter(|o| {
                    new.request_types(o).contains(&nt.name.as_str())
                        || new.response_types(o).contains(&nt.name.as_str())
                })
                .map(|o| self.new.handler(o))
                .collect();
            let f = Finding {
                id: "schema-renamed".into(),
                level: Level::Info,
                pointer: &nt.pointer,
                message: format!(
                    "schema `{}` was renamed `{}` (same content)",
                    ot.name, nt.name
                ),
                breaks_build: ot.rust != nt.rust,
                items: vec![self.old.model(&ot.name), self.new.model(&nt.name)],
            };
            self.push_with(None, f, handlers);
        }
    }
}

fn camel(rule: &str) -> &'static str {
    if rule == "one-of" { "oneOf" } else { "anyOf" }
}
