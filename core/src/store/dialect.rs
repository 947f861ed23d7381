//! Every difference between the SQLite and PostgreSQL dialects, in one place.
//!
//! Repositories write SQL once, with `?` placeholders and the subset both engines understand
//! (`ON CONFLICT`, `RETURNING`, row-value comparisons, partial indexes). What genuinely differs
//! lives here: placeholder syntax, row locks, advisory locks, aggregate types, case-insensitive
//! matching and which error codes mean "try again". Migrations differ too, but those are two
//! folders of plain SQL (`core/migrations/{sqlite,postgres}`), not code.

use std::borrow::Cow;

/// The database engine behind a [`super::Db`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Rewrites `?` placeholders for the backend: SQLite takes them as they are, PostgreSQL wants
/// `$1, $2, ...`. Question marks inside quoted literals or identifiers are left alone.
/// Returns the text and the number of placeholders found.
pub fn placeholders(backend: Backend, sql: &str) -> (Cow<'_, str>, usize) {
    // SQLite keeps the text: only count (this runs for every statement).
    let mut out = match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(String::with_capacity(sql.len() + 8)),
    };
    let mut count = 0usize;
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        let numbered = match (quote, c) {
            // A doubled quote ('' or "") closes and reopens: same result either way.
            (Some(q), c) if c == q => {
                quote = None;
                false
            }
            (Some(_), _) => false,
            (None, '\'' | '"') => {
                quote = Some(c);
                false
            }
            (None, '?') => {
                count += 1;
                true
            }
            (None, _) => false,
        };
        if let Some(out) = &mut out {
            if numbered {
                out.push('$');
                out.push_str(&count.to_string());
            } else {
                out.push(c);
            }
        }
    }
    match out {
        None => (Cow::Borrowed(sql), count),
        Some(out) => (Cow::Owned(out), count),
    }
}

/// Suffix that locks the selected rows until the transaction ends.
///
/// PostgreSQL needs `FOR UPDATE` so two transactions cannot both read a balance and then both
/// write it. SQLite has no row locks and needs none: every write transaction here starts with
/// `BEGIN IMMEDIATE` on the single writer connection, so writers are already serialised.
pub fn for_update(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "",
        Backend::Postgres => " FOR UPDATE",
    }
}

/// Like [`for_update`], but PostgreSQL's weaker `FOR NO KEY UPDATE`: it still excludes every
/// other writer of the row, yet does not conflict with the `KEY SHARE` locks that foreign-key
/// checks take, so inserting a row that references a locked account (a transfer, a posting, an
/// account number) never waits for, or deadlocks with, a balance update. For rows whose key
/// columns the transaction does not change.
pub fn for_no_key_update(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "",
        Backend::Postgres => " FOR NO KEY UPDATE",
    }
}

/// `ON CONFLICT (...) DO NOTHING`. Both engines spell it the same (SQLite ≥ 3.24); it lives here
/// so that a future backend without it has one place to change.
pub fn on_conflict_do_nothing(conflict_columns: &str) -> String {
    format!(" ON CONFLICT ({conflict_columns}) DO NOTHING")
}

/// `ON CONFLICT (...) DO UPDATE SET c = excluded.c, ...` for the given columns.
pub fn on_conflict_update(conflict_columns: &str, update_columns: &[&str]) -> String {
    let sets: Vec<String> = update_columns
        .iter()
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    format!(
        " ON CONFLICT ({conflict_columns}) DO UPDATE SET {}",
        sets.join(", ")
    )
}

/// A sum of a BIGINT column that decodes as `i64` on both engines: PostgreSQL's `SUM(bigint)` is
/// `NUMERIC`, and an empty sum is `NULL` on both.
pub fn sum_i64(expression: &str) -> String {
    format!("CAST(COALESCE(SUM({expression}), 0) AS BIGINT)")
}

/// The text values of `expression` over a group, joined with `,` in no guaranteed order
/// (`group_concat` or `string_agg`); NULL for an empty group. Only for values that cannot
/// contain a comma (ids); a caller that needs an order carries it in the values. An
/// `ORDER BY` inside the aggregate would cost a sorter on every evaluation, and SQLite opens
/// one even when the index already yields the order (bench/log/, "Fixed so far").
pub fn list_agg(backend: Backend, expression: &str) -> String {
    match backend {
        Backend::Sqlite => format!("group_concat({expression}, ',')"),
        Backend::Postgres => format!("string_agg({expression}, ',')"),
    }
}

