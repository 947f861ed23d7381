//! Bank accounts and account numbers as the rules and the store share them (the records
//! serialize, for idempotent replays).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::ids::{AccountNumberId, BankAccountId, PlatformId};
use crate::model::ledger::{AccountStatus, AccountType};

/// A stored bank account. Balances are minor units of `currency_code`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankAccountRecord {
    pub id: BankAccountId,
    pub platform_id: PlatformId,
    pub account_type: AccountType,
    pub status: AccountStatus,
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

impl BankAccountRecord {
    /// A new open account with nothing in it and no account number yet; overdraft settings off.
    pub fn opened(
        id: BankAccountId,
        platform_id: PlatformId,
        account_type: AccountType,
        description: String,
        currency_code: String,
        now: DateTime<Utc>,
    ) -> BankAccountRecord {
        BankAccountRecord {
            id,
            platform_id,
            account_type,
            status: AccountStatus::Open,
            description,
            display_name: None,
            currency_code,
            available_amount: 0,
            pending_amount: 0,
            holding_amount: 0,
            locked_amount: 0,
            is_overdraftable: false,
            overdraft_reserve_account_id: None,
            default_account_number_id: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// A stored account number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
