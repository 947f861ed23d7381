//! SQLite, run in-line on the calling thread.
//!
//! sqlx runs every SQLite connection on a thread of its own and hands each statement to it and
//! back over channels: two thread wake-ups per statement, whatever the statement does. On this
//! project's hardware that hand-off, not SQLite, was most of the cost of a small read or write
//! (bench/README.md has the profile). A point lookup or a one-row insert on a warm page cache
//! takes SQLite a few microseconds, less than one wake-up, so bankd runs SQLite statements
//! directly on the task that needs them (rusqlite, over the SQLite it bundles).
//!
//! What blocks, and for how long: a statement runs to completion on a tokio worker. Reads are
//! index lookups bounded by a page of at most 100 rows. Writes run on the one writer connection;
//! the only slow statement is the `COMMIT` of a batch under `synchronous=FULL`, one fsync of the
//! log for the whole batch (a couple of milliseconds here), during which the other worker serves
//! HTTP and reads. Copying the log into the database file (the checkpoint, with its own fsync)
//! runs on a thread of its own ([`Checkpointer`]). Waiting for another process's write lock is
//! never done inside SQLite (the writer's busy timeout is zero): the writer waits with async
//! sleeps instead (`writer::Writer::begin`).
//!
//! Values keep the encoding sqlx gave them, so databases written before this module read back
//! unchanged: times as RFC 3339 text (`to_rfc3339_opts(AutoSi)`), dates as `YYYY-MM-DD`, booleans
//! as 0/1.
//!
//! What is here: opening a database from its `sqlite:` URL ([`connect`]; `sqlite/url.rs` reads it,
//! [`Synchronous`] is the durability setting) into [`Pools`] (the one writer of `super::writer`,
//! the readers, the checkpointer), the request's kept read transaction ([`request_snapshot`]),
//! running statements and decoding rows, and the migrations (`sqlite/migrate.rs`).
//! rusqlite is the only SQLite driver bankd links; sqlx serves PostgreSQL alone.

use std::cell::RefCell;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{CachedStatement, Connection, ErrorCode, OpenFlags, ToSql};

use super::{StoreError, StoreOptions, TxInner, Value, Violation, writer};

mod migrate;
mod url;

pub(super) use migrate::{migrate, migrations};

tokio::task_local! {
    /// The read transaction that a `GET`'s key check left open on a SQLite reader, for the
    /// request's first read; see [`request_snapshot`].
    static REQUEST_SNAPSHOT: RefCell<Option<Reader>>;
}

/// Runs one read-only request (`GET`, `HEAD`) so that its key check and its first read share one
/// SQLite read transaction, on one reader: [`super::Db::read_single_kept`] leaves the
/// transaction open and the next [`super::Db::read_single`] or [`super::Db::read`] of the
/// request runs in it. Starting and ending a read transaction (the WAL read lock in the
/// shared-memory file, an `fcntl` and a mutex) was 16.6 % of a GET's profile for its two;
/// bench/README.md has the figures. The key
/// and the data then come from one snapshot, which is what a single statement would give.
/// Whatever is left open is rolled back, and the reader given back, when `fut` ends; a write
/// gives it back first ([`super::Db::write`]), so a snapshot never waits for the writer.
pub async fn request_snapshot<F: Future>(fut: F) -> F::Output {
    REQUEST_SNAPSHOT.scope(RefCell::new(None), fut).await
}

/// The request's open snapshot, if it is one of `readers`' (another database's is given back).
pub(super) fn take_snapshot(readers: &Arc<Readers>) -> Option<Reader> {
    REQUEST_SNAPSHOT
        .try_with(|slot| slot.borrow_mut().take())
        .ok()
        .flatten()
        .filter(|reader| reader.belongs_to(readers))
}

/// Ends the request's open snapshot, if any (rolled back, the reader given back).
pub(super) fn release_snapshot() {
    let taken = REQUEST_SNAPSHOT.try_with(|slot| slot.borrow_mut().take());
    drop(taken);
}

/// Whether this task runs inside [`request_snapshot`].
pub(super) fn in_request_snapshot() -> bool {
    REQUEST_SNAPSHOT.try_with(|_| ()).is_ok()
}

/// Keeps `reader`, in its open read transaction, for the request's next read (to be ended by
/// that read or when the request ends); outside [`request_snapshot`] it goes back at once.
pub(super) fn keep_snapshot(reader: Reader) {
    let _ = REQUEST_SNAPSHOT.try_with(|slot| *slot.borrow_mut() = Some(reader));
}