/// A predicate true when the text `column` holds the text of its one placeholder, taken as is
/// (no wildcards, case-sensitive): `instr` or `strpos`.
///
/// Not `LIKE ?`: SQLite marks a `LIKE` whose pattern is a parameter and whose left side is a
/// TEXT column as plan-dependent on that parameter, and binding it expires the prepared
/// statement, so every execution compiled the statement again. On the event fan-out, which
/// runs in every write, that recompilation cost a book transfer about a seventh of its CPU
/// (bench/log/, "Fixed so far").
pub fn contains(backend: Backend, column: &str) -> String {
    match backend {
        Backend::Sqlite => format!("instr({column}, ?) > 0"),
        Backend::Postgres => format!("strpos({column}, ?) > 0"),
    }
}

/// An SQL expression of `len` (at most 32) random lower-case hexadecimal digits, new for each
/// row: ids of rows that one `INSERT ... SELECT` makes, where Rust cannot make one per row.
/// Hex digits are base62 digits, so the text completes an id (`model::ids`).
pub fn random_hex(backend: Backend, len: usize) -> String {
    let len = len.min(32);
    match backend {
        Backend::Sqlite => format!("substr(lower(hex(randomblob(16))), 1, {len})"),
        Backend::Postgres => {
            format!("substr(md5(random()::text || clock_timestamp()::text), 1, {len})")
        }
    }
}

/// A case-insensitive substring predicate on `column`, with one placeholder that takes
/// [`contains_pattern`] of the needle. `LOWER` on both sides rather than PostgreSQL's `ILIKE`,
/// which SQLite lacks. (SQLite's `LOWER` folds ASCII only; PostgreSQL folds Unicode.)
pub fn contains_ci(column: &str) -> String {
    format!("LOWER({column}) LIKE ? ESCAPE '\\'")
}

/// The bind value for [`contains_ci`]: lower-cased, with `LIKE` wildcards escaped.
pub fn contains_pattern(needle: &str) -> String {
    let mut out = String::with_capacity(needle.len() + 2);
    out.push('%');
    for c in needle.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// Keyset predicate `(a, b) > (?, ?)` (or `<`) for the given columns. Row values work on both
/// engines (SQLite ≥ 3.15) and let PostgreSQL use a composite index directly.
pub fn row_compare(columns: &[&str], greater: bool) -> String {
    let placeholders = vec!["?"; columns.len()].join(", ");
    let op = if greater { ">" } else { "<" };
    format!("({}) {op} ({placeholders})", columns.join(", "))
}

/// An expression that takes a transaction-scoped advisory lock on its one `?` (a 64-bit key)
/// without waiting and answers whether it got it; `None` where the engine has no such lock
/// (SQLite, whose single writer connection already serialises writers inside one process).
pub fn try_advisory_xact_lock(backend: Backend) -> Option<&'static str> {
    match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some("pg_try_advisory_xact_lock(?)"),
    }
}

/// The PostgreSQL errors that mean "the same transaction may succeed if run again".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryableCode {
    /// SQLSTATE `40001`, serialization failure: a SERIALIZABLE or REPEATABLE READ transaction
    /// lost a race (also what CockroachDB and YugabyteDB answer on contention).
    Serialization,
    /// SQLSTATE `40P01`, deadlock detected.
    Deadlock,
}

/// Which retryable PostgreSQL error `error` is, if any, wherever it surfaced (any statement,
/// the deferred writes sent as one, `COMMIT`). SQLite's errors come from rusqlite and are
/// judged by `sqlite::is_busy`.
pub fn retryable_code(error: &sqlx::Error) -> Option<RetryableCode> {
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    match db.code()?.as_ref() {
        "40001" => Some(RetryableCode::Serialization),
        "40P01" => Some(RetryableCode::Deadlock),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_placeholders_are_numbered_outside_quotes() {
        let sql = "SELECT '?', \"a?\" FROM t WHERE a = ? AND b IN (?, ?) AND c = 'it''s?'";
        let (pg, n) = placeholders(Backend::Postgres, sql);
        assert_eq!(n, 3);
        assert_eq!(
            pg,
            "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b IN ($2, $3) AND c = 'it''s?'"
        );
        let (lite, n) = placeholders(Backend::Sqlite, sql);
        assert_eq!(n, 3);
        assert_eq!(lite, sql);
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("50%_Off\\"), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn row_comparisons_have_one_placeholder_per_column() {
        assert_eq!(
            row_compare(&["created_at", "id"], true),
            "(created_at, id) > (?, ?)"
        );
        assert_eq!(row_compare(&["id"], false), "(id) < (?)");
    }
}
