//! The records and values every layer shares: typed ids, money, the ledger's records, kinds and
//! statuses. It depends on nothing else in the crate; `store`, `domain` and `api` depend on it
//! (`tests/layers.rs` keeps it so).

pub mod bank_accounts;
pub mod counterparties;
pub mod documents;
pub mod entities;
pub mod ids;
pub mod ledger;
pub mod money;
pub mod page;
pub mod platforms;
pub mod positive_pay;
pub mod transfers;
