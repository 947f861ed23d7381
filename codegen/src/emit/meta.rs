//! Schemas as data: each schema served as the document writes it, emitted as the JSON text the
//! runtime's `SchemaData` reads into a `MetaSchema` (poem-openapi's registry reads that, and so
//! does the request validator: documented == enforced). One generic reader in the runtime
//! replaces a builder function per type.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value, json};

use super::Emitter;
use crate::ir::*;

/// The named types a schema's `{"$ref": i}` entries stand for, in first-use order.
#[derive(Default)]
struct Links(Vec<String>);

impl Links {
    fn index(&mut self, name: &str) -> usize {
        match self.0.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.0.push(name.to_string());
                self.0.len() - 1
            }
        }
    }
}

impl Emitter<'_> {
    /// What a `SchemaData` of the schema itself (a `MetaSchema` once read) holds: its JSON text,
    /// and the paths of the types its `{"$ref": i}` entries stand for, in order. With
    /// `rust_typename`, the JSON carries the name the validator finds its keywords and
    /// closedness by.
    pub(super) fn schema_parts(
        &self,
        schema: &Schema,
        rust_typename: Option<&str>,
    ) -> (String, Vec<TokenStream>) {
        let mut links = Links::default();
        let mut object = self.schema_json(schema, &mut links);
        if let Some(n) = rust_typename {
            object.insert("x-rust-typename".into(), n.into());
        }
        let paths = links.0.iter().map(|n| self.type_path(n)).collect();
        (Value::Object(object).to_string(), paths)
    }

    /// A `SchemaData` expression of a reference to the schema (a `MetaSchemaRef` once read).
    pub(super) fn schema_ref_data(&self, schema: &Schema) -> TokenStream {
        let mut links = Links::default();
        let value = self.ref_json(schema, &mut links);
        self.data_tokens(value, links)
    }

    fn data_tokens(&self, value: Value, links: Links) -> TokenStream {
        let json = value.to_string();
        let paths = links.0.iter().map(|n| self.type_path(n));
        quote!(crate::runtime::SchemaData {
            json: #json,
            links: &[#(crate::runtime::link::<#paths>()),*],
        })
    }

    /// A reference to `schema`: `{"$ref": i}` for a named type (nullable kept), else the schema.
    fn ref_json(&self, schema: &Schema, links: &mut Links) -> Value {
        match &schema.kind {
            Kind::Ref(name) => {
                let i = links.index(name);
                if schema.nullable {
                    json!({"$ref": i, "nullable": true})
                } else {
                    json!({"$ref": i})
                }
            }
            _ => Value::Object(self.schema_json(schema, links)),
        }
    }

    fn refs_json(&self, members: &[Schema], links: &mut Links) -> Value {
        Value::Array(members.iter().map(|m| self.ref_json(m, links)).collect())
    }

    /// `schema` as the document writes it: its `type`, then what its kind sets, its
    /// annotations and its constraints.
    fn schema_json(&self, schema: &Schema, links: &mut Links) -> Map<String, Value> {
        let mut sets = Map::new();
        let ty = self.kind_json(schema, links, &mut sets);
        let mut m = Map::new();
        if !ty.is_empty() {
            m.insert("type".into(), ty.into());
        }
        m.extend(sets);
        annotations_json(schema, &mut m);
        constraints_json(&schema.constraints, &mut m);
        m
    }

    /// The `type` written for `schema` (empty for none), inserting into `m` what its kind says:
    /// format and enum, items, properties, members.
    fn kind_json(
        &self,
        schema: &Schema,
        links: &mut Links,
        m: &mut Map<String, Value>,
    ) -> &'static str {
        match &schema.kind {
            // A component that is only a `$ref` to another: served as `allOf` of that one.
            Kind::Ref(_) => {
                let r = self.ref_json(schema, links);
                m.insert("allOf".into(), Value::Array(vec![r]));
                ""
            }
            Kind::String {
                format,
                enum_values,
            } => {
                if let Some(f) = format {
                    m.insert("format".into(), f.as_str().into());
                }
                if !enum_values.is_empty() {
                    m.insert("enum".into(), enum_values.clone().into());
                }
                "string"
            }
            Kind::Integer { format } | Kind::Number { format } => {
                if let Some(f) = format {
                    m.insert("format".into(), f.as_str().into());
                }
                if matches!(schema.kind, Kind::Integer { .. }) {
                    "integer"
                } else {
                    "number"
                }
            }
            Kind::Boolean => "boolean",
            Kind::Array(item) => {
                m.insert("items".into(), self.ref_json(item, links));
                "array"
            }
            Kind::Object(o) => {
                self.object_json(o, links, m);
                "object"
            }
            Kind::AllOf(members) => {
                m.insert("allOf".into(), self.refs_json(members, links));
                if schema.object_type { "object" } else { "" }
            }
            Kind::OneOf {
                variants,
                discriminator,
            } => {
                m.insert("oneOf".into(), self.refs_json(variants, links));
                if let Some(d) = discriminator {
                    let mapping: Map<String, Value> = d
                        .mapping
                        .iter()
                        .map(|(k, v)| (k.clone(), format!("#/components/schemas/{v}").into()))
                        .collect();
                    m.insert(
                        "discriminator".into(),
                        json!({"propertyName": d.property, "mapping": mapping}),
                    );
                }
                ""
            }
            Kind::AnyOf(members) => {
                m.insert("anyOf".into(), self.refs_json(members, links));
                ""
            }
            Kind::Any => "",
        }
    }

    /// What an object schema sets: its properties, `required`, the `allOf` it extends and the
    /// schema of additional properties.
    fn object_json(&self, o: &Object, links: &mut Links, m: &mut Map<String, Value>) {
        if !o.properties.is_empty() {
            let props: Map<String, Value> = o
                .properties
                .iter()
                .map(|p| (p.name.clone(), self.ref_json(&p.schema, links)))
                .collect();
            m.insert("properties".into(), props.into());
        }
        if !o.required.is_empty() {
            m.insert("required".into(), o.required.clone().into());
        }
        if !o.all_of.is_empty() {
            m.insert("allOf".into(), self.refs_json(&o.all_of, links));
        }
        if let Additional::Schema(v) = &o.additional {
            m.insert("additionalProperties".into(), self.ref_json(v, links));
        }
    }
}