/// Opens the writer, the readers and the checkpointer for a `sqlite:` URL.
pub(super) fn connect(url: &str, options: &StoreOptions) -> Result<Pools, StoreError> {
    let path = database_path(url)?;
    let settings = Settings {
        path,
        synchronous: options.sqlite_synchronous.pragma(),
        busy_timeout: options.sqlite_busy_timeout,
        wal_restart_frames: WAL_RESTART_FRAMES,
        reader_mmap_bytes: i64::try_from(options.sqlite_reader_mmap_bytes).unwrap_or(i64::MAX),
        log_buffer: options.sqlite_log_buffer,
    };
    let checkpointer = Checkpointer::start(&settings)?;
    let writer = writer::GroupWriter::new(
        settings.open_writer()?,
        options.sqlite_busy_timeout,
        checkpointer.as_ref().map(Checkpointer::signal),
    );
    // Separate connections to `:memory:` would each see their own empty database, so there
    // the writer serves reads too, and cannot group-commit (a read would end the batch).
    let in_memory = settings.in_memory();
    let readers = (!in_memory).then(|| Readers::new(settings, options.sqlite_readers as usize));
    Ok(Pools {
        writer,
        group_commit: options.sqlite_group_commit && !in_memory,
        readers,
        checkpointer,
    })
}

/// A SQLite database's connections.
pub(super) struct Pools {
    /// The one writer connection.
    pub writer: writer::GroupWriter,
    /// Whether concurrent writes share a batch transaction (otherwise each write is a
    /// transaction of its own on the writer).
    pub group_commit: bool,
    /// Reader connections; `None` for an in-memory database, where the writer reads too.
    pub readers: Option<Arc<Readers>>,
    /// Checkpoints the log off the writer; `None` in memory.
    checkpointer: Option<Checkpointer>,
}

impl Pools {
    /// A read transaction ([`super::Db::begin_read`]): the request's open snapshot if any, else
    /// a reader that begins one; in memory, the writer.
    pub async fn begin_read(&self) -> Result<TxInner, StoreError> {
        Ok(match &self.readers {
            Some(readers) => match take_snapshot(readers) {
                Some(reader) => TxInner::SqliteReader(reader),
                None => {
                    let reader = readers.acquire()?;
                    control(reader.conn(), "BEGIN")?;
                    TxInner::SqliteReader(reader)
                }
            },
            None => {
                let (writer, role) = self.writer.read(true).await?;
                TxInner::Writer(writer, role)
            }
        })
    }

    /// A connection for one statement outside any transaction ([`super::Db::read_single`]):
    /// the request's open snapshot if any, else a reader; in memory, the writer.
    pub async fn single_read(&self) -> Result<TxInner, StoreError> {
        Ok(match &self.readers {
            Some(readers) => match take_snapshot(readers) {
                Some(reader) => TxInner::SqliteReader(reader),
                None => TxInner::SqliteReader(readers.acquire()?),
            },
            None => {
                let (writer, role) = self.writer.read(false).await?;
                TxInner::Writer(writer, role)
            }
        })
    }

    /// Closes the readers, then the writer (committing any open batch), then stops the
    /// checkpointer.
    pub async fn close(&self) {
        if let Some(readers) = &self.readers {
            readers.close();
        }
        self.writer.close().await;
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.stop();
        }
    }
}

/// Statements kept prepared per connection. bankd has a few hundred distinct statement texts;
/// the ones on hot paths stay cached.
const STATEMENT_CACHE: usize = 256;

/// The writer's page cache, KiB.
const WRITER_CACHE_KIB: i64 = 64 * 1024;

/// SQLite's `synchronous` setting, as [`super::StoreOptions::sqlite_synchronous`] takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Every commit is on disk before it is acknowledged.
    #[default]
    Full,
    /// A commit may be lost on power loss (not on a crash of the process): benchmarks only.
    Normal,
    /// No syncs at all.
    Off,
}

impl Synchronous {
    /// The value of `PRAGMA synchronous`, as [`Settings::synchronous`] holds it.
    pub(super) fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
            Synchronous::Off => "OFF",
        }
    }
}

