//! Book transfers (between two accounts of a platform, optionally on hold) and incoming ACH
//! transfers (the sandbox simulations).
//!
//! Every money movement goes through [`crate::domain::ledger`]: the accounts are locked (one
//! statement, id order), a [`Journal`] applies the movement with the funds and overdraft rules,
//! and the balances, the postings and the transfer record are written in the caller's one
//! transaction. A refused transfer (insufficient funds, closed account, currency mismatch) is an
//! error: the transaction rolls back and nothing at all is written. A returned ACH debit is not
//! an error: it is recorded (`RETURNED`, with its return code) and moves no money.
//!
//! Order of checks, as the contract's precedence wants it: the request's shape (parsed by
//! [`NewBookTransfer::parse`] and [`IncomingAch::parse`] before any database work), then the
//! addressed resources (404, sender before receiver), then the business rules (same account,
//! status, currency, funds). The 404-before-idempotency rule is served by
//! `check_book_transfer_parties`, which the API layer asks only when the `Idempotency-Key`
//! answer is a conflict, so the common path pays nothing for it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::domain::events::{self, EventData};
use crate::domain::ledger::{DebitPolicy, Journal, LedgerError};
use crate::domain::positive_pay;
use crate::idempotency::{self, IdempotencyError, WriteError, WriteRequest, Written};
use crate::model::events::EventType;
use crate::model::ids::{
    AccountNumberId, AchTransferId, BankAccountId, BookTransferId, PlatformId,
};
use crate::model::ledger::{AccountStatus, BalanceKind, Entry, LedgerAccount};
use crate::model::money::Currency;
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::model::transfers::{
    AchDirection, AchStatus, AchTransferRecord, BookTransferFilter, BookTransferRecord,
    BookTransferStatus,
};
use crate::store::ledger::{self as ledger_store, Source};
use crate::store::transfers as repo;
use crate::store::{Db, StoreError, Tx};

/// Longest description of a book or ACH transfer, in characters.
pub const MAX_DESCRIPTION: usize = 255;
/// Longest ACH company name, in characters.
pub const MAX_COMPANY_NAME: usize = 255;
/// Length of an ACH company id.
pub const COMPANY_ID_LEN: usize = 10;
/// NACHA return code: insufficient funds.
pub const RETURN_INSUFFICIENT_FUNDS: &str = "R01";
/// NACHA return code: not authorized (no positive pay rule matches).
pub const RETURN_NOT_AUTHORIZED: &str = "R29";

/// Failures of transfer operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// Fields of the request are invalid: field path → message.
    #[error("invalid request: {0:?}")]
    Invalid(BTreeMap<String, String>),
    #[error("currency `{0}` is not supported")]
    UnsupportedCurrency(String),
    #[error("bank account not found")]
    BankAccountNotFound,
    #[error("account number not found")]
    AccountNumberNotFound,
    #[error("book transfer not found")]
    BookTransferNotFound,
    #[error("ACH transfer not found")]
    AchTransferNotFound,
    /// The sender and the receiver are the same bank account; names the receiver's field.
    #[error("the sender and the receiver are the same bank account")]
    SameAccount(&'static str),
    /// A party of the movement is `closed` or `frozen`: (account id, status).
    #[error("bank account {0} is {1}")]
    NotOpen(BankAccountId, AccountStatus),
    /// The transfer's currency is not the account's: (transfer currency, account currency).
    #[error("the transfer is in {0} but the bank account is in {1}")]
    CurrencyMismatch(String, String),
    #[error("insufficient funds")]
    InsufficientFunds,
    #[error("the transfer is {0}, not on hold")]
    NotOnHold(&'static str),
    /// The amount would push a balance out of the `i64` range.
    #[error("the amount would overflow a balance")]
    AmountOverflow,
    /// A broken invariant: a bug or a corrupted row, never the client's doing.
    #[error("internal ledger failure: {0}")]
    Internal(String),
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(TransferError);

impl From<LedgerError> for TransferError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::InsufficientFunds => TransferError::InsufficientFunds,
            LedgerError::Overflow => TransferError::AmountOverflow,
            LedgerError::AccountNotLoaded(_) | LedgerError::Inconsistent(_) => {
                TransferError::Internal(e.to_string())
            }
        }
    }
}

