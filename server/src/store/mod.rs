//! Storage: connection pools, transactions with retry, a small dialect-neutral query type, and
//! the repositories.
//!
//! Design note. sqlx's `Any` driver would hide the backend but decodes through a lowest common
//! denominator of types; generic repositories over `sqlx::Database` drown every function in
//! trait bounds. Instead [`Db`] is an enum over the two backends and [`Tx`] over their
//! transactions; repositories build one [`Sql`] value (text with `?` placeholders and typed
//! bind values) and the enum dispatches it, rewriting placeholders through [`dialect`]. Rows
//! come back as [`Row`], which decodes any [`Column`] type. PostgreSQL goes through sqlx;
//! SQLite runs in-line on the calling task through rusqlite ([`sqlite`] says why).
//!
//! SQLite: WAL, `synchronous=FULL`, foreign keys on, a busy timeout, one writer connection and a
//! pool of readers. Measured on this hardware, several writers at `synchronous=FULL` fight over
//! the file lock (p99 near a second) while one writer keeps p99 around 30 ms, so writes queue
//! in-process for the one connection and every write transaction starts `BEGIN IMMEDIATE` (it
//! takes the file lock up front, so it cannot fail half-way with `SQLITE_BUSY_SNAPSHOT` when
//! another process shares the file). PostgreSQL: one pool; writes in `READ COMMITTED`, with row
//! locks where a read decides a write ([`dialect::for_update`]); reads of several statements in
//! `REPEATABLE READ, READ ONLY` ([`Db::begin_read`]), the one snapshot SQLite's read
//! transactions give.
//!
//! Every transaction is retried as a whole on the errors [`StoreError::conflict`] names
//! (PostgreSQL's 40001 and 40P01 wherever they surface, `COMMIT` included; SQLite's busy file
//! lock; a broken group commit), with bounded, jittered exponential back-off: writes by
//! [`Db::write`], reads by [`Db::read`] and [`Db::read_single`]. Under SERIALIZABLE (or on
//! CockroachDB and YugabyteDB, which run nothing else) contended writes fail that way as a
//! matter of course; a transaction whose attempts all fail keeps its retryable error, which
//! the API answers 503 `transaction_conflict` with `Retry-After`. The isolation level of writes
//! is [`StoreOptions::postgres_isolation`]; which of bankd's invariants rest on row locks and
//! which on the level is said in the README ("PostgreSQL isolation").

pub mod api_keys;
pub mod bank_accounts;
pub mod counterparties;
mod deferred;
pub mod dialect;
pub mod documents;
pub mod entities;
pub mod idempotency;
pub mod keyset;
pub mod ledger;
pub mod platforms;
pub mod positive_pay;
mod postgres;
mod sqlite;
pub mod transfers;
mod writer;

use std::cell::RefCell;
use std::collections::HashSet;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use rand::Rng;
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row as _};

/// The store's metric names (recorded through the `metrics` facade; `crate::metrics` serves
/// them).
pub mod metric_names {
    pub const BATCH_SIZE: &str = "bankd_sqlite_group_commit_batch_size";
    pub const COMMIT_DURATION: &str = "bankd_sqlite_commit_duration_seconds";
    pub const CHECKPOINT_DURATION: &str = "bankd_sqlite_checkpoint_duration_seconds";
    pub const ACQUIRE_WAIT: &str = "bankd_postgres_acquire_wait_seconds";
    pub const RETRIES: &str = "bankd_transaction_retries_total";
    pub const EXHAUSTED: &str = "bankd_transaction_conflicts_exhausted_total";
}

pub use dialect::Backend;
pub use postgres::Isolation as PostgresIsolation;
pub use sqlite::{FromSqlite, SqliteRow, Synchronous as SqliteSynchronous};
pub use writer::{GroupCommitStats, SLOW_HOLD};

tokio::task_local! {
    /// The read transaction that a `GET`'s key check left open on a SQLite reader, for the
    /// request's first read; see [`request_snapshot`].
    static REQUEST_SNAPSHOT: RefCell<Option<sqlite::Reader>>;
}

/// Runs one read-only request (`GET`, `HEAD`) so that its key check and its first read share one
/// SQLite read transaction, on one reader: [`Db::read_single_kept`] leaves the transaction open
/// and the next [`Db::read_single`] or [`Db::read`] of the request runs in it. Starting and
/// ending a read transaction (the WAL read lock in the shared-memory file, an `fcntl` and a
/// mutex) was 16.6 % of a GET's profile for its two; bench/README.md has the figures. The key
/// and the data then come from one snapshot, which is what a single statement would give.
/// Whatever is left open is rolled back, and the reader given back, when `fut` ends; a write
/// gives it back first ([`Db::write`]), so a snapshot never waits for the writer.
pub async fn request_snapshot<F: Future>(fut: F) -> F::Output {
    REQUEST_SNAPSHOT.scope(RefCell::new(None), fut).await
}

/// The request's open snapshot, if it is one of `readers`' (another database's is given back).
fn take_snapshot(readers: &Arc<sqlite::Readers>) -> Option<sqlite::Reader> {
    REQUEST_SNAPSHOT
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten()
        .filter(|reader| reader.belongs_to(readers))
}

/// Ends the request's open snapshot, if any (rolled back, the reader given back).
fn release_snapshot() {
    let taken = REQUEST_SNAPSHOT.try_with(|slot| slot.borrow_mut().take());
    drop(taken);
}

tokio::task_local! {
    /// The PostgreSQL connection a request's key check used, kept for the request's own
    /// statements, with the address of its database's state; see [`request_connection`].
    static REQUEST_CONNECTION: RefCell<Option<(usize, PoolConnection<Postgres>)>>;
}

/// Runs one request so that, on PostgreSQL, its key check and its reads and writes use one
/// pooled connection: [`Db::read_single_kept`] keeps the connection it used, and the request's
/// next read or write takes it instead of another from the pool. sqlx checks every connection
/// on its way back to the pool (a `Sync` and its answer); one connection a request instead of
/// two saves one such round trip and one acquisition a request. Whatever is kept goes back to
/// the pool when `fut` ends. Nothing changes on SQLite.
pub async fn request_connection<F: Future>(fut: F) -> F::Output {
    REQUEST_CONNECTION.scope(RefCell::new(None), fut).await
}

/// The request's kept connection, if it is `db`'s.
fn take_kept_connection(db: usize) -> Option<PoolConnection<Postgres>> {
    REQUEST_CONNECTION
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten()
        .and_then(|(owner, conn)| (owner == db).then_some(conn))
}

