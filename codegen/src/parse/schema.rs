//! Schemas → [`Schema`]: components, inline schemas (hoisted into named types where Rust needs
//! a name), and schemas referenced by a JSON pointer anywhere in the document.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use super::{Error, Parser, err, percent_decode, warn};
use crate::ir::*;
use crate::names;
use crate::names::escape;
use crate::pattern;

/// The values of an integer, number or boolean `enum` (`null` only with `nullable`).
fn enum_values<T: serde::Serialize>(
    values: &[Option<T>],
    nullable: bool,
    pointer: &str,
) -> Result<Vec<serde_json::Value>, Error> {
    let mut out = Vec::new();
    for v in values {
        match v {
            Some(v) => out.push(serde_json::to_value(v).map_err(|e| Error {
                pointer: format!("{pointer}/enum"),
                message: e.to_string(),
            })?),
            None if nullable => {}
            None => warn(
                &format!("{pointer}/enum"),
                "`null` in an enum without `nullable: true` is ignored",
            ),
        }
    }
    Ok(out)
}

/// An integer or number schema's kind, reading what the two share (`enum`, `multipleOf` and the
/// bounds, as numbers) into the constraints `$c`. openapiv3 gives the two the same fields with
/// different number types, so a macro (not a generic function) lets one piece of code read both.
/// A `format` beyond openapiv3's (int8, uint32, ...) chooses the Rust type or is documentation.
macro_rules! numeric {
    ($kind:ident, $t:expr, $c:expr, $nullable:expr, $pointer:expr) => {{
        let (t, c) = ($t, $c);
        c.enum_values = enum_values(&t.enumeration, $nullable, $pointer)?;
        c.multiple_of = t.multiple_of.map(|v| v as f64);
        c.minimum = t.minimum.map(|v| v as f64);
        c.maximum = t.maximum.map(|v| v as f64);
        c.exclusive_minimum = t.exclusive_minimum;
        c.exclusive_maximum = t.exclusive_maximum;
        Kind::$kind {
            format: format_name(&t.format),
        }
    }};
}

/// A `format` as written, `None` when absent: openapiv3 parses the formats it knows into an
/// enum whose serde names are the written ones, so serialising one gives its name back. The
/// same for strings, integers and numbers.
fn format_name<F: serde::Serialize>(format: &oa::VariantOrUnknownOrEmpty<F>) -> Option<String> {
    match format {
        oa::VariantOrUnknownOrEmpty::Item(f) => {
            serde_json::to_value(f).ok()?.as_str().map(str::to_string)
        }
        oa::VariantOrUnknownOrEmpty::Unknown(f) => Some(f.clone()),
        oa::VariantOrUnknownOrEmpty::Empty => None,
    }
}

/// A `type: string` schema: its length and pattern constraints (a pattern that is not ECMA-262
/// is kept, served, and named in a warning), its format and its `enum`.
fn string_kind(t: &oa::StringType, c: &mut Constraints, nullable: bool, pointer: &str) -> Kind {
    c.min_length = t.min_length;
    c.max_length = t.max_length;
    keep_pattern(t.pattern.as_ref(), c, pointer);
    let format = format_name(&t.format);
    let mut enum_values = Vec::new();
    for v in &t.enumeration {
        match v {
            Some(v) => enum_values.push(v.clone()),
            None if nullable => {}
            None => warn(
                &format!("{pointer}/enum"),
                "`null` in an enum without `nullable: true` is ignored",
            ),
        }
    }
    Kind::String {
        format,
        enum_values,
    }
}

/// A string's `pattern`: kept and served; one that is not ECMA-262 is named in a warning and
/// not enforced.
fn keep_pattern(p: Option<&String>, c: &mut Constraints, pointer: &str) {
    let Some(p) = p else {
        return;
    };
    if let Err(e) = pattern::compile(p) {
        warn(
            &format!("{pointer}/pattern"),
            format!("`{p}` is not an ECMA-262 regular expression ({e}); not enforced"),
        );
    }
    c.pattern = Some(p.clone());
}

