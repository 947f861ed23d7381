//! JSON Schema 2020-12 keywords that poem-openapi's `MetaSchema` has no field for
//! (`prefixItems`, `contains`, `dependentRequired`, `dependentSchemas`, `patternProperties`,
//! `propertyNames`, `not`, `if`/`then`/`else`),
//! enforced by the request validator from a table each generated crate emits
//! ([`crate::ApiDocument::KEYWORDS`]), keyed by the name of the component that carries them.
//!
//! A sub-schema is a function that registers what it refers to and returns its reference; the
//! validator evaluates it once into a registry of its own (cached), so a keyword's schema may
//! name any type of the document.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock, RwLock};

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use serde_json::Value;

/// A sub-schema: registers the types it names and returns its reference.
pub type SchemaFn = fn(&mut Registry) -> MetaSchemaRef;

/// The 2020-12 keywords of one schema that `MetaSchema` cannot hold.
#[derive(Clone, Copy)]
pub struct Keywords {
    /// `prefixItems`: the schema of each leading item, by position.
    pub prefix_items: &'static [SchemaFn],
    /// `items` beside `prefixItems`: the schema of the items after the prefix (`None`: any).
    pub items_after_prefix: Option<SchemaFn>,
    /// `items: false` beside `prefixItems`: no item after the prefix.
    pub items_closed: bool,
    /// `contains`, with `minContains` (default 1) and `maxContains`.
    pub contains: Option<SchemaFn>,
    pub min_contains: Option<usize>,
    pub max_contains: Option<usize>,
    /// `dependentRequired`: when the first property is present, every one of the others is
    /// required.
    pub dependent_required: &'static [(&'static str, &'static [&'static str])],
    /// `patternProperties`: every property whose name matches the ECMA-262 pattern.
    pub pattern_properties: &'static [(&'static str, SchemaFn)],
    /// `additionalProperties` beside `patternProperties`: every property neither declared nor
    /// matched by a pattern.
    pub additional_after_patterns: Option<SchemaFn>,
    /// `propertyNames`: the schema every property name (a string) must match.
    pub property_names: Option<SchemaFn>,
    /// `dependentSchemas`: when the property is present, the whole object must match.
    pub dependent_schemas: &'static [(&'static str, SchemaFn)],
    /// `not`: the value must not match.
    pub not: Option<SchemaFn>,
    /// `if` / `then` / `else`: a value that matches `if` must match `then`, any other `else`.
    pub if_: Option<SchemaFn>,
    pub then: Option<SchemaFn>,
    pub else_: Option<SchemaFn>,
}

impl Keywords {
    /// No keyword: what a `const` table entry starts from (`..Keywords::NONE`).
    pub const NONE: Keywords = Keywords {
        prefix_items: &[],
        items_after_prefix: None,
        items_closed: false,
        contains: None,
        min_contains: None,
        max_contains: None,
        dependent_required: &[],
        pattern_properties: &[],
        additional_after_patterns: None,
        property_names: None,
        dependent_schemas: &[],
        not: None,
        if_: None,
        then: None,
        else_: None,
    };

    /// Whether a property name is matched by a `patternProperties` pattern (it is then
    /// evaluated, so neither `additionalProperties` nor a closed object applies to it).
    pub fn matches_pattern(&self, key: &str) -> bool {
        self.pattern_properties
            .iter()
            .any(|(p, _)| crate::pattern_matches(p, key))
    }
}

/// A sub-schema with the registry it was evaluated into.
type Evaluated = Arc<(Registry, MetaSchemaRef)>;

/// A sub-schema evaluated into its own registry, once per function.
fn evaluated(f: SchemaFn) -> Evaluated {
    static CACHE: OnceLock<RwLock<HashMap<usize, Evaluated>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = f as usize;
    if let Some(hit) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return hit.clone();
    }
    let mut registry = Registry::new();
    let schema = f(&mut registry);
    let entry = Arc::new((registry, schema));
    cache
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, entry.clone());
    entry
}

