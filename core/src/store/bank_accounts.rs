//! Bank account, owner and account number rows.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};

use super::{Backend, Row, Sql, StoreError, Tx, dialect};
use crate::model::bank_accounts::{AccountNumberRecord, BankAccountRecord};
use crate::model::ids::{AccountNumberId, BankAccountId, EntityId, PlatformId};
use crate::model::ledger::{AccountStatus, AccountType};
use crate::model::money::{Comparison, Currency};
use crate::model::page::{CreatedRange, Page, PageRequest, SortOrder};
use crate::store::keyset::{Keyset, ListError, SortKey, SortKind};

const COLUMNS: &str = "id, platform_id, type, status, description, display_name, currency_code, \
    available_amount, pending_amount, holding_amount, locked_amount, is_overdraftable, \
    overdraft_reserve_account_id, default_account_number_id, created_at, updated_at";

fn from_row(row: &Row) -> Result<BankAccountRecord, StoreError> {
    Ok(BankAccountRecord {
        id: BankAccountId::from_trusted(row.get("id")?),
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        account_type: row.spelled("type")?,
        status: row.spelled("status")?,
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
    .bind(account.account_type.as_str())
    .bind(account.status.as_str())
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
    tx.execute_deferred(sql, 1, "a new bank account").await
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
    tx.fetch_optional_as(sql, from_row).await
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
    tx.fetch_optional_as(sql, from_row).await
}

/// The platform's root account of a root type (`PROGRAM_RESERVE`, ...).
pub async fn find_root(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    account_type: AccountType,
) -> Result<Option<BankAccountRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM bank_accounts WHERE platform_id = ? AND type = ? AND type <> 'CHECKING'"
    ))
    .bind(platform_id.as_str())
    .bind(account_type.as_str());
    tx.fetch_optional_as(sql, from_row).await
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
    tx.fetch_all_as(sql, from_row).await
}

/// Deferred, like [`insert`] and [`add_owner`] (see `Tx::execute_deferred`): on PostgreSQL a new
/// account's writes go in two round trips, around the account number's insert, which must
/// answer whether its random number was free.
pub async fn set_default_account_number(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
    account_number_id: &AccountNumberId,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "UPDATE bank_accounts SET default_account_number_id = ?, updated_at = ? \
         WHERE platform_id = ? AND id = ?",
    )
    .bind(account_number_id.as_str())
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.execute_deferred(sql, 1, "a bank account's default account number")
        .await
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
    tx.execute_deferred(sql, 1, "a bank account's new owner")
        .await
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

const ACNO_COLUMNS: &str = "id, platform_id, bank_account_id, account_number, routing_number, \
    bic, description, check_issuing_positive_pay_required, created_at, updated_at";

fn account_number_from_row(row: &Row) -> Result<AccountNumberRecord, StoreError> {
    account_number_from_prefixed(row, "")
}

/// An account number from columns named `{prefix}{column}` (a join's aliases).
fn account_number_from_prefixed(
    row: &Row,
    prefix: &str,
) -> Result<AccountNumberRecord, StoreError> {
    let col = |name: &str| row.get_prefixed(prefix, name);
    Ok(AccountNumberRecord {
        id: AccountNumberId::from_trusted(col("id")?),
        platform_id: PlatformId::from_trusted(col("platform_id")?),
        bank_account_id: BankAccountId::from_trusted(col("bank_account_id")?),
        account_number: col("account_number")?,
        routing_number: col("routing_number")?,
        bic: col("bic")?,
        description: col("description")?,
        check_issuing_positive_pay_required: row
            .get_prefixed(prefix, "check_issuing_positive_pay_required")?,
        created_at: row.get_prefixed(prefix, "created_at")?,
        updated_at: row.get_prefixed(prefix, "updated_at")?,
    })
}

/// A bank account with its owners (primary first) and its default account number (`None` only
/// if the data is damaged), read with one statement.
pub struct AccountWithDetails {
    pub account: BankAccountRecord,
    pub owners: Vec<EntityId>,
    pub default_number: Option<AccountNumberRecord>,
}