type Result<T, E = TransferError> = std::result::Result<T, E>;

/// How a request names a party: by bank account or by one of its account numbers. The ids are
/// kept as received; a malformed one is simply not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Party {
    BankAccount(String),
    AccountNumber(String),
}

/// A book transfer request as received (field by field, not yet validated).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookTransferFields {
    pub amount: i64,
    pub currency_code: Option<String>,
    pub sender_bank_account_id: Option<String>,
    pub sender_account_number_id: Option<String>,
    pub receiver_bank_account_id: Option<String>,
    pub receiver_account_number_id: Option<String>,
    pub description: Option<String>,
    pub allow_overdraft: Option<bool>,
    pub hold: Option<bool>,
}

/// A valid book transfer request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBookTransfer {
    pub amount: i64,
    pub currency: Currency,
    pub sender: Party,
    pub receiver: Party,
    pub description: Option<String>,
    pub allow_overdraft: bool,
    pub hold: bool,
}

impl NewBookTransfer {
    /// Checks the request's shape; every offending field is named in one error.
    pub fn parse(fields: BookTransferFields) -> Result<NewBookTransfer> {
        let mut errors = BTreeMap::new();
        check_amount(fields.amount, &mut errors);
        check_text(
            "description",
            fields.description.as_deref(),
            0,
            MAX_DESCRIPTION,
            &mut errors,
        );
        let sender = party(
            "sender",
            fields.sender_bank_account_id,
            fields.sender_account_number_id,
            &mut errors,
        );
        let receiver = party(
            "receiver",
            fields.receiver_bank_account_id,
            fields.receiver_account_number_id,
            &mut errors,
        );
        if let (Some(Party::BankAccount(s)), Some(Party::BankAccount(r))) = (&sender, &receiver)
            && s == r
        {
            errors.insert(
                "receiver_bank_account_id".into(),
                "must differ from the sender".into(),
            );
        }
        let (Some(sender), Some(receiver)) = (sender, receiver) else {
            return Err(TransferError::Invalid(errors));
        };
        if !errors.is_empty() {
            return Err(TransferError::Invalid(errors));
        }
        Ok(NewBookTransfer {
            amount: fields.amount,
            currency: currency(fields.currency_code)?,
            sender,
            receiver,
            description: fields.description,
            allow_overdraft: fields.allow_overdraft.unwrap_or(false),
            hold: fields.hold.unwrap_or(false),
        })
    }
}

/// An incoming ACH transfer as received (field by field, not yet validated).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AchFields {
    pub destination_account_number_id: String,
    pub amount: i64,
    pub currency_code: Option<String>,
    pub company_id: String,
    pub company_name: String,
    pub description: Option<String>,
}

/// A valid incoming ACH transfer to simulate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingAch {
    pub direction: AchDirection,
    pub destination_account_number_id: String,
    pub amount: i64,
    pub currency: Currency,
    pub company_id: String,
    pub company_name: String,
    pub description: Option<String>,
}

impl IncomingAch {
    pub fn parse(direction: AchDirection, fields: AchFields) -> Result<IncomingAch> {
        let mut errors = BTreeMap::new();
        check_amount(fields.amount, &mut errors);
        if fields.company_id.chars().count() != COMPANY_ID_LEN
            || !fields.company_id.chars().all(|c| c.is_ascii_alphanumeric())
        {
            errors.insert(
                "company_id".into(),
                "must be exactly 10 letters or digits".into(),
            );
        }
        check_text(
            "company_name",
            Some(&fields.company_name),
            1,
            MAX_COMPANY_NAME,
            &mut errors,
        );
        check_text(
            "description",
            fields.description.as_deref(),
            0,
            MAX_DESCRIPTION,
            &mut errors,
        );
        if !errors.is_empty() {
            return Err(TransferError::Invalid(errors));
        }
        Ok(IncomingAch {
            direction,
            destination_account_number_id: fields.destination_account_number_id,
            amount: fields.amount,
            currency: currency(fields.currency_code)?,
            company_id: fields.company_id,
            company_name: fields.company_name,
            description: fields.description,
        })
    }
}

