//! bankd: the banking-platform API server.
//!
//! The wire contract lives in the generated `bank-api` crate (from `spec/openapi.yaml`); this
//! crate holds the rules, storage and process, in layers with one direction (`model` ← `store`
//! ← `domain` ← `api` ← shell; `tests/layers.rs` fails on an arrow the other way):
//!
//! - [`model`]: ids, money, kinds, statuses, records and page requests every layer shares.
//! - [`store`]: SQLite/PostgreSQL, transactions with retry, keyset lists, the repositories.
//! - [`domain`]: the rules, as services that own their transactions ([`domain::Services`]).
//! - [`idempotency`]: `Idempotency-Key`: reserve → effects → stored result, one transaction.
//! - [`auth`]: API keys (`test_`/`live_`), stored as SHA-256, and the [`auth::Principal`].
//! - [`api`]: the generated traits implemented: parse, call one service, map; one error table.
//! - [`app`]: the poem application; the one place routes are assembled (shell).
//! - [`console`]: the sandbox console's assets at `/console`, compiled in (shell).
//! - [`config`]: one typed [`config::Config`]: defaults, TOML file, `BANKD_*` variables (shell).
//! - [`metrics`]: the Prometheus recorder and scrape (`/metrics`) (shell).
//! - [`webhook_sender`]: the HTTP client that delivers webhooks: no redirects, bounded time and body, targets checked after DNS (shell).
//! - [`webhook_worker`]: the delivery loop of the event outbox: claim, sign, send, record (shell).
//! - [`clock`]: injected time ([`clock::SystemClock`], [`clock::FixedClock`]); every layer's leaf.

pub mod api;
pub mod app;
pub mod auth;
pub mod clock;
pub mod config;
pub mod console;
pub mod domain;
pub mod idempotency;
pub mod metrics;
pub mod model;
pub mod store;
pub mod webhook_sender;
pub mod webhook_worker;
