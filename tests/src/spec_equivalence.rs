//! Semantic comparison of an OpenAPI source document with the document a service serves.
//!
//! Both sides are brought to one canonical form, then compared key by key; the report names the
//! JSON pointer of every difference. Canonicalisation does only what is *meaning-preserving*:
//!
//! - references to `components/parameters`, `components/responses` and
//!   `components/requestBodies` are inlined (poem-openapi always inlines them);
//! - top-level `security` is distributed to the operations (effective security per operation);
//! - components that no operation reaches are dropped (poem-openapi drops them);
//! - tags are compared as a set;
//! - documentation whitespace: each line trimmed (doc comments lose indentation), and a CR or
//!   CRLF is a line break like LF (as in CommonMark; a doc comment cannot hold a lone CR).
//!
//! and removes only poem-openapi's noise: the `openapi` patch version (3.0.x), `title` on object
//! schemas, `; charset=utf-8` on media types, `deprecated: false`, a parameter's `style` and
//! `explode` when they are the defaults, and `required: false` on parameters. Anything else
//! that differs is drift.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Loads a YAML or JSON document.
pub fn load(text: &str) -> Value {
    serde_yaml::from_str(text).expect("a YAML or JSON document")
}

/// Differences between the canonical forms of `source` and `served`, as `pointer: detail`.
pub fn differences(source: &Value, served: &Value) -> Vec<String> {
    let a = canonical(source);
    let b = canonical(served);
    let mut out = Vec::new();
    diff(&a, &b, "#", &mut out);
    out
}

fn canonical(doc: &Value) -> Value {
    let mut doc = doc.clone();
    inline_component_refs(&mut doc);
    let global_security = doc.get("security").cloned();
    let mut out = Map::new();
    let version = doc["openapi"].as_str().unwrap_or_default();
    out.insert(
        "openapi".into(),
        Value::String(version.split('.').take(2).collect::<Vec<_>>().join(".")),
    );
    let mut info = doc["info"].clone();
    if let Some(d) = info.get_mut("description") {
        *d = text(d);
    }
    // Contact, license and terms are not part of the served contract poem-openapi can carry.
    let info = serde_json::json!({
        "title": info["title"],
        "version": info["version"],
        "description": info.get("description").cloned().unwrap_or(Value::Null),
    });
    out.insert("info".into(), info);
    let mut paths = Map::new();
    if let Some(p) = doc["paths"].as_object() {
        for (path, item) in p {
            let mut ops = Map::new();
            for (method, op) in item.as_object().into_iter().flatten() {
                if !matches!(
                    method.as_str(),
                    "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace"
                ) {
                    continue;
                }
                ops.insert(
                    method.clone(),
                    operation(
                        op,
                        &global_security,
                        item.get("parameters"),
                        &doc["components"]["schemas"],
                    ),
                );
            }
            paths.insert(path.clone(), Value::Object(ops));
        }
    }
    out.insert("paths".into(), Value::Object(paths.clone()));
    let mut reachable = BTreeSet::new();
    let schemas = doc
        .pointer("/components/schemas")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    collect_refs(&Value::Object(paths), &schemas, &mut reachable);
    let mut comps = Map::new();
    for name in &reachable {
        if let Some(s) = schemas.get(name) {
            comps.insert(name.clone(), schema(s));
        }
    }
    out.insert("schemas".into(), Value::Object(comps));
    let mut schemes = doc
        .pointer("/components/securitySchemes")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    if let Some(m) = schemes.as_object_mut() {
        for s in m.values_mut() {
            if let Some(d) = s.get_mut("description") {
                *d = text(d);
            }
        }
    }
    out.insert("securitySchemes".into(), schemes);
    let tags: Vec<Value> = {
        let mut t: Vec<Value> = doc["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| serde_json::json!({"name": t["name"], "description": t.get("description").map(text).unwrap_or(Value::Null)}))
            .collect();
        t.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        t
    };
    out.insert("tags".into(), Value::Array(tags));
    Value::Object(out)
}

fn text(v: &Value) -> Value {
    match v.as_str() {
        Some(s) => Value::String(
            s.replace("\r\n", "\n")
                .replace('\r', "\n")
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string(),
        ),
        None => v.clone(),
    }
}

fn inline_component_refs(doc: &mut Value) {
    let whole = doc.clone();
    let components = doc.get("components").cloned().unwrap_or(Value::Null);
    fn walk(v: &mut Value, components: &Value, whole: &Value, depth: usize) {
        if depth > 32 {
            return;
        }
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    // A schema named by a pointer elsewhere than a component is served inline.
                    let component = r
                        .strip_prefix("#/components/schemas/")
                        .is_some_and(|n| !n.contains('/'));
                    if !component
                        && let Some(target) = r
                            .strip_prefix('#')
                            .and_then(|p| whole.pointer(&p.replace("%7B", "{").replace("%7D", "}")))
                            .filter(|t| t.is_object())
                    {
                        *v = target.clone();
                        walk(v, components, whole, depth + 1);
                        return;
                    }
                    for kind in ["parameters", "responses", "requestBodies", "headers"] {
                        let prefix = format!("#/components/{kind}/");
                        if let Some(name) = r.strip_prefix(&prefix)
                            && let Some(target) = components.get(kind).and_then(|c| c.get(name))
                        {
                            *v = target.clone();
                            walk(v, components, whole, depth + 1);
                            return;
                        }
                    }
                }
                for child in m.values_mut() {
                    walk(child, components, whole, depth + 1);
                }
            }
            Value::Array(items) => {
                for child in items {
                    walk(child, components, whole, depth + 1);
                }
            }
            _ => {}
        }
    }
    if let Some(paths) = doc.get_mut("paths") {
        walk(paths, &components, &whole, 0);
    }
    if let Some(schemas) = doc.pointer_mut("/components/schemas") {
        walk(schemas, &components, &whole, 0);
    }
}

