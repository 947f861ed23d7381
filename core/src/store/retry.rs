//! Running a transaction again: which errors may succeed on another attempt ([`Retryable`],
//! [`Conflict`]), how long to wait first ([`RetryPolicy`]), and the counts of retries by cause
//! ([`RetryCounts`]). [`Db::write`], [`Db::read`] and [`Db::read_single`] loop on
//! [`Db::try_again`]; the module note of [`crate::store`] says which errors are retried.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::Rng;

use super::{Db, StoreError, dialect, metric_names, sqlite};

/// What a transaction closure's error must tell [`Db::write`]: the storage failure inside it,
/// if any, and from that whether, and why, running the whole transaction again may succeed.
/// Every error that wraps a [`StoreError`], however deep, hands it out, so the retry (and the
/// full-storage answer) sees through every layer (store, domain, idempotency, API).
pub trait Retryable {
    /// The storage failure this error is, or wraps.
    fn store_error(&self) -> Option<&StoreError>;

    /// The conflict a new attempt may get past; `None` when this error is final.
    fn conflict(&self) -> Option<Conflict> {
        self.store_error().and_then(StoreError::conflict)
    }

    fn is_retryable(&self) -> bool {
        self.conflict().is_some()
    }

    /// The database could not grow (a full disk, or its size limit).
    fn is_storage_full(&self) -> bool {
        self.store_error().is_some_and(StoreError::is_storage_full)
    }
}

/// `Retryable` for an error enum whose storage failures are its `Store` variant.
macro_rules! wraps_store_error {
    ($($error:ty),* $(,)?) => {$(
        impl $crate::store::Retryable for $error {
            fn store_error(&self) -> Option<&$crate::store::StoreError> {
                match self {
                    Self::Store(e) => Some(e),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        }
    )*};
}
pub(crate) use wraps_store_error;

impl Retryable for StoreError {
    fn store_error(&self) -> Option<&StoreError> {
        Some(self)
    }
}

impl StoreError {
    /// Why another attempt may succeed, or `None`.
    fn conflict(&self) -> Option<Conflict> {
        match self {
            // Lost before COMMIT was sent (see `CommitInterrupted` for after): nothing applied,
            // and a new connection may find the database back.
            StoreError::Database(e) if super::postgres::is_disconnect(e) => {
                Some(Conflict::Disconnected)
            }
            StoreError::Database(e) => match dialect::retryable_code(e)? {
                dialect::RetryableCode::Serialization => Some(Conflict::Serialization),
                dialect::RetryableCode::Deadlock => Some(Conflict::Deadlock),
            },
            StoreError::Sqlite(e) => sqlite::is_busy(e).then_some(Conflict::Busy),
            StoreError::BatchAborted => Some(Conflict::BatchAborted),
            _ => None,
        }
    }
}

/// Why a transaction may succeed if run again; the labels of [`RetryCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// SQLSTATE 40001: PostgreSQL's serialization failure (also what CockroachDB and
    /// YugabyteDB answer on any contention).
    Serialization,
    /// SQLSTATE 40P01: a deadlock PostgreSQL broke by aborting this transaction.
    Deadlock,
    /// SQLite's file lock stayed taken past the busy timeout (another process wrote).
    Busy,
    /// Another write of the same SQLite group commit broke the shared transaction.
    BatchAborted,
    /// The connection to PostgreSQL was lost before the transaction's `COMMIT`.
    Disconnected,
}

/// How many transactions this process ran again, by cause, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryCounts {
    pub serialization: u64,
    pub deadlock: u64,
    pub busy: u64,
    pub batch_aborted: u64,
    pub disconnected: u64,
    /// Transactions whose attempts all failed retryably (answered 503 `transaction_conflict`).
    pub exhausted: u64,
}

/// [`RetryCounts`] as the process keeps them.
#[derive(Debug, Default)]
pub(super) struct RetryCounters {
    serialization: AtomicU64,
    deadlock: AtomicU64,
    busy: AtomicU64,
    batch_aborted: AtomicU64,
    disconnected: AtomicU64,
    exhausted: AtomicU64,
}

