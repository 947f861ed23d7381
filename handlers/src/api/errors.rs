//! The one mapping from failures to the wire.
//!
//! Design note. Domain modules return their own `thiserror` enums that know nothing of HTTP.
//! Each converts into [`ApiError`] here (status, `type`, stable `code`, message, `details`), and
//! [`fail`] turns an `ApiError` into the variant of whichever response enum the operation has,
//! through the generated `ErrorVariants` (so no handler matches on statuses). A status the
//! operation does not declare is a contract bug: it is logged and answered as a 500, never sent.
//!
//! 5xx bodies carry only the request id; the cause is logged with the same id. Two 503s are not
//! failures of the server but of the moment, and both carry the `Retry-After` that
//! [`RETRY_AFTER_SECS`] sets: `transaction_conflict` (every attempt of a transaction lost a race
//! for the same rows, see `crate::store`; nothing was applied, the request may be sent again as
//! it is) and `request_timeout` (the request outlasted `request_timeout_secs`, typically queued
//! behind a storm of writes; a write caught at its commit may have been applied, so it is sent
//! again with its `Idempotency-Key`, or its resource read).

use std::collections::BTreeMap;

use bank_api::models::{Error, ErrorType};
use bank_api::runtime::{ErrorVariants, RequestError, RequestErrorKind};
use poem::http::StatusCode;

use crate::domain::Fault;
use crate::domain::bank_accounts::BankAccountError;
use crate::domain::counterparties::CounterpartyError;
use crate::domain::documents::DocumentError;
use crate::domain::entities::EntityError;
use crate::domain::events::EventError;
use crate::domain::history::HistoryError;
use crate::domain::platforms::PlatformError;
use crate::domain::positive_pay::PositivePayError;
use crate::domain::rate_limit::Decision;
use crate::domain::transfers::TransferError;
use crate::domain::webhooks::WebhookError;
use crate::idempotency::{IdempotencyError, WriteError};
use crate::model::page::PaginationError;

/// The code of a request whose transaction kept conflicting with others.
pub const TRANSACTION_CONFLICT: &str = "transaction_conflict";

/// The code of a request that did not finish within the server's request timeout.
pub const REQUEST_TIMEOUT: &str = "request_timeout";

/// The code of a request that met the database unreachable (a restart, a lost connection).
pub const DATABASE_UNAVAILABLE: &str = "database_unavailable";

/// The code of a write refused because the database could not grow.
pub const STORAGE_FULL: &str = "storage_full";

/// The `Retry-After` of a 503 `storage_full` (seconds): space comes back when someone acts.
pub const STORAGE_FULL_RETRY_AFTER_SECS: u32 = 30;

/// The `Retry-After` of a 503 (seconds): contention on a few rows clears within a second.
pub const RETRY_AFTER_SECS: u32 = 1;

tokio::task_local! {
    /// The id of the request being served (set by the request-id middleware).
    pub static REQUEST_ID: String;
}

/// What serving a request learnt that its log line and response headers tell, beyond the
/// response itself.
#[derive(Debug, Default)]
pub struct RequestNotes {
    /// The platform the request authenticated as.
    pub platform: Option<String>,
    /// The `Retry-After` of a 503 whose cause clears slower than a conflict.
    pub retry_after: Option<u32>,
    /// The key's rate limit, when limits are on.
    pub rate_limit: Option<Decision>,
}

tokio::task_local! {
    /// The notes of the request being served (set up by the request-id middleware).
    pub static REQUEST_NOTES: std::cell::RefCell<RequestNotes>;
}

fn note(f: impl FnOnce(&mut RequestNotes)) {
    let _ = REQUEST_NOTES.try_with(|n| f(&mut n.borrow_mut()));
}

/// Records the request's platform for its log line (nothing outside a request).
pub fn note_platform(platform_id: &str) {
    note(|n| n.platform = Some(platform_id.to_owned()));
}

/// Records the `Retry-After` the request's 503 should carry.
pub fn note_retry_after(secs: u32) {
    note(|n| n.retry_after = Some(secs));
}

