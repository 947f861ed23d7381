//! Storage: connection pools, transactions with retry, a small dialect-neutral query type, and
//! the repositories.
//!
//! Design note. sqlx's `Any` driver would hide the backend but decodes through a lowest common
//! denominator of types; generic repositories over `sqlx::Database` drown every function in
//! trait bounds. Instead [`Db`] is an enum over the two concrete pools and [`Tx`] over the two
//! concrete transactions; repositories build one [`Sql`] value (text with `?` placeholders and
//! typed bind values) and the enum dispatches it, rewriting placeholders through
//! [`dialect`]. Rows come back as [`Row`], which decodes any type both drivers can decode.
//!
//! SQLite: WAL, `synchronous=FULL`, foreign keys on, a busy timeout, one writer connection and a
//! pool of readers. Measured on this hardware, several writers at `synchronous=FULL` fight over
//! the file lock (p99 near a second) while one writer keeps p99 around 30 ms, so writes queue
//! in-process for the one connection and every write transaction starts `BEGIN IMMEDIATE` (it
//! takes the file lock up front, so it cannot fail half-way with `SQLITE_BUSY_SNAPSHOT` when
//! another process shares the file). PostgreSQL: one pool, `READ COMMITTED`, row locks where a
//! read decides a write ([`dialect::for_update`]).
//!
//! [`Db::write`] retries a whole transaction on the errors [`dialect::is_retryable`] names, with
//! bounded, jittered exponential back-off.

pub mod api_keys;
pub mod bank_accounts;
pub mod counterparties;
pub mod dialect;
pub mod documents;
pub mod entities;
pub mod idempotency;
pub mod ledger;
pub mod platforms;
pub mod positive_pay;
pub mod transfers;
mod writer;

use std::collections::HashSet;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use rand::Rng;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Postgres, Row as _, Sqlite};

pub use dialect::Backend;
pub use writer::GroupCommitStats;

static SQLITE_MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// A boxed future borrowing for `'t`; what transaction closures return.
pub type BoxFuture<'t, T> = Pin<Box<dyn Future<Output = T> + Send + 't>>;

/// Failures of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database URL scheme (expected sqlite: or postgres:)")]
    UnsupportedUrl,
    #[error("query has {placeholders} placeholders but {binds} bind values")]
    BindCount { placeholders: usize, binds: usize },
    #[error("stored value is invalid: {0}")]
    Corrupt(String),
    /// Another write of the same group commit broke the shared transaction; run again.
    #[error("the group commit this write belonged to was rolled back")]
    BatchAborted,
}

/// What a transaction closure's error must tell [`Db::write`]: whether running the whole
/// transaction again may succeed. Domain error enums that wrap [`StoreError`] delegate to it.
pub trait Retryable {
    fn is_retryable(&self) -> bool;
}

impl Retryable for StoreError {
    fn is_retryable(&self) -> bool {
        match self {
            StoreError::Database(e) => dialect::is_retryable(e),
            StoreError::BatchAborted => true,
            _ => false,
        }
    }
}

impl StoreError {
    fn database_kind(&self) -> Option<sqlx::error::ErrorKind> {
        match self {
            StoreError::Database(sqlx::Error::Database(db)) => Some(db.kind()),
            _ => None,
        }
    }

    /// A UNIQUE or PRIMARY KEY constraint was violated.
    pub fn is_unique_violation(&self) -> bool {
        matches!(
            self.database_kind(),
            Some(sqlx::error::ErrorKind::UniqueViolation)
        )
    }

    /// A FOREIGN KEY constraint was violated.
    pub fn is_foreign_key_violation(&self) -> bool {
        matches!(
            self.database_kind(),
            Some(sqlx::error::ErrorKind::ForeignKeyViolation)
        )
    }

    /// A CHECK constraint was violated (for example a balance going below zero).
    pub fn is_check_violation(&self) -> bool {
        matches!(
            self.database_kind(),
            Some(sqlx::error::ErrorKind::CheckViolation)
        )
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
            max_attempts: 8,
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

/// Tuning of the pools; defaults suit a single small server.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How long SQLite waits for a file lock before answering `SQLITE_BUSY`.
    pub sqlite_busy_timeout: Duration,
    /// Reader connections of the SQLite pool (the writer is always one).
    pub sqlite_readers: u32,
    /// SQLite's `synchronous` setting: `FULL` (every commit is on disk before it is
    /// acknowledged) unless a benchmark asks for the weaker `NORMAL`.
    pub sqlite_synchronous: SqliteSynchronous,
    /// Whether concurrent SQLite writes share one transaction and one fsync (see `writer`).
    pub sqlite_group_commit: bool,
    /// Connections of the PostgreSQL pool.
    pub postgres_max_connections: u32,
    /// How long a caller waits for a pooled connection.
    pub acquire_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            sqlite_busy_timeout: Duration::from_secs(5),
            sqlite_readers: 4,
            sqlite_synchronous: SqliteSynchronous::Full,
            sqlite_group_commit: true,
            postgres_max_connections: 16,
            acquire_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
        }
    }
}

