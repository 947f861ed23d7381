//! Document → IR.
//!
//! Reads OpenAPI 3.0.x with openapiv3; a 3.1.x or 3.2.x document is first normalised into the
//! same object model (`oas31`, whose header records why and how), with the source kept to be
//! served as written. Validates up front: unique operation ids, every `$ref` resolves, and every
//! construct is one the emitters support. Anything else is an [`Error`] naming the JSON pointer;
//! nothing is silently dropped. The supported set (and so the unsupported one) is listed in
//! `codegen/README.md`.
//!
//! One [`Parser`] walks the document; its methods live by concern in the submodules:
//!
//! - `schema`: schemas → [`Schema`] (component, inline and pointer-referenced types).
//! - `operation`: `paths` → named operations, their parameters' order, responses and callbacks.
//! - `parameters`: one parameter, its style, its schema and what a parameter may hold.
//! - `bodies`: request bodies, responses, their media types and headers.
//! - `security`: security schemes and requirements.

mod bodies;
pub mod oas31;
mod operation;
mod parameters;
mod schema;
mod security;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use crate::ir::*;
use crate::names;
use crate::names::escape;

pub use bodies::status_variant;

/// A document the generator cannot turn into code, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct Error {
    /// JSON pointer into the document (`#/paths/~1pets/get`).
    pub pointer: String,
    pub message: String,
}

thread_local! {
    /// The warnings of the document being parsed on this thread (see [`warnings`]).
    static WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A construct accepted with a weaker meaning than the document's: said on stderr, once per
/// place, so the maintainer knows what is not enforced, and kept in [`Api::warnings`] (the
/// fidelity report; `codegen generate --deny-warnings` fails on any).
pub(crate) fn warn(pointer: &str, message: impl std::fmt::Display) {
    let line = format!("{pointer}: {message}");
    eprintln!("warning: {line}");
    WARNINGS.with(|w| w.borrow_mut().push(line));
}

/// A part of the document as JSON text (served as written).
fn json_text(value: &impl serde::Serialize, pointer: &str) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error {
        pointer: pointer.to_string(),
        message: e.to_string(),
    })
}

/// Refuses the document at `pointer`.
pub(crate) fn err<T>(pointer: &str, message: impl Into<String>) -> Result<T, Error> {
    Err(Error {
        pointer: pointer.to_string(),
        message: message.into(),
    })
}

/// A URI fragment with its `%XX` escapes decoded (a JSON pointer in a `$ref` is a fragment).
pub(crate) fn percent_decode(fragment: &str) -> String {
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

/// Parses YAML or JSON text into the IR. A reference to another file is refused (there is no
/// directory to read it from); [`parse_file`] reads those.
pub fn parse(text: &str) -> Result<Api, Error> {
    parse_value(crate::bundle::bundle(
        crate::bundle::read_document(text, "#")?,
        None,
    )?)
}

/// Parses the document at `path`, with the files its references name (see [`crate::bundle`]).
pub fn parse_file(path: &std::path::Path) -> Result<Api, Error> {
    parse_value(crate::bundle::bundle_file(path)?)
}

/// Parses a document already bundled (by [`crate::bundle::bundle_file_and_sources`]).
pub fn parse_bundled(doc: serde_json::Value) -> Result<Api, Error> {
    parse_value(doc)
}

/// The IR of one bundled document, with the warnings said while reading it.
fn parse_value(raw: serde_json::Value) -> Result<Api, Error> {
    WARNINGS.with(|w| w.borrow_mut().clear());
    let api = parse_versioned(raw);
    let warnings = WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()));
    api.map(|api| Api { warnings, ..api })
}

