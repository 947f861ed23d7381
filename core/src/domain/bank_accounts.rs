//! Bank accounts and their account numbers: creation (with a default account number), updates,
//! closing, owners, listing.
//!
//! Design note. Every request runs its reads and writes in one transaction. Requests that
//! address other resources in their body (the owner entity, the overdraft reserve account) are
//! checked twice: `check_new_account_references` answers "not found" *before* the
//! `Idempotency-Key` is looked at (the contract's precedence is 404 before 409/422), and the
//! write transaction resolves them again, because they may change between the two. Business
//! rules that depend on state (verification, account type, status, balances) are only decided
//! inside the write transaction, on rows locked for update where a concurrent write could race.

use crate::model::page::{Bounds, CreatedRange};

use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::domain::events::{self, EventData};
use crate::domain::platforms::{self, BankSettings, PlatformError};
use crate::idempotency::{self, IdempotencyKey, WriteError, WriteRequest, Written};
use crate::model::bank_accounts::{AccountNumberRecord, BankAccountRecord};
use crate::model::entities::EntityRecord;
use crate::model::events::EventType;
use crate::model::ids::{AccountNumberId, BankAccountId, EntityId, PlatformId};
use crate::model::ledger::{AccountStatus, AccountType};
use crate::model::money::{self, CURRENCIES, Comparison, Currency};
use crate::model::page::{Page, PageRequest, PaginationError, SortOrder};
use crate::store::bank_accounts::{
    self as repo, AccountChanges, AccountFilter, AccountSort, BalanceArm, BalanceCondition,
};
use crate::store::entities;
use crate::store::{Db, StoreError, Tx};

/// Description length of a bank account, in characters.
pub const DESCRIPTION_LEN: std::ops::RangeInclusive<usize> = 3..=255;
/// Display name length of a bank account, in characters.
pub const DISPLAY_NAME_LEN: std::ops::RangeInclusive<usize> = 1..=255;
/// Longest account number description, in characters.
pub const MAX_ACCOUNT_NUMBER_DESCRIPTION: usize = 255;

/// Failures of bank account and account number operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum BankAccountError {
    #[error("bank account not found")]
    NotFound,
    #[error("entity not found")]
    EntityNotFound,
    #[error("account number not found")]
    AccountNumberNotFound,
    /// A field of the request is invalid: (field, message).
    #[error("{0} {1}")]
    InvalidField(&'static str, String),
    #[error("currency `{0}` is not supported")]
    UnsupportedCurrency(String),
    #[error("the entity is not verified")]
    EntityNotVerified,
    #[error("overdraft_reserve_account_id must be the platform's OVERDRAFT_RESERVE account")]
    InvalidOverdraftReserve,
    #[error("the bank account is {0}")]
    NotOpen(AccountStatus),
    #[error("the bank account's balances are not all zero")]
    BalanceNotZero,
    /// An overdraft setting change on an account whose available amount is below zero: its
    /// shortfall is locked on its current reserve, and the table forbids a negative available
    /// amount on an account that is not overdraftable.
    #[error("the bank account is overdrawn")]
    Overdrawn,
    #[error("root accounts of the platform cannot be deleted")]
    RootAccount,
    #[error("could not find an unused account number")]
    AccountNumbersExhausted,
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(BankAccountError);

impl From<PlatformError> for BankAccountError {
    fn from(e: PlatformError) -> Self {
        match e {
            PlatformError::Store(e) => BankAccountError::Store(e),
            PlatformError::AccountNumbersExhausted => BankAccountError::AccountNumbersExhausted,
            // `create_account_number` fails only in the two ways above.
            other => BankAccountError::Store(StoreError::Corrupt(other.to_string())),
        }
    }
}

type Result<T, E = BankAccountError> = std::result::Result<T, E>;

/// A bank account as lists show it.
#[derive(Debug, Clone, PartialEq)]
pub struct BankAccountView {
    pub account: BankAccountRecord,
    /// Primary owner first.
    pub owners: Vec<EntityId>,
}

/// A bank account with its default account number (create, get, update, add owner).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BankAccountDetails {
    pub account: BankAccountRecord,
    pub owners: Vec<EntityId>,
    pub default_number: DefaultNumber,
}

/// What an account's answers show of its default account number. Only these fields, because
/// the details are stored twice a write (the idempotent snapshot and the event's `data`): the
/// whole record made a created account's snapshot 933 bytes where the wire answer is 577, and
/// SQLite's writes and checkpoints grew with it. A stored snapshot with the record's other
/// fields still reads (serde ignores them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DefaultNumber {
    pub id: AccountNumberId,
    pub account_number: String,
    pub routing_number: String,
    pub bic: String,
}

