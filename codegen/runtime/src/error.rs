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

    /// Adds `failures` (field → message) to a refusal, keeping what it said of a field already
    /// in it, and says them all in the message (as a body's violations are said).
    pub fn add_failures(&mut self, failures: BTreeMap<String, String>) {
        let before = self.details.len();
        for (field, message) in failures {
            self.details.entry(field).or_insert(message);
        }
        if self.details.len() > before {
            self.message = summarize(&self.details);
        }
    }

    /// A parameter poem-openapi refused, in the body validator's words: `limit must be at most
    /// 100`, not `verification failed. maximum(100, exclusive: false)`.
    fn invalid_parameter(name: &str, reason: &str) -> Self {
        let message = parameter_reason(reason);
        Self::invalid(
            format!("{name} {message}"),
            BTreeMap::from([(name.to_string(), message)]),
        )
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
            return Self::invalid_parameter(e.name, &e.reason);
        }
        if let Some(e) = err.downcast_ref::<oe::ParsePathError>() {
            return Self::invalid_parameter(e.name, &e.reason);
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

/// poem-openapi's reason for refusing a parameter, in the words the body validator uses for the
/// same keyword (`must be at most 100`, `must be an integer (int64)`); a reason it does not
/// recognise is kept as written.
fn parameter_reason(reason: &str) -> String {
    let rule = reason
        .strip_prefix("verification failed. ")
        .unwrap_or(reason);
    // `keyword(args)` as poem-openapi's validators display themselves
    if let Some((keyword, args)) = rule.strip_suffix(')').and_then(|r| r.split_once('(')) {
        let exclusive = args.ends_with("exclusive: true");
        let n = args.split(',').next().unwrap_or(args);
        let said = match keyword {
            "maximum" if exclusive => Some(format!("must be less than {n}")),
            "maximum" => Some(format!("must be at most {n}")),
            "minimum" if exclusive => Some(format!("must be greater than {n}")),
            "minimum" => Some(format!("must be at least {n}")),
            "maxLength" => Some(format!("must be at most {n} characters long")),
            "minLength" => Some(format!("must be at least {n} characters long")),
            "maxItems" => Some(format!("must have at most {n} items")),
            "minItems" => Some(format!("must have at least {n} items")),
            "maxProperties" => Some(format!("must have at most {n} properties")),
            "minProperties" => Some(format!("must have at least {n} properties")),
            "multipleOf" => Some(format!("must be a multiple of {n}")),
            "pattern" => Some(format!("must match the pattern {}", args.trim_matches('"'))),
            "uniqueItems" => Some("must not contain duplicate items".to_string()),
            _ => None,
        };
        if let Some(said) = said {
            return said;
        }
    }
    // `Type "string" expects an input value.`: a required parameter left out
    if rule.starts_with("Type \"") && rule.ends_with("expects an input value.") {
        return "is required".to_string();
    }
    // `failed to parse "integer_int64": invalid digit found in string`
    if let Some(ty) = rule
        .strip_prefix("failed to parse \"")
        .and_then(|r| r.split_once('"'))
        .map(|(ty, _)| ty)
    {
        let said = match ty.split_once('_') {
            Some(("integer", format)) => Some(format!("must be an integer ({format})")),
            None if ty == "integer" => Some("must be an integer".to_string()),
            _ if ty == "number" || ty.starts_with("number_") => {
                Some("must be a number".to_string())
            }
            None if ty == "boolean" => Some("must be true or false".to_string()),
            Some(("string", "date-time")) => Some("must be an RFC 3339 date-time".to_string()),
            Some(("string", "date")) => Some("must be a date (YYYY-MM-DD)".to_string()),
            _ => None,
        };
        if let Some(said) = said {
            return said;
        }
    }
    rule.to_string()
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

/// What a generated glue method returns: the operation's response enum, or a [`Rejection`].
pub type Answer<T> = Result<T, Rejection>;

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

#[cfg(test)]
mod tests {
    use super::parameter_reason;

    #[test]
    fn poem_openapis_reasons_read_like_the_body_validators() {
        for (reason, said) in [
            (
                "verification failed. maximum(100, exclusive: false)",
                "must be at most 100",
            ),
            (r#"Type "string" expects an input value."#, "is required"),
            (
                "verification failed. maximum(1.5, exclusive: true)",
                "must be less than 1.5",
            ),
            (
                "verification failed. minimum(1, exclusive: false)",
                "must be at least 1",
            ),
            (
                "verification failed. minimum(0, exclusive: true)",
                "must be greater than 0",
            ),
            (
                "verification failed. maxLength(255)",
                "must be at most 255 characters long",
            ),
            (
                "verification failed. minLength(2)",
                "must be at least 2 characters long",
            ),
            (
                "verification failed. maxItems(3)",
                "must have at most 3 items",
            ),
            (
                "verification failed. minItems(1)",
                "must have at least 1 items",
            ),
            (
                "verification failed. multipleOf(5)",
                "must be a multiple of 5",
            ),
            (
                r#"verification failed. pattern("^[A-Z]{3}$")"#,
                "must match the pattern ^[A-Z]{3}$",
            ),
            (
                "verification failed. uniqueItems()",
                "must not contain duplicate items",
            ),
            (
                r#"failed to parse "integer_int64": invalid digit found in string"#,
                "must be an integer (int64)",
            ),
            (
                r#"failed to parse "number_double": invalid float literal"#,
                "must be a number",
            ),
            (
                r#"failed to parse "boolean": provided string was not `true` or `false`"#,
                "must be true or false",
            ),
            (
                r#"failed to parse "string_date-time": premature end of input"#,
                "must be an RFC 3339 date-time",
            ),
            (
                "`x` is not a known SortOrder",
                "`x` is not a known SortOrder",
            ),
        ] {
            assert_eq!(parameter_reason(reason), said, "{reason}");
        }
    }
}