/// Records the key's rate limit for the response's `RateLimit` fields.
pub fn note_rate_limit(decision: Decision) {
    note(|n| n.rate_limit = Some(decision));
}

/// The current request id, or `-` outside a request.
pub fn request_id() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| "-".to_owned())
}

/// A failure as the wire shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub kind: ErrorType,
    pub code: &'static str,
    pub message: String,
    pub details: Option<BTreeMap<String, String>>,
}

impl ApiError {
    pub fn new(
        status: u16,
        kind: ErrorType,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            kind,
            code,
            message: message.into(),
            details: None,
        }
    }

    /// 400 `invalid_request` for one field.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let mut details = BTreeMap::new();
        details.insert(field.to_owned(), message.clone());
        ApiError {
            details: Some(details),
            ..ApiError::new(
                400,
                ErrorType::RequestValidationError,
                "invalid_request",
                format!("{field} {message}"),
            )
        }
    }

    /// 400 `invalid_request` naming every offending field.
    pub fn invalid_fields(details: BTreeMap<String, String>) -> Self {
        let fields: Vec<&str> = details.keys().map(String::as_str).collect();
        let message = format!("invalid fields: {}", fields.join(", "));
        ApiError::new(
            400,
            ErrorType::RequestValidationError,
            "invalid_request",
            message,
        )
        .with_details(details)
    }

    /// 404 `<resource>_not_found`.
    pub fn not_found(kind: ErrorType, code: &'static str, what: &str) -> Self {
        ApiError::new(404, kind, code, format!("{what} not found"))
    }

    /// 500 with only the request id in the message; `cause` goes to the log.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        let id = request_id();
        tracing::error!(request_id = %id, error = %cause, "internal error");
        ApiError::new(
            500,
            ErrorType::ServerError,
            "internal_error",
            format!("internal error (request id {id})"),
        )
    }

    /// 503 `request_timeout`: the request outlasted the server's limit and was abandoned. Its
    /// future was dropped at an await: a write waiting for a connection, a lock or its turn at
    /// the writer applied nothing, but one whose commit was already under way may have been
    /// applied, and the message says so (a read timed out has nothing to learn, and the
    /// message, shared by both, says it of requests that write).
    pub fn request_timeout(cause: &str) -> Self {
        let id = request_id();
        tracing::warn!(request_id = %id, cause, "request timed out");
        ApiError::new(
            503,
            ErrorType::ServerError,
            REQUEST_TIMEOUT,
            format!(
                "the request did not finish in time; a request that writes may or may not have \
                 been applied: send it again with the same Idempotency-Key, or read the resource, \
                 to learn its outcome (request id {id})"
            ),
        )
    }

    /// 503 `transaction_conflict`: every attempt of the transaction failed retryably.
    pub fn transaction_conflict() -> Self {
        ApiError::new(
            503,
            ErrorType::ServerError,
            TRANSACTION_CONFLICT,
            format!(
                "the request conflicted with concurrent requests on the same data and was not \
                 applied; send it again (request id {})",
                request_id()
            ),
        )
    }

    /// 503 `database_unavailable`: the database could not be reached (after the retries of a
    /// lost connection). When the connection was lost while committing, the write may have
    /// been applied, and the message says how to learn the outcome.
    pub fn database_unavailable(detail: &str, applied_unknown: bool) -> Self {
        let id = request_id();
        // The operator's concern, unlike a conflict or a timeout: the database is gone.
        tracing::error!(request_id = %id, cause = detail, "database unavailable");
        let outcome = if applied_unknown {
            "the connection was lost while the request was being committed, so it may or may \
             not have been applied: send it again with the same Idempotency-Key, or read the \
             resource, to learn its outcome"
        } else {
            "nothing of the request was applied: send it again"
        };
        ApiError::new(
            503,
            ErrorType::ServerError,
            DATABASE_UNAVAILABLE,
            format!("the database is unavailable; {outcome} (request id {id})"),
        )
    }

    /// 503 `storage_full`: the database could not grow; nothing of the request was kept.
    pub fn storage_full() -> Self {
        note_retry_after(STORAGE_FULL_RETRY_AFTER_SECS);
        ApiError::new(
            503,
            ErrorType::ServerError,
            STORAGE_FULL,
            format!(
                "the server's storage is full and the request was not applied; reads still \
                 work, and writes resume once space is freed: send it again later (request id {})",
                request_id()
            ),
        )
    }

    pub fn with_details(mut self, details: BTreeMap<String, String>) -> Self {
        self.details = Some(details);
        self
    }

    /// The error body.
    pub fn body(&self) -> Error {
        Error {
            r#type: self.kind,
            code: self.code.to_owned(),
            message: self.message.clone(),
            documentation_url: documentation_url(self.code),
            details: self.details.clone(),
        }
    }
}

