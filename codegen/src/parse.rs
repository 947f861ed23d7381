//! Document → IR.
//!
//! Validates up front: OpenAPI 3.0.x, unique operation ids, every `$ref` resolves, and every
//! construct is one the emitters support. Anything else is an [`Error`] naming the JSON pointer;
//! nothing is silently dropped. The supported set (and so the unsupported one) is listed in
//! `codegen/README.md`.

use std::collections::{BTreeMap, BTreeSet};

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use crate::ir::*;
use crate::names;
use crate::pattern;

/// A document the generator cannot turn into code, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct Error {
    /// JSON pointer into the document (`#/paths/~1pets/get`).
    pub pointer: String,
    pub message: String,
}

/// A construct accepted with a weaker meaning than the document's: said on stderr, once per
/// place, so the maintainer knows what is not enforced.
fn warn(pointer: &str, message: impl std::fmt::Display) {
    eprintln!("warning: {pointer}: {message}");
}

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

/// A part of the document as JSON text (served as written).
fn json_text(value: &impl serde::Serialize, pointer: &str) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error {
        pointer: pointer.to_string(),
        message: e.to_string(),
    })
}

fn err<T>(pointer: &str, message: impl Into<String>) -> Result<T, Error> {
    Err(Error {
        pointer: pointer.to_string(),
        message: message.into(),
    })
}

use crate::names::escape;

/// A URI fragment with its `%XX` escapes decoded (a JSON pointer in a `$ref` is a fragment).
fn percent_decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses YAML or JSON text into the IR.
pub fn parse(text: &str) -> Result<Api, Error> {
    // JSON is read by the JSON parser (several times faster on large documents); anything
    // else, or JSON it refuses, by the YAML one.
    let json = text
        .trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str::<serde_json::Value>(text).ok())
        .flatten();
    let raw: serde_json::Value = match json {
        Some(v) => v,
        None => serde_yaml::from_str(text).map_err(|e| Error {
            pointer: "#".into(),
            message: format!("not YAML or JSON: {e}"),
        })?,
    };
    let version = raw
        .get("openapi")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    if !version.starts_with("3.0.") {
        return err(
            "#/openapi",
            format!("only OpenAPI 3.0.x is supported, found `{version}`"),
        );
    }
    reject_unsupported_keywords(&raw, "#")?;
    let doc: oa::OpenAPI = serde_json::from_value(raw).map_err(|e| Error {
        pointer: "#".into(),
        message: format!("not an OpenAPI 3.0 document: {e}"),
    })?;
    Parser::new(&doc).run()
}

/// Keywords that would change meaning if ignored; found anywhere in the raw document.
fn reject_unsupported_keywords(v: &serde_json::Value, pointer: &str) -> Result<(), Error> {
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                let p = format!("{pointer}/{}", escape(k));
                // Inside these maps, keys are user-chosen names, not keywords.
                let named_map = pointer.ends_with("/properties")
                    || pointer.ends_with("/schemas")
                    || pointer.ends_with("/links")
                    || pointer.ends_with("/examples")
                    || pointer.ends_with("/example")
                    || pointer.ends_with("/mapping")
                    || pointer.ends_with("/default")
                    || pointer == "#/paths";
                if !named_map {
                    match k.as_str() {
                        "type" if child.is_array() => {
                            return err(&p, "`type` arrays are not OpenAPI 3.0");
                        }
                        _ => {}
                    }
                }
                reject_unsupported_keywords(child, &p)?;
            }
        }
        serde_json::Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                reject_unsupported_keywords(child, &format!("{pointer}/{i}"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// An operation found in `paths`, with the names [`Parser::plan_operations`] gave it.
struct Planned<'a> {
    path: &'a str,
    method: &'a str,
    op: &'a oa::Operation,
    path_params: &'a [ReferenceOr<oa::Parameter>],
    pointer: String,
    id: String,
    rust: String,
}

/// The tags of `operations`: those the document declares that some operation uses (document
/// order), then undeclared ones in order of first use, then the unserved default tag (name
/// `""`, trait `DefaultApi`) for operations without a tag. Rust names and modules are unique.
fn tags_of(doc: &oa::OpenAPI, operations: &[Operation]) -> Vec<Tag> {
    let used = |name: &str| operations.iter().any(|o| o.tags.iter().any(|t| t == name));
    let mut out: Vec<(String, Option<String>, bool)> = doc
        .tags
        .iter()
        .filter(|t| used(&t.name))
        .map(|t| (t.name.clone(), t.description.clone(), true))
        .collect();
    for o in operations {
        for t in &o.tags {
            if !out.iter().any(|(n, _, _)| n == t) {
                out.push((t.clone(), None, true));
            }
        }
    }
    if operations.iter().any(|o| o.tags.is_empty()) {
        out.push((String::new(), None, false));
    }
    let mut rust_taken = BTreeSet::new();
    let mut modules_taken: BTreeSet<String> = ["models", "server", "runtime", "lib"]
        .into_iter()
        .map(String::from)
        .collect();
    out.into_iter()
        .map(|(name, description, served)| {
            let stem = if served {
                names::camel(&name)
            } else {
                "Default".to_string()
            };
            let rust = names::unique(stem, &mut rust_taken);
            let module = names::unique(names::method_name(&rust), &mut modules_taken);
            Tag {
                name,
                rust,
                module,
                description,
                served,
            }
        })
        .collect()
}

struct Parser<'a> {
    doc: &'a oa::OpenAPI,
    additional_flags: Vec<(String, bool)>,
    types: Vec<TypeDef>,
    type_names: BTreeSet<String>,
    rust_names: BTreeMap<String, String>,
    taken_rust: BTreeSet<String>,
    /// Types made for schemas referenced by a JSON pointer outside `components/schemas`.
    pointer_types: BTreeMap<String, String>,
    /// The document as JSON, made the first time such a pointer is followed.
    doc_json: Option<serde_json::Value>,
}