/// The annotations of a schema: read/write-only, description, nullable, deprecated, default and
/// example.
fn annotations_json(schema: &Schema, m: &mut Map<String, Value>) {
    let flags = [
        ("readOnly", schema.read_only),
        ("writeOnly", schema.write_only),
    ];
    for (k, on) in flags {
        if on {
            m.insert(k.into(), true.into());
        }
    }
    if let Some(d) = &schema.description {
        m.insert("description".into(), d.trim_end().into());
    }
    for (k, on) in [
        ("nullable", schema.nullable),
        ("deprecated", schema.deprecated),
    ] {
        if on {
            m.insert(k.into(), true.into());
        }
    }
    if let Some(v) = &schema.default {
        m.insert("default".into(), v.clone());
    }
    if let Some(v) = &schema.example {
        m.insert("example".into(), v.clone());
    }
}

/// The constraints: lengths, pattern, bounds, item and property counts, unique items,
/// `multipleOf` and the `enum` values of a non-string schema.
fn constraints_json(c: &Constraints, m: &mut Map<String, Value>) {
    let sizes = [
        ("minLength", c.min_length),
        ("maxLength", c.max_length),
        ("minItems", c.min_items),
        ("maxItems", c.max_items),
        ("minProperties", c.min_properties),
        ("maxProperties", c.max_properties),
    ];
    for (k, v) in sizes {
        if let Some(v) = v {
            m.insert(k.into(), (v as u64).into());
        }
    }
    if let Some(v) = &c.pattern {
        m.insert("pattern".into(), v.as_str().into());
    }
    let numbers = [
        ("minimum", c.minimum),
        ("maximum", c.maximum),
        ("multipleOf", c.multiple_of),
    ];
    for (k, v) in numbers {
        if let Some(v) = v {
            m.insert(k.into(), v.into());
        }
    }
    let flags = [
        ("exclusiveMinimum", c.exclusive_minimum),
        ("exclusiveMaximum", c.exclusive_maximum),
        ("uniqueItems", c.unique_items),
    ];
    for (k, on) in flags {
        if on {
            m.insert(k.into(), true.into());
        }
    }
    if !c.enum_values.is_empty() {
        m.insert("enum".into(), c.enum_values.clone().into());
    }
}
