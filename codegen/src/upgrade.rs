//! OpenAPI 3.0 → 3.1: the same document written as 3.1 says it, with nothing else changed.
//!
//! The inverse of what the parser's `oas31` normalisation reads, keyword for keyword:
//! `nullable: true` beside a `type` is that type and `"null"` (`null` added to an `enum`
//! beside it, since 3.0 admits `null` there), beside no `type` (`allOf: [$ref]`) an `anyOf` of
//! the schema and `{type: "null"}`; a schema's `example` is `examples: [example]`; a boolean
//! `exclusiveMinimum`/`exclusiveMaximum` is the bound itself. `codegen diff` of a document and
//! its upgrade reports no change (`tests/upgrade.rs`), and `codegen upgrade` writes it.

use serde_json::{Map, Value, json};

/// Rewrites a 3.0 document (as a JSON value) in place as OpenAPI 3.1.1.
pub fn to_openapi_31(doc: &mut Value) {
    if let Some(map) = doc.as_object_mut() {
        map.insert("openapi".into(), Value::String("3.1.1".into()));
    }
    visit(doc, "");
}

/// Walks the document to its schemas: every `schema` (of parameters, media types, headers)
/// and every component schema.
fn visit(v: &mut Value, parent_key: &str) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k.starts_with("x-") || matches!(k.as_str(), "example" | "examples") {
                    continue;
                }
                if k == "schema" {
                    schema(child);
                } else if parent_key == "components" && k == "schemas" {
                    if let Value::Object(schemas) = child {
                        schemas.values_mut().for_each(schema);
                    }
                } else {
                    visit(child, k);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|c| visit(c, parent_key)),
        _ => {}
    }
}

/// One schema and every schema inside it.
fn schema(v: &mut Value) {
    let Value::Object(map) = v else { return };
    for (k, child) in map.iter_mut() {
        match k.as_str() {
            "items" | "additionalProperties" | "not" => schema(child),
            "allOf" | "anyOf" | "oneOf" => {
                if let Value::Array(members) = child {
                    members.iter_mut().for_each(schema);
                }
            }
            "properties" => {
                if let Value::Object(props) = child {
                    props.values_mut().for_each(schema);
                }
            }
            _ => {}
        }
    }
    if let Some(example) = map.remove("example") {
        map.insert("examples".into(), Value::Array(vec![example]));
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match map.get(flag) {
            Some(Value::Bool(true)) => {
                if let Some(b) = map.remove(bound) {
                    map.insert(flag.into(), b);
                } else {
                    map.remove(flag);
                }
            }
            Some(Value::Bool(false)) => {
                map.remove(flag);
            }
            _ => {}
        }
    }
    if map.remove("nullable") == Some(Value::Bool(true)) {
        nullable(map);
    }
}

/// A 3.0 `nullable: true` schema written in 3.1.
fn nullable(map: &mut Map<String, Value>) {
    if let Some(Value::String(t)) = map.get("type").cloned() {
        map.insert("type".into(), json!([t, "null"]));
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return;
    }
    // No type (`allOf: [$ref]`, a composition): the schema or null, its annotations kept.
    let annotations = [
        "description",
        "title",
        "default",
        "readOnly",
        "writeOnly",
        "deprecated",
    ];
    let mut inner = Map::new();
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        if !annotations.contains(&k.as_str()) && !k.starts_with("x-") {
            inner.insert(k.clone(), map.remove(&k).expect("listed"));
        }
    }
    let inner = match inner.get("allOf") {
        Some(Value::Array(m)) if inner.len() == 1 && m.len() == 1 => m[0].clone(),
        _ => Value::Object(inner),
    };
    map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_3_0_form_is_written_as_3_1_says_it() {
        let mut doc = json!({"openapi": "3.0.3", "components": {"schemas": {"S": {
            "type": "object",
            "properties": {
                "a": {"type": "string", "nullable": true, "example": "x"},
                "b": {"allOf": [{"$ref": "#/components/schemas/T"}], "nullable": true, "description": "d"},
                "c": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
                "d": {"type": "string", "enum": ["p", "q"], "nullable": true}
            }
        }}}});
        to_openapi_31(&mut doc);
        assert_eq!(doc["openapi"], "3.1.1");
        let p = &doc["components"]["schemas"]["S"]["properties"];
        assert_eq!(
            p["a"],
            json!({"type": ["string", "null"], "examples": ["x"]})
        );
        assert_eq!(
            p["b"],
            json!({"description": "d", "anyOf": [{"$ref": "#/components/schemas/T"}, {"type": "null"}]})
        );
        assert_eq!(p["c"], json!({"type": "integer", "exclusiveMinimum": 0}));
        assert_eq!(
            p["d"],
            json!({"type": ["string", "null"], "enum": ["p", "q", null]})
        );
    }
}
