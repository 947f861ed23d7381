//! Transfers as the rules and the store share them: kinds, statuses, the stored records (which
//! serialize, for idempotent replays) and the list filter.

use crate::model::page::CreatedRange;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::ids::{AccountNumberId, AchTransferId, BankAccountId, BookTransferId};

/// Status of a book transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum BookTransferStatus {
    Hold,
    Completed,
    Canceled,
    /// Part of the contract's enum; this server refuses a failing transfer with an error instead
    /// of recording it, so no transfer is ever stored in this status.
    Rejected,
}

impl BookTransferStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BookTransferStatus::Hold => "HOLD",
            BookTransferStatus::Completed => "COMPLETED",
            BookTransferStatus::Canceled => "CANCELED",
            BookTransferStatus::Rejected => "REJECTED",
        }
    }

    pub fn parse(text: &str) -> Option<BookTransferStatus> {
        [Self::Hold, Self::Completed, Self::Canceled, Self::Rejected]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Direction of an incoming ACH transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AchDirection {
    /// Money arrives.
    Credit,
    /// Money is taken.
    Debit,
}

impl AchDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            AchDirection::Credit => "CREDIT",
            AchDirection::Debit => "DEBIT",
        }
    }

    pub fn parse(text: &str) -> Option<AchDirection> {
        [Self::Credit, Self::Debit]
            .into_iter()
            .find(|d| d.as_str() == text)
    }
}

/// Status of an ACH transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AchStatus {
    Completed,
    /// Moved no money; see the record's return code.
    Returned,
}

impl AchStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AchStatus::Completed => "COMPLETED",
            AchStatus::Returned => "RETURNED",
        }
    }

    pub fn parse(text: &str) -> Option<AchStatus> {
        [Self::Completed, Self::Returned]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A stored book transfer. `amount` is minor units of `currency_code`; after a partial clear,
/// the cleared amount.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BookTransferRecord {
    pub id: BookTransferId,
    pub amount: i64,
    pub currency_code: String,
    pub sender_bank_account_id: BankAccountId,
    pub sender_account_number_id: Option<AccountNumberId>,
    pub receiver_bank_account_id: BankAccountId,
    pub receiver_account_number_id: Option<AccountNumberId>,
    pub description: Option<String>,
    pub allow_overdraft: bool,
    pub status: BookTransferStatus,
    pub idempotency_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Filters of `GET /transfers/book`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BookTransferFilter {
    /// Sender or receiver (exact id; an unknown one matches nothing).
    pub bank_account_id: Option<String>,
    pub status: Option<BookTransferStatus>,
    pub created: CreatedRange,
}

/// A stored ACH transfer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AchTransferRecord {
    pub id: AchTransferId,
    pub direction: AchDirection,
    pub is_incoming: bool,
    pub status: AchStatus,
    /// NACHA return code, exactly when `RETURNED`.
    pub return_code: Option<String>,
    pub bank_account_id: BankAccountId,
    pub account_number_id: AccountNumberId,
    pub amount: i64,
    pub currency_code: String,
    pub company_id: String,
    pub company_name: String,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
