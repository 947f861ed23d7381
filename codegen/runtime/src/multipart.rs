//! `multipart/form-data` bodies: text parts validated like JSON fields, file parts streamed
//! within a size limit ([`FilePart`]).

use std::collections::BTreeMap;
use std::marker::PhantomData;

use poem::http::StatusCode;
use poem::{Request, RequestBody};
use poem_openapi::payload::Payload;
use poem_openapi::registry::{MetaSchemaRef, Registry};
use serde_json::Value;

use crate::body::{media_type_is, text_value};
use crate::error::summarize;
use crate::{
    ApiDocument, BodyLimits, DocumentRules, RequestError, RequestErrorKind, SpecType, inline,
    reference, validate,
};

/// One file of a multipart body, read into memory within [`BodyLimits::file`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePart {
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

impl serde::Serialize for FilePart {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.file_name.as_deref().unwrap_or(""))
    }
}

impl<'de> serde::Deserialize<'de> for FilePart {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _ = <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d)?;
        Ok(FilePart::default())
    }
}

/// A multipart form the generator emitted: which parts are files.
pub trait MultipartForm: SpecType + serde::de::DeserializeOwned + Sized {
    const FILE_FIELDS: &'static [&'static str];
    fn attach_files(&mut self, files: &mut BTreeMap<String, FilePart>);
    /// The file parts present, by part name (what a client sends).
    fn file_parts(&self) -> Vec<(&'static str, &FilePart)>;
}

/// A `multipart/form-data` body: text parts are validated like JSON fields, file parts are
/// streamed with a size limit.
pub struct MultipartBody<T, D>(pub T, pub PhantomData<D>);

impl<T: MultipartForm, D: ApiDocument> poem_openapi::payload::Payload for MultipartBody<T, D> {
    const CONTENT_TYPE: &'static str = "multipart/form-data";

    fn check_content_type(content_type: &str) -> bool {
        media_type_is(content_type, "multipart/form-data")
    }

    fn schema_ref() -> MetaSchemaRef {
        match T::NAME {
            Some(name) => reference(name),
            None => inline(T::schema(&mut Registry::new())),
        }
    }

    fn register(registry: &mut Registry) {
        match T::NAME {
            Some(name) => registry.create_schema::<T, _>(name.to_string(), |r| T::schema(r)),
            None => {
                let _ = T::schema(registry);
            }
        }
    }
}

/// Reads one multipart part in chunks of at most `chunk_size` bytes, handing each to `each`
/// (which refuses by returning an error).
async fn read_part(
    field: poem::web::Field,
    chunk_size: usize,
    mut each: impl FnMut(&[u8]) -> poem::Result<()>,
) -> poem::Result<()> {
    let mut reader = Box::pin(field.into_async_read());
    let mut chunk = vec![0u8; chunk_size];
    loop {
        let n = tokio::io::AsyncReadExt::read(&mut reader, &mut chunk)
            .await
            .map_err(|e| {
                poem::Error::from(RequestError::invalid_field(
                    "body",
                    format!("malformed multipart body: {e}"),
                ))
            })?;
        if n == 0 {
            return Ok(());
        }
        each(&chunk[..n])?;
    }
}

