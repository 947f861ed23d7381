//! Ledger rows: locking the accounts a movement touches, writing its balances and postings.
//!
//! The rules live in [`crate::domain::ledger`]; this module only reads and writes. Locking order
//! is what keeps concurrent movements deadlock-free on PostgreSQL: [`lock_accounts`] takes every
//! row a movement may need (the named accounts, the overdraft reserves of the overdraftable ones
//! and, when asked, the settlement account) in **one** statement ordered by id.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx, dialect};
use crate::domain::ids::{BankAccountId, PlatformId};
use crate::domain::ledger::{BalanceKind, Balances, Entry, LedgerAccount, SETTLEMENT_ACCOUNT_TYPE};

const COLUMNS: &str = "id, type, status, currency_code, available_amount, pending_amount, \
    holding_amount, locked_amount, is_overdraftable, overdraft_reserve_account_id";

fn from_row(row: &Row) -> Result<LedgerAccount, StoreError> {
    Ok(LedgerAccount {
        id: BankAccountId::from_trusted(row.get("id")?),
        account_type: row.get("type")?,
        status: row.get("status")?,
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

fn push_id_list(sql: &mut Sql, ids: &BTreeSet<&BankAccountId>) {
    sql.push("(");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push_bind(id.as_str());
    }
    sql.push(")");
}

/// Locks, in ascending id order and until the transaction ends, the platform's accounts among
/// `ids`, the overdraft reserves of the overdraftable ones, and with `with_settlement` the
/// platform's settlement account; answers those that exist (absent or foreign ids are simply
/// not there).
///
/// The reserves are found by a sub-select of the same statement, so all rows are locked in one
/// global order. Should an account's reserve change between that sub-select and the lock (the
/// reserve is always the platform's single `OVERDRAFT_RESERVE`, so in practice never), the
/// missing reserve is locked by a second statement; the worst that can do is a deadlock, which
/// PostgreSQL breaks and `Db::write` retries.
pub async fn lock_accounts(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    ids: &[&BankAccountId],
    with_settlement: bool,
) -> Result<Vec<LedgerAccount>, StoreError> {
    let wanted: BTreeSet<&BankAccountId> = ids.iter().copied().collect();
    let mut accounts = lock_set(tx, platform_id, &wanted, with_settlement).await?;
    let have: BTreeSet<BankAccountId> = accounts.iter().map(|a| a.id.clone()).collect();
    let missing: BTreeSet<BankAccountId> = accounts
        .iter()
        .filter(|a| a.is_overdraftable)
        .filter_map(|a| a.overdraft_reserve_account_id.clone())
        .filter(|r| !have.contains(r))
        .collect();
    if !missing.is_empty() {
        let missing: BTreeSet<&BankAccountId> = missing.iter().collect();
        accounts.extend(lock_set(tx, platform_id, &missing, false).await?);
    }
    Ok(accounts)
}

async fn lock_set(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    ids: &BTreeSet<&BankAccountId>,
    with_settlement: bool,
) -> Result<Vec<LedgerAccount>, StoreError> {
    // `id IN (a UNION ALL of small sets)` rather than `id IN (...) OR id IN (SELECT ...)`:
    // PostgreSQL plans the union as a semi-join of primary-key lookups, while the OR form
    // filters every account of the platform. The rows are then sorted by id and locked in that
    // order (LockRows sits above the Sort).
    let mut arms: Vec<Sql> = Vec::new();
    for id in ids {
        arms.push(Sql::new("SELECT ?").bind(id.as_str()));
    }
    if !ids.is_empty() {
        let mut reserves =
            Sql::new("SELECT overdraft_reserve_account_id FROM bank_accounts WHERE id IN ");
        push_id_list(&mut reserves, ids);
        reserves
            .push(" AND platform_id = ")
            .push_bind(platform_id.as_str())
            .push(" AND is_overdraftable");
        arms.push(reserves);
    }
    if with_settlement {
        arms.push(
            Sql::new("SELECT id FROM bank_accounts WHERE platform_id = ? AND type = ?")
                .bind(platform_id.as_str())
                .bind(SETTLEMENT_ACCOUNT_TYPE),
        );
    }
    if arms.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = "
    ));
    sql.push_bind(platform_id.as_str()).push(" AND id IN (");
    for (i, arm) in arms.into_iter().enumerate() {
        if i > 0 {
            sql.push(" UNION ALL ");
        }
        sql.append(arm);
    }
    sql.push(") ORDER BY id");
    sql.push(dialect::for_no_key_update(tx.backend()));
    tx.fetch_all(sql).await?.iter().map(from_row).collect()
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
    for (id, delta) in entry.deltas() {
        // Deltas, not absolute values: the row is locked, but a delta cannot lose an update
        // even if it were not, and the table's CHECKs still guard the result.
        let sql = Sql::new(
            "UPDATE bank_accounts SET available_amount = available_amount + ?, \
             pending_amount = pending_amount + ?, holding_amount = holding_amount + ?, \
             locked_amount = locked_amount + ?, updated_at = ? WHERE platform_id = ? AND id = ?",
        )
        .bind(delta.available)
        .bind(delta.pending)
        .bind(delta.holding)
        .bind(delta.locked)
        .bind(now)
        .bind(platform_id.as_str())
        .bind(id.as_str());
        if tx.execute(sql).await? != 1 {
            return Err(StoreError::Corrupt(format!(
                "bank account {id} vanished while locked"
            )));
        }
    }
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
    tx.execute(sql).await?;
    Ok(())
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
