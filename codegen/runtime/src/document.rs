//! The served document: what the runtime knows of one document ([`ApiDocument`]), the tables
//! the generator emits for what poem-openapi cannot express ([`DocumentPatch`]), applying them
//! ([`patch_document`]), and serving the result.

use std::sync::Arc;

use poem::{Endpoint, Response};
use serde_json::Value;

use crate::{Keywords, SecuritySchemeDef, security};

/// What the runtime needs to know of one document; each generated crate implements it on its
/// `Document` type, which parameterises the body extractors.
pub trait ApiDocument: Send + Sync + 'static {
    /// The tables applied to the served document.
    const PATCH: &'static DocumentPatch;
    /// Header parameters some operation declares (checked to be text before routing).
    const DECLARED_HEADERS: &'static [&'static str];
    /// The document's security schemes.
    const SECURITY_SCHEMES: &'static [SecuritySchemeDef];
    /// The security requirements most operations have: alternatives in document order, each
    /// a list of (scheme name, scopes) that must all be presented; an empty alternative (`{}`)
    /// lets the operation run anonymously. No alternative at all: no authentication.
    const SECURITY: &'static [security::Requirement];
    /// The operations whose requirements are not [`Self::SECURITY`], by index in document order
    /// (as [`Auth`]'s `OP`), ascending: see [`Self::requirements`].
    ///
    /// [`Auth`]: crate::Auth
    const OPERATION_SECURITY: &'static [(usize, &'static [security::Requirement])];
    /// JSON Schema 2020-12 keywords `MetaSchema` cannot hold, by component name (OpenAPI 3.1+).
    const KEYWORDS: &'static [(&'static str, Keywords)] = &[];

    /// The security requirements of operation `op` (by index in document order).
    fn requirements(op: usize) -> &'static [security::Requirement] {
        match Self::OPERATION_SECURITY.binary_search_by_key(&op, |(at, _)| *at) {
            Ok(k) => Self::OPERATION_SECURITY[k].1,
            Err(_) => Self::SECURITY,
        }
    }

    /// Whether a component rejects unknown fields (`additionalProperties: false`).
    fn is_closed(name: &str) -> bool {
        Self::PATCH.closed_schemas.contains(&name)
    }
}

