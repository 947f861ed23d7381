//! Bodies the server writes: JSON responses written straight from the typed value ([`Json`]),
//! `date-time` fields, the empty body, response enums' error variants, and callback requests.

use poem::http::StatusCode;
use poem::{IntoResponse, Response};
use poem_openapi::payload::Payload;
use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::Type;

/// One error response of an operation: its status (`None` for `default`) and how its variant is
/// built from a body (the status is the one answered, which only `default` keeps).
pub type ErrorVariant<R, B> = (Option<u16>, fn(StatusCode, B) -> R);

/// Response enums whose error statuses all carry one body type `B` implement this, so a server
/// can map its errors once, generically, instead of once per operation.
///
/// The enum gives a table, [`ERRORS`](Self::ERRORS); what is the same for every operation
/// (finding a status, the fallback to `default`, the server failure) is written here once.
pub trait ErrorVariants<B: 'static>: Sized + 'static {
    /// Every error response the operation declares, in document order; never empty (the
    /// generator writes no implementation for an operation without errors).
    const ERRORS: &'static [ErrorVariant<Self, B>];

    /// The variant for `status` with `body`: the status's own, else `default`'s, else `None`
    /// (the operation does not declare it).
    fn from_error(status: u16, body: B) -> Option<Self> {
        let code = StatusCode::from_u16(status).ok()?;
        let (_, build) = find(Self::ERRORS, Some(status)).or_else(|| find(Self::ERRORS, None))?;
        Some(build(code, body))
    }

    /// The variant for a server failure: 500 if declared, else `default` (as a 500), else the
    /// first declared error. Total, so a server never needs a panic path to answer.
    fn server_failure(body: B) -> Self {
        const { assert!(!Self::ERRORS.is_empty(), "an error table is never empty") };
        let (_, build) = find(Self::ERRORS, Some(500))
            .or_else(|| find(Self::ERRORS, None))
            .unwrap_or(&Self::ERRORS[0]);
        build(StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}

fn find<R, B>(table: &[ErrorVariant<R, B>], status: Option<u16>) -> Option<&ErrorVariant<R, B>> {
    table.iter().find(|(s, _)| *s == status)
}

/// A JSON response body, written straight from the typed value.
///
/// Documents itself exactly as poem-openapi's `Json` does (same content type, the type's
/// schema), but poem-openapi's builds a `serde_json::Value` of the whole answer before writing
/// bytes: a map and a string for every field, which was a quarter of the server's time on a
/// page of 100 bank accounts.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T> std::ops::Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Type> Payload for Json<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

/// The bytes a [`Json`] body holds for `value`: serde_json's compact text, written straight from
/// the value. Anything that must equal what the server sends (a stored answer that is replayed,
/// for instance) takes its bytes from here.
pub fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(value)
}

impl<T: Type + serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match json_bytes(&self.0) {
            Ok(body) => Response::builder()
                .content_type(<Self as Payload>::CONTENT_TYPE)
                .body(body),
            // Generated types are structs, strings, numbers, lists and string-keyed maps, which
            // serde_json always writes; a failure would be a bug here, answered without detail.
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
}

/// `date-time` fields, written as chrono writes them (RFC 3339, `Z`, the shortest of 0, 3, 6 or 9
/// fraction digits that holds the value) without going through `core::fmt`.
///
/// chrono's `Serialize` formats through `Display`, which serde_json receives a few characters at
/// a time and scans for escapes piece by piece: with two timestamps an account, that was 8 % of
/// the server's time on a page of 100 accounts. The generator puts `serialize_with` on every
/// field whose schema is a `date-time` string. Anything outside the common case (a year outside
/// 0..=9999, a leap second) is left to chrono, so the text is always chrono's.
pub mod date_time {
    use chrono::{DateTime, Datelike, Timelike, Utc};

    /// The longest text of the common case: `9999-12-31T23:59:59.999999999Z`.
    const MAX_LEN: usize = 30;

    fn two(out: &mut [u8], at: usize, value: u32) {
        out[at] = b'0' + (value / 10) as u8;
        out[at + 1] = b'0' + (value % 10) as u8;
    }

