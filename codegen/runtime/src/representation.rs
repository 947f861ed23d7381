//! Bodies the document lists in several media types: [`Representation`] (the primary payload or
//! another listed media type as bytes), and [`OrOther`], the request extractor for them.

use std::marker::PhantomData;

use poem::{IntoResponse, Request, RequestBody, Response};
use poem_openapi::payload::Payload;
use poem_openapi::registry::{MetaSchemaRef, Registry};

use crate::{BodyLimits, FormBody, JsonBody, JsonOrFormBody, MultipartBody, negotiate};

/// A body the document lists in several media types of which the primary payload type handles
/// only some. In a request, the others reach the handler as written, for it to read; in a
/// response, the handler may write one of the others itself (`Accept` in its input says which
/// the client prefers; see [`negotiate`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Representation<T> {
    /// A media type the primary payload handles: parsed and validated in a request, written
    /// from the typed value in a response.
    Primary(T),
    /// Another media type the document lists for this body (`application/xml` beside JSON),
    /// with the body's bytes: the request's `Content-Type`, or the one the handler writes.
    Other { media_type: String, bytes: Vec<u8> },
}

/// A response variant's payload: documented as its primary payload (the served document lists
/// every media type as written).
impl<P: Payload> Payload for Representation<P> {
    const CONTENT_TYPE: &'static str = P::CONTENT_TYPE;

    fn check_content_type(content_type: &str) -> bool {
        P::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        P::schema_ref()
    }

    fn register(registry: &mut Registry) {
        P::register(registry);
    }
}

impl<P: IntoResponse> IntoResponse for Representation<P> {
    fn into_response(self) -> Response {
        match self {
            Representation::Primary(payload) => payload.into_response(),
            Representation::Other { media_type, bytes } => {
                let mut response = Response::builder().content_type(&media_type).body(bytes);
                response.extensions_mut().insert(negotiate::ChosenByHandler);
                response
            }
        }
    }
}

/// The media types a body lists beside those its primary extractor reads (a marker type per
/// body, written by the generator).
pub trait MediaTypes: Send + Sync + 'static {
    /// As the document writes them; `type/*` and `*/*` are ranges.
    const TYPES: &'static [&'static str];
}

/// A body extractor's value, as the handler's input holds it.
pub trait PayloadValue {
    type Value: Send + 'static;
    fn into_value(self) -> Self::Value;
}

impl<T: Send + 'static, D> PayloadValue for JsonBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl<T: Send + 'static, D> PayloadValue for FormBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl<T: Send + 'static, D> PayloadValue for JsonOrFormBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl<T: Send + 'static, D> PayloadValue for MultipartBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl PayloadValue for poem_openapi::payload::PlainText<String> {
    type Value = String;
    fn into_value(self) -> String {
        self.0
    }
}

/// Whether `content_type` is one of `listed` (a media type, `type/*` or `*/*`), parameters
/// and case aside.
pub fn media_listed(content_type: &str, listed: &[&str]) -> bool {
    let essence = |m: &str| {
        m.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    };
    let ct = essence(content_type);
    listed.iter().any(|l| {
        let l = essence(l);
        l == ct
            || l == "*/*"
            || l.strip_suffix("/*")
                .is_some_and(|t| ct.split('/').next() == Some(t))
    })
}

/// The body of a request in one of several listed media types: `P` reads the ones it reads,
/// `L` names the others, which are taken as their bytes ([`Representation::Other`]); any
/// other `Content-Type` is a 415, as for every body.
pub struct OrOther<P: PayloadValue, L>(pub Representation<P::Value>, pub PhantomData<L>);

impl<P, L> poem_openapi::payload::Payload for OrOther<P, L>
where
    P: poem_openapi::payload::Payload + poem_openapi::payload::ParsePayload + PayloadValue,
    L: MediaTypes,
{
    const CONTENT_TYPE: &'static str = P::CONTENT_TYPE;

    fn check_content_type(content_type: &str) -> bool {
        P::check_content_type(content_type) || media_listed(content_type, L::TYPES)
    }

    fn schema_ref() -> MetaSchemaRef {
        P::schema_ref()
    }

    fn register(registry: &mut Registry) {
        P::register(registry);
    }
}

impl<P, L> poem_openapi::payload::ParsePayload for OrOther<P, L>
where
    P: poem_openapi::payload::Payload + poem_openapi::payload::ParsePayload + PayloadValue,
    L: MediaTypes,
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let content_type = request.content_type().unwrap_or_default();
        if P::check_content_type(content_type) {
            let value = P::from_request(request, body).await?.into_value();
            return Ok(OrOther(Representation::Primary(value), PhantomData));
        }
        let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
        let bytes = body.take()?.into_bytes_limit(limits.file).await?.to_vec();
        Ok(OrOther(
            Representation::Other {
                media_type: content_type.to_string(),
                bytes,
            },
            PhantomData,
        ))
    }
}

poem_openapi::impl_apirequest_for_payload!(OrOther<P, L>, P: poem_openapi::payload::Payload + poem_openapi::payload::ParsePayload + PayloadValue, L: MediaTypes);

#[cfg(test)]
mod tests {
    use super::media_listed;

    #[test]
    fn a_listed_media_type_matches_by_essence_and_ranges_match_their_types() {
        let listed = ["application/xml", "image/*"];
        assert!(media_listed("application/xml", &listed));
        assert!(media_listed("Application/XML; charset=utf-8", &listed));
        assert!(media_listed("image/png", &listed));
        assert!(!media_listed("text/xml", &listed));
        assert!(!media_listed("imagery/png", &listed));
        assert!(!media_listed("", &listed));
        assert!(media_listed("text/csv", &["*/*"]));
    }
}
