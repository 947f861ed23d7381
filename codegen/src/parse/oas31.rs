//! OpenAPI 3.1 and 3.2 documents, read into the same model as 3.0.
//!
//! **Design.** openapiv3 reads OpenAPI 3.0 only; no maintained crate reads 3.1 and 3.2 with
//! JSON Schema 2020-12 into typed structures that keep every keyword (`oas3` drops what it does
//! not model, such as `prefixItems` and `dependentRequired`). So the generator keeps one reader
//! and one parser: a 3.1/3.2 document is first *normalised* here, on its JSON value, into the
//! object model openapiv3 reads, rewriting each 2020-12 construct into the 3.0 construct that
//! means exactly the same thing, in place, so JSON pointers keep naming the source:
//!
//! | 2020-12 / 3.1                           | read as (same meaning)                       |
//! |-----------------------------------------|----------------------------------------------|
//! | `type: [T, "null"]`                     | `type: T, nullable: true` (`Option<T>`)      |
//! | `type: [A, B, ...]`                     | `anyOf` of one schema per type (an enum)     |
//! | `anyOf`/`oneOf` with `{type: "null"}`   | the other members, `nullable: true`          |
//! | `const: v`                              | `enum: [v]` (its type implied by `v`)        |
//! | `exclusiveMinimum: n` (a number)        | `minimum: n, exclusiveMinimum: true`         |
//! | `examples: [a, ...]` on a schema        | `example: a`                                 |
//! | `$ref` beside annotations               | `allOf: [{$ref}]` with the annotations       |
//! | `$ref` beside constraints               | `allOf: [{$ref}, {constraints}]`             |
//! | `contentEncoding: base64`               | `format: byte`                               |
//! | `contentMediaType` (not text, no encoding) | `format: binary`                          |
//! | `$ref: "#anchor"`, `$ref` to an `$id`   | `$ref` to the schema's JSON pointer          |
//! | `#/components/pathItems/X` path items   | the path item, in place                      |
//! | boolean schemas `true` / `false`        | `{}` / `{not: {}}`                           |
//!
//! What the 3.0 model has no construct for is not dropped: `prefixItems`, `contains`,
//! `dependentRequired`, `patternProperties`, `propertyNames`, `unevaluatedProperties`, ...
//! stay in the value beside the rewritten keywords, where [`Parser::keywords`] reads them into
//! the IR ([`crate::ir::Keywords`]) and the request validator enforces them; a keyword that is
//! read but not enforced is named in a warning with its pointer (the fidelity report;
//! `--deny-warnings` makes it an error). A `jsonSchemaDialect` other than the OpenAPI base
//! dialect or 2020-12 is refused. Top-level `webhooks` are returned apart, as path items, for
//! the `Webhooks` trait. The generated crate serves the document as written (the source), not
//! this normalised form, which only the parser reads.
//!
//! [`Parser::keywords`]: super::Parser

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::{Error, err, warn};
use crate::names::escape;

/// The dialects a 3.1/3.2 document may name: the OpenAPI base dialects and JSON Schema
/// 2020-12 itself.
const DIALECTS: &[&str] = &[
    "https://spec.openapis.org/oas/3.1/dialect/base",
    "https://spec.openapis.org/oas/3.1/dialect/2024-11-10",
    "https://spec.openapis.org/oas/3.2/dialect/base",
    "https://spec.openapis.org/oas/3.2/dialect/2025-09-17",
    "https://json-schema.org/draft/2020-12/schema",
];

/// The OpenAPI version family a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V30,
    V31,
    V32,
}

impl Family {
    /// The family of the `openapi` field, `None` for any other version.
    pub fn of(version: &str) -> Option<Family> {
        if version.starts_with("3.0.") {
            Some(Family::V30)
        } else if version.starts_with("3.1.") {
            Some(Family::V31)
        } else if version.starts_with("3.2.") {
            Some(Family::V32)
        } else {
            None
        }
    }
}

/// The methods of a path item.
const METHODS: &[&str] = crate::ir::ROUTED_METHODS;

/// Keywords a schema may carry that annotate it without constraining values.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "summary",
    "default",
    "readOnly",
    "writeOnly",
    "deprecated",
    "examples",
    "example",
    "$comment",
    "nullable",
    "externalDocs",
    "xml",
];

/// Keywords that apply to one instance type (the rest apply to every type).
fn applies_to(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "minLength" | "maxLength" | "pattern" | "contentEncoding" | "contentMediaType"
        | "contentSchema" => "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => "number",
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains"
        | "minContains" | "maxContains" | "unevaluatedItems" => "array",
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "unevaluatedProperties" => "object",
        _ => return None,
    })
}

/// Whether a keyword of type `kind` (from [`applies_to`]) applies to instances of `ty`.
fn kind_applies(kind: &str, ty: &str) -> bool {
    kind == ty || (kind == "number" && ty == "integer")
}

/// 2020-12 keywords the request validator does not enforce yet: each is named in a warning
/// where it is written.
const NOT_ENFORCED: &[&str] = &["unevaluatedProperties", "unevaluatedItems", "$dynamicRef"];

/// Where `items` beside `prefixItems` is kept in the normalised document (the 3.0 reading of
/// `items` would apply it to every item): the parser reads it from there.
pub const ITEMS_AFTER_PREFIX: &str = "x-bankd-items-after-prefix";