fn check_amount(amount: i64, errors: &mut BTreeMap<String, String>) {
    if amount < 1 {
        errors.insert("amount".into(), "must be at least 1 (minor units)".into());
    }
}

fn check_text(
    field: &str,
    value: Option<&str>,
    min: usize,
    max: usize,
    errors: &mut BTreeMap<String, String>,
) {
    if let Some(value) = value {
        let len = value.chars().count();
        if len < min || len > max {
            errors.insert(field.into(), format!("must be {min} to {max} characters"));
        }
    }
}

/// The one party named by exactly one of the two fields.
fn party(
    side: &str,
    bank_account_id: Option<String>,
    account_number_id: Option<String>,
    errors: &mut BTreeMap<String, String>,
) -> Option<Party> {
    match (bank_account_id, account_number_id) {
        (Some(id), None) => Some(Party::BankAccount(id)),
        (None, Some(id)) => Some(Party::AccountNumber(id)),
        (both, _) => {
            let message = format!(
                "exactly one of {side}_bank_account_id and {side}_account_number_id is required"
            );
            let word = if both.is_some() {
                "not both"
            } else {
                "none given"
            };
            errors.insert(
                format!("{side}_bank_account_id"),
                format!("{message} ({word})"),
            );
            errors.insert(
                format!("{side}_account_number_id"),
                format!("{message} ({word})"),
            );
            None
        }
    }
}

/// The transfer currency: the code given (default USD), which must be supported.
fn currency(code: Option<String>) -> Result<Currency> {
    match code {
        None => Ok(Currency::usd()),
        Some(code) => Currency::from_code(&code).ok_or(TransferError::UnsupportedCurrency(code)),
    }
}

// ---------------------------------------------------------------------------- book transfers

/// A party after resolution: its bank account, and the account number that named it.
#[derive(Debug, Clone)]
struct Resolved {
    bank_account_id: BankAccountId,
    account_number_id: Option<AccountNumberId>,
}

/// Finds the bank account a party names (without locking it). `Err` only for store failures;
/// `Ok(Err(e))` is the not-found answer, raised by the caller in precedence order.
async fn resolve(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    party: &Party,
) -> Result<Result<Resolved>> {
    match party {
        Party::BankAccount(raw) => Ok(BankAccountId::parse(raw)
            .map(|id| Resolved {
                bank_account_id: id,
                account_number_id: None,
            })
            .ok_or(TransferError::BankAccountNotFound)),
        Party::AccountNumber(raw) => {
            let Some(number) = AccountNumberId::parse(raw) else {
                return Ok(Err(TransferError::AccountNumberNotFound));
            };
            Ok(repo::account_number_owner(tx, platform_id, &number)
                .await?
                .map(|bank_account_id| Resolved {
                    bank_account_id,
                    account_number_id: Some(number),
                })
                .ok_or(TransferError::AccountNumberNotFound))
        }
    }
}

/// The locked account of a resolved party, or the party's not-found error.
fn party_account<'j>(journal: &'j Journal, party: &Result<Resolved>) -> Result<&'j LedgerAccount> {
    match party {
        Ok(r) => journal
            .account(&r.bank_account_id)
            .map_err(|_| TransferError::BankAccountNotFound),
        Err(TransferError::AccountNumberNotFound) => Err(TransferError::AccountNumberNotFound),
        Err(_) => Err(TransferError::BankAccountNotFound),
    }
}

fn require_open(account: &LedgerAccount) -> Result<()> {
    if account.is_open() {
        Ok(())
    } else {
        Err(TransferError::NotOpen(account.id.clone(), account.status))
    }
}

fn require_currency(account: &LedgerAccount, currency: Currency) -> Result<()> {
    if account.currency_code == currency.code() {
        Ok(())
    } else {
        Err(TransferError::CurrencyMismatch(
            currency.code().to_owned(),
            account.currency_code.clone(),
        ))
    }
}

