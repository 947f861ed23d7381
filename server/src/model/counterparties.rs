//! Counterparties as the rules and the store share them: the stored record and the list query.

use crate::model::page::CreatedRange;
use chrono::{DateTime, Utc};

use crate::model::ids::CounterpartyId;
use crate::model::page::SortOrder;

/// A stored counterparty. Enumerations are in their wire spelling; `address` is JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterpartyRecord {
    pub id: CounterpartyId,
    pub routing_number: String,
    /// `aba` or `bic`.
    pub routing_number_type: String,
    pub account_number: String,
    /// `checking` or `savings`.
    pub account_type: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub address: Option<String>,
    pub legal_id: Option<String>,
    /// `business`, `non_profit`, `individual` or `sole_proprietor`.
    pub legal_type: Option<String>,
    pub local_bank_code: Option<String>,
    pub local_account_number: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Sort key of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    #[default]
    CreatedAt,
    Description,
}

/// The filters of the list; `None` and `false` filter nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    /// Exact account number.
    pub account_number: Option<String>,
    /// Exact routing number.
    pub routing_number: Option<String>,
    pub created: CreatedRange,
    /// Case-insensitive substring of the description.
    pub description: Option<String>,
    /// Case-insensitive substring of the name or description, or an exact id, account number or
    /// routing number.
    pub query: Option<String>,
    /// Keep only the newest live counterparty of each (routing number, account number) pair.
    pub deduplicate: bool,
    pub sort: Sort,
    pub order: Option<SortOrder>,
}
