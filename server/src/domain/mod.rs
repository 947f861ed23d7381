//! HTTP-agnostic rules. Nothing here knows about status codes or poem: each area has its own
//! `thiserror` enum, and `api/error_map.rs` (with the handlers) is the one place that turns them
//! into responses.

pub mod bank_accounts;
pub mod bank_codes;
pub mod counterparties;
pub mod documents;
pub mod entities;
pub mod history;
pub mod ids;
pub mod ledger;
pub mod money;
pub mod platforms;
pub mod positive_pay;
pub mod transfers;
