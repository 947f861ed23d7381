//! Writes whose outcome the transaction never reads back, sent to PostgreSQL together.
//!
//! A write transaction on PostgreSQL pays a network round trip per statement, and on a loaded
//! machine that round trip (the send, the wake-ups on both sides, the driver's protocol work)
//! costs bankd and PostgreSQL more than most statements' own work: a book transfer made ten
//! round trips for one HTTP answer (bench/README.md has the profile). Its last four statements
//! (the transfer row, both balances, the postings, the stored idempotent response) only write;
//! nothing in the transaction reads them back, and each answers no more than a row count that
//! must match what was meant.
//!
//! [`super::Tx::execute_deferred`] queues such a statement. Before the transaction's next
//! statement of any other kind, and before `COMMIT`, the queue goes to PostgreSQL as one
//! statement ([`combine`]): each write becomes a data-modifying `WITH` item with `RETURNING 1`,
//! and the outer `SELECT` counts each item's rows, so every write's count is still checked.
//! On SQLite, where a statement costs no round trip, a deferred write runs at once.
//!
//! What one statement changes about the writes, and why the queue stays correct:
//! - The items of one statement run on one snapshot, so none sees another's rows, and a row
//!   changed by two items ends up with only one of the changes (PostgreSQL's manual, "Data-
//!   Modifying Statements in WITH"). The queue therefore holds at most one write per table: a
//!   second write to a table already queued sends the queue first ([`written_table`]). A write
//!   must not read a table other than its own (a sub-select, `INSERT ... SELECT`); every
//!   deferred write is a plain `INSERT ... VALUES` or an `UPDATE`/`DELETE` filtered on its own
//!   columns, except the fan-out of an event to its webhook endpoints (`INSERT INTO
//!   webhook_deliveries ... SELECT ... FROM webhook_endpoints`): it reads a table that no
//!   transaction emitting an event writes, so the shared snapshot shows it as a statement of
//!   its own would. Its count is whatever the matching endpoints make ([`Deferred::rows`]
//!   `None`).
//! - Constraints are checked as before: `CHECK` and `UNIQUE` per row, foreign keys at the end of
//!   the statement, when every item's rows exist.
//! - An error (a violated constraint, a serialization failure) surfaces at the next statement or
//!   at commit instead of at the write; the transaction is lost either way, and retryable
//!   errors stay retryable. A write whose error the caller handles (a unique violation that
//!   means "duplicate") must not be deferred.

use super::Sql;

/// One queued write: the statement, and the rows it must change (`None`: any number).
#[derive(Debug)]
pub struct Deferred {
    pub sql: Sql,
    pub rows: Option<u64>,
    /// Names the write in the `Corrupt` error of a wrong count.
    pub what: &'static str,
}

impl Deferred {
    /// The error for a write that changed `changed` rows, or `Ok` when that is what it meant.
    pub fn check(&self, changed: u64) -> Result<(), super::StoreError> {
        match self.rows {
            Some(meant) if meant != changed => Err(super::StoreError::Corrupt(format!(
                "{}: {changed} rows changed where {meant} were meant",
                self.what
            ))),
            _ => Ok(()),
        }
    }
}

/// The table a plain `INSERT INTO t`, `UPDATE t` or `DELETE FROM t` writes; `None` for any
/// other statement, which is then not deferred.
pub fn written_table(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let rest = strip_keyword(text, "INSERT INTO ")
        .or_else(|| strip_keyword(text, "UPDATE "))
        .or_else(|| strip_keyword(text, "DELETE FROM "))?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

fn strip_keyword<'t>(text: &'t str, keyword: &str) -> Option<&'t str> {
    let head = text.get(..keyword.len())?;
    head.eq_ignore_ascii_case(keyword)
        .then(|| &text[keyword.len()..])
}

/// One statement for several writes: `WITH w0 AS (write RETURNING 1), ... SELECT (SELECT
/// count(*) FROM w0) AS n0, ...`. Each write's bind values follow in order, so the `?`
/// placeholders stay right. The writes' statements move into it (each keeps its count and
/// name, for [`Deferred::check`]).
pub fn combine(writes: &mut [Deferred]) -> Sql {
    let mut sql = Sql::new("WITH ");
    let mut counts = String::from(" SELECT ");
    for (i, write) in writes.iter_mut().enumerate() {
        if i > 0 {
            sql.push(", ");
            counts.push_str(", ");
        }
        sql.push(&format!("w{i} AS ("));
        sql.append(std::mem::take(&mut write.sql));
        sql.push(" RETURNING 1)");
        counts.push_str(&format!("(SELECT count(*) FROM w{i}) AS n{i}"));
    }
    sql.push(&counts);
    sql
}

/// The column of [`combine`]'s answer that holds the `i`th write's count.
pub fn count_column(i: usize) -> String {
    format!("n{i}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_written_table_is_read_from_plain_writes_only() {
        assert_eq!(
            written_table("INSERT INTO ledger_postings (a) VALUES (?)"),
            Some("ledger_postings")
        );
        assert_eq!(
            written_table("  update bank_accounts SET x = 1"),
            Some("bank_accounts")
        );
        assert_eq!(
            written_table("DELETE FROM idempotency_keys WHERE k = ?"),
            Some("idempotency_keys")
        );
        assert_eq!(written_table("INSERT INTO t(a) VALUES (1)"), Some("t"));
        for other in [
            "SELECT 1",
            "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            "INSERT INTO  (a) VALUES (1)",
            "UPDATE",
            "",
        ] {
            assert_eq!(written_table(other), None, "{other}");
        }
    }

    #[test]
    fn writes_combine_into_one_statement_that_counts_each() {
        let mut writes = [
            Deferred {
                sql: Sql::new("INSERT INTO a (x) VALUES (?)").bind(1i64),
                rows: Some(1),
                what: "a",
            },
            Deferred {
                sql: Sql::new("UPDATE b SET y = ? WHERE id = ?")
                    .bind("v")
                    .bind(2i64),
                rows: Some(1),
                what: "b",
            },
        ];
        let sql = combine(&mut writes);
        assert_eq!(
            sql.text(),
            "WITH w0 AS (INSERT INTO a (x) VALUES (?) RETURNING 1), \
             w1 AS (UPDATE b SET y = ? WHERE id = ? RETURNING 1) \
             SELECT (SELECT count(*) FROM w0) AS n0, (SELECT count(*) FROM w1) AS n1"
        );
        assert_eq!(
            sql.args(),
            &[
                super::super::Value::from(1i64),
                "v".into(),
                super::super::Value::from(2i64)
            ]
        );
        assert_eq!(count_column(1), "n1");
    }

    #[test]
    fn a_wrong_count_is_corruption_named_by_the_write() {
        let write = Deferred {
            sql: Sql::new("UPDATE b SET y = 1"),
            rows: Some(2),
            what: "both balances",
        };
        assert!(write.check(2).is_ok());
        let err = write.check(1).unwrap_err().to_string();
        assert!(
            err.contains("both balances: 1 rows changed where 2 were meant"),
            "{err}"
        );
    }
}