/// The statement of [`get_with_details`] for `backend`, built once: it is the whole of a `GET`.
fn details_sql(backend: Backend) -> &'static str {
    static SQL: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = match backend {
        Backend::Sqlite => 0,
        Backend::Postgres => 1,
    };
    SQL[slot].get_or_init(|| {
        let account_columns: Vec<String> = COLUMNS.split(", ").map(|c| format!("a.{c}")).collect();
        let number_columns: Vec<String> = ACNO_COLUMNS
            .split(", ")
            .map(|c| format!("n.{c} AS n_{c}"))
            .collect();
        format!(
            "SELECT {}, {}, (SELECT {} FROM bank_account_owners o \
             WHERE o.platform_id = a.platform_id AND o.bank_account_id = a.id) AS owners \
             FROM bank_accounts a LEFT JOIN account_numbers n \
             ON n.platform_id = a.platform_id AND n.id = a.default_account_number_id \
             WHERE a.platform_id = ? AND a.id = ?",
            account_columns.join(", "),
            number_columns.join(", "),
            dialect::list_agg(backend, "CAST(o.position AS TEXT) || ' ' || o.entity_id"),
        )
    })
}

/// The account with its details, unless absent or another platform's: one statement, so that a
/// `GET` costs one round trip to the database (it was four with the snapshot around them).
pub async fn get_with_details(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
) -> Result<Option<AccountWithDetails>, StoreError> {
    let sql = Sql::new(details_sql(tx.backend()))
        .bind(platform_id.as_str())
        .bind(id.as_str());
    let Some(row) = tx.fetch_optional(sql).await? else {
        return Ok(None);
    };
    let owners = match row.get::<Option<String>>("owners")? {
        Some(owners) => owners_by_position(&owners)?,
        None => Vec::new(),
    };
    let default_number = match row.get::<Option<String>>("n_id")? {
        Some(_) => Some(account_number_from_prefixed(&row, "n_")?),
        None => None,
    };
    Ok(Some(AccountWithDetails {
        account: from_row(&row)?,
        owners,
        default_number,
    }))
}

/// The owners aggregated by [`details_sql`] (`position entity_id` items, comma-separated, in
/// any order), primary first.
fn owners_by_position(aggregated: &str) -> Result<Vec<EntityId>, StoreError> {
    let mut owners = aggregated
        .split(',')
        .map(|item| {
            item.split_once(' ')
                .and_then(|(position, id)| Some((position.parse::<i64>().ok()?, id)))
                .ok_or_else(|| StoreError::Corrupt(format!("bank account owner item {item:?}")))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    owners.sort_unstable_by_key(|(position, _)| *position);
    Ok(owners
        .into_iter()
        .map(|(_, id)| EntityId::from_trusted(id.to_owned()))
        .collect())
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
    tx.fetch_optional_as(sql, account_number_from_row).await
}

// ----------------------------------------------------------------------------------------------
// Listing, updates, closing, owners, account numbers and the ledger reads of the history.

/// Sort keys of the bank account list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountSort {
    CreatedAt,
    /// `available_amount`.
    Balance,
    /// Case-insensitive description (code-point order on both engines, see the
    /// `20260101000100_bank_accounts` migration).
    Description,
}

impl AccountSort {
    fn key(self) -> SortKey {
        match self {
            AccountSort::CreatedAt => SortKey::CREATED_AT,
            AccountSort::Balance => SortKey {
                column: "available_amount",
                kind: SortKind::Integer,
                id_column: "id",
            },
            AccountSort::Description => SortKey {
                column: "LOWER(description)",
                kind: SortKind::Text,
                id_column: "id",
            },
        }
    }
}

/// One alternative of a `balance.*` condition: accounts in `currencies` (any currency when
/// `None`) whose `available_amount` compares with `bound` (any amount when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalanceArm {
    pub currencies: Option<Vec<&'static str>>,
    pub bound: Option<i64>,
}

/// A `balance.*` filter: true when any arm holds (no arm: no account matches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalanceCondition {
    pub op: Comparison,
    pub arms: Vec<BalanceArm>,
}