impl From<AccountNumberRecord> for DefaultNumber {
    fn from(n: AccountNumberRecord) -> Self {
        DefaultNumber {
            id: n.id,
            account_number: n.account_number,
            routing_number: n.routing_number,
            bic: n.bic,
        }
    }
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

fn check_len(
    field: &'static str,
    value: &str,
    range: std::ops::RangeInclusive<usize>,
) -> Result<()> {
    if range.contains(&char_len(value)) {
        Ok(())
    } else {
        Err(BankAccountError::InvalidField(
            field,
            format!(
                "must be {} to {} characters long",
                range.start(),
                range.end()
            ),
        ))
    }
}

// ------------------------------------------------------------------------------ create

/// A create request as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBankAccount {
    pub entity_id: String,
    pub description: String,
    pub display_name: Option<String>,
    pub currency_code: Option<String>,
    pub is_overdraftable: Option<bool>,
    pub overdraft_reserve_account_id: Option<String>,
}

/// A create request whose shape is valid (lengths, currency, reserve present when needed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidNewBankAccount {
    entity_id: String,
    description: String,
    display_name: Option<String>,
    currency: Currency,
    is_overdraftable: bool,
    overdraft_reserve_account_id: Option<String>,
}

impl NewBankAccount {
    /// Checks what needs no database: the request's shape.
    pub fn validate(self) -> Result<ValidNewBankAccount> {
        check_len("description", &self.description, DESCRIPTION_LEN)?;
        if let Some(name) = &self.display_name {
            check_len("display_name", name, DISPLAY_NAME_LEN)?;
        }
        let currency = match &self.currency_code {
            None => Currency::usd(),
            Some(code) => Currency::from_code(code)
                .ok_or_else(|| BankAccountError::UnsupportedCurrency(code.clone()))?,
        };
        let is_overdraftable = self.is_overdraftable.unwrap_or(false);
        if is_overdraftable && self.overdraft_reserve_account_id.is_none() {
            return Err(BankAccountError::InvalidField(
                "overdraft_reserve_account_id",
                "is required when is_overdraftable is true".to_owned(),
            ));
        }
        Ok(ValidNewBankAccount {
            entity_id: self.entity_id,
            description: self.description,
            display_name: self.display_name,
            currency,
            is_overdraftable,
            overdraft_reserve_account_id: self.overdraft_reserve_account_id,
        })
    }
}

/// The entity named in a body, unless absent, deleted, malformed or another platform's.
async fn resolve_entity(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    raw: &str,
) -> Result<EntityRecord> {
    let id = EntityId::parse(raw).ok_or(BankAccountError::EntityNotFound)?;
    entities::get(tx, platform_id, &id)
        .await?
        .ok_or(BankAccountError::EntityNotFound)
}

/// The bank account named as overdraft reserve in a body. Anything but an account of the
/// platform is the same 400 as an account of the wrong type: the field has one valid value
/// (the platform's `OVERDRAFT_RESERVE`), and a 404 here would read as "the account in the path
/// is missing" on `PATCH /bank-accounts/{id}` (Schemathesis flagged exactly that). Unknown and
/// foreign ids answer alike, so nothing about other platforms shows.
async fn resolve_reserve(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    raw: &str,
) -> Result<BankAccountRecord> {
    let id = BankAccountId::parse(raw).ok_or(BankAccountError::InvalidOverdraftReserve)?;
    repo::get(tx, platform_id, &id)
        .await?
        .ok_or(BankAccountError::InvalidOverdraftReserve)
}

fn ensure_verified(entity: &EntityRecord) -> Result<()> {
    if entity.verification_status == crate::model::entities::VerificationStatus::Verified {
        Ok(())
    } else {
        Err(BankAccountError::EntityNotVerified)
    }
}

fn ensure_overdraft_reserve(account: &BankAccountRecord) -> Result<()> {
    if account.account_type == AccountType::OverdraftReserve {
        Ok(())
    } else {
        Err(BankAccountError::InvalidOverdraftReserve)
    }
}

/// The 404 stage of a create: the owner entity must exist. (The reserve account is a business
/// rule, checked with the others after the idempotency stage: see [`resolve_reserve`].)
async fn check_new_account_references(
    db: &Db,
    platform_id: &PlatformId,
    new: &ValidNewBankAccount,
) -> Result<()> {
    db.read_single(|tx| {
        Box::pin(async move {
            resolve_entity(tx, platform_id, &new.entity_id).await?;
            Ok(())
        })
    })
    .await
}