/// What the generator knows about the document beyond what poem-openapi can represent.
pub struct DocumentPatch {
    /// The source document's `openapi` version string.
    pub openapi: &'static str,
    /// Top-level `servers` (URLs) of the source.
    pub servers: &'static [&'static str],
    /// `components.securitySchemes` of the source as JSON (empty: none).
    pub security_schemes: &'static str,
    /// Top-level `security` of the source as JSON (empty: not written).
    pub global_security: &'static str,
    /// Operation-level `security` as written: (path, method, JSON). Operations not listed have
    /// none written.
    pub operation_security: &'static [(&'static str, &'static str, &'static str)],
    /// Array parameters with `explode: false` (parsed by [`Delimited`]): (path, method, `in`,
    /// name, `style` when it is not the location's default, else empty).
    ///
    /// [`Delimited`]: crate::Delimited
    pub unexploded_params: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Path parameters in `label` or `matrix` style (read by [`PathStyled`]): (path, method,
    /// `in`, name, style).
    ///
    /// [`PathStyled`]: crate::PathStyled
    pub path_styles: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Paths that name a variable twice, which poem serves renamed: (served, source).
    pub renamed_paths: &'static [(&'static str, &'static str)],
    /// Operation `callbacks` as written: (path, method, JSON).
    pub callbacks: &'static [(&'static str, &'static str, &'static str)],
    /// `content` maps the generated code cannot say itself (several or unusual media types):
    /// (path, method, `requestBody` or a status, JSON).
    pub content: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// Types with `additionalProperties: false` (what the validator refuses): components by
    /// name, inline types by the name they carry as `rust_typename`.
    pub closed_schemas: &'static [&'static str],
    /// Every `additionalProperties: true|false` of the source, by JSON pointer (poem-openapi's
    /// model can only say a schema; the served document mirrors the source's layout).
    pub additional_flags: &'static [(&'static str, bool)],
    /// Response links: (path, method, status, JSON of the `links` object).
    pub links: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// Binary response schemas (poem-openapi's `Binary` documents a fixed one): (path, method,
    /// status, media type, JSON of the schema).
    pub binary_schemas: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Parameter patterns checked by [`ParamPattern`]: (path, method, `in`, name, pattern).
    /// Integer and number parameters whose `format` is not what their Rust type documents
    /// (none, or one the generator reads as the base type): (path, method, `in`, name, the
    /// source's format, empty for none).
    ///
    /// [`ParamPattern`]: crate::ParamPattern
    pub param_formats: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    pub param_patterns: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Parameters written with `content` (read by [`JsonParam`]): (path, method, `in`, name,
    /// media type); poem-openapi serves a `schema`, which goes back under `content`.
    ///
    /// [`JsonParam`]: crate::JsonParam
    pub content_params: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Optional request bodies that are not JSON: (path, method). The handler takes them as
    /// required (poem-openapi's text and bytes payloads are), the document says what the
    /// source says.
    pub optional_bodies: &'static [(&'static str, &'static str)],
    /// Operations with a `description` and no `summary`: (path, method). poem-openapi serves
    /// the first paragraph of a doc comment as the summary; the document says what the source
    /// says.
    pub untitled_operations: &'static [(&'static str, &'static str)],
    /// Operations whose document declares no response: (path, method). Served with empty
    /// `responses`, as written (the handler's `default` variant is not documented).
    pub undeclared_responses: &'static [(&'static str, &'static str)],
    /// Parameter defaults the extracted type cannot hold (a date, a delimited array, a JSON
    /// parameter): (path, method, `in`, name, JSON of the default). Such a parameter is
    /// optional in the handler's input; the document still shows its default.
    pub param_defaults: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Parameter fields served as written (a `deepObject` map or free-form object, or one on a
    /// value the style does not apply to): (path, method, `in`, name, JSON object of fields;
    /// `null` removes the field).
    pub param_fields: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
}

impl DocumentPatch {
    /// The patch of a document served as written (OpenAPI 3.1 and 3.2), which nothing
    /// patches: only what the extractors read of it, its closed schemas.
    pub const fn served_as_written(
        openapi: &'static str,
        closed_schemas: &'static [&'static str],
    ) -> Self {
        DocumentPatch {
            openapi,
            servers: &[],
            security_schemes: "",
            global_security: "",
            operation_security: &[],
            unexploded_params: &[],
            path_styles: &[],
            renamed_paths: &[],
            callbacks: &[],
            content: &[],
            closed_schemas,
            additional_flags: &[],
            links: &[],
            binary_schemas: &[],
            param_formats: &[],
            param_patterns: &[],
            content_params: &[],
            optional_bodies: &[],
            untitled_operations: &[],
            undeclared_responses: &[],
            param_defaults: &[],
            param_fields: &[],
        }
    }
}

/// The JSON pointer of an operation in a document (`/paths/~1pets/get`).
fn operation_pointer(path: &str, method: &str) -> String {
    format!(
        "/paths/{}/{method}",
        path.replace('~', "~0").replace('/', "~1")
    )
}

/// The served parameter `name` in `location` of the operation `method` `path`, if any.
fn served_param<'d>(
    doc: &'d mut Value,
    path: &str,
    method: &str,
    location: &str,
    name: &str,
) -> Option<&'d mut Value> {
    let pointer = format!("{}/parameters", operation_pointer(path, method));
    doc.pointer_mut(&pointer)?
        .as_array_mut()?
        .iter_mut()
        .find(|p| p["name"] == *name && p["in"] == *location)
}