/// Keeps `conn` (idle, outside any transaction) for the request's next statement, if inside
/// [`request_connection`]; otherwise it goes back to the pool.
fn keep_connection(db: usize, conn: PoolConnection<Postgres>) {
    let _ = REQUEST_CONNECTION.try_with(|slot| *slot.borrow_mut() = Some((db, conn)));
}

static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// A pooled PostgreSQL connection idle for this long is pinged before it is lent.
const POSTGRES_PING_IDLE: Duration = Duration::from_secs(10);

/// A boxed future borrowing for `'t`; what transaction closures return.
pub type BoxFuture<'t, T> = Pin<Box<dyn Future<Output = T> + Send + 't>>;

/// Failures of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database URL scheme (expected sqlite: or postgres:)")]
    UnsupportedUrl,
    #[error("invalid sqlite: URL: {0}")]
    InvalidUrl(String),
    #[error("query has {placeholders} placeholders but {binds} bind values")]
    BindCount { placeholders: usize, binds: usize },
    #[error("stored value is invalid: {0}")]
    Corrupt(String),
    /// Another write of the same group commit broke the shared transaction; run again.
    #[error("the group commit this write belonged to was rolled back")]
    BatchAborted,
}

/// What a transaction closure's error must tell [`Db::write`]: whether, and why, running the
/// whole transaction again may succeed. Every error that wraps a [`StoreError`], however deep,
/// delegates to it, so the retry sees through every layer (store, domain, idempotency, API).
pub trait Retryable {
    /// The conflict a new attempt may get past; `None` when this error is final.
    fn conflict(&self) -> Option<Conflict>;

    fn is_retryable(&self) -> bool {
        self.conflict().is_some()
    }
}

impl Retryable for StoreError {
    fn conflict(&self) -> Option<Conflict> {
        match self {
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
}

/// How many transactions this process ran again, by cause, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryCounts {
    pub serialization: u64,
    pub deadlock: u64,
    pub busy: u64,
    pub batch_aborted: u64,
    /// Transactions whose attempts all failed retryably (answered 503 `transaction_conflict`).
    pub exhausted: u64,
}

/// [`RetryCounts`] as the process keeps them.
#[derive(Debug, Default)]
struct RetryCounters {
    serialization: AtomicU64,
    deadlock: AtomicU64,
    busy: AtomicU64,
    batch_aborted: AtomicU64,
    exhausted: AtomicU64,
}

impl RetryCounters {
    fn count(&self, conflict: Conflict) {
        let (counter, cause) = match conflict {
            Conflict::Serialization => (&self.serialization, "serialization"),
            Conflict::Deadlock => (&self.deadlock, "deadlock"),
            Conflict::Busy => (&self.busy, "busy"),
            Conflict::BatchAborted => (&self.batch_aborted, "batch_aborted"),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(metric_names::RETRIES, "cause" => cause).increment(1);
    }

    fn snapshot(&self) -> RetryCounts {
        RetryCounts {
            serialization: self.serialization.load(Ordering::Relaxed),
            deadlock: self.deadlock.load(Ordering::Relaxed),
            busy: self.busy.load(Ordering::Relaxed),
            batch_aborted: self.batch_aborted.load(Ordering::Relaxed),
            exhausted: self.exhausted.load(Ordering::Relaxed),
        }
    }
}

/// The constraint kinds the domain tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Violation {
    Unique,
    ForeignKey,
    Check,
}

impl StoreError {
    /// Whether the database refused text it cannot store (PostgreSQL refuses U+0000 with
    /// SQLSTATE 22021 or 22P05): the client's input, wherever it slipped past validation.
    pub fn is_unstorable_text(&self) -> bool {
        match self {
            StoreError::Database(e) => e
                .as_database_error()
                .and_then(|d| d.code())
                .is_some_and(|code| code == "22021" || code == "22P05"),
            _ => false,
        }
    }

    fn violation(&self) -> Option<Violation> {
        use sqlx::error::ErrorKind;
        match self {
            StoreError::Database(sqlx::Error::Database(db)) => match db.kind() {
                ErrorKind::UniqueViolation => Some(Violation::Unique),
                ErrorKind::ForeignKeyViolation => Some(Violation::ForeignKey),
                ErrorKind::CheckViolation => Some(Violation::Check),
                _ => None,
            },
            // SQLite's extended result codes: SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY,
            // _FOREIGNKEY and _CHECK.
            StoreError::Sqlite(e) => match sqlite::extended_code(e)? {
                2067 | 1555 => Some(Violation::Unique),
                787 => Some(Violation::ForeignKey),
                275 => Some(Violation::Check),
                _ => None,
            },
            _ => None,
        }
    }

    /// A UNIQUE or PRIMARY KEY constraint was violated.
    pub fn is_unique_violation(&self) -> bool {
        self.violation() == Some(Violation::Unique)
    }

    /// A FOREIGN KEY constraint was violated.
    pub fn is_foreign_key_violation(&self) -> bool {
        self.violation() == Some(Violation::ForeignKey)
    }

    /// A CHECK constraint was violated (for example a balance going below zero).
    pub fn is_check_violation(&self) -> bool {
        self.violation() == Some(Violation::Check)
    }
}

/// The pools' state at one moment ([`Db::pool_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// SQLite writes queued for the writer or working in its open batch.
    pub sqlite_writer_queue: Option<usize>,
    pub postgres: Option<PostgresPoolStats>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostgresPoolStats {
    pub idle: u32,
    pub in_use: u32,
    pub max: u32,
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

/// The default of [`StoreOptions::sqlite_reader_mmap_bytes`] in MiB: none. Mapping speeds up
/// random reads of a large file by about a quarter while nothing writes, but a reader whose
/// read transaction finds the log changed since its last one (another connection committed)
/// drops its page cache and unmaps the whole file (SQLite's `pagerBeginReadTransaction`):
/// under writes that is about twice per group commit, each unmap costing 450-530 µs before the
/// reader faults its pages in anew; with reads and transfers at once, both were 5-7 % slower
/// mapped (bench/README.md).
pub const DEFAULT_SQLITE_MMAP_MIB: u64 = 0;

/// Tuning of the pools; defaults suit a single small server.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How long SQLite waits for a file lock before answering `SQLITE_BUSY`.
    pub sqlite_busy_timeout: Duration,
    /// SQLite reader connections kept open between reads (more are opened while more tasks
    /// read at once; the writer is always one).
    pub sqlite_readers: u32,
    /// SQLite's `synchronous` setting: `FULL` (every commit is on disk before it is
    /// acknowledged) unless a benchmark asks for the weaker `NORMAL`.
    pub sqlite_synchronous: SqliteSynchronous,
    /// Whether concurrent SQLite writes share one transaction and one fsync (see `writer`).
    pub sqlite_group_commit: bool,
    /// How much of the database file each SQLite reader maps into memory; 0 for none. SQLite
    /// caps it at its compile-time `SQLITE_MAX_MMAP_SIZE` (2 GiB less 64 KiB on this build).
    pub sqlite_reader_mmap_bytes: u64,
    /// Whether a `FULL` SQLite database's log frames are written through `sqlite-walbuf`, a
    /// few large writes per commit instead of two per page (ignored unless `FULL`: see
    /// [`sqlite::Settings::log_buffer`]).
    pub sqlite_log_buffer: bool,
    /// Connections of the PostgreSQL pool.
    pub postgres_max_connections: u32,
    /// How long a caller waits for a pooled PostgreSQL connection.
    pub acquire_timeout: Duration,
    /// The isolation level of PostgreSQL write transactions.
    pub postgres_isolation: PostgresIsolation,
    pub retry: RetryPolicy,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            sqlite_busy_timeout: Duration::from_secs(5),
            sqlite_readers: 4,
            sqlite_synchronous: SqliteSynchronous::Full,
            sqlite_group_commit: true,
            sqlite_reader_mmap_bytes: DEFAULT_SQLITE_MMAP_MIB << 20,
            sqlite_log_buffer: true,
            postgres_max_connections: 16,
            acquire_timeout: Duration::from_secs(30),
            postgres_isolation: PostgresIsolation::default(),
            retry: RetryPolicy::default(),
        }
    }
}

