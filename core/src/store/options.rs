//! [`StoreOptions`]: the tuning of both backends' pools and of the retry, with defaults that
//! suit a single small server (`bankd::config` fills them from the configuration).

use std::time::Duration;

use super::{PostgresIsolation, RetryPolicy, SqliteSynchronous};

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
    /// `sqlite::Settings::log_buffer`).
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