/// How a database file is opened.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    /// The file, or `None` for a private in-memory database.
    pub path: Option<PathBuf>,
    /// `FULL`, `NORMAL` or `OFF` ([`Synchronous::pragma`]).
    pub synchronous: &'static str,
    pub busy_timeout: Duration,
    /// The log is restarted once it holds this many frames: see [`CheckpointSignal::after_commit`].
    pub wal_restart_frames: i64,
    /// How much of the file each reader maps into memory (`mmap_size`); 0 reads with `pread`.
    pub reader_mmap_bytes: i64,
    /// Whether connections write the log through `sqlite-walbuf` (frames gathered into large
    /// writes, flushed by the commit's sync). Only honoured with `synchronous=FULL`: at `NORMAL`
    /// a commit publishes its frames to other connections without a sync, which would let them
    /// look for frames still in the writer's buffer.
    pub log_buffer: bool,
}

/// [`Settings::wal_restart_frames`] of a server: 65 536 pages, 256 MiB with 4 KiB pages.
///
/// Each restart stalls the writer while it copies the frames committed since the
/// checkpointer's last pass (20-55 ms under spread transfers, during which the disk took about
/// 220 MB a second, log and checkpoints together), so the limit sets how often writes pause.
/// At 64 MiB that was about 8 % of the writer's time; at 256 MiB spread transfers ran 19 %
/// faster (bench/README.md). The cost is disk: the log file stays at this size between
/// restarts, and a crash recovery reads it.
pub(super) const WAL_RESTART_FRAMES: i64 = 65_536;

impl Settings {
    pub fn in_memory(&self) -> bool {
        self.path.is_none()
    }

    /// Whether connections open through `sqlite-walbuf` (see [`Settings::log_buffer`]).
    fn buffers_log(&self) -> bool {
        self.log_buffer && self.synchronous == "FULL"
    }

    fn open(&self, read_only: bool) -> Result<Connection, StoreError> {
        let mode = if read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        };
        // Each connection is used by one task at a time: SQLite's own mutexes are not needed.
        let flags = mode | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match &self.path {
            Some(path) if self.buffers_log() => {
                let vfs = sqlite_walbuf::register().map_err(|code| {
                    rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
                })?;
                Connection::open_with_flags_and_vfs(path, flags, vfs)?
            }
            Some(path) => Connection::open_with_flags(path, flags)?,
            None => Connection::open_in_memory_with_flags(flags)?,
        };
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.pragma_update(None, "foreign_keys", "ON")?;
        if !read_only && !self.in_memory() {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "synchronous", self.synchronous)?;
        Ok(conn)
    }

    /// The writer: its busy timeout is zero, because it waits for a foreign write lock with
    /// async sleeps rather than inside SQLite on a worker thread. On a file its commits never
    /// checkpoint: [`Checkpointer`] does that off the writer.
    pub fn open_writer(&self) -> Result<Connection, StoreError> {
        let conn = self.open(false)?;
        conn.busy_timeout(Duration::ZERO)?;
        // Each member of a group commit runs inside a savepoint, whose undo copies of the pages
        // it changes go to a sub-journal. SQLite keeps that in memory only up to 64 KiB by
        // default and then moves it to a temporary file for the rest of the connection's life:
        // a write system call per page changed. In memory it stays a copy.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        // Every write waits for this one connection, so a page it must read back from the file
        // (or spill to the log in the middle of a batch because its cache is full) delays all
        // of them. SQLite's default cache is 2 MiB; the writer gets more. It fills only as pages
        // are touched, and stays valid between transactions while no other process writes.
        conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
        if !self.in_memory() {
            conn.pragma_update(None, "wal_autocheckpoint", 0)?;
            // After a restart, the log file is cut back to the size it may reach before one.
            let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            conn.pragma_update(
                None,
                "journal_size_limit",
                self.wal_restart_frames.saturating_mul(page_size),
            )?;
        }
        Ok(conn)
    }

    /// A reader. In WAL mode readers do not wait for writers; the busy timeout only covers rare
    /// moments such as another process recovering the log.
    fn open_reader(&self) -> Result<Connection, StoreError> {
        let conn = self.open(true)?;
        conn.busy_timeout(self.busy_timeout)?;
        // Unmapped (the default), a page missing from the reader's small cache is a `pread`
        // system call that copies 4 KiB out of the operating system's page cache. Mapped, the
        // page is read where the page cache holds it, which pays off only while the file does
        // not grow, i.e. while nothing is written (see `DEFAULT_SQLITE_MMAP_MIB`). SQLite maps
        // the file read-only; the writer is never mapped. A disk error on a mapped page arrives as a signal, which ends the process
        // rather than failing one request.
        conn.pragma_update(None, "mmap_size", self.reader_mmap_bytes)?;
        Ok(conn)
    }
}

