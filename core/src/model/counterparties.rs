//! Counterparties as the rules and the store share them: their fields and kinds, the stored
//! record and the list query.

use chrono::{DateTime, Utc};

use crate::model::entities::Address;
use crate::model::ids::CounterpartyId;
use crate::model::page::{CreatedRange, SortOrder};

spelled_enum! {
    /// How a counterparty's bank is named: a nine-digit ABA routing transit number, or an
    /// ISO 9362 bank identifier code.
    #[derive(Default)]
    pub enum RoutingNumberType {
        #[default]
        Aba = "aba",
        Bic = "bic",
    }
}

spelled_enum! {
    /// The kind of a counterparty's account.
    pub enum CounterpartyAccountType { Checking = "checking", Savings = "savings" }
}

spelled_enum! {
    /// The legal form of a counterparty.
    pub enum LegalType {
        Business = "business",
        NonProfit = "non_profit",
        Individual = "individual",
        SoleProprietor = "sole_proprietor",
    }
}

/// A counterparty's own fields: what a client gives (checked by the rules) and what is stored.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CounterpartyFields {
    pub routing_number: String,
    pub routing_number_type: RoutingNumberType,
    pub account_number: String,
    pub account_type: Option<CounterpartyAccountType>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub address: Option<Address>,
    pub legal_id: Option<String>,
    pub legal_type: Option<LegalType>,
    pub local_bank_code: Option<String>,
    pub local_account_number: Option<String>,
}

/// A stored counterparty.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CounterpartyRecord {
    pub id: CounterpartyId,
    pub fields: CounterpartyFields,
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