/// Validates `value` against a sub-schema, appending its violations.
fn against(
    f: SchemaFn,
    value: &Value,
    path: &str,
    rules: &dyn crate::Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    let sub = evaluated(f);
    crate::validate_at(&sub.0, &sub.1, value, path, rules, errors, depth + 1);
}

/// Whether `value` matches a sub-schema (its violations discarded).
fn matches(f: SchemaFn, value: &Value, rules: &dyn crate::Rules, depth: usize) -> bool {
    let mut e = BTreeMap::new();
    against(f, value, "", rules, &mut e, depth);
    e.is_empty()
}

/// Every violation of `keywords` by `value` (at `path`).
pub(crate) fn check(
    keywords: &Keywords,
    schema: &MetaSchema,
    value: &Value,
    path: &str,
    rules: &dyn crate::Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    if let Some(f) = keywords.not
        && matches(f, value, rules, depth)
    {
        crate::push(
            errors,
            path,
            "must not match the schema `not` forbids".into(),
        );
    }
    if let Some(f) = keywords.if_ {
        let branch = if matches(f, value, rules, depth) {
            keywords.then
        } else {
            keywords.else_
        };
        if let Some(b) = branch {
            against(b, value, path, rules, errors, depth);
        }
    }
    if let Value::Object(map) = value {
        for (present, f) in keywords.dependent_schemas {
            if map.contains_key(*present) {
                against(*f, value, path, rules, errors, depth);
            }
        }
    }
    match value {
        Value::Array(items) => check_items(keywords, items, path, rules, errors, depth),
        Value::Object(map) => {
            for (present, required) in keywords.dependent_required {
                if !map.contains_key(*present) {
                    continue;
                }
                for r in required.iter().filter(|r| !map.contains_key(**r)) {
                    crate::push(
                        errors,
                        &crate::field_path(path, r),
                        format!("is required when `{present}` is present"),
                    );
                }
            }
            for (key, v) in map {
                let p = crate::field_path(path, key);
                let mut matched = false;
                for (pattern, f) in keywords.pattern_properties {
                    if crate::pattern_matches(pattern, key) {
                        matched = true;
                        against(*f, v, &p, rules, errors, depth);
                    }
                }
                let declared = schema.properties.iter().any(|(n, _)| n == key);
                if let (Some(f), false, false) =
                    (keywords.additional_after_patterns, matched, declared)
                {
                    against(f, v, &p, rules, errors, depth);
                }
                if let Some(f) = keywords.property_names {
                    let mut e = BTreeMap::new();
                    against(f, &Value::String(key.clone()), "", rules, &mut e, depth);
                    if let Some(message) = e.into_values().next() {
                        crate::push(errors, &p, format!("has a name that {message}"));
                    }
                }
            }
        }
        _ => {}
    }
}

fn check_items(
    keywords: &Keywords,
    items: &[Value],
    path: &str,
    rules: &dyn crate::Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    let prefix = keywords.prefix_items.len();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        match keywords.prefix_items.get(i) {
            Some(f) => against(*f, item, &p, rules, errors, depth),
            None if keywords.items_closed => {
                crate::push(errors, path, format!("must have at most {prefix} items"));
                break;
            }
            None => {
                if let Some(f) = keywords.items_after_prefix {
                    against(f, item, &p, rules, errors, depth);
                }
            }
        }
    }
    let Some(f) = keywords.contains else {
        return;
    };
    let matching = items
        .iter()
        .filter(|item| matches(f, item, rules, depth))
        .count();
    let min = keywords.min_contains.unwrap_or(1);
    if matching < min {
        crate::push(
            errors,
            path,
            format!("must contain at least {min} matching item(s), has {matching}"),
        );
    }
    if let Some(max) = keywords.max_contains
        && matching > max
    {
        crate::push(
            errors,
            path,
            format!("must contain at most {max} matching item(s), has {matching}"),
        );
    }
}