/// Whether `error` is SQLite's "busy" or "locked", including their extended codes such as
/// `SQLITE_BUSY_SNAPSHOT` when another process wrote first: the same transaction may succeed if
/// run again.
pub(super) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Whether `error` is `SQLITE_FULL`: the file could not grow (the disk is full, or the database
/// reached `max_page_count`).
pub(super) fn is_full(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(ErrorCode::DiskFull)
}

/// The extended result code of a failed statement, e.g. 2067 for a UNIQUE violation.
pub(super) fn extended_code(error: &rusqlite::Error) -> Option<i32> {
    match error {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.extended_code),
        _ => None,
    }
}

/// The constraint a failed statement violated, by SQLite's extended result codes:
/// SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY, _FOREIGNKEY and _CHECK.
pub(super) fn violation(error: &rusqlite::Error) -> Option<Violation> {
    match extended_code(error)? {
        2067 | 1555 => Some(Violation::Unique),
        787 => Some(Violation::ForeignKey),
        275 => Some(Violation::Check),
        _ => None,
    }
}

/// A bind value in sqlx's SQLite encoding.
struct Bind<'a>(&'a Value);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        fn or_null<T>(v: &Option<T>, f: impl FnOnce(&T) -> ToSqlOutput<'_>) -> ToSqlOutput<'_> {
            v.as_ref().map_or(ToSqlOutput::Borrowed(ValueRef::Null), f)
        }
        Ok(match self.0 {
            Value::Text(v) => or_null(v, |s| ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes()))),
            Value::I64(v) => or_null(v, |n| ToSqlOutput::Owned(SqlValue::Integer(*n))),
            Value::Bool(v) => or_null(v, |b| ToSqlOutput::Owned(SqlValue::Integer(i64::from(*b)))),
            Value::Bytes(v) => or_null(v, |b| ToSqlOutput::Borrowed(ValueRef::Blob(b))),
            Value::Time(v) => or_null(v, |t| {
                ToSqlOutput::Owned(SqlValue::Text(
                    t.to_rfc3339_opts(SecondsFormat::AutoSi, false),
                ))
            }),
            Value::Date(v) => or_null(v, |d| {
                ToSqlOutput::Owned(SqlValue::Text(d.format("%F").to_string()))
            }),
        })
    }
}

fn prepare<'c>(
    conn: &'c Connection,
    text: &str,
    args: &[Value],
) -> Result<CachedStatement<'c>, StoreError> {
    let mut stmt = conn.prepare_cached(text)?;
    // SQLite counted the parameters when it prepared the statement (cached): no text scan on
    // every call. Too few binds would otherwise run with NULLs.
    let placeholders = stmt.parameter_count();
    if placeholders != args.len() {
        return Err(StoreError::BindCount {
            placeholders,
            binds: args.len(),
        });
    }
    for (i, arg) in args.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, Bind(arg))?;
    }
    Ok(stmt)
}

/// Runs a statement to completion; answers the rows it changed (0 for a read or for DDL, after
/// which SQLite's `changes()` still holds the previous statement's count).
pub(super) fn execute(conn: &Connection, text: &str, args: &[Value]) -> Result<u64, StoreError> {
    let mut stmt = prepare(conn, text, args)?;
    let before = conn.total_changes();
    let mut rows = stmt.raw_query();
    while rows.next()?.is_some() {}
    drop(rows);
    Ok(if conn.total_changes() == before {
        0
    } else {
        conn.changes()
    })
}

/// Runs a control statement without binds (`BEGIN`, `SAVEPOINT member`, `COMMIT`...).
pub(super) fn control(conn: &Connection, text: &str) -> Result<(), StoreError> {
    execute(conn, text, &[]).map(|_| ())
}