/// Where `additionalProperties` beside `patternProperties` is kept in the normalised document.
pub const ADDITIONAL_AFTER_PATTERNS: &str = "x-bankd-additional-after-patterns";

/// Marks a parameter written `in: querystring` (OpenAPI 3.2: the whole query string, read by
/// its `content`), which the normalised document says `in: query`.
pub const QUERYSTRING: &str = "x-bankd-querystring";

/// Keywords whose values are schemas (one, a list, or a map of them).
enum Sub {
    One,
    List,
    Map,
}

fn sub_schemas(keyword: &str) -> Option<Sub> {
    Some(match keyword {
        "items"
        | "additionalProperties"
        | "not"
        | "contains"
        | "propertyNames"
        | "if"
        | "then"
        | "else"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "contentSchema"
        | "itemSchema" => Sub::One,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Sub::List,
        "properties" | "patternProperties" | "$defs" | "dependentSchemas" | "definitions" => {
            Sub::Map
        }
        _ => return None,
    })
}

/// A 3.1/3.2 document in the form the parser reads.
pub struct Normalised {
    /// The document in the 3.0 object model, with 2020-12 keywords the model has no
    /// construct for left beside it.
    pub document: Value,
    /// Top-level `webhooks` (name, path item), path item `$ref`s resolved.
    pub webhooks: Vec<(String, Value)>,
    /// Security schemes of type `mutualTLS`, by name (openapiv3 has no such type).
    pub mutual_tls: Vec<String>,
}

/// Rewrites a 3.1/3.2 document (already bundled) into the form [`super::Parser`] reads.
pub fn normalise(mut doc: Value, family: Family) -> Result<Normalised, Error> {
    if let Some(d) = doc.get("jsonSchemaDialect") {
        let d = d.as_str().unwrap_or_default();
        if !DIALECTS.contains(&d) {
            return err(
                "#/jsonSchemaDialect",
                format!(
                    "JSON Schema dialect `{d}` is not supported (only 2020-12 and the OpenAPI \
                     base dialect are)"
                ),
            );
        }
    }
    let path_items = doc
        .pointer("/components/pathItems")
        .cloned()
        .unwrap_or(Value::Null);
    let Some(root) = doc.as_object_mut() else {
        return err("#", "a document must be an object");
    };
    root.insert("openapi".into(), Value::String("3.0.3".into()));
    root.remove("jsonSchemaDialect");
    root.remove("$self");
    root.entry("paths").or_insert_with(|| json!({}));
    let mut mutual_tls = Vec::new();
    if let Some(components) = root.get_mut("components").and_then(Value::as_object_mut) {
        components.remove("pathItems");
        if let Some(schemes) = components
            .get_mut("securitySchemes")
            .and_then(Value::as_object_mut)
        {
            schemes.retain(|name, s| {
                let mtls = s.get("type").and_then(Value::as_str) == Some("mutualTLS");
                if mtls {
                    mutual_tls.push(name.clone());
                }
                !mtls
            });
        }
    }
    // Licence `identifier` and `info.summary` are served as written and read by no one here;
    // openapiv3 ignores them.
    let mut n = Normaliser { path_items, family };
    n.document(&mut doc, "#")?;
    let hooks = match doc.get("webhooks") {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    };
    Ok(Normalised {
        document: doc,
        webhooks: hooks,
        mutual_tls,
    })
}

/// Rewrites every `$ref` of a 3.1/3.2 document that names a schema by `$anchor` (`#name`) or
/// by `$id` (with an optional pointer after it), or by a pointer relative to an enclosing
/// schema's `$id`, into the JSON pointer of that schema in the document. Runs before the
/// document is bundled, so that what follows sees only pointers.
pub fn resolve_references(doc: &mut Value) {
    let anchors = Anchors::collect(doc);
    if anchors.anchors.is_empty() && anchors.ids.is_empty() {
        return;
    }
    let mut plan = Vec::new();
    anchors.plan(doc, doc, "", None, &mut plan);
    for (at, reference) in plan {
        if let Some(Value::Object(map)) = doc.pointer_mut(&at) {
            map.insert("$ref".into(), Value::String(reference));
        }
    }
}

/// The references by which a document's schemas may be named besides JSON pointers: each
/// `#anchor` and each `$id` (2020-12); empty for a 3.0 document.
pub fn schema_names(doc: &Value) -> BTreeSet<String> {
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(Family::of(version), Some(Family::V31 | Family::V32)) {
        return BTreeSet::new();
    }
    let a = Anchors::collect(doc);
    a.anchors.into_keys().chain(a.ids.into_keys()).collect()
}

/// Where each `$anchor` and `$id` of the document is, as a JSON pointer.
#[derive(Default)]
struct Anchors {
    /// `#name` → pointer.
    anchors: BTreeMap<String, String>,
    /// `$id` as written → pointer.
    ids: BTreeMap<String, String>,
}

impl Anchors {
    fn collect(doc: &Value) -> Anchors {
        let mut a = Anchors::default();
        // OpenAPI 3.2's `$self`: the document's own URI, by which its references may name it.
        if let Some(own) = doc.get("$self").and_then(Value::as_str) {
            a.ids
                .insert(own.trim_end_matches('#').to_string(), String::new());
        }
        a.walk(doc, "");
        a
    }