/// Creates a `CHECKING` account owned by the entity, with its default account number, inside
/// the caller's write transaction.
async fn create(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    bank: &BankSettings,
    platform_id: &PlatformId,
    new: &ValidNewBankAccount,
) -> Result<BankAccountDetails> {
    let entity = resolve_entity(tx, platform_id, &new.entity_id).await?;
    let reserve = match &new.overdraft_reserve_account_id {
        Some(raw) => Some(resolve_reserve(tx, platform_id, raw).await?),
        None => None,
    };
    ensure_verified(&entity)?;
    if let Some(reserve) = &reserve {
        ensure_overdraft_reserve(reserve)?;
    }
    let now = clock.now();
    let mut account = BankAccountRecord {
        display_name: new.display_name.clone(),
        is_overdraftable: new.is_overdraftable,
        overdraft_reserve_account_id: reserve.map(|r| r.id),
        ..BankAccountRecord::opened(
            BankAccountId::generate(now),
            platform_id.clone(),
            AccountType::Checking,
            new.description.clone(),
            new.currency.code().to_owned(),
            now,
        )
    };
    let number = platforms::open_account(tx, clock, bank, &mut account, &entity.id).await?;
    let details = BankAccountDetails {
        account,
        owners: vec![entity.id],
        default_number: number.into(),
    };
    let created = EventType::BankAccountCreated;
    record_event(
        tx,
        platform_id,
        now,
        created,
        EventData::BankAccount(Box::new(details.clone())),
    )
    .await?;
    Ok(details)
}

/// An event about an account or account number, in the change's transaction.
async fn record_event(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    event_type: EventType,
    data: EventData,
) -> Result<()> {
    Ok(events::record(tx, now, platform_id, event_type, data).await?)
}

/// The account's details after a change, recorded as `event_type`.
async fn changed(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    event_type: EventType,
    id: &BankAccountId,
) -> Result<BankAccountDetails> {
    let d = details(tx, platform_id, id).await?;
    let data = EventData::BankAccount(Box::new(d.clone()));
    record_event(tx, platform_id, now, event_type, data).await?;
    Ok(d)
}

// ------------------------------------------------------------------------------ read

/// The account with its owners and default account number, read with one statement (inside a
/// write transaction after a change, or alone for a `GET`).
async fn details(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
) -> Result<BankAccountDetails> {
    details_in(tx, platform_id, id)
        .await?
        .ok_or(BankAccountError::NotFound)
}

/// The account `id` with its details as its GET answers them, read in `tx` (the snapshot of
/// an event about it).
pub(crate) async fn details_in(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &BankAccountId,
) -> Result<Option<BankAccountDetails>, StoreError> {
    let Some(found) = repo::get_with_details(tx, platform_id, id).await? else {
        return Ok(None);
    };
    // Every account gets its default number in the transaction that creates it.
    let default_number = found.default_number.ok_or_else(|| {
        StoreError::Corrupt(format!(
            "bank account {} has no default account number",
            found.account.id
        ))
    })?;
    Ok(Some(BankAccountDetails {
        account: found.account,
        owners: found.owners,
        default_number: default_number.into(),
    }))
}

/// The account addressed by a path id, unless malformed, absent or another platform's.
async fn find(tx: &mut Tx<'_>, platform_id: &PlatformId, raw: &str) -> Result<BankAccountRecord> {
    let id = BankAccountId::parse(raw).ok_or(BankAccountError::NotFound)?;
    repo::get(tx, platform_id, &id)
        .await?
        .ok_or(BankAccountError::NotFound)
}

/// Like [`find`], locking the row for the rest of the transaction.
async fn find_for_update(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    raw: &str,
) -> Result<BankAccountRecord> {
    let id = BankAccountId::parse(raw).ok_or(BankAccountError::NotFound)?;
    repo::get_for_update(tx, platform_id, &id)
        .await?
        .ok_or(BankAccountError::NotFound)
}

/// Bank accounts, their owners and account numbers (and their history, `domain::history`), each
/// operation in its own transaction.
pub struct BankAccounts<'a> {
    pub(super) db: &'a Db,
    pub(super) clock: &'a dyn Clock,
    pub(super) bank: &'a BankSettings,
}

