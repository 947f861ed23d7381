//! `MetaSchema` expressions: each schema served as the document writes it (poem-openapi's
//! registry reads these, and so does the request validator: documented == enforced).

use proc_macro2::TokenStream;
use quote::quote;

use super::{Emitter, f64_lit, json_value};
use crate::ir::*;

impl Emitter<'_> {
    /// An expression of type `MetaSchemaRef` (with `registry` in scope).
    pub(super) fn schema_ref_expr(&self, schema: &Schema) -> TokenStream {
        match &schema.kind {
            Kind::Ref(name) => {
                let t = self.type_path(name);
                let base = quote!({
                    <#t as ::poem_openapi::types::Type>::register(registry);
                    <#t as ::poem_openapi::types::Type>::schema_ref()
                });
                if schema.nullable {
                    quote!(crate::runtime::nullable(#base))
                } else {
                    base
                }
            }
            _ => {
                let s = self.meta_schema(schema);
                quote!(crate::runtime::inline(#s))
            }
        }
    }

    /// An expression of type `MetaSchema` mirroring `schema` as the document writes it: its
    /// `type`, then what its kind sets, its annotations and its constraints, in that order.
    pub(super) fn meta_schema(&self, schema: &Schema) -> TokenStream {
        let mut sets = Vec::new();
        let ty = self.kind_sets(schema, &mut sets);
        annotation_sets(schema, &mut sets);
        text_and_range_sets(&schema.constraints, &mut sets);
        collection_and_value_sets(&schema.constraints, &mut sets);
        if sets.is_empty() {
            quote!(crate::runtime::schema(#ty))
        } else {
            quote!({
                let mut s = crate::runtime::schema(#ty);
                #(#sets)*
                s
            })
        }
    }

    /// The schema expressions of `members` (of an `allOf`, `oneOf` or `anyOf`).
    fn refs(&self, members: &[Schema]) -> Vec<TokenStream> {
        members.iter().map(|m| self.schema_ref_expr(m)).collect()
    }

    /// The `type` written for `schema` (empty for none), pushing onto `sets` what its kind says:
    /// format and enum, items, properties, members.
    fn kind_sets(&self, schema: &Schema, sets: &mut Vec<TokenStream>) -> &'static str {
        match &schema.kind {
            // A component that is only a `$ref` to another: served as `allOf` of that one.
            Kind::Ref(_) => {
                let r = self.schema_ref_expr(schema);
                sets.push(quote!(s.all_of = ::std::vec![#r];));
                ""
            }
            Kind::String {
                format,
                enum_values,
            } => {
                format_set(format, sets);
                if !enum_values.is_empty() {
                    sets.push(quote!(s.enum_items = ::std::vec![#(::serde_json::Value::String(#enum_values.to_string())),*];));
                }
                "string"
            }
            Kind::Integer { format } | Kind::Number { format } => {
                format_set(format, sets);
                if matches!(schema.kind, Kind::Integer { .. }) {
                    "integer"
                } else {
                    "number"
                }
            }
            Kind::Boolean => "boolean",
            Kind::Array(item) => {
                let i = self.schema_ref_expr(item);
                sets.push(
                    quote!(s.items = ::std::option::Option::Some(::std::boxed::Box::new(#i));),
                );
                "array"
            }
            Kind::Object(o) => {
                self.object_sets(o, sets);
                "object"
            }
            Kind::AllOf(members) => {
                let m = self.refs(members);
                sets.push(quote!(s.all_of = ::std::vec![#(#m),*];));
                if schema.object_type { "object" } else { "" }
            }
            Kind::OneOf {
                variants,
                discriminator,
            } => {
                self.one_of_sets(variants, discriminator.as_ref(), sets);
                ""
            }
            Kind::AnyOf(members) => {
                let m = self.refs(members);
                sets.push(quote!(s.any_of = ::std::vec![#(#m),*];));
                ""
            }
            Kind::Any => "",
        }
    }

    /// What an object schema sets: its properties, `required`, the `allOf` it extends and the
    /// schema of additional properties.
    fn object_sets(&self, o: &Object, sets: &mut Vec<TokenStream>) {
        let props: Vec<TokenStream> = o
            .properties
            .iter()
            .map(|p| {
                let n = &p.name;
                let e = self.schema_ref_expr(&p.schema);
                quote!((#n, #e))
            })
            .collect();
        if !props.is_empty() {
            sets.push(quote!(s.properties = ::std::vec![#(#props),*];));
        }
        let req = &o.required;
        if !req.is_empty() {
            sets.push(quote!(s.required = ::std::vec![#(#req),*];));
        }
        if !o.all_of.is_empty() {
            let m = self.refs(&o.all_of);
            sets.push(quote!(s.all_of = ::std::vec![#(#m),*];));
        }
        if let Additional::Schema(v) = &o.additional {
            let e = self.schema_ref_expr(v);
            sets.push(quote!(s.additional_properties = ::std::option::Option::Some(::std::boxed::Box::new(#e));));
        }
    }

    /// What a `oneOf` sets: its variants and its discriminator (mapping to component pointers).
    fn one_of_sets(
        &self,
        variants: &[Schema],
        discriminator: Option<&Discriminator>,
        sets: &mut Vec<TokenStream>,
    ) {
        let m = self.refs(variants);
        sets.push(quote!(s.one_of = ::std::vec![#(#m),*];));
        if let Some(d) = discriminator {
            let prop = &d.property;
            let mapping: Vec<TokenStream> = d
                .mapping
                .iter()
                .map(|(k, v)| {
                    let r = format!("#/components/schemas/{v}");
                    quote!((#k.to_string(), #r.to_string()))
                })
                .collect();
            sets.push(quote!(s.discriminator = ::std::option::Option::Some(::poem_openapi::registry::MetaDiscriminatorObject {
                property_name: #prop,
                mapping: ::std::vec![#(#mapping),*],
            });));
        }
    }
}

/// A string's, integer's or number's `format`, if it has one.
fn format_set(format: &Option<String>, sets: &mut Vec<TokenStream>) {
    if let Some(f) = format {
        sets.push(quote!(s.format = ::std::option::Option::Some(#f);));
    }
}

/// The annotations of a schema: read/write-only, description, nullable, deprecated, default and
/// example.
fn annotation_sets(schema: &Schema, sets: &mut Vec<TokenStream>) {
    if schema.read_only {
        sets.push(quote!(s.read_only = true;));
    }
    if schema.write_only {
        sets.push(quote!(s.write_only = true;));
    }
    if let Some(d) = &schema.description {
        let d = d.trim_end();
        sets.push(quote!(s.description = ::std::option::Option::Some(#d);));
    }
    if schema.nullable {
        sets.push(quote!(s.nullable = true;));
    }
    if schema.deprecated {
        sets.push(quote!(s.deprecated = true;));
    }
    if let Some(v) = &schema.default {
        let v = json_value(v);
        sets.push(quote!(s.default = #v;));
    }
    if let Some(v) = &schema.example {
        let v = json_value(v);
        sets.push(quote!(s.example = #v;));
    }
}

/// The constraints of strings and numbers: lengths, pattern and bounds.
fn text_and_range_sets(c: &Constraints, sets: &mut Vec<TokenStream>) {
    if let Some(v) = c.min_length {
        sets.push(quote!(s.min_length = ::std::option::Option::Some(#v);));
    }
    if let Some(v) = c.max_length {
        sets.push(quote!(s.max_length = ::std::option::Option::Some(#v);));
    }
    if let Some(v) = &c.pattern {
        sets.push(quote!(s.pattern = ::std::option::Option::Some(#v.to_string());));
    }
    if let Some(v) = c.minimum {
        let v = f64_lit(v);
        sets.push(quote!(s.minimum = ::std::option::Option::Some(#v);));
    }
    if let Some(v) = c.maximum {
        let v = f64_lit(v);
        sets.push(quote!(s.maximum = ::std::option::Option::Some(#v);));
    }
    if c.exclusive_minimum {
        sets.push(quote!(s.exclusive_minimum = ::std::option::Option::Some(true);));
    }
    if c.exclusive_maximum {
        sets.push(quote!(s.exclusive_maximum = ::std::option::Option::Some(true);));
    }
}

/// The constraints of arrays and objects (item and property counts, unique items), then
/// `multipleOf` and the `enum` values, after the others as the document has always had them.
fn collection_and_value_sets(c: &Constraints, sets: &mut Vec<TokenStream>) {
    if let Some(v) = c.min_items {
        sets.push(quote!(s.min_items = ::std::option::Option::Some(#v);));
    }
    if let Some(v) = c.max_items {
        sets.push(quote!(s.max_items = ::std::option::Option::Some(#v);));
    }
    if c.unique_items {
        sets.push(quote!(s.unique_items = ::std::option::Option::Some(true);));
    }
    if let Some(v) = c.min_properties {
        sets.push(quote!(s.min_properties = ::std::option::Option::Some(#v);));
    }
    if let Some(v) = c.max_properties {
        sets.push(quote!(s.max_properties = ::std::option::Option::Some(#v);));
    }
    if let Some(v) = c.multiple_of {
        let v = f64_lit(v);
        sets.push(quote!(s.multiple_of = ::std::option::Option::Some(#v);));
    }
    if !c.enum_values.is_empty() {
        let values: Vec<TokenStream> = c
            .enum_values
            .iter()
            .map(|v| {
                let v = json_value(v);
                quote!(#v.unwrap_or_default())
            })
            .collect();
        sets.push(quote!(s.enum_items = ::std::vec![#(#values),*];));
    }
}