/// Runs a query; answers its rows (only the first when `first_only`).
pub(super) fn fetch(
    conn: &Connection,
    text: &str,
    args: &[Value],
    first_only: bool,
) -> Result<Vec<SqliteRow>, StoreError> {
    let mut stmt = prepare(conn, text, args)?;
    let names: Arc<[String]> = stmt.column_names().into_iter().map(String::from).collect();
    let width = names.len();
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let values = (0..width)
            .map(|i| row.get_ref(i).map(SqlValue::from))
            .collect::<Result<Vec<_>, _>>()?;
        out.push(SqliteRow {
            names: names.clone(),
            values,
            next: AtomicUsize::new(0),
        });
        if first_only {
            break;
        }
    }
    Ok(out)
}

/// A row read from SQLite, owning its values.
#[derive(Debug)]
pub struct SqliteRow {
    names: Arc<[String]>,
    values: Vec<SqlValue>,
    /// Where the next lookup by name starts. Decoders read the columns mostly in the order the
    /// statement lists them, so the column asked for is usually the one after the last found.
    next: AtomicUsize,
}

impl SqliteRow {
    pub(super) fn get<T: FromSqlite>(&self, name: &str) -> Result<T, StoreError> {
        self.get_prefixed("", name)
    }

    /// Decodes column `{prefix}{name}`.
    pub(super) fn get_prefixed<T: FromSqlite>(
        &self,
        prefix: &str,
        name: &str,
    ) -> Result<T, StoreError> {
        // A list page decodes 100 rows of 16 columns: comparing names was about a sixth of its
        // profile (`memcmp`), so a plain name is one comparison, not a prefix and a suffix.
        let is = |n: &String| {
            if prefix.is_empty() {
                n == name
            } else {
                n.len() == prefix.len() + name.len() && n.starts_with(prefix) && n.ends_with(name)
            }
        };
        let hint = self.next.load(Ordering::Relaxed);
        let index = match self.names.get(hint) {
            Some(n) if is(n) => hint,
            _ => self.names.iter().position(is).ok_or_else(|| {
                StoreError::Corrupt(format!("no column `{prefix}{name}` in the result"))
            })?,
        };
        self.next.store(index + 1, Ordering::Relaxed);
        T::from_sqlite(&self.values[index])
            .map_err(|e| StoreError::Corrupt(format!("column `{prefix}{name}`: {e}")))
    }
}

/// Decoding of one SQLite value, in the encoding sqlx wrote.
pub trait FromSqlite: Sized {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String>;
}

fn mismatch<T>(value: &SqlValue, wanted: &str) -> Result<T, String> {
    Err(format!("expected {wanted}, found {:?}", value.data_type()))
}

impl FromSqlite for String {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Text(s) => Ok(s.clone()),
            other => mismatch(other, "text"),
        }
    }
}

impl FromSqlite for i64 {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Integer(n) => Ok(*n),
            other => mismatch(other, "an integer"),
        }
    }
}

impl FromSqlite for i32 {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        i32::try_from(i64::from_sqlite(value)?).map_err(|e| e.to_string())
    }
}

impl FromSqlite for bool {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        Ok(i64::from_sqlite(value)? != 0)
    }
}

impl FromSqlite for Vec<u8> {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Blob(b) => Ok(b.clone()),
            SqlValue::Text(s) => Ok(s.clone().into_bytes()),
            other => mismatch(other, "a blob"),
        }
    }
}

impl FromSqlite for DateTime<Utc> {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        let SqlValue::Text(text) = value else {
            return mismatch(value, "a time as text");
        };
        parse_time(text).ok_or_else(|| format!("invalid time `{text}`"))
    }
}

/// RFC 3339 (what bankd writes), or SQLite's own `YYYY-MM-DD HH:MM:SS[.fff]` (UTC, what
/// `CURRENT_TIMESTAMP` writes).
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = DateTime::parse_from_str(text, "%F %T%.f%:z") {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(text, "%F %T%.f")
        .ok()
        .map(|t| t.and_utc())
}

impl FromSqlite for NaiveDate {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        let SqlValue::Text(text) = value else {
            return mismatch(value, "a date as text");
        };
        NaiveDate::parse_from_str(text, "%F").map_err(|e| format!("invalid date `{text}`: {e}"))
    }
}

impl<T: FromSqlite> FromSqlite for Option<T> {
    fn from_sqlite(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Null => Ok(None),
            other => T::from_sqlite(other).map(Some),
        }
    }
}

/// Reader connections, opened on demand and kept up to a limit. Statements run in-line, so a
/// reader is held only while its task runs SQL: about as many are busy as there are worker
/// threads.
pub(super) struct Readers {
    settings: Settings,
    idle: Mutex<Vec<Connection>>,
    keep: usize,
}