/// Creates a book transfer in `tx`: completes it, or with `hold` moves the amount to the
/// sender's holding. Refusals write nothing (the caller's transaction rolls back).
async fn create_book_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    request: &NewBookTransfer,
    idempotency_key: Option<&str>,
) -> Result<BookTransferRecord> {
    let sender = resolve(tx, platform_id, &request.sender).await?;
    let receiver = resolve(tx, platform_id, &request.receiver).await?;
    let ids: Vec<&BankAccountId> = [&sender, &receiver]
        .into_iter()
        .filter_map(|p| p.as_ref().ok().map(|r| &r.bank_account_id))
        .collect();
    let mut journal =
        Journal::new(ledger_store::lock_accounts(tx, platform_id, &ids, false).await?);

    let (s, r) = (
        party_account(&journal, &sender)?,
        party_account(&journal, &receiver)?,
    );
    if s.id == r.id {
        let field = match request.receiver {
            Party::BankAccount(_) => "receiver_bank_account_id",
            Party::AccountNumber(_) => "receiver_account_number_id",
        };
        return Err(TransferError::SameAccount(field));
    }
    require_open(s)?;
    require_open(r)?;
    require_currency(s, request.currency)?;
    require_currency(r, request.currency)?;
    let (sender_id, receiver_id) = (s.id.clone(), r.id.clone());

    let policy = if request.allow_overdraft {
        DebitPolicy::OverdraftIfAllowed
    } else {
        DebitPolicy::NoOverdraft
    };
    if request.hold {
        journal.hold(&sender_id, request.amount, policy)?;
    } else {
        journal.transfer(&sender_id, &receiver_id, request.amount, policy)?;
    }
    let entry = journal.finish()?;

    let record = BookTransferRecord {
        id: BookTransferId::generate(now),
        amount: request.amount,
        currency_code: request.currency.code().to_owned(),
        sender_bank_account_id: sender_id,
        sender_account_number_id: sender.ok().and_then(|r| r.account_number_id),
        receiver_bank_account_id: receiver_id,
        receiver_account_number_id: receiver.ok().and_then(|r| r.account_number_id),
        description: request.description.clone(),
        allow_overdraft: request.allow_overdraft,
        status: if request.hold {
            BookTransferStatus::Hold
        } else {
            BookTransferStatus::Completed
        },
        idempotency_key: idempotency_key.map(str::to_owned),
        created_at: now,
        updated_at: now,
    };
    repo::insert_book_transfer(tx, platform_id, &record).await?;
    ledger_store::write_entry(tx, platform_id, &entry, book_source(&record, "create"), now).await?;
    let event_type = if request.hold {
        EventType::BookTransferHoldCreated
    } else {
        EventType::BookTransferCompleted
    };
    record_book_event(tx, platform_id, now, event_type, &record).await?;
    record_overdraft(tx, platform_id, now, &entry, &record.sender_bank_account_id).await?;
    Ok(record)
}

/// The event of a book transfer's change, in its transaction.
async fn record_book_event(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    event_type: EventType,
    transfer: &BookTransferRecord,
) -> Result<()> {
    let data = EventData::BookTransfer(Box::new(transfer.clone()));
    Ok(events::record(tx, now, platform_id, event_type, data).await?)
}

/// `bank_account.overdrafted` for `debited` when `entry` locked a shortfall on an overdraft
/// reserve (the only way an account goes below zero), with the account as its GET now answers.
async fn record_overdraft(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    entry: &Entry,
    debited: &BankAccountId,
) -> Result<()> {
    let drew_on_reserve = entry
        .postings
        .iter()
        .any(|p| p.balance == BalanceKind::Locked && p.amount > 0);
    if !drew_on_reserve {
        return Ok(());
    }
    let details = crate::domain::bank_accounts::details_in(tx, platform_id, debited)
        .await?
        .ok_or_else(|| TransferError::Internal("the overdrawn account vanished".into()))?;
    let data = EventData::BankAccount(Box::new(details));
    let overdrafted = EventType::BankAccountOverdrafted;
    Ok(events::record(tx, now, platform_id, overdrafted, data).await?)
}

