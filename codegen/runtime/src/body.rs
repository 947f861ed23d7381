//! Request bodies read, validated against their documented schema and only then typed: JSON,
//! optional JSON, `application/x-www-form-urlencoded`, either of those, and raw bytes.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use poem::http::StatusCode;
use poem::{Request, RequestBody};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, Type};
use serde_json::Value;

use crate::error::summarize;
use crate::{ApiDocument, DocumentRules, RequestError, RequestErrorKind, registry_of, validate};

/// Limits the server sets on request bodies (inserted into request data; default: none).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Largest JSON body, in bytes.
    pub json: usize,
    /// Largest file part of a multipart body, in bytes.
    pub file: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        Self {
            json: usize::MAX,
            file: usize::MAX,
        }
    }
}

/// Whether a `Content-Type` value names `media` (parameters ignored, case-insensitive).
pub(crate) fn media_type_is(content_type: &str, media: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
}

/// `application/json`, `text/json` (ASP.NET's) and any structured-syntax `+json` type
/// (`application/vnd.x+json`): the media types the generator reads and writes as JSON.
fn is_json_media(content_type: &str) -> bool {
    media_type_is(content_type, "application/json")
        || media_type_is(content_type, "text/json")
        || content_type
            .split(';')
            .next()
            .is_some_and(|m| m.trim().to_ascii_lowercase().ends_with("+json"))
}

/// A JSON request body validated against its documented schema before it is typed.
pub struct JsonBody<T, D>(pub T, pub PhantomData<D>);

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::Payload
    for JsonBody<T, D>
{
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(content_type: &str) -> bool {
        is_json_media(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::ParsePayload
    for JsonBody<T, D>
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        read_json::<T, D>(request, body)
            .await
            .map(|v| JsonBody(v, PhantomData))
    }
}

/// A JSON body read (at most the JSON limit), validated against `T`'s schema and typed.
async fn read_json<T: Type + ParseFromJSON + 'static, D: ApiDocument>(
    request: &Request,
    body: &mut RequestBody,
) -> poem::Result<T> {
    let bytes = limited_bytes(request, body).await?;
    let value: Value = serde_json::from_slice(bytes.as_ref()).map_err(|e| {
        poem::Error::from(RequestError::invalid_field(
            "body",
            format!("invalid JSON: {e}"),
        ))
    })?;
    checked_body::<T, D>(&registry_of::<T>(), value)
}

/// The body's bytes, at most the JSON limit: a larger body is refused (400) without being
/// buffered whole.
async fn limited_bytes(
    request: &Request,
    body: &mut RequestBody,
) -> poem::Result<impl AsRef<[u8]>> {
    let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
    body.take()?
        .into_bytes_limit(limits.json)
        .await
        .map_err(|e| match e {
            poem::error::ReadBodyError::PayloadTooLarge => poem::Error::from(RequestError {
                status: StatusCode::BAD_REQUEST,
                kind: RequestErrorKind::TooLarge,
                message: format!("request body is larger than {} bytes", limits.json),
                details: BTreeMap::new(),
            }),
            other => poem::Error::from(other),
        })
}

/// A body's JSON value validated against `T`'s schema (every problem collected, 400 with the
/// fields) and then typed.
fn checked_body<T: ParseFromJSON, D: ApiDocument>(
    registry: &Registry,
    value: Value,
) -> poem::Result<T> {
    checked_value::<T, D>(registry, value, "body")
}

/// A JSON value validated against `T`'s schema (every problem collected, 400 with the fields;
/// the value itself is called `root`) and then typed.
pub(crate) fn checked_value<T: ParseFromJSON, D: ApiDocument>(
    registry: &Registry,
    value: Value,
    root: &str,
) -> poem::Result<T> {
    let mut errors = BTreeMap::new();
    validate(
        registry,
        &T::schema_ref(),
        &value,
        "",
        &DocumentRules::<D>::new(),
        &mut errors,
    );
    if root != "body"
        && let Some(message) = errors.remove("body")
    {
        errors.insert(root.to_string(), message);
    }
    if !errors.is_empty() {
        let message = summarize(&errors);
        return Err(RequestError::invalid(message, errors).into());
    }
    T::parse_from_json(Some(value))
        .map_err(|e| RequestError::invalid_field(root, e.into_message()).into())
}