/// A 3.0 document as it is; a 3.1 or 3.2 one normalised first, its source kept to be served.
fn parse_versioned(raw: serde_json::Value) -> Result<Api, Error> {
    use oas31::Family;
    let version = raw
        .get("openapi")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let Some(family) = Family::of(&version) else {
        return err(
            "#/openapi",
            format!("only OpenAPI 3.0.x, 3.1.x and 3.2.x are supported, found `{version}`"),
        );
    };
    if family == Family::V30 {
        reject_unsupported_keywords(&raw, "#")?;
        return if crate::bundle::needs_bundling(&raw) {
            // Some `$ref` points outside `components`: read from a borrow, so that the
            // document as written stays to follow it in.
            let doc = serde_path_to_error::deserialize(&raw).map_err(invalid)?;
            Parser::new(&doc, Some(&raw)).run()
        } else {
            let doc = serde_path_to_error::deserialize(raw).map_err(invalid)?;
            Parser::new(&doc, None).run()
        };
    }
    let source = json_text(&raw, "#")?;
    let mut raw = raw;
    oas31::resolve_references(&mut raw);
    let normalised = oas31::normalise(raw, family)?;
    reject_unsupported_keywords(&normalised.document, "#")?;
    let doc: oa::OpenAPI =
        serde_path_to_error::deserialize(&normalised.document).map_err(invalid)?;
    let mut webhooks = Vec::new();
    for (name, item) in &normalised.webhooks {
        let item: oa::PathItem = serde_path_to_error::deserialize(item).map_err(|e| {
            let mut e = invalid(e);
            e.pointer = format!("#/webhooks/{}{}", escape(name), &e.pointer[1..]);
            e
        })?;
        webhooks.push((name.clone(), item));
    }
    let extension_ops = operation::extension_ops(&normalised.document)?;
    let mut parser = Parser::new(&doc, Some(&normalised.document));
    parser.webhook_items = &webhooks;
    parser.extension_ops = &extension_ops;
    parser.mutual_tls = normalised.mutual_tls.clone();
    parser.json_schema_2020 = true;
    let api = parser.run()?;
    Ok(Api {
        openapi: version,
        source: Some(source),
        ..api
    })
}