impl BankAccounts<'_> {
    /// Opens a bank account. Precedence as the contract gives it: the `Idempotency-Key`'s shape,
    /// then 404 for the entity and reserve account the request names, then the key's 409/422,
    /// then the rules.
    pub async fn create(
        &self,
        platform_id: &PlatformId,
        new: &ValidNewBankAccount,
        write: WriteRequest<'_>,
    ) -> Result<Written<BankAccountDetails>, WriteError<BankAccountError>> {
        if let Some(key) = write.key {
            IdempotencyKey::parse(key)?;
        }
        check_new_account_references(self.db, platform_id, new)
            .await
            .map_err(WriteError::Rule)?;
        let (clock, bank) = (self.clock, self.bank);
        idempotency::write(self.db, clock, platform_id, write, |tx| {
            Box::pin(create(tx, clock, bank, platform_id, new))
        })
        .await
    }

    /// Adds an account number to the bank account `bank_account_id`. Precedence: the key's
    /// shape, 404 for the account, the key's 409/422, the rules.
    pub async fn create_account_number(
        &self,
        platform_id: &PlatformId,
        bank_account_id: &str,
        new: &NewAccountNumber,
        write: WriteRequest<'_>,
    ) -> Result<Written<AccountNumberRecord>, WriteError<BankAccountError>> {
        new.validate().map_err(WriteError::Rule)?;
        if let Some(key) = write.key {
            IdempotencyKey::parse(key)?;
        }
        check_exists(self.db, platform_id, bank_account_id)
            .await
            .map_err(WriteError::Rule)?;
        let (clock, bank) = (self.clock, self.bank);
        idempotency::write(self.db, clock, platform_id, write, |tx| {
            Box::pin(create_account_number(
                tx,
                clock,
                bank,
                platform_id,
                bank_account_id,
                new,
            ))
        })
        .await
    }

    /// One bank account with its details.
    pub async fn get(&self, platform_id: &PlatformId, id: &str) -> Result<BankAccountDetails> {
        let db = self.db;
        let id = BankAccountId::parse(id).ok_or(BankAccountError::NotFound)?;
        let id = &id;
        db.read_single(|tx| Box::pin(async move { details(tx, platform_id, id).await }))
            .await
    }

    /// One page of the platform's bank accounts with their owners.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        query: &ListQuery,
        page: &PageRequest,
    ) -> Result<Page<BankAccountView>> {
        let db = self.db;
        let filter = query.filter()?;
        let sort = match query.sort {
            SortField::CreatedAt => AccountSort::CreatedAt,
            SortField::Balance => AccountSort::Balance,
            SortField::Description => AccountSort::Description,
        };
        let order = if query.descending {
            SortOrder::Desc
        } else {
            SortOrder::Asc
        };
        db.read(|tx| {
            let filter = &filter;
            Box::pin(async move {
                let accounts = repo::list(tx, platform_id, filter, sort, order, page).await?;
                let ids: Vec<&BankAccountId> = accounts.items.iter().map(|a| &a.id).collect();
                let mut owners = repo::owners_of_many(tx, platform_id, &ids).await?;
                let items = accounts
                    .items
                    .into_iter()
                    .map(|account| {
                        let owners = owners.remove(&account.id).unwrap_or_default();
                        BankAccountView { account, owners }
                    })
                    .collect();
                Ok(Page {
                    items,
                    has_more: accounts.has_more,
                })
            })
        })
        .await
    }

    /// Applies `update` to the account addressed by `id`.
    pub async fn update(
        &self,
        platform_id: &PlatformId,
        id: &str,
        update: &BankAccountUpdate,
    ) -> Result<BankAccountDetails> {
        let db = self.db;
        let clock = self.clock;
        update.validate()?;
        db.write(|tx| {
            Box::pin(async move {
                let account = find_for_update(tx, platform_id, id).await?;
                let reserve = match &update.overdraft_reserve_account_id {
                    Some(raw) => Some(resolve_reserve(tx, platform_id, raw).await?),
                    None => None,
                };
                if let Some(reserve) = &reserve {
                    ensure_overdraft_reserve(reserve)?;
                }
                let is_overdraftable = update.is_overdraftable.unwrap_or(account.is_overdraftable);
                let reserve_id = reserve
                    .map(|r| r.id)
                    .or_else(|| account.overdraft_reserve_account_id.clone());
                if is_overdraftable && reserve_id.is_none() {
                    return Err(BankAccountError::InvalidField(
                        "overdraft_reserve_account_id",
                        "is required when is_overdraftable is true".to_owned(),
                    ));
                }
                if is_overdraftable && account.account_type != AccountType::Checking {
                    return Err(BankAccountError::InvalidField(
                        "is_overdraftable",
                        "only CHECKING accounts can be overdraftable".to_owned(),
                    ));
                }
                check_overdraft_change(&account, is_overdraftable, reserve_id.as_ref())?;
                let changes = AccountChanges {
                    description: update
                        .description
                        .clone()
                        .unwrap_or_else(|| account.description.clone()),
                    display_name: update
                        .display_name
                        .clone()
                        .or_else(|| account.display_name.clone()),
                    is_overdraftable,
                    overdraft_reserve_account_id: reserve_id,
                };
                let now = clock.now();
                if !repo::update_fields(tx, platform_id, &account.id, &changes, now).await? {
                    return Err(BankAccountError::NotFound);
                }
                let updated = EventType::BankAccountUpdated;
                changed(tx, platform_id, now, updated, &account.id).await
            })
        })
        .await
    }

    /// Closes the account: only at zero balances, never a root account; closing a closed account
    /// again succeeds and changes nothing.
    pub async fn close(&self, platform_id: &PlatformId, id: &str) -> Result<()> {
        let (db, clock) = (self.db, self.clock);
        db.write(|tx| {
            Box::pin(async move {
                // Locked: a transfer must not move money in between the check and the close.
                let account = find_for_update(tx, platform_id, id).await?;
                if account.account_type != AccountType::Checking {
                    return Err(BankAccountError::RootAccount);
                }
                if account.status == AccountStatus::Closed {
                    return Ok(());
                }
                let balances = [
                    account.available_amount,
                    account.pending_amount,
                    account.holding_amount,
                    account.locked_amount,
                ];
                if balances.iter().any(|b| *b != 0) {
                    return Err(BankAccountError::BalanceNotZero);
                }
                let now = clock.now();
                if !repo::close(tx, platform_id, &account.id, now).await? {
                    return Err(BankAccountError::NotFound);
                }
                let closed = EventType::BankAccountClosed;
                changed(tx, platform_id, now, closed, &account.id).await?;
                Ok(())
            })
        })
        .await
    }

    /// Adds `entity_id` as a further owner; an existing owner is left as it is.
    pub async fn add_owner(
        &self,
        platform_id: &PlatformId,
        id: &str,
        entity_id: &str,
    ) -> Result<BankAccountDetails> {
        let db = self.db;
        let clock = self.clock;
        db.write(|tx| {
            Box::pin(async move {
                // Locked so that concurrent additions take distinct positions.
                let account = find_for_update(tx, platform_id, id).await?;
                let entity = resolve_entity(tx, platform_id, entity_id).await?;
                let owners = repo::owners(tx, platform_id, &account.id).await?;
                if owners.contains(&entity.id) {
                    return details(tx, platform_id, &account.id).await;
                }
                ensure_verified(&entity)?;
                let position = repo::next_owner_position(tx, platform_id, &account.id).await?;
                let now = clock.now();
                repo::add_owner(tx, platform_id, &account.id, &entity.id, position, now).await?;
                let updated = EventType::BankAccountUpdated;
                changed(tx, platform_id, now, updated, &account.id).await
            })
        })
        .await
    }

    /// One account number.
    pub async fn get_account_number(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<AccountNumberRecord> {
        let db = self.db;
        db.read_single(|tx| Box::pin(async move { find_account_number(tx, platform_id, id).await }))
            .await
    }

    /// Applies `update` to the account number addressed by `id`.
    pub async fn update_account_number(
        &self,
        platform_id: &PlatformId,
        id: &str,
        update: &AccountNumberUpdate,
    ) -> Result<AccountNumberRecord> {
        let db = self.db;
        let clock = self.clock;
        if let Some(description) = &update.description {
            check_account_number_description(description)?;
        }
        db.write(|tx| {
            Box::pin(async move {
                let current = find_account_number(tx, platform_id, id).await?;
                let description = update
                    .description
                    .clone()
                    .unwrap_or_else(|| current.description.clone());
                let flag = update
                    .check_issuing_positive_pay_required
                    .unwrap_or(current.check_issuing_positive_pay_required);
                let now = clock.now();
                if !repo::update_account_number(
                    tx,
                    platform_id,
                    &current.id,
                    &description,
                    flag,
                    now,
                )
                .await?
                {
                    return Err(BankAccountError::AccountNumberNotFound);
                }
                let updated = find_account_number(tx, platform_id, current.id.as_str()).await?;
                let data = EventData::AccountNumber(Box::new(updated.clone()));
                let event_type = EventType::AccountNumberUpdated;
                record_event(tx, platform_id, now, event_type, data).await?;
                Ok(updated)
            })
        })
        .await
    }

    /// One page of the account numbers of the account addressed by `bank_account_id`, newest first.
    pub async fn list_account_numbers(
        &self,
        platform_id: &PlatformId,
        bank_account_id: &str,
        page: &PageRequest,
    ) -> Result<Page<AccountNumberRecord>> {
        let db = self.db;
        db.read(|tx| {
            Box::pin(async move {
                let account = find(tx, platform_id, bank_account_id).await?;
                Ok(
                    repo::list_account_numbers(tx, platform_id, &account.id, SortOrder::Desc, page)
                        .await?,
                )
            })
        })
        .await
    }
}

