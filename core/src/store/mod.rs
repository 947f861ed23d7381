//! Storage: connection pools, transactions with retry, a small dialect-neutral query type, and
//! the repositories.
//!
//! Design note. sqlx's `Any` driver would hide the backend but decodes through a lowest common
//! denominator of types; generic repositories over `sqlx::Database` drown every function in
//! trait bounds. Instead [`Db`] is an enum over the two backends and [`Tx`] over their
//! transactions; repositories build one [`Sql`] value (text with `?` placeholders and typed
//! bind values) and the enum dispatches it, rewriting placeholders through [`dialect`]. Rows
//! come back as [`Row`], which decodes any [`Column`] type. PostgreSQL goes through sqlx;
//! SQLite runs in-line on the calling task through rusqlite (`store::sqlite` says why).
//!
//! This file is the backend-neutral core: [`Db`] and [`Tx`], which dispatch to the backends,
//! with the neutral pieces beside it (`sql.rs`: [`Sql`], [`Value`], [`Row`]; `retry.rs`: what is
//! retried and how; `error.rs`; `options.rs`). Each backend's plumbing lives in its own file,
//! `sqlite.rs` (with `writer.rs`, its one writer, and `sqlite/`: URLs, migrations) and
//! `postgres.rs`: opening the database from its URL, pools, the connection or snapshot a
//! request keeps, migrations, and how statements run.
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
//! Every transaction is retried as a whole on the errors `StoreError::conflict` names
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
mod error;
pub mod events;
pub mod idempotency;
pub mod keyset;
pub mod ledger;
mod options;
pub mod platforms;
pub mod positive_pay;
mod postgres;
mod retry;
mod sql;
mod sqlite;
pub mod transfers;
pub mod webhooks;
mod writer;

use std::collections::HashSet;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sqlx::Postgres;
use sqlx::postgres::{PgConnection, PgPool};

/// The store's metric names (recorded through the `metrics` facade; `bankd::metrics` serves
/// them).
pub mod metric_names {
    pub const BATCH_SIZE: &str = "bankd_sqlite_group_commit_batch_size";
    pub const COMMIT_DURATION: &str = "bankd_sqlite_commit_duration_seconds";
    pub const CHECKPOINT_DURATION: &str = "bankd_sqlite_checkpoint_duration_seconds";
    pub const ACQUIRE_WAIT: &str = "bankd_postgres_acquire_wait_seconds";
    pub const RETRIES: &str = "bankd_transaction_retries_total";
    pub const EXHAUSTED: &str = "bankd_transaction_conflicts_exhausted_total";
    pub const STORAGE_FULL: &str = "bankd_storage_full_total";
}

pub use dialect::Backend;
pub use error::StoreError;
use error::Violation;
pub use options::{DEFAULT_SQLITE_MMAP_MIB, StoreOptions};
pub use postgres::GATE_KEY as POSTGRES_GATE_KEY;
pub use postgres::Isolation as PostgresIsolation;
pub use postgres::request_connection;
use retry::RetryCounters;
pub(crate) use retry::wraps_store_error;
pub use retry::{Conflict, RetryCounts, RetryPolicy, Retryable};
pub use sql::{Column, Row, Sql, Value, to_json};
pub use sqlite::{FromSqlite, SqliteRow, Synchronous as SqliteSynchronous, request_snapshot};
pub use writer::{GroupCommitStats, SLOW_HOLD};

/// A boxed future borrowing for `'t`; what transaction closures return.
pub type BoxFuture<'t, T> = Pin<Box<dyn Future<Output = T> + Send + 't>>;

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

enum Pools {
    Sqlite(sqlite::Pools),
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
    /// Set when a write found the storage full; cleared by the next write that commits.
    storage_full: AtomicBool,
    /// When the storage was last found full (for [`Db::storage_full_for`]).
    storage_full_at: Mutex<Option<std::time::Instant>>,
}

/// A handle on the database; cheap to clone and share.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