/// The refusal of a document that is not OpenAPI 3.0, at the JSON pointer where reading it
/// stopped. The pointer ends where openapiv3 tries alternatives (a `$ref` or an inline object),
/// which hide what is below them.
fn invalid(e: serde_path_to_error::Error<serde_json::Error>) -> Error {
    use serde_path_to_error::Segment;
    let mut pointer = String::from("#");
    for segment in e.path().iter() {
        match segment {
            Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
            Segment::Map { key } => {
                pointer.push('/');
                pointer.push_str(&escape(key));
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    Error {
        pointer,
        message: format!("not a valid OpenAPI document: {}", e.inner()),
    }
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
                    // Values, not schemas: an extension's content, examples, enumerated and
                    // default values (`default` under `responses` is a response).
                    let opaque = k.starts_with("x-")
                        || matches!(k.as_str(), "example" | "examples" | "enum")
                        || (k == "default" && !pointer.ends_with("/responses"));
                    if opaque {
                        continue;
                    }
                    if k == "type" && child.is_array() {
                        return err(&p, "`type` arrays are not OpenAPI 3.0");
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

/// Walks one document into the IR: the types made so far and the names they took, so every
/// later name is unique against every earlier one.
struct Parser<'a> {
    doc: &'a oa::OpenAPI,
    additional_flags: Vec<(String, bool)>,
    types: Vec<TypeDef>,
    type_names: BTreeSet<String>,
    rust_names: BTreeMap<String, String>,
    taken_rust: BTreeSet<String>,
    /// Types made for schemas referenced by a JSON pointer outside `components/schemas`.
    pointer_types: BTreeMap<String, String>,
    /// Inline schemas made types so far, by what they are (`multipart`, then the schema's
    /// debug form): an identical one shares the type the first made.
    hoisted: HashMap<(bool, String), String>,
    /// The document as read, where such pointers are followed (a typed document drops what
    /// openapiv3 does not model, such as the siblings of a `$ref`); kept only when some
    /// `$ref` points outside `components` (GitHub's document would hold both forms for
    /// nothing).
    raw: Option<&'a serde_json::Value>,
    /// Without it, the typed document as JSON, made the first time a pointer is followed (a
    /// schema `$ref` to another section, `#/components/responses/…`, is one).
    doc_json: Option<serde_json::Value>,
    /// Top-level `webhooks` (OpenAPI 3.1+), as path items.
    webhook_items: &'a [(String, oa::PathItem)],
    /// OpenAPI 3.2's `query` operations and `additionalOperations`, which openapiv3's path
    /// item has no field for.
    extension_ops: &'a [operation::ExtensionOp],
    /// Security schemes of type `mutualTLS` (OpenAPI 3.1+), which openapiv3 cannot read.
    mutual_tls: Vec<String>,
    /// Whether schemas are JSON Schema 2020-12 (OpenAPI 3.1+): their keywords beyond the 3.0
    /// model are read from `raw` (the normalised document).
    json_schema_2020: bool,
}

impl<'a> Parser<'a> {
    fn new(doc: &'a oa::OpenAPI, raw: Option<&'a serde_json::Value>) -> Self {
        Self {
            doc,
            additional_flags: Vec::new(),
            types: Vec::new(),
            type_names: BTreeSet::new(),
            rust_names: BTreeMap::new(),
            taken_rust: BTreeSet::new(),
            pointer_types: BTreeMap::new(),
            hoisted: HashMap::new(),
            raw,
            doc_json: None,
            webhook_items: &[],
            extension_ops: &[],
            mutual_tls: Vec::new(),
            json_schema_2020: false,
        }
    }

    fn components(&self) -> Option<&'a oa::Components> {
        self.doc.components.as_ref()
    }

    /// The whole document, in the order names are taken: component schemas first, then
    /// security, then operations in document order (which hoist their inline types).
    fn run(mut self) -> Result<Api, Error> {
        self.component_schemas()?;
        let security_schemes = self.security_schemes()?;
        let global_security = match &self.doc.security {
            Some(reqs) => self.security_requirement(reqs, "#/security", &security_schemes)?,
            None => Vec::new(),
        };
        let mut operations = Vec::new();
        for planned in self.plan_operations()? {
            let operation = self.operation(planned, &global_security, &security_schemes)?;
            operations.push(operation);
        }
        let webhooks = self.webhooks()?;
        let mut api = self.into_api(operations, security_schemes)?;
        api.webhooks = webhooks;
        Ok(api)
    }

    /// Converts `components/schemas` into named types. Every component name is reserved before
    /// any schema is converted, so a name hoisted from an inline schema never steals one.
    fn component_schemas(&mut self) -> Result<(), Error> {
        let Some(c) = self.components() else {
            return Ok(());
        };
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
        Ok(())
    }

    /// The [`Api`] of the walked document: its operations, the types they made, and what is
    /// served as written (security schemes and the top-level `security`).
    fn into_api(
        self,
        operations: Vec<Operation>,
        security_schemes: Vec<SecurityScheme>,
    ) -> Result<Api, Error> {
        let doc = self.doc;
        let outgoing =
            !self.webhook_items.is_empty() || operations.iter().any(|o| !o.callbacks.is_empty());
        let tags = operation::tags_of(doc, &operations, outgoing);
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
            webhooks: Vec::new(),
            source: None,
            warnings: Vec::new(),
        })
    }

    /// What `r` stands for, with the pointer that errors inside it name: itself, or the
    /// component its `$ref` names in `#/components/<section>` (`of` picks that section),
    /// following a component that is a `$ref` to another. A `$ref` elsewhere, to a component
    /// that is missing, or around a cycle is refused, the same way for every section (`what`
    /// names its kind).
    fn resolve<'r, T>(
        &self,
        r: &'r ReferenceOr<T>,
        pointer: &str,
        section: &str,
        what: &str,
        of: fn(&'a oa::Components) -> &'a indexmap::IndexMap<String, ReferenceOr<T>>,
    ) -> Result<(&'r T, String), Error>
    where
        'a: 'r,
    {
        let mut reference = match r {
            ReferenceOr::Item(item) => return Ok((item, pointer.to_string())),
            ReferenceOr::Reference { reference } => reference,
        };
        // A component may itself be a `$ref` to another (an alias): followed, a cycle refused.
        let mut seen = BTreeSet::new();
        loop {
            let Some(name) = reference.strip_prefix(&format!("#/components/{section}/")) else {
                return err(
                    pointer,
                    format!("`$ref` `{reference}` does not point into #/components/{section}"),
                );
            };
            if !seen.insert(name) {
                return err(pointer, format!("`$ref` `{reference}` refers to itself"));
            }
            match self.components().map(of).and_then(|m| m.get(name)) {
                Some(ReferenceOr::Item(item)) => {
                    return Ok((item, format!("#/components/{section}/{}", escape(name))));
                }
                Some(ReferenceOr::Reference { reference: next }) => reference = next,
                None => return err(pointer, format!("`$ref` to unknown {what} `{name}`")),
            }
        }
    }

    /// Adds a named type for an inline schema and returns a reference to it. A schema written
    /// the same as one made a type before (every keyword, description and nested type equal)
    /// is the same type: it keeps the name of the first in document order, so only an edit of
    /// an identical schema renames it.
    fn hoist(&mut self, hint: &str, schema: Schema, pointer: &str, multipart: bool) -> Schema {
        let reference = |name: String| Schema {
            kind: Kind::Ref(name),
            nullable: schema.nullable,
            ..Schema::default()
        };
        let key = (
            multipart,
            format!(
                "{:?}",
                Schema {
                    nullable: false,
                    ..schema.clone()
                }
            ),
        );
        if let Some(name) = self.hoisted.get(&key) {
            return reference(name.clone());
        }
        let name = names::unique(hint.to_string(), &mut self.type_names);
        self.hoisted.insert(key, name.clone());
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
        reference(name)
    }
}
