//! Refusals before a handler runs: [`RequestError`] (what was wrong, with every offending field),
//! its classification of framework errors, and [`Rejection`], the early exit generated glue takes.

use std::collections::BTreeMap;

use poem::http::StatusCode;
use poem::{IntoResponse, Response};
use poem_openapi::registry::{MetaResponses, Registry};

/// Why a request was refused before it reached a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestErrorKind {
    /// Missing or unacceptable credentials (401).
    Unauthorized,
    /// A parameter, header or body violates the document (400).
    InvalidRequest,
    /// A body part exceeds the configured size limit (400, see [`BodyLimits`]).
    ///
    /// [`BodyLimits`]: crate::BodyLimits
    TooLarge,
    /// No route matches the path (404).
    RouteNotFound,
    /// The path exists but not with this method (405).
    MethodNotAllowed,
    /// The `Content-Type` is missing or not the declared one (415).
    UnsupportedMediaType,
    /// Anything else the framework refused; the status tells.
    Other,
}

/// A refusal before a handler ran, with every offending field named in `details`.
#[derive(Debug, Clone)]
pub struct RequestError {
    pub status: StatusCode,
    pub kind: RequestErrorKind,
    pub message: String,
    /// Field path (`limit`, `address.country_code`, `items[2].name`) to message.
    pub details: BTreeMap<String, String>,
}

impl RequestError {
    pub fn invalid(message: impl Into<String>, details: BTreeMap<String, String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: RequestErrorKind::InvalidRequest,
            message: message.into(),
            details,
        }
    }

    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        let mut details = BTreeMap::new();
        details.insert(field.into(), message.clone());
        Self::invalid(message, details)
    }

    /// A failure of the server itself (the message must not carry internals).
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: RequestErrorKind::Other,
            message: message.into(),
            details: BTreeMap::new(),
        }
    }

    pub fn unauthorized() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            kind: RequestErrorKind::Unauthorized,
            message: "missing or invalid credentials".into(),
            details: BTreeMap::new(),
        }
    }

    /// Classifies any error the framework produced.
    pub fn from_poem(err: &poem::Error) -> Self {
        use poem_openapi::error as oe;
        if let Some(e) = err.downcast_ref::<RequestError>() {
            return e.clone();
        }
        if err.is::<oe::AuthorizationError>() {
            return Self::unauthorized();
        }
        if let Some(e) = err.downcast_ref::<oe::ParseParamError>() {
            return Self::invalid_field(e.name.to_string(), e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ParsePathError>() {
            return Self::invalid_field(e.name.to_string(), e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ParseRequestPayloadError>() {
            return Self::invalid_field("body", e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ParseMultipartError>() {
            return Self::invalid_field("body", e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ContentTypeError>() {
            return Self {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                kind: RequestErrorKind::UnsupportedMediaType,
                message: e.to_string(),
                details: BTreeMap::new(),
            };
        }
        let status = err.status();
        let kind = match status {
            StatusCode::NOT_FOUND => RequestErrorKind::RouteNotFound,
            StatusCode::METHOD_NOT_ALLOWED => RequestErrorKind::MethodNotAllowed,
            StatusCode::UNAUTHORIZED => RequestErrorKind::Unauthorized,
            StatusCode::PAYLOAD_TOO_LARGE => RequestErrorKind::TooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => RequestErrorKind::UnsupportedMediaType,
            StatusCode::BAD_REQUEST => RequestErrorKind::InvalidRequest,
            _ => RequestErrorKind::Other,
        };
        let message = match kind {
            RequestErrorKind::RouteNotFound => "no such route".to_string(),
            RequestErrorKind::MethodNotAllowed => "method not allowed on this route".to_string(),
            RequestErrorKind::Other if status.is_server_error() => "internal error".to_string(),
            _ => err.to_string(),
        };
        Self {
            status,
            kind,
            message,
            details: BTreeMap::new(),
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequestError {}

impl poem::error::ResponseError for RequestError {
    fn status(&self) -> StatusCode {
        self.status
    }
}

/// An early exit from generated glue; carries a [`RequestError`] to the error renderer.
///
/// Its `meta()` is empty: it never adds a status to the served document.
pub struct Rejection(pub RequestError);

impl Rejection {
    /// The answer of a service built only to compute its document.
    pub fn document_only() -> Self {
        Rejection(RequestError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind: RequestErrorKind::Other,
            message: "this service only describes the API".into(),
            details: BTreeMap::new(),
        })
    }
}

impl poem_openapi::ApiResponse for Rejection {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: Vec::new(),
        }
    }

    fn register(_registry: &mut Registry) {}
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        poem::Error::from(self.0).into_response()
    }
}

impl From<Rejection> for poem::Error {
    fn from(r: Rejection) -> Self {
        poem::Error::from(r.0)
    }
}

pub(crate) fn summarize(errors: &BTreeMap<String, String>) -> String {
    let mut parts: Vec<String> = errors
        .iter()
        .take(3)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if errors.len() > 3 {
        parts.push(format!("and {} more", errors.len() - 3));
    }
    format!("invalid request: {}", parts.join("; "))
}