/// Filters of the bank account list; every field narrows the list (AND).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountFilter {
    pub balance: Vec<BalanceCondition>,
    pub created: CreatedRange,
    pub currency_code: Option<String>,
    /// Case-insensitive substring of the description.
    pub description: Option<String>,
    /// Owned (alone or jointly) by this entity.
    pub entity_id: Option<String>,
    pub is_overdraftable: Option<bool>,
    pub overdraft_reserve_account_id: Option<String>,
    /// Case-insensitive substring of description, display name or an owner's name, or the id.
    pub query: Option<String>,
    pub status: Option<AccountStatus>,
    pub account_type: Option<AccountType>,
}

fn balance_sql(condition: &BalanceCondition) -> Sql {
    if condition.arms.is_empty() {
        return Sql::new("1 = 0");
    }
    let mut sql = Sql::new("");
    for (i, arm) in condition.arms.iter().enumerate() {
        if i > 0 {
            sql.push(" OR ");
        }
        sql.push("(1 = 1");
        if let Some(currencies) = &arm.currencies {
            sql.push(" AND currency_code IN (");
            for (j, code) in currencies.iter().enumerate() {
                if j > 0 {
                    sql.push(", ");
                }
                sql.push_bind(*code);
            }
            sql.push(")");
        }
        if let Some(bound) = arm.bound {
            sql.push(&format!(" AND available_amount {} ", condition.op.symbol()));
            sql.push_bind(bound);
        }
        sql.push(")");
    }
    sql
}

/// One page of the platform's bank accounts.
pub async fn list(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    filter: &AccountFilter,
    sort: AccountSort,
    order: SortOrder,
    request: &PageRequest,
) -> Result<Page<BankAccountRecord>, ListError> {
    let owned = match &filter.entity_id {
        Some(entity_id) if owns_few(tx, platform_id, entity_id).await? => Owned::Few(tx.backend()),
        _ => Owned::Many,
    };
    list_keyset_owned(platform_id, filter, sort, order, owned)
        .fetch(tx, request, from_row)
        .await
}

/// An entity's accounts up to this many are listed from its own ownership rows; beyond, the
/// list is walked in order and each account tested for the owner. From the ownership rows, a
/// page costs a lookup and a sort for each account the entity owns; walking, a test for each
/// account of the platform until the page is full, which for an owner of a few accounts among
/// a million is the whole platform (0.33 s a page, bench/log/, "Fixed so far").
pub const FEW_OWNED: i64 = 1000;

/// Whether `entity_id` owns at most [`FEW_OWNED`] accounts: counted in its index alone,
/// stopping past the limit.
async fn owns_few(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    entity_id: &str,
) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "SELECT COUNT(*) AS n FROM (SELECT 1 FROM bank_account_owners{} \
         WHERE platform_id = ? AND entity_id = ? LIMIT ?) AS owned",
        owners_by_entity(tx.backend())
    ))
    .bind(platform_id.as_str())
    .bind(entity_id)
    .bind(FEW_OWNED + 1);
    Ok(tx.fetch_one(sql).await?.get::<i64>("n")? <= FEW_OWNED)
}

/// ` INDEXED BY` the owners' index by entity on SQLite, which without statistics prefers
/// scanning the covering index of every owner of the platform; nothing on PostgreSQL.
fn owners_by_entity(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => " INDEXED BY bank_account_owners_entity",
        Backend::Postgres => "",
    }
}

/// The index of the primary key (`id TEXT PRIMARY KEY`, the table's first constraint), which
/// SQLite names itself; a test checks that plans name it.
const BY_ID: &str = "sqlite_autoindex_bank_accounts_1";

/// A filter for a value few accounts have, written with the condition of the partial index
/// that holds just those accounts (as a literal: SQLite picks a partial index before values
/// are bound), and that index's name.
struct RareFilter {
    condition: Sql,
    index: &'static str,
}

