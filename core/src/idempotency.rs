//! `Idempotency-Key`: at most one execution per (platform, key), and the same answer after.
//!
//! Design note. Options considered:
//! - Two phases (insert an in-flight row and commit; run the request; store the response): the
//!   in-flight row is visible to duplicates, but a crash between the phases leaves a key stuck
//!   "in flight" until some timeout, and effects and response can disagree.
//! - Chosen: reserve, effects and response in **one** transaction ([`execute`]): the key row is
//!   inserted `in_flight`, the effects run, the row is completed with the response's status and
//!   body, and everything commits together; any failure rolls all of it back, so failed requests
//!   are never stored and a corrected retry may run.
//!
//! One transaction hides the in-flight row from other transactions, so a concurrent duplicate
//! must be detected without it, and without waiting (a waiting duplicate would only replay after
//! the first commits, while the contract says 409 `idempotency_key_in_use`):
//! - inside one process, a claim on (platform, key) taken before any connection is acquired
//!   ([`crate::store::Db::try_local_lock`]);
//! - across processes on PostgreSQL, a transaction-scoped advisory lock on a 64-bit hash of
//!   (platform, key), taken without waiting (`pg_try_advisory_xact_lock`). Two keys with the same
//!   64-bit hash could see a spurious 409; the odds are negligible.
//! - across processes on SQLite, the file lock serialises writers: a duplicate waits, then sees
//!   the completed row and replays. Acceptable: SQLite deployments are one process.
//!
//! After commit, a duplicate with the same request fingerprint (method, path, body) replays the
//! stored status and body byte for byte; a different fingerprint is "reused" (422). Records expire
//! after [`KEY_TTL`]: an older record counts as absent and [`purge_expired`] deletes them.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::model::ids::PlatformId;
use crate::store::idempotency::{self as repo, Claim};
use crate::store::{BoxFuture, Db, Retryable, StoreError, Tx};

/// How long a key is remembered.
pub const KEY_TTL: Duration = Duration::days(30);
/// Longest key.
pub const MAX_KEY_LEN: usize = 255;

/// Failures of idempotency handling. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum IdempotencyError {
    #[error("Idempotency-Key must be 1 to {MAX_KEY_LEN} printable ASCII characters")]
    InvalidKey,
    #[error("a request with this Idempotency-Key is still being processed")]
    InUse,
    #[error("this Idempotency-Key was used with a different request")]
    Reused,
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(IdempotencyError);