impl<T: MultipartForm, D: ApiDocument> poem_openapi::payload::ParsePayload for MultipartBody<T, D> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
        let mut multipart =
            <poem::web::Multipart as poem::FromRequest>::from_request(request, body).await?;
        let bad = |m: String| poem::Error::from(RequestError::invalid_field("body", m));
        let mut text = serde_json::Map::new();
        let mut files = BTreeMap::new();
        // Text parts together are capped like one JSON body, so that many parts (declared or
        // not: unknown ones are refused only once the form is complete) cannot add up to more
        // memory than one body may take. File parts are capped one by one, and a repeated file
        // part replaces the earlier one.
        let text_limit = limits.json.min(1024 * 1024);
        let mut text_total = 0usize;
        // Register the form itself too, so a named form's `$ref` resolves when validating.
        let mut registry = Registry::new();
        <Self as Payload>::register(&mut registry);
        let schema = T::schema(&mut registry);
        while let Some(field) = multipart
            .next_field()
            .await
            .map_err(|e| bad(format!("malformed multipart body: {e}")))?
        {
            let name = field.name().unwrap_or_default().to_string();
            if T::FILE_FIELDS.contains(&name.as_str()) {
                let file_name = field.file_name().map(str::to_string);
                let content_type = field.content_type().map(str::to_string);
                // The part is kept as the pieces read and joined once at the end: a growing
                // `Vec` doubles its capacity and copies, so a part refused near the limit had
                // held about 2.4 times the limit at its peak; this way it holds the bytes read.
                let mut pieces: Vec<Vec<u8>> = Vec::new();
                let mut read = 0usize;
                read_part(field, 64 * 1024, |chunk| {
                    if read + chunk.len() > limits.file {
                        let mut details = BTreeMap::new();
                        details.insert(
                            name.clone(),
                            format!("must be at most {} bytes", limits.file),
                        );
                        return Err(RequestError {
                            status: StatusCode::BAD_REQUEST,
                            kind: RequestErrorKind::TooLarge,
                            message: format!(
                                "file part `{name}` is larger than {} bytes",
                                limits.file
                            ),
                            details,
                        }
                        .into());
                    }
                    pieces.push(chunk.to_vec());
                    read += chunk.len();
                    Ok(())
                })
                .await?;
                let bytes = pieces.concat();
                text.insert(
                    name.clone(),
                    Value::String(file_name.clone().unwrap_or_default()),
                );
                files.insert(
                    name,
                    FilePart {
                        file_name,
                        content_type,
                        bytes,
                    },
                );
            } else {
                // Text parts are small by nature; cap them like a JSON body.
                let mut raw_bytes = Vec::new();
                read_part(field, 16 * 1024, |chunk| {
                    let n = chunk.len();
                    if raw_bytes.len() + n > text_limit {
                        return Err(RequestError::invalid_field(
                            name.clone(),
                            "text part is too large",
                        )
                        .into());
                    }
                    text_total += n;
                    if text_total > text_limit {
                        return Err(RequestError::invalid_field(
                            "body",
                            format!("text parts are larger than {text_limit} bytes in total"),
                        )
                        .into());
                    }
                    raw_bytes.extend_from_slice(chunk);
                    Ok(())
                })
                .await?;
                let raw = String::from_utf8(raw_bytes).map_err(|_| {
                    poem::Error::from(RequestError::invalid_field(
                        name.clone(),
                        "must be UTF-8 text",
                    ))
                })?;
                let value = text_value(&schema, &name, raw);
                text.insert(name, value);
            }
        }
        let value = Value::Object(text);
        let mut errors = BTreeMap::new();
        let schema_ref = <Self as poem_openapi::payload::Payload>::schema_ref();
        validate(
            &registry,
            &schema_ref,
            &value,
            "",
            &DocumentRules::<D>::new(),
            &mut errors,
        );
        if T::NAME.is_none() && matches!(schema_ref, MetaSchemaRef::Inline(_)) {
            // Inline forms are closed: only declared parts are accepted.
            if let Value::Object(map) = &value {
                for key in map.keys() {
                    if !schema.properties.iter().any(|(n, _)| n == key) {
                        errors.insert(key.clone(), "is not a known field".into());
                    }
                }
            }
        }
        if !errors.is_empty() {
            let message = summarize(&errors);
            return Err(RequestError::invalid(message, errors).into());
        }
        let mut form: T = serde_json::from_value(value)
            .map_err(|e| poem::Error::from(RequestError::invalid_field("body", e.to_string())))?;
        form.attach_files(&mut files);
        Ok(MultipartBody(form, PhantomData))
    }
}

poem_openapi::impl_apirequest_for_payload!(MultipartBody<T, D>, T: MultipartForm, D: ApiDocument);