fn book_source<'a>(record: &'a BookTransferRecord, event: &'a str) -> Source<'a> {
    Source {
        source_type: "book_transfer",
        source_id: record.id.as_str(),
        event,
        currency_code: &record.currency_code,
    }
}

/// The not-found answer for the parties of `request`, if any, read outside any write: lets the
/// API answer 404 ahead of an `Idempotency-Key` conflict, as the contract's precedence says.
async fn check_book_transfer_parties(
    db: &Db,
    platform_id: &PlatformId,
    request: &NewBookTransfer,
) -> Result<()> {
    db.read(|tx| {
        Box::pin(async move {
            for party in [&request.sender, &request.receiver] {
                let resolved = resolve(tx, platform_id, party).await??;
                if !repo::bank_account_exists(tx, platform_id, &resolved.bank_account_id).await? {
                    return Err(TransferError::BankAccountNotFound);
                }
            }
            Ok(())
        })
    })
    .await
}

/// Locks a book transfer on hold for an update.
async fn held_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    raw_id: &str,
) -> Result<BookTransferRecord> {
    let id = BookTransferId::parse(raw_id).ok_or(TransferError::BookTransferNotFound)?;
    let transfer = repo::get_book_transfer_for_update(tx, platform_id, &id)
        .await?
        .ok_or(TransferError::BookTransferNotFound)?;
    if transfer.status != BookTransferStatus::Hold {
        return Err(TransferError::NotOnHold(transfer.status.as_str()));
    }
    Ok(transfer)
}

/// Clears a transfer on hold: `amount` (default: all of it) goes to the receiver, the rest back
/// to the sender's available; the transfer's amount becomes the cleared amount.
async fn clear_book_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    raw_id: &str,
    amount: Option<i64>,
) -> Result<BookTransferRecord> {
    let mut transfer = held_transfer(tx, platform_id, raw_id).await?;
    let held = transfer.amount;
    let cleared = amount.unwrap_or(held);
    if !(1..=held).contains(&cleared) {
        return Err(TransferError::Invalid(BTreeMap::from([(
            "amount".to_owned(),
            format!("must be between 1 and the held amount {held}"),
        )])));
    }
    let (sender, receiver) = (
        &transfer.sender_bank_account_id,
        &transfer.receiver_bank_account_id,
    );
    let mut journal = Journal::new(
        ledger_store::lock_accounts(tx, platform_id, &[sender, receiver], false).await?,
    );
    require_open(journal.account(sender)?)?;
    require_open(journal.account(receiver)?)?;
    journal.release_hold(sender, held)?;
    journal.credit_available(receiver, cleared)?;
    // `cleared <= held` was checked, so this cannot underflow.
    let rest = held - cleared;
    if rest > 0 {
        journal.credit_available(sender, rest)?;
    }
    let entry = journal.finish()?;

    transfer.status = BookTransferStatus::Completed;
    transfer.amount = cleared;
    transfer.updated_at = now;
    repo::update_book_transfer(tx, platform_id, &transfer).await?;
    ledger_store::write_entry(
        tx,
        platform_id,
        &entry,
        book_source(&transfer, "clear"),
        now,
    )
    .await?;
    let completed = EventType::BookTransferCompleted;
    record_book_event(tx, platform_id, now, completed, &transfer).await?;
    Ok(transfer)
}

