//! Ledger rows: locking the accounts a movement touches, writing its balances and postings.
//!
//! The rules live in [`crate::domain::ledger`]; this module only reads and writes. Locking order
//! is what keeps concurrent movements deadlock-free on PostgreSQL: see [`lock_accounts`].

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx, dialect};
use crate::model::ids::{BankAccountId, PlatformId};
use crate::model::ledger::{AccountType, BalanceKind, Balances, Entry, LedgerAccount};

const COLUMNS: &str = "id, type, status, currency_code, available_amount, pending_amount, \
    holding_amount, locked_amount, is_overdraftable, overdraft_reserve_account_id";

fn from_row(row: &Row) -> Result<LedgerAccount, StoreError> {
    Ok(LedgerAccount {
        id: BankAccountId::from_trusted(row.get("id")?),
        account_type: row.spelled("type")?,
        status: row.spelled("status")?,
        currency_code: row.get("currency_code")?,
        balances: Balances {
            available: row.get("available_amount")?,
            pending: row.get("pending_amount")?,
            holding: row.get("holding_amount")?,
            locked: row.get("locked_amount")?,
        },
        is_overdraftable: row.get("is_overdraftable")?,
        overdraft_reserve_account_id: row
            .get::<Option<String>>("overdraft_reserve_account_id")?
            .map(BankAccountId::from_trusted),
    })
}

fn push_id_list<'a>(sql: &mut Sql, ids: impl Iterator<Item = &'a BankAccountId>) {
    sql.push("(");
    for (i, id) in ids.enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push_bind(id.as_str());
    }
    sql.push(")");
}

/// Locks, until the transaction ends, the platform's accounts among `ids`, the overdraft
/// reserves of the overdraftable ones and, with `with_settlement`, the platform's settlement
/// account; answers those that exist (absent or foreign ids are simply not there).
///
/// Lock order. Every transaction locks accounts in one global order, so two movements can never
/// wait for each other in a cycle: first every account that is not an `OVERDRAFT_RESERVE`, in
/// ascending id order, then the reserves, in ascending id order. Reserves come last because a
/// movement learns which reserve it needs only from the (locked) overdraftable account; a
/// reserve named directly as a party waits for the second round too. Each round is one
/// statement, `... WHERE id IN (...) ORDER BY id FOR NO KEY UPDATE` (PostgreSQL locks the rows
/// as they leave the sort), with a plain filter on the rows' own immutable columns: a join or
/// sub-select there would be re-evaluated by PostgreSQL's recheck of a row updated while we
/// waited, and could drop it. The settlement account's id is looked up first (root accounts
/// never change), so that both rounds are key lookups: a disjunction such as
/// `id IN (...) OR type = ...` made SQLite walk every account of the platform (measured: 13
/// transfers/s on a platform of 1 000 000 accounts).
pub async fn lock_accounts(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    ids: &[&BankAccountId],
    with_settlement: bool,
) -> Result<Vec<LedgerAccount>, StoreError> {
    let mut first: BTreeSet<BankAccountId> = ids.iter().map(|id| (*id).clone()).collect();
    if with_settlement && let Some(id) = settlement_account_id(tx, platform_id).await? {
        first.insert(id);
    }
    let mut accounts = if first.is_empty() {
        Vec::new()
    } else {
        let mut sql = Sql::new(format!(
            "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = "
        ));
        sql.push_bind(platform_id.as_str()).push(&format!(
            " AND type <> '{}' AND id IN ",
            AccountType::OverdraftReserve.as_str()
        ));
        push_id_list(&mut sql, first.iter());
        locked_in_order(tx, sql).await?
    };

    let have: BTreeSet<BankAccountId> = accounts.iter().map(|a| a.id.clone()).collect();
    let reserves = accounts
        .iter()
        .filter(|a| a.is_overdraftable)
        .filter_map(|a| a.overdraft_reserve_account_id.clone());
    let second: BTreeSet<BankAccountId> = first
        .into_iter()
        .chain(reserves)
        .filter(|id| !have.contains(id))
        .collect();
    if !second.is_empty() {
        let mut sql = Sql::new(format!(
            "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = "
        ));
        sql.push_bind(platform_id.as_str()).push(" AND id IN ");
        push_id_list(&mut sql, second.iter());
        accounts.extend(locked_in_order(tx, sql).await?);
    }
    Ok(accounts)
}

/// The id of the platform's `NETWORK_SETTLEMENT_ACCOUNT`, unlocked (it never changes).
async fn settlement_account_id(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<Option<BankAccountId>, StoreError> {
    // The type is a constant of the statement, and `type <> 'CHECKING'` repeats the partial
    // index's own condition, so that both engines use the one-root-per-type index.
    let sql = Sql::new(format!(
        "SELECT id FROM bank_accounts WHERE platform_id = ? \
         AND type = '{}' AND type <> '{}'",
        AccountType::NetworkSettlementAccount.as_str(),
        AccountType::Checking.as_str()
    ))
    .bind(platform_id.as_str());
    tx.fetch_optional(sql)
        .await?
        .map(|row| row.get("id").map(BankAccountId::from_trusted))
        .transpose()
}

/// Runs `select` (a `SELECT ... WHERE ...` without order) locking its rows in id order.
async fn locked_in_order(
    tx: &mut Tx<'_>,
    mut select: Sql,
) -> Result<Vec<LedgerAccount>, StoreError> {
    select.push(" ORDER BY id");
    select.push(dialect::for_no_key_update(tx.backend()));
    tx.fetch_all_as(select, from_row).await
}

/// What caused a journal entry, for `ledger_postings`.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// `book_transfer` or `ach_transfer`.
    pub source_type: &'a str,
    /// The transfer id.
    pub source_id: &'a str,
    /// `create`, `clear`, `cancel`, `receive`: with the source id, names the journal entry.
    pub event: &'a str,
    /// The currency of the movement.
    pub currency_code: &'a str,
}