enum Pools {
    Sqlite {
        /// The one writer connection.
        writer: writer::GroupWriter,
        /// Whether concurrent writes share a batch transaction (otherwise each write is a
        /// transaction of its own on the writer).
        group_commit: bool,
        /// Reader connections; `None` for an in-memory database, where the writer reads too.
        readers: Option<Arc<sqlite::Readers>>,
        /// Checkpoints the log off the writer; `None` in memory.
        checkpointer: Option<sqlite::Checkpointer>,
    },
    Postgres(PgPool),
}

struct Inner {
    pools: Pools,
    retry: RetryPolicy,
    retries: RetryCounters,
    /// How PostgreSQL write transactions begin.
    begin_write: &'static str,
    /// Whether PostgreSQL write attempts take the conflict gate ([`postgres::Gate`]): at
    /// REPEATABLE READ and SERIALIZABLE, where contended writes fail instead of waiting.
    gated: bool,
    local_locks: Mutex<HashSet<String>>,
    /// Set by [`Db::close`]: from then on every transaction is refused, on either backend.
    closed: AtomicBool,
}

/// A handle on the database; cheap to clone and share.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the URL: it may carry a password.
        write!(f, "Db({:?})", self.backend())
    }
}

impl Db {
    /// Opens pools for a `sqlite:` or `postgres:`/`postgresql:` URL. Does not migrate.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Db, StoreError> {
        let pools = if url.starts_with("sqlite:") {
            Self::sqlite_pools(url, options).await?
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let pool = PgPoolOptions::new()
                .max_connections(options.postgres_max_connections.max(1))
                .acquire_timeout(options.acquire_timeout)
                // sqlx pings every connection it lends by default: one more round trip per
                // transaction. A connection in steady use is alive; only one that sat idle for a
                // while (the server may have ended it) is pinged, and replaced if dead.
                .test_before_acquire(false)
                .before_acquire(|conn, meta| {
                    Box::pin(async move {
                        if meta.idle_for >= POSTGRES_PING_IDLE {
                            sqlx::Connection::ping(conn).await?;
                        }
                        Ok(true)
                    })
                })
                .connect(url)
                .await?;
            Pools::Postgres(pool)
        } else {
            return Err(StoreError::UnsupportedUrl);
        };
        let gated = match (&pools, options.postgres_isolation) {
            (Pools::Sqlite { .. }, _) | (_, PostgresIsolation::ReadCommitted) => false,
            (_, PostgresIsolation::RepeatableRead | PostgresIsolation::Serializable) => true,
            (Pools::Postgres(pool), PostgresIsolation::Database) => {
                let level: String = sqlx::query_scalar("SHOW default_transaction_isolation")
                    .fetch_one(pool)
                    .await?;
                !matches!(level.as_str(), "read committed" | "read uncommitted")
            }
        };
        Ok(Db {
            inner: Arc::new(Inner {
                pools,
                retry: options.retry,
                retries: RetryCounters::default(),
                begin_write: options.postgres_isolation.begin(),
                gated,
                local_locks: Mutex::new(HashSet::new()),
                closed: AtomicBool::new(false),
            }),
        })
    }

    async fn sqlite_pools(url: &str, options: &StoreOptions) -> Result<Pools, StoreError> {
        let path = sqlite::database_path(url)?;
        let settings = sqlite::Settings {
            path,
            synchronous: options.sqlite_synchronous.pragma(),
            busy_timeout: options.sqlite_busy_timeout,
            wal_restart_frames: sqlite::WAL_RESTART_FRAMES,
            reader_mmap_bytes: i64::try_from(options.sqlite_reader_mmap_bytes).unwrap_or(i64::MAX),
            log_buffer: options.sqlite_log_buffer,
        };
        let checkpointer = sqlite::Checkpointer::start(&settings)?;
        let writer = writer::GroupWriter::new(
            settings.open_writer()?,
            options.sqlite_busy_timeout,
            checkpointer.as_ref().map(sqlite::Checkpointer::signal),
        );
        // Separate connections to `:memory:` would each see their own empty database, so there
        // the writer serves reads too, and cannot group-commit (a read would end the batch).
        let in_memory = settings.in_memory();
        let readers =
            (!in_memory).then(|| sqlite::Readers::new(settings, options.sqlite_readers as usize));
        Ok(Pools::Sqlite {
            writer,
            group_commit: options.sqlite_group_commit && !in_memory,
            readers,
            checkpointer,
        })
    }

    pub fn backend(&self) -> Backend {
        match self.inner.pools {
            Pools::Sqlite { .. } => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// The group-committing writer's counts; `None` when writes commit one by one (PostgreSQL,
    /// or SQLite with group commit off or in memory).
    pub fn group_commit_stats(&self) -> Option<GroupCommitStats> {
        match &self.inner.pools {
            Pools::Sqlite {
                writer,
                group_commit: true,
                ..
            } => Some(writer.stats()),
            _ => None,
        }
    }

    /// The pools' state at this moment, for metrics.
    pub fn pool_stats(&self) -> PoolStats {
        match &self.inner.pools {
            Pools::Sqlite { writer, .. } => PoolStats {
                sqlite_writer_queue: Some(writer.queue_depth()),
                postgres: None,
            },
            Pools::Postgres(pool) => {
                let idle = u32::try_from(pool.num_idle()).unwrap_or(u32::MAX);
                PoolStats {
                    sqlite_writer_queue: None,
                    postgres: Some(PostgresPoolStats {
                        idle,
                        in_use: pool.size().saturating_sub(idle),
                        max: pool.options().get_max_connections(),
                    }),
                }
            }
        }
    }

    /// How many of this backend's embedded migrations the database has not applied; an error
    /// when it does not answer. For readiness.
    pub async fn pending_migrations(&self) -> Result<usize, StoreError> {
        let applied: Vec<i64> = self
            .read_single(|tx| {
                Box::pin(async move {
                    let rows = tx
                        .fetch_all(Sql::new(
                            "SELECT version FROM _sqlx_migrations WHERE success = TRUE",
                        ))
                        .await?;
                    rows.iter().map(|r| r.get::<i64>("version")).collect()
                })
            })
            .await?;
        let versions: Vec<i64> = match self.backend() {
            Backend::Sqlite => sqlite::migrations().iter().map(|m| m.version).collect(),
            Backend::Postgres => POSTGRES_MIGRATOR
                .iter()
                .filter(|m| m.migration_type.is_up_migration())
                .map(|m| m.version)
                .collect(),
        };
        Ok(versions.iter().filter(|v| !applied.contains(v)).count())
    }

    /// Applies the embedded migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.inner.pools {
            Pools::Sqlite { writer, .. } => writer.migrate().await?,
            Pools::Postgres(pool) => POSTGRES_MIGRATOR.run(pool).await?,
        }
        Ok(())
    }

    /// The retry policy of [`Db::write`], for callers that run their own transaction loop.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// How many transactions ran again, by cause, since the process started.
    pub fn retry_counts(&self) -> RetryCounts {
        self.inner.retries.snapshot()
    }

    /// Whether to run a transaction again after attempt `attempt` (1-based) failed with
    /// `error`: when `error` is retryable and attempts remain, counts the retry, sleeps the
    /// back-off and answers `true`. A retryable error on the last attempt is counted and logged
    /// as exhausted.
    async fn try_again<E: Retryable>(&self, error: &E, attempt: u32) -> bool {
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

    /// Refuses work once [`Db::close`] ran (sqlx pools do the same for PostgreSQL; SQLite's
    /// connections are bankd's own).
    fn check_open(&self) -> Result<(), StoreError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Database(sqlx::Error::PoolClosed));
        }
        Ok(())
    }

    /// Closes every pooled connection; later transactions fail.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        match &self.inner.pools {
            Pools::Sqlite {
                writer,
                readers,
                checkpointer,
                ..
            } => {
                if let Some(readers) = readers {
                    readers.close();
                }
                writer.close().await;
                if let Some(checkpointer) = checkpointer {
                    checkpointer.stop();
                }
            }
            Pools::Postgres(pool) => pool.close().await,
        }
    }

    /// Begins a write transaction without retry; prefer [`Db::write`].
    pub async fn begin_write<'s>(&self) -> Result<Tx<'s>, StoreError> {
        self.begin_write_attempt(1).await
    }

    /// Begins attempt `attempt` (1-based) of a write transaction.
    async fn begin_write_attempt<'s>(&self, attempt: u32) -> Result<Tx<'s>, StoreError> {
        self.check_open()?;
        release_snapshot();
        let inner = match &self.inner.pools {
            Pools::Sqlite { writer, .. } => {
                TxInner::Writer(writer.begin_exclusive().await?, writer::Role::Exclusive)
            }
            Pools::Postgres(pool) => TxInner::Postgres(
                postgres::PgTx::begin(
                    self.postgres_connection(pool).await?,
                    self.inner.begin_write,
                    self.inner
                        .gated
                        .then(|| postgres::Gate::for_attempt(attempt)),
                )
                .await?,
            ),
        };
        Ok(Tx::new(inner))
    }

    /// The address of this database's state, which names it in [`REQUEST_CONNECTION`].
    fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// A connection of `pool`: the request's kept one if any ([`request_connection`]), else one
    /// from the pool.
    async fn postgres_connection(
        &self,
        pool: &PgPool,
    ) -> Result<PoolConnection<Postgres>, StoreError> {
        match take_kept_connection(self.id()) {
            Some(conn) => Ok(conn),
            None => {
                let started = std::time::Instant::now();
                let conn = pool.acquire().await?;
                metrics::histogram!(metric_names::ACQUIRE_WAIT)
                    .record(started.elapsed().as_secs_f64());
                Ok(conn)
            }
        }
    }

    /// Begins a read transaction with `begin` on [`Db::postgres_connection`]. The transaction
    /// owns the connection and gives it back to the pool when it ends.
    async fn postgres_begin_read(
        &self,
        pool: &PgPool,
        begin: &'static str,
    ) -> Result<sqlx::Transaction<'static, Postgres>, StoreError> {
        let conn = self.postgres_connection(pool).await?;
        // sqlx's own `Pool::begin` does this; the function is public but hidden from its
        // documentation, and the only way to a transaction that owns a given pooled connection.
        Ok(sqlx::Transaction::begin(conn, Some(std::borrow::Cow::Borrowed(begin))).await?)
    }

    /// Begins a read-only transaction: a consistent snapshot for multi-query reads (a page and
    /// its cursor lookup, an audit's totals and its details). On SQLite it runs on a reader
    /// connection, so it never waits for the writer. On PostgreSQL it is `REPEATABLE READ`:
    /// under the default `READ COMMITTED` each statement would see what had committed when it
    /// began, so a transfer committing between two statements could show in one and not the
    /// other.
    pub async fn begin_read<'s>(&self) -> Result<Tx<'s>, StoreError> {
        self.check_open()?;
        let inner = match &self.inner.pools {
            Pools::Sqlite {
                readers: Some(readers),
                ..
            } => match take_snapshot(readers) {
                Some(reader) => TxInner::SqliteReader(reader),
                None => {
                    let reader = readers.acquire()?;
                    sqlite::control(reader.conn(), "BEGIN")?;
                    TxInner::SqliteReader(reader)
                }
            },
            Pools::Sqlite { writer, .. } => {
                let (writer, role) = writer.read(true).await?;
                TxInner::Writer(writer, role)
            }
            Pools::Postgres(pool) => TxInner::PostgresRead(
                self.postgres_begin_read(pool, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    .await?,
            ),
        };
        Ok(Tx::new(inner))
    }

    /// Runs `f` in a write transaction and commits, retrying the whole transaction (with a new
    /// `Tx`) when `f` or the commit fails with a retryable error. `f` must therefore have no
    /// effects outside the transaction.
    ///
    /// The `'s` lifetime is a scope trick: `&'t mut Tx<'s>` implies `'s: 't`, so the future may
    /// borrow anything the caller's closure borrows for `'s`, e.g.
    /// `db.write(|tx| Box::pin(async move { repo::insert(tx, &name).await }))`.
    pub async fn write<'s, T, E, F>(&self, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        self.write_with(&mut (), |tx, _| f(tx)).await
    }

    /// [`Db::write`] with a context that the closure borrows mutably on each run, for closures
    /// that call another `FnMut` closure (which they could not otherwise lend to the future).
    pub async fn write_with<'s, C, T, E, F>(&self, ctx: &mut C, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        self.check_open()?;
        release_snapshot();
        let mut attempt = 1u32;
        loop {
            let result = match &self.inner.pools {
                Pools::Sqlite {
                    writer,
                    group_commit: true,
                    ..
                } => writer.attempt(ctx, &mut f).await,
                _ => self.attempt_alone(ctx, &mut f, attempt).await,
            };
            match result {
                Err(e) if self.try_again(&e, attempt).await => attempt += 1,
                done => return done,
            }
        }
    }

    /// Attempt `attempt` of a write in a transaction of its own.
    async fn attempt_alone<'s, C, T, E, F>(
        &self,
        ctx: &mut C,
        f: &mut F,
        attempt: u32,
    ) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError>,
    {
        let mut tx = self.begin_write_attempt(attempt).await?;
        match f(&mut tx, ctx).await {
            Ok(value) => {
                tx.commit().await?;
                Ok(value)
            }
            Err(e) => {
                // An explicit rollback returns the connection clean; its own failure (the
                // connection died) adds nothing to the error we already have.
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// Runs `f` in a read transaction, retried as a whole like a write: readers take no write
    /// locks, but a distributed engine may still abort a read with 40001 (a read restart), and
    /// SQLite may answer busy while another process rewinds the log.
    pub async fn read<'s, T, E, F>(&self, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        let mut attempt = 1u32;
        loop {
            let result = match self.begin_read().await {
                Ok(mut tx) => {
                    let result = f(&mut tx).await;
                    tx.end_read().await;
                    result
                }
                Err(e) => Err(e.into()),
            };
            match result {
                Err(e) if self.try_again(&e, attempt).await => attempt += 1,
                done => return done,
            }
        }
    }

    /// Runs `f`, which must issue exactly one statement, on a pooled read connection outside
    /// any transaction. One statement is its own snapshot, so `BEGIN` and `ROLLBACK` would only
    /// add two statements (on PostgreSQL two round trips). Inside [`request_snapshot`] on
    /// SQLite, the statement runs in the snapshot the request's key check left open, if any.
    ///
    /// Retried like [`Db::read`] (a single statement is a transaction of its own).
    pub async fn read_single<'s, T, E, F>(&self, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        let mut attempt = 1u32;
        loop {
            match self.read_single_once(&mut f).await {
                Err(e) if self.try_again(&e, attempt).await => attempt += 1,
                done => return done,
            }
        }
    }

    /// One attempt of [`Db::read_single`].
    async fn read_single_once<'s, T, E, F>(&self, f: &mut F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError>,
    {
        self.check_open()?;
        let inner = match &self.inner.pools {
            Pools::Sqlite {
                readers: Some(readers),
                ..
            } => match take_snapshot(readers) {
                Some(reader) => TxInner::SqliteReader(reader),
                None => TxInner::SqliteReader(readers.acquire()?),
            },
            Pools::Sqlite { writer, .. } => {
                let (writer, role) = writer.read(false).await?;
                TxInner::Writer(writer, role)
            }
            Pools::Postgres(pool) => TxInner::PostgresSingle(self.postgres_connection(pool).await?),
        };
        let mut tx = Tx::new(inner);
        let result = f(&mut tx).await;
        if let TxInner::PostgresSingle(conn) = tx.inner {
            // One statement, finished: the connection is idle, and the request may keep it.
            keep_connection(self.id(), conn);
        }
        result
    }

    /// [`Db::read_single`] for a request's key check: inside [`request_snapshot`] on SQLite, the
    /// statement runs in a read transaction that stays open for the request's next read.
    /// Elsewhere (PostgreSQL, where `BEGIN` would cost a round trip, and where
    /// [`request_connection`] keeps the connection instead; the writer-only in-memory database;
    /// outside a request) it is [`Db::read_single`].
    pub async fn read_single_kept<'s, T, E, F>(&self, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        let pooled = match &self.inner.pools {
            Pools::Sqlite {
                readers: Some(readers),
                ..
            } if REQUEST_SNAPSHOT.try_with(|_| ()).is_ok() => readers,
            _ => return self.read_single(f).await,
        };
        self.check_open()?;
        release_snapshot();
        let reader = pooled.acquire()?;
        sqlite::control(reader.conn(), "BEGIN")?;
        let mut tx = Tx::new(TxInner::SqliteReader(reader));
        let result = f(&mut tx).await;
        if matches!(&result, Err(e) if e.is_retryable()) {
            // Nothing worth keeping: the retries run without a kept snapshot.
            drop(tx);
            return self.read_single(f).await;
        }
        if let TxInner::SqliteReader(reader) = tx.inner {
            // In scope (checked above): the slot takes it, to be ended by the next read or
            // when the request ends.
            let _ = REQUEST_SNAPSHOT.try_with(|slot| *slot.borrow_mut() = Some(reader));
        }
        result
    }

    /// Claims `key` inside this process until the returned guard drops; `None` when already
    /// claimed. Idempotency uses it to answer "in use" at once to a concurrent duplicate instead
    /// of queueing it behind the writer (see `idempotency`).
    pub fn try_local_lock(&self, key: String) -> Option<LocalLock> {
        let mut set = self
            .inner
            .local_locks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !set.insert(key.clone()) {
            return None;
        }
        Some(LocalLock {
            inner: self.inner.clone(),
            key,
        })
    }
}