    fn walk(&mut self, v: &Value, pointer: &str) {
        match v {
            Value::Object(map) => {
                for key in ["$anchor", "$dynamicAnchor"] {
                    if let Some(anchor) = map.get(key).and_then(Value::as_str) {
                        self.anchors
                            .entry(format!("#{anchor}"))
                            .or_insert_with(|| pointer.to_string());
                    }
                }
                if let Some(id) = map.get("$id").and_then(Value::as_str) {
                    self.ids
                        .entry(id.trim_end_matches('#').to_string())
                        .or_insert_with(|| pointer.to_string());
                }
                for (k, child) in map {
                    if k.starts_with("x-")
                        || matches!(k.as_str(), "example" | "examples" | "const" | "enum")
                    {
                        continue;
                    }
                    self.walk(child, &format!("{pointer}/{}", escape(k)));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.walk(child, &format!("{pointer}/{i}"));
                }
            }
            _ => {}
        }
    }

    /// The `$ref`s to rewrite: (pointer of the object holding it, new reference).
    fn plan(
        &self,
        v: &Value,
        doc: &Value,
        pointer: &str,
        base: Option<&str>,
        out: &mut Vec<(String, String)>,
    ) {
        match v {
            Value::Object(map) => {
                let own = map.contains_key("$id").then(|| pointer.to_string());
                let base = own.as_deref().or(base);
                if let Some(Value::String(r)) = map.get("$ref")
                    && let Some(resolved) = self.resolve(r, base)
                {
                    // A pointer relative to an `$id` that names nothing there, where the same
                    // pointer names a part of the document: many 3.1 documents mean that
                    // (the reference as written, against the document).
                    let dangling = doc.pointer(&resolved[1..]).is_none()
                        && r.starts_with("#/")
                        && doc.pointer(&r[1..]).is_some();
                    if dangling {
                        warn(
                            &format!("#{pointer}/$ref"),
                            format!(
                                "`{r}` does not resolve against the enclosing `$id`; read against the document"
                            ),
                        );
                    } else {
                        out.push((pointer.to_string(), resolved));
                    }
                }
                for (k, child) in map {
                    if k.starts_with("x-")
                        || matches!(k.as_str(), "example" | "examples" | "const" | "enum")
                    {
                        continue;
                    }
                    self.plan(child, doc, &format!("{pointer}/{}", escape(k)), base, out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.plan(child, doc, &format!("{pointer}/{i}"), base, out);
                }
            }
            _ => {}
        }
    }

    /// The pointer form of a `$ref` that names an anchor or an `$id` (with an optional
    /// pointer fragment after it), if it does; `base` is the pointer of the nearest enclosing
    /// schema with an `$id`, against which `#/...` resolves.
    fn resolve(&self, reference: &str, base: Option<&str>) -> Option<String> {
        if let Some(p) = self.anchors.get(reference) {
            return Some(format!("#{p}"));
        }
        if let Some(rest) = reference.strip_prefix("#/")
            && let Some(base) = base
        {
            return Some(format!("#{base}/{rest}"));
        }
        let (id, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let p = self.ids.get(id)?;
        if fragment.is_empty() || fragment.starts_with('/') {
            Some(format!("#{p}{fragment}"))
        } else {
            // `$id#anchor`: an anchor inside that resource.
            self.anchors
                .get(&format!("#{fragment}"))
                .map(|p| format!("#{p}"))
        }
    }
}

struct Normaliser {
    path_items: Value,
    family: Family,
}

impl Normaliser {
    /// Walks the document's structure to its schemas (every `schema` and `itemSchema`, every
    /// component schema) and its path items (`$ref`s into `components/pathItems` inlined).
    fn document(&mut self, v: &mut Value, pointer: &str) -> Result<(), Error> {
        let Value::Object(map) = v else {
            if let Value::Array(items) = v {
                for (i, child) in items.iter_mut().enumerate() {
                    self.document(child, &format!("{pointer}/{i}"))?;
                }
            }
            return Ok(());
        };
        let in_paths = pointer == "#/paths" || pointer == "#/webhooks";
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
            let p = format!("{pointer}/{}", escape(&k));
            if k.starts_with("x-") || matches!(k.as_str(), "example" | "examples") {
                continue;
            }
            let child = map.get_mut(&k).expect("key listed");
            if in_paths || is_callback_expression(pointer) {
                self.path_item(child, &p, &mut Vec::new())?;
            }
            if self.family == Family::V32 && is_path_item(pointer) {
                self.extension_methods(&k, child, pointer, &p)?;
            }
            if k == "in" && child.as_str() == Some("querystring") {
                if self.family != Family::V32 {
                    return err(
                        &p,
                        "`in: querystring` is OpenAPI 3.2 (the document says 3.1)",
                    );
                }
                // The 3.0 model has four locations: a `query` parameter, marked whole.
                *child = Value::String("query".into());
                map.insert(QUERYSTRING.into(), Value::Bool(true));
                continue;
            }
            if k == "itemSchema" {
                streamed_response(pointer, &p)?;
                self.schema(child, &p)?;
                continue;
            }
            if is_path_item(pointer) && METHODS.contains(&k.as_str()) {
                with_responses(child);
            }
            if k == "style" && child.as_str() == Some("cookie") {
                // OpenAPI 3.2's cookie style: `form` without percent-encoding.
                warn(
                    &p,
                    "`style: cookie` (OpenAPI 3.2) is read as `form`: values are percent-decoded",
                );
                *child = Value::String("form".into());
            }
            let schema_here =
                (k == "schema" && !is_section(pointer)) || pointer == "#/components/schemas";
            if schema_here {
                self.schema(child, &p)?;
            } else {
                self.document(child, &p)?;
            }
        }
        Ok(())
    }

    /// OpenAPI 3.2's `query` operation and `additionalOperations` (methods named by their
    /// keys) of the path item at `item_pointer`: served under `#/paths` only (the outgoing
    /// requests of callbacks and webhooks are sent with the fixed methods); a key naming a
    /// fixed method is refused, as the specification requires.
    fn extension_methods(
        &mut self,
        key: &str,
        child: &mut Value,
        item_pointer: &str,
        pointer: &str,
    ) -> Result<(), Error> {
        if key != "query" && key != "additionalOperations" {
            return Ok(());
        }
        if !item_pointer.starts_with("#/paths/") {
            return err(
                pointer,
                "only the paths of `#/paths` take the QUERY method and `additionalOperations` \
                 (a callback or a webhook is sent with a fixed method)",
            );
        }
        if key == "query" {
            with_responses(child);
            return Ok(());
        }
        let Some(ops) = child.as_object_mut() else {
            return err(pointer, "`additionalOperations` must be an object");
        };
        for (method, op) in ops.iter_mut() {
            let fixed = METHODS.contains(&method.to_lowercase().as_str())
                || method.eq_ignore_ascii_case("query");
            if fixed {
                return err(
                    &format!("{pointer}/{}", escape(method)),
                    format!(
                        "`{method}` has its own field in a path item; `additionalOperations` names other methods"
                    ),
                );
            }
            if method.is_empty() || !method.bytes().all(is_token_byte) {
                return err(
                    &format!("{pointer}/{}", escape(method)),
                    format!("`{method}` is not an HTTP method name (a token)"),
                );
            }
            with_responses(op);
        }
        Ok(())
    }

    /// A path item written as a `$ref` into `components/pathItems` is replaced by it (its own
    /// `summary`/`description` kept); a cycle is refused.
    fn path_item(
        &mut self,
        v: &mut Value,
        pointer: &str,
        seen: &mut Vec<String>,
    ) -> Result<(), Error> {
        let Some(reference) = v.get("$ref").and_then(Value::as_str).map(str::to_string) else {
            return Ok(());
        };
        let Some(name) = reference.strip_prefix("#/components/pathItems/") else {
            return Ok(());
        };
        if seen.contains(&reference) {
            return err(pointer, format!("`$ref` `{reference}` refers to itself"));
        }
        let Some(mut item) = self.path_items.get(unescape(name)).cloned() else {
            return err(pointer, format!("`$ref` to unknown path item `{name}`"));
        };
        seen.push(reference);
        self.path_item(&mut item, pointer, seen)?;
        if let (Some(item_map), Some(own)) = (item.as_object_mut(), v.as_object()) {
            for (k, value) in own {
                if k != "$ref" {
                    item_map.insert(k.clone(), value.clone());
                }
            }
        }
        *v = item;
        Ok(())
    }

    /// One schema (and, first, every schema inside it), rewritten in place.
    fn schema(&mut self, v: &mut Value, pointer: &str) -> Result<(), Error> {
        match v {
            Value::Bool(true) => {
                *v = json!({});
                return Ok(());
            }
            Value::Bool(false) => {
                *v = json!({"not": {}});
                return Ok(());
            }
            Value::Object(_) => {}
            _ => return Ok(()),
        }
        let map = v.as_object_mut().expect("an object");
        if self.family != Family::V30 && map.contains_key("nullable") {
            warn(
                &format!("{pointer}/nullable"),
                "`nullable` is not an OpenAPI 3.1 keyword; read with its 3.0 meaning",
            );
        }
        null_members(map);
        // `items: false` closes a tuple; `items` as a list is draft 4's tuple form.
        if map.get("items") == Some(&Value::Bool(false)) {
            map.insert("items".into(), json!({"not": {}}));
        }
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
            let Some(sub) = sub_schemas(&k) else { continue };
            let boolean_kept = matches!(
                k.as_str(),
                "additionalProperties" | "unevaluatedProperties" | "unevaluatedItems"
            );
            if boolean_kept && map.get(&k).is_some_and(Value::is_boolean) {
                continue;
            }
            let p = format!("{pointer}/{}", escape(&k));
            match (sub, map.get_mut(&k)) {
                (Sub::One, Some(child)) => self.schema(child, &p)?,
                (Sub::List, Some(Value::Array(items))) => {
                    for (i, child) in items.iter_mut().enumerate() {
                        self.schema(child, &format!("{p}/{i}"))?;
                    }
                }
                (Sub::Map, Some(Value::Object(entries))) => {
                    for (name, child) in entries.iter_mut() {
                        self.schema(child, &format!("{p}/{}", escape(name)))?;
                    }
                }
                _ => {}
            }
        }
        unevaluated(map);
        tuple(map);
        for k in NOT_ENFORCED {
            if map.contains_key(*k) {
                warn(
                    &format!("{pointer}/{}", escape(k)),
                    format!("`{k}` is read but not enforced"),
                );
            }
        }
        constant(map);
        exclusive_bounds(map, pointer);
        content(map);
        if let Some(Value::Array(examples)) = map.remove("examples")
            && let Some(first) = examples.into_iter().next()
        {
            map.entry("example").or_insert(first);
        }
        ref_siblings(map);
        type_list(map);
        Ok(())
    }
}