enum Pools {
    Sqlite {
        writer: SqliteWriter,
        readers: SqlitePool,
    },
    Postgres(PgPool),
}

/// SQLite's one writer: a one-connection pool with a transaction per write, or the
/// group-committing writer.
enum SqliteWriter {
    Pool(SqlitePool),
    Group(writer::GroupWriter),
}

struct Inner {
    pools: Pools,
    retry: RetryPolicy,
    local_locks: Mutex<HashSet<String>>,
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
                .connect(url)
                .await?;
            Pools::Postgres(pool)
        } else {
            return Err(StoreError::UnsupportedUrl);
        };
        Ok(Db {
            inner: Arc::new(Inner {
                pools,
                retry: options.retry,
                local_locks: Mutex::new(HashSet::new()),
            }),
        })
    }

    async fn sqlite_pools(url: &str, options: &StoreOptions) -> Result<Pools, StoreError> {
        let connect = SqliteConnectOptions::from_str(url)?
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(options.sqlite_synchronous)
            .foreign_keys(true)
            .busy_timeout(options.sqlite_busy_timeout);
        let in_memory = connect.get_filename() == std::path::Path::new(":memory:")
            || url.contains("mode=memory");
        if !in_memory {
            // `bankd serve` must work on a fresh machine: create `./data` (or wherever the file
            // goes) rather than fail with "unable to open database file".
            if let Some(parent) = connect
                .get_filename()
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
            {
                std::fs::create_dir_all(parent)
                    .map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
            }
        }
        if options.sqlite_group_commit && !in_memory {
            let writer = writer::GroupWriter::new(writer::connect(&connect).await?);
            let readers = SqlitePoolOptions::new()
                .max_connections(options.sqlite_readers.max(1))
                .acquire_timeout(options.acquire_timeout)
                .connect_with(connect.read_only(true).create_if_missing(false))
                .await?;
            return Ok(Pools::Sqlite {
                writer: SqliteWriter::Group(writer),
                readers,
            });
        }
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(options.acquire_timeout)
            // Keep the writer for the life of the process: an in-memory database lives only as
            // long as its connection.
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(connect.clone())
            .await?;
        let readers = if in_memory {
            // Separate connections to `:memory:` would each see their own empty database, so
            // the writer serves reads too (and cannot group-commit).
            writer.clone()
        } else {
            SqlitePoolOptions::new()
                .max_connections(options.sqlite_readers.max(1))
                .acquire_timeout(options.acquire_timeout)
                .connect_with(connect.read_only(true).create_if_missing(false))
                .await?
        };
        let writer = SqliteWriter::Pool(writer);
        Ok(Pools::Sqlite { writer, readers })
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
                writer: SqliteWriter::Group(group),
                ..
            } => Some(group.stats()),
            _ => None,
        }
    }

    /// Applies the embedded migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.inner.pools {
            Pools::Sqlite {
                writer: SqliteWriter::Pool(writer),
                ..
            } => SQLITE_MIGRATOR.run(writer).await?,
            Pools::Sqlite {
                writer: SqliteWriter::Group(writer),
                ..
            } => writer.migrate(&SQLITE_MIGRATOR).await?,
            Pools::Postgres(pool) => POSTGRES_MIGRATOR.run(pool).await?,
        }
        Ok(())
    }

    /// The retry policy of [`Db::write`], for callers that run their own transaction loop.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// Closes every pooled connection.
    pub async fn close(&self) {
        match &self.inner.pools {
            Pools::Sqlite { writer, readers } => {
                readers.close().await;
                match writer {
                    SqliteWriter::Pool(pool) => pool.close().await,
                    SqliteWriter::Group(group) => group.close().await,
                }
            }
            Pools::Postgres(pool) => pool.close().await,
        }
    }

    /// Begins a write transaction without retry; prefer [`Db::write`].
    pub async fn begin_write<'s>(&self) -> Result<Tx<'s>, StoreError> {
        let inner = match &self.inner.pools {
            Pools::Sqlite {
                writer: SqliteWriter::Pool(pool),
                ..
            } => TxInner::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Pools::Sqlite {
                writer: SqliteWriter::Group(group),
                ..
            } => TxInner::Writer(group.begin_exclusive().await?, writer::Role::Exclusive),
            Pools::Postgres(pool) => TxInner::Postgres(pool.begin().await?),
        };
        Ok(Tx {
            inner,
            _scope: PhantomData,
        })
    }

    /// Begins a read-only transaction: a consistent snapshot for multi-query reads (a page and
    /// its cursor lookup). On SQLite it runs on a reader connection, so it never waits for the
    /// writer.
    pub async fn begin_read<'s>(&self) -> Result<Tx<'s>, StoreError> {
        let inner = match &self.inner.pools {
            Pools::Sqlite { readers, .. } => TxInner::Sqlite(readers.begin().await?),
            Pools::Postgres(pool) => TxInner::Postgres(pool.begin().await?),
        };
        Ok(Tx {
            inner,
            _scope: PhantomData,
        })
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
        let policy = self.inner.retry;
        let mut attempt = 1u32;
        loop {
            let result = match &self.inner.pools {
                Pools::Sqlite {
                    writer: SqliteWriter::Group(group),
                    ..
                } => group.attempt(ctx, &mut f).await,
                _ => self.attempt_alone(ctx, &mut f).await,
            };
            match result {
                Err(e) if e.is_retryable() && attempt < policy.max_attempts.max(1) => {
                    tracing::debug!(attempt, "retrying transaction after a retryable error");
                    tokio::time::sleep(policy.backoff(attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// One attempt of a write in a transaction of its own.
    async fn attempt_alone<'s, C, T, E, F>(&self, ctx: &mut C, f: &mut F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError>,
    {
        let mut tx = self.begin_write().await?;
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

    /// Runs `f` in a read transaction (no retry needed: readers take no write locks).
    pub async fn read<'s, T, E, F>(&self, mut f: F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError>,
    {
        let mut tx = self.begin_read().await?;
        let result = f(&mut tx).await;
        // Nothing to keep from a read: rolling back ends the snapshot either way.
        let _ = tx.rollback().await;
        result
    }

    /// Runs `f`, which must issue exactly one statement, on a pooled read connection outside
    /// any transaction. One statement is its own snapshot, so `BEGIN` and `ROLLBACK` would only
    /// add two round trips to the connection (on SQLite each is a hand-off to sqlx's worker
    /// thread, the main cost of a small read: see bench/README.md).
    pub async fn read_single<'s, T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: for<'t> FnOnce(&'t mut Tx<'s>) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError>,
    {
        let inner = match &self.inner.pools {
            Pools::Sqlite { readers, .. } => {
                TxInner::SqliteSingle(readers.acquire().await.map_err(StoreError::from)?)
            }
            Pools::Postgres(pool) => {
                TxInner::PostgresSingle(pool.acquire().await.map_err(StoreError::from)?)
            }
        };
        let mut tx = Tx {
            inner,
            _scope: PhantomData,
        };
        f(&mut tx).await
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
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    /// A pooled connection outside any transaction: each statement commits on its own (see
    /// [`Db::read_single`]).
    SqliteSingle(sqlx::pool::PoolConnection<Sqlite>),
    PostgresSingle(sqlx::pool::PoolConnection<Postgres>),
    /// On the group-committing writer: a batch member or an exclusive transaction.
    Writer(tokio::sync::OwnedMutexGuard<writer::Writer>, writer::Role),
    Postgres(sqlx::Transaction<'static, Postgres>),
}

/// An open transaction on either backend. Dropping it without [`Tx::commit`] rolls back.
pub struct Tx<'s> {
    inner: TxInner,
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
}

impl Sql {
    /// A statement or fragment; `text` must be trusted SQL (never user input: that goes in binds).
    pub fn new(text: impl Into<String>) -> Sql {
        Sql {
            text: text.into(),
            args: Vec::new(),
        }
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

/// A type that both drivers can decode from a column.
pub trait Column:
    for<'r> sqlx::Decode<'r, Sqlite>
    + sqlx::Type<Sqlite>
    + for<'r> sqlx::Decode<'r, Postgres>
    + sqlx::Type<Postgres>
{
}

impl<T> Column for T where
    T: for<'r> sqlx::Decode<'r, Sqlite>
        + sqlx::Type<Sqlite>
        + for<'r> sqlx::Decode<'r, Postgres>
        + sqlx::Type<Postgres>
{
}

/// A result row from either backend.
pub enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl Row {
    /// Decodes column `name`.
    pub fn get<T: Column>(&self, name: &str) -> Result<T, StoreError> {
        Ok(match self {
            Row::Sqlite(r) => r.try_get(name)?,
            Row::Postgres(r) => r.try_get(name)?,
        })
    }
}

impl<'s> Tx<'s> {
    fn writer(writer: tokio::sync::OwnedMutexGuard<writer::Writer>, role: writer::Role) -> Tx<'s> {
        Tx {
            inner: TxInner::Writer(writer, role),
            _scope: PhantomData,
        }
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
            TxInner::Sqlite(_) | TxInner::SqliteSingle(_) | TxInner::Writer(..) => Backend::Sqlite,
            TxInner::Postgres(_) | TxInner::PostgresSingle(_) => Backend::Postgres,
        }
    }

    fn prepare(&self, sql: &Sql) -> Result<String, StoreError> {
        let (text, placeholders) = dialect::placeholders(self.backend(), &sql.text);
        if placeholders != sql.args.len() {
            return Err(StoreError::BindCount {
                placeholders,
                binds: sql.args.len(),
            });
        }
        Ok(text.into_owned())
    }

    /// Runs a statement; answers the number of rows it changed.
    pub async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError> {
        let text = self.prepare(&sql)?;
        Ok(match &mut self.inner {
            TxInner::Sqlite(tx) => bind_all!(sqlx::query(&text), sql.args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
            TxInner::Writer(w, _) => bind_all!(sqlx::query(&text), sql.args)
                .execute(&mut w.conn)
                .await?
                .rows_affected(),
            TxInner::Postgres(tx) => bind_all!(sqlx::query(&text), sql.args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
            TxInner::SqliteSingle(conn) => bind_all!(sqlx::query(&text), sql.args)
                .execute(&mut **conn)
                .await?
                .rows_affected(),
            TxInner::PostgresSingle(conn) => bind_all!(sqlx::query(&text), sql.args)
                .execute(&mut **conn)
                .await?
                .rows_affected(),
        })
    }

    /// Runs a query and answers all rows.
    pub async fn fetch_all(&mut self, sql: Sql) -> Result<Vec<Row>, StoreError> {
        let text = self.prepare(&sql)?;
        Ok(match &mut self.inner {
            TxInner::Sqlite(tx) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .map(Row::Sqlite)
                .collect(),
            TxInner::Writer(w, _) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_all(&mut w.conn)
                .await?
                .into_iter()
                .map(Row::Sqlite)
                .collect(),
            TxInner::Postgres(tx) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .map(Row::Postgres)
                .collect(),
            TxInner::SqliteSingle(conn) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_all(&mut **conn)
                .await?
                .into_iter()
                .map(Row::Sqlite)
                .collect(),
            TxInner::PostgresSingle(conn) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_all(&mut **conn)
                .await?
                .into_iter()
                .map(Row::Postgres)
                .collect(),
        })
    }

    /// Runs a query and answers its first row, if any.
    pub async fn fetch_optional(&mut self, sql: Sql) -> Result<Option<Row>, StoreError> {
        let text = self.prepare(&sql)?;
        Ok(match &mut self.inner {
            TxInner::Sqlite(tx) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_optional(&mut **tx)
                .await?
                .map(Row::Sqlite),
            TxInner::Writer(w, _) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_optional(&mut w.conn)
                .await?
                .map(Row::Sqlite),
            TxInner::Postgres(tx) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_optional(&mut **tx)
                .await?
                .map(Row::Postgres),
            TxInner::SqliteSingle(conn) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_optional(&mut **conn)
                .await?
                .map(Row::Sqlite),
            TxInner::PostgresSingle(conn) => bind_all!(sqlx::query(&text), sql.args)
                .fetch_optional(&mut **conn)
                .await?
                .map(Row::Postgres),
        })
    }

    /// Runs a query that must answer a row.
    pub async fn fetch_one(&mut self, sql: Sql) -> Result<Row, StoreError> {
        self.fetch_optional(sql)
            .await?
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }

    pub async fn commit(self) -> Result<(), StoreError> {
        match self.inner {
            TxInner::Sqlite(tx) => tx.commit().await?,
            TxInner::Writer(w, role) => writer::end(w, role, true).await?,
            TxInner::Postgres(tx) => tx.commit().await?,
            TxInner::SqliteSingle(_) | TxInner::PostgresSingle(_) => {}
        }
        Ok(())
    }

    pub async fn rollback(self) -> Result<(), StoreError> {
        match self.inner {
            TxInner::Sqlite(tx) => tx.rollback().await?,
            TxInner::Writer(w, role) => writer::end(w, role, false).await?,
            TxInner::Postgres(tx) => tx.rollback().await?,
            TxInner::SqliteSingle(_) | TxInner::PostgresSingle(_) => {}
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
    }

    #[tokio::test]
    async fn unsupported_urls_are_refused() {
        let err = Db::connect("mysql://localhost/x", &StoreOptions::default())
            .await
            .err();
        assert!(matches!(err, Some(StoreError::UnsupportedUrl)));
    }
}