/// The filters on values that accounts are made without, unless asked: a type other than
/// CHECKING (the platform's root accounts), an overdraft reserve, overdrafts, a status other
/// than open, a currency other than USD. Most selective first; the page is read through the
/// first one's index (the others still filter). The common values filter as usual, walking the
/// sort's own index, where most rows match.
fn rare_filters(filter: &AccountFilter) -> Vec<RareFilter> {
    let mut rare = Vec::new();
    let (checking, open) = (AccountType::Checking.as_str(), AccountStatus::Open.as_str());
    if let Some(account_type) = filter.account_type.filter(|t| *t != AccountType::Checking) {
        let account_type = account_type.as_str();
        rare.push(RareFilter {
            condition: Sql::new(format!("type = '{account_type}' AND type <> '{checking}'")),
            index: "bank_accounts_one_root_per_type",
        });
    }
    if let Some(reserve) = &filter.overdraft_reserve_account_id {
        // `col = ?` implies the index's `col IS NOT NULL`, bound or not.
        rare.push(RareFilter {
            condition: Sql::new("overdraft_reserve_account_id = ?").bind(reserve),
            index: "bank_accounts_by_reserve",
        });
    }
    if filter.is_overdraftable == Some(true) {
        rare.push(RareFilter {
            condition: Sql::new("is_overdraftable = TRUE"),
            index: "bank_accounts_overdraftable",
        });
    }
    if let Some(status) = filter.status.filter(|s| *s != AccountStatus::Open) {
        rare.push(RareFilter {
            condition: Sql::new(format!("status = '{status}' AND status <> '{open}'")),
            index: "bank_accounts_not_open",
        });
    }
    let usd = Currency::usd().code();
    if let Some(code) = filter.currency_code.as_ref().filter(|c| *c != usd) {
        rare.push(RareFilter {
            condition: Sql::new(format!("currency_code = ? AND currency_code <> '{usd}'"))
                .bind(code),
            index: "bank_accounts_not_usd",
        });
    }
    rare
}

/// The query of [`list`] for an owner of many accounts, or none (public for the tests of its
/// plans).
pub fn list_keyset(
    platform_id: &PlatformId,
    filter: &AccountFilter,
    sort: AccountSort,
    order: SortOrder,
) -> Keyset {
    list_keyset_owned(platform_id, filter, sort, order, Owned::Many)
}

/// How many accounts the entity of an owner filter has, for [`list_keyset_owned`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owned {
    /// More than [`FEW_OWNED`] (or no owner filter): the list is walked, each account tested.
    Many,
    /// At most [`FEW_OWNED`]: the page is read from the owner's rows, on this backend.
    Few(Backend),
}

/// The query of [`list`]. When `filter.entity_id` owns few accounts ([`Owned::Few`]) the page
/// is read from the owner's rows, each account then looked up by id and the few sorted; on
/// SQLite both indexes are named, since without statistics SQLite walks a list index in order
/// instead, testing every account of the platform.
pub fn list_keyset_owned(
    platform_id: &PlatformId,
    filter: &AccountFilter,
    sort: AccountSort,
    order: SortOrder,
    owned: Owned,
) -> Keyset {
    let mut keyset = Keyset::new(COLUMNS, "bank_accounts", sort.key(), order)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()));
    let rare = rare_filters(filter);
    let few_owned = match (owned, &filter.entity_id) {
        (Owned::Few(backend), Some(entity_id)) => Some((backend, entity_id)),
        _ => None,
    };
    match (few_owned, rare.first()) {
        (Some(_), _) => keyset = keyset.through_index(BY_ID),
        (None, Some(first)) => keyset = keyset.through_index(first.index),
        (None, None) => {}
    }
    for rare in rare {
        keyset = keyset.filter(rare.condition);
    }
    for condition in &filter.balance {
        keyset = keyset.filter(balance_sql(condition));
    }
    keyset = keyset.created_within(&filter.created);
    let usd = Currency::usd().code();
    if filter.currency_code.as_deref() == Some(usd) {
        keyset = keyset.filter(Sql::new(format!("currency_code = '{usd}'")));
    }
    if let Some(needle) = &filter.description {
        keyset = keyset.filter(
            Sql::new(dialect::contains_ci("description")).bind(dialect::contains_pattern(needle)),
        );
    }
    match (few_owned, &filter.entity_id) {
        (Some((backend, entity_id)), _) => {
            keyset = keyset.filter(
                Sql::new(format!(
                    "id IN (SELECT bank_account_id FROM bank_account_owners{} \
                     WHERE platform_id = ? AND entity_id = ?)",
                    owners_by_entity(backend)
                ))
                .bind(platform_id.as_str())
                .bind(entity_id),
            );
        }
        (None, Some(entity_id)) => {
            // Planned on each run: PostgreSQL's generic plan, made for the typical owner of a
            // few accounts, drives from the owner's rows and sorts them all; for an owner of
            // many that took 0.44 s a page (bench/log/, "Fixed so far").
            keyset = keyset.filter(
                Sql::new(
                    "EXISTS (SELECT 1 FROM bank_account_owners o WHERE o.platform_id = bank_accounts.platform_id \
                     AND o.bank_account_id = bank_accounts.id AND o.entity_id = ?)",
                )
                .bind(entity_id)
                .planned_each_run(),
            );
        }
        (None, None) => {}
    }
    if filter.is_overdraftable == Some(false) {
        keyset = keyset.filter(Sql::new("is_overdraftable = FALSE"));
    }
    if let Some(query) = &filter.query {
        let pattern = dialect::contains_pattern(query);
        keyset = keyset.filter(
            Sql::new(format!(
                "{} OR {} OR id = ? OR EXISTS (SELECT 1 FROM bank_account_owners o \
                 JOIN entities e ON e.platform_id = o.platform_id AND e.id = o.entity_id \
                 WHERE o.platform_id = bank_accounts.platform_id AND o.bank_account_id = bank_accounts.id \
                 AND {})",
                dialect::contains_ci("description"),
                dialect::contains_ci("display_name"),
                dialect::contains_ci("e.name"),
            ))
            .bind(pattern.clone())
            .bind(pattern.clone())
            .bind(query)
            .bind(pattern),
        );
    }
    if filter.status == Some(AccountStatus::Open) {
        keyset = keyset.filter(Sql::new(format!("status = '{}'", AccountStatus::Open)));
    }
    if filter.account_type == Some(AccountType::Checking) {
        let checking = AccountType::Checking.as_str();
        keyset = keyset.filter(Sql::new(format!("type = '{checking}'")));
    }
    keyset
}