/// A claim from [`Db::try_local_lock`]; released on drop.
pub struct LocalLock {
    inner: Arc<Inner>,
    key: String,
}

impl Drop for LocalLock {
    fn drop(&mut self) {
        let mut set = self
            .inner
            .local_locks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        set.remove(&self.key);
    }
}

enum TxInner {
    /// A SQLite reader, in a read transaction or (see [`Db::read_single`]) outside any; a
    /// transaction left open is rolled back when the reader goes back to its pool.
    SqliteReader(sqlite::Reader),
    /// A pooled connection outside any transaction: each statement commits on its own (see
    /// [`Db::read_single`]).
    PostgresSingle(sqlx::pool::PoolConnection<Postgres>),
    /// On SQLite's writer: a batch member, a transaction of its own, or no transaction.
    Writer(tokio::sync::OwnedMutexGuard<writer::Writer>, writer::Role),
    /// A PostgreSQL write transaction.
    Postgres(postgres::PgTx),
    /// A PostgreSQL read transaction (`REPEATABLE READ, READ ONLY`).
    PostgresRead(sqlx::Transaction<'static, Postgres>),
}

/// An open transaction on either backend. Dropping it without [`Tx::commit`] rolls back.
pub struct Tx<'s> {
    inner: TxInner,
    /// Writes queued by [`Tx::execute_deferred`] (PostgreSQL transactions only), sent before the
    /// next statement or the commit.
    deferred: Vec<deferred::Deferred>,
    _scope: PhantomData<&'s ()>,
}