impl Readers {
    pub fn new(settings: Settings, keep: usize) -> Arc<Readers> {
        Arc::new(Readers {
            settings,
            idle: Mutex::new(Vec::new()),
            keep: keep.max(1),
        })
    }

    pub fn acquire(self: &Arc<Self>) -> Result<Reader, StoreError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.settings.open_reader()?,
        };
        Ok(Reader {
            conn: Some(conn),
            pool: self.clone(),
        })
    }

    /// Closes the idle readers (those in use close when given back).
    pub fn close(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// A reader lent to one task; given back (with any open transaction rolled back) on drop.
pub(super) struct Reader {
    conn: Option<Connection>,
    pool: Arc<Readers>,
}

impl Reader {
    pub fn conn(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("a lent reader holds its connection")
    }

    /// Whether this reader was lent by `pool` (a process may open several databases).
    pub fn belongs_to(&self, pool: &Arc<Readers>) -> bool {
        Arc::ptr_eq(&self.pool, pool)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if !conn.is_autocommit() && control(&conn, "ROLLBACK").is_err() {
            return; // a connection that cannot end its transaction is not reused
        }
        let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.pool.keep {
            idle.push(conn);
        }
    }
}

/// Checkpoints the write-ahead log from a thread of its own.
///
/// SQLite's automatic checkpoint runs inside the `COMMIT` that crosses 1 000 log pages: on the
/// writer, holding it, copying pages into the database file and (at `synchronous=FULL`) syncing
/// it. Profiled under book transfers that was 12 % of bankd's samples, all of it on the one
/// path every write waits for. bankd turns it off on its writer and runs a `PASSIVE` checkpoint
/// on this thread shortly after commits happen: it never blocks the writer or readers, and
/// durability is unchanged (a commit is durable once its log frames are synced; the checkpoint
/// only moves them).
pub(super) struct Checkpointer {
    shared: Arc<CheckpointShared>,
}

#[derive(Default)]
struct CheckpointShared {
    state: Mutex<CheckpointState>,
    wake: std::sync::Condvar,
    /// Set by the checkpointer when the log has grown past [`Settings::wal_restart_frames`].
    restart: AtomicBool,
}

#[derive(Default)]
struct CheckpointState {
    /// Commits since the last checkpoint started.
    dirty: bool,
    stop: bool,
}

/// What the writer holds to tell the checkpointer that the log grew.
#[derive(Clone)]
pub(super) struct CheckpointSignal(Arc<CheckpointShared>);

impl CheckpointSignal {
    /// Called by the writer connection `conn` after each commit, outside any transaction.
    ///
    /// Tells the checkpointer that the log grew. And, when the checkpointer found the log past
    /// [`Settings::wal_restart_frames`], restarts it here first: a passive checkpoint copies the
    /// log into the database but can never rewind it while writes keep coming, since SQLite
    /// rewinds only when every frame is copied and no reader is inside the log. Under steady
    /// load that moment never comes, and the log (and the index readers search in it) grows
    /// without bound: 7.5 GB after a few minutes of the benchmark's transfers. A `RESTART`
    /// checkpoint on the writer copies the frames not yet copied (the checkpointer asks only
    /// after a short pass, so they are few: [`after_pass`]), waits for the readers still inside
    /// the log (their transactions are short), and rewinds it.
    pub fn after_commit(&self, conn: &Connection) {
        if self.0.restart.swap(false, Ordering::AcqRel) {
            match restart_log(conn, RESTART_WAIT) {
                Ok(true) => tracing::debug!("write-ahead log restarted"),
                // Asked again after the next checkpoint.
                Ok(false) => tracing::debug!("readers kept the write-ahead log from restarting"),
                Err(e) => tracing::warn!(error = %e, "restarting the write-ahead log failed"),
            }
        }
        let mut state = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.dirty {
            state.dirty = true;
            self.0.wake.notify_one();
        }
    }
}

/// How long a restart of the log may wait for readers (and the writer with it).
const RESTART_WAIT: Duration = Duration::from_millis(200);

/// A `RESTART` checkpoint on the writer connection, waiting up to `wait` for readers; answers
/// whether the log was rewound.
fn restart_log(conn: &Connection, wait: Duration) -> Result<bool, StoreError> {
    conn.busy_timeout(wait)?;
    let busy = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
    conn.busy_timeout(Duration::ZERO)?;
    Ok(busy? == 0)
}

/// How long the checkpointer lets commits accumulate before it copies them.
const CHECKPOINT_PAUSE: Duration = Duration::from_millis(50);

impl Checkpointer {
    /// Starts the thread, with a connection of its own. `None` for an in-memory database.
    pub fn start(settings: &Settings) -> Result<Option<Checkpointer>, StoreError> {
        if settings.in_memory() {
            return Ok(None);
        }
        let conn = settings.open(false)?;
        conn.busy_timeout(settings.busy_timeout)?;
        let shared = Arc::new(CheckpointShared::default());
        let worker = shared.clone();
        let restart_frames = settings.wal_restart_frames;
        std::thread::Builder::new()
            .name("bankd-checkpoint".into())
            .spawn(move || checkpoint_loop(&conn, &worker, restart_frames))
            .map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        Ok(Some(Checkpointer { shared }))
    }

    pub fn signal(&self) -> CheckpointSignal {
        CheckpointSignal(self.shared.clone())
    }

    /// Ends the thread (after the checkpoint it may be running).
    pub fn stop(&self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.stop = true;
        self.shared.wake.notify_one();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn checkpoint_loop(conn: &Connection, shared: &CheckpointShared, restart_frames: i64) {
    let mut behind = 0;
    loop {
        {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            while !state.dirty && !state.stop {
                state = shared.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.stop {
                return;
            }
        }
        if behind == 0 {
            std::thread::sleep(CHECKPOINT_PAUSE);
        }
        shared.state.lock().unwrap_or_else(|e| e.into_inner()).dirty = false;
        let started = Instant::now();
        // Answers (busy, frames in the log, frames copied).
        let pass = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1));
        metrics::histogram!(super::metric_names::CHECKPOINT_DURATION)
            .record(started.elapsed().as_secs_f64());
        match pass {
            Ok(frames) => match after_pass(frames, restart_frames, started.elapsed(), behind) {
                AfterPass::Pause => behind = 0,
                AfterPass::CatchUp => behind += 1,
                AfterPass::Restart => {
                    behind = 0;
                    shared.restart.store(true, Ordering::Release);
                }
            },
            Err(e) => {
                behind = 0;
                tracing::warn!(error = %e, "WAL checkpoint failed; the next commit retries it")
            }
        }
    }
}

/// What the checkpointer does after a pass.
#[derive(Debug, PartialEq, Eq)]
enum AfterPass {
    /// Wait for commits, then pause before the next pass.
    Pause,
    /// Run another pass at once: the log is due for a restart, but the writer would have to
    /// copy what was committed during this pass first.
    CatchUp,
    /// Ask the writer to restart the log after its next commit.
    Restart,
}

/// A pass at most this long leaves little for the writer to copy when it restarts the log.
const RESTART_LAG: Duration = Duration::from_millis(5);
/// Passes run back to back, at most, before a restart is asked for however long they took.
const MAX_CATCH_UP_PASSES: u32 = 10;

/// Decides after a pass that found `frames` frames in the log and took `pass`, the
/// `behind`-th pass in a row run at once to catch up.
///
/// A restart on the writer first copies every frame committed since the start of the
/// checkpointer's last pass, and writes wait meanwhile. Asked for right after a pass of 20-50 ms
/// (with the pause, the usual pass under spread transfers), that copy stalled the writer for as
/// long: the p99 of those transfers. Passes back to back shrink, since each copies only what
/// was committed during the one before, so once a pass is short the restart is cheap.
fn after_pass(frames: i64, restart_frames: i64, pass: Duration, behind: u32) -> AfterPass {
    if frames < restart_frames {
        AfterPass::Pause
    } else if pass <= RESTART_LAG || behind >= MAX_CATCH_UP_PASSES {
        AfterPass::Restart
    } else {
        AfterPass::CatchUp
    }
}

/// The file behind a `sqlite:` URL ([`url`] reads it), creating its directory; `None` for an
/// in-memory database.
pub(super) fn database_path(url: &str) -> Result<Option<PathBuf>, StoreError> {
    let Some(file) = url::database_file(url)? else {
        return Ok(None);
    };
    // `bankd serve` must work on a fresh machine: create `./data` (or wherever the file goes)
    // rather than fail with "unable to open database file".
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
    }
    Ok(Some(file))
}

#[cfg(test)]
mod tests;