/// A link into the served `/docs` for an error code.
pub fn documentation_url(code: &str) -> String {
    let base = DOCS_BASE
        .get()
        .map(String::as_str)
        .unwrap_or("http://127.0.0.1:8080");
    format!("{base}/docs#error-{code}")
}

/// Where `/docs` is served (set once at start-up from the configuration).
pub static DOCS_BASE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The variant of `R` for `error`; an undeclared status becomes the declared server failure.
pub fn fail<R: ErrorVariants<Error>>(error: ApiError) -> R {
    let status = error.status;
    let code = error.code;
    R::from_error(status, error.body()).unwrap_or_else(|| {
        let fallback = ApiError::internal(&format!(
            "contract bug: status {status} ({code}) is not declared for this operation"
        ));
        R::server_failure(fallback.body())
    })
}

impl From<Fault> for ApiError {
    fn from(e: Fault) -> Self {
        match e {
            // The client's input, wherever it slipped past validation (e.g. a query parameter).
            Fault::UnstorableText => ApiError::new(
                400,
                ErrorType::RequestValidationError,
                "invalid_request",
                "text must not contain NUL or characters the database cannot store",
            ),
            // Retries happen below the domain; a conflict that reaches here had none left.
            Fault::Conflict(_) => ApiError::transaction_conflict(),
            // As if the request timeout had struck while it waited, which it nearly did.
            Fault::Busy(detail) => ApiError::request_timeout(&detail),
            Fault::StorageFull => ApiError::storage_full(),
            Fault::Unavailable {
                detail,
                applied_unknown,
            } => ApiError::database_unavailable(&detail, applied_unknown),
            Fault::Internal(detail) => ApiError::internal(&detail),
        }
    }
}

impl From<PaginationError> for ApiError {
    fn from(e: PaginationError) -> Self {
        use PaginationError as P;
        let t = ErrorType::RequestValidationError;
        match e {
            P::InvalidLimit => {
                ApiError::new(400, t, "invalid_limit", "limit must be between 1 and 100")
                    .with_details(BTreeMap::from([(
                        "limit".to_owned(),
                        "must be between 1 and 100".to_owned(),
                    )]))
            }
            P::ConflictingCursors => ApiError::new(
                400,
                t,
                "conflicting_pagination_cursors",
                "starting_after and ending_before are mutually exclusive",
            ),
            P::InvalidCursor => ApiError::new(
                400,
                t,
                "invalid_pagination_cursor",
                "the cursor is not an object of this list",
            ),
        }
    }
}

impl From<IdempotencyError> for ApiError {
    fn from(e: IdempotencyError) -> Self {
        let t = ErrorType::IdempotencyError;
        match e {
            IdempotencyError::InvalidKey => ApiError::invalid_field(
                "Idempotency-Key",
                "must be 1 to 255 printable ASCII characters",
            ),
            IdempotencyError::InUse => ApiError::new(
                409,
                t,
                "idempotency_key_in_use",
                "a request with this Idempotency-Key is still running",
            ),
            IdempotencyError::Reused => ApiError::new(
                422,
                t,
                "idempotency_key_reused",
                "this Idempotency-Key was used with a different request",
            ),
            IdempotencyError::Store(e) => Fault::from(e).into(),
        }
    }
}

