//! A generated response enum, described and written by code that is the same for every enum.
//!
//! Each enum says two things of itself through [`Responses`]: `describe`, one call per variant
//! (status, content type, description, headers), which builds the document's responses and
//! registers their types; and `reply`, one match arm per variant naming its status and headers.
//! [`api_response!`](crate::api_response) then implements poem-openapi's `ApiResponse` and poem's
//! `IntoResponse` over them. The document and the responses are the ones poem-openapi's
//! `#[derive(ApiResponse)]` gives; the generator no longer asks rustc to expand that derive
//! (per variant a block of metadata and a block of response code) for every operation.

use poem::http::{HeaderValue, StatusCode};
use poem::{IntoResponse, Response};
use poem_openapi::ResponseContent;
use poem_openapi::registry::{MetaHeader, MetaResponse, MetaResponses, Registry};
use poem_openapi::types::{ToHeader, Type};

/// A response enum's variants, as data the runtime reads.
pub trait Responses: Sized {
    /// Every variant in declaration order: `d.code::<Content>(status, description)` (or
    /// `range`, `default`), then each of its headers. Nothing by default: the responses of an
    /// operation without any, or of a document served as written, which poem-openapi's
    /// rendering never shows.
    fn describe(_d: &mut ResponseDescriber<'_>) {}

    /// The response for the variant `self` is, through [`reply`].
    fn reply(self) -> Response;
}

/// What [`Responses::describe`] fills: the document's responses, or the registry of types.
pub enum ResponseDescriber<'a> {
    Meta(&'a mut Vec<MetaResponse>),
    Register(&'a mut Registry),
}

impl ResponseDescriber<'_> {
    /// A variant with a fixed status code.
    pub fn code<C: ResponseContent>(
        &mut self,
        status: u16,
        description: &'static str,
    ) -> &mut Self {
        self.variant::<C>(Some(status), None, description)
    }

    /// A variant for a range of statuses (`4XX`), which carries its status.
    pub fn range<C: ResponseContent>(
        &mut self,
        range: &'static str,
        description: &'static str,
    ) -> &mut Self {
        self.variant::<C>(None, Some(range), description)
    }

    /// The `default` variant, which carries its status.
    pub fn default<C: ResponseContent>(&mut self, description: &'static str) -> &mut Self {
        self.variant::<C>(None, None, description)
    }

    fn variant<C: ResponseContent>(
        &mut self,
        status: Option<u16>,
        range: Option<&'static str>,
        description: &'static str,
    ) -> &mut Self {
        match self {
            ResponseDescriber::Meta(responses) => responses.push(MetaResponse {
                description,
                status,
                status_range: range.map(str::to_string),
                content: C::media_types(),
                headers: Vec::new(),
            }),
            ResponseDescriber::Register(registry) => C::register(registry),
        }
        self
    }

    /// An optional header of the variant described last (see [`header`](Self::header)).
    pub fn optional<T: Type>(&mut self, name: &'static str, description: &str) -> &mut Self {
        self.header::<Option<T>>(name, description)
    }

    /// A header of the variant described last, named as it is sent (upper case); an empty
    /// description is none.
    pub fn header<T: Type>(&mut self, name: &'static str, description: &str) -> &mut Self {
        if let ResponseDescriber::Meta(responses) = self
            && let Some(last) = responses.last_mut()
        {
            last.headers.push(MetaHeader {
                name: name.to_string(),
                description: (!description.is_empty()).then(|| description.to_string()),
                required: T::IS_REQUIRED,
                deprecated: false,
                schema: T::schema_ref(),
            });
        }
        self
    }
}

/// The document's responses of `R`.
pub fn meta<R: Responses>() -> MetaResponses {
    let mut responses = Vec::new();
    R::describe(&mut ResponseDescriber::Meta(&mut responses));
    MetaResponses { responses }
}

/// Registers the types `R`'s responses carry.
pub fn register<R: Responses>(registry: &mut Registry) {
    R::describe(&mut ResponseDescriber::Register(registry));
}

/// A status a variant is answered with: its fixed code, or the one it carries.
pub trait IntoStatus {
    fn into_status(self) -> StatusCode;
}

impl IntoStatus for u16 {
    fn into_status(self) -> StatusCode {
        // The generator writes only codes from 100 to 999.
        StatusCode::from_u16(self).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoStatus for StatusCode {
    fn into_status(self) -> StatusCode {
        self
    }
}

/// `body` answered with `status` and the headers that have a value.
pub fn reply<B: IntoResponse>(
    body: B,
    status: impl IntoStatus,
    headers: &[(&'static str, Option<HeaderValue>)],
) -> Response {
    let mut response = body.into_response();
    response.set_status(status.into_status());
    with_headers(&mut response, headers);
    response
}

fn with_headers(response: &mut Response, headers: &[(&'static str, Option<HeaderValue>)]) {
    for (name, value) in headers {
        if let Some(value) = value {
            response.headers_mut().insert(*name, value.clone());
        }
    }
}

/// A header field's value as sent (none for an absent optional header).
pub fn header<T: ToHeader>(value: &T) -> Option<HeaderValue> {
    value.to_header()
}

/// poem-openapi's `ApiResponse` and poem's `IntoResponse` for a type that implements
/// [`Responses`].
#[macro_export]
macro_rules! api_response {
    ($ty:ty) => {
        impl ::poem_openapi::ApiResponse for $ty {
            fn meta() -> ::poem_openapi::registry::MetaResponses {
                $crate::responses::meta::<Self>()
            }

            fn register(registry: &mut ::poem_openapi::registry::Registry) {
                $crate::responses::register::<Self>(registry)
            }
        }

        impl ::poem::IntoResponse for $ty {
            fn into_response(self) -> ::poem::Response {
                $crate::responses::Responses::reply(self)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Json, NoBody};

    enum Answer {
        Ok(Json<String>, Option<String>),
        Gone,
        Other(StatusCode, NoBody),
    }

    impl Responses for Answer {
        fn describe(d: &mut ResponseDescriber<'_>) {
            d.code::<Json<String>>(200, "The text.")
                .optional::<String>("X-TRACE", "The trace.");
            d.code::<NoBody>(410, "");
            d.default::<NoBody>("Anything else.");
        }

        fn reply(self) -> Response {
            match self {
                Answer::Ok(b, h0) => reply(b, 200, &[("X-TRACE", header(&h0))]),
                Answer::Gone => reply(NoBody, 410, &[]),
                Answer::Other(status, b) => reply(b, status, &[]),
            }
        }
    }

    #[test]
    fn meta_lists_each_variant_with_its_headers() {
        let meta = meta::<Answer>();
        let statuses: Vec<_> = meta.responses.iter().map(|r| r.status).collect();
        assert_eq!(statuses, [Some(200), Some(410), None]);
        assert_eq!(meta.responses[0].description, "The text.");
        assert_eq!(meta.responses[0].content.len(), 1);
        assert_eq!(meta.responses[0].headers[0].name, "X-TRACE");
        assert!(!meta.responses[0].headers[0].required);
        assert_eq!(
            meta.responses[0].headers[0].description.as_deref(),
            Some("The trace.")
        );
        assert!(meta.responses[1].content.is_empty());
        assert!(meta.responses[1].headers.is_empty());
    }

    #[test]
    fn reply_sets_status_and_only_present_headers() {
        let r = Answer::Ok(Json("hi".into()), Some("t-1".into())).reply();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["x-trace"], "t-1");
        let r = Answer::Ok(Json("hi".into()), None).reply();
        assert!(r.headers().get("x-trace").is_none());
        assert_eq!(Answer::Gone.reply().status(), StatusCode::GONE);
        let r = Answer::Other(StatusCode::IM_A_TEAPOT, NoBody).reply();
        assert_eq!(r.status(), StatusCode::IM_A_TEAPOT);
    }
}