/// Applies `patch` to the document poem-openapi produced.
pub fn patch_document(doc: &mut Value, patch: &DocumentPatch) {
    // First, so that every other table finds each path under its source name.
    for (served, source) in patch.renamed_paths {
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut)
            && let Some(item) = paths.remove(*served)
        {
            paths.insert(source.to_string(), item);
        }
    }
    doc["openapi"] = Value::String(patch.openapi.to_string());
    if !patch.servers.is_empty() {
        doc["servers"] = Value::Array(
            patch
                .servers
                .iter()
                .map(|u| serde_json::json!({ "url": u }))
                .collect(),
        );
    }
    // Security is served as written: poem-openapi's model cannot say alternatives, optional
    // (`{}`) requirements or scopes of every scheme kind, and [`Auth`] enforces it instead.
    if let Ok(schemes) = serde_json::from_str::<Value>(patch.security_schemes) {
        doc["components"]["securitySchemes"] = schemes;
    }
    if let Ok(security) = serde_json::from_str::<Value>(patch.global_security) {
        doc["security"] = security;
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            for (method, op) in item.as_object_mut().into_iter().flatten() {
                let Some(op) = op.as_object_mut() else {
                    continue;
                };
                let written = patch
                    .operation_security
                    .iter()
                    .find(|(p, m, _)| p == path && m == method)
                    .and_then(|(_, _, json)| serde_json::from_str::<Value>(json).ok());
                match written {
                    Some(security) => op.insert("security".into(), security),
                    None => op.remove("security"),
                };
            }
        }
    }
    for (path, method, place, json) in patch.content {
        let op = operation_pointer(path, method);
        let pointer = if *place == "requestBody" {
            format!("{op}/requestBody")
        } else {
            format!("{op}/responses/{place}")
        };
        if let (Some(Value::Object(target)), Ok(content)) = (
            doc.pointer_mut(&pointer),
            serde_json::from_str::<Value>(json),
        ) {
            target.insert("content".into(), content);
        }
    }
    for (path, method, json) in patch.callbacks {
        let pointer = operation_pointer(path, method);
        if let (Some(Value::Object(op)), Ok(callbacks)) = (
            doc.pointer_mut(&pointer),
            serde_json::from_str::<Value>(json),
        ) {
            op.insert("callbacks".into(), callbacks);
        }
    }
    for (pointer, flag) in patch.additional_flags {
        if let Some(Value::Object(schema)) = doc.pointer_mut(pointer.trim_start_matches('#')) {
            schema
                .entry("additionalProperties")
                .or_insert(Value::Bool(*flag));
        }
    }
    for (path, method, status, media, schema) in patch.binary_schemas {
        let pointer = format!(
            "{}/responses/{}/content/{}/schema",
            operation_pointer(path, method),
            status,
            media.replace('~', "~0").replace('/', "~1")
        );
        if let (Some(slot), Ok(schema)) = (
            doc.pointer_mut(&pointer),
            serde_json::from_str::<Value>(schema),
        ) {
            *slot = schema;
        }
    }
    for (path, method, location, name, style) in patch.unexploded_params {
        if let Some(param) = served_param(doc, path, method, location, name) {
            param["explode"] = Value::Bool(false);
            // `str::is_empty` by name: on a `&&str`, `.is_empty()` finds poem-openapi's
            // `Type::is_empty` of `&str` first, which is always false.
            if !str::is_empty(style) {
                param["style"] = Value::String(style.to_string());
            }
        }
    }
    for (path, method, location, name, style) in patch.path_styles {
        if let Some(param) = served_param(doc, path, method, location, name) {
            param["style"] = Value::String(style.to_string());
        }
    }
    for (path, method, location, name, media) in patch.content_params {
        if let Some(map) =
            served_param(doc, path, method, location, name).and_then(Value::as_object_mut)
            && let Some(schema) = map.remove("schema")
        {
            map.remove("explode");
            map.remove("style");
            map.insert(
                "content".into(),
                serde_json::json!({ *media: { "schema": schema } }),
            );
        }
    }
    for (path, method, location, name, pattern) in patch.param_patterns {
        if let Some(Value::Object(schema)) =
            served_param(doc, path, method, location, name).and_then(|p| p.get_mut("schema"))
        {
            schema.insert("pattern".into(), Value::String(pattern.to_string()));
        }
    }
    for (path, method, location, name, format) in patch.param_formats {
        if let Some(Value::Object(schema)) =
            served_param(doc, path, method, location, name).and_then(|p| p.get_mut("schema"))
        {
            if str::is_empty(format) {
                schema.remove("format");
            } else {
                schema.insert("format".into(), Value::String(format.to_string()));
            }
        }
    }
    for (path, method, location, name, default) in patch.param_defaults {
        if let (Some(Value::Object(schema)), Ok(default)) = (
            served_param(doc, path, method, location, name).and_then(|p| p.get_mut("schema")),
            serde_json::from_str::<Value>(default),
        ) {
            schema.insert("default".into(), default);
        }
    }
    for (path, method, location, name, fields) in patch.param_fields {
        if let (Some(Value::Object(param)), Ok(Value::Object(fields))) = (
            served_param(doc, path, method, location, name),
            serde_json::from_str::<Value>(fields),
        ) {
            for (key, value) in fields {
                if value.is_null() {
                    param.remove(&key);
                } else {
                    param.insert(key, value);
                }
            }
        }
    }
    for (path, method) in patch.undeclared_responses {
        if let Some(Value::Object(op)) = doc.pointer_mut(&operation_pointer(path, method)) {
            op.insert("responses".into(), Value::Object(serde_json::Map::new()));
        }
    }
    for (path, method) in patch.untitled_operations {
        let pointer = operation_pointer(path, method);
        if let Some(Value::Object(op)) = doc.pointer_mut(&pointer)
            && let Some(Value::String(first)) = op.remove("summary")
        {
            let text = match op.get("description").and_then(Value::as_str) {
                Some(rest) => format!("{first}\n\n{rest}"),
                None => first,
            };
            op.insert("description".into(), Value::String(text));
        }
    }
    for (path, method) in patch.optional_bodies {
        let pointer = format!("{}/requestBody", operation_pointer(path, method));
        if let Some(Value::Object(body)) = doc.pointer_mut(&pointer) {
            body.remove("required");
        }
    }
    for (path, method, status, links) in patch.links {
        let pointer = format!("{}/responses/{}", operation_pointer(path, method), status);
        if let Some(Value::Object(resp)) = doc.pointer_mut(&pointer)
            && let Ok(links) = serde_json::from_str::<Value>(links)
        {
            resp.insert("links".into(), links);
        }
    }
}

