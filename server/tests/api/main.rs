//! The API over HTTP: one binary, every test on SQLite and on PostgreSQL.
//!
//! `spawn_app()` (in `helpers`) starts bankd on port 0 over a fresh database with two seeded
//! platforms, A and B; tests talk to it with typed helpers. Test names are sentences.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;
mod helpers;

mod account_numbers;
mod bank_accounts;
mod conservation;
mod counterparties;
mod documents;
mod entities;
mod history;
mod platform;
mod positive_pay;
mod pressure;
mod simulations;
mod tenancy;
mod transfers;
mod webhooks;
