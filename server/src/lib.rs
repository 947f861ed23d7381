//! bankd: the banking-platform API server.
//!
//! The wire contract lives in the generated `bank-api` crate (from `spec/openapi.yaml`); this
//! crate holds the rules, storage and process. Modules:
//!
//! - [`app`]: builds the poem application; the one place routes are assembled.
//! - [`config`]: one typed [`config::Config`]: defaults, TOML file, `BANKD_*` variables.
//! - [`clock`]: injected time ([`clock::SystemClock`], [`clock::FixedClock`] for tests).
//! - [`auth`]: API keys (`test_`/`live_`), stored as SHA-256, the Basic credential rule, and
//!   the authenticated [`auth::Principal`].
//! - [`domain`]: HTTP-agnostic rules, each area with its own error enum: [`model::ids`] (typed
//!   time-ordered ids), [`model::money`] (currencies, minor units), [`domain::bank_codes`] (ABA,
//!   BIC), [`domain::platforms`] (platform creation with its root entity and accounts).
//! - [`idempotency`]: reserve → effects → stored response, one transaction.
//! - [`metrics`]: the Prometheus recorder and scrape (`/metrics`); every layer records through
//!   the `metrics` facade.
//! - [`pagination`]: keyset cursors for every list, as a SQL builder.
//! - [`store`]: SQLite/PostgreSQL pools, transactions with retry, [`store::dialect`] (every
//!   dialect difference), and the repositories (every function takes the platform id).

pub mod api;
pub mod app;
pub mod auth;
pub mod clock;
pub mod config;
pub mod domain;
pub mod idempotency;
pub mod metrics;
pub mod model;
pub mod store;