/// Whether the bank account addressed by a path id exists (the 404 stage of the account
/// number create, before its `Idempotency-Key`).
async fn check_exists(db: &Db, platform_id: &PlatformId, id: &str) -> Result<()> {
    db.read_single(|tx| Box::pin(async move { find(tx, platform_id, id).await.map(|_| ()) }))
        .await
}

// ------------------------------------------------------------------------------ list

/// Field of the list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortField {
    #[default]
    CreatedAt,
    Balance,
    Description,
}

/// The list request's filters and order, as received (after the framework's type checks).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListQuery {
    pub balance: Bounds<i64>,
    pub created: CreatedRange,
    pub currency_code: Option<String>,
    pub description: Option<String>,
    pub entity_id: Option<String>,
    pub is_overdraftable: Option<bool>,
    pub overdraft_reserve_account_id: Option<String>,
    pub query: Option<String>,
    pub status: Option<AccountStatus>,
    pub account_type: Option<AccountType>,
    pub sort: SortField,
    pub descending: bool,
}

/// The `balance.*` condition for `value` (see [`money::comparison_bound`]).
///
/// With a currency the value is already in its minor units. Without one it has two implied
/// decimals and is converted per currency; currencies with the same exponent share one bound,
/// so the condition has one alternative per exponent. A bound that overflows `i64` is beyond
/// every stored amount: such a currency either always or never matches.
pub fn balance_condition(
    op: Comparison,
    value: i64,
    currency: Option<Currency>,
) -> BalanceCondition {
    if currency.is_some() {
        return BalanceCondition {
            op,
            arms: vec![BalanceArm {
                currencies: None,
                bound: Some(value),
            }],
        };
    }
    let mut exponents: Vec<u8> = CURRENCIES.iter().map(|c| c.exponent()).collect();
    exponents.sort_unstable();
    exponents.dedup();
    let mut arms = Vec::new();
    for exponent in exponents {
        let group: Vec<Currency> = CURRENCIES
            .iter()
            .copied()
            .filter(|c| c.exponent() == exponent)
            .collect();
        let Some(sample) = group.first().copied() else {
            continue;
        };
        let codes = Some(group.iter().map(|c| c.code()).collect());
        match money::comparison_bound(op, value, sample) {
            Some(bound) => arms.push(BalanceArm {
                currencies: codes,
                bound: Some(bound),
            }),
            None => {
                // The bound is beyond i64 on the side of `value`'s sign.
                let huge_positive = value > 0;
                let always = matches!(
                    (op, huge_positive),
                    (Comparison::Lt | Comparison::Lte, true)
                        | (Comparison::Gt | Comparison::Gte, false)
                );
                if always {
                    arms.push(BalanceArm {
                        currencies: codes,
                        bound: None,
                    });
                }
            }
        }
    }
    BalanceCondition { op, arms }
}

