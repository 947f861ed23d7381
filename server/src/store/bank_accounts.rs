//! Bank account, owner and account number rows.

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx, dialect};
use crate::domain::ids::{AccountNumberId, BankAccountId, EntityId, PlatformId};

/// A stored bank account. Balances are minor units of `currency_code`.
#[derive(Debug, Clone, PartialEq)]
pub struct BankAccountRecord {
    pub id: BankAccountId,
    pub platform_id: PlatformId,
    /// `CHECKING`, `OVERDRAFT_RESERVE`, `PROGRAM_RESERVE` or `NETWORK_SETTLEMENT_ACCOUNT`.
    pub account_type: String,
    /// `open`, `closed` or `frozen`.
    pub status: String,
    pub description: String,
    pub display_name: Option<String>,
    pub currency_code: String,
    pub available_amount: i64,
    pub pending_amount: i64,
    pub holding_amount: i64,
    pub locked_amount: i64,
    pub is_overdraftable: bool,
    pub overdraft_reserve_account_id: Option<BankAccountId>,
    pub default_account_number_id: Option<AccountNumberId>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, platform_id, type, status, description, display_name, currency_code, \
    available_amount, pending_amount, holding_amount, locked_amount, is_overdraftable, \
    overdraft_reserve_account_id, default_account_number_id, created_at, updated_at";

fn from_row(row: &Row) -> Result<BankAccountRecord, StoreError> {
    Ok(BankAccountRecord {
        id: BankAccountId::from_trusted(row.get("id")?),
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        account_type: row.get("type")?,
        status: row.get("status")?,
        description: row.get("description")?,
        display_name: row.get("display_name")?,
        currency_code: row.get("currency_code")?,
        available_amount: row.get("available_amount")?,
        pending_amount: row.get("pending_amount")?,
        holding_amount: row.get("holding_amount")?,
        locked_amount: row.get("locked_amount")?,
        is_overdraftable: row.get("is_overdraftable")?,
        overdraft_reserve_account_id: row
            .get::<Option<String>>("overdraft_reserve_account_id")?
            .map(BankAccountId::from_trusted),
        default_account_number_id: row
            .get::<Option<String>>("default_account_number_id")?
            .map(AccountNumberId::from_trusted),
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub async fn insert(tx: &mut Tx<'_>, account: &BankAccountRecord) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO bank_accounts ({COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(account.id.as_str())
    .bind(account.platform_id.as_str())
    .bind(&account.account_type)
    .bind(&account.status)
    .bind(&account.description)
    .bind(account.display_name.clone())
    .bind(&account.currency_code)
    .bind(account.available_amount)
    .bind(account.pending_amount)
    .bind(account.holding_amount)
    .bind(account.locked_amount)
    .bind(account.is_overdraftable)
    .bind(
        account
            .overdraft_reserve_account_id
            .as_ref()
            .map(|id| id.as_str()),
    )
    .bind(
        account
            .default_account_number_id
            .as_ref()
            .map(|id| id.as_str()),
    )
    .bind(account.created_at)
    .bind(account.updated_at);
    tx.execute(sql).await?;
    Ok(())
}

/// The bank account, unless absent or another platform's.
pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
) -> Result<Option<BankAccountRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional(sql)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Like [`get`], locking the row until the transaction ends (balances are read to be written).
pub async fn get_for_update(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
) -> Result<Option<BankAccountRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = ? AND id = ?{}",
        dialect::for_update(tx.backend())
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional(sql)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// The platform's root account of a root type (`PROGRAM_RESERVE`, ...).
pub async fn find_root(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    account_type: &str,
) -> Result<Option<BankAccountRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = ? AND type = ? AND type <> 'CHECKING'"
    ))
    .bind(platform_id.as_str())
    .bind(account_type);
    tx.fetch_optional(sql)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Every account of the platform, oldest first (small lists and tests; the API pages).
pub async fn list_all(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<Vec<BankAccountRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = ? ORDER BY created_at, id"
    ))
    .bind(platform_id.as_str());
    tx.fetch_all(sql).await?.iter().map(from_row).collect()
}

pub async fn set_default_account_number(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
    account_number_id: &AccountNumberId,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE bank_accounts SET default_account_number_id = ?, updated_at = ? \
         WHERE platform_id = ? AND id = ?",
    )
    .bind(account_number_id.as_str())
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

/// Adds an owner at `position` (0 = primary).
pub async fn add_owner(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    entity_id: &EntityId,
    position: i64,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "INSERT INTO bank_account_owners (platform_id, bank_account_id, entity_id, position, created_at) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str())
    .bind(entity_id.as_str())
    .bind(position)
    .bind(now);
    tx.execute(sql).await?;
    Ok(())
}

/// Owner entity ids, primary first.
pub async fn owners(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
) -> Result<Vec<EntityId>, StoreError> {
    let sql = Sql::new(
        "SELECT entity_id FROM bank_account_owners WHERE platform_id = ? AND bank_account_id = ? \
         ORDER BY position",
    )
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str());
    tx.fetch_all(sql)
        .await?
        .iter()
        .map(|row| Ok(EntityId::from_trusted(row.get("entity_id")?)))
        .collect()
}

/// A stored account number.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountNumberRecord {
    pub id: AccountNumberId,
    pub platform_id: PlatformId,
    pub bank_account_id: BankAccountId,
    pub account_number: String,
    pub routing_number: String,
    pub bic: String,
    pub description: String,
    pub check_issuing_positive_pay_required: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const ACNO_COLUMNS: &str = "id, platform_id, bank_account_id, account_number, routing_number, \
    bic, description, check_issuing_positive_pay_required, created_at, updated_at";

fn account_number_from_row(row: &Row) -> Result<AccountNumberRecord, StoreError> {
    Ok(AccountNumberRecord {
        id: AccountNumberId::from_trusted(row.get("id")?),
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        bank_account_id: BankAccountId::from_trusted(row.get("bank_account_id")?),
        account_number: row.get("account_number")?,
        routing_number: row.get("routing_number")?,
        bic: row.get("bic")?,
        description: row.get("description")?,
        check_issuing_positive_pay_required: row.get("check_issuing_positive_pay_required")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

/// Inserts unless the account number is taken (by any platform); answers whether it was
/// inserted. `ON CONFLICT DO NOTHING` rather than catching the error, because a failed statement
/// aborts the whole transaction on PostgreSQL.
pub async fn insert_account_number_if_unique(
    tx: &mut Tx<'_>,
    record: &AccountNumberRecord,
) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO account_numbers ({ACNO_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?){}",
        dialect::on_conflict_do_nothing("account_number")
    ))
    .bind(record.id.as_str())
    .bind(record.platform_id.as_str())
    .bind(record.bank_account_id.as_str())
    .bind(&record.account_number)
    .bind(&record.routing_number)
    .bind(&record.bic)
    .bind(&record.description)
    .bind(record.check_issuing_positive_pay_required)
    .bind(record.created_at)
    .bind(record.updated_at);
    Ok(tx.execute(sql).await? == 1)
}

/// The account number, unless absent or another platform's.
pub async fn get_account_number(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &AccountNumberId,
) -> Result<Option<AccountNumberRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {ACNO_COLUMNS} FROM account_numbers WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional(sql)
        .await?
        .as_ref()
        .map(account_number_from_row)
        .transpose()
}
