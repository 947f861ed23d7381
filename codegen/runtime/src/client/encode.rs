//! Parameters written in their styles (OpenAPI's `style` and `explode`), from the JSON value of
//! a typed input field.

use serde_json::Value;

use super::{Error, Operation};

/// How a query parameter is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamStyle {
    /// An array as repeated keys (an object as one key per property) rather than one value.
    pub explode: bool,
    /// The items' delimiter of an array that is not exploded: `,`, ` ` or `|`.
    pub delimiter: char,
    /// `deepObject`: an object as `name[key]=value`.
    pub deep_object: bool,
}

impl ParamStyle {
    /// `style: form`, `explode: true`: the default of a query parameter.
    pub const FORM: ParamStyle = ParamStyle {
        explode: true,
        delimiter: ',',
        deep_object: false,
    };
}

/// How a path parameter is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStyle {
    /// `5`, `3,4,5`.
    Simple,
    /// `.5`, `.3.4.5` exploded or `.3,4,5`.
    Label,
    /// `;id=5`, `;id=3;id=4` exploded or `;id=3,4`.
    Matrix,
}

pub(super) fn value<T: serde::Serialize + ?Sized>(
    op: &Operation,
    name: &str,
    value: &T,
) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::Request {
        operation: op.id,
        message: format!("`{name}`: {e}"),
    })
}

/// A scalar's text: a string as it is, numbers and booleans as JSON writes them.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(super) fn component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query value encoded, keeping the delimiter of an unexploded array readable.
pub(super) fn query_value(v: &str, style: ParamStyle) -> String {
    if style.explode || style.deep_object {
        return component(v);
    }
    let d = style.delimiter.to_string();
    v.split(style.delimiter)
        .map(component)
        .collect::<Vec<_>>()
        .join(if d == " " { "%20" } else { &d })
}

/// The `simple` style: a scalar, `a,b,c`, `k,v,k,v` (`k=v,k=v` exploded); `None` for null.
pub(super) fn simple(v: &Value, explode: bool) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Array(items) => Some(items.iter().map(scalar).collect::<Vec<_>>().join(",")),
        Value::Object(m) => Some(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    if explode {
                        format!("{k}={}", scalar(v))
                    } else {
                        format!("{k},{}", scalar(v))
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
        ),
        other => Some(scalar(other)),
    }
}

/// A path parameter's text in its style, percent-encoded (its delimiters left readable).
pub(super) fn path(name: &str, v: &Value, style: PathStyle, explode: bool) -> String {
    let items: Vec<String> = match v {
        Value::Array(items) => items.iter().map(|i| component(&scalar(i))).collect(),
        Value::Object(m) => m
            .iter()
            .filter(|(_, v)| !v.is_null())
            .flat_map(|(k, v)| {
                if explode {
                    vec![format!("{}={}", component(k), component(&scalar(v)))]
                } else {
                    vec![component(k), component(&scalar(v))]
                }
            })
            .collect(),
        other => vec![component(&scalar(other))],
    };
    match style {
        PathStyle::Simple => items.join(","),
        PathStyle::Label if explode => format!(".{}", items.join(".")),
        PathStyle::Label => format!(".{}", items.join(",")),
        PathStyle::Matrix => match v {
            Value::Array(_) if explode => items
                .iter()
                .map(|i| format!(";{name}={i}"))
                .collect::<String>(),
            Value::Object(_) if explode => items.iter().map(|i| format!(";{i}")).collect(),
            _ => format!(";{name}={}", items.join(",")),
        },
    }
}

/// A query parameter's `(key, value)` pairs in its style, not yet encoded; none for null.
/// `name` empty: the value is an object whose properties are the keys (a form body).
pub(super) fn query(name: &str, v: &Value, style: ParamStyle) -> Vec<(String, String)> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) if style.explode => items
            .iter()
            .map(|i| (name.to_string(), scalar(i)))
            .collect(),
        Value::Array(items) => vec![(
            name.to_string(),
            items
                .iter()
                .map(scalar)
                .collect::<Vec<_>>()
                .join(&style.delimiter.to_string()),
        )],
        Value::Object(_) if style.deep_object => {
            let mut out = Vec::new();
            deep(name, v, &mut out);
            out
        }
        Value::Object(m) if style.explode || name.is_empty() => m
            .iter()
            .flat_map(|(k, v)| match v {
                Value::Array(items) => items.iter().map(|i| (k.clone(), scalar(i))).collect(),
                Value::Null => Vec::new(),
                other => vec![(k.clone(), scalar(other))],
            })
            .collect(),
        Value::Object(_) => simple(v, false)
            .map(|t| vec![(name.to_string(), t)])
            .unwrap_or_default(),
        other => vec![(name.to_string(), scalar(other))],
    }
}

/// `name[key]=value` for each leaf of an object (nested objects bracketed again, arrays
/// repeated).
fn deep(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                deep(&format!("{prefix}[{k}]"), v, out);
            }
        }
        Value::Array(items) => {
            for i in items {
                deep(prefix, i, out);
            }
        }
        Value::Null => {}
        other => out.push((prefix.to_string(), scalar(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_styles() {
        let colors = json!(["blue", "black"]);
        assert_eq!(
            query("c", &colors, ParamStyle::FORM),
            [("c".into(), "blue".into()), ("c".into(), "black".into())]
        );
        let pipe = ParamStyle {
            explode: false,
            delimiter: '|',
            deep_object: false,
        };
        assert_eq!(
            query("c", &colors, pipe),
            [("c".into(), "blue|black".into())]
        );
        assert_eq!(query_value("a b|c,d", pipe), "a%20b|c%2Cd");
        let deep_style = ParamStyle {
            deep_object: true,
            ..ParamStyle::FORM
        };
        assert_eq!(
            query("f", &json!({"name": "x", "age": {"min": 3}}), deep_style),
            [
                ("f[name]".into(), "x".into()),
                ("f[age][min]".into(), "3".into())
            ]
        );
        assert!(query("f", &Value::Null, ParamStyle::FORM).is_empty());
    }

    #[test]
    fn path_styles() {
        let v = json!([3, 4]);
        assert_eq!(path("id", &v, PathStyle::Simple, false), "3,4");
        assert_eq!(path("id", &v, PathStyle::Label, true), ".3.4");
        assert_eq!(path("id", &v, PathStyle::Matrix, true), ";id=3;id=4");
        assert_eq!(path("id", &v, PathStyle::Matrix, false), ";id=3,4");
        assert_eq!(
            path("id", &json!("a/b c"), PathStyle::Simple, false),
            "a%2Fb%20c"
        );
    }

    #[test]
    fn header_values() {
        assert_eq!(
            simple(&json!({"a": 1, "b": "x"}), true).as_deref(),
            Some("a=1,b=x")
        );
        assert_eq!(simple(&json!([1, 2]), false).as_deref(), Some("1,2"));
        assert_eq!(simple(&Value::Null, false), None);
    }
}