impl ListQuery {
    fn filter(&self) -> Result<AccountFilter> {
        let currency = match &self.currency_code {
            None => None,
            Some(code) => Some(
                Currency::from_code(code)
                    .ok_or_else(|| BankAccountError::UnsupportedCurrency(code.clone()))?,
            ),
        };
        let balance = (self.balance.set())
            .map(|(op, v)| balance_condition(op, v, currency))
            .collect();
        Ok(AccountFilter {
            balance,
            created: self.created,
            currency_code: currency.map(|c| c.code().to_owned()),
            description: self.description.clone(),
            entity_id: self.entity_id.clone(),
            is_overdraftable: self.is_overdraftable,
            overdraft_reserve_account_id: self.overdraft_reserve_account_id.clone(),
            query: self.query.clone(),
            status: self.status,
            account_type: self.account_type,
        })
    }
}

// ------------------------------------------------------------------------------ update

/// An update request as received; `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BankAccountUpdate {
    pub description: Option<String>,
    pub display_name: Option<String>,
    pub is_overdraftable: Option<bool>,
    pub overdraft_reserve_account_id: Option<String>,
}

impl BankAccountUpdate {
    /// Checks what needs no database.
    pub fn validate(&self) -> Result<()> {
        if let Some(description) = &self.description {
            check_len("description", description, DESCRIPTION_LEN)?;
        }
        if let Some(name) = &self.display_name {
            check_len("display_name", name, DISPLAY_NAME_LEN)?;
        }
        Ok(())
    }
}

/// Refuses an overdraft setting change that would strand an overdrawn account's shortfall.
///
/// While `available_amount < 0` the shortfall is locked on the current reserve and is released
/// there as the account is refilled ([`crate::domain::ledger`]). Turning overdraft off would
/// leave a negative balance the table forbids; moving to another reserve would release the lock
/// on an account that never held it. Both wait until the account is back at zero or above. The
/// caller holds the account's row lock, so no movement can change the balance meanwhile.
fn check_overdraft_change(
    account: &BankAccountRecord,
    is_overdraftable: bool,
    reserve_id: Option<&BankAccountId>,
) -> Result<()> {
    // Only an overdraftable account carries a shortfall on a reserve; the settlement account is
    // negative by design and keeps its (non-)settings.
    let has_shortfall = account.is_overdraftable && account.available_amount < 0;
    let changes = !is_overdraftable || reserve_id != account.overdraft_reserve_account_id.as_ref();
    if has_shortfall && changes {
        Err(BankAccountError::Overdrawn)
    } else {
        Ok(())
    }
}

// ------------------------------------------------------------------------------ delete

// ------------------------------------------------------------------------------ owners

// ------------------------------------------------------------------------------ account numbers

fn check_account_number_description(description: &str) -> Result<()> {
    if char_len(description) <= MAX_ACCOUNT_NUMBER_DESCRIPTION {
        Ok(())
    } else {
        Err(BankAccountError::InvalidField(
            "description",
            format!("must be at most {MAX_ACCOUNT_NUMBER_DESCRIPTION} characters long"),
        ))
    }
}