/// Writes a finished entry: the balance deltas of every changed account and one posting row per
/// changed (account, balance). The accounts must be locked by this transaction.
pub async fn write_entry(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    entry: &Entry,
    source: Source<'_>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    if entry.postings.is_empty() {
        return Ok(());
    }
    // One statement for every changed account (a round trip per statement is the main cost of
    // a write, see bench/README.md): each balance column that changes gets
    // `column + CASE id WHEN ... THEN delta ... ELSE 0 END`. Deltas, not absolute values: the
    // rows are locked, but a delta cannot lose an update even if they were not, and the
    // table's CHECKs still guard every resulting row.
    let deltas = entry.deltas();
    let mut sql = Sql::new("UPDATE bank_accounts SET ");
    for kind in BalanceKind::ALL {
        if deltas.values().all(|d| d.get(kind) == 0) {
            continue;
        }
        // `available_amount`, `pending_amount`, ...: the column of each balance kind.
        let column = format!("{}_amount", kind.as_str());
        sql.push(&format!("{column} = {column} + CASE id"));
        for (id, delta) in &deltas {
            sql.push(" WHEN ").push_bind(id.as_str());
            sql.push(" THEN ").push_bind(delta.get(kind));
        }
        sql.push(" ELSE 0 END, ");
    }
    sql.push("updated_at = ").push_bind(now);
    sql.push(" WHERE platform_id = ")
        .push_bind(platform_id.as_str());
    sql.push(" AND id IN ");
    push_id_list(&mut sql, deltas.keys().copied());
    // Deferred (see `Tx::execute_deferred`): on PostgreSQL the entry's writes share one round
    // trip with the request's other last writes (a later read in the transaction sends them
    // first).
    let accounts = deltas.len() as u64;
    tx.execute_deferred(
        sql,
        accounts,
        "the balances of a journal entry's locked accounts",
    )
    .await?;
    let journal_id = format!("{}:{}", source.source_id, source.event);
    let mut sql = Sql::new(
        "INSERT INTO ledger_postings (platform_id, journal_id, bank_account_id, balance, amount, \
         currency_code, source_type, source_id, created_at) VALUES ",
    );
    for (i, posting) in entry.postings.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" });
        sql.push_bind(platform_id.as_str()).push(", ");
        sql.push_bind(journal_id.as_str()).push(", ");
        sql.push_bind(posting.bank_account_id.as_str()).push(", ");
        sql.push_bind(posting.balance.as_str()).push(", ");
        sql.push_bind(posting.amount).push(", ");
        sql.push_bind(source.currency_code).push(", ");
        sql.push_bind(source.source_type).push(", ");
        sql.push_bind(source.source_id).push(", ");
        sql.push_bind(now).push(")");
    }
    let rows = entry.postings.len() as u64;
    tx.execute_deferred(sql, rows, "the postings of a journal entry")
        .await
}

/// The sum of all four balances over every account of the platform; the ledger keeps it at 0.
pub async fn platform_balance_total(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<i64, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {} AS total FROM bank_accounts WHERE platform_id = ?",
        dialect::sum_i64("available_amount + pending_amount + holding_amount + locked_amount")
    ))
    .bind(platform_id.as_str());
    tx.fetch_one(sql).await?.get("total")
}

/// A balance that differs from the sum of its postings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discrepancy {
    pub bank_account_id: BankAccountId,
    pub balance: BalanceKind,
    pub stored: i64,
    pub posted: i64,
}

/// Compares every balance of every account of the platform with the sum of its postings (the
/// ledger's truth); answers the differences (none when the books are right). A full scan: for
/// audits and tests, not for requests.
pub async fn reconcile(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<Vec<Discrepancy>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT bank_account_id, balance, {} AS total FROM ledger_postings WHERE platform_id = ? \
         GROUP BY bank_account_id, balance",
        dialect::sum_i64("amount")
    ))
    .bind(platform_id.as_str());
    let mut posted = std::collections::BTreeMap::new();
    for row in tx.fetch_all(sql).await? {
        let balance: String = row.get("balance")?;
        let kind = BalanceKind::parse(&balance)
            .ok_or_else(|| StoreError::Corrupt(format!("posting balance kind {balance:?}")))?;
        posted.insert(
            (row.get::<String>("bank_account_id")?, kind),
            row.get::<i64>("total")?,
        );
    }
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = ? ORDER BY id"
    ))
    .bind(platform_id.as_str());
    let mut out = Vec::new();
    for row in tx.fetch_all(sql).await? {
        let account = from_row(&row)?;
        for kind in BalanceKind::ALL {
            let stored = account.balances.get(kind);
            let sum = posted
                .get(&(account.id.as_str().to_owned(), kind))
                .copied()
                .unwrap_or(0);
            if stored != sum {
                out.push(Discrepancy {
                    bank_account_id: account.id.clone(),
                    balance: kind,
                    stored,
                    posted: sum,
                });
            }
        }
    }
    Ok(out)
}