/// Whether `pointer` is a map of named entries (`#/components/parameters`, ...), where a key
/// `schema` is a name, not the keyword.
fn is_section(pointer: &str) -> bool {
    pointer.starts_with("#/components/") && pointer.matches('/').count() == 2
}

/// Whether `pointer` is a callback (whose entries are path items by expression).
fn is_callback_expression(pointer: &str) -> bool {
    let mut segments = pointer.rsplit('/');
    let _name = segments.next();
    segments.next() == Some("callbacks")
}

/// Refuses `itemSchema` (at `pointer`) where the media type object at `media_pointer` is not a
/// response of an operation this server answers in a streamed format it writes.
fn streamed_response(media_pointer: &str, pointer: &str) -> Result<(), Error> {
    let segments: Vec<&str> = media_pointer.split('/').collect();
    let media = match segments.as_slice() {
        [.., "content", media] => unescape(media),
        _ => return err(pointer, "`itemSchema` belongs in a media type object"),
    };
    if crate::ir::StreamFormat::of(&media).is_none() {
        return err(
            pointer,
            format!(
                "`itemSchema` of `{media}`: streams are written as `text/event-stream`, \
                 `application/jsonl` (`application/x-ndjson`) or `application/json-seq`"
            ),
        );
    }
    if !segments.contains(&"responses") {
        return err(
            pointer,
            "streamed request bodies (`itemSchema`) are not supported",
        );
    }
    if segments.contains(&"callbacks") || segments.get(1) == Some(&"webhooks") {
        return err(
            pointer,
            "a streamed answer to an outgoing request (callback, webhook) is not supported",
        );
    }
    Ok(())
}