/// A bind value with its type, so that a `NULL` is still typed for PostgreSQL.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(Option<String>),
    I64(Option<i64>),
    Bool(Option<bool>),
    Bytes(Option<Vec<u8>>),
    Time(Option<DateTime<Utc>>),
    Date(Option<NaiveDate>),
}

macro_rules! value_from {
    ($($t:ty => $variant:ident $(via $conv:expr)?;)*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(Some(value_from!(@conv v $(, $conv)?)))
            }
        }
        impl From<Option<$t>> for Value {
            fn from(v: Option<$t>) -> Value {
                Value::$variant(v.map(|v| value_from!(@conv v $(, $conv)?)))
            }
        }
    )*};
    (@conv $v:ident) => { $v };
    (@conv $v:ident, $conv:expr) => { $conv($v) };
}

value_from! {
    String => Text;
    &str => Text via str::to_owned;
    &String => Text via String::clone;
    i64 => I64;
    i32 => I64 via i64::from;
    bool => Bool;
    Vec<u8> => Bytes;
    &[u8] => Bytes via <[u8]>::to_vec;
    DateTime<Utc> => Time;
    NaiveDate => Date;
}

/// SQL text with `?` placeholders and its bind values, built once for both backends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sql {
    text: String,
    args: Vec<Value>,
    /// See [`Sql::planned_each_run`].
    plan_each_run: bool,
}

