//! OpenAPI 3.2's `in: querystring`: the whole query string is one parameter, read by the media
//! type of its `content` and validated like a body (every violation listed).

use std::marker::PhantomData;

use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, Type};
use serde_json::Value;

use crate::{ApiDocument, RequestError, checked_value, object_of_pairs, registry_of};

/// How the query string is read: [`JSON`] (the percent-decoded text is a JSON document),
/// [`FORM`] (`application/x-www-form-urlencoded`: an object of its keys, each value typed by
/// its property's schema) or [`TEXT`] (the percent-decoded text itself, a string).
pub type Mode = u8;
pub const JSON: Mode = 0;
pub const FORM: Mode = 1;
pub const TEXT: Mode = 2;

/// The query string as the parameter `T`; an empty one is an absent parameter.
pub struct QueryString<T, D, const MODE: Mode>(pub T, pub PhantomData<D>);

impl<T, D, const MODE: Mode> QueryString<T, D, MODE>
where
    T: Type,
{
    /// The JSON value the query string writes (`Null` when it is empty).
    fn value(query: &str, name: &str) -> Result<Value, RequestError> {
        if query.is_empty() {
            return Ok(Value::Null);
        }
        match MODE {
            FORM => {
                let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
                    .map_err(|e| RequestError::invalid_field(name, e.to_string()))?;
                Ok(Value::Object(object_of_pairs::<T>(pairs, |k| Some(k))))
            }
            TEXT => Ok(Value::String(percent_decoded(query, name)?)),
            _ => serde_json::from_str(&percent_decoded(query, name)?).map_err(|e| {
                RequestError::invalid_field(name, format!("the query string is not JSON: {e}"))
            }),
        }
    }
}

/// `text` with each `%XX` replaced by its byte (`+` stays: it is not a space outside forms).
fn percent_decoded(text: &str, name: &str) -> Result<String, RequestError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(b) = hex else {
                return Err(RequestError::invalid_field(
                    name,
                    "the query string has a `%` not followed by two hexadecimal digits",
                ));
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| RequestError::invalid_field(name, "the query string is not UTF-8"))
}

impl<'a, T, D, const MODE: Mode> poem_openapi::ApiExtractor<'a> for QueryString<T, D, MODE>
where
    T: Type + ParseFromJSON + Send + Sync + 'static,
    D: ApiDocument + Send + Sync,
{
    crate::query_parameter_extractor!();

    async fn from_request(
        request: &'a Request,
        _body: &mut RequestBody,
        param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let name = param_opts.name;
        let value = Self::value(request.uri().query().unwrap_or_default(), name)?;
        if value.is_null() {
            if T::IS_REQUIRED {
                return Err(RequestError::invalid_field(name, "is required").into());
            }
            return T::parse_from_json(None)
                .map(|t| QueryString(t, PhantomData))
                .map_err(|e| RequestError::invalid_field(name, e.into_message()).into());
        }
        checked_value::<T, D>(&registry_of::<T>(), value, name).map(|t| QueryString(t, PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_are_bytes_and_plus_is_kept() {
        assert_eq!(
            percent_decoded("%7B%22a%22%3A%201%7D+", "q").unwrap(),
            "{\"a\": 1}+"
        );
        assert_eq!(percent_decoded("caf%C3%A9", "q").unwrap(), "café");
        assert!(percent_decoded("100%", "q").is_err());
        assert!(percent_decoded("%zz", "q").is_err());
        assert!(percent_decoded("%ff", "q").is_err(), "not UTF-8");
    }
}