/// An operation object with `responses`, which 3.1 made optional and the 3.0 reading needs.
fn with_responses(op: &mut Value) {
    if let Some(op) = op.as_object_mut() {
        op.entry("responses").or_insert_with(|| json!({}));
    }
}

/// Whether `b` may appear in an HTTP method name (RFC 9110's `tchar`).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether `pointer` names a path item (`#/paths/<p>`, a webhook, a callback's expression).
fn is_path_item(pointer: &str) -> bool {
    let segments: Vec<&str> = pointer.split('/').collect();
    matches!(segments.as_slice(), ["#", "paths" | "webhooks", _])
        || (segments.len() >= 3 && segments[segments.len() - 3] == "callbacks")
}

/// A JSON pointer segment with `~1` and `~0` decoded.
fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// Whether a schema admits only `null`: `{type: "null"}`, `{type: ["null"]}`, `{const: null}`,
/// `{enum: [null]}` (annotations beside are allowed).
fn is_null_schema(v: &Value) -> bool {
    let Some(map) = v.as_object() else {
        return false;
    };
    let only_null = match (map.get("type"), map.get("const"), map.get("enum")) {
        (Some(Value::String(t)), None, None) => t == "null",
        (Some(Value::Array(ts)), None, None) => ts.len() == 1 && ts[0] == "null",
        (None, Some(Value::Null), None) => true,
        (None, None, Some(Value::Array(vs))) => vs.len() == 1 && vs[0].is_null(),
        _ => false,
    };
    only_null
        && map.keys().all(|k| {
            matches!(k.as_str(), "type" | "const" | "enum") || ANNOTATIONS.contains(&k.as_str())
        })
}

/// `anyOf`/`oneOf` with a member that admits only `null`: the other members, nullable. One
/// member left, with nothing but annotations beside: that member, nullable (a `$ref` as
/// `allOf: [{$ref}]`, as 3.0 writes a nullable reference).
fn null_members(map: &mut Map<String, Value>) {
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(members)) = map.get_mut(keyword) else {
            continue;
        };
        let before = members.len();
        members.retain(|m| !is_null_schema(m));
        if members.len() == before || members.is_empty() {
            continue;
        }
        map.insert("nullable".into(), Value::Bool(true));
        let lone = match map.get(keyword) {
            Some(Value::Array(m)) if m.len() == 1 => Some(m[0].clone()),
            _ => None,
        };
        let only_annotations = map
            .keys()
            .all(|k| k == keyword || ANNOTATIONS.contains(&k.as_str()));
        if let (Some(member), true) = (lone, only_annotations) {
            map.remove(keyword);
            match member {
                Value::Object(m) if m.len() == 1 && m.contains_key("$ref") => {
                    map.insert("allOf".into(), Value::Array(vec![Value::Object(m)]));
                }
                Value::Object(m) => {
                    for (k, v) in m {
                        map.entry(k).or_insert(v);
                    }
                }
                other => {
                    map.insert(keyword.into(), Value::Array(vec![other]));
                }
            }
        }
    }
}