/// A validated key: 1..=255 characters, each printable ASCII (32..=126). Case sensitive.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<IdempotencyKey, IdempotencyError> {
        let ok = (1..=MAX_KEY_LEN).contains(&text.len())
            && text.bytes().all(|b| (32..=126).contains(&b));
        if ok {
            Ok(IdempotencyKey(text.to_owned()))
        } else {
            Err(IdempotencyError::InvalidKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What makes two requests "the same": SHA-256 over method, path and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFingerprint(String);

impl RequestFingerprint {
    pub fn new(method: &str, path: &str, body: &[u8]) -> RequestFingerprint {
        let mut hasher = Sha256::new();
        // Length prefixes keep ("a", "bc") and ("ab", "c") apart.
        for part in [method.as_bytes(), path.as_bytes(), body] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        RequestFingerprint(hex::encode(hasher.finalize()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A response as stored and replayed: status code and body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// The result of [`reserve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// The key is ours for this transaction: run the effects, then [`complete`].
    Fresh,
    /// The same request already completed: answer this.
    Replay(StoredResponse),
}

/// The result of [`execute`].
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The effects ran and committed with their response.
    Fresh { value: T, response: StoredResponse },
    /// An earlier identical request's response.
    Replayed(StoredResponse),
}

fn advisory_key(platform_id: &PlatformId, key: &IdempotencyKey) -> i64 {
    let digest = Sha256::new()
        .chain_update(b"bankd-idempotency\0")
        .chain_update(platform_id.as_str())
        .chain_update(b"\0")
        .chain_update(key.as_str())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// Reserves `key` inside `tx`, or says why not. Low level: [`execute`] adds the in-process
/// claim and the retry; use this directly only with the same care.
pub async fn reserve(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key: &IdempotencyKey,
    fingerprint: &RequestFingerprint,
    now: DateTime<Utc>,
) -> Result<Reservation, IdempotencyError> {
    let lock = advisory_key(platform_id, key);
    match repo::claim(
        tx,
        lock,
        platform_id,
        key.as_str(),
        fingerprint.as_str(),
        now,
    )
    .await?
    {
        Claim::Busy => return Err(IdempotencyError::InUse),
        Claim::Inserted => return Ok(Reservation::Fresh),
        Claim::Exists => {}
    }
    if let Some(existing) = repo::get(tx, platform_id, key.as_str()).await? {
        if existing.created_at <= now - KEY_TTL {
            repo::delete(tx, platform_id, key.as_str()).await?;
        } else if existing.state != "completed" {
            return Err(IdempotencyError::InUse);
        } else if existing.request_hash != fingerprint.as_str() {
            return Err(IdempotencyError::Reused);
        } else {
            let status = existing
                .response_status
                .and_then(|s| u16::try_from(s).ok())
                .ok_or_else(|| StoreError::Corrupt("idempotency response status".into()))?;
            let body = existing
                .response_body
                .ok_or_else(|| StoreError::Corrupt("idempotency response body".into()))?;
            return Ok(Reservation::Replay(StoredResponse { status, body }));
        }
    }
    repo::insert_in_flight(tx, platform_id, key.as_str(), fingerprint.as_str(), now).await?;
    Ok(Reservation::Fresh)
}

/// Stores the response of a [`Reservation::Fresh`] key, in the same transaction as the effects.
pub async fn complete(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key: &IdempotencyKey,
    response: &StoredResponse,
    now: DateTime<Utc>,
) -> Result<(), IdempotencyError> {
    repo::complete(
        tx,
        platform_id,
        key.as_str(),
        i32::from(response.status),
        &response.body,
        now,
    )
    .await?;
    Ok(())
}

/// Runs `effects` at most once per (platform, key): reserve, effects, store the response, commit,
/// all in one transaction that is retried as a whole on retryable database errors.
///
/// `effects` answers its value and the response to store; it runs again on a retry, so it must
/// have no effects outside the transaction. An `Err` from it rolls everything back and nothing is
/// stored for the key.
pub async fn execute<'s, T, E, F>(
    db: &Db,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    key: &IdempotencyKey,
    fingerprint: &RequestFingerprint,
    effects: F,
) -> Result<Outcome<T>, E>
where
    F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<(T, StoredResponse), E>> + Send,
    E: From<IdempotencyError> + From<StoreError> + Retryable + Send,
    T: Send,
{
    let claim = format!("idempotency\0{}\0{}", platform_id.as_str(), key.as_str());
    let Some(_claim) = db.try_local_lock(claim) else {
        count_outcome("in_use");
        return Err(IdempotencyError::InUse.into());
    };
    let now = clock.now();
    // The last attempt's refusal, if it was one (an earlier attempt's may have been undone by
    // a retry), for the metrics.
    let mut ctx = (effects, platform_id, key, fingerprint, None);
    let result = db
        .write_with(&mut ctx, |tx, ctx| {
            let (effects, platform_id, key, fingerprint, refused) = ctx;
            let (platform_id, key, fingerprint) = (*platform_id, *key, *fingerprint);
            Box::pin(async move {
                let reservation = reserve(tx, platform_id, key, fingerprint, now).await;
                *refused = match &reservation {
                    Err(IdempotencyError::InUse) => Some("in_use"),
                    Err(IdempotencyError::Reused) => Some("reused"),
                    _ => None,
                };
                if let Reservation::Replay(response) = reservation? {
                    return Ok(Outcome::Replayed(response));
                }
                let (value, response) = effects(tx).await?;
                complete(tx, platform_id, key, &response, now).await?;
                Ok(Outcome::Fresh { value, response })
            })
        })
        .await;
    match (&result, ctx.4) {
        (Ok(Outcome::Replayed(_)), _) => count_outcome("replayed"),
        (Err(_), Some(refusal)) => count_outcome(refusal),
        _ => {}
    }
    result
}

/// Counts a request with a key that did not run its effects: `replayed`, `in_use` or `reused`.
fn count_outcome(outcome: &'static str) {
    metrics::counter!(IDEMPOTENCY_METRIC, "outcome" => outcome).increment(1);
}

/// The metric `count_outcome` records (`bankd::metrics` serves it).
pub const IDEMPOTENCY_METRIC: &str = "bankd_idempotency_requests_total";

/// Records [`purge_expired`] deletes per write transaction.
///
/// Every write of the process waits for the one SQLite writer, so a purge in one statement held
/// them all for as long as it took: 518 416 expired records (30 days of a busy server's keys, or
/// a few minutes of the benchmark's) stalled book transfers for up to 5.8 s. In chunks of 500 the
/// same purge took 15.5 s on an idle server, 15 ms per chunk with its commit and its pause of
/// three times its hold, so a chunk holds the writer under 4 ms (bench/log/, "Fixed so far").
pub const PURGE_CHUNK: u32 = 500;

/// Deletes records older than [`KEY_TTL`], [`PURGE_CHUNK`] at a time; answers how many.
pub async fn purge_expired(db: &Db, clock: &dyn Clock) -> Result<u64, StoreError> {
    purge_expired_in_chunks(db, clock, PURGE_CHUNK).await
}

/// [`purge_expired`] with chunks of `chunk` records. After each chunk it pauses three times as
/// long as its statement held the writer, so a large purge takes at most about a quarter of
/// the writer's time. It still deletes 33 000 records a second on an idle server and 20 000
/// under a full load of transfers (each chunk also queues behind a batch of requests), more
/// than any write rate here adds. On PostgreSQL nothing waits for one writer, but the chunks
/// keep each transaction as short. The cutoff is taken once: keys that expire meanwhile wait
/// for the next purge.
pub async fn purge_expired_in_chunks(
    db: &Db,
    clock: &dyn Clock,
    chunk: u32,
) -> Result<u64, StoreError> {
    let cutoff = clock.now() - KEY_TTL;
    db.delete_in_chunks(chunk, |tx, n| {
        Box::pin(repo::delete_oldest_created_before(tx, cutoff, n))
    })
    .await
}

// ------------------------------------------------------------------------------- the writer

/// How a write identifies itself: the `Idempotency-Key` the caller sent, if any, and what makes
/// two requests the same (method, path template with the ids filled in, body as received).
#[derive(Debug, Clone, Copy)]
pub struct WriteRequest<'a> {
    pub key: Option<&'a str>,
    pub method: &'a str,
    pub path: &'a str,
    pub body: &'a [u8],
}

/// The result of [`write()`]: the committed value, and whether it replays an earlier request.
#[derive(Debug, Clone, PartialEq)]
pub struct Written<T> {
    pub value: T,
    pub replayed: bool,
}

/// Why a write failed: its rules (`E`, which also carries store failures), or the key.
#[derive(Debug, thiserror::Error)]
pub enum WriteError<E> {
    #[error(transparent)]
    Rule(E),
    #[error(transparent)]
    Idempotency(#[from] IdempotencyError),
}

impl<E: From<StoreError>> From<StoreError> for WriteError<E> {
    fn from(e: StoreError) -> Self {
        WriteError::Rule(E::from(e))
    }
}

impl<E: Retryable> Retryable for WriteError<E> {
    fn store_error(&self) -> Option<&StoreError> {
        match self {
            WriteError::Rule(e) => e.store_error(),
            WriteError::Idempotency(e) => e.store_error(),
        }
    }
}

/// Runs `effects` in one write transaction (retried while the failure is retryable); with a
/// key, at most once per (platform, key) through [`execute`], and a replay answers the value
/// the first run committed, read back from its stored snapshot (`T`'s JSON), so the caller maps
/// a replay exactly as it mapped the first answer.
pub async fn write<'s, T, E, F>(
    db: &Db,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    request: WriteRequest<'_>,
    mut effects: F,
) -> Result<Written<T>, WriteError<E>>
where
    T: Serialize + DeserializeOwned + Send + 's,
    E: From<StoreError> + Retryable + Send + 's,
    F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>> + Send,
{
    let Some(key) = request.key else {
        let value = db
            .write(|tx| {
                let run = effects(tx);
                Box::pin(async move { run.await.map_err(WriteError::Rule) })
            })
            .await?;
        return Ok(Written {
            value,
            replayed: false,
        });
    };
    let key = IdempotencyKey::parse(key)?;
    let fingerprint = RequestFingerprint::new(request.method, request.path, request.body);
    let outcome = execute(db, clock, platform_id, &key, &fingerprint, |tx| {
        let run = effects(tx);
        Box::pin(async move {
            let value = run.await.map_err(WriteError::Rule)?;
            let body = serde_json::to_vec(&value)
                .map_err(|e| StoreError::Corrupt(format!("idempotent result snapshot: {e}")))?;
            Ok::<_, WriteError<E>>((value, StoredResponse { status: 200, body }))
        })
    })
    .await?;
    let (value, replayed) = match outcome {
        Outcome::Fresh { value, .. } => (value, false),
        Outcome::Replayed(stored) => {
            let value = serde_json::from_slice(&stored.body).map_err(|e| {
                StoreError::Corrupt(format!("stored idempotent result is unreadable: {e}"))
            })?;
            (value, true)
        }
    };
    Ok(Written { value, replayed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_1_to_255_printable_ascii() {
        assert!(IdempotencyKey::parse("a").is_ok());
        assert!(IdempotencyKey::parse(" ~").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        for bad in [
            String::new(),
            "k".repeat(256),
            "tab\t".into(),
            "é".into(),
            "\u{7f}".into(),
        ] {
            assert!(
                matches!(
                    IdempotencyKey::parse(&bad),
                    Err(IdempotencyError::InvalidKey)
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn fingerprints_separate_method_path_and_body() {
        let a = RequestFingerprint::new("POST", "/bank-accounts", b"{}");
        assert_eq!(a, RequestFingerprint::new("POST", "/bank-accounts", b"{}"));
        assert_ne!(a, RequestFingerprint::new("PUT", "/bank-accounts", b"{}"));
        assert_ne!(
            a,
            RequestFingerprint::new("POST", "/entities/person", b"{}")
        );
        assert_ne!(a, RequestFingerprint::new("POST", "/bank-accounts", b"{ }"));
        assert_ne!(
            RequestFingerprint::new("a", "bc", b""),
            RequestFingerprint::new("ab", "c", b"")
        );
    }
}