impl<'a> Parser<'a> {
    fn new(doc: &'a oa::OpenAPI) -> Self {
        Self {
            doc,
            additional_flags: Vec::new(),
            types: Vec::new(),
            type_names: BTreeSet::new(),
            rust_names: BTreeMap::new(),
            taken_rust: BTreeSet::new(),
            pointer_types: BTreeMap::new(),
            doc_json: None,
        }
    }

    fn components(&self) -> Option<&'a oa::Components> {
        self.doc.components.as_ref()
    }

    fn run(mut self) -> Result<Api, Error> {
        let doc = self.doc;
        // Reserve component names first so hoisted names never steal them.
        if let Some(c) = self.components() {
            for name in c.schemas.keys() {
                let rust = names::unique(names::camel(name), &mut self.taken_rust);
                self.type_names.insert(name.clone());
                self.rust_names.insert(name.clone(), rust);
            }
            for (name, s) in &c.schemas {
                let p = format!("#/components/schemas/{}", escape(name));
                let schema = match s {
                    ReferenceOr::Item(s) => self.convert(s, &p, &names::camel(name), true)?,
                    ReferenceOr::Reference { reference } => Schema {
                        kind: Kind::Ref(self.schema_ref(reference, &p)?),
                        ..Schema::default()
                    },
                };
                let rust = self.rust_names[name].clone();
                self.types.push(TypeDef {
                    name: name.clone(),
                    rust,
                    inline: false,
                    multipart: false,
                    schema,
                    pointer: p,
                });
            }
        }

        let security_schemes = self.security_schemes()?;
        let global_security = match &doc.security {
            Some(reqs) => self.security_requirement(reqs, "#/security", &security_schemes)?,
            None => Vec::new(),
        };

        let mut operations = Vec::new();
        let planned = self.plan_operations()?;
        for planned in planned {
            let operation = self.operation(planned, &global_security, &security_schemes)?;
            operations.push(operation);
        }
        let tags = tags_of(doc, &operations);
        Ok(Api {
            openapi: doc.openapi.clone(),
            title: doc.info.title.clone(),
            version: doc.info.version.clone(),
            description: doc.info.description.clone(),
            servers: doc.servers.iter().map(|s| s.url.clone()).collect(),
            tags,
            security_schemes_json: match self.components() {
                Some(c) if !c.security_schemes.is_empty() => Some(json_text(
                    &c.security_schemes,
                    "#/components/securitySchemes",
                )?),
                _ => None,
            },
            security_schemes,
            global_security_json: match &doc.security {
                Some(s) => Some(json_text(s, "#/security")?),
                None => None,
            },
            types: self.types,
            additional_flags: self.additional_flags,
            operations,
        })
    }

    fn security_schemes(&self) -> Result<Vec<SecurityScheme>, Error> {
        let mut out = Vec::new();
        let Some(c) = self.components() else {
            return Ok(out);
        };
        for (name, s) in &c.security_schemes {
            let p = format!("#/components/securitySchemes/{}", escape(name));
            let ReferenceOr::Item(s) = s else {
                return err(&p, "a security scheme `$ref` is not supported");
            };
            let (kind, description) = match s {
                oa::SecurityScheme::HTTP {
                    scheme,
                    description,
                    ..
                } => (
                    SchemeKind::Http {
                        scheme: scheme.to_ascii_lowercase(),
                    },
                    description,
                ),
                oa::SecurityScheme::APIKey {
                    location,
                    name,
                    description,
                    ..
                } => (
                    SchemeKind::ApiKey {
                        location: match location {
                            oa::APIKeyLocation::Header => ApiKeyIn::Header,
                            oa::APIKeyLocation::Query => ApiKeyIn::Query,
                            oa::APIKeyLocation::Cookie => ApiKeyIn::Cookie,
                        },
                        name: name.clone(),
                    },
                    description,
                ),
                oa::SecurityScheme::OAuth2 { description, .. } => (SchemeKind::OAuth2, description),
                oa::SecurityScheme::OpenIDConnect { description, .. } => {
                    (SchemeKind::OpenIdConnect, description)
                }
            };
            out.push(SecurityScheme {
                name: name.clone(),
                description: description.clone(),
                kind,
            });
        }
        Ok(out)
    }

    /// The alternatives of a `security` list; every scheme must be declared.
    fn security_requirement(
        &self,
        reqs: &[oa::SecurityRequirement],
        pointer: &str,
        schemes: &[SecurityScheme],
    ) -> Result<Vec<Requirement>, Error> {
        let mut out = Vec::new();
        for (i, alternative) in reqs.iter().enumerate() {
            let mut req = Requirement::new();
            for (name, scopes) in alternative {
                if !schemes.iter().any(|s| &s.name == name) {
                    return err(
                        &format!("{pointer}/{i}"),
                        format!("security scheme `{name}` is not declared"),
                    );
                }
                req.push((name.clone(), scopes.clone()));
            }
            out.push(req);
        }
        Ok(out)
    }

    /// The type a schema `$ref` names: a component, or any schema of the document by JSON
    /// pointer (`#/components/schemas/A/properties/b`, `#/paths/~1x/get/responses/200/...`),
    /// which becomes a named type of its own the first time it is referenced (served inline).
    fn schema_ref(&mut self, reference: &str, pointer: &str) -> Result<String, Error> {
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
        let json = self
            .doc_json
            .get_or_insert_with(|| serde_json::to_value(self.doc).unwrap_or_default());
        let Some(value) = json.pointer(&target).cloned() else {
            return err(pointer, format!("`$ref` `{reference}` does not resolve"));
        };
        let Ok(schema) = serde_json::from_value::<ReferenceOr<oa::Schema>>(value) else {
            return err(pointer, format!("`$ref` `{reference}` is not a schema"));
        };
        // Named before it is converted, so a schema that refers to itself ends.
        let hint: String = target
            .rsplit('/')
            .filter(|seg| !matches!(*seg, "schema" | "properties" | "items" | "content"))
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

    /// Adds a named type for an inline schema and returns a reference to it.
    fn hoist(&mut self, hint: &str, schema: Schema, pointer: &str, multipart: bool) -> Schema {
        let name = names::unique(hint.to_string(), &mut self.type_names);
        let rust = names::unique(names::camel(&name), &mut self.taken_rust);
        self.rust_names.insert(name.clone(), rust.clone());
        self.types.push(TypeDef {
            name: name.clone(),
            rust,
            inline: true,
            multipart,
            schema: Schema {
                nullable: false,
                ..schema.clone()
            },
            pointer: pointer.to_string(),
        });
        Schema {
            kind: Kind::Ref(name),
            nullable: schema.nullable,
            ..Schema::default()
        }
    }

    fn convert_ref(
        &mut self,
        s: &ReferenceOr<oa::Schema>,
        pointer: &str,
        hint: &str,
    ) -> Result<Schema, Error> {
        match s {
            ReferenceOr::Reference { reference } => Ok(Schema {
                kind: Kind::Ref(self.schema_ref(reference, pointer)?),
                ..Schema::default()
            }),
            ReferenceOr::Item(s) => self.convert(s, pointer, hint, false),
        }
    }

    fn convert_boxed(
        &mut self,
        s: &ReferenceOr<Box<oa::Schema>>,
        pointer: &str,
        hint: &str,
    ) -> Result<Schema, Error> {
        match s {
            ReferenceOr::Reference { reference } => Ok(Schema {
                kind: Kind::Ref(self.schema_ref(reference, pointer)?),
                ..Schema::default()
            }),
            ReferenceOr::Item(s) => self.convert(s, pointer, hint, false),
        }
    }

    /// Converts a schema. `top` is true for a component's own schema (it is already named).
    fn convert(
        &mut self,
        s: &oa::Schema,
        pointer: &str,
        hint: &str,
        top: bool,
    ) -> Result<Schema, Error> {
        let data = &s.schema_data;
        if !data.extensions.is_empty() {
            // Extensions are documentation for other tools; they change nothing here.
        }
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
        };
        let c = &mut out.constraints;
        let needs_name;
        match &s.schema_kind {
            oa::SchemaKind::Type(oa::Type::String(t)) => {
                c.min_length = t.min_length;
                c.max_length = t.max_length;
                if let Some(p) = &t.pattern {
                    if let Err(e) = pattern::compile(p) {
                        warn(
                            &format!("{pointer}/pattern"),
                            format!(
                                "`{p}` is not an ECMA-262 regular expression ({e}); not enforced"
                            ),
                        );
                    }
                    c.pattern = Some(p.clone());
                }
                let format = match &t.format {
                    oa::VariantOrUnknownOrEmpty::Item(f) => Some(
                        match f {
                            oa::StringFormat::Date => "date",
                            oa::StringFormat::DateTime => "date-time",
                            oa::StringFormat::Password => "password",
                            oa::StringFormat::Byte => "byte",
                            oa::StringFormat::Binary => "binary",
                        }
                        .to_string(),
                    ),
                    oa::VariantOrUnknownOrEmpty::Unknown(f) => Some(f.clone()),
                    oa::VariantOrUnknownOrEmpty::Empty => None,
                };
                let mut enum_values = Vec::new();
                for v in &t.enumeration {
                    match v {
                        Some(v) => enum_values.push(v.clone()),
                        None if data.nullable => {}
                        None => warn(
                            &format!("{pointer}/enum"),
                            "`null` in an enum without `nullable: true` is ignored",
                        ),
                    }
                }
                needs_name = !enum_values.is_empty();
                out.kind = Kind::String {
                    format,
                    enum_values,
                };
            }
            oa::SchemaKind::Type(oa::Type::Integer(t)) => {
                c.enum_values = enum_values(&t.enumeration, data.nullable, pointer)?;
                c.multiple_of = t.multiple_of.map(|v| v as f64);
                c.minimum = t.minimum.map(|v| v as f64);
                c.maximum = t.maximum.map(|v| v as f64);
                c.exclusive_minimum = t.exclusive_minimum;
                c.exclusive_maximum = t.exclusive_maximum;
                let format = match &t.format {
                    oa::VariantOrUnknownOrEmpty::Item(oa::IntegerFormat::Int32) => {
                        Some("int32".to_string())
                    }
                    oa::VariantOrUnknownOrEmpty::Item(oa::IntegerFormat::Int64) => {
                        Some("int64".to_string())
                    }
                    // int8, uint32, ... choose the Rust type; any other is documentation.
                    oa::VariantOrUnknownOrEmpty::Unknown(f) => Some(f.clone()),
                    oa::VariantOrUnknownOrEmpty::Empty => None,
                };
                needs_name = false;
                out.kind = Kind::Integer { format };
            }
            oa::SchemaKind::Type(oa::Type::Number(t)) => {
                c.enum_values = enum_values(&t.enumeration, data.nullable, pointer)?;
                c.multiple_of = t.multiple_of;
                c.minimum = t.minimum;
                c.maximum = t.maximum;
                c.exclusive_minimum = t.exclusive_minimum;
                c.exclusive_maximum = t.exclusive_maximum;
                let format = match &t.format {
                    oa::VariantOrUnknownOrEmpty::Item(oa::NumberFormat::Float) => {
                        Some("float".to_string())
                    }
                    oa::VariantOrUnknownOrEmpty::Item(oa::NumberFormat::Double) => {
                        Some("double".to_string())
                    }
                    oa::VariantOrUnknownOrEmpty::Unknown(f) => Some(f.clone()),
                    oa::VariantOrUnknownOrEmpty::Empty => None,
                };
                needs_name = false;
                out.kind = Kind::Number { format };
            }
            oa::SchemaKind::Type(oa::Type::Boolean(t)) => {
                c.enum_values = enum_values(&t.enumeration, data.nullable, pointer)?;
                needs_name = false;
                out.kind = Kind::Boolean;
            }
            oa::SchemaKind::Type(oa::Type::Array(t)) => {
                c.unique_items = t.unique_items;
                c.min_items = t.min_items;
                c.max_items = t.max_items;
                let Some(items) = &t.items else {
                    return err(pointer, "an array needs `items`");
                };
                let item =
                    self.convert_boxed(items, &format!("{pointer}/items"), &format!("{hint}Item"))?;
                needs_name = false;
                out.kind = Kind::Array(Box::new(item));
            }
            oa::SchemaKind::Type(oa::Type::Object(t)) => {
                c.min_properties = t.min_properties;
                c.max_properties = t.max_properties;
                let object = self.object(
                    &t.properties,
                    &t.required,
                    &t.additional_properties,
                    pointer,
                    hint,
                )?;
                needs_name =
                    !object.properties.is_empty() || object.additional == Additional::Closed;
                out.kind = Kind::Object(object);
            }
            oa::SchemaKind::AllOf { all_of } => {
                let members = self.members(all_of, pointer, "allOf", hint)?;
                needs_name = !(members.len() == 1 && matches!(members[0].kind, Kind::Ref(_)));
                out.kind = Kind::AllOf(members);
            }
            oa::SchemaKind::OneOf { one_of } => {
                let variants = self.members(one_of, pointer, "oneOf", hint)?;
                let discriminator = match &data.discriminator {
                    Some(d) => Some(self.discriminator(d, &variants, pointer)?),
                    None => None,
                };
                needs_name = true;
                out.kind = Kind::OneOf {
                    variants,
                    discriminator,
                };
            }
            oa::SchemaKind::AnyOf { any_of } => {
                let members = self.members(any_of, pointer, "anyOf", hint)?;
                needs_name = true;
                out.kind = Kind::AnyOf(members);
            }
            oa::SchemaKind::Not { .. } => {
                warn(
                    pointer,
                    "`not` is accepted as any JSON value (not enforced)",
                );
                needs_name = false;
                out.kind = Kind::Any;
            }
            oa::SchemaKind::Any(a) => {
                (out.kind, needs_name) = self.any_schema(a, &mut out.constraints, pointer, hint)?;
                out.object_type = matches!(out.kind, Kind::AllOf(_)) && a.typ.is_some();
            }
        }
        if needs_name && !top {
            let multipart = false;
            return Ok(self.hoist(hint, out, pointer, multipart));
        }
        Ok(out)
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
        let typ = a.typ.as_deref().or_else(|| {
            if has_object_keywords || !a.all_of.is_empty() {
                Some("object")
            } else if a.items.is_some() {
                Some("array")
            } else {
                None
            }
        });
        if !a.one_of.is_empty() || !a.any_of.is_empty() {
            if has_object_keywords || a.typ.is_some() || !a.all_of.is_empty() {
                warn(pointer, "keywords beside `oneOf`/`anyOf` are not enforced");
            }
            let (members, keyword) = if a.one_of.is_empty() {
                (&a.any_of, "anyOf")
            } else {
                (&a.one_of, "oneOf")
            };
            let members = self.members(members, pointer, keyword, hint)?;
            return Ok((
                if keyword == "anyOf" {
                    Kind::AnyOf(members)
                } else {
                    Kind::OneOf {
                        variants: members,
                        discriminator: None,
                    }
                },
                true,
            ));
        }
        if a.not.is_some() {
            warn(
                pointer,
                "`not` is accepted as any JSON value (not enforced)",
            );
        }
        match typ {
            Some("object") if !has_object_keywords && !a.all_of.is_empty() => {
                let members = self.members(&a.all_of, pointer, "allOf", hint)?;
                let named = !(members.len() == 1 && matches!(members[0].kind, Kind::Ref(_)));
                Ok((Kind::AllOf(members), named))
            }
            Some("object") => {
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
                c.min_properties = a.min_properties;
                c.max_properties = a.max_properties;
                let named = !object.properties.is_empty()
                    || !object.all_of.is_empty()
                    || object.additional == Additional::Closed;
                Ok((Kind::Object(object), named))
            }
            Some("array") => {
                c.min_items = a.min_items;
                c.max_items = a.max_items;
                c.unique_items = a.unique_items.unwrap_or(false);
                let item = match &a.items {
                    Some(items) => self.convert_boxed(
                        items,
                        &format!("{pointer}/items"),
                        &format!("{hint}Item"),
                    )?,
                    None => Schema::default(),
                };
                Ok((Kind::Array(Box::new(item)), false))
            }
            Some(t @ ("string" | "integer" | "number" | "boolean")) => {
                warn(
                    pointer,
                    format!("keywords that do not apply to `{t}` are ignored"),
                );
                c.min_length = a.min_length;
                c.max_length = a.max_length;
                c.minimum = a.minimum;
                c.maximum = a.maximum;
                c.exclusive_minimum = a.exclusive_minimum.unwrap_or(false);
                c.exclusive_maximum = a.exclusive_maximum.unwrap_or(false);
                c.multiple_of = a.multiple_of;
                if t != "string" {
                    c.enum_values = a
                        .enumeration
                        .iter()
                        .filter(|v| !v.is_null())
                        .cloned()
                        .collect();
                }
                Ok((
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
                    },
                    false,
                ))
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
            let schema = self.convert_boxed(s, &p, &format!("{hint}{}", names::camel(name)))?;
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
            for (value, reference) in &d.mapping {
                let name = self.schema_ref(reference, &p)?;
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

    #[allow(clippy::too_many_arguments)]
    /// Every operation in document order, named: written `operationId`s keep their names (a
    /// duplicate is an error) and take their Rust names first; an operation without one is
    /// named from its method and path (`get /pets/{petId}` → `get_pets_pet_id`). A Rust name
    /// taken already gets the next free counter suffix (`2`, `3`, ...), in document order.
    fn plan_operations(&self) -> Result<Vec<Planned<'a>>, Error> {
        let mut planned = Vec::new();
        for (path, item) in &self.doc.paths.paths {
            let pp = format!("#/paths/{}", escape(path));
            let item = match item {
                ReferenceOr::Item(i) => i,
                ReferenceOr::Reference { .. } => {
                    return err(&pp, "path item `$ref` is not supported");
                }
            };
            for (method, op) in item.iter() {
                planned.push(Planned {
                    path,
                    method,
                    op,
                    path_params: &item.parameters,
                    pointer: format!("{pp}/{method}"),
                    id: String::new(),
                    rust: String::new(),
                });
            }
        }
        let mut written = BTreeSet::new();
        let mut taken = BTreeSet::new();
        for p in planned.iter_mut() {
            if let Some(id) = &p.op.operation_id {
                if !written.insert(id.clone()) {
                    return err(&p.pointer, format!("operationId `{id}` is not unique"));
                }
                p.id = id.clone();
                p.rust = names::unique(names::method_name(id), &mut taken);
            }
        }
        for p in planned.iter_mut() {
            if p.op.operation_id.is_none() {
                p.rust = names::unique(
                    names::method_name(&format!("{} {}", p.method, p.path)),
                    &mut taken,
                );
                p.id = p.rust.clone();
            }
        }
        Ok(planned)
    }

    fn operation(
        &mut self,
        planned: Planned<'a>,
        global_security: &[Requirement],
        schemes: &[SecurityScheme],
    ) -> Result<Operation, Error> {
        let Planned {
            path,
            method,
            op,
            path_params,
            pointer,
            id,
            rust,
        } = planned;
        let pointer = pointer.as_str();
        let type_stem = names::camel(&rust);
        let tag = op.tags.first().cloned().unwrap_or_default();
        let mut params: Vec<Param> = Vec::new();
        let mut taken = BTreeSet::from(["body".to_string(), "principal".to_string()]);
        let all: Vec<(usize, bool, &ReferenceOr<oa::Parameter>)> = path_params
            .iter()
            .enumerate()
            .map(|(i, p)| (i, true, p))
            .chain(op.parameters.iter().enumerate().map(|(i, p)| (i, false, p)))
            .collect();
        for (i, from_path_item, p) in all {
            let pp = if from_path_item {
                format!("#/paths/{}/parameters/{i}", escape(path))
            } else {
                format!("{pointer}/parameters/{i}")
            };
            let param = self.parameter(p, &pp, &type_stem, &mut taken)?;
            if let Some(existing) = params
                .iter_mut()
                .find(|x| x.name == param.name && x.location == param.location)
            {
                *existing = param; // operation-level overrides path-level
            } else {
                params.push(param);
            }
        }
        // Path parameters bind by position in poem-openapi: order them as the template does.
        let template_order: Vec<String> = path
            .split('/')
            .filter_map(|seg| {
                seg.strip_prefix('{')
                    .and_then(|s| s.strip_suffix('}'))
                    .map(str::to_string)
            })
            .collect();
        for name in &template_order {
            if !params
                .iter()
                .any(|p| p.location == Location::Path && &p.name == name)
            {
                warn(
                    pointer,
                    format!("path parameter `{name}` is not declared (taken as a string)"),
                );
                params.push(Param {
                    explode: false,
                    delimiter: ',',
                    deep_object: false,
                    content_type: None,
                    name: name.clone(),
                    rust: names::field_name(name, &mut taken),
                    location: Location::Path,
                    required: true,
                    description: None,
                    deprecated: false,
                    schema: Schema {
                        kind: Kind::String {
                            format: None,
                            enum_values: Vec::new(),
                        },
                        ..Schema::default()
                    },
                    pointer: pointer.to_string(),
                });
            }
        }
        params.retain(|p| {
            let stray = p.location == Location::Path && !template_order.contains(&p.name);
            if stray {
                warn(
                    pointer,
                    format!(
                        "path parameter `{}` is not in the path template (ignored)",
                        p.name
                    ),
                );
            }
            !stray
        });
        params.sort_by_key(|p| match p.location {
            Location::Path => template_order
                .iter()
                .position(|n| n == &p.name)
                .unwrap_or(0),
            _ => usize::MAX,
        });

        let body = match &op.request_body {
            None => None,
            Some(b) => Some(self.request_body(b, &format!("{pointer}/requestBody"), &type_stem)?),
        };

        let mut responses = Vec::new();
        let mut variants = BTreeSet::new();
        for (code, r) in &op.responses.responses {
            let status = match code {
                oa::StatusCode::Code(c) => Status::Code(*c),
                oa::StatusCode::Range(d) => Status::Range(*d),
            };
            let rp = format!("{pointer}/responses/{}", status.key());
            responses.push(self.response(r, status, &rp, &type_stem, &mut variants)?);
        }
        if let Some(r) = &op.responses.default {
            let rp = format!("{pointer}/responses/default");
            responses.push(self.response(r, Status::Default, &rp, &type_stem, &mut variants)?);
        }
        if responses.is_empty() {
            return err(
                &format!("{pointer}/responses"),
                "an operation needs at least one response",
            );
        }

        let security = match &op.security {
            Some(reqs) => {
                self.security_requirement(reqs, &format!("{pointer}/security"), schemes)?
            }
            None => global_security.to_vec(),
        };
        let callbacks = self.callbacks(op, pointer, &rust, &type_stem)?;
        let callbacks_json = if op.callbacks.is_empty() {
            None
        } else {
            Some(json_text(&op.callbacks, &format!("{pointer}/callbacks"))?)
        };
        let security_json = match &op.security {
            Some(s) => Some(json_text(s, &format!("{pointer}/security"))?),
            None => None,
        };

        Ok(Operation {
            explicit_id: op.operation_id.is_some(),
            id,
            rust,
            type_stem,
            method: method.to_string(),
            path: path.to_string(),
            tag,
            tags: op.tags.clone(),
            summary: op.summary.clone(),
            description: op.description.clone(),
            deprecated: op.deprecated,
            params,
            body,
            responses,
            security,
            security_json,
            callbacks,
            callbacks_json,
            pointer: pointer.to_string(),
        })
    }

    fn parameter(
        &mut self,
        p: &ReferenceOr<oa::Parameter>,
        pointer: &str,
        stem: &str,
        taken: &mut BTreeSet<String>,
    ) -> Result<Param, Error> {
        let (param, pointer) = match p {
            ReferenceOr::Item(p) => (p, pointer.to_string()),
            ReferenceOr::Reference { reference } => {
                let Some(name) = reference.strip_prefix("#/components/parameters/") else {
                    return err(
                        pointer,
                        format!("`$ref` `{reference}` does not point into #/components/parameters"),
                    );
                };
                match self.components().and_then(|c| c.parameters.get(name)) {
                    Some(ReferenceOr::Item(p)) => {
                        (p, format!("#/components/parameters/{}", escape(name)))
                    }
                    _ => return err(pointer, format!("`$ref` to unknown parameter `{name}`")),
                }
            }
        };
        let mut delimiter = ',';
        let mut deep_object = false;
        let mut content_type = None;
        let (data, location) = match param {
            oa::Parameter::Path { parameter_data, .. } => (parameter_data, Location::Path),
            oa::Parameter::Query {
                parameter_data,
                style,
                ..
            } => {
                delimiter = match style {
                    oa::QueryStyle::Form => ',',
                    oa::QueryStyle::SpaceDelimited => ' ',
                    oa::QueryStyle::PipeDelimited => '|',
                    oa::QueryStyle::DeepObject => {
                        deep_object = true;
                        ','
                    }
                };
                (parameter_data, Location::Query)
            }
            oa::Parameter::Header { parameter_data, .. } => (parameter_data, Location::Header),
            oa::Parameter::Cookie { parameter_data, .. } => (parameter_data, Location::Cookie),
        };
        let schema = match &data.format {
            oa::ParameterSchemaOrContent::Schema(s) => self.convert_ref(
                s,
                &format!("{pointer}/schema"),
                &format!("{stem}{}", names::camel(&data.name)),
            )?,
            oa::ParameterSchemaOrContent::Content(content) => {
                let Some((media, m)) = content.iter().next() else {
                    return err(&pointer, "a parameter's `content` names no media type");
                };
                if media_kind(media) != Media::Json {
                    return err(
                        &pointer,
                        format!("a parameter with `{media}` content is not supported (JSON is)"),
                    );
                }
                content_type = Some(media.clone());
                let schema_pointer = format!("{pointer}/content/{}/schema", escape(media));
                match &m.schema {
                    Some(s) => self.convert_ref(
                        s,
                        &schema_pointer,
                        &format!("{stem}{}", names::camel(&data.name)),
                    )?,
                    None => Schema::default(),
                }
            }
        };
        let raw_text = Schema {
            kind: Kind::String {
                format: None,
                enum_values: Vec::new(),
            },
            description: schema.description.clone(),
            ..Schema::default()
        };
        let schema = match &schema.kind {
            _ if deep_object => self.deep_object(schema, &pointer, stem, &data.name)?,
            // A JSON document: any schema, read by `runtime::JsonParam`.
            _ if content_type.is_some() => self.json_param(schema, &pointer, stem, &data.name),
            Kind::Object(_) | Kind::OneOf { .. } | Kind::AnyOf(_) | Kind::AllOf(_) | Kind::Any => {
                warn(
                    &pointer,
                    "an object-valued parameter is taken as its raw text",
                );
                raw_text
            }
            Kind::Array(item) if location != Location::Path && !is_scalar(item) => {
                warn(
                    &pointer,
                    "an array of arrays or objects as a parameter is taken as its raw text",
                );
                raw_text
            }
            _ => schema,
        };
        match &schema.kind {
            // A JSON document may hold anything.
            _ if content_type.is_some() => {}
            Kind::Array(_) if location == Location::Path => {
                return err(&pointer, "array path parameters are not supported");
            }
            Kind::Array(_) if location == Location::Cookie => {
                return err(&pointer, "array cookie parameters are not supported");
            }
            Kind::Array(item) if !is_scalar(item) => {
                return err(
                    &pointer,
                    "arrays of arrays or objects as parameters are not supported",
                );
            }
            _ => {}
        }
        if location == Location::Path && !data.required {
            return err(&pointer, "path parameters must be required");
        }
        let rust = names::field_name(&data.name, taken);
        Ok(Param {
            // Only `form` explodes by default (the other styles exist for one delimited value).
            explode: data
                .explode
                .unwrap_or(location == Location::Query && delimiter == ','),
            delimiter,
            deep_object,
            content_type,
            name: data.name.clone(),
            rust,
            location,
            required: data.required,
            description: data.description.clone(),
            deprecated: data.deprecated.unwrap_or(false),
            schema,
            pointer,
        })
    }

    /// The schema of a JSON `content` parameter: an inline object gets a name (a Rust type).
    fn json_param(&mut self, schema: Schema, pointer: &str, stem: &str, name: &str) -> Schema {
        match schema.kind {
            Kind::Object(ref o) if !o.properties.is_empty() => {
                let hint = format!("{stem}{}", names::camel(name));
                self.hoist(&hint, schema, pointer, false)
            }
            _ => schema,
        }
    }

    /// The schema of a `deepObject` parameter: an object with properties (named, so it is a
    /// Rust struct the runtime's `DeepObject` reads into).
    fn deep_object(
        &mut self,
        schema: Schema,
        pointer: &str,
        stem: &str,
        name: &str,
    ) -> Result<Schema, Error> {
        let target = match &schema.kind {
            Kind::Ref(n) => self.types.iter().find(|t| &t.name == n).map(|t| &t.schema),
            _ => Some(&schema),
        };
        match target.map(|s| &s.kind) {
            Some(Kind::Object(o)) if !o.properties.is_empty() => {}
            _ => {
                return err(
                    pointer,
                    "a `deepObject` parameter needs an object schema with properties",
                );
            }
        }
        Ok(match schema.kind {
            Kind::Ref(_) => schema,
            _ => {
                let hint = format!("{stem}{}", names::camel(name));
                self.hoist(&hint, schema, &format!("{pointer}/schema"), false)
            }
        })
    }

    /// The requests of an operation's `callbacks`. Each is named `<operation>_<callback>` (plus
    /// `_<method>` when one callback URL has several); its body is a JSON request body.
    fn callbacks(
        &mut self,
        op: &oa::Operation,
        pointer: &str,
        rust: &str,
        stem: &str,
    ) -> Result<Vec<Callback>, Error> {
        let mut out = Vec::new();
        let mut taken = BTreeSet::new();
        for (name, callback) in &op.callbacks {
            let cp = format!("{pointer}/callbacks/{}", escape(name));
            for (expression, item) in callback {
                let ep = format!("{cp}/{}", escape(expression));
                let methods: Vec<(&str, &oa::Operation)> = item.iter().collect();
                for (method, cop) in &methods {
                    let mp = format!("{ep}/{method}");
                    let mut base = format!("{rust}_{}", names::snake(name));
                    if methods.len() > 1 {
                        base = format!("{base}_{method}");
                    }
                    let method_name = names::unique(base, &mut taken);
                    let body = match &cop.request_body {
                        None => None,
                        Some(b) => {
                            let hint =
                                format!("{stem}{}", names::camel(&method_name[rust.len()..]));
                            let body = self.request_body(b, &format!("{mp}/requestBody"), &hint)?;
                            if body.media != Media::Json {
                                return err(
                                    &format!("{mp}/requestBody"),
                                    "a callback body must be JSON",
                                );
                            }
                            Some(body)
                        }
                    };
                    let mut responses = Vec::new();
                    for (code, r) in &cop.responses.responses {
                        let description = match r {
                            ReferenceOr::Item(r) => r.description.clone(),
                            ReferenceOr::Reference { reference } => reference.clone(),
                        };
                        if let oa::StatusCode::Code(c) = code {
                            responses.push((Status::Code(*c), description));
                        }
                    }
                    if let Some(ReferenceOr::Item(r)) = &cop.responses.default {
                        responses.push((Status::Default, r.description.clone()));
                    }
                    out.push(Callback {
                        name: name.clone(),
                        expression: expression.clone(),
                        method: method.to_string(),
                        rust: method_name,
                        summary: cop.summary.clone(),
                        description: cop.description.clone(),
                        body,
                        responses,
                        pointer: mp,
                    });
                }
            }
        }
        Ok(out)
    }

    fn request_body(
        &mut self,
        b: &ReferenceOr<oa::RequestBody>,
        pointer: &str,
        stem: &str,
    ) -> Result<Body, Error> {
        let (body, pointer) = match b {
            ReferenceOr::Item(b) => (b, pointer.to_string()),
            ReferenceOr::Reference { reference } => {
                let Some(name) = reference.strip_prefix("#/components/requestBodies/") else {
                    return err(
                        pointer,
                        format!(
                            "`$ref` `{reference}` does not point into #/components/requestBodies"
                        ),
                    );
                };
                match self.components().and_then(|c| c.request_bodies.get(name)) {
                    Some(ReferenceOr::Item(b)) => {
                        (b, format!("#/components/requestBodies/{}", escape(name)))
                    }
                    _ => return err(pointer, format!("`$ref` to unknown request body `{name}`")),
                }
            }
        };
        let Some((content_type, media)) = primary_media(&body.content) else {
            return err(
                &format!("{pointer}/content"),
                "a request body needs a media type",
            );
        };
        let mp = format!("{pointer}/content/{}", escape(content_type));
        let kind = media_kind(content_type);
        let content_json = several_media(&body.content, &format!("{pointer}/content"))?;
        // No schema, or a multipart form that is not an object: any content, as its bytes.
        let raw = || -> Result<Body, Error> {
            Ok(Body {
                media: Media::Binary,
                content_type: content_type.clone(),
                content_json: Some(json_text(&body.content, &format!("{pointer}/content"))?),
                description: body.description.clone(),
                required: body.required,
                schema: Schema::default(),
            })
        };
        let Some(schema) = &media.schema else {
            return raw();
        };
        let schema = match (kind, schema) {
            (Media::Multipart, ReferenceOr::Item(s)) => {
                let converted =
                    self.convert(s, &format!("{mp}/schema"), &format!("{stem}Form"), true)?;
                if !matches!(converted.kind, Kind::Object(_)) {
                    warn(
                        &mp,
                        "a multipart body that is not an object is taken as its bytes",
                    );
                    return raw();
                }
                self.hoist(
                    &format!("{stem}Form"),
                    converted,
                    &format!("{mp}/schema"),
                    true,
                )
            }
            (Media::Multipart, ReferenceOr::Reference { reference }) => {
                let name = self.schema_ref(reference, &format!("{mp}/schema"))?;
                let t = self
                    .types
                    .iter_mut()
                    .find(|t| t.name == name)
                    .expect("resolved above");
                if !matches!(t.schema.kind, Kind::Object(_)) {
                    warn(
                        &mp,
                        "a multipart body that is not an object is taken as its bytes",
                    );
                    return raw();
                }
                t.multipart = true;
                Schema {
                    kind: Kind::Ref(name),
                    ..Schema::default()
                }
            }
            (_, s) => self.convert_ref(s, &format!("{mp}/schema"), &format!("{stem}Body"))?,
        };
        // A binary string is bytes whatever the media type says.
        let kind = if is_binary(&schema) {
            Media::Binary
        } else {
            kind
        };
        if !body.required && kind != Media::Json {
            warn(
                &pointer,
                "an optional body that is not JSON is taken as required",
            );
        }
        Ok(Body {
            media: kind,
            content_type: content_type.clone(),
            content_json,
            description: body.description.clone(),
            required: body.required,
            schema,
        })
    }

    fn response(
        &mut self,
        r: &ReferenceOr<oa::Response>,
        status: Status,
        pointer: &str,
        stem: &str,
        variants: &mut BTreeSet<String>,
    ) -> Result<Response, Error> {
        let (resp, pointer) = match r {
            ReferenceOr::Item(r) => (r, pointer.to_string()),
            ReferenceOr::Reference { reference } => {
                let Some(name) = reference.strip_prefix("#/components/responses/") else {
                    return err(
                        pointer,
                        format!("`$ref` `{reference}` does not point into #/components/responses"),
                    );
                };
                match self.components().and_then(|c| c.responses.get(name)) {
                    Some(ReferenceOr::Item(r)) => {
                        (r, format!("#/components/responses/{}", escape(name)))
                    }
                    _ => return err(pointer, format!("`$ref` to unknown response `{name}`")),
                }
            }
        };
        let variant = names::unique(status_variant(status), variants);
        let content_json = several_media(&resp.content, &format!("{pointer}/content"))?;
        let content = match primary_media(&resp.content) {
            None => None,
            Some((ct, media)) => {
                let mp = format!("{pointer}/content/{}", escape(ct));
                let schema = match &media.schema {
                    Some(s) => self.convert_ref(
                        s,
                        &format!("{mp}/schema"),
                        &format!("{stem}{variant}Body"),
                    )?,
                    None => Schema::default(),
                };
                // Forms and multipart answers, and binary strings, are sent as raw bytes.
                let kind = match media_kind(ct) {
                    Media::Json | Media::Text if !is_binary(&schema) => media_kind(ct),
                    _ => Media::Binary,
                };
                Some((kind, ct.clone(), schema))
            }
        };
        let mut headers = Vec::new();
        let mut taken = BTreeSet::new();
        for (name, h) in &resp.headers {
            let hp = format!("{pointer}/headers/{}", escape(name));
            let h = match h {
                ReferenceOr::Item(h) => h,
                ReferenceOr::Reference { reference } => {
                    let found = reference
                        .strip_prefix("#/components/headers/")
                        .and_then(|n| self.components()?.headers.get(n));
                    match found {
                        Some(ReferenceOr::Item(h)) => h,
                        _ => return err(&hp, format!("`$ref` to unknown header `{reference}`")),
                    }
                }
            };
            let is_string = matches!(
                &h.format,
                oa::ParameterSchemaOrContent::Schema(ReferenceOr::Item(oa::Schema {
                    schema_kind: oa::SchemaKind::Type(oa::Type::String(_)),
                    ..
                }))
            );
            if !is_string {
                warn(
                    &hp,
                    "a response header that is not a string schema is written as text",
                );
            }
            headers.push(ResponseHeader {
                name: name.clone(),
                rust: names::unique(names::snake(name), &mut taken),
                required: h.required,
                description: h.description.clone(),
            });
        }
        let links = if resp.links.is_empty() {
            None
        } else {
            Some(json_text(&resp.links, &format!("{pointer}/links"))?)
        };
        Ok(Response {
            content_json,
            status,
            variant,
            description: resp.description.clone(),
            content,
            headers,
            links,
        })
    }
}

/// A string, number, integer or boolean (what a parameter array may hold).
fn is_scalar(s: &Schema) -> bool {
    matches!(
        s.kind,
        Kind::String { .. }
            | Kind::Integer { .. }
            | Kind::Number { .. }
            | Kind::Boolean
            | Kind::Ref(_)
    )
}

fn is_binary(s: &Schema) -> bool {
    matches!(&s.kind, Kind::String { format, .. } if format.as_deref() == Some("binary"))
}

/// How a media type is read and written.
fn media_kind(content_type: &str) -> Media {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/json" => Media::Json,
        e if e.ends_with("+json") => Media::Json,
        "multipart/form-data" => Media::Multipart,
        "application/x-www-form-urlencoded" => Media::Form,
        "text/plain" => Media::Text,
        _ => Media::Binary,
    }
}