/// `unevaluatedProperties: false` where only `properties` and `allOf` members evaluate
/// properties: `additionalProperties: false`, which the validator applies with the `allOf`
/// members' properties declared (the same set).
fn unevaluated(map: &mut Map<String, Value>) {
    let applicators = [
        "anyOf",
        "oneOf",
        "patternProperties",
        "additionalProperties",
        "if",
        "dependentSchemas",
    ];
    if map.get("unevaluatedProperties") == Some(&Value::Bool(false))
        && !applicators.iter().any(|k| map.contains_key(*k))
    {
        map.remove("unevaluatedProperties");
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// `prefixItems`: `items` beside it applies only to the items after the prefix, so the 3.0
/// view (where `items` applies to every item) does not keep it; the tuple is read from the
/// keywords left beside.
fn tuple(map: &mut Map<String, Value>) {
    if map.contains_key("prefixItems") {
        if let Some(rest) = map.remove("items") {
            map.insert(ITEMS_AFTER_PREFIX.into(), rest);
        }
        // In the 3.0 reading the items are any values; the keywords type them.
        map.insert("items".into(), json!({}));
        map.entry("type")
            .or_insert_with(|| Value::String("array".into()));
    }
    // `additionalProperties` beside `patternProperties` applies only to the names no pattern
    // matches: the 3.0 reading (every other property) would type the pattern's values too.
    if map.contains_key("patternProperties")
        && let Some(rest) = map
            .get("additionalProperties")
            .filter(|v| v.is_object())
            .cloned()
    {
        map.insert(ADDITIONAL_AFTER_PATTERNS.into(), rest);
        map.insert("additionalProperties".into(), json!({}));
    }
    // `propertyNames` applies to names, which are strings.
    if let Some(Value::Object(names)) = map.get_mut("propertyNames") {
        names
            .entry("type")
            .or_insert_with(|| Value::String("string".into()));
    }
}

/// `const: v` as `enum: [v]` (within an `enum` written beside it, as both apply); without a
/// `type`, the one `v` implies.
fn constant(map: &mut Map<String, Value>) {
    let Some(c) = map.remove("const") else {
        return;
    };
    let allowed = match map.get("enum") {
        Some(Value::Array(values)) if !values.contains(&c) => Vec::new(),
        _ => vec![c.clone()],
    };
    map.insert("enum".into(), Value::Array(allowed));
    if !map.contains_key("type") {
        let implied = match &c {
            Value::String(_) => Some("string"),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
            Value::Number(_) => Some("number"),
            Value::Bool(_) => Some("boolean"),
            _ => None,
        };
        if let Some(t) = implied {
            map.insert("type".into(), Value::String(t.into()));
        }
    }
}

/// Numeric `exclusiveMinimum`/`exclusiveMaximum` (2020-12) as the bound with 3.0's flag; with
/// an inclusive bound beside it, the stricter of the two. The bounds of an integer written as
/// numbers (`minimum: 0.0`) as the integers that admit the same values.
fn exclusive_bounds(map: &mut Map<String, Value>, pointer: &str) {
    for k in ["exclusiveMinimum", "exclusiveMaximum"] {
        if map.get(k).is_some_and(Value::is_boolean) {
            warn(
                &format!("{pointer}/{k}"),
                format!("a boolean `{k}` is OpenAPI 3.0's; read with its 3.0 meaning"),
            );
        }
    }
    for (exclusive, inclusive, lower) in [
        ("exclusiveMinimum", "minimum", true),
        ("exclusiveMaximum", "maximum", false),
    ] {
        let Some(Value::Number(e)) = map.get(exclusive).cloned() else {
            continue;
        };
        let e_f = e.as_f64().unwrap_or_default();
        let stricter = match map.get(inclusive).and_then(Value::as_f64) {
            None => true,
            Some(i) if lower => e_f >= i,
            Some(i) => e_f <= i,
        };
        if stricter {
            map.insert(inclusive.into(), Value::Number(e));
            map.insert(exclusive.into(), Value::Bool(true));
        } else {
            map.remove(exclusive);
        }
    }
    if map.get("type").and_then(Value::as_str) == Some("integer") {
        for (k, flag, lower) in [
            ("minimum", "exclusiveMinimum", true),
            ("maximum", "exclusiveMaximum", false),
        ] {
            let Some(Value::Number(n)) = map.get(k) else {
                continue;
            };
            let Some(f) = n.as_f64().filter(|_| !(n.is_i64() || n.is_u64())) else {
                continue;
            };
            if f.abs() >= 9.0e15 {
                continue;
            }
            if f.fract() == 0.0 {
                map.insert(k.into(), json!(f as i64));
            } else {
                // No integer equals it: the nearest one inside is the bound, inclusive.
                let whole = if lower { f.ceil() } else { f.floor() };
                map.insert(k.into(), json!(whole as i64));
                map.remove(flag);
            }
        }
    }
}

/// `contentEncoding` and `contentMediaType` on a string as the 3.0 formats that say the same:
/// base64 text is `byte`; content of a non-text media type without an encoding is `binary`.
fn content(map: &mut Map<String, Value>) {
    if map.contains_key("format") {
        return;
    }
    let encoding = map.get("contentEncoding").and_then(Value::as_str);
    let media = map.get("contentMediaType").and_then(Value::as_str);
    let format = match (encoding, media) {
        (Some(e), _) if e.eq_ignore_ascii_case("base64") || e.eq_ignore_ascii_case("base64url") => {
            "byte"
        }
        (None, Some(m)) if !is_text_media(m) => "binary",
        _ => return,
    };
    map.insert("format".into(), Value::String(format.into()));
    if !map.contains_key("type") {
        map.insert("type".into(), Value::String("string".into()));
    }
}

fn is_text_media(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    m.starts_with("text/") || m.ends_with("json") || m.ends_with("xml") || m.contains("+json")
}

/// A `$ref` with siblings (2020-12 applies both): beside annotations only, `allOf: [{$ref}]`
/// with them (a 3.0 reference with a description); beside constraints, `allOf` of the
/// reference and the rest.
fn ref_siblings(map: &mut Map<String, Value>) {
    if !map.contains_key("$ref") || map.len() == 1 {
        return;
    }
    let reference = map.remove("$ref").expect("checked");
    let target = json!({"$ref": reference});
    let constraints: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| {
            !ANNOTATIONS.contains(&k.as_str()) && !k.starts_with("x-") && !k.starts_with('$')
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let object_keywords = constraints.iter().all(|(k, v)| {
        matches!(
            k.as_str(),
            "properties"
                | "required"
                | "additionalProperties"
                | "minProperties"
                | "maxProperties"
                | "allOf"
        ) || (k == "type" && v == "object")
    });
    if constraints.is_empty() || object_keywords {
        // In place (an object's keywords beside an `allOf`, which the 3.0 reading merges), so
        // pointers into the properties still resolve.
        match map.get_mut("allOf") {
            Some(Value::Array(members)) => members.insert(0, target),
            _ => {
                map.insert("allOf".into(), Value::Array(vec![target]));
            }
        }
    } else {
        for k in constraints.keys() {
            map.remove(k);
        }
        map.insert(
            "allOf".into(),
            Value::Array(vec![target, Value::Object(constraints)]),
        );
    }
}

/// `type` as a list: one type beside `"null"` is that type, nullable; several are an `anyOf`
/// with one member per type holding the keywords that apply to it (the rest stay here).
fn type_list(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type").cloned() else {
        if map.get("type").and_then(Value::as_str) == Some("null") {
            // Only `null`: 3.0 has no such type; nullable, any other value refused by `enum`.
            map.remove("type");
            map.insert("nullable".into(), Value::Bool(true));
            map.insert("enum".into(), json!([null]));
        }
        return;
    };
    let mut names: Vec<String> = types
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let nullable = names.iter().any(|t| t == "null");
    names.retain(|t| t != "null");
    let mut seen = BTreeSet::new();
    names.retain(|t| seen.insert(t.clone()));
    if nullable {
        map.insert("nullable".into(), Value::Bool(true));
    }
    match names.as_slice() {
        [] => {
            map.remove("type");
            map.insert("enum".into(), json!([null]));
        }
        [one] => {
            map.insert("type".into(), Value::String(one.clone()));
        }
        several => {
            map.remove("type");
            let typed: Vec<String> = map
                .keys()
                .filter(|k| applies_to(k).is_some())
                .cloned()
                .collect();
            let mut members = Vec::new();
            for t in several {
                let mut member = Map::new();
                member.insert("type".into(), Value::String(t.clone()));
                for k in &typed {
                    if applies_to(k).is_some_and(|kind| kind_applies(kind, t)) {
                        member.insert(k.clone(), map[k].clone());
                    }
                }
                if t == "string"
                    && let Some(f) = map.get("format")
                {
                    member.insert("format".into(), f.clone());
                }
                members.push(Value::Object(member));
            }
            for k in &typed {
                map.remove(k);
            }
            map.remove("format");
            map.insert("anyOf".into(), Value::Array(members));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: Value) -> Value {
        let mut doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "components": {"schemas": {"S": v}}});
        let n = normalise(std::mem::take(&mut doc), Family::V31).expect("normalises");
        n.document["components"]["schemas"]["S"].clone()
    }

    #[test]
    fn a_type_beside_null_is_that_type_nullable() {
        assert_eq!(
            schema(json!({"type": ["string", "null"], "maxLength": 3})),
            json!({"type": "string", "nullable": true, "maxLength": 3})
        );
    }

    #[test]
    fn several_types_are_an_any_of_with_the_keywords_that_apply_to_each() {
        assert_eq!(
            schema(
                json!({"type": ["string", "integer"], "maxLength": 3, "minimum": 1, "description": "d"})
            ),
            json!({"description": "d", "anyOf": [
                {"type": "string", "maxLength": 3},
                {"type": "integer", "minimum": 1}
            ]})
        );
    }

    #[test]
    fn a_null_member_makes_the_union_nullable() {
        assert_eq!(
            schema(
                json!({"anyOf": [{"$ref": "#/components/schemas/A"}, {"type": "null"}], "description": "d"})
            ),
            json!({"allOf": [{"$ref": "#/components/schemas/A"}], "nullable": true, "description": "d"})
        );
        assert_eq!(
            schema(json!({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})),
            json!({"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": true})
        );
        assert_eq!(
            schema(json!({"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]})),
            json!({"type": "string", "format": "date", "nullable": true})
        );
    }

    #[test]
    fn const_is_a_one_value_enum_of_its_implied_type() {
        assert_eq!(
            schema(json!({"const": "card"})),
            json!({"type": "string", "enum": ["card"]})
        );
        assert_eq!(
            schema(json!({"const": 3, "type": "integer"})),
            json!({"type": "integer", "enum": [3]})
        );
        // Beside an enum that does not hold it, nothing is allowed.
        assert_eq!(
            schema(json!({"type": "string", "const": "a", "enum": ["b"]})),
            json!({"type": "string", "enum": []})
        );
    }

    #[test]
    fn numeric_exclusive_bounds_keep_the_stricter_bound() {
        assert_eq!(
            schema(
                json!({"type": "number", "exclusiveMinimum": 0, "maximum": 10, "exclusiveMaximum": 12})
            ),
            json!({"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10})
        );
    }

    #[test]
    fn a_ref_keeps_its_siblings() {
        assert_eq!(
            schema(json!({"$ref": "#/components/schemas/A", "description": "d", "readOnly": true})),
            json!({"allOf": [{"$ref": "#/components/schemas/A"}], "description": "d", "readOnly": true})
        );
        assert_eq!(
            schema(json!({"$ref": "#/components/schemas/A", "maxLength": 3})),
            json!({"allOf": [{"$ref": "#/components/schemas/A"}, {"maxLength": 3}]})
        );
    }

    #[test]
    fn anchors_and_ids_become_pointers() {
        let mut doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "components": {"schemas": {
            "A": {"$id": "https://example.com/a", "$defs": {"B": {"$anchor": "bee", "type": "string"}},
                  "properties": {"b": {"$ref": "#/$defs/B"}, "c": {"$ref": "#bee"}}},
            "D": {"$ref": "https://example.com/a"}
        }}});
        resolve_references(&mut doc);
        let s = &doc["components"]["schemas"];
        assert_eq!(
            s["A"]["properties"]["b"]["$ref"],
            "#/components/schemas/A/$defs/B"
        );
        assert_eq!(
            s["A"]["properties"]["c"]["$ref"],
            "#/components/schemas/A/$defs/B"
        );
        assert_eq!(s["D"]["$ref"], "#/components/schemas/A");
    }

    #[test]
    fn examples_content_and_boolean_schemas() {
        assert_eq!(
            schema(json!({"type": "string", "examples": ["a", "b"], "contentEncoding": "base64"})),
            json!({"type": "string", "example": "a", "contentEncoding": "base64", "format": "byte"})
        );
        assert_eq!(
            schema(json!({"type": "object", "properties": {"any": true, "none": false}})),
            json!({"type": "object", "properties": {"any": {}, "none": {"not": {}}}})
        );
    }

    #[test]
    fn another_dialect_is_refused_at_its_pointer() {
        let doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "jsonSchemaDialect": "http://json-schema.org/draft-07/schema#"});
        let e = normalise(doc, Family::V31).err().expect("refused");
        assert_eq!(e.pointer, "#/jsonSchemaDialect");
    }

    #[test]
    fn path_items_in_components_are_inlined_and_webhooks_set_apart() {
        let doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "paths": {"/a": {"$ref": "#/components/pathItems/A", "summary": "s"}},
            "webhooks": {"ping": {"$ref": "#/components/pathItems/A"}},
            "components": {"pathItems": {"A": {"get": {"responses": {"200": {"description": "ok"}}}}}}});
        let n = normalise(doc, Family::V31).expect("normalises");
        assert_eq!(n.document["paths"]["/a"]["summary"], "s");
        assert!(n.document["paths"]["/a"]["get"].is_object());
        assert!(n.document["components"].get("pathItems").is_none());
        assert_eq!(n.webhooks.len(), 1);
        assert!(n.webhooks[0].1["get"].is_object());
    }

    #[test]
    fn integer_bounds_written_as_numbers_are_the_integers_they_admit() {
        assert_eq!(
            schema(json!({"type": "integer", "minimum": 0.0, "maximum": 9.5})),
            json!({"type": "integer", "minimum": 0, "maximum": 9})
        );
        // > 0.5 is >= 1 among integers.
        assert_eq!(
            schema(json!({"type": "integer", "exclusiveMinimum": 0.5})),
            json!({"type": "integer", "minimum": 1})
        );
    }

    #[test]
    fn operations_without_responses_and_the_cookie_style_are_read() {
        let doc = json!({"openapi": "3.2.0", "info": {"title": "t", "version": "1"},
            "paths": {"/a": {"get": {"parameters": [{"name": "c", "in": "cookie", "style": "cookie",
                "schema": {"type": "string"}}]}}}});
        let n = normalise(doc, Family::V32).expect("normalises");
        let get = &n.document["paths"]["/a"]["get"];
        assert_eq!(get["responses"], json!({}));
        assert_eq!(get["parameters"][0]["style"], "form");
    }

    #[test]
    fn a_pointer_that_names_nothing_under_its_id_is_read_against_the_document() {
        let mut doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "components": {"schemas": {
                "A": {"$id": "a", "properties": {"b": {"$ref": "#/components/schemas/B"},
                                                  "c": {"$ref": "#/$defs/C"}},
                      "$defs": {"C": {"type": "string"}}},
                "B": {"type": "string"}}}});
        resolve_references(&mut doc);
        let a = &doc["components"]["schemas"]["A"]["properties"];
        assert_eq!(a["b"]["$ref"], "#/components/schemas/B");
        assert_eq!(a["c"]["$ref"], "#/components/schemas/A/$defs/C");
    }
}
