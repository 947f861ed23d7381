//! PostgreSQL: the pool, the connection a request keeps, migrations, statements, and the write
//! transactions that bankd begins and ends itself. Everything here goes through sqlx.
//!
//! The pool. sqlx pings every connection it lends by default, one more round trip per
//! transaction; bankd pings only a connection that sat idle for [`PING_IDLE`]. A request keeps
//! the connection its key check used for its own statements ([`request_connection`]), which saves
//! one acquisition and one of sqlx's checks of a connection on its way back to the pool.
//! Statements are written once with `?` placeholders ([`super::Sql`]), numbered for PostgreSQL by
//! [`super::dialect`] and prepared once per connection unless a fragment asks to be planned on
//! each run ([`super::Sql::planned_each_run`]). Migrations are sqlx's own (`migrate!` and its
//! migrator), bookkept in `_sqlx_migrations`.
//!
//! Write transactions. `sqlx::Transaction` marks itself ended only when its `COMMIT` succeeds.
//! When the `COMMIT` fails, which is where a SERIALIZABLE transaction learns of most of its
//! conflicts (SQLSTATE 40001), the server has already ended the transaction, but the dropped
//! `sqlx::Transaction` still queues a `ROLLBACK`, and PostgreSQL answers each one with the
//! warning "there is no transaction in progress". [`PgTx`] knows better: after its `COMMIT` or
//! `ROLLBACK` has been sent there is no transaction, whatever the answer was. A failure that
//! is not the server's answer (the connection broke) leaves the connection's state unknown, so
//! that connection is closed instead of going back to the pool.
//!
//! Conflict escalation. At REPEATABLE READ and SERIALIZABLE a transaction's snapshot is taken
//! at its first statement, so when several transactions queue for one hot row (a settlement
//! account every ACH credit moves), each that gets the lock after another committed a change to
//! the row fails with 40001: of a queue of N, one commits a round, and plain retries with
//! back-off exhausted their attempts in the conservation storms (1 000 requests on 5 accounts,
//! two processes). So at those levels every write transaction first takes a session-level
//! advisory lock, before its `BEGIN` and so before its snapshot ([`Gate`]): shared on its first
//! attempts, exclusive once it has conflicted [`ESCALATE_AFTER`] times. An exclusive attempt
//! runs alone among every bankd process on the database (PostgreSQL queues later shared
//! requests behind a waiting exclusive one), so other bankd writes cannot make it fail again.
//! The lock is released after `COMMIT` or `ROLLBACK`; a connection whose release is in doubt
//! is closed. Under READ COMMITTED, where row locks wait instead of failing, no gate is taken.
//!
//! Reads keep `sqlx::Transaction` ([`begin_read`]): they never commit, and dropping one queues
//! its `ROLLBACK` for the pool's check of the connection, off the request's path.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{Executor, Postgres};

use super::{
    PostgresPoolStats, Sql, StoreError, StoreOptions, Value, Violation, dialect, metric_names,
};

pub(super) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The versions of the embedded migrations that apply.
pub(super) fn migration_versions() -> Vec<i64> {
    MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| m.version)
        .collect()
}

/// A pooled connection idle for this long is pinged before it is lent.
const PING_IDLE: Duration = Duration::from_secs(10);

/// Opens the pool for a `postgres:`/`postgresql:` URL.
pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<PgPool, StoreError> {
    Ok(PgPoolOptions::new()
        .max_connections(options.postgres_max_connections.max(1))
        .acquire_timeout(options.acquire_timeout)
        // sqlx pings every connection it lends by default: one more round trip per
        // transaction. A connection in steady use is alive; only one that sat idle for a
        // while (the server may have ended it) is pinged, and replaced if dead.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IDLE {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect(url)
        .await?)
}

/// Whether the database's own default isolation (what a plain `BEGIN` gets) makes contended
/// writes fail rather than wait: anything above read committed.
pub(super) async fn default_fails_contended_writes(pool: &PgPool) -> Result<bool, StoreError> {
    let level: String = sqlx::query_scalar("SHOW default_transaction_isolation")
        .fetch_one(pool)
        .await?;
    Ok(!matches!(
        level.as_str(),
        "read committed" | "read uncommitted"
    ))
}