/// Cancels a transfer on hold: the held amount returns to the sender's available. Allowed
/// whatever the accounts' status, since no money leaves or enters an account.
async fn cancel_book_transfer(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    raw_id: &str,
) -> Result<BookTransferRecord> {
    let mut transfer = held_transfer(tx, platform_id, raw_id).await?;
    let sender = &transfer.sender_bank_account_id;
    let mut journal =
        Journal::new(ledger_store::lock_accounts(tx, platform_id, &[sender], false).await?);
    journal.release_hold(sender, transfer.amount)?;
    journal.credit_available(sender, transfer.amount)?;
    let entry = journal.finish()?;

    transfer.status = BookTransferStatus::Canceled;
    transfer.updated_at = now;
    repo::update_book_transfer(tx, platform_id, &transfer).await?;
    ledger_store::write_entry(
        tx,
        platform_id,
        &entry,
        book_source(&transfer, "cancel"),
        now,
    )
    .await?;
    let canceled = EventType::BookTransferCanceled;
    record_book_event(tx, platform_id, now, canceled, &transfer).await?;
    Ok(transfer)
}

// ----------------------------------------------------------------------------- ACH transfers

/// Records an incoming ACH transfer to an account number and moves its money through the
/// platform's settlement account. A debit that positive pay refuses (`R29`) or the account
/// cannot cover (`R01`) is recorded `RETURNED` and moves nothing.
async fn receive_ach(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    ach: &IncomingAch,
) -> Result<AchTransferRecord> {
    let number = AccountNumberId::parse(&ach.destination_account_number_id)
        .ok_or(TransferError::AccountNumberNotFound)?;
    let bank_account_id = repo::account_number_owner(tx, platform_id, &number)
        .await?
        .ok_or(TransferError::AccountNumberNotFound)?;
    let accounts = ledger_store::lock_accounts(tx, platform_id, &[&bank_account_id], true).await?;
    let settlement_id = accounts
        .iter()
        .find(|a| a.is_settlement())
        .map(|a| a.id.clone())
        .ok_or_else(|| TransferError::Internal("the platform has no settlement account".into()))?;
    let mut journal = Journal::new(accounts);
    let account = journal.account(&bank_account_id)?;
    require_open(account)?;
    require_currency(account, ach.currency)?;

    let return_code = match ach.direction {
        AchDirection::Credit => {
            journal.transfer(
                &settlement_id,
                &bank_account_id,
                ach.amount,
                DebitPolicy::Unbounded,
            )?;
            None
        }
        AchDirection::Debit => {
            let rules =
                crate::store::positive_pay::list_for_account(tx, platform_id, &bank_account_id)
                    .await?;
            if !positive_pay::debit_allowed(&rules, &ach.company_id, ach.amount) {
                Some(RETURN_NOT_AUTHORIZED)
            } else {
                // An overdraftable account may be debited below zero (its reserve covering the
                // shortfall): an incoming debit carries no `allow_overdraft` of its own.
                match journal.transfer(
                    &bank_account_id,
                    &settlement_id,
                    ach.amount,
                    DebitPolicy::OverdraftIfAllowed,
                ) {
                    Ok(()) => None,
                    Err(LedgerError::InsufficientFunds) => Some(RETURN_INSUFFICIENT_FUNDS),
                    Err(e) => return Err(e.into()),
                }
            }
        }
    };

    let record = AchTransferRecord {
        id: AchTransferId::generate(now),
        direction: ach.direction,
        is_incoming: true,
        status: if return_code.is_some() {
            AchStatus::Returned
        } else {
            AchStatus::Completed
        },
        return_code: return_code.map(str::to_owned),
        bank_account_id,
        account_number_id: number,
        amount: ach.amount,
        currency_code: ach.currency.code().to_owned(),
        company_id: ach.company_id.clone(),
        company_name: ach.company_name.clone(),
        description: ach.description.clone(),
        created_at: now,
        updated_at: now,
    };
    repo::insert_ach_transfer(tx, platform_id, &record).await?;
    let event_type = if return_code.is_none() {
        let entry = journal.finish()?;
        let source = Source {
            source_type: "ach_transfer",
            source_id: record.id.as_str(),
            event: "receive",
            currency_code: &record.currency_code,
        };
        ledger_store::write_entry(tx, platform_id, &entry, source, now).await?;
        record_overdraft(tx, platform_id, now, &entry, &record.bank_account_id).await?;
        EventType::AchIncomingTransferCompleted
    } else {
        EventType::AchIncomingTransferReturned
    };
    let data = EventData::AchTransfer(Box::new(record.clone()));
    events::record(tx, now, platform_id, event_type, data).await?;
    Ok(record)
}

