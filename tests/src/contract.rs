//! Checks real responses against `spec/openapi.yaml`, with a JSON Schema validator driven by the
//! document itself (no hand-copied schemas).
//!
//! OpenAPI 3.1 schemas are JSON Schema 2020-12 and are compiled as written. OpenAPI 3.0 schemas
//! are a dialect of JSON Schema draft 4/5; [`Contract::load`] converts the whole document once
//! to draft 7 (`nullable` → a `null` alternative, boolean
//! `exclusiveMinimum`/`exclusiveMaximum` → numeric bounds), then compiles one validator per
//! (operation, status, media type). A response whose status the operation does not declare, whose
//! content type differs, or whose body does not validate is a [`Violation`] naming the
//! operation, status and JSON pointer.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// One failure of a response to match the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub operation: String,
    pub status: u16,
    pub pointer: String,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} → {}: {} at `{}`",
            self.operation, self.status, self.message, self.pointer
        )
    }
}

struct Route {
    method: String,
    segments: Vec<String>,
    operation_id: String,
    /// status ("200", "default") → media type → validator (None: declared without content)
    responses: BTreeMap<String, Option<(String, Option<jsonschema::Validator>)>>,
}

/// The document's operations with compiled response validators.
pub struct Contract {
    routes: Vec<Route>,
}

impl Contract {
    pub fn load(spec_text: &str) -> Contract {
        let doc: Value = serde_yaml::from_str(spec_text).expect("a YAML or JSON document");
        // OpenAPI 3.1 schemas are JSON Schema 2020-12 as written; 3.0's are converted.
        let draft = match doc["openapi"].as_str() {
            Some(v) if v.starts_with("3.0.") => jsonschema::Draft::Draft7,
            _ => jsonschema::Draft::Draft202012,
        };
        let mut converted = doc.clone();
        to_json_schema(&mut converted);
        let components = converted.get("components").cloned().unwrap_or(Value::Null);
        let mut routes = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                let Some(operation_id) = op.get("operationId").and_then(Value::as_str) else {
                    continue;
                };
                let mut responses = BTreeMap::new();
                let cpath = format!(
                    "/paths/{}/{method}/responses",
                    path.replace('~', "~0").replace('/', "~1")
                );
                for (status, resp) in op["responses"].as_object().into_iter().flatten() {
                    let resp = resolve(&doc, resp);
                    let content = resp.get("content").and_then(Value::as_object);
                    let entry = content.and_then(|c| c.iter().next()).map(|(media, m)| {
                        let pointer = format!("{cpath}/{status}/content/{}/schema", media.replace('/', "~1"));
                        let validator = m.get("schema").map(|_| {
                            // Inline in the path, or behind a `components/responses` reference.
                            let schema = converted.pointer(&pointer).cloned().unwrap_or(Value::Null);
                            let schema = if schema.is_null() {
                                let resolved = resolve(&doc, &op["responses"][status]);
                                let mut s = resolved["content"][media]["schema"].clone();
                                to_json_schema(&mut s);
                                s
                            } else {
                                schema
                            };
                            let root = json!({"allOf": [schema], "components": components});
                            jsonschema::options()
                                .with_draft(draft)
                                .should_validate_formats(true)
                                .build(&root)
                                .unwrap_or_else(|e| panic!("{operation_id} {status}: the document's schema does not compile: {e}"))
                        });
                        (media.clone(), validator)
                    });
                    responses.insert(status.clone(), entry);
                }
                routes.push(Route {
                    method: method.to_ascii_uppercase(),
                    segments: path.split('/').map(str::to_owned).collect(),
                    operation_id: operation_id.to_owned(),
                    responses,
                });
            }
        }
        // Literal segments win over parameters (`/entities/person` before `/entities/{id}`).
        routes.sort_by_key(|r| {
            r.segments
                .iter()
                .map(|s| s.starts_with('{'))
                .collect::<Vec<_>>()
        });
        Contract { routes }
    }

    /// The operation id serving `method path` (path without query), if any.
    pub fn operation(&self, method: &str, path: &str) -> Option<&str> {
        self.route(method, path).map(|r| r.operation_id.as_str())
    }

    fn route(&self, method: &str, path: &str) -> Option<&Route> {
        let segs: Vec<&str> = path
            .split('?')
            .next()
            .unwrap_or_default()
            .split('/')
            .collect();
        self.routes.iter().find(|r| {
            r.method.eq_ignore_ascii_case(method)
                && r.segments.len() == segs.len()
                && r.segments
                    .iter()
                    .zip(&segs)
                    .all(|(a, b)| a.starts_with('{') || a == b)
        })
    }

    /// Every way the response differs from the document (empty: it conforms).
    pub fn check(
        &self,
        method: &str,
        path: &str,
        status: u16,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Vec<Violation> {
        let Some(route) = self.route(method, path) else {
            return vec![Violation {
                operation: format!("{method} {path}"),
                status,
                pointer: String::new(),
                message: "no operation of the document serves this request".into(),
            }];
        };
        let v = |pointer: &str, message: String| Violation {
            operation: route.operation_id.clone(),
            status,
            pointer: pointer.to_owned(),
            message,
        };
        let declared = route
            .responses
            .get(&status.to_string())
            .or_else(|| route.responses.get("default"));
        let Some(declared) = declared else {
            return vec![v(
                "",
                format!("status {status} is not declared for this operation"),
            )];
        };
        let media = content_type.map(|c| {
            c.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        });
        match declared {
            None => {
                if !body.is_empty() {
                    return vec![v(
                        "",
                        "the document declares no body, but one was sent".into(),
                    )];
                }
                Vec::new()
            }
            Some((expected, validator)) => {
                if media.as_deref() != Some(expected.as_str()) {
                    return vec![v(
                        "",
                        format!("content type {media:?}, the document says {expected}"),
                    )];
                }
                let Some(validator) = validator else {
                    return Vec::new();
                };
                if expected != "application/json" {
                    return Vec::new();
                }
                let instance: Value = match serde_json::from_slice(body) {
                    Ok(i) => i,
                    Err(e) => return vec![v("", format!("body is not JSON: {e}"))],
                };
                validator
                    .iter_errors(&instance)
                    .map(|e| v(&e.instance_path().to_string(), e.to_string()))
                    .collect()
            }
        }
    }

    /// Every (operation id) of the document.
    pub fn operation_ids(&self) -> Vec<String> {
        self.routes.iter().map(|r| r.operation_id.clone()).collect()
    }
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or(v),
        None => v,
    }
}