fn operation(
    op: &Value,
    global_security: &Option<Value>,
    path_params: Option<&Value>,
    schemas: &Value,
) -> Value {
    let mut out = Map::new();
    for key in ["operationId", "deprecated"] {
        if let Some(v) = op.get(key) {
            if key == "deprecated" && v == &Value::Bool(false) {
                continue;
            }
            out.insert(key.into(), v.clone());
        }
    }
    for key in ["summary", "description"] {
        if let Some(v) = op.get(key) {
            out.insert(key.into(), text(v));
        }
    }
    let tags: BTreeSet<String> = op["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(String::from))
        .collect();
    out.insert(
        "tags".into(),
        serde_json::to_value(tags).unwrap_or_default(),
    );
    let mut params = Map::new();
    let all = path_params
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(op["parameters"].as_array().into_iter().flatten());
    for p in all {
        let key = format!(
            "{} {}",
            p["in"].as_str().unwrap_or_default(),
            p["name"].as_str().unwrap_or_default()
        );
        let mut q = Map::new();
        q.insert(
            "required".into(),
            Value::Bool(p.get("required").and_then(Value::as_bool).unwrap_or(false)),
        );
        if let Some(d) = p.get("description") {
            q.insert("description".into(), text(d));
        }
        if let Some(Value::Bool(true)) = p.get("deprecated") {
            q.insert("deprecated".into(), Value::Bool(true));
        }
        if let Some(c) = p.get("content") {
            q.insert("content".into(), content(c));
        } else {
            // How the value is written: the style (defaults `form` in the query and cookies,
            // `simple` in the path and headers) and explode (defaults true for `form` only).
            let location = p["in"].as_str().unwrap_or_default();
            let default_style = if matches!(location, "query" | "cookie") {
                "form"
            } else {
                "simple"
            };
            let style = p
                .get("style")
                .and_then(Value::as_str)
                .unwrap_or(default_style);
            let explode = p
                .get("explode")
                .and_then(Value::as_bool)
                .unwrap_or(style == "form");
            q.insert("style".into(), Value::String(style.into()));
            // Explode changes only how arrays and objects are written.
            if takes_explode(schemas, &p["schema"]) {
                q.insert("explode".into(), Value::Bool(explode));
            }
            q.insert("schema".into(), schema(&p["schema"]));
        }
        params.insert(key, Value::Object(q));
    }
    out.insert("parameters".into(), Value::Object(params));
    if let Some(body) = op.get("requestBody") {
        let mut b = Map::new();
        b.insert(
            "required".into(),
            Value::Bool(
                body.get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            ),
        );
        if let Some(d) = body.get("description") {
            b.insert("description".into(), text(d));
        }
        b.insert("content".into(), content(&body["content"]));
        out.insert("requestBody".into(), Value::Object(b));
    }
    let mut responses = Map::new();
    for (status, r) in op["responses"].as_object().into_iter().flatten() {
        let mut x = Map::new();
        x.insert("description".into(), text(&r["description"]));
        if let Some(c) = r.get("content") {
            x.insert("content".into(), content(c));
        }
        if let Some(h) = r.get("headers").and_then(Value::as_object) {
            let mut hs = Map::new();
            for (name, header) in h {
                hs.insert(
                    name.to_ascii_lowercase(),
                    serde_json::json!({
                        "required": header.get("required").and_then(Value::as_bool).unwrap_or(false),
                        "description": header.get("description").map(text).unwrap_or(Value::Null),
                    }),
                );
            }
            if !hs.is_empty() {
                x.insert("headers".into(), Value::Object(hs));
            }
        }
        if let Some(l) = r.get("links") {
            x.insert("links".into(), l.clone());
        }
        responses.insert(status.clone(), Value::Object(x));
    }
    out.insert("responses".into(), Value::Object(responses));
    let security = op
        .get("security")
        .cloned()
        .or_else(|| global_security.clone())
        .unwrap_or(Value::Array(vec![]));
    out.insert("security".into(), security);
    Value::Object(out)
}

/// Whether a parameter schema is an array or an object (through component `$ref`s), the
/// values whose writing `explode` changes.
fn takes_explode(schemas: &Value, s: &Value) -> bool {
    let mut s = s;
    for _ in 0..8 {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => match r.strip_prefix("#/components/schemas/") {
                Some(name) => s = &schemas[name],
                None => return true,
            },
            None => break,
        }
    }
    matches!(
        s.get("type").and_then(Value::as_str),
        Some("array" | "object")
    ) || [
        "properties",
        "allOf",
        "oneOf",
        "anyOf",
        "additionalProperties",
    ]
    .iter()
    .any(|k| s.get(k).is_some())
}

