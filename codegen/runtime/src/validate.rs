//! Schemas: builders used by generated `Type` impls ([`schema`], [`inline`], [`nullable`],
//! [`reference`]), the registry of a type, and the validator over `MetaSchema` ([`validate`]) that
//! collects every violation of a value before it is typed.

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock, RwLock};

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use serde_json::Value;

use crate::{ApiDocument, Keywords, keywords, pattern};

/// Starts a schema of the given JSON type (`"string"`, `"object"`, `""` for untyped).
pub fn schema(ty: &'static str) -> MetaSchema {
    MetaSchema::new(ty)
}

/// Wraps a schema as an inline reference.
pub fn inline(schema: MetaSchema) -> MetaSchemaRef {
    MetaSchemaRef::Inline(Box::new(schema))
}

/// Marks a schema reference nullable (an inline schema directly; a named one through `allOf`).
pub fn nullable(r: MetaSchemaRef) -> MetaSchemaRef {
    match r {
        MetaSchemaRef::Inline(mut s) => {
            s.nullable = true;
            MetaSchemaRef::Inline(s)
        }
        MetaSchemaRef::Reference(name) => MetaSchemaRef::Inline(Box::new(MetaSchema {
            all_of: vec![MetaSchemaRef::Reference(name)],
            nullable: true,
            ..MetaSchema::ANY
        })),
    }
}

/// A reference to a named component.
pub fn reference(name: &str) -> MetaSchemaRef {
    MetaSchemaRef::Reference(name.to_string())
}

/// The registry holding `T` and everything it refers to, built once per type.
pub fn registry_of<T: Type + 'static>() -> Arc<Registry> {
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<Registry>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(r) = cache
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&TypeId::of::<T>())
    {
        return r.clone();
    }
    let mut registry = Registry::new();
    T::register(&mut registry);
    let registry = Arc::new(registry);
    cache
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(TypeId::of::<T>(), registry.clone());
    registry
}

/// What the validator asks of a document beyond the registry: which components are closed to
/// other properties, and the 2020-12 keywords `MetaSchema` cannot hold.
pub trait Rules {
    fn is_closed(&self, name: &str) -> bool;
    fn keywords(&self, name: &str) -> Option<&'static Keywords>;
    /// Whether the value is a response (a client checking what it received): a required
    /// `writeOnly` property is then not required, and a required `readOnly` one is. A request
    /// is the other way round.
    fn is_response(&self) -> bool {
        false
    }
}

/// A document's [`Rules`], read from its [`ApiDocument`] tables, for a request body
/// ([`DocumentRules::new`]) or a response body ([`DocumentRules::for_response`]).
pub struct DocumentRules<D> {
    response: bool,
    _d: PhantomData<D>,
}

impl<D> Default for DocumentRules<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D> DocumentRules<D> {
    pub const fn new() -> Self {
        DocumentRules {
            response: false,
            _d: PhantomData,
        }
    }

    pub const fn for_response() -> Self {
        DocumentRules {
            response: true,
            _d: PhantomData,
        }
    }
}

impl<D: ApiDocument> Rules for DocumentRules<D> {
    fn is_closed(&self, name: &str) -> bool {
        D::is_closed(name)
    }
    fn keywords(&self, name: &str) -> Option<&'static Keywords> {
        D::KEYWORDS.iter().find(|(n, _)| *n == name).map(|(_, k)| k)
    }
    fn is_response(&self) -> bool {
        self.response
    }
}

/// Validates `value` against `schema`, appending `(path, message)` for every violation.
pub fn validate(
    registry: &Registry,
    schema: &MetaSchemaRef,
    value: &Value,
    path: &str,
    rules: &dyn Rules,
    errors: &mut BTreeMap<String, String>,
) {
    validate_at(registry, schema, value, path, rules, errors, 0)
}

const MAX_DEPTH: usize = 64;

pub(crate) fn field_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "body".to_string()
    } else {
        path.to_string()
    }
}

pub(crate) fn push(errors: &mut BTreeMap<String, String>, path: &str, message: String) {
    errors.entry(display_path(path)).or_insert(message);
}