/// An account number create request as received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewAccountNumber {
    pub description: Option<String>,
    pub check_issuing_positive_pay_required: Option<bool>,
}

impl NewAccountNumber {
    /// Checks what needs no database.
    pub fn validate(&self) -> Result<()> {
        check_account_number_description(self.description.as_deref().unwrap_or(""))
    }
}

/// Creates an account number on an open account, inside the caller's write transaction.
async fn create_account_number(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    bank: &BankSettings,
    platform_id: &PlatformId,
    bank_account_id: &str,
    new: &NewAccountNumber,
) -> Result<AccountNumberRecord> {
    // Locked: a concurrent close must not slip in between the status check and the insert.
    let account = find_for_update(tx, platform_id, bank_account_id).await?;
    if account.status != AccountStatus::Open {
        return Err(BankAccountError::NotOpen(account.status));
    }
    let description = new.description.as_deref().unwrap_or("");
    let mut record =
        platforms::create_account_number(tx, clock, bank, platform_id, &account.id, description)
            .await?;
    if new.check_issuing_positive_pay_required == Some(true) {
        record.check_issuing_positive_pay_required = true;
        repo::update_account_number(
            tx,
            platform_id,
            &record.id,
            description,
            true,
            record.updated_at,
        )
        .await?;
    }
    let data = EventData::AccountNumber(Box::new(record.clone()));
    let created = EventType::AccountNumberCreated;
    record_event(tx, platform_id, record.created_at, created, data).await?;
    Ok(record)
}

async fn find_account_number(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    raw: &str,
) -> Result<AccountNumberRecord> {
    let id = AccountNumberId::parse(raw).ok_or(BankAccountError::AccountNumberNotFound)?;
    repo::get_account_number(tx, platform_id, &id)
        .await?
        .ok_or(BankAccountError::AccountNumberNotFound)
}