/// Whether PostgreSQL refused text it cannot store (U+0000, SQLSTATE 22021 or 22P05).
pub(super) fn is_unstorable_text(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "22021" || code == "22P05")
}

/// Whether the connection to PostgreSQL was lost or refused: an I/O error on the socket, SQLSTATE
/// class 08 (connection exception) or 57P01-57P03 (the server shutting down or starting up).
/// A transaction that failed so before its `COMMIT` was sent applied nothing.
pub(super) fn is_disconnect(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57P0")),
        _ => false,
    }
}

/// Whether PostgreSQL could not extend a file (SQLSTATE 53100 `disk_full`).
pub(super) fn is_disk_full(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "53100")
}

/// The constraint a failed statement violated.
pub(super) fn violation(error: &sqlx::Error) -> Option<Violation> {
    use sqlx::error::ErrorKind;
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    match db.kind() {
        ErrorKind::UniqueViolation => Some(Violation::Unique),
        ErrorKind::ForeignKeyViolation => Some(Violation::ForeignKey),
        ErrorKind::CheckViolation => Some(Violation::Check),
        _ => None,
    }
}

/// The pool's state at this moment.
pub(super) fn pool_stats(pool: &PgPool) -> PostgresPoolStats {
    let idle = u32::try_from(pool.num_idle()).unwrap_or(u32::MAX);
    PostgresPoolStats {
        idle,
        in_use: pool.size().saturating_sub(idle),
        max: pool.options().get_max_connections(),
    }
}

tokio::task_local! {
    /// The PostgreSQL connection a request's key check used, kept for the request's own
    /// statements, with the address of its database's state; see [`request_connection`].
    static REQUEST_CONNECTION: RefCell<Option<(usize, PoolConnection<Postgres>)>>;
}

/// Runs one request so that, on PostgreSQL, its key check and its reads and writes use one
/// pooled connection: [`super::Db::read_single_kept`] keeps the connection it used, and the
/// request's next read or write takes it instead of another from the pool. sqlx checks every
/// connection on its way back to the pool (a `Sync` and its answer); one connection a request
/// instead of two saves one such round trip and one acquisition a request. Whatever is kept goes
/// back to the pool when `fut` ends. Nothing changes on SQLite.
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
pub(super) fn keep_connection(db: usize, conn: PoolConnection<Postgres>) {
    let _ = REQUEST_CONNECTION.try_with(|slot| *slot.borrow_mut() = Some((db, conn)));
}

/// A connection of `pool`: the request's kept one if any ([`request_connection`]), else one
/// from the pool. `db` names the database ([`super::Db`]'s address).
pub(super) async fn connection(
    pool: &PgPool,
    db: usize,
) -> Result<PoolConnection<Postgres>, StoreError> {
    match take_kept_connection(db) {
        Some(conn) => Ok(conn),
        None => {
            let started = std::time::Instant::now();
            let conn = pool.acquire().await?;
            metrics::histogram!(metric_names::ACQUIRE_WAIT).record(started.elapsed().as_secs_f64());
            Ok(conn)
        }
    }
}

/// Begins a read transaction with `begin` on [`connection`]. The transaction owns the
/// connection and gives it back to the pool when it ends.
pub(super) async fn begin_read(
    pool: &PgPool,
    db: usize,
    begin: &'static str,
) -> Result<sqlx::Transaction<'static, Postgres>, StoreError> {
    let conn = connection(pool, db).await?;
    // sqlx's own `Pool::begin` does this; the function is public but hidden from its
    // documentation, and the only way to a transaction that owns a given pooled connection.
    Ok(sqlx::Transaction::begin(conn, Some(std::borrow::Cow::Borrowed(begin))).await?)
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

/// The statement text with PostgreSQL's numbered placeholders, checked against the number of
/// bind values. (SQLite keeps the text; `sqlite::prepare` checks the count against the prepared
/// statement's.)
fn statement(text: &str, binds: usize) -> Result<std::borrow::Cow<'_, str>, StoreError> {
    let (text, placeholders) = dialect::placeholders(dialect::Backend::Postgres, text);
    if placeholders != binds {
        return Err(StoreError::BindCount {
            placeholders,
            binds,
        });
    }
    Ok(text)
}