pub(crate) fn validate_at(
    registry: &Registry,
    schema: &MetaSchemaRef,
    value: &Value,
    path: &str,
    rules: &dyn Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        push(errors, path, "nesting is too deep".into());
        return;
    }
    let (schema, name) = match schema {
        MetaSchemaRef::Inline(s) => (&**s, None),
        MetaSchemaRef::Reference(name) => match registry.schemas.get(name) {
            Some(s) => (s, Some(name.as_str())),
            None => return,
        },
    };
    // A component by its name; a schema the document writes inline by the name the generator
    // gave it (`rust_typename`, set only where there are keywords).
    let keywords = name
        .or(schema.rust_typename)
        .and_then(|n| rules.keywords(n));
    if value.is_null() {
        if !schema.nullable && refuses_null(registry, schema, depth) {
            push(errors, path, "must not be null".into());
        }
        return;
    }
    for part in &schema.all_of {
        validate_at(registry, part, value, path, rules, errors, depth + 1);
    }
    if !schema.one_of.is_empty() {
        validate_one_of(
            registry,
            schema,
            &schema.one_of,
            value,
            path,
            rules,
            errors,
            depth,
        );
    }
    if !schema.any_of.is_empty() {
        validate_one_of(
            registry,
            schema,
            &schema.any_of,
            value,
            path,
            rules,
            errors,
            depth,
        );
    }
    let type_ok = match schema.ty {
        "" => true,
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    if !type_ok {
        let expected = match (schema.ty, schema.format) {
            ("integer", Some(f)) => format!("an integer ({f})"),
            ("integer", None) => "an integer".to_string(),
            (ty, _) => format!("a value of type {ty}"),
        };
        push(errors, path, format!("must be {expected}"));
        return;
    }
    if !schema.enum_items.is_empty() && !schema.enum_items.contains(value) {
        let allowed: Vec<String> = schema.enum_items.iter().map(|v| v.to_string()).collect();
        push(
            errors,
            path,
            format!("must be one of {}", allowed.join(", ")),
        );
        return;
    }
    if let Some(k) = keywords {
        keywords::check(k, schema, value, path, rules, errors, depth);
    }
    match value {
        Value::String(s) => check_string(schema, s, path, errors),
        Value::Number(n) => check_number(schema, n, path, errors),
        Value::Array(items) => {
            check_count(
                errors,
                path,
                items.len(),
                schema.min_items,
                schema.max_items,
                "items",
            );
            if schema.unique_items == Some(true)
                && items
                    .iter()
                    .enumerate()
                    .any(|(i, a)| items[..i].contains(a))
            {
                push(errors, path, "must not contain duplicate items".into());
            }
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{}[{i}]", path);
                    validate_at(registry, item_schema, item, &p, rules, errors, depth + 1);
                }
            }
        }
        Value::Object(map) => {
            let (min, max) = (schema.min_properties, schema.max_properties);
            check_count(errors, path, map.len(), min, max, "properties");
            for required in &schema.required {
                // A read-only property is the server's to set: never required of a request;
                // a write-only one is the client's: never required of a response.
                let waived = schema.properties.iter().any(|(n, p)| {
                    n == required
                        && matches!(p, MetaSchemaRef::Inline(p)
                            if if rules.is_response() { p.write_only } else { p.read_only })
                });
                if !map.contains_key(*required) && !waived {
                    push(errors, &field_path(path, required), "is required".into());
                }
            }
            for (key, v) in map {
                let p = field_path(path, key);
                if let Some((_, prop)) = schema.properties.iter().find(|(n, _)| n == key) {
                    validate_at(registry, prop, v, &p, rules, errors, depth + 1);
                } else if keywords.is_some_and(|k| k.matches_pattern(key)) {
                    // Evaluated by `patternProperties` (below): not an additional property.
                } else if let Some(extra) = &schema.additional_properties {
                    validate_at(registry, extra, v, &p, rules, errors, depth + 1);
                } else if name
                    .or(schema.rust_typename)
                    .is_some_and(|n| rules.is_closed(n))
                    && !declared_by_all_of(registry, schema, key)
                {
                    push(errors, &p, "is not a known field".into());
                }
            }
        }
        _ => {}
    }
}

/// Whether a schema that is not itself nullable refuses `null`: it names a type, or an `allOf`
/// member (a reference without `nullable` beside it, `allOf: [$ref]`) does.
fn refuses_null(registry: &Registry, schema: &MetaSchema, depth: usize) -> bool {
    if !schema.ty.is_empty() {
        return true;
    }
    depth < MAX_DEPTH
        && schema.all_of.iter().any(|part| {
            let s = match part {
                MetaSchemaRef::Inline(s) => Some(&**s),
                MetaSchemaRef::Reference(n) => registry.schemas.get(n),
            };
            s.is_some_and(|s| !s.nullable && refuses_null(registry, s, depth + 1))
        })
}

fn declared_by_all_of(registry: &Registry, schema: &MetaSchema, key: &str) -> bool {
    schema.all_of.iter().any(|part| {
        let s = match part {
            MetaSchemaRef::Inline(s) => Some(&**s),
            MetaSchemaRef::Reference(n) => registry.schemas.get(n),
        };
        s.is_some_and(|s| {
            s.properties.iter().any(|(n, _)| *n == key) || declared_by_all_of(registry, s, key)
        })
    })
}

/// `oneOf` and `anyOf`: the discriminator's variant, else the first member that matches (the
/// Rust type is an untagged enum that takes the first member that parses).
#[allow(clippy::too_many_arguments)]
fn validate_one_of(
    registry: &Registry,
    schema: &MetaSchema,
    members: &[MetaSchemaRef],
    value: &Value,
    path: &str,
    rules: &dyn Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    if let (Some(disc), Some(obj)) = (&schema.discriminator, value.as_object()) {
        let tag = obj.get(disc.property_name).and_then(Value::as_str);
        let target = tag.and_then(|t| {
            disc.mapping
                .iter()
                .find(|(k, _)| k == t)
                .map(|(_, v)| reference(v.rsplit('/').next().unwrap_or(v)))
        });
        match target {
            Some(t) => validate_at(registry, &t, value, path, rules, errors, depth + 1),
            None => push(
                errors,
                &field_path(path, disc.property_name),
                "does not name a known variant".into(),
            ),
        }
        return;
    }
    let mut best: Option<BTreeMap<String, String>> = None;
    for variant in members {
        let mut e = BTreeMap::new();
        validate_at(registry, variant, value, path, rules, &mut e, depth + 1);
        if e.is_empty() {
            return;
        }
        if best.as_ref().is_none_or(|b| e.len() < b.len()) {
            best = Some(e);
        }
    }
    match best {
        Some(b) if members.len() == 1 => errors.extend(b),
        _ => push(errors, path, "matches none of the allowed shapes".into()),
    }
}