/// An account number update request; `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountNumberUpdate {
    pub description: Option<String>,
    pub check_issuing_positive_pay_required: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_account() -> NewBankAccount {
        NewBankAccount {
            entity_id: "enti_x".into(),
            description: "Operating".into(),
            display_name: None,
            currency_code: None,
            is_overdraftable: None,
            overdraft_reserve_account_id: None,
        }
    }

    #[test]
    fn new_accounts_default_to_usd_and_check_their_shape() {
        let valid = new_account().validate().expect("valid");
        assert_eq!(valid.currency, Currency::usd());
        assert!(!valid.is_overdraftable);
        let short = NewBankAccount {
            description: "ab".into(),
            ..new_account()
        };
        assert!(matches!(
            short.validate(),
            Err(BankAccountError::InvalidField("description", _))
        ));
        let long = NewBankAccount {
            description: "é".repeat(256),
            ..new_account()
        };
        assert!(matches!(
            long.validate(),
            Err(BankAccountError::InvalidField("description", _))
        ));
        let ok = NewBankAccount {
            description: "é".repeat(255),
            ..new_account()
        };
        assert!(ok.validate().is_ok());
        let xxx = NewBankAccount {
            currency_code: Some("XXX".into()),
            ..new_account()
        };
        assert!(
            matches!(xxx.validate(), Err(BankAccountError::UnsupportedCurrency(c)) if c == "XXX")
        );
        let no_reserve = NewBankAccount {
            is_overdraftable: Some(true),
            ..new_account()
        };
        assert!(matches!(
            no_reserve.validate(),
            Err(BankAccountError::InvalidField(
                "overdraft_reserve_account_id",
                _
            ))
        ));
    }

    fn account(available: i64, is_overdraftable: bool, reserve: Option<&str>) -> BankAccountRecord {
        let epoch = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
        BankAccountRecord {
            id: BankAccountId::from_trusted("bacc_account".into()),
            platform_id: PlatformId::from_trusted("plat_platform".into()),
            account_type: AccountType::Checking,
            status: AccountStatus::Open,
            description: "Operating".into(),
            display_name: None,
            currency_code: "USD".into(),
            available_amount: available,
            pending_amount: 0,
            holding_amount: 0,
            locked_amount: 0,
            is_overdraftable,
            overdraft_reserve_account_id: reserve.map(|r| BankAccountId::from_trusted(r.into())),
            default_account_number_id: None,
            created_at: epoch,
            updated_at: epoch,
        }
    }

    #[test]
    fn an_overdrawn_account_keeps_its_overdraft_settings() {
        let old = BankAccountId::from_trusted("bacc_old".into());
        let new = BankAccountId::from_trusted("bacc_new".into());
        let overdrawn = account(-1, true, Some("bacc_old"));
        let refused = |r: Result<()>| matches!(r, Err(BankAccountError::Overdrawn));
        assert!(refused(check_overdraft_change(
            &overdrawn,
            false,
            Some(&old)
        )));
        assert!(refused(check_overdraft_change(
            &overdrawn,
            true,
            Some(&new)
        )));
        assert!(check_overdraft_change(&overdrawn, true, Some(&old)).is_ok());
        // At zero or above nothing is locked on the reserve: any change is fine.
        let level = account(0, true, Some("bacc_old"));
        assert!(check_overdraft_change(&level, false, Some(&old)).is_ok());
        assert!(check_overdraft_change(&level, true, Some(&new)).is_ok());
        // A negative account that is not overdraftable (the settlement account) has no shortfall.
        let settlement = account(-500, false, None);
        assert!(check_overdraft_change(&settlement, false, None).is_ok());
    }

    #[test]
    fn balance_conditions_without_currency_have_one_bound_per_exponent() {
        let c = balance_condition(Comparison::Gte, 1234, None);
        let bounds: Vec<(Option<i64>, bool, bool)> = c
            .arms
            .iter()
            .map(|a| {
                let codes = a.currencies.clone().unwrap_or_default();
                (a.bound, codes.contains(&"JPY"), codes.contains(&"BHD"))
            })
            .collect();
        // JPY: x >= 12.34 ⇔ x >= 13; USD: 1234; BHD: 12340.
        assert!(bounds.contains(&(Some(13), true, false)));
        assert!(bounds.contains(&(Some(1234), false, false)));
        assert!(bounds.contains(&(Some(12340), false, true)));
        let with_currency = balance_condition(Comparison::Gte, 1234, Currency::from_code("JPY"));
        assert_eq!(
            with_currency.arms,
            vec![BalanceArm {
                currencies: None,
                bound: Some(1234)
            }]
        );
    }

    #[test]
    fn overflowing_balance_bounds_match_all_or_nothing() {
        // BHD multiplies by ten: i64::MAX overflows. Nothing is above it; everything is below.
        let gt = balance_condition(Comparison::Gt, i64::MAX, None);
        assert!(
            gt.arms
                .iter()
                .all(|a| !a.currencies.clone().unwrap_or_default().contains(&"BHD"))
        );
        let lt = balance_condition(Comparison::Lt, i64::MAX, None);
        assert!(lt.arms.iter().any(|a| {
            a.bound.is_none() && a.currencies.clone().unwrap_or_default().contains(&"BHD")
        }));
        let gt_min = balance_condition(Comparison::Gt, i64::MIN, None);
        assert!(gt_min.arms.iter().any(|a| {
            a.bound.is_none() && a.currencies.clone().unwrap_or_default().contains(&"BHD")
        }));
    }

    /// A snapshot stored before the details kept only what the wire shows of the default
    /// number (an idempotent replay or an event written by an older bankd) still reads, and a
    /// new one carries none of the record's other fields.
    #[test]
    fn details_stored_with_the_whole_account_number_record_still_read() {
        let stored = r#"{"account":{"id":"bacc_0ERlB6IKhqYU8bhgeZqEX5dEtsk","platform_id":"plat_0ERlB69ilnoKleT1TIwKYY5MDLv","account_type":"CHECKING","status":"open","description":"Bench","display_name":null,"currency_code":"USD","available_amount":0,"pending_amount":0,"holding_amount":0,"locked_amount":0,"is_overdraftable":false,"overdraft_reserve_account_id":null,"default_account_number_id":"acno_0ERlB6IKg3DMKrs4LP0GNVA2moX","created_at":"2026-11-26T12:50:28.033651Z","updated_at":"2026-11-26T12:50:28.033651Z"},"owners":["enti_0ERlB69ip3TU3dwdID1ST3hozlj"],"default_number":{"id":"acno_0ERlB6IKg3DMKrs4LP0GNVA2moX","platform_id":"plat_0ERlB69ilnoKleT1TIwKYY5MDLv","bank_account_id":"bacc_0ERlB6IKhqYU8bhgeZqEX5dEtsk","account_number":"310158082977588","routing_number":"021000021","bic":"BANKUS33XXX","description":"","check_issuing_positive_pay_required":false,"created_at":"2026-11-26T12:50:28.033752Z","updated_at":"2026-11-26T12:50:28.033752Z"}}"#;
        let details: BankAccountDetails = serde_json::from_str(stored).unwrap();
        assert_eq!(
            details.default_number,
            DefaultNumber {
                id: AccountNumberId::parse("acno_0ERlB6IKg3DMKrs4LP0GNVA2moX").unwrap(),
                account_number: "310158082977588".into(),
                routing_number: "021000021".into(),
                bic: "BANKUS33XXX".into(),
            }
        );
        let again = serde_json::to_value(&details).unwrap();
        let number = again["default_number"].as_object().unwrap();
        let mut keys: Vec<&str> = number.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["account_number", "bic", "id", "routing_number"]);
    }
}