/// Owner entity ids of several accounts at once (one query for a page), primary first.
pub async fn owners_of_many(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_ids: &[&BankAccountId],
) -> Result<HashMap<BankAccountId, Vec<EntityId>>, StoreError> {
    let mut out: HashMap<BankAccountId, Vec<EntityId>> = HashMap::new();
    if bank_account_ids.is_empty() {
        return Ok(out);
    }
    let mut sql = Sql::new(
        "SELECT bank_account_id, entity_id FROM bank_account_owners WHERE platform_id = ? \
         AND bank_account_id IN (",
    )
    .bind(platform_id.as_str());
    for (i, id) in bank_account_ids.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push_bind(id.as_str());
    }
    sql.push(") ORDER BY bank_account_id, position");
    for row in tx.fetch_all(sql).await? {
        out.entry(BankAccountId::from_trusted(row.get("bank_account_id")?))
            .or_default()
            .push(EntityId::from_trusted(row.get("entity_id")?));
    }
    Ok(out)
}

/// The position after the last owner's (0 for an account without owners).
pub async fn next_owner_position(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
) -> Result<i64, StoreError> {
    let sql = Sql::new(
        "SELECT CAST(COALESCE(MAX(position) + 1, 0) AS BIGINT) AS next FROM bank_account_owners \
         WHERE platform_id = ? AND bank_account_id = ?",
    )
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str());
    tx.fetch_one(sql).await?.get("next")
}

/// The changeable fields of a bank account, all written at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountChanges {
    pub description: String,
    pub display_name: Option<String>,
    pub is_overdraftable: bool,
    pub overdraft_reserve_account_id: Option<BankAccountId>,
}

/// Writes `changes`; answers whether the account exists.
pub async fn update_fields(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
    changes: &AccountChanges,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE bank_accounts SET description = ?, display_name = ?, is_overdraftable = ?, \
         overdraft_reserve_account_id = ?, updated_at = ? WHERE platform_id = ? AND id = ?",
    )
    .bind(&changes.description)
    .bind(changes.display_name.clone())
    .bind(changes.is_overdraftable)
    .bind(
        changes
            .overdraft_reserve_account_id
            .as_ref()
            .map(|id| id.as_str()),
    )
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