impl<E: Into<ApiError>> From<WriteError<E>> for ApiError {
    fn from(e: WriteError<E>) -> Self {
        match e {
            WriteError::Rule(e) => e.into(),
            WriteError::Idempotency(e) => e.into(),
        }
    }
}

/// The refusal before any handler ran for a conflict that outlasted its retries (the key
/// check's read).
pub fn conflict_request_error() -> RequestError {
    RequestError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        kind: RequestErrorKind::Other,
        message: TRANSACTION_CONFLICT.to_owned(),
        details: BTreeMap::new(),
    }
}

/// The code of a request over its key's rate limit.
pub const RATE_LIMITED: &str = "rate_limited";

/// The refusal of a request over its key's rate limit (before anything of it ran).
pub fn rate_limited_request_error() -> RequestError {
    RequestError {
        status: StatusCode::TOO_MANY_REQUESTS,
        kind: RequestErrorKind::Other,
        message: RATE_LIMITED.to_owned(),
        details: BTreeMap::new(),
    }
}

/// The refusal of a request that outlasted the server's request timeout.
pub fn timeout_request_error() -> RequestError {
    RequestError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        kind: RequestErrorKind::Other,
        message: REQUEST_TIMEOUT.to_owned(),
        details: BTreeMap::new(),
    }
}

/// The refusal of a request whose key could not be checked: the database is unavailable.
pub fn unavailable_request_error() -> RequestError {
    RequestError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        kind: RequestErrorKind::Other,
        message: DATABASE_UNAVAILABLE.to_owned(),
        details: BTreeMap::new(),
    }
}

/// Whether `error` is the 503 whose message is `code` (one of those above).
fn is_unavailable(error: &RequestError, code: &str) -> bool {
    error.status == StatusCode::SERVICE_UNAVAILABLE && error.message == code
}

/// The body for a refusal that happened before any handler ran.
pub fn request_error(error: &RequestError) -> (StatusCode, ApiError) {
    let t = ErrorType::RequestValidationError;
    let details = (!error.details.is_empty()).then(|| error.details.clone());
    let api = match error.kind {
        RequestErrorKind::Unauthorized => ApiError::new(
            401,
            ErrorType::AuthenticationError,
            "unauthorized",
            "missing or invalid credentials: send the API key as the Basic auth password",
        ),
        RequestErrorKind::InvalidRequest | RequestErrorKind::TooLarge => {
            let code = if error.kind == RequestErrorKind::TooLarge {
                // Only a multipart file part over the limit names its part in `details`, and the
                // document upload is the only operation with file parts (the JSON limit does not).
                if error.details.is_empty() {
                    "request_too_large"
                } else {
                    "document_too_large"
                }
            } else if error.details.len() == 1 && error.details.contains_key("limit") {
                "invalid_limit"
            } else {
                "invalid_request"
            };
            ApiError {
                details,
                ..ApiError::new(400, t, code, error.message.clone())
            }
        }
        RequestErrorKind::RouteNotFound => {
            ApiError::new(404, t, "route_not_found", "no such route")
        }
        RequestErrorKind::MethodNotAllowed => ApiError::new(
            405,
            t,
            "method_not_allowed",
            "method not allowed on this route",
        ),
        // The document declares 400 for malformed requests, and a body without (or with the
        // wrong) media type is one; 415 would be an undeclared status.
        RequestErrorKind::UnsupportedMediaType => {
            ApiError::new(400, t, "unsupported_media_type", error.message.clone()).with_details(
                BTreeMap::from([("Content-Type".to_owned(), error.message.clone())]),
            )
        }
        RequestErrorKind::Other if is_unavailable(error, TRANSACTION_CONFLICT) => {
            ApiError::transaction_conflict()
        }
        RequestErrorKind::Other if is_unavailable(error, DATABASE_UNAVAILABLE) => {
            ApiError::database_unavailable("the API key could not be checked", false)
        }
        RequestErrorKind::Other if is_unavailable(error, REQUEST_TIMEOUT) => {
            ApiError::request_timeout(
                "out of time: the request timeout, or no database connection free",
            )
        }
        RequestErrorKind::Other
            if error.status == StatusCode::TOO_MANY_REQUESTS && error.message == RATE_LIMITED =>
        {
            ApiError::new(
                429,
                ErrorType::RateLimitError,
                RATE_LIMITED,
                "too many requests for this API key: send it again after the Retry-After delay \
                 (the RateLimit-Policy header gives the limit)",
            )
        }
        RequestErrorKind::Other if error.status.is_server_error() => {
            ApiError::internal(&error.message)
        }
        RequestErrorKind::Other => ApiError::new(
            error.status.as_u16(),
            t,
            "invalid_request",
            error.message.clone(),
        ),
    };
    (
        StatusCode::from_u16(api.status).unwrap_or(error.status),
        api,
    )
}