// ---------------------------------------------------------------------------------- service

super::service! {
    /// Transfers as a service: each operation is one transaction (a write retried while its
    /// failure is retryable, with its idempotency when the request has a key) that commits
    /// before the caller sees the result.
    Transfers
}

impl Transfers<'_> {
    /// Creates a book transfer. Precedence as the contract gives it: the request's shape was
    /// checked by [`NewBookTransfer::parse`]; then 404 for the accounts it names, then 409/422
    /// for the key, then the business rules. The 404 check runs inside the write anyway, so it
    /// is repeated outside only when the key answer is a conflict: the common path pays nothing.
    pub async fn create_book(
        &self,
        platform_id: &PlatformId,
        request: &NewBookTransfer,
        write: WriteRequest<'_>,
    ) -> Result<Written<BookTransferRecord>, WriteError<TransferError>> {
        let clock = self.clock;
        let written = idempotency::write(self.db, clock, platform_id, write, |tx| {
            let now = clock.now();
            Box::pin(create_book_transfer(
                tx,
                platform_id,
                now,
                request,
                write.key,
            ))
        })
        .await;
        match written {
            Err(WriteError::Idempotency(
                e @ (IdempotencyError::InUse | IdempotencyError::Reused),
            )) => {
                check_book_transfer_parties(self.db, platform_id, request)
                    .await
                    .map_err(WriteError::Rule)?;
                Err(WriteError::Idempotency(e))
            }
            other => other,
        }
    }

    /// Clears a transfer on hold (all of it, or `amount`).
    pub async fn clear_book(
        &self,
        platform_id: &PlatformId,
        id: &str,
        amount: Option<i64>,
    ) -> Result<BookTransferRecord> {
        let clock = self.clock;
        self.db
            .write(|tx| {
                Box::pin(clear_book_transfer(
                    tx,
                    platform_id,
                    clock.now(),
                    id,
                    amount,
                ))
            })
            .await
    }

    /// Cancels a transfer on hold.
    pub async fn cancel_book(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<BookTransferRecord> {
        let clock = self.clock;
        self.db
            .write(|tx| Box::pin(cancel_book_transfer(tx, platform_id, clock.now(), id)))
            .await
    }

    pub async fn get_book(&self, platform_id: &PlatformId, id: &str) -> Result<BookTransferRecord> {
        let id = BookTransferId::parse(id);
        super::get_one(
            self.db,
            platform_id,
            id,
            || TransferError::BookTransferNotFound,
            |tx, p, id| Box::pin(repo::get_book_transfer(tx, p, id)),
        )
        .await
    }

    /// A page of book transfers, newest first.
    pub async fn list_book(
        &self,
        platform_id: &PlatformId,
        filter: &BookTransferFilter,
        page: &PageRequest,
    ) -> Result<Page<BookTransferRecord>> {
        self.db
            .read(|tx| {
                Box::pin(async move {
                    Ok(repo::list_book_transfers(tx, platform_id, filter, page).await?)
                })
            })
            .await
    }

    /// Records an incoming ACH transfer (the sandbox's simulations).
    pub async fn receive_ach(
        &self,
        platform_id: &PlatformId,
        ach: &IncomingAch,
    ) -> Result<AchTransferRecord> {
        let clock = self.clock;
        self.db
            .write(|tx| Box::pin(receive_ach(tx, platform_id, clock.now(), ach)))
            .await
    }

    pub async fn get_ach(&self, platform_id: &PlatformId, id: &str) -> Result<AchTransferRecord> {
        let id = AchTransferId::parse(id);
        super::get_one(
            self.db,
            platform_id,
            id,
            || TransferError::AchTransferNotFound,
            |tx, p, id| Box::pin(repo::get_ach_transfer(tx, p, id)),
        )
        .await
    }

    /// A page of ACH transfers, newest first.
    pub async fn list_ach(
        &self,
        platform_id: &PlatformId,
        page: &PageRequest,
    ) -> Result<Page<AchTransferRecord>> {
        self.db
            .read(|tx| {
                Box::pin(async move { Ok(repo::list_ach_transfers(tx, platform_id, page).await?) })
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> BookTransferFields {
        BookTransferFields {
            amount: 100,
            sender_bank_account_id: Some("bacc_a".into()),
            receiver_account_number_id: Some("acno_b".into()),
            ..BookTransferFields::default()
        }
    }

    fn invalid(result: Result<NewBookTransfer>) -> BTreeMap<String, String> {
        match result {
            Err(TransferError::Invalid(details)) => details,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_valid_request_defaults_to_usd_no_hold_no_overdraft() {
        let t = NewBookTransfer::parse(fields()).expect("valid");
        assert_eq!(t.currency, Currency::usd());
        assert_eq!(t.sender, Party::BankAccount("bacc_a".into()));
        assert_eq!(t.receiver, Party::AccountNumber("acno_b".into()));
        assert!(!t.hold && !t.allow_overdraft);
    }

    #[test]
    fn each_party_needs_exactly_one_name() {
        let mut f = fields();
        f.sender_account_number_id = Some("acno_x".into());
        f.receiver_account_number_id = None;
        let details = invalid(NewBookTransfer::parse(f));
        for field in [
            "sender_bank_account_id",
            "sender_account_number_id",
            "receiver_bank_account_id",
            "receiver_account_number_id",
        ] {
            assert!(details.contains_key(field), "{field} in {details:?}");
        }
    }

    #[test]
    fn amount_and_description_are_checked_together() {
        let mut f = fields();
        f.amount = 0;
        f.description = Some("x".repeat(256));
        let details = invalid(NewBookTransfer::parse(f));
        assert!(details.contains_key("amount") && details.contains_key("description"));
    }

    #[test]
    fn the_same_bank_account_on_both_sides_is_refused() {
        let mut f = fields();
        f.receiver_account_number_id = None;
        f.receiver_bank_account_id = Some("bacc_a".into());
        assert!(invalid(NewBookTransfer::parse(f)).contains_key("receiver_bank_account_id"));
    }

    #[test]
    fn unsupported_currencies_are_named() {
        let mut f = fields();
        f.currency_code = Some("XXX".into());
        assert!(matches!(
            NewBookTransfer::parse(f),
            Err(TransferError::UnsupportedCurrency(c)) if c == "XXX"
        ));
    }

    #[test]
    fn ach_company_ids_are_ten_alphanumerics() {
        let good = AchFields {
            destination_account_number_id: "acno_x".into(),
            amount: 5,
            company_id: "ABCDE12345".into(),
            company_name: "ACME".into(),
            ..AchFields::default()
        };
        assert!(IncomingAch::parse(AchDirection::Credit, good.clone()).is_ok());
        for bad in ["ABCDE1234", "ABCDE123456", "ABCDE-1234", "ÄBCDE12345"] {
            let f = AchFields {
                company_id: bad.into(),
                ..good.clone()
            };
            assert!(matches!(
                IncomingAch::parse(AchDirection::Debit, f),
                Err(TransferError::Invalid(d)) if d.contains_key("company_id")
            ));
        }
        let f = AchFields {
            company_name: String::new(),
            amount: -1,
            ..good
        };
        assert!(matches!(
            IncomingAch::parse(AchDirection::Debit, f),
            Err(TransferError::Invalid(d)) if d.contains_key("company_name") && d.contains_key("amount")
        ));
    }

    #[test]
    fn statuses_round_trip_their_wire_spelling() {
        for s in [
            BookTransferStatus::Hold,
            BookTransferStatus::Completed,
            BookTransferStatus::Canceled,
            BookTransferStatus::Rejected,
        ] {
            assert_eq!(BookTransferStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(AchDirection::parse("DEBIT"), Some(AchDirection::Debit));
        assert_eq!(AchStatus::parse("RETURNED"), Some(AchStatus::Returned));
        assert_eq!(AchStatus::parse("returned"), None);
    }
}
