//! Every failing parameter in one answer.
//!
//! poem-openapi reads an operation's parameters one after the other and stops at the first it
//! refuses. On that path only (a request that succeeds pays nothing), the error renderer asks
//! [`ParameterIndex`] to check every parameter the operation declares, read from the served
//! document, and names each that fails, in the body validator's words. What it does not check
//! (a `content` parameter, a `deepObject`, an object, a `label` or `matrix` path parameter) is
//! left to poem-openapi's own refusal, which is kept.

use std::collections::BTreeMap;

use poem::Request;
use serde_json::Value;

/// The parameters of each operation of a document, indexed once when the app is built.
#[derive(Debug, Default)]
pub struct ParameterIndex {
    operations: Vec<Operation>,
}

#[derive(Debug)]
struct Operation {
    /// Upper case.
    method: String,
    /// `Some(name)` for a segment that is one whole `{name}`, `None` for a literal (in
    /// `literals`, same position).
    vars: Vec<Option<String>>,
    literals: Vec<String>,
    params: Vec<Param>,
}

#[derive(Debug)]
struct Param {
    name: String,
    location: String,
    required: bool,
    /// An array's delimiter when it is one value (`None`: exploded, repeated keys).
    delimiter: Option<char>,
    schema: Value,
}

impl ParameterIndex {
    /// The index of `document` (OpenAPI 3.0 to 3.2, as served).
    pub fn of(document: &Value) -> Self {
        let mut operations = Vec::new();
        let Some(paths) = document.get("paths").and_then(Value::as_object) else {
            return ParameterIndex::default();
        };
        for (template, item) in paths {
            let item = resolve(document, item);
            let shared = item.get("parameters").and_then(Value::as_array);
            let Some(methods) = item.as_object() else {
                continue;
            };
            for (method, op) in methods {
                if method == "parameters" || !op.is_object() {
                    continue;
                }
                let mut params: Vec<Param> = Vec::new();
                let own = op.get("parameters").and_then(Value::as_array);
                for p in own
                    .into_iter()
                    .flatten()
                    .chain(shared.into_iter().flatten())
                {
                    let p = resolve(document, p);
                    if let Some(param) = Param::of(document, p)
                        && !params
                            .iter()
                            .any(|q| q.name == param.name && q.location == param.location)
                    {
                        params.push(param);
                    }
                }
                let segments: Vec<&str> = template.split('/').collect();
                operations.push(Operation {
                    method: method.to_ascii_uppercase(),
                    vars: segments
                        .iter()
                        .map(|s| {
                            s.strip_prefix('{')
                                .and_then(|s| s.strip_suffix('}'))
                                .filter(|v| !v.contains(['{', '}']))
                                .map(str::to_string)
                        })
                        .collect(),
                    literals: segments.iter().map(|s| s.to_string()).collect(),
                    params,
                });
            }
        }
        ParameterIndex { operations }
    }

    /// Every checkable parameter of the request's operation that fails: name → what it must
    /// be. Empty when the operation is not found or all pass.
    pub fn check(&self, request: &Request) -> BTreeMap<String, String> {
        let mut failed = BTreeMap::new();
        let path: Vec<&str> = request.uri().path().split('/').collect();
        let Some((op, captured)) = self.operations.iter().find_map(|op| {
            let captured = op.matches(request.method().as_str(), &path)?;
            Some((op, captured))
        }) else {
            return failed;
        };
        let query: Vec<(String, String)> =
            serde_urlencoded::from_str(request.uri().query().unwrap_or_default())
                .unwrap_or_default();
        for p in &op.params {
            let raw: Vec<String> = match p.location.as_str() {
                "path" => captured
                    .iter()
                    .filter(|(n, _)| *n == p.name)
                    .map(|(_, v)| v.clone())
                    .collect(),
                "query" => query
                    .iter()
                    .filter(|(k, _)| *k == p.name)
                    .map(|(_, v)| v.clone())
                    .collect(),
                "header" => request
                    .headers()
                    .get_all(p.name.as_str())
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_string))
                    .collect(),
                "cookie" => cookies(request)
                    .into_iter()
                    .filter(|(k, _)| *k == p.name)
                    .map(|(_, v)| v)
                    .collect(),
                _ => continue,
            };
            if let Some(message) = p.check(&raw) {
                failed.insert(p.name.clone(), message);
            }
        }
        failed
    }
}

impl Operation {
    /// The path variables' raw values when `method` `path` is this operation.
    fn matches(&self, method: &str, path: &[&str]) -> Option<Vec<(&str, String)>> {
        if self.method != method || path.len() != self.vars.len() {
            return None;
        }
        let mut captured = Vec::new();
        for ((var, literal), segment) in self.vars.iter().zip(&self.literals).zip(path) {
            match var {
                Some(name) => captured.push((name.as_str(), percent_decode(segment))),
                None if literal.contains('{') => {} // a segment mixing text and variables
                None if literal != segment => return None,
                None => {}
            }
        }
        Some(captured)
    }
}

