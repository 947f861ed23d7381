//! Book transfer and ACH transfer rows.

use super::{Row, Sql, StoreError, Tx, dialect};
use crate::model::ids::{
    AccountNumberId, AchTransferId, BankAccountId, BookTransferId, PlatformId,
};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::model::transfers::{
    AchDirection, AchStatus, AchTransferRecord, BookTransferFilter, BookTransferRecord,
    BookTransferStatus,
};
use crate::store::keyset::{Keyset, ListError, SortKey};

/// The bank account an account number belongs to, unless the number is absent or another
/// platform's.
pub async fn account_number_owner(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &AccountNumberId,
) -> Result<Option<BankAccountId>, StoreError> {
    let sql =
        Sql::new("SELECT bank_account_id FROM account_numbers WHERE platform_id = ? AND id = ?")
            .bind(platform_id.as_str())
            .bind(id.as_str());
    tx.fetch_optional(sql)
        .await?
        .map(|row| Ok(BankAccountId::from_trusted(row.get("bank_account_id")?)))
        .transpose()
}

/// Whether the platform has this bank account (in any status).
pub async fn bank_account_exists(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
) -> Result<bool, StoreError> {
    let sql = Sql::new("SELECT 1 AS one FROM bank_accounts WHERE platform_id = ? AND id = ?")
        .bind(platform_id.as_str())
        .bind(id.as_str());
    Ok(tx.fetch_optional(sql).await?.is_some())
}

// ---------------------------------------------------------------------------- book transfers

const BOOK_COLUMNS: &str = "id, amount, currency_code, sender_bank_account_id, \
    sender_account_number_id, receiver_bank_account_id, receiver_account_number_id, description, \
    allow_overdraft, status, idempotency_key, created_at, updated_at";

fn book_from_row(row: &Row) -> Result<BookTransferRecord, StoreError> {
    let status: String = row.get("status")?;
    Ok(BookTransferRecord {
        id: BookTransferId::from_trusted(row.get("id")?),
        amount: row.get("amount")?,
        currency_code: row.get("currency_code")?,
        sender_bank_account_id: BankAccountId::from_trusted(row.get("sender_bank_account_id")?),
        sender_account_number_id: row
            .get::<Option<String>>("sender_account_number_id")?
            .map(AccountNumberId::from_trusted),
        receiver_bank_account_id: BankAccountId::from_trusted(row.get("receiver_bank_account_id")?),
        receiver_account_number_id: row
            .get::<Option<String>>("receiver_account_number_id")?
            .map(AccountNumberId::from_trusted),
        description: row.get("description")?,
        allow_overdraft: row.get("allow_overdraft")?,
        status: BookTransferStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("book transfer status {status:?}")))?,
        idempotency_key: row.get("idempotency_key")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub async fn insert_book_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    t: &BookTransferRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO book_transfers (platform_id, {BOOK_COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(t.id.as_str())
    .bind(t.amount)
    .bind(&t.currency_code)
    .bind(t.sender_bank_account_id.as_str())
    .bind(t.sender_account_number_id.as_ref().map(|id| id.as_str()))
    .bind(t.receiver_bank_account_id.as_str())
    .bind(t.receiver_account_number_id.as_ref().map(|id| id.as_str()))
    .bind(t.description.clone())
    .bind(t.allow_overdraft)
    .bind(t.status.as_str())
    .bind(t.idempotency_key.clone())
    .bind(t.created_at)
    .bind(t.updated_at);
    tx.execute_deferred(sql, 1, "a new book transfer").await
}

/// Writes the mutable fields of a transfer (status, amount, `updated_at`).
pub async fn update_book_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    t: &BookTransferRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "UPDATE book_transfers SET status = ?, amount = ?, updated_at = ? \
         WHERE platform_id = ? AND id = ?",
    )
    .bind(t.status.as_str())
    .bind(t.amount)
    .bind(t.updated_at)
    .bind(platform_id.as_str())
    .bind(t.id.as_str());
    tx.execute_deferred(sql, 1, "a locked book transfer's update")
        .await
}

pub async fn get_book_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BookTransferId,
) -> Result<Option<BookTransferRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {BOOK_COLUMNS} FROM book_transfers WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, book_from_row).await
}