fn check_string(schema: &MetaSchema, s: &str, path: &str, errors: &mut BTreeMap<String, String>) {
    // Policy beyond the document: U+0000 is never meaningful text, and databases such as
    // PostgreSQL cannot store it; refusing it here keeps it from becoming a server error later.
    if s.contains('\u{0}') {
        push(errors, path, "must not contain NUL characters".into());
        return;
    }
    let len = s.chars().count();
    if let Some(min) = schema.min_length
        && len < min
    {
        push(
            errors,
            path,
            format!("must be at least {min} characters long"),
        );
    }
    if let Some(max) = schema.max_length
        && len > max
    {
        push(
            errors,
            path,
            format!("must be at most {max} characters long"),
        );
    }
    if let Some(pattern) = &schema.pattern
        && !pattern_matches(pattern, s)
    {
        push(errors, path, format!("must match the pattern {pattern}"));
    }
    match schema.format {
        Some("date") if chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_err() => {
            push(errors, path, "must be a date (YYYY-MM-DD)".into())
        }
        Some("date-time") if chrono::DateTime::parse_from_rfc3339(s).is_err() => {
            push(errors, path, "must be an RFC 3339 date-time".into())
        }
        _ => {}
    }
}

fn check_number(
    schema: &MetaSchema,
    n: &serde_json::Number,
    path: &str,
    errors: &mut BTreeMap<String, String>,
) {
    if schema.ty == "integer" {
        let signed = |min: i64, max: i64| n.as_i64().is_some_and(|v| (min..=max).contains(&v));
        let fits = match schema.format {
            Some("int8") => signed(i8::MIN.into(), i8::MAX.into()),
            Some("int16") => signed(i16::MIN.into(), i16::MAX.into()),
            Some("int32") => signed(i32::MIN.into(), i32::MAX.into()),
            Some("uint8") => signed(0, u8::MAX.into()),
            Some("uint16") => signed(0, u16::MAX.into()),
            Some("uint32") => signed(0, u32::MAX.into()),
            Some("uint64" | "uint") => n.as_u64().is_some(),
            _ => n.as_i64().is_some(),
        };
        if !fits {
            push(
                errors,
                path,
                "is out of range for its integer format".into(),
            );
            return;
        }
    }
    let Some(v) = n.as_f64() else { return };
    if let Some(m) = schema.multiple_of.filter(|m| *m > 0.0) {
        let q = v / m;
        if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            push(errors, path, format!("must be a multiple of {m}"));
        }
    }
    if let Some(min) = schema.minimum {
        let exclusive = schema.exclusive_minimum.unwrap_or(false);
        if v < min || (exclusive && v == min) {
            let op = if exclusive {
                "greater than"
            } else {
                "at least"
            };
            push(errors, path, format!("must be {op} {min}"));
        }
    }
    if let Some(max) = schema.maximum {
        let exclusive = schema.exclusive_maximum.unwrap_or(false);
        if v > max || (exclusive && v == max) {
            let op = if exclusive { "less than" } else { "at most" };
            push(errors, path, format!("must be {op} {max}"));
        }
    }
}

/// Whether `s` matches the ECMA-262 `pattern` (see [`pattern`]); a pattern that does not
/// compile checks nothing (the generator warned about it when it read the document).
///
/// Each thread compiles a pattern once and keeps it: a document has a bounded set of patterns,
/// and checking one runs on every request that carries the value.
pub fn pattern_matches(pattern: &str, s: &str) -> bool {
    thread_local! {
        static COMPILED: std::cell::RefCell<HashMap<String, Option<pattern::Regex>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    COMPILED.with(|compiled| {
        let mut compiled = compiled.borrow_mut();
        let re = compiled
            .entry(pattern.to_owned())
            .or_insert_with(|| pattern::compile(pattern).ok());
        re.as_ref().is_none_or(|re| pattern::is_match(re, s))
    })
}

/// `minItems`/`maxItems` or `minProperties`/`maxProperties`: `len` counted `noun`.
fn check_count(
    errors: &mut BTreeMap<String, String>,
    path: &str,
    len: usize,
    min: Option<usize>,
    max: Option<usize>,
    noun: &str,
) {
    if let Some(min) = min
        && len < min
    {
        push(errors, path, format!("must have at least {min} {noun}"));
    }
    if let Some(max) = max
        && len > max
    {
        push(errors, path, format!("must have at most {max} {noun}"));
    }
}