fn content(c: &Value) -> Value {
    let mut out = Map::new();
    for (ct, media) in c.as_object().into_iter().flatten() {
        let ct = ct.split(';').next().unwrap_or_default().trim().to_string();
        out.insert(ct, schema(media.get("schema").unwrap_or(&Value::Null)));
    }
    Value::Object(out)
}

/// Canonical schema: drops `title`, trims descriptions, normalises numbers to f64, writes
/// discriminator mappings as references and leaves out an empty `items`.
fn schema(s: &Value) -> Value {
    match s {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                match k.as_str() {
                    "title" => {}
                    "description" => {
                        out.insert(k.clone(), text(v));
                    }
                    "properties" => {
                        let mut props = Map::new();
                        for (name, p) in v.as_object().into_iter().flatten() {
                            props.insert(name.clone(), schema(p));
                        }
                        out.insert(k.clone(), Value::Object(props));
                    }
                    "required" => {
                        let set: BTreeSet<String> = v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect();
                        if !set.is_empty() {
                            out.insert(k.clone(), serde_json::to_value(set).unwrap_or_default());
                        }
                    }
                    "minimum" | "maximum" | "multipleOf" => {
                        out.insert(k.clone(), serde_json::json!(v.as_f64()));
                    }
                    "nullable" | "deprecated" | "exclusiveMinimum" | "exclusiveMaximum"
                        if v == &Value::Bool(false) => {}
                    "discriminator" => {
                        // A mapping value is a schema name or a reference to it: the same.
                        let mut d = v.clone();
                        if let Some(Value::Object(mapping)) = d.get_mut("mapping") {
                            for target in mapping.values_mut() {
                                if let Some(name) = target.as_str().filter(|t| !t.contains('/')) {
                                    *target = format!("#/components/schemas/{name}").into();
                                }
                            }
                        }
                        out.insert(k.clone(), d);
                    }
                    // `items: {}` constrains nothing, as no `items` does.
                    "items" if v.as_object().is_some_and(Map::is_empty) => {}
                    _ => {
                        out.insert(k.clone(), schema_children(v));
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn schema_children(v: &Value) -> Value {
    match v {
        Value::Object(_) => schema(v),
        Value::Array(items) => Value::Array(items.iter().map(schema_children).collect()),
        other => other.clone(),
    }
}

fn collect_refs(v: &Value, schemas: &Value, seen: &mut BTreeSet<String>) {
    let visit = |r: &str, seen: &mut BTreeSet<String>| {
        if let Some(name) = r.strip_prefix("#/components/schemas/")
            && seen.insert(name.to_string())
            && let Some(s) = schemas.get(name)
        {
            collect_refs(s, schemas, seen);
        }
    };
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                visit(r, seen);
            }
            if let Some(Value::Object(mapping)) = m.get("mapping") {
                for r in mapping.values().filter_map(Value::as_str) {
                    visit(r, seen);
                }
            }
            for child in m.values() {
                collect_refs(child, schemas, seen);
            }
        }
        Value::Array(items) => {
            for child in items {
                collect_refs(child, schemas, seen);
            }
        }
        _ => {}
    }
}

fn diff(a: &Value, b: &Value, pointer: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => diff(l, r, &p, out),
                    (Some(l), None) => {
                        out.push(format!("{p}: in the source ({}) but not served", short(l)))
                    }
                    (None, Some(r)) => {
                        out.push(format!("{p}: served ({}) but not in the source", short(r)))
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                diff(l, r, &format!("{pointer}/{i}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!(
            "{pointer}: source {} ≠ served {}",
            short(a),
            short(b)
        )),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 160 {
        format!(
            "{}…",
            &s[..s
                .char_indices()
                .take(160)
                .last()
                .map(|(i, _)| i)
                .unwrap_or(0)]
        )
    } else {
        s
    }
}