    /// Writes `value` into `out` and answers the length, or `None` when chrono must do it.
    pub fn write(value: &DateTime<Utc>, out: &mut [u8; MAX_LEN]) -> Option<usize> {
        let year = value.year();
        let nanos = value.nanosecond();
        if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
            return None;
        }
        let year = year as u32;
        two(out, 0, year / 100);
        two(out, 2, year % 100);
        out[4] = b'-';
        two(out, 5, value.month());
        out[7] = b'-';
        two(out, 8, value.day());
        out[10] = b'T';
        two(out, 11, value.hour());
        out[13] = b':';
        two(out, 14, value.minute());
        out[16] = b':';
        two(out, 17, value.second());
        let (mut fraction, digits) = if nanos == 0 {
            (0, 0)
        } else if nanos.is_multiple_of(1_000_000) {
            (nanos / 1_000_000, 3)
        } else if nanos.is_multiple_of(1_000) {
            (nanos / 1_000, 6)
        } else {
            (nanos, 9)
        };
        let mut len = 19;
        if digits > 0 {
            out[19] = b'.';
            for i in (0..digits).rev() {
                out[20 + i] = b'0' + (fraction % 10) as u8;
                fraction /= 10;
            }
            len = 20 + digits;
        }
        out[len] = b'Z';
        Some(len + 1)
    }

    pub fn serialize<S: serde::Serializer>(
        value: &DateTime<Utc>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut out = [0u8; MAX_LEN];
        match write(value, &mut out).and_then(|len| std::str::from_utf8(&out[..len]).ok()) {
            Some(text) => serializer.serialize_str(text),
            None => serde::Serialize::serialize(value, serializer),
        }
    }

    pub fn serialize_option<S: serde::Serializer>(
        value: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serialize(value, serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// The body of a `default` response that declares none (poem-openapi needs one beside the
/// status): nothing is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoBody;

impl IntoResponse for NoBody {
    fn into_response(self) -> Response {
        Response::default()
    }
}

impl poem_openapi::ResponseContent for NoBody {
    fn media_types() -> Vec<poem_openapi::registry::MetaMediaType> {
        Vec::new()
    }
}

/// A callback request to send, built by a generated crate's `callbacks::requests`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackRequest {
    /// The `operationId` (or derived name) of the operation that declares the callback.
    pub operation: &'static str,
    /// The callback's name.
    pub callback: &'static str,
    /// The HTTP method, upper case.
    pub method: &'static str,
    /// The runtime expression of the URL (`{$request.body#/url}`), for the server to resolve.
    pub url_expression: &'static str,
    /// The body's media type, when there is a body.
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
}

/// A callback or webhook body in `application/x-www-form-urlencoded`, its error as JSON's (the
/// error type of a generated `requests`).
pub fn form_bytes<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    serde_urlencoded::to_string(value)
        .map(String::into_bytes)
        .map_err(<serde_json::Error as serde::ser::Error>::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Answer {
        NotFound(&'static str),
        Failed(&'static str, Option<String>),
        Other(StatusCode, &'static str),
    }

    impl ErrorVariants<&'static str> for Answer {
        const ERRORS: &'static [ErrorVariant<Self, &'static str>] = &[
            (Some(404), |_, b| Self::NotFound(b)),
            (Some(500), |_, b| Self::Failed(b, None)),
            (None, |s, b| Self::Other(s, b)),
        ];
    }

    enum Narrow {
        Gone(&'static str),
    }

    impl ErrorVariants<&'static str> for Narrow {
        const ERRORS: &'static [ErrorVariant<Self, &'static str>] =
            &[(Some(410), |_, b| Self::Gone(b))];
    }

    #[test]
    fn a_declared_status_is_its_variant_and_any_other_is_default() {
        assert_eq!(Answer::from_error(404, "x"), Some(Answer::NotFound("x")));
        assert_eq!(
            Answer::from_error(409, "y"),
            Some(Answer::Other(StatusCode::CONFLICT, "y"))
        );
        // Not a status at all: no variant, not a default with a made-up status.
        assert_eq!(Answer::from_error(1000, "z"), None);
        assert!(Narrow::from_error(404, "x").is_none());
    }

    #[test]
    fn a_server_failure_is_500_else_default_else_the_first_error() {
        assert_eq!(Answer::server_failure("f"), Answer::Failed("f", None));
        enum Defaulted {
            Other(StatusCode),
            Teapot,
        }
        impl ErrorVariants<()> for Defaulted {
            const ERRORS: &'static [ErrorVariant<Self, ()>] = &[
                (Some(418), |_, _| Self::Teapot),
                (None, |s, _| Self::Other(s)),
            ];
        }
        assert!(matches!(
            Defaulted::server_failure(()),
            Defaulted::Other(StatusCode::INTERNAL_SERVER_ERROR)
        ));
        assert!(matches!(
            Defaulted::from_error(418, ()),
            Some(Defaulted::Teapot)
        ));
        let Narrow::Gone(body) = Narrow::server_failure("g");
        assert_eq!(body, "g");
    }
}
