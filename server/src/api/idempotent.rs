//! Writes in one transaction, with or without an `Idempotency-Key`.
//!
//! Every create handler goes through [`write`]: without a key it is one retried write
//! transaction; with a key it is [`crate::idempotency::execute`] (reserve, effects, stored
//! response, commit — one transaction), and a replay answers the stored bytes. The stored body
//! is exactly what the handler serves (`serde_json` of the wire value), so a replay is
//! byte-for-byte the first answer; handlers add `Idempotent-Replayed: true`.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::errors::ApiError;
use crate::app::AppState;
use crate::auth::Principal;
use crate::idempotency::{
    self, IdempotencyError, IdempotencyKey, Outcome, RequestFingerprint, StoredResponse,
    WriteRequest,
};
use crate::store::{BoxFuture, Conflict, Retryable, StoreError, Tx};

/// A failure inside a write transaction, keeping whether a retry may help.
#[derive(Debug)]
pub enum TxError {
    /// Retry the whole transaction when retryable (busy database, serialization failure).
    Store(StoreError),
    Idempotency(IdempotencyError),
    /// A final answer (validation, not found, business rule).
    Api(ApiError),
    /// A domain error around a retryable store failure, already mapped (503
    /// `transaction_conflict`): the transaction runs again while attempts remain.
    Conflict(Conflict, ApiError),
}

impl TxError {
    /// A domain error: final ones mapped to their answer, retryable ones kept retryable.
    fn domain<E: Retryable + Into<ApiError>>(error: E) -> TxError {
        match error.conflict() {
            Some(conflict) => TxError::Conflict(conflict, error.into()),
            None => TxError::Api(error.into()),
        }
    }
}

/// `From<DomainError> for TxError` for each domain error a write closure may return.
macro_rules! from_domain_errors {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for TxError {
            fn from(e: $error) -> Self {
                TxError::domain(e)
            }
        }
    )*};
}

from_domain_errors!(
    crate::domain::bank_accounts::BankAccountError,
    crate::domain::counterparties::CounterpartyError,
    crate::domain::documents::DocumentError,
    crate::domain::entities::EntityError,
    crate::domain::positive_pay::PositivePayError,
    crate::domain::transfers::TransferError,
);

impl From<StoreError> for TxError {
    fn from(e: StoreError) -> Self {
        TxError::Store(e)
    }
}

impl From<IdempotencyError> for TxError {
    fn from(e: IdempotencyError) -> Self {
        TxError::Idempotency(e)
    }
}

impl From<ApiError> for TxError {
    fn from(e: ApiError) -> Self {
        TxError::Api(e)
    }
}

impl Retryable for TxError {
    fn conflict(&self) -> Option<Conflict> {
        match self {
            TxError::Store(e) => e.conflict(),
            TxError::Idempotency(e) => e.conflict(),
            TxError::Conflict(conflict, _) => Some(*conflict),
            TxError::Api(_) => None,
        }
    }
}

impl From<TxError> for ApiError {
    fn from(e: TxError) -> Self {
        match e {
            TxError::Store(e) => e.into(),
            TxError::Idempotency(e) => e.into(),
            TxError::Api(e) | TxError::Conflict(_, e) => e,
        }
    }
}

/// The result of [`write`]: the value, and whether it is a replay of an earlier request.
pub struct Written<T> {
    pub value: T,
    pub replayed: bool,
}

impl<T> Written<T> {
    /// The `Idempotent-Replayed` header value.
    pub fn replayed_header(&self) -> Option<String> {
        self.replayed.then(|| "true".to_owned())
    }
}

/// Runs `effects` in one write transaction; with `key`, at most once per (platform, key).
///
/// `fingerprint` identifies the request (method, path template with ids, and the body as
/// received), so a reuse with a different request is refused (422).
pub async fn write<'s, T, F>(
    state: &AppState,
    principal: &Principal,
    key: Option<&str>,
    fingerprint: (&str, &str, &[u8]),
    mut effects: F,
) -> Result<Written<T>, ApiError>
where
    T: Serialize + DeserializeOwned + Send + 's,
    F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, TxError>> + Send,
{
    let Some(key) = key else {
        let value = state.db.write(|tx| effects(tx)).await?;
        return Ok(Written {
            value,
            replayed: false,
        });
    };
    let key = IdempotencyKey::parse(key)?;
    let (method, path, body) = fingerprint;
    let fingerprint = RequestFingerprint::new(method, path, body);
    let outcome: Result<Outcome<T>, TxError> = idempotency::execute(
        &state.db,
        state.clock.as_ref(),
        &principal.platform_id,
        &key,
        &fingerprint,
        |tx| {
            let fut = effects(tx);
            Box::pin(async move {
                let value = fut.await?;
                let body = wire_bytes(&value)?;
                Ok((value, StoredResponse { status: 200, body }))
            })
        },
    )
    .await;
    match outcome? {
        Outcome::Fresh { value, .. } => Ok(Written {
            value,
            replayed: false,
        }),
        Outcome::Replayed(stored) => {
            let value = serde_json::from_slice(&stored.body).map_err(|e| {
                ApiError::internal(&format!("stored idempotent response is unreadable: {e}"))
            })?;
            Ok(Written {
                value,
                replayed: true,
            })
        }
    }
}

/// The bytes the server sends for `value`: those of the response body type every handler
/// answers with (`bank_api::runtime::Json`).
fn wire_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, TxError> {
    bank_api::runtime::json_bytes(value).map_err(|e| TxError::Api(ApiError::internal(&e)))
}

/// The `Idempotency-Key` and fingerprint of a `POST` to `path` with `body`, for a service.
pub fn write_request<'a>(key: Option<&'a str>, path: &'a str, body: &'a [u8]) -> WriteRequest<'a> {
    WriteRequest {
        key,
        method: "POST",
        path,
        body,
    }
}

/// The `Idempotent-Replayed` header value of a service's answer.
pub fn replayed_header(replayed: bool) -> Option<String> {
    replayed.then(|| "true".to_owned())
}

/// The fingerprint body of a typed request: its canonical JSON.
pub fn body_bytes<B: Serialize>(body: &B) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}
