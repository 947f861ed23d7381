//! The storage layer's one error type, [`StoreError`], and what the domain asks of it: whether a
//! constraint was violated (each backend reads its own codes: `sqlite::violation`,
//! `postgres::violation`) and whether the database refused text it cannot store. Whether an
//! error is worth another attempt is [`super::Retryable`]'s question (`retry.rs`).

use super::{postgres, sqlite};

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
    /// The connection was lost while `COMMIT` was under way: the transaction may or may not
    /// have been applied, so it is not run again.
    #[error("the database connection was lost while committing: {0}")]
    CommitInterrupted(String),
    /// The group commit this write belonged to could not be written: the storage is full.
    #[error("the database could not grow: storage is full")]
    StorageFull,
}

/// The constraint kinds the domain tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Violation {
    Unique,
    ForeignKey,
    Check,
}

impl StoreError {
    /// Whether the database refused text it cannot store (PostgreSQL refuses U+0000 with
    /// SQLSTATE 22021 or 22P05): the client's input, wherever it slipped past validation.
    pub fn is_unstorable_text(&self) -> bool {
        matches!(self, StoreError::Database(e) if postgres::is_unstorable_text(e))
    }

    fn violation(&self) -> Option<Violation> {
        match self {
            StoreError::Database(e) => postgres::violation(e),
            StoreError::Sqlite(e) => sqlite::violation(e),
            _ => None,
        }
    }

    /// The database could not grow: SQLite's `SQLITE_FULL` (a full disk, or the file at its
    /// `max_page_count`), PostgreSQL's SQLSTATE 53100 `disk_full`. Final for this request (a
    /// retry at once finds the same disk); the write left nothing behind.
    pub fn is_storage_full(&self) -> bool {
        match self {
            StoreError::StorageFull => true,
            StoreError::Sqlite(e) => sqlite::is_full(e),
            StoreError::Database(e) => postgres::is_disk_full(e),
            _ => false,
        }
    }

    /// The database could not be reached, or its connection was lost; with
    /// [`StoreError::CommitInterrupted`], the transaction's outcome is unknown.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::CommitInterrupted(_) => true,
            StoreError::Database(e) => postgres::is_disconnect(e),
            _ => false,
        }
    }

    /// No pooled connection came free within the acquire timeout: every connection was busy.
    pub fn is_pool_timeout(&self) -> bool {
        matches!(self, StoreError::Database(sqlx::Error::PoolTimedOut))
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