impl Sql {
    /// A statement or fragment; `text` must be trusted SQL (never user input: that goes in binds).
    pub fn new(text: impl Into<String>) -> Sql {
        Sql {
            text: text.into(),
            args: Vec::new(),
            plan_each_run: false,
        }
    }

    /// Has PostgreSQL plan the statement this fragment ends up in with its values on every run
    /// (an unnamed statement: sqlx's `persistent(false)`) instead of preparing it once per
    /// connection, where after five runs PostgreSQL may keep one generic plan for all values.
    /// For a condition whose best plan depends on how common its value is, at the cost of
    /// planning each time. Carried through [`Sql::append`]; nothing changes on SQLite.
    pub fn planned_each_run(mut self) -> Sql {
        self.plan_each_run = true;
        self
    }

    /// Adds the value for the next `?` already in the text.
    pub fn bind(mut self, value: impl Into<Value>) -> Sql {
        self.args.push(value.into());
        self
    }

    /// Appends trusted SQL text.
    pub fn push(&mut self, text: &str) -> &mut Sql {
        self.text.push_str(text);
        self
    }

    /// Appends a `?` and its value.
    pub fn push_bind(&mut self, value: impl Into<Value>) -> &mut Sql {
        self.text.push('?');
        self.args.push(value.into());
        self
    }

    /// Appends another fragment with its values.
    pub fn append(&mut self, other: Sql) -> &mut Sql {
        self.text.push_str(&other.text);
        self.args.extend(other.args);
        self.plan_each_run |= other.plan_each_run;
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn args(&self) -> &[Value] {
        &self.args
    }
}

macro_rules! bind_all {
    ($query:expr, $args:expr) => {{
        let mut q = $query;
        for arg in $args {
            q = match arg {
                Value::Text(v) => q.bind(v),
                Value::I64(v) => q.bind(v),
                Value::Bool(v) => q.bind(v),
                Value::Bytes(v) => q.bind(v),
                Value::Time(v) => q.bind(v),
                Value::Date(v) => q.bind(v),
            };
        }
        q
    }};
}

/// A type that both backends can decode from a column.
pub trait Column: FromSqlite + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres> {}

impl<T> Column for T where T: FromSqlite + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres> {}

/// A result row from either backend.
pub enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl Row {
    /// Decodes column `name`.
    pub fn get<T: Column>(&self, name: &str) -> Result<T, StoreError> {
        self.get_prefixed("", name)
    }

    /// Decodes column `{prefix}{name}` (a join's alias) without building the name on SQLite,
    /// where rows are read on every `GET`.
    pub fn get_prefixed<T: Column>(&self, prefix: &str, name: &str) -> Result<T, StoreError> {
        Ok(match self {
            Row::Sqlite(r) => r.get_prefixed(prefix, name)?,
            Row::Postgres(r) if prefix.is_empty() => r.try_get(name)?,
            Row::Postgres(r) => r.try_get(format!("{prefix}{name}").as_str())?,
        })
    }
}

impl<'s> Tx<'s> {
    fn new(inner: TxInner) -> Tx<'s> {
        Tx {
            inner,
            deferred: Vec::new(),
            _scope: PhantomData,
        }
    }