/// The isolation a write transaction asks of PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// [`StoreOptions::postgres_isolation`].
    Configured,
    /// `READ COMMITTED`: see [`Db::write_row_locked`].
    RowLocks,
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
            Pools::Sqlite(sqlite::connect(url, options)?)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Pools::Postgres(postgres::connect(url, options).await?)
        } else {
            return Err(StoreError::UnsupportedUrl);
        };
        let gated = match (&pools, options.postgres_isolation) {
            (Pools::Sqlite(_), _) | (_, PostgresIsolation::ReadCommitted) => false,
            (_, PostgresIsolation::RepeatableRead | PostgresIsolation::Serializable) => true,
            (Pools::Postgres(pool), PostgresIsolation::Database) => {
                postgres::default_fails_contended_writes(pool).await?
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
                storage_full: AtomicBool::new(false),
                storage_full_at: Mutex::new(None),
            }),
        })
    }

    pub fn backend(&self) -> Backend {
        match self.inner.pools {
            Pools::Sqlite(_) => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// The group-committing writer's counts; `None` when writes commit one by one (PostgreSQL,
    /// or SQLite with group commit off or in memory).
    pub fn group_commit_stats(&self) -> Option<GroupCommitStats> {
        match &self.inner.pools {
            Pools::Sqlite(pools) if pools.group_commit => Some(pools.writer.stats()),
            _ => None,
        }
    }

    /// The pools' state at this moment, for metrics.
    pub fn pool_stats(&self) -> PoolStats {
        match &self.inner.pools {
            Pools::Sqlite(pools) => PoolStats {
                sqlite_writer_queue: Some(pools.writer.queue_depth()),
                postgres: None,
            },
            Pools::Postgres(pool) => PoolStats {
                sqlite_writer_queue: None,
                postgres: Some(postgres::pool_stats(pool)),
            },
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
            Backend::Postgres => postgres::migration_versions(),
        };
        Ok(versions.iter().filter(|v| !applied.contains(v)).count())
    }

    /// Applies the embedded migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.inner.pools {
            Pools::Sqlite(pools) => pools.writer.migrate().await?,
            Pools::Postgres(pool) => postgres::MIGRATOR.run(pool).await?,
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
            Pools::Sqlite(pools) => pools.close().await,
            Pools::Postgres(pool) => pool.close().await,
        }
    }

    /// Begins a write transaction without retry; prefer [`Db::write`].
    pub async fn begin_write<'s>(&self) -> Result<Tx<'s>, StoreError> {
        self.begin_write_attempt(1).await
    }

    /// Begins attempt `attempt` (1-based) of a write transaction at the configured level.
    async fn begin_write_attempt<'s>(&self, attempt: u32) -> Result<Tx<'s>, StoreError> {
        self.begin_write_at(attempt, Level::Configured).await
    }

    /// Begins attempt `attempt` of a write transaction at `level`.
    async fn begin_write_at<'s>(&self, attempt: u32, level: Level) -> Result<Tx<'s>, StoreError> {
        self.check_open()?;
        sqlite::release_snapshot();
        let inner = match &self.inner.pools {
            Pools::Sqlite(pools) => TxInner::Writer(
                pools.writer.begin_exclusive().await?,
                writer::Role::Exclusive,
            ),
            Pools::Postgres(pool) => TxInner::Postgres(
                postgres::PgTx::begin(
                    postgres::connection(pool, self.id()).await?,
                    match level {
                        Level::Configured => self.inner.begin_write,
                        Level::RowLocks => PostgresIsolation::ReadCommitted.begin(),
                    },
                    (self.inner.gated && level == Level::Configured)
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

    /// Begins a read-only transaction: a consistent snapshot for multi-query reads (a page and
    /// its cursor lookup, an audit's totals and its details). On SQLite it runs on a reader
    /// connection, so it never waits for the writer. On PostgreSQL it is `REPEATABLE READ`:
    /// under the default `READ COMMITTED` each statement would see what had committed when it
    /// began, so a transfer committing between two statements could show in one and not the
    /// other.
    pub async fn begin_read<'s>(&self) -> Result<Tx<'s>, StoreError> {
        self.check_open()?;
        let inner = match &self.inner.pools {
            Pools::Sqlite(pools) => pools.begin_read().await?,
            Pools::Postgres(pool) => TxInner::PostgresRead(
                postgres::begin_read(
                    pool,
                    self.id(),
                    "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                )
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
    pub async fn write_with<'s, C, T, E, F>(&self, ctx: &mut C, f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        self.write_at(ctx, f, Level::Configured).await
    }

    /// [`Db::write`] for a transaction whose correctness rests on the row locks it takes and on
    /// its own filters, never on the isolation level: on PostgreSQL it runs at `READ COMMITTED`
    /// whatever [`StoreOptions::postgres_isolation`] says, and without the gate. The webhook
    /// outbox's claims (`FOR UPDATE SKIP LOCKED`, a queue pattern made for that level) and its
    /// outcomes (updates of rows the claim leased) are such writes. At `REPEATABLE READ` or
    /// `SERIALIZABLE`, a claim that meets a row another process's claim has just leased fails
    /// with a serialization error and is retried whole, where `READ COMMITTED` re-checks the
    /// row and skips it; the stronger levels also take predicate locks on the due attempts
    /// that nothing here needs. On SQLite (one writer, always serializable) it is
    /// [`Db::write`].
    pub async fn write_row_locked<'s, T, E, F>(&self, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        self.write_at(&mut (), |tx, _| f(tx), Level::RowLocks).await
    }

    /// The retry loop of every write: attempts at `level` until one succeeds or fails for good.
    /// SQLite's group commit runs the attempt in the writer's shared transaction (its one
    /// writer is serializable, so `level` changes nothing there).
    async fn write_at<'s, C, T, E, F>(&self, ctx: &mut C, mut f: F, level: Level) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        self.check_open()?;
        sqlite::release_snapshot();
        let mut attempt = 1u32;
        loop {
            let result = match &self.inner.pools {
                Pools::Sqlite(pools) if pools.group_commit => {
                    pools.writer.attempt(ctx, &mut f).await
                }
                _ => self.attempt_alone(ctx, &mut f, attempt, level).await,
            };
            let done = match result {
                Err(e) if self.try_again(&e, attempt).await => {
                    attempt += 1;
                    continue;
                }
                // Its batches kept being rolled back while the storage is full (other members
                // could not fit): that, not a conflict, is why it did not go through.
                Err(e) if e.conflict() == Some(Conflict::BatchAborted) && self.storage_full() => {
                    Err(StoreError::StorageFull.into())
                }
                done => done,
            };
            self.note_storage(&done);
            return done;
        }
    }

    /// Runs `delete` (a statement bounded to `chunk` rows, answering how many it deleted) in
    /// transactions of its own until one deletes fewer than `chunk`; answers the total. After
    /// each chunk it pauses three times as long as the chunk held the database, so that a
    /// large purge takes at most about a quarter of SQLite's one writer (on PostgreSQL the
    /// chunks keep each transaction short). For housekeeping: expired idempotency keys,
    /// retention, the attempts of deleted endpoints.
    pub async fn delete_in_chunks<'s, F>(
        &self,
        chunk: u32,
        mut delete: F,
    ) -> Result<u64, StoreError>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, u32) -> BoxFuture<'t, Result<u64, StoreError>>,
    {
        let mut total = 0;
        loop {
            let (deleted, held) = self
                .write(|tx| {
                    let started = std::time::Instant::now();
                    let deleting = delete(tx, chunk);
                    Box::pin(
                        async move { Ok::<_, StoreError>((deleting.await?, started.elapsed())) },
                    )
                })
                .await?;
            total += deleted;
            if deleted < u64::from(chunk) {
                return Ok(total);
            }
            tokio::time::sleep(held * 3).await;
        }
    }

    /// Keeps [`Db::storage_full`] up to date with a write's outcome, and counts full storage.
    fn note_storage<T, E: Retryable>(&self, outcome: &Result<T, E>) {
        let full = &self.inner.storage_full;
        match outcome {
            Ok(_) if full.load(Ordering::Relaxed) && full.swap(false, Ordering::Relaxed) => {
                tracing::info!("storage: writes commit again");
            }
            Err(e) if e.is_storage_full() => {
                metrics::counter!(metric_names::STORAGE_FULL).increment(1);
                if let Ok(mut at) = self.inner.storage_full_at.lock() {
                    *at = Some(std::time::Instant::now());
                }
                if !full.swap(true, Ordering::Relaxed) {
                    tracing::error!(error = ?e.store_error(), "storage is full: writes are refused");
                }
            }
            _ => {}
        }
    }

    /// Whether the latest write found the storage full (no write has committed since).
    pub fn storage_full(&self) -> bool {
        self.inner.storage_full.load(Ordering::Relaxed)
    }

    /// How long ago a write last found the storage full, while no write has committed since.
    pub fn storage_full_for(&self) -> Option<std::time::Duration> {
        if !self.storage_full() {
            return None;
        }
        let at = *self.inner.storage_full_at.lock().ok()?;
        at.map(|at| at.elapsed())
    }

    /// Writes one row to learn whether writes fit again; a success clears
    /// [`Db::storage_full`]. For readiness, which would otherwise wait for a client's write.
    pub async fn probe_storage(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            Box::pin(async move {
                tx.execute(
                    Sql::new(
                        "INSERT INTO storage_probe (id, checked_at) VALUES (1, ?) \
                         ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
                    )
                    .bind(now.to_rfc3339()),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Attempt `attempt` of a write at `level` in a transaction of its own.
    async fn attempt_alone<'s, C, T, E, F>(
        &self,
        ctx: &mut C,
        f: &mut F,
        attempt: u32,
        level: Level,
    ) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError>,
    {
        let mut tx = self.begin_write_at(attempt, level).await?;
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
            Pools::Sqlite(pools) => pools.single_read().await?,
            Pools::Postgres(pool) => {
                TxInner::PostgresSingle(postgres::connection(pool, self.id()).await?)
            }
        };
        let mut tx = Tx::new(inner);
        let result = f(&mut tx).await;
        if let TxInner::PostgresSingle(conn) = tx.inner {
            // One statement, finished: the connection is idle, and the request may keep it.
            postgres::keep_connection(self.id(), conn);
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
            Pools::Sqlite(sqlite::Pools {
                readers: Some(readers),
                ..
            }) if sqlite::in_request_snapshot() => readers,
            _ => return self.read_single(f).await,
        };
        self.check_open()?;
        sqlite::release_snapshot();
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
            sqlite::keep_snapshot(reader);
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
    /// statement, before the transaction's next statement or its commit (`deferred` says
    /// when that is safe); elsewhere it runs at once.
    pub async fn execute_deferred(
        &mut self,
        sql: Sql,
        rows: u64,
        what: &'static str,
    ) -> Result<(), StoreError> {
        self.defer(sql, Some(rows), what).await
    }

    /// Like [`Tx::execute_deferred`] for a write whose row count is not known in advance (the
    /// fan-out of an event to the endpoints that subscribe to it).
    pub async fn execute_deferred_any(
        &mut self,
        sql: Sql,
        what: &'static str,
    ) -> Result<(), StoreError> {
        self.defer(sql, None, what).await
    }

    async fn defer(
        &mut self,
        sql: Sql,
        rows: Option<u64>,
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
        let conn = self.postgres_conn().expect("not SQLite, so PostgreSQL");
        postgres::execute(conn, sql).await
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
        let conn = self.postgres_conn().expect("not SQLite, so PostgreSQL");
        let rows = postgres::fetch(conn, sql, first_only).await?;
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
        self.end(true).await
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
        self.end(false).await
    }

    /// Commits (`commit`) or rolls back whatever transaction is open; queued writes are not
    /// sent ([`Tx::commit`] flushes them first).
    async fn end(self, commit: bool) -> Result<(), StoreError> {
        match self.inner {
            TxInner::SqliteReader(reader) => {
                if !reader.conn().is_autocommit() {
                    sqlite::control(reader.conn(), if commit { "COMMIT" } else { "ROLLBACK" })?;
                }
            }
            TxInner::Writer(w, role) => writer::end(w, role, commit).await?,
            TxInner::Postgres(tx) if commit => tx.commit().await.map_err(|e| match e {
                StoreError::Database(e) if postgres::is_disconnect(&e) => {
                    StoreError::CommitInterrupted(e.to_string())
                }
                e => e,
            })?,
            TxInner::Postgres(tx) => tx.rollback().await?,
            TxInner::PostgresRead(tx) if commit => tx.commit().await?,
            TxInner::PostgresRead(tx) => tx.rollback().await?,
            TxInner::PostgresSingle(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unsupported_urls_are_refused() {
        let err = Db::connect("mysql://localhost/x", &StoreOptions::default())
            .await
            .err();
        assert!(matches!(err, Some(StoreError::UnsupportedUrl)));
    }
}