impl From<PlatformError> for ApiError {
    fn from(e: PlatformError) -> Self {
        use PlatformError as P;
        match e {
            P::InvalidSetting(field, message) => ApiError::invalid_field(field, message),
            P::InvalidName => ApiError::invalid_field("name", e.to_string()),
            // The principal's platform always exists; anything else is the server's failure.
            P::NotFound | P::AccountNumbersExhausted => ApiError::internal(&e),
            P::Store(e) => Fault::from(e).into(),
        }
    }
}

// ------------------------------------------------------------------- the domain errors
//
// Every domain error's answer (status, type, code, details), in one place.

/// "invalid request: a x; b y" over the offending fields, like the framework's own messages.
fn summary(prefix: &str, details: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = details.iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!("{prefix}: {}", parts.join("; "))
}

fn field_error(kind: ErrorType, code: &'static str, field: &str, message: String) -> ApiError {
    ApiError::new(400, kind, code, format!("{field} {message}"))
        .with_details(BTreeMap::from([(field.to_owned(), message)]))
}

fn one_field(field: &str, message: impl Into<String>) -> BTreeMap<String, String> {
    BTreeMap::from([(field.to_owned(), message.into())])
}

impl From<BankAccountError> for ApiError {
    fn from(e: BankAccountError) -> Self {
        use BankAccountError as E;
        let t = ErrorType::BankAccountError;
        match e {
            E::NotFound => ApiError::not_found(t, "bank_account_not_found", "bank account"),
            E::EntityNotFound => {
                ApiError::not_found(ErrorType::EntityError, "entity_not_found", "entity")
            }
            E::AccountNumberNotFound => ApiError::not_found(
                ErrorType::AccountNumberError,
                "account_number_not_found",
                "account number",
            ),
            E::InvalidField(field, message) => ApiError::invalid_field(field, message),
            E::UnsupportedCurrency(code) => field_error(
                ErrorType::RequestValidationError,
                "unsupported_currency",
                "currency_code",
                format!("`{code}` is not a supported currency"),
            ),
            E::EntityNotVerified => field_error(
                ErrorType::EntityError,
                "entity_not_verified",
                "entity_id",
                "must be a VERIFIED entity".to_owned(),
            ),
            E::InvalidOverdraftReserve => field_error(
                t,
                "invalid_overdraft_reserve_account",
                "overdraft_reserve_account_id",
                "must be the platform's OVERDRAFT_RESERVE account".to_owned(),
            ),
            E::NotOpen(status) => ApiError::new(
                400,
                t,
                "bank_account_not_open",
                format!(
                    "the bank account is {status}: it takes no new account numbers or money movements"
                ),
            ),
            E::BalanceNotZero => ApiError::new(
                400,
                t,
                "bank_account_balance_not_zero",
                "a bank account can be deleted only when all four balances are zero",
            ),
            E::Overdrawn => ApiError::new(
                400,
                t,
                "bank_account_overdrawn",
                "the bank account is overdrawn: its overdraft settings can change only once its \
                 available amount is back at zero or above",
            ),
            E::RootAccount => ApiError::new(
                400,
                t,
                "invalid_request",
                "the platform's root accounts (PROGRAM_RESERVE, OVERDRAFT_RESERVE, NETWORK_SETTLEMENT_ACCOUNT) cannot be deleted",
            ),
            E::AccountNumbersExhausted => ApiError::internal(&e),
            E::Pagination(e) => e.into(),
            E::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<HistoryError> for ApiError {
    fn from(e: HistoryError) -> Self {
        let t = ErrorType::BankAccountError;
        match e {
            HistoryError::NotFound => {
                ApiError::not_found(t, "bank_account_not_found", "bank account")
            }
            HistoryError::TimeZoneNotSet => ApiError::new(
                400,
                ErrorType::PlatformError,
                "reporting_time_zone_not_set",
                "set the platform's reporting_time_zone (PATCH /platform) before reading history",
            ),
            HistoryError::InvalidDateRange(field, message) => field_error(
                ErrorType::RequestValidationError,
                "invalid_date_range",
                field,
                message,
            ),
            HistoryError::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<TransferError> for ApiError {
    fn from(e: TransferError) -> Self {
        use TransferError as E;
        let message = e.to_string();
        let transfer = ErrorType::TransferError;
        let shape = ErrorType::RequestValidationError;
        match e {
            E::Invalid(details) => {
                let message = details
                    .iter()
                    .map(|(field, problem)| format!("{field} {problem}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                ApiError::new(400, shape, "invalid_request", message).with_details(details)
            }
            E::UnsupportedCurrency(_) => {
                ApiError::new(400, shape, "unsupported_currency", message.clone())
                    .with_details(one_field("currency_code", message))
            }
            E::SameAccount(field) => {
                ApiError::invalid_field(field, "must name a bank account other than the sender's")
            }
            E::AmountOverflow => {
                ApiError::invalid_field("amount", "is too large: a balance would overflow")
            }
            E::BankAccountNotFound => ApiError::not_found(
                ErrorType::BankAccountError,
                "bank_account_not_found",
                "bank account",
            ),
            E::AccountNumberNotFound => ApiError::not_found(
                ErrorType::AccountNumberError,
                "account_number_not_found",
                "account number",
            ),
            E::BookTransferNotFound => {
                ApiError::not_found(transfer, "book_transfer_not_found", "book transfer")
            }
            E::AchTransferNotFound => {
                ApiError::not_found(transfer, "ach_transfer_not_found", "ACH transfer")
            }
            E::NotOpen(..) => ApiError::new(
                400,
                ErrorType::BankAccountError,
                "bank_account_not_open",
                message,
            ),
            E::CurrencyMismatch(..) => {
                ApiError::new(400, transfer, "currency_mismatch", message.clone())
                    .with_details(one_field("currency_code", message))
            }
            E::InsufficientFunds => ApiError::new(
                400,
                transfer,
                "insufficient_funds",
                "the sender's available amount (and its overdraft reserve, where allowed) cannot cover the amount",
            ),
            E::NotOnHold(_) => ApiError::new(400, transfer, "transfer_not_on_hold", message),
            E::Internal(_) => ApiError::internal(&message),
            E::Pagination(e) => e.into(),
            E::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<CounterpartyError> for ApiError {
    fn from(e: CounterpartyError) -> Self {
        match e {
            CounterpartyError::InvalidFields(details) => ApiError::invalid_fields(details),
            CounterpartyError::NotFound => ApiError::not_found(
                ErrorType::CounterpartyError,
                "counterparty_not_found",
                "counterparty",
            ),
            CounterpartyError::Pagination(e) => e.into(),
            CounterpartyError::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<DocumentError> for ApiError {
    fn from(e: DocumentError) -> Self {
        use DocumentError as D;
        let t = ErrorType::DocumentError;
        match e {
            D::NotFound => ApiError::not_found(t, "document_not_found", "document"),
            D::EntityNotFound => {
                ApiError::not_found(ErrorType::EntityError, "entity_not_found", "entity")
            }
            D::TypeNotAllowed => ApiError::new(400, t, "document_type_not_allowed", e.to_string()),
            D::InvalidSignature => ApiError::new(
                401,
                ErrorType::AuthenticationError,
                "invalid_signature",
                e.to_string(),
            ),
            D::InvalidField(field, message) => ApiError::invalid_field(field, message),
            D::Pagination(e) => e.into(),
            D::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<EntityError> for ApiError {
    fn from(e: EntityError) -> Self {
        use EntityError as E;
        let t = ErrorType::EntityError;
        let v = ErrorType::RequestValidationError;
        match e {
            E::NotFound => ApiError::not_found(t, "entity_not_found", "entity"),
            E::InvalidFields(details) => ApiError::new(
                400,
                v,
                "invalid_request",
                summary("invalid request", &details),
            )
            .with_details(details),
            E::TypeMismatch(message) => ApiError::new(400, t, "entity_type_mismatch", message),
            E::AlreadyLinked => {
                ApiError::new(400, t, "associated_person_already_linked", e.to_string())
            }
            E::HasBankAccounts => ApiError::new(400, t, "entity_has_bank_accounts", e.to_string()),
            E::InvalidAdditionalRequirements(details) => ApiError::new(
                400,
                v,
                "invalid_additional_requirements",
                summary("invalid additional requirements", &details),
            )
            .with_details(details),
            E::Pagination(e) => e.into(),
            E::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<PositivePayError> for ApiError {
    fn from(e: PositivePayError) -> Self {
        match e {
            PositivePayError::InvalidFields(details) => ApiError::invalid_fields(details),
            PositivePayError::BankAccountNotFound => ApiError::not_found(
                ErrorType::BankAccountError,
                "bank_account_not_found",
                "bank account",
            ),
            PositivePayError::NotFound => ApiError::not_found(
                ErrorType::PositivePayError,
                "ach_positive_pay_rule_not_found",
                "ACH positive pay rule",
            ),
            PositivePayError::Duplicate => ApiError::new(
                400,
                ErrorType::PositivePayError,
                "duplicate_ach_positive_pay_rule",
                e.to_string(),
            ),
            PositivePayError::Pagination(e) => e.into(),
            PositivePayError::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<EventError> for ApiError {
    fn from(e: EventError) -> Self {
        match e {
            EventError::NotFound => {
                ApiError::not_found(ErrorType::EventError, "event_not_found", "event")
            }
            EventError::Pagination(e) => e.into(),
            EventError::Store(e) => Fault::from(e).into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        let t = ErrorType::WebhookError;
        match e {
            WebhookError::Invalid(details) => ApiError::invalid_fields(details),
            WebhookError::InvalidUrl(message) => {
                field_error(t, "invalid_webhook_url", "url", message)
            }
            WebhookError::EndpointNotFound => {
                ApiError::not_found(t, "webhook_endpoint_not_found", "webhook endpoint")
            }
            WebhookError::DeliveryNotFound => {
                ApiError::not_found(t, "webhook_delivery_not_found", "webhook delivery")
            }
            WebhookError::Pagination(e) => e.into(),
            WebhookError::Store(e) => Fault::from(e).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_of_no_free_connection_is_503_request_timeout() {
        // The store's pool timeout becomes `Fault::Busy` in the domain (its own test there).
        let api = ApiError::from(Fault::Busy("pool timed out".into()));
        assert_eq!((api.status, api.code), (503, REQUEST_TIMEOUT), "{api:?}");
        assert!(!api.message.contains("pool"), "{api:?}");
        assert!(
            !api.message.contains("  "),
            "one space between words: {api:?}"
        );
        let api = ApiError::from(Fault::Internal("disk on fire".into()));
        assert_eq!((api.status, api.code), (500, "internal_error"));
    }

    #[test]
    fn the_two_refusals_before_a_handler_keep_their_codes() {
        let (status, api) = request_error(&timeout_request_error());
        assert_eq!((status.as_u16(), api.code), (503, REQUEST_TIMEOUT));
        let (status, api) = request_error(&conflict_request_error());
        assert_eq!((status.as_u16(), api.code), (503, TRANSACTION_CONFLICT));
    }
}