    fn writer(writer: tokio::sync::OwnedMutexGuard<writer::Writer>, role: writer::Role) -> Tx<'s> {
        Tx::new(TxInner::Writer(writer, role))
    }

    /// The writer back from a batch member's transaction (`None` for any other kind).
    fn into_writer(self) -> Option<tokio::sync::OwnedMutexGuard<writer::Writer>> {
        match self.inner {
            TxInner::Writer(writer, _) => Some(writer),
            _ => None,
        }
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            TxInner::SqliteReader(_) | TxInner::Writer(..) => Backend::Sqlite,
            TxInner::Postgres(_) | TxInner::PostgresRead(_) | TxInner::PostgresSingle(_) => {
                Backend::Postgres
            }
        }
    }

    /// The PostgreSQL statement text, checked against the number of bind values. (SQLite keeps
    /// the text; `sqlite::prepare` checks the count against the prepared statement's.)
    fn prepare<'q>(
        &self,
        text: &'q str,
        binds: usize,
    ) -> Result<std::borrow::Cow<'q, str>, StoreError> {
        let (text, placeholders) = dialect::placeholders(self.backend(), text);
        if placeholders != binds {
            return Err(StoreError::BindCount {
                placeholders,
                binds,
            });
        }
        Ok(text)
    }

    /// The SQLite connection of this transaction, if it is on SQLite.
    fn sqlite_conn(&self) -> Option<&rusqlite::Connection> {
        match &self.inner {
            TxInner::SqliteReader(reader) => Some(reader.conn()),
            TxInner::Writer(writer, _) => Some(&writer.conn),
            TxInner::Postgres(_) | TxInner::PostgresRead(_) | TxInner::PostgresSingle(_) => None,
        }
    }

    /// The PostgreSQL connection of this transaction, if it is on PostgreSQL.
    fn postgres_conn(&mut self) -> Option<&mut PgConnection> {
        match &mut self.inner {
            TxInner::Postgres(tx) => Some(tx.conn()),
            TxInner::PostgresRead(tx) => Some(&mut **tx),
            TxInner::PostgresSingle(conn) => Some(&mut **conn),
            TxInner::SqliteReader(_) | TxInner::Writer(..) => None,
        }
    }

    /// Runs a statement; answers the number of rows it changed.
    pub async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError> {
        self.flush().await?;
        self.execute_now(sql).await
    }

    /// Runs a write that must change exactly `rows` rows and whose effects nothing in this
    /// transaction reads back; `what` names it in the `Corrupt` error of another count. On a
    /// PostgreSQL transaction it is queued and sent with the other queued writes in one
    /// statement, before the transaction's next statement or its commit ([`deferred`] says
    /// when that is safe); elsewhere it runs at once.
    pub async fn execute_deferred(
        &mut self,
        sql: Sql,
        rows: u64,
        what: &'static str,
    ) -> Result<(), StoreError> {
        let mut write = deferred::Deferred { sql, rows, what };
        let table = match (&self.inner, deferred::written_table(write.sql.text())) {
            (TxInner::Postgres(_), Some(table)) => table,
            _ => {
                let changed = self.execute(std::mem::take(&mut write.sql)).await?;
                return write.check(changed);
            }
        };
        let queued = |d: &deferred::Deferred| deferred::written_table(d.sql.text()) == Some(table);
        if self.deferred.iter().any(queued) {
            self.flush().await?;
        }
        self.deferred.push(write);
        Ok(())
    }

    /// Sends the queued writes: one alone as it is, several as one statement.
    async fn flush(&mut self) -> Result<(), StoreError> {
        let mut writes = std::mem::take(&mut self.deferred);
        match writes.as_mut_slice() {
            [] => Ok(()),
            [write] => {
                let changed = self.execute_now(std::mem::take(&mut write.sql)).await?;
                write.check(changed)
            }
            _ => {
                let row = self
                    .fetch_now(deferred::combine(&mut writes), true)
                    .await?
                    .pop()
                    .ok_or(StoreError::Database(sqlx::Error::RowNotFound))?;
                for (i, write) in writes.iter().enumerate() {
                    let changed: i64 = row.get(&deferred::count_column(i))?;
                    write.check(u64::try_from(changed).unwrap_or(u64::MAX))?;
                }
                Ok(())
            }
        }
    }

    async fn execute_now(&mut self, sql: Sql) -> Result<u64, StoreError> {
        if let Some(conn) = self.sqlite_conn() {
            return sqlite::execute(conn, &sql.text, &sql.args);
        }
        let text = self.prepare(&sql.text, sql.args.len())?;
        let query = bind_all!(sqlx::query(&text).persistent(!sql.plan_each_run), sql.args);
        let conn = self.postgres_conn().expect("not SQLite, so PostgreSQL");
        Ok(query.execute(conn).await?.rows_affected())
    }

    /// Runs a query and answers all rows.
    pub async fn fetch_all(&mut self, sql: Sql) -> Result<Vec<Row>, StoreError> {
        self.fetch(sql, false).await
    }

    /// Runs a query and answers its first row, if any.
    pub async fn fetch_optional(&mut self, sql: Sql) -> Result<Option<Row>, StoreError> {
        Ok(self.fetch(sql, true).await?.into_iter().next())
    }

    async fn fetch(&mut self, sql: Sql, first_only: bool) -> Result<Vec<Row>, StoreError> {
        self.flush().await?;
        self.fetch_now(sql, first_only).await
    }

    async fn fetch_now(&mut self, sql: Sql, first_only: bool) -> Result<Vec<Row>, StoreError> {
        if let Some(conn) = self.sqlite_conn() {
            let rows = sqlite::fetch(conn, &sql.text, &sql.args, first_only)?;
            return Ok(rows.into_iter().map(Row::Sqlite).collect());
        }
        let text = self.prepare(&sql.text, sql.args.len())?;
        let query = bind_all!(sqlx::query(&text).persistent(!sql.plan_each_run), sql.args);
        let conn = self.postgres_conn().expect("not SQLite, so PostgreSQL");
        let rows = if first_only {
            query.fetch_optional(conn).await?.into_iter().collect()
        } else {
            query.fetch_all(conn).await?
        };
        Ok(rows.into_iter().map(Row::Postgres).collect())
    }

    /// Runs a query that must answer a row.
    /// The first row of `sql`, if any, read with `map`.
    pub async fn fetch_optional_as<T>(
        &mut self,
        sql: Sql,
        map: impl Fn(&Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        self.fetch_optional(sql)
            .await?
            .as_ref()
            .map(map)
            .transpose()
    }

    /// Every row of `sql`, read with `map`.
    pub async fn fetch_all_as<T>(
        &mut self,
        sql: Sql,
        map: impl Fn(&Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        self.fetch_all(sql).await?.iter().map(map).collect()
    }

    pub async fn fetch_one(&mut self, sql: Sql) -> Result<Row, StoreError> {
        self.fetch_optional(sql)
            .await?
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }

    pub async fn commit(mut self) -> Result<(), StoreError> {
        if let Err(e) = self.flush().await {
            // Ended before answering: the caller's retry must not find this transaction's
            // locks (an idempotency key's among them) still held by a rollback not yet sent.
            let _ = self.rollback().await;
            return Err(e);
        }
        match self.inner {
            TxInner::SqliteReader(reader) => {
                if !reader.conn().is_autocommit() {
                    sqlite::control(reader.conn(), "COMMIT")?;
                }
            }
            TxInner::Writer(w, role) => writer::end(w, role, true).await?,
            TxInner::Postgres(tx) => tx.commit().await?,
            TxInner::PostgresRead(tx) => tx.commit().await?,
            TxInner::PostgresSingle(_) => {}
        }
        Ok(())
    }

    /// Ends a read transaction: nothing in it is kept. On PostgreSQL without waiting: dropping
    /// sqlx's transaction queues its `ROLLBACK` on the connection, and the pool's check of the
    /// connection on its way back (a `Sync` and its answer, sent for every connection) sends it
    /// and waits for both, off the request's path. Elsewhere a rollback.
    async fn end_read(self) {
        match self.inner {
            TxInner::PostgresRead(tx) => drop(tx),
            _ => {
                let _ = self.rollback().await;
            }
        }
    }

    pub async fn rollback(self) -> Result<(), StoreError> {
        match self.inner {
            TxInner::SqliteReader(reader) => {
                if !reader.conn().is_autocommit() {
                    sqlite::control(reader.conn(), "ROLLBACK")?;
                }
            }
            TxInner::Writer(w, role) => writer::end(w, role, false).await?,
            TxInner::Postgres(tx) => tx.rollback().await?,
            TxInner::PostgresRead(tx) => tx.rollback().await?,
            TxInner::PostgresSingle(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn sql_fragments_carry_their_bind_values() {
        let mut sql = Sql::new("SELECT id FROM t WHERE platform_id = ?").bind("plat_x");
        sql.push(" AND n > ").push_bind(5i64);
        sql.append(Sql::new(" AND flag = ?").bind(Some(true)));
        sql.push(" AND gone IS ").push_bind(Option::<String>::None);
        assert_eq!(
            sql.text(),
            "SELECT id FROM t WHERE platform_id = ? AND n > ? AND flag = ? AND gone IS ?"
        );
        assert_eq!(
            sql.args(),
            &[
                Value::Text(Some("plat_x".into())),
                Value::I64(Some(5)),
                Value::Bool(Some(true)),
                Value::Text(None)
            ]
        );
        assert!(!sql.plan_each_run);
        sql.append(Sql::new(" AND x = ?").bind(1i64).planned_each_run());
        assert!(
            sql.plan_each_run,
            "a fragment planned on each run plans its statement so"
        );
    }

    /// A file database with one table `t (n)` holding the row `1`.
    async fn counted_db(dir: &tempfile::TempDir, name: &str) -> Db {
        let url = format!("sqlite://{}/{name}.db?mode=rwc", dir.path().display());
        let db = Db::connect(&url, &StoreOptions::default())
            .await
            .expect("connect");
        db.write(|tx| {
            Box::pin(async move {
                tx.execute(Sql::new("CREATE TABLE t (n INTEGER NOT NULL)"))
                    .await?;
                tx.execute(Sql::new("INSERT INTO t VALUES (1)")).await
            })
        })
        .await
        .expect("setup");
        db
    }

    fn count_rows<'t>(tx: &'t mut Tx<'_>) -> BoxFuture<'t, Result<i64, StoreError>> {
        Box::pin(async move {
            tx.fetch_one(Sql::new("SELECT COUNT(*) AS n FROM t"))
                .await?
                .get::<i64>("n")
        })
    }

    async fn count(db: &Db, kept: bool) -> i64 {
        if kept {
            db.read_single_kept(count_rows).await.expect("kept read")
        } else {
            db.read_single(count_rows).await.expect("read")
        }
    }

    async fn add_row(db: &Db) {
        db.write(|tx| {
            Box::pin(async move { tx.execute(Sql::new("INSERT INTO t VALUES (2)")).await })
        })
        .await
        .expect("insert");
    }

    /// Inside `request_snapshot`, the key check's read transaction stays open for the request's
    /// next read: a row committed in between (by another process, say) is not seen by it, and
    /// the read after that runs on a fresh snapshot again. Outside the scope, every read is its
    /// own snapshot.
    #[tokio::test]
    async fn a_requests_key_check_and_first_read_share_one_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = counted_db(&dir, "snap").await;
        let other = counted_db(&dir, "other").await;
        // Another connection commits between the two reads, from a task outside the request
        // as another process would (a write of this request would give its snapshot back
        // first: see the last block).
        let url = format!("sqlite://{}/snap.db?mode=rwc", dir.path().display());
        let outside = Db::connect(&url, &StoreOptions::default())
            .await
            .expect("connect");
        let elsewhere = outside.clone();
        let seen = request_snapshot(async {
            assert_eq!(count(&db, true).await, 1);
            tokio::spawn(async move { add_row(&elsewhere).await })
                .await
                .expect("task");
            let first = count(&db, false).await;
            let second = count(&db, false).await;
            (first, second)
        })
        .await;
        assert_eq!(
            seen,
            (1, 2),
            "the first read shares the key check's snapshot"
        );

        // Outside a request scope the kept read is a plain one.
        assert_eq!(count(&db, true).await, 2);
        add_row(&outside).await;
        assert_eq!(count(&db, false).await, 3);

        // A write of the request ends its snapshot before waiting for the writer, and a
        // snapshot is never used for another database.
        let seen = request_snapshot(async {
            assert_eq!(count(&db, true).await, 3);
            add_row(&db).await;
            let after_write = count(&db, false).await;
            assert_eq!(count(&db, true).await, 4);
            let elsewhere = count(&other, false).await;
            (after_write, elsewhere)
        })
        .await;
        assert_eq!(seen, (4, 1));
        outside.close().await;
        other.close().await;
        db.close().await;
    }

    /// `sqlite::memory:` has no readers (each connection would see its own empty database):
    /// reads, in a transaction or not, and writes all go to the one connection.
    #[tokio::test]
    async fn an_in_memory_sqlite_database_reads_what_it_wrote() {
        let db = Db::connect("sqlite::memory:", &StoreOptions::default())
            .await
            .expect("connect");
        db.migrate().await.expect("migrate");
        assert_eq!(db.group_commit_stats(), None);
        db.write(|tx| {
            Box::pin(async move {
                let sql = Sql::new("CREATE TABLE t (n INTEGER)");
                tx.execute(sql).await?;
                tx.execute(Sql::new("INSERT INTO t VALUES (?)").bind(7i64))
                    .await
            })
        })
        .await
        .expect("write");
        let in_tx: i64 = db
            .read(|tx| {
                Box::pin(async move { tx.fetch_one(Sql::new("SELECT n FROM t")).await?.get("n") })
            })
            .await
            .expect("read");
        let single: i64 = db
            .read_single(|tx| {
                Box::pin(async move { tx.fetch_one(Sql::new("SELECT n FROM t")).await?.get("n") })
            })
            .await
            .expect("read_single");
        assert_eq!((in_tx, single), (7, 7));
        // A read left no transaction open: the next write goes through.
        db.write(|tx| Box::pin(async move { tx.execute(Sql::new("DELETE FROM t")).await }))
            .await
            .expect("write after reads");
        db.close().await;
        assert!(
            db.begin_read().await.is_err(),
            "a closed database refuses work"
        );
    }

    #[tokio::test]
    async fn unsupported_urls_are_refused() {
        let err = Db::connect("mysql://localhost/x", &StoreOptions::default())
            .await
            .err();
        assert!(matches!(err, Some(StoreError::UnsupportedUrl)));
    }
}