poem_openapi::impl_apirequest_for_payload!(JsonBody<T, D>, T: Type + ParseFromJSON + 'static, D: ApiDocument);

/// An optional JSON request body (`requestBody.required: false`): absent when the request has
/// no body, validated like [`JsonBody`] otherwise.
pub struct OptionalJsonBody<T, D>(pub Option<T>, pub PhantomData<D>);

impl<'a, T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::ApiExtractor<'a>
    for OptionalJsonBody<T, D>
{
    const TYPES: &'static [poem_openapi::ApiExtractorType] =
        &[poem_openapi::ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn request_meta() -> Option<poem_openapi::registry::MetaRequest> {
        Some(poem_openapi::registry::MetaRequest {
            description: None,
            content: vec![poem_openapi::registry::MetaMediaType {
                content_type: "application/json",
                schema: T::schema_ref(),
            }],
            required: false,
        })
    }

    async fn from_request(
        request: &'a Request,
        body: &mut RequestBody,
        _param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let declared_len = request
            .headers()
            .get(poem::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if request.content_type().is_none() && declared_len.unwrap_or(0) == 0 {
            return Ok(OptionalJsonBody(None, PhantomData));
        }
        match request.content_type() {
            Some(ct) if <JsonBody<T, D> as Payload>::check_content_type(ct) => {
                <JsonBody<T, D> as ParsePayload>::from_request(request, body)
                    .await
                    .map(|b| OptionalJsonBody(Some(b.0), PhantomData))
            }
            Some(ct) => Err(poem_openapi::error::ContentTypeError::NotSupported {
                content_type: ct.to_string(),
            }
            .into()),
            None => Err(poem_openapi::error::ContentTypeError::ExpectContentType.into()),
        }
    }
}

/// A text field of a form as the JSON value its declared property type reads it as (a value
/// that does not parse stays a string, so the validator names it).
pub(crate) fn text_value(form: &MetaSchema, name: &str, raw: String) -> Value {
    let ty = form
        .properties
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| match s {
            MetaSchemaRef::Inline(s) => s.ty,
            MetaSchemaRef::Reference(_) => "string",
        })
        .unwrap_or("string");
    match ty {
        "integer" => raw
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(raw)),
        "number" => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::String(raw)),
        "boolean" => match raw.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(raw),
        },
        _ => Value::String(raw),
    }
}

/// An `application/x-www-form-urlencoded` body: each field read as its declared property type
/// (a repeated field of an array property becomes the array), then validated like JSON.
pub struct FormBody<T, D>(pub T, pub PhantomData<D>);

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::Payload
    for FormBody<T, D>
{
    const CONTENT_TYPE: &'static str = "application/x-www-form-urlencoded";

    fn check_content_type(content_type: &str) -> bool {
        media_type_is(content_type, Self::CONTENT_TYPE)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::ParsePayload
    for FormBody<T, D>
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        read_form::<T, D>(request, body)
            .await
            .map(|v| FormBody(v, PhantomData))
    }
}

/// A form body read (at most the JSON limit): each field as its declared property type, then
/// validated like JSON and typed.
async fn read_form<T: Type + ParseFromJSON + 'static, D: ApiDocument>(
    request: &Request,
    body: &mut RequestBody,
) -> poem::Result<T> {
    let bytes = limited_bytes(request, body).await?;
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(bytes.as_ref()).map_err(|e| {
            poem::Error::from(RequestError::invalid_field(
                "body",
                format!("invalid form: {e}"),
            ))
        })?;
    let registry = registry_of::<T>();
    let form = match T::schema_ref() {
        MetaSchemaRef::Inline(s) => *s,
        MetaSchemaRef::Reference(n) => match registry.schemas.get(&n) {
            Some(s) => s.clone(),
            None => MetaSchema::ANY,
        },
    };
    let mut object = serde_json::Map::new();
    for (name, raw) in pairs {
        let is_array = form
            .properties
            .iter()
            .any(|(n, s)| *n == name && matches!(s, MetaSchemaRef::Inline(s) if s.ty == "array"));
        let value = text_value(&form, &name, raw);
        match object.get_mut(&name) {
            Some(Value::Array(items)) if is_array => items.push(value),
            _ if is_array => {
                object.insert(name, Value::Array(vec![value]));
            }
            _ => {
                object.insert(name, value);
            }
        }
    }
    checked_body::<T, D>(&registry, Value::Object(object))
}

poem_openapi::impl_apirequest_for_payload!(FormBody<T, D>, T: Type + ParseFromJSON + 'static, D: ApiDocument);

/// A body the document lists both as JSON and as `application/x-www-form-urlencoded` with one
/// schema: read as the request's `Content-Type` says, then validated and typed alike.
pub struct JsonOrFormBody<T, D>(pub T, pub PhantomData<D>);

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::Payload
    for JsonOrFormBody<T, D>
{
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(content_type: &str) -> bool {
        JsonBody::<T, D>::check_content_type(content_type)
            || FormBody::<T, D>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::ParsePayload
    for JsonOrFormBody<T, D>
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let form = request
            .content_type()
            .is_some_and(FormBody::<T, D>::check_content_type);
        let value = if form {
            read_form::<T, D>(request, body).await?
        } else {
            read_json::<T, D>(request, body).await?
        };
        Ok(JsonOrFormBody(value, PhantomData))
    }
}

poem_openapi::impl_apirequest_for_payload!(JsonOrFormBody<T, D>, T: Type + ParseFromJSON + 'static, D: ApiDocument);

/// A body of any other media type, as its bytes (any `Content-Type` is accepted).
pub struct RawBody(pub Vec<u8>);

impl poem_openapi::payload::Payload for RawBody {
    const CONTENT_TYPE: &'static str = "application/octet-stream";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema::new_with_format("string", "binary")))
    }
}

impl poem_openapi::payload::ParsePayload for RawBody {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
        Ok(RawBody(
            body.take()?.into_bytes_limit(limits.file).await?.to_vec(),
        ))
    }
}

poem_openapi::impl_apirequest_for_payload!(RawBody,);