/// Runs a statement; answers the number of rows it changed.
pub(super) async fn execute(conn: &mut PgConnection, sql: Sql) -> Result<u64, StoreError> {
    let text = statement(&sql.text, sql.args.len())?;
    let query = bind_all!(sqlx::query(&text).persistent(!sql.plan_each_run), sql.args);
    Ok(query.execute(conn).await?.rows_affected())
}

/// Runs a query; answers its rows, or only its first when `first_only`.
pub(super) async fn fetch(
    conn: &mut PgConnection,
    sql: Sql,
    first_only: bool,
) -> Result<Vec<PgRow>, StoreError> {
    let text = statement(&sql.text, sql.args.len())?;
    let query = bind_all!(sqlx::query(&text).persistent(!sql.plan_each_run), sql.args);
    Ok(if first_only {
        query.fetch_optional(conn).await?.into_iter().collect()
    } else {
        query.fetch_all(conn).await?
    })
}

/// The isolation level that bankd asks of PostgreSQL for its write transactions.
///
/// Reads of several statements are `REPEATABLE READ, READ ONLY` whatever this says (one
/// snapshot, see [`super::Db::begin_read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// A plain `BEGIN`: the database's `default_transaction_isolation` decides (`read
    /// committed` unless an operator changed it; CockroachDB and YugabyteDB: serializable).
    #[default]
    Database,
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// The statement that begins a write transaction at this level.
    pub fn begin(self) -> &'static str {
        match self {
            Isolation::Database => "BEGIN",
            Isolation::ReadCommitted => "BEGIN ISOLATION LEVEL READ COMMITTED",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
        }
    }
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().replace([' ', '-'], "_").as_str() {
            "database" => Ok(Isolation::Database),
            "read_committed" => Ok(Isolation::ReadCommitted),
            "repeatable_read" => Ok(Isolation::RepeatableRead),
            "serializable" => Ok(Isolation::Serializable),
            _ => {
                Err("must be database, read_committed, repeatable_read or serializable".to_owned())
            }
        }
    }
}

/// Failed attempts after which a write transaction runs alone ([`Gate::Exclusive`]).
pub const ESCALATE_AFTER: u32 = 3;

/// The advisory lock key of the gate (the bytes of "bankd" as a number; bankd's other advisory
/// locks are transaction-scoped hashes of idempotency keys, a separate use of the key space
/// that a collision would only make wait).
pub const GATE_KEY: i64 = 0x0062_616e_6b64;

/// The session-level advisory lock a write attempt takes before it begins; see the module note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Shared,
    Exclusive,
}

impl Gate {
    /// The gate of attempt `attempt` (1-based).
    pub fn for_attempt(attempt: u32) -> Gate {
        if attempt > ESCALATE_AFTER {
            Gate::Exclusive
        } else {
            Gate::Shared
        }
    }

    fn lock(self) -> String {
        match self {
            Gate::Shared => format!("SELECT pg_advisory_lock_shared({GATE_KEY})"),
            Gate::Exclusive => format!("SELECT pg_advisory_lock({GATE_KEY})"),
        }
    }

    fn unlock(self) -> String {
        match self {
            Gate::Shared => format!("SELECT pg_advisory_unlock_shared({GATE_KEY})"),
            Gate::Exclusive => format!("SELECT pg_advisory_unlock({GATE_KEY})"),
        }
    }
}

/// An open write transaction on a pooled connection; see the module note. Dropped while open
/// (its request was abandoned), it is rolled back on a task of its own before the connection
/// goes back to the pool.
pub struct PgTx {
    /// `Some` while the transaction is open.
    conn: Option<PoolConnection<Postgres>>,
    /// The gate held for it, released when it ends.
    gate: Option<Gate>,
}

impl PgTx {
    /// Takes `gate` if any, then sends `begin` on `conn`. On failure nothing is open or held
    /// and the connection goes back (or is closed when that is in doubt).
    pub async fn begin(
        mut conn: PoolConnection<Postgres>,
        begin: &'static str,
        gate: Option<Gate>,
    ) -> Result<PgTx, StoreError> {
        if let Some(gate) = gate {
            // Abandoned while it waits for the gate (its request timed out), the connection is
            // closed: the server may grant the lock after the request is gone, and a
            // session-level lock lasts as long as its session; back in the pool, an exclusive
            // one would stop every later write. On an error too, as the lock is then in doubt.
            let mut waiting = CloseOnDrop(Some(conn));
            waiting.conn().execute(gate.lock().as_str()).await?;
            conn = waiting.keep();
        }
        // From here on, dropping `tx` releases what it holds.
        let mut tx = PgTx {
            conn: Some(conn),
            gate,
        };
        if let Err(e) = tx.conn().execute(begin).await {
            tx.release(None).await;
            return Err(e.into());
        }
        Ok(tx)
    }