impl RetryCounters {
    fn count(&self, conflict: Conflict) {
        let (counter, cause) = match conflict {
            Conflict::Serialization => (&self.serialization, "serialization"),
            Conflict::Deadlock => (&self.deadlock, "deadlock"),
            Conflict::Busy => (&self.busy, "busy"),
            Conflict::BatchAborted => (&self.batch_aborted, "batch_aborted"),
            Conflict::Disconnected => (&self.disconnected, "disconnected"),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(metric_names::RETRIES, "cause" => cause).increment(1);
    }

    pub(super) fn snapshot(&self) -> RetryCounts {
        RetryCounts {
            serialization: self.serialization.load(Ordering::Relaxed),
            deadlock: self.deadlock.load(Ordering::Relaxed),
            busy: self.busy.load(Ordering::Relaxed),
            batch_aborted: self.batch_aborted.load(Ordering::Relaxed),
            disconnected: self.disconnected.load(Ordering::Relaxed),
            exhausted: self.exhausted.load(Ordering::Relaxed),
        }
    }
}

/// Bounded exponential back-off with full jitter for [`Db::write`].
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Total attempts, including the first (at least 1).
    pub max_attempts: u32,
    /// Upper bound of the first back-off; doubles per attempt.
    pub base_delay: Duration,
    /// Upper bound of any single back-off.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 20,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(250),
        }
    }
}

impl RetryPolicy {
    /// The pause after failed attempt `attempt` (1-based): uniformly random up to the capped
    /// exponential bound, so that colliding transactions do not collide again in lock-step.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let cap = exp.min(self.max_delay);
        let micros = u64::try_from(cap.as_micros()).unwrap_or(u64::MAX);
        Duration::from_micros(rand::thread_rng().gen_range(0..=micros))
    }
}

impl Db {
    /// Whether to run a transaction again after attempt `attempt` (1-based) failed with
    /// `error`: when `error` is retryable and attempts remain, counts the retry, sleeps the
    /// back-off and answers `true`. A retryable error on the last attempt is counted and logged
    /// as exhausted.
    pub(super) async fn try_again<E: Retryable>(&self, error: &E, attempt: u32) -> bool {
        let Some(conflict) = error.conflict() else {
            return false;
        };
        let policy = self.inner.retry;
        if attempt >= policy.max_attempts.max(1) {
            self.inner.retries.exhausted.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(metric_names::EXHAUSTED).increment(1);
            tracing::warn!(
                attempts = attempt,
                "transaction conflict: every attempt failed retryably; answered as one"
            );
            return false;
        }
        self.inner.retries.count(conflict);
        tracing::debug!(attempt, ?conflict, "running a transaction again");
        tokio::time::sleep(policy.backoff(attempt)).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn a_connection_lost_before_commit_is_run_again_and_one_lost_during_commit_is_not() {
        let reset = || {
            sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset by peer",
            ))
        };
        let before = StoreError::Database(reset());
        assert_eq!(before.conflict(), Some(Conflict::Disconnected));
        assert!(before.is_unavailable());
        let during = StoreError::CommitInterrupted(reset().to_string());
        assert_eq!(during.conflict(), None, "it may have been applied");
        assert!(during.is_unavailable());
        let other = StoreError::Database(sqlx::Error::RowNotFound);
        assert_eq!(other.conflict(), None);
        assert!(!other.is_unavailable());
    }

    #[test]
    fn backoff_is_jittered_below_a_capped_exponential_bound() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        };
        for attempt in 1..=40 {
            let bound =
                Duration::from_millis(10 * (1u64 << (attempt - 1).min(20))).min(policy.max_delay);
            for _ in 0..50 {
                assert!(policy.backoff(attempt) <= bound, "attempt {attempt}");
            }
        }
        // Jitter: not always the same pause.
        let samples: HashSet<Duration> = (0..50).map(|_| policy.backoff(5)).collect();
        assert!(samples.len() > 1);
    }
}