/// A scalar `type` named beside keywords of another type (`any_schema`): the keywords that
/// apply to it are kept (lengths to a string, bounds to a number), the rest ignored with a
/// warning, as JSON Schema ignores them.
fn loose_scalar(t: &str, a: &oa::AnySchema, c: &mut Constraints, pointer: &str) -> Kind {
    warn(
        pointer,
        format!("keywords that do not apply to `{t}` are ignored"),
    );
    if t == "string" {
        c.min_length = a.min_length;
        c.max_length = a.max_length;
        keep_pattern(a.pattern.as_ref(), c, pointer);
    }
    if t == "integer" || t == "number" {
        c.minimum = a.minimum;
        c.maximum = a.maximum;
        c.exclusive_minimum = a.exclusive_minimum.unwrap_or(false);
        c.exclusive_maximum = a.exclusive_maximum.unwrap_or(false);
        c.multiple_of = a.multiple_of;
    }
    if t != "string" {
        c.enum_values = a
            .enumeration
            .iter()
            .filter(|v| !v.is_null())
            .cloned()
            .collect();
    }
    match t {
        "string" => Kind::String {
            format: a.format.clone(),
            enum_values: Vec::new(),
        },
        "integer" => Kind::Integer {
            format: a.format.clone(),
        },
        "number" => Kind::Number {
            format: a.format.clone(),
        },
        _ => Kind::Boolean,
    }
}

/// The `type` of a schema with loose keywords: as written, or implied by object keywords (or an
/// `allOf`) or by `items`.
fn loose_type(a: &oa::AnySchema, has_object_keywords: bool) -> Option<&str> {
    a.typ.as_deref().or({
        if has_object_keywords || !a.all_of.is_empty() {
            Some("object")
        } else if a.items.is_some() {
            Some("array")
        } else {
            None
        }
    })
}

/// Whether an `allOf` needs a type of its own: all but a lone `$ref` (which is that type).
fn all_of_is_named(members: &[Schema]) -> bool {
    !(members.len() == 1 && matches!(members[0].kind, Kind::Ref(_)))
}