impl Param {
    /// A parameter this module checks: a `schema` of a scalar or an array of scalars, in a
    /// style whose text it reads (`form`, `simple`, `spaceDelimited`, `pipeDelimited`).
    fn of(document: &Value, p: &Value) -> Option<Param> {
        let name = p.get("name")?.as_str()?.to_string();
        let location = p.get("in")?.as_str()?.to_string();
        let schema = resolve(document, p.get("schema")?).clone();
        let style = p.get("style").and_then(Value::as_str);
        let default_style = if matches!(location.as_str(), "query" | "cookie") {
            "form"
        } else {
            "simple"
        };
        let style = style.unwrap_or(default_style);
        let explode = p
            .get("explode")
            .and_then(Value::as_bool)
            .unwrap_or(style == "form");
        let ty = type_of(&schema);
        let delimiter = match (ty, style) {
            ("array", "form" | "simple") if !explode || location != "query" => Some(','),
            ("array", "spaceDelimited") => Some(' '),
            ("array", "pipeDelimited") => Some('|'),
            ("array", "form") => None,
            ("array", _) => return None,
            ("object", _) | ("", _) => return None,
            (_, "form" | "simple") => None,
            _ => return None,
        };
        let schema = if ty == "array" {
            let mut s = schema.clone();
            if let Some(items) = schema.get("items") {
                s["items"] = resolve(document, items).clone();
            }
            if matches!(type_of(&s["items"]), "array" | "object" | "") {
                return None;
            }
            s
        } else {
            schema
        };
        Some(Param {
            name,
            location,
            required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
            delimiter,
            schema,
        })
    }

    /// What is wrong with the parameter's raw values, if anything.
    fn check(&self, raw: &[String]) -> Option<String> {
        if raw.is_empty() {
            return self.required.then(|| "is required".to_string());
        }
        if type_of(&self.schema) != "array" {
            return scalar(&self.schema, &raw[0]);
        }
        let items: Vec<&str> = match self.delimiter {
            Some(d) => raw[0].split(d).collect(),
            None => raw.iter().map(String::as_str).collect(),
        };
        let count = |k: &str| self.schema.get(k).and_then(Value::as_u64);
        if let Some(min) = count("minItems")
            && (items.len() as u64) < min
        {
            return Some(format!("must have at least {min} items"));
        }
        if let Some(max) = count("maxItems")
            && (items.len() as u64) > max
        {
            return Some(format!("must have at most {max} items"));
        }
        if self.schema.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
            let mut seen = items.clone();
            seen.sort_unstable();
            seen.dedup();
            if seen.len() != items.len() {
                return Some("must not contain duplicate items".into());
            }
        }
        items.iter().find_map(|i| scalar(&self.schema["items"], i))
    }
}

/// What is wrong with one scalar's text against its schema, in the body validator's words.
fn scalar(schema: &Value, text: &str) -> Option<String> {
    let format = schema.get("format").and_then(Value::as_str);
    let number = match type_of(schema) {
        "integer" => {
            let bits = match format {
                Some("int32") => Some(i64::from(i32::MIN)..=i64::from(i32::MAX)),
                _ => None,
            };
            match text.parse::<i64>() {
                Ok(n) if bits.as_ref().is_none_or(|b| b.contains(&n)) => Some(n as f64),
                _ => {
                    return Some(match format {
                        Some(f) => format!("must be an integer ({f})"),
                        None => "must be an integer".into(),
                    });
                }
            }
        }
        "number" => match text.parse::<f64>() {
            Ok(n) if n.is_finite() => Some(n),
            _ => return Some("must be a number".into()),
        },
        "boolean" => {
            return (!matches!(text, "true" | "false")).then(|| "must be true or false".into());
        }
        _ => None,
    };
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        let value = match number {
            Some(_) => serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
            None => Value::String(text.to_string()),
        };
        if !allowed.contains(&value) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Some(format!("must be one of {}", list.join(", ")));
        }
    }
    match number {
        Some(n) => bounds(schema, n),
        None => string(schema, format, text),
    }
}

fn bounds(schema: &Value, n: f64) -> Option<String> {
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    // 3.0: a boolean beside `minimum`; 3.1: the bound itself.
    let (min, min_exclusive) = match schema.get("exclusiveMinimum") {
        Some(Value::Number(x)) => (x.as_f64(), true),
        Some(Value::Bool(b)) => (num("minimum"), *b),
        _ => (num("minimum"), false),
    };
    let (max, max_exclusive) = match schema.get("exclusiveMaximum") {
        Some(Value::Number(x)) => (x.as_f64(), true),
        Some(Value::Bool(b)) => (num("maximum"), *b),
        _ => (num("maximum"), false),
    };
    let show = |x: f64| {
        Value::from(x)
            .to_string()
            .trim_end_matches(".0")
            .to_string()
    };
    if let Some(min) = min
        && (n < min || (min_exclusive && n == min))
    {
        let op = if min_exclusive {
            "greater than"
        } else {
            "at least"
        };
        return Some(format!("must be {op} {}", show(min)));
    }
    if let Some(max) = max
        && (n > max || (max_exclusive && n == max))
    {
        let op = if max_exclusive {
            "less than"
        } else {
            "at most"
        };
        return Some(format!("must be {op} {}", show(max)));
    }
    if let Some(m) = num("multipleOf")
        && m > 0.0
        && (n / m).fract() != 0.0
    {
        return Some(format!("must be a multiple of {}", show(m)));
    }
    None
}

