//! Schemas as data: what a generated type documents, read from a table instead of built by code.
//!
//! A generated type's schema is a JSON text in the shape poem-openapi serialises a `MetaSchema`
//! in (`type`, `properties`, `allOf`, `minLength`, ...), plus two keys of its own: `{"$ref": i}`
//! stands for the `i`-th of the type's [`Link`]s (another generated type, registered where the
//! schema is), and `x-rust-typename` sets `MetaSchema::rust_typename`, by which the validator
//! finds a schema's 2020-12 keywords. One generic reader turns the text into a `MetaSchema`,
//! once per process and type; before, every type carried its own builder function, which was
//! a quarter of a generated crate's lines and a large part of its check time.
//!
//! Strings that a `MetaSchema` holds as `&'static str` (descriptions, property names) are
//! leaked once per type, like any other table read at start-up: the cache keeps what was read.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use poem_openapi::registry::{MetaDiscriminatorObject, MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use serde_json::{Map, Value};

/// Another generated type that a schema refers to.
#[derive(Clone, Copy)]
pub struct Link {
    register: fn(&mut Registry),
    schema_ref: fn() -> MetaSchemaRef,
}

/// The [`Link`] to `T`.
pub const fn link<T: Type>() -> Link {
    Link {
        register: T::register,
        schema_ref: T::schema_ref,
    }
}

/// A schema as data: its JSON text and the types its `{"$ref": i}` entries name.
#[derive(Clone, Copy)]
pub struct SchemaData {
    pub json: &'static str,
    pub links: &'static [Link],
}

impl SchemaData {
    /// The schema (its JSON must be a schema object), after registering what it refers to.
    pub fn schema(&self, registry: &mut Registry) -> MetaSchema {
        self.register_links(registry);
        match self.read() {
            MetaSchemaRef::Inline(s) => *s,
            MetaSchemaRef::Reference(name) => MetaSchema {
                all_of: vec![MetaSchemaRef::Reference(name)],
                ..MetaSchema::ANY
            },
        }
    }

    /// The schema reference (its JSON may be a schema or `{"$ref": i}`), after registering
    /// what it refers to.
    pub fn schema_ref(&self, registry: &mut Registry) -> MetaSchemaRef {
        self.register_links(registry);
        self.read()
    }

    fn register_links(&self, registry: &mut Registry) {
        for l in self.links {
            (l.register)(registry);
        }
    }

    /// The schema read from the JSON, once per process.
    fn read(&self) -> MetaSchemaRef {
        type Key = (usize, usize, usize, usize);
        static CACHE: OnceLock<RwLock<HashMap<Key, MetaSchemaRef>>> = OnceLock::new();
        let key = (
            self.json.as_ptr() as usize,
            self.json.len(),
            self.links.as_ptr() as usize,
            self.links.len(),
        );
        let cache = CACHE.get_or_init(Default::default);
        if let Some(s) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return s.clone();
        }
        // Read outside the lock: a link to an inline type reads that type's data in turn.
        let value: Value =
            serde_json::from_str(self.json).expect("the generator writes a schema as JSON");
        let schema = schema_ref(&value, self.links);
        cache
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert(schema)
            .clone()
    }
}

fn leak(s: &str) -> &'static str {
    match s {
        "" => "",
        "string" => "string",
        "object" => "object",
        "integer" => "integer",
        "number" => "number",
        "boolean" => "boolean",
        "array" => "array",
        _ => Box::leak(s.to_owned().into_boxed_str()),
    }
}

fn schema_ref(value: &Value, links: &[Link]) -> MetaSchemaRef {
    let Some(object) = value.as_object() else {
        debug_assert!(false, "a schema is a JSON object: {value}");
        return MetaSchemaRef::Inline(Box::new(MetaSchema::ANY));
    };
    match object.get("$ref").and_then(Value::as_u64) {
        Some(i) => {
            let r = (links[i as usize].schema_ref)();
            if object.get("nullable") == Some(&Value::Bool(true)) {
                crate::nullable(r)
            } else {
                r
            }
        }
        None => MetaSchemaRef::Inline(Box::new(schema(object, links))),
    }
}

fn schema(object: &Map<String, Value>, links: &[Link]) -> MetaSchema {
    let mut s = MetaSchema::new(leak(
        object.get("type").and_then(Value::as_str).unwrap_or(""),
    ));
    let text = |v: &Value| leak(v.as_str().unwrap_or_default());
    let size = |v: &Value| v.as_u64().map(|n| n as usize);
    let refs = |v: &Value| -> Vec<MetaSchemaRef> {
        v.as_array()
            .map(|a| a.iter().map(|m| schema_ref(m, links)).collect())
            .unwrap_or_default()
    };
    for (key, v) in object {
        match key.as_str() {
            "type" => {}
            "format" => s.format = Some(text(v)),
            "description" => s.description = Some(text(v)),
            "x-rust-typename" => s.rust_typename = Some(text(v)),
            "default" => s.default = Some(v.clone()),
            "example" => s.example = Some(v.clone()),
            "enum" => s.enum_items = v.as_array().cloned().unwrap_or_default(),
            "required" => {
                s.required = v
                    .as_array()
                    .map(|a| a.iter().map(text).collect())
                    .unwrap_or_default()
            }
            "properties" => {
                s.properties = v
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(n, p)| (leak(n), schema_ref(p, links)))
                            .collect()
                    })
                    .unwrap_or_default()
            }
            "items" => s.items = Some(Box::new(schema_ref(v, links))),
            "additionalProperties" => {
                s.additional_properties = Some(Box::new(schema_ref(v, links)))
            }
            "allOf" => s.all_of = refs(v),
            "oneOf" => s.one_of = refs(v),
            "anyOf" => s.any_of = refs(v),
            "discriminator" => {
                s.discriminator = Some(MetaDiscriminatorObject {
                    property_name: text(&v["propertyName"]),
                    mapping: v["mapping"]
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, t)| (k.clone(), t.as_str().unwrap_or_default().into()))
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            }
            "nullable" => s.nullable = v.as_bool().unwrap_or_default(),
            "deprecated" => s.deprecated = v.as_bool().unwrap_or_default(),
            "readOnly" => s.read_only = v.as_bool().unwrap_or_default(),
            "writeOnly" => s.write_only = v.as_bool().unwrap_or_default(),
            "pattern" => s.pattern = v.as_str().map(str::to_owned),
            "minLength" => s.min_length = size(v),
            "maxLength" => s.max_length = size(v),
            "minItems" => s.min_items = size(v),
            "maxItems" => s.max_items = size(v),
            "minProperties" => s.min_properties = size(v),
            "maxProperties" => s.max_properties = size(v),
            "uniqueItems" => s.unique_items = v.as_bool(),
            "minimum" => s.minimum = v.as_f64(),
            "maximum" => s.maximum = v.as_f64(),
            "multipleOf" => s.multiple_of = v.as_f64(),
            "exclusiveMinimum" => s.exclusive_minimum = v.as_bool(),
            "exclusiveMaximum" => s.exclusive_maximum = v.as_bool(),
            other => debug_assert!(false, "a schema key the generator does not write: {other}"),
        }
    }
    s
}