/// Marks the account `closed`; answers whether it exists.
pub async fn close(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE bank_accounts SET status = 'closed', closed_at = ?, updated_at = ? \
         WHERE platform_id = ? AND id = ?",
    )
    .bind(now)
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

/// Writes the two changeable fields of an account number; answers whether it exists.
pub async fn update_account_number(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &AccountNumberId,
    description: &str,
    check_issuing_positive_pay_required: bool,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE account_numbers SET description = ?, check_issuing_positive_pay_required = ?, \
         updated_at = ? WHERE platform_id = ? AND id = ?",
    )
    .bind(description)
    .bind(check_issuing_positive_pay_required)
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

/// One page of the account numbers of a bank account, by creation time.
pub async fn list_account_numbers(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    order: SortOrder,
    request: &PageRequest,
) -> Result<Page<AccountNumberRecord>, ListError> {
    Keyset::new(ACNO_COLUMNS, "account_numbers", SortKey::CREATED_AT, order)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
        .filter(Sql::new("bank_account_id = ?").bind(bank_account_id.as_str()))
        .fetch(tx, request, account_number_from_row)
        .await
}

/// The four balance kinds of the ledger, as `ledger_postings.balance` names them.
pub const BALANCE_KINDS: [&str; 4] = ["available", "pending", "holding", "locked"];

/// One ledger posting of an account, as the history reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostingRecord {
    /// `available`, `pending`, `holding` or `locked`.
    pub balance: String,
    /// Signed change of that balance, minor units.
    pub amount: i64,
    pub created_at: DateTime<Utc>,
}

/// Which of an account's postings to add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostingsAt {
    /// Those made strictly before this moment.
    Before(DateTime<Utc>),
    /// Those made at this moment or later.
    From(DateTime<Utc>),
}

/// Per balance kind, the sum of the account's postings `at`.
pub async fn posting_totals(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    at: PostingsAt,
) -> Result<Vec<(String, i64)>, StoreError> {
    let (comparison, moment) = match at {
        PostingsAt::Before(moment) => ("<", moment),
        PostingsAt::From(moment) => (">=", moment),
    };
    let sql = Sql::new(format!(
        "SELECT balance, {} AS total FROM ledger_postings \
         WHERE platform_id = ? AND bank_account_id = ? AND created_at {comparison} ? \
         GROUP BY balance",
        dialect::sum_i64("amount")
    ))
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str())
    .bind(moment);
    tx.fetch_all(sql)
        .await?
        .iter()
        .map(|row| Ok((row.get("balance")?, row.get("total")?)))
        .collect()
}

/// The account's postings in `[from, to)`, oldest first.
pub async fn postings_between(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<PostingRecord>, StoreError> {
    let sql = Sql::new(
        "SELECT balance, amount, created_at FROM ledger_postings \
         WHERE platform_id = ? AND bank_account_id = ? AND created_at >= ? AND created_at < ? \
         ORDER BY created_at, id",
    )
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str())
    .bind(from)
    .bind(to);
    tx.fetch_all(sql)
        .await?
        .iter()
        .map(|row| {
            Ok(PostingRecord {
                balance: row.get("balance")?,
                amount: row.get("amount")?,
                created_at: row.get("created_at")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(owners: &[EntityId]) -> Vec<&str> {
        owners.iter().map(EntityId::as_str).collect()
    }

    #[test]
    fn aggregated_owners_come_back_in_position_order() {
        let owners = owners_by_position("2 enti_c,0 enti_b,10 enti_a,1 enti_d").expect("parsed");
        assert_eq!(ids(&owners), ["enti_b", "enti_d", "enti_c", "enti_a"]);
        let one = owners_by_position("0 enti_only").expect("parsed");
        assert_eq!(ids(&one), ["enti_only"]);
    }

    #[test]
    fn a_damaged_owner_aggregate_is_an_error_not_a_guess() {
        for damaged in ["enti_a", "x enti_a", "0 enti_a,enti_b", ""] {
            let result = owners_by_position(damaged);
            assert!(
                matches!(result, Err(StoreError::Corrupt(_))),
                "{damaged:?}: {result:?}"
            );
        }
    }
}