fn string(schema: &Value, format: Option<&str>, text: &str) -> Option<String> {
    match format {
        Some("date-time") if chrono::DateTime::parse_from_rfc3339(text).is_err() => {
            return Some("must be an RFC 3339 date-time".into());
        }
        Some("date") if chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_err() => {
            return Some("must be a date (YYYY-MM-DD)".into());
        }
        _ => {}
    }
    let len = text.chars().count() as u64;
    let count = |k: &str| schema.get(k).and_then(Value::as_u64);
    if let Some(min) = count("minLength")
        && len < min
    {
        return Some(format!("must be at least {min} characters long"));
    }
    if let Some(max) = count("maxLength")
        && len > max
    {
        return Some(format!("must be at most {max} characters long"));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && !crate::pattern_matches(pattern, text)
    {
        return Some(format!("must match the pattern {pattern}"));
    }
    None
}

/// A schema's type: `type` as written, or the one that is not `null` of a 3.1 type list;
/// empty when it has none (or several).
fn type_of(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => {
            let named: Vec<&str> = ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match named[..] {
                [one] => one,
                _ => "",
            }
        }
        _ => "",
    }
}

/// `value`, or what its local `$ref` points to (followed until it is not a reference).
fn resolve<'d>(document: &'d Value, mut value: &'d Value) -> &'d Value {
    for _ in 0..16 {
        let Some(target) = value.get("$ref").and_then(Value::as_str) else {
            return value;
        };
        let Some(found) = target
            .strip_prefix('#')
            .and_then(|pointer| document.pointer(pointer))
        else {
            return value;
        };
        value = found;
    }
    value
}

fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = segment
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn cookies(request: &Request) -> Vec<(String, String)> {
    request
        .headers()
        .get_all(poem::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            Some((k.to_string(), percent_decode(v)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index() -> ParameterIndex {
        ParameterIndex::of(&json!({
            "paths": {"/owners/{owner_id}/pets": {
                "parameters": [{"name": "owner_id", "in": "path", "required": true,
                                "schema": {"type": "string", "pattern": "^o[0-9]+$"}}],
                "get": {"parameters": [
                    {"$ref": "#/components/parameters/Limit"},
                    {"name": "since", "in": "query", "schema": {"type": "string", "format": "date"}},
                    {"name": "ids", "in": "query", "schema": {"type": "array", "maxItems": 2,
                     "items": {"type": "integer", "format": "int32"}}},
                    {"name": "sizes", "in": "query", "style": "pipeDelimited", "explode": false,
                     "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Size"}}},
                    {"name": "X-Trace", "in": "header", "required": true, "schema": {"type": "string"}},
                    {"name": "filter", "in": "query", "style": "deepObject",
                     "schema": {"type": "object"}}
                ]}
            }},
            "components": {
                "parameters": {"Limit": {"name": "limit", "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100}}},
                "schemas": {"Size": {"type": "string", "enum": ["s", "m"]}}
            }
        }))
    }

    fn check(uri: &str) -> BTreeMap<String, String> {
        index().check(&Request::builder().uri(uri.parse().unwrap()).finish())
    }

    #[test]
    fn every_failing_parameter_is_named_in_the_body_validators_words() {
        let failed =
            check("/owners/x9/pets?limit=100&since=2026-13-01&ids=1&ids=2&ids=3&sizes=s|xl");
        assert_eq!(
            failed,
            BTreeMap::from([
                ("owner_id".into(), "must match the pattern ^o[0-9]+$".into()),
                ("limit".into(), "must be less than 100".into()),
                ("since".into(), "must be a date (YYYY-MM-DD)".into()),
                ("ids".into(), "must have at most 2 items".into()),
                ("sizes".into(), "must be one of \"s\", \"m\"".into()),
                ("X-Trace".into(), "is required".into()),
            ])
        );
        let failed = check("/owners/o1/pets?limit=0&ids=1&ids=9999999999");
        assert_eq!(failed["limit"], "must be at least 1");
        assert_eq!(failed["ids"], "must be an integer (int32)");
    }

    #[test]
    fn good_values_and_other_routes_pass() {
        let ok = Request::builder()
            .uri(
                "/owners/o1/pets?limit=99&since=2026-11-28&sizes=s|m&filter[a]=b"
                    .parse()
                    .unwrap(),
            )
            .header("X-Trace", "t")
            .finish();
        assert!(index().check(&ok).is_empty());
        assert!(check("/elsewhere?limit=0").is_empty());
    }
}