/// Serves a fixed body with a content type (the JSON and YAML documents).
pub fn static_endpoint(
    body: String,
    content_type: &'static str,
) -> impl Endpoint<Output = Response> {
    let body = Arc::new(body);
    poem::endpoint::make_sync(move |_| {
        Response::builder()
            .content_type(content_type)
            .body(body.as_str().to_string())
    })
}

/// Interactive docs (poem-openapi's Swagger UI, `ui`) that show `source`, the document as
/// written, rather than poem-openapi's OpenAPI 3.0 reading of it (`poem_spec`, which `html`
/// embeds). The bundled Swagger UI reads OpenAPI 3.1, not 3.2: a 3.2 document is shown labelled
/// 3.1.1 (the page only; `/openapi.json` serves it as written), so what 3.1 has is rendered and
/// what 3.2 adds (`query`, `additionalOperations`) is not listed.
pub fn source_docs(
    html: String,
    poem_spec: &str,
    source: &Value,
    ui: impl Endpoint + 'static,
) -> poem::Route {
    let mut shown = source.clone();
    if shown["openapi"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.2."))
    {
        shown["openapi"] = Value::String("3.1.1".into());
    }
    // The page embeds the document as a JavaScript expression: JSON is one.
    let html = match serde_json::to_string(&shown) {
        Ok(json) if html.contains(poem_spec) => html.replacen(poem_spec, &json, 1),
        _ => html,
    };
    poem::Route::new()
        .at(
            "/",
            poem::endpoint::make_sync(move |_| poem::web::Html(html.clone())),
        )
        // The OAuth receiver page of the same UI.
        .at("/oauth-receiver.html", ui)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Doc;
    static PATCH: DocumentPatch = DocumentPatch::served_as_written("3.1.1", &[]);
    impl ApiDocument for Doc {
        const PATCH: &'static DocumentPatch = &PATCH;
        const DECLARED_HEADERS: &'static [&'static str] = &[];
        const SECURITY_SCHEMES: &'static [SecuritySchemeDef] = &[];
        const SECURITY: &'static [security::Requirement] = &[&[("Basic", &[])]];
        const OPERATION_SECURITY: &'static [(usize, &'static [security::Requirement])] =
            &[(1, &[]), (3, &[&[("OAuth2", &["read"])], &[]])];
    }

    #[test]
    fn an_operation_has_its_own_requirements_or_the_common_ones() {
        assert_eq!(Doc::requirements(0), Doc::SECURITY);
        assert!(Doc::requirements(1).is_empty());
        assert_eq!(Doc::requirements(2), Doc::SECURITY);
        assert_eq!(
            Doc::requirements(3),
            &[&[("OAuth2", &["read"][..])][..], &[]]
        );
        assert_eq!(Doc::requirements(4), Doc::SECURITY);
    }
}