/// Rewrites OpenAPI 3.0 schema keywords into draft 7, everywhere in `v`.
fn to_json_schema(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for child in m.values_mut() {
                to_json_schema(child);
            }
            for (flag, bound, keyword) in [
                ("exclusiveMinimum", "minimum", "exclusiveMinimum"),
                ("exclusiveMaximum", "maximum", "exclusiveMaximum"),
            ] {
                if m.get(flag) == Some(&Value::Bool(true)) {
                    if let Some(b) = m.remove(bound) {
                        m.insert(keyword.to_owned(), b);
                    }
                } else if m.get(flag) == Some(&Value::Bool(false)) {
                    m.remove(flag);
                }
            }
            if m.remove("nullable") == Some(Value::Bool(true)) {
                if let Some(Value::String(t)) = m.get("type").cloned() {
                    m.insert("type".into(), json!([t, "null"]));
                    if let Some(Value::Array(e)) = m.get_mut("enum") {
                        e.push(Value::Null);
                    }
                } else {
                    let inner = Value::Object(std::mem::take(m));
                    let mut wrapped = Map::new();
                    wrapped.insert("anyOf".into(), json!([inner, {"type": "null"}]));
                    *m = wrapped;
                }
            }
            // `format: binary` etc. are annotations here; `discriminator` is OpenAPI-only.
            m.remove("discriminator");
        }
        Value::Array(items) => {
            for child in items {
                to_json_schema(child);
            }
        }
        _ => {}
    }
}