/// Like [`get_book_transfer`], locking the row until the transaction ends: a clear and a cancel
/// of the same transfer must not both see it on hold. Taken before the account locks, and a
/// transaction locks at most one transfer, so this cannot take part in a lock cycle.
pub async fn get_book_transfer_for_update(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BookTransferId,
) -> Result<Option<BookTransferRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {BOOK_COLUMNS} FROM book_transfers WHERE platform_id = ? AND id = ?{}",
        dialect::for_no_key_update(tx.backend())
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, book_from_row).await
}

/// The list's condition on the status: a literal (the status is one of four known words), and
/// for the rare statuses also the condition of `book_transfers_not_completed`, so that SQLite,
/// which picks a partial index before any value is bound, can read that index instead of
/// walking the whole list.
fn status_condition(status: BookTransferStatus) -> Sql {
    match status {
        BookTransferStatus::Completed => Sql::new("status = 'COMPLETED'"),
        other => Sql::new(format!(
            "status = '{}' AND status <> 'COMPLETED'",
            other.as_str()
        )),
    }
}

/// A page of the platform's book transfers, newest first, filtered.
pub async fn list_book_transfers(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    filter: &BookTransferFilter,
    page: &PageRequest,
) -> Result<Page<BookTransferRecord>, ListError> {
    book_transfers_keyset(platform_id, filter)
        .fetch(tx, page, book_from_row)
        .await
}

/// The query of [`list_book_transfers`] (public for the tests of its plans).
pub fn book_transfers_keyset(platform_id: &PlatformId, filter: &BookTransferFilter) -> Keyset {
    let mut keyset = Keyset::new(
        BOOK_COLUMNS,
        "book_transfers",
        SortKey::CREATED_AT,
        SortOrder::Desc,
    )
    .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()));
    if let Some(account) = &filter.bank_account_id {
        // One ordered read on each side's index (`book_transfers_by_sender`, `_by_receiver`).
        keyset = keyset.any_of(vec![
            Sql::new("sender_bank_account_id = ?").bind(account.as_str()),
            Sql::new("receiver_bank_account_id = ?").bind(account.as_str()),
        ]);
    }
    if let Some(status) = filter.status {
        keyset = keyset.filter(status_condition(status));
    }
    keyset = keyset.created_within(&filter.created);
    keyset
}

// ----------------------------------------------------------------------------- ACH transfers

const ACH_COLUMNS: &str = "id, type, is_incoming, status, return_code, bank_account_id, \
    account_number_id, amount, currency_code, company_id, company_name, description, created_at, \
    updated_at";

fn ach_from_row(row: &Row) -> Result<AchTransferRecord, StoreError> {
    let direction: String = row.get("type")?;
    let status: String = row.get("status")?;
    Ok(AchTransferRecord {
        id: AchTransferId::from_trusted(row.get("id")?),
        direction: AchDirection::parse(&direction)
            .ok_or_else(|| StoreError::Corrupt(format!("ACH transfer type {direction:?}")))?,
        is_incoming: row.get("is_incoming")?,
        status: AchStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("ACH transfer status {status:?}")))?,
        return_code: row.get("return_code")?,
        bank_account_id: BankAccountId::from_trusted(row.get("bank_account_id")?),
        account_number_id: AccountNumberId::from_trusted(row.get("account_number_id")?),
        amount: row.get("amount")?,
        currency_code: row.get("currency_code")?,
        company_id: row.get("company_id")?,
        company_name: row.get("company_name")?,
        description: row.get("description")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub async fn insert_ach_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    t: &AchTransferRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO ach_transfers (platform_id, {ACH_COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(t.id.as_str())
    .bind(t.direction.as_str())
    .bind(t.is_incoming)
    .bind(t.status.as_str())
    .bind(t.return_code.clone())
    .bind(t.bank_account_id.as_str())
    .bind(t.account_number_id.as_str())
    .bind(t.amount)
    .bind(&t.currency_code)
    .bind(&t.company_id)
    .bind(&t.company_name)
    .bind(t.description.clone())
    .bind(t.created_at)
    .bind(t.updated_at);
    tx.execute(sql).await?;
    Ok(())
}

pub async fn get_ach_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &AchTransferId,
) -> Result<Option<AchTransferRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {ACH_COLUMNS} FROM ach_transfers WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, ach_from_row).await
}

/// A page of the platform's ACH transfers, newest first.
pub async fn list_ach_transfers(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    page: &PageRequest,
) -> Result<Page<AchTransferRecord>, ListError> {
    Keyset::new(
        ACH_COLUMNS,
        "ach_transfers",
        SortKey::CREATED_AT,
        SortOrder::Desc,
    )
    .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
    .fetch(tx, page, ach_from_row)
    .await
}