    /// The connection, for the transaction's statements.
    pub fn conn(&mut self) -> &mut PgConnection {
        // Only `end` takes the connection, and it consumes `self`.
        self.conn
            .as_deref_mut()
            .expect("an open PgTx holds its connection")
    }

    pub async fn commit(self) -> Result<(), StoreError> {
        self.end("COMMIT").await
    }

    pub async fn rollback(self) -> Result<(), StoreError> {
        self.end("ROLLBACK").await
    }

    /// Sends `COMMIT` or `ROLLBACK`; afterwards no transaction is open, whatever the answer.
    async fn end(mut self, statement: &'static str) -> Result<(), StoreError> {
        let mut result = Ok(());
        self.release(Some((statement, &mut result))).await;
        result
    }

    /// Ends the transaction with `end` (its result stored there), if any, then gives up the
    /// gate; the connection then goes back to the pool, or is closed when a statement got no
    /// answer (the transaction or the lock may still be held on the server).
    async fn release(&mut self, end: Option<(&'static str, &mut Result<(), StoreError>)>) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        // Abandoned at one of these awaits (its request timed out), the connection is closed:
        // a statement without its answer leaves the transaction or the gate in doubt.
        let mut ending = CloseOnDrop(Some(conn));
        let conn = ending.conn();
        let mut in_doubt = false;
        if let Some((statement, result)) = end
            && let Err(e) = conn.execute(statement).await
        {
            in_doubt |= !matches!(e, sqlx::Error::Database(_));
            *result = Err(e.into());
        }
        if let Some(gate) = self.gate.take()
            && !in_doubt
        {
            in_doubt = conn.execute(gate.unlock().as_str()).await.is_err();
        }
        if !in_doubt {
            drop(ending.keep());
        }
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let (abandoned, gate) = (CloseOnDrop(Some(conn)), self.gate.take());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let mut abandoned = abandoned;
                    let mut open = PgTx {
                        conn: abandoned.0.take(),
                        gate,
                    };
                    let mut ignored = Ok(());
                    open.release(Some(("ROLLBACK", &mut ignored))).await;
                });
            }
            // No runtime to roll back on: `abandoned` closes the connection, which ends the
            // transaction and releases the gate.
            Err(_) => drop(abandoned),
        }
    }
}

/// A connection in a state that only the code holding it can end cleanly: a gate being taken,
/// a transaction being ended, or a transaction dropped while open on its way to the task that
/// rolls it back. Dropped while it still holds the connection (its future was abandoned at an
/// await, or that task never runs because the runtime is shutting down; handing it to another
/// `PgTx` there would spawn again on the closing runtime, without end), it closes the
/// connection, which ends the transaction and releases every session lock on the server.
struct CloseOnDrop(Option<PoolConnection<Postgres>>);

impl CloseOnDrop {
    fn conn(&mut self) -> &mut PoolConnection<Postgres> {
        self.0.as_mut().expect("held until kept")
    }

    /// The connection, in a known state again.
    fn keep(mut self) -> PoolConnection<Postgres> {
        self.0.take().expect("held until kept")
    }
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(mut conn) = self.0.take() {
            conn.close_on_drop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_levels_parse_in_the_spellings_operators_use() {
        for (text, level) in [
            ("database", Isolation::Database),
            ("read_committed", Isolation::ReadCommitted),
            ("READ COMMITTED", Isolation::ReadCommitted),
            ("repeatable-read", Isolation::RepeatableRead),
            ("Serializable", Isolation::Serializable),
        ] {
            assert_eq!(text.parse::<Isolation>(), Ok(level), "{text}");
        }
        assert!("snapshot".parse::<Isolation>().is_err());
        assert_eq!(Isolation::default().begin(), "BEGIN");
        assert_eq!(
            Isolation::Serializable.begin(),
            "BEGIN ISOLATION LEVEL SERIALIZABLE"
        );
    }
}