impl<'a> Parser<'a> {
    /// The type a schema `$ref` names: a component, or any schema of the document by JSON
    /// pointer (`#/components/schemas/A/properties/b`, `#/paths/~1x/get/responses/200/...`),
    /// which becomes a named type of its own the first time it is referenced (served inline).
    pub(super) fn schema_ref(&mut self, reference: &str, pointer: &str) -> Result<String, Error> {
        if let Some(name) = reference.strip_prefix("#/components/schemas/")
            && self.type_names.contains(name)
            && !name.contains('/')
        {
            return Ok(name.to_string());
        }
        let Some(target) = reference.strip_prefix('#').map(percent_decode) else {
            return err(
                pointer,
                format!("`$ref` `{reference}` points outside the document"),
            );
        };
        if let Some(name) = self.pointer_types.get(&target) {
            return Ok(name.clone());
        }
        let found = match self.raw {
            Some(raw) => raw.pointer(&target).cloned(),
            None => self
                .doc_json
                .get_or_insert_with(|| serde_json::to_value(self.doc).unwrap_or_default())
                .pointer(&target)
                .cloned(),
        };
        let Some(value) = found else {
            return err(pointer, format!("`$ref` `{reference}` does not resolve"));
        };
        let Ok(schema) = serde_json::from_value::<ReferenceOr<oa::Schema>>(value) else {
            return err(pointer, format!("`$ref` `{reference}` is not a schema"));
        };
        // Named before it is converted, so a schema that refers to itself ends.
        let hint: String = target
            .rsplit('/')
            .filter(|seg| {
                !matches!(
                    *seg,
                    "schema" | "properties" | "items" | "content" | "$defs" | "definitions"
                )
            })
            .take(2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(|seg| names::camel(&seg.replace("~1", "/").replace("~0", "~")))
            .collect();
        let name = names::unique(hint, &mut self.type_names);
        let rust = names::unique(names::camel(&name), &mut self.taken_rust);
        self.rust_names.insert(name.clone(), rust.clone());
        self.pointer_types.insert(target.clone(), name.clone());
        let at = format!("#{target}");
        let converted = match &schema {
            ReferenceOr::Item(s) => self.convert(s, &at, &rust, true)?,
            ReferenceOr::Reference { reference } => Schema {
                kind: Kind::Ref(self.schema_ref(reference, &at)?),
                ..Schema::default()
            },
        };
        self.types.push(TypeDef {
            name: name.clone(),
            rust,
            inline: true,
            multipart: false,
            schema: converted,
            pointer: at,
        });
        Ok(name)
    }

    /// Converts a schema or a `$ref` (the type it names). openapiv3 holds schemas boxed in some
    /// places and not in others: `S` is either, so one function serves both.
    pub(super) fn convert_ref<S: Borrow<oa::Schema>>(
        &mut self,
        s: &ReferenceOr<S>,
        pointer: &str,
        hint: &str,
    ) -> Result<Schema, Error> {
        match s {
            ReferenceOr::Reference { reference } => Ok(Schema {
                kind: Kind::Ref(self.schema_ref(reference, pointer)?),
                ..Schema::default()
            }),
            ReferenceOr::Item(s) => self.convert(s.borrow(), pointer, hint, false),
        }
    }

    /// Converts a schema. `top` is true for a component's own schema (it is already named);
    /// any other schema that Rust needs a name for is hoisted into a named type.
    pub(super) fn convert(
        &mut self,
        s: &oa::Schema,
        pointer: &str,
        hint: &str,
        top: bool,
    ) -> Result<Schema, Error> {
        // Extensions (`x-...`) are documentation for other tools; they change nothing here.
        let data = &s.schema_data;
        let mut out = Schema {
            kind: Kind::Any,
            nullable: data.nullable,
            description: data.description.clone(),
            default: data.default.clone(),
            example: data.example.clone(),
            deprecated: data.deprecated,
            constraints: Constraints::default(),
            object_type: false,
            read_only: data.read_only,
            write_only: data.write_only,
            keywords: Keywords::default(),
        };
        let needs_name = match &s.schema_kind {
            oa::SchemaKind::Type(t) => {
                let (kind, needs_name) =
                    self.typed(t, &mut out.constraints, data, pointer, hint)?;
                out.kind = kind;
                needs_name
            }
            oa::SchemaKind::Any(a) => {
                let needs_name;
                (out.kind, needs_name) = self.any_schema(a, &mut out.constraints, pointer, hint)?;
                out.object_type = matches!(out.kind, Kind::AllOf(_)) && a.typ.is_some();
                needs_name
            }
            kind => {
                let (kind, needs_name) = self.composed(kind, data, pointer, hint)?;
                out.kind = kind;
                needs_name
            }
        };
        if self.json_schema_2020 {
            out.keywords = self.keywords(pointer, hint)?;
        }
        let needs_name = needs_name || !out.keywords.is_empty();
        if needs_name && !top {
            let multipart = false;
            return Ok(self.hoist(hint, out, pointer, multipart));
        }
        Ok(out)
    }

    /// The 2020-12 keywords of the schema at `pointer` that the 3.0 model has no field for,
    /// read from the normalised document (OpenAPI 3.1+; see `oas31`), sub-schemas converted
    /// (named from `hint`).
    fn keywords(&mut self, pointer: &str, hint: &str) -> Result<Keywords, Error> {
        let Some(raw) = self.raw.and_then(|r| r.pointer(&pointer[1..])) else {
            return Ok(Keywords::default());
        };
        let Some(map) = raw.as_object() else {
            return Ok(Keywords::default());
        };
        let mut k = Keywords::default();
        let count = |key: &str| -> Option<usize> {
            map.get(key).and_then(|v| v.as_u64()).map(|n| n as usize)
        };
        if let Some(serde_json::Value::Array(items)) = map.get("prefixItems") {
            for (i, item) in items.iter().enumerate() {
                let p = format!("{pointer}/prefixItems/{i}");
                k.prefix_items
                    .push(self.sub_schema(item, &p, &format!("{hint}Item{}", i + 1))?);
            }
            match map.get(super::oas31::ITEMS_AFTER_PREFIX) {
                Some(rest) if *rest == serde_json::json!({"not": {}}) => k.items_closed = true,
                Some(rest) => {
                    let p = format!("{pointer}/items");
                    let s = self.sub_schema(rest, &p, &format!("{hint}Rest"))?;
                    k.items_after_prefix = Some(Box::new(s));
                }
                None => {}
            }
        }
        if let Some(c) = map.get("contains") {
            let p = format!("{pointer}/contains");
            k.contains = Some(Box::new(self.sub_schema(
                c,
                &p,
                &format!("{hint}Contains"),
            )?));
            k.min_contains = count("minContains");
            k.max_contains = count("maxContains");
        }
        if let Some(serde_json::Value::Object(deps)) = map.get("dependentRequired") {
            for (name, required) in deps {
                let required = required
                    .as_array()
                    .map(|r| {
                        r.iter()
                            .filter_map(|v| v.as_str())
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                k.dependent_required.push((name.clone(), required));
            }
        }
        if let Some(serde_json::Value::Object(patterns)) = map.get("patternProperties") {
            for (i, (pattern, s)) in patterns.iter().enumerate() {
                let p = format!("{pointer}/patternProperties/{}", escape(pattern));
                if let Err(e) = pattern::compile(pattern) {
                    warn(
                        &p,
                        format!(
                            "`{pattern}` is not an ECMA-262 regular expression ({e}); not enforced"
                        ),
                    );
                }
                let s = self.sub_schema(s, &p, &format!("{hint}Pattern{}", i + 1))?;
                k.pattern_properties.push((pattern.clone(), s));
            }
            if let Some(rest) = map.get(super::oas31::ADDITIONAL_AFTER_PATTERNS) {
                let p = format!("{pointer}/additionalProperties");
                let s = self.sub_schema(rest, &p, &format!("{hint}Value"))?;
                k.additional_after_patterns = Some(Box::new(s));
            }
        }
        if let Some(names) = map.get("propertyNames") {
            let p = format!("{pointer}/propertyNames");
            let s = self.sub_schema(names, &p, &format!("{hint}Name"))?;
            k.property_names = Some(Box::new(s));
        }
        if let Some(serde_json::Value::Object(deps)) = map.get("dependentSchemas") {
            for (i, (name, s)) in deps.iter().enumerate() {
                let p = format!("{pointer}/dependentSchemas/{}", escape(name));
                let s = self.sub_schema(s, &p, &format!("{hint}Dependent{}", i + 1))?;
                k.dependent_schemas.push((name.clone(), s));
            }
        }
        for (keyword, slot, suffix) in [
            ("not", &mut k.not, "Not"),
            ("if", &mut k.if_, "If"),
            ("then", &mut k.then, "Then"),
            ("else", &mut k.else_, "Else"),
        ] {
            if let Some(v) = map.get(keyword) {
                let p = format!("{pointer}/{keyword}");
                *slot = Some(Box::new(self.sub_schema(
                    v,
                    &p,
                    &format!("{hint}{suffix}"),
                )?));
            }
        }
        if k.if_.is_none() {
            // Without `if`, `then` and `else` have no effect (JSON Schema 2020-12, 10.2.2).
            (k.then, k.else_) = (None, None);
        }
        Ok(k)
    }

    /// A sub-schema of a 2020-12 keyword, as written in the normalised document.
    fn sub_schema(
        &mut self,
        value: &serde_json::Value,
        pointer: &str,
        hint: &str,
    ) -> Result<Schema, Error> {
        let Ok(schema) = serde_json::from_value::<ReferenceOr<oa::Schema>>(value.clone()) else {
            return err(pointer, "not a schema");
        };
        self.convert_ref(&schema, pointer, hint)
    }

    /// A schema with one `type`: its kind, its constraints (into `c`), and whether it needs a
    /// name (a string enum, an object with properties or closed to others).
    fn typed(
        &mut self,
        t: &oa::Type,
        c: &mut Constraints,
        data: &oa::SchemaData,
        pointer: &str,
        hint: &str,
    ) -> Result<(Kind, bool), Error> {
        Ok(match t {
            oa::Type::String(t) => {
                let kind = string_kind(t, c, data.nullable, pointer);
                let needs_name =
                    matches!(&kind, Kind::String { enum_values, .. } if !enum_values.is_empty());
                (kind, needs_name)
            }
            oa::Type::Integer(t) => (numeric!(Integer, t, c, data.nullable, pointer), false),
            oa::Type::Number(t) => (numeric!(Number, t, c, data.nullable, pointer), false),
            oa::Type::Boolean(t) => {
                c.enum_values = enum_values(&t.enumeration, data.nullable, pointer)?;
                (Kind::Boolean, false)
            }
            oa::Type::Array(t) => {
                if t.items.is_none() {
                    // OpenAPI 3.0 requires `items`; without it nothing constrains the items.
                    warn(pointer, "an array without `items` holds any JSON values");
                }
                let counts = (t.min_items, t.max_items, t.unique_items);
                (
                    self.array(t.items.as_ref(), counts, c, pointer, hint)?,
                    false,
                )
            }
            oa::Type::Object(t) => {
                c.min_properties = t.min_properties;
                c.max_properties = t.max_properties;
                let object = self.object(
                    &t.properties,
                    &t.required,
                    &t.additional_properties,
                    pointer,
                    hint,
                )?;
                let needs_name =
                    !object.properties.is_empty() || object.additional == Additional::Closed;
                (Kind::Object(object), needs_name)
            }
        })
    }

    /// An `allOf`, `oneOf`, `anyOf` or `not` schema: its kind and whether it needs a name (every
    /// `oneOf`/`anyOf` does; an `allOf` of one `$ref` is that type).
    fn composed(
        &mut self,
        kind: &oa::SchemaKind,
        data: &oa::SchemaData,
        pointer: &str,
        hint: &str,
    ) -> Result<(Kind, bool), Error> {
        Ok(match kind {
            oa::SchemaKind::AllOf { all_of } => {
                let members = self.members(all_of, pointer, "allOf", hint)?;
                let needs_name = all_of_is_named(&members);
                (Kind::AllOf(members), needs_name)
            }
            oa::SchemaKind::OneOf { one_of } => {
                let variants = self.members(one_of, pointer, "oneOf", hint)?;
                let discriminator = match &data.discriminator {
                    Some(d) => Some(self.discriminator(d, &variants, pointer)?),
                    None => None,
                };
                let kind = Kind::OneOf {
                    variants,
                    discriminator,
                };
                (kind, true)
            }
            oa::SchemaKind::AnyOf { any_of } => {
                let members = self.members(any_of, pointer, "anyOf", hint)?;
                (Kind::AnyOf(members), true)
            }
            _ => {
                // In a 3.1/3.2 document `not` is enforced through the keywords (`keywords`).
                if !self.json_schema_2020 {
                    warn(
                        pointer,
                        "`not` is accepted as any JSON value (not enforced)",
                    );
                }
                (Kind::Any, false)
            }
        })
    }

    /// A schema whose keywords do not fit one `type` of the typed model: `allOf` beside a `type`
    /// or properties, properties without `type`, keywords of another type (ignored with a
    /// warning), `oneOf`/`anyOf` beside other keywords (the siblings are not enforced).
    fn any_schema(
        &mut self,
        a: &oa::AnySchema,
        c: &mut Constraints,
        pointer: &str,
        hint: &str,
    ) -> Result<(Kind, bool), Error> {
        if *a == oa::AnySchema::default() {
            return Ok((Kind::Any, false));
        }
        let has_object_keywords =
            !a.properties.is_empty() || !a.required.is_empty() || a.additional_properties.is_some();
        let typ = loose_type(a, has_object_keywords);
        if !a.one_of.is_empty() || !a.any_of.is_empty() {
            if has_object_keywords || a.typ.is_some() || !a.all_of.is_empty() {
                warn(pointer, "keywords beside `oneOf`/`anyOf` are not enforced");
            }
            return Ok((self.loose_alternatives(a, pointer, hint)?, true));
        }
        if a.not.is_some() && !self.json_schema_2020 {
            warn(
                pointer,
                "`not` is accepted as any JSON value (not enforced)",
            );
        }
        match typ {
            Some("object") if !has_object_keywords && !a.all_of.is_empty() => {
                let members = self.members(&a.all_of, pointer, "allOf", hint)?;
                let named = all_of_is_named(&members);
                Ok((Kind::AllOf(members), named))
            }
            Some("object") => {
                c.min_properties = a.min_properties;
                c.max_properties = a.max_properties;
                self.loose_object(a, pointer, hint)
            }
            Some("array") => {
                let counts = (a.min_items, a.max_items, a.unique_items.unwrap_or(false));
                Ok((
                    self.array(a.items.as_ref(), counts, c, pointer, hint)?,
                    false,
                ))
            }
            Some(t @ ("string" | "integer" | "number" | "boolean")) => {
                Ok((loose_scalar(t, a, c, pointer), false))
            }
            _ => {
                warn(
                    pointer,
                    "a schema without a usable `type` is accepted as any JSON value",
                );
                Ok((Kind::Any, false))
            }
        }
    }

    /// The `oneOf` (or, without one, the `anyOf`) of a schema with other keywords beside it
    /// (always named, by the caller). The siblings are not enforced (`any_schema` said so).
    fn loose_alternatives(
        &mut self,
        a: &oa::AnySchema,
        pointer: &str,
        hint: &str,
    ) -> Result<Kind, Error> {
        let (members, keyword) = if a.one_of.is_empty() {
            (&a.any_of, "anyOf")
        } else {
            (&a.one_of, "oneOf")
        };
        let members = self.members(members, pointer, keyword, hint)?;
        Ok(if keyword == "anyOf" {
            Kind::AnyOf(members)
        } else {
            Kind::OneOf {
                variants: members,
                discriminator: None,
            }
        })
    }

    /// An object read from loose keywords: properties without `type`, or beside an `allOf`
    /// (whose members it then extends). Named when it has properties, members or is closed.
    fn loose_object(
        &mut self,
        a: &oa::AnySchema,
        pointer: &str,
        hint: &str,
    ) -> Result<(Kind, bool), Error> {
        let mut object = self.object(
            &a.properties,
            &a.required,
            &a.additional_properties,
            pointer,
            hint,
        )?;
        if !a.all_of.is_empty() {
            object.all_of = self.members(&a.all_of, pointer, "allOf", hint)?;
        }
        let named = !object.properties.is_empty()
            || !object.all_of.is_empty()
            || object.additional == Additional::Closed;
        Ok((Kind::Object(object), named))
    }

    /// An array: its item counts (`counts`: min, max, unique, into `c`) and its `items`; without
    /// `items` (only loose keywords may omit them), an array of any values.
    fn array(
        &mut self,
        items: Option<&ReferenceOr<Box<oa::Schema>>>,
        counts: (Option<usize>, Option<usize>, bool),
        c: &mut Constraints,
        pointer: &str,
        hint: &str,
    ) -> Result<Kind, Error> {
        (c.min_items, c.max_items, c.unique_items) = counts;
        let item = match items {
            Some(items) => {
                self.convert_ref(items, &format!("{pointer}/items"), &format!("{hint}Item"))?
            }
            None => Schema::default(),
        };
        Ok(Kind::Array(Box::new(item)))
    }

    /// An object's properties (each converted, with a unique Rust field name), its `required`
    /// list (a required property it does not declare is accepted as any value, with a warning)
    /// and what it says of other properties.
    fn object(
        &mut self,
        properties: &indexmap::IndexMap<String, ReferenceOr<Box<oa::Schema>>>,
        required: &[String],
        additional: &Option<oa::AdditionalProperties>,
        pointer: &str,
        hint: &str,
    ) -> Result<Object, Error> {
        let mut props = Vec::new();
        let mut taken = BTreeSet::new();
        for (name, s) in properties {
            let p = format!("{pointer}/properties/{}", escape(name));
            let schema = self.convert_ref(s, &p, &format!("{hint}{}", names::camel(name)))?;
            let rust = names::field_name(name, &mut taken);
            props.push(Property {
                name: name.clone(),
                rust,
                schema,
            });
        }
        for r in required {
            if !properties.contains_key(r) {
                // JSON Schema: present, any value. Enforced by the validator; no Rust field.
                warn(
                    &format!("{pointer}/required"),
                    format!("required property `{r}` is not declared (any value accepted)"),
                );
            }
        }
        if let Some(oa::AdditionalProperties::Any(flag)) = additional {
            self.additional_flags.push((pointer.to_string(), *flag));
        }
        let additional = match additional {
            None | Some(oa::AdditionalProperties::Any(true)) => Additional::Open,
            Some(oa::AdditionalProperties::Any(false)) => Additional::Closed,
            Some(oa::AdditionalProperties::Schema(s)) => {
                let p = format!("{pointer}/additionalProperties");
                let schema = self.convert_ref(s, &p, &format!("{hint}Value"))?;
                if schema.kind == Kind::Any && schema.description.is_none() {
                    Additional::Open
                } else {
                    Additional::Schema(Box::new(schema))
                }
            }
        };
        Ok(Object {
            properties: props,
            required: required.to_vec(),
            additional,
            all_of: Vec::new(),
        })
    }

    /// The members of an `allOf`, `oneOf` or `anyOf` (`keyword`), named `<hint>1`, `<hint>2`, ...
    /// when hoisted; an empty list is refused.
    fn members(
        &mut self,
        members: &[ReferenceOr<oa::Schema>],
        pointer: &str,
        keyword: &str,
        hint: &str,
    ) -> Result<Vec<Schema>, Error> {
        if members.is_empty() {
            return err(pointer, format!("`{keyword}` needs at least one member"));
        }
        members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                self.convert_ref(
                    m,
                    &format!("{pointer}/{keyword}/{i}"),
                    &format!("{hint}{}", i + 1),
                )
            })
            .collect()
    }

    /// A `oneOf`'s discriminator: its `mapping` (each value must name a variant), or without
    /// one every variant's own name, so every variant must then be a `$ref`.
    fn discriminator(
        &mut self,
        d: &oa::Discriminator,
        variants: &[Schema],
        pointer: &str,
    ) -> Result<Discriminator, Error> {
        let p = format!("{pointer}/discriminator");
        let mut mapping = Vec::new();
        if d.mapping.is_empty() {
            for v in variants {
                let Kind::Ref(name) = &v.kind else {
                    return err(&p, "a discriminator needs every variant to be a `$ref`");
                };
                mapping.push((name.clone(), name.clone()));
            }
        } else {
            for (value, target) in &d.mapping {
                // A mapping value is a schema name or a reference (OpenAPI 3.0.3, Discriminator
                // Object); a name is one of the document's component schemas.
                let reference = if target.contains('/') || target.contains('#') {
                    target.clone()
                } else {
                    format!("#/components/schemas/{target}")
                };
                let name = self.schema_ref(&reference, &p)?;
                if !variants.iter().any(|v| v.kind == Kind::Ref(name.clone())) {
                    return err(
                        &p,
                        format!("mapping `{value}` names `{name}`, which is not a variant"),
                    );
                }
                mapping.push((value.clone(), name));
            }
        }
        Ok(Discriminator {
            property: d.property_name.clone(),
            mapping,
        })
    }
}