/// The media type a body or response is typed by when it lists several: JSON first, then
/// multipart, form, text, and the first other one.
fn primary_media(
    content: &indexmap::IndexMap<String, oa::MediaType>,
) -> Option<(&String, &oa::MediaType)> {
    let rank = |ct: &str| match media_kind(ct) {
        Media::Json => 0,
        Media::Multipart => 1,
        Media::Form => 2,
        Media::Text => 3,
        Media::Binary => 4,
    };
    content.iter().min_by_key(|(ct, _)| rank(ct))
}

/// The whole `content` map as JSON text when the generated code cannot say it itself: several
/// media types (requests in the others are refused with 415, responses use the primary one),
/// or one that is not its kind's usual name (`application/vnd.x+json`, `*/*`).
fn several_media(
    content: &indexmap::IndexMap<String, oa::MediaType>,
    pointer: &str,
) -> Result<Option<String>, Error> {
    let usual = |ct: &str| {
        matches!(
            ct,
            "application/json"
                | "multipart/form-data"
                | "application/x-www-form-urlencoded"
                | "text/plain"
                | "application/octet-stream"
        )
    };
    if content.len() > 1 || content.keys().any(|ct| !usual(ct)) {
        Ok(Some(json_text(content, pointer)?))
    } else {
        Ok(None)
    }
}

/// Variant name from the status code, never from a description (a doc edit cannot rename code).
pub fn status_variant(status: Status) -> String {
    match status {
        Status::Default => "Default".into(),
        Status::Range(d) => format!("Status{d}xx"),
        Status::Code(c) => match c {
            200 => "Ok",
            201 => "Created",
            202 => "Accepted",
            204 => "NoContent",
            301 => "MovedPermanently",
            302 => "Found",
            304 => "NotModified",
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Gone",
            412 => "PreconditionFailed",
            413 => "PayloadTooLarge",
            415 => "UnsupportedMediaType",
            422 => "UnprocessableEntity",
            429 => "TooManyRequests",
            500 => "InternalServerError",
            501 => "NotImplemented",
            502 => "BadGateway",
            503 => "ServiceUnavailable",
            504 => "GatewayTimeout",
            other => return format!("Status{other}"),
        }
        .into(),
    }
}
