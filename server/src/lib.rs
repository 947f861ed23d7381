//! bankd: the banking-platform API server.
//!
//! The wire contract lives in the generated `bank-api` crate (from `spec/openapi.yaml`); the
//! rules and the storage live in `bankd-core` (`core/`), re-exported here under their own names;
//! this crate holds the API layer and the process. The layers have one direction (`model` ←
//! `store` ← `domain` ← `api` ← shell; `tests/layers.rs` fails on an arrow the other way):
//!
//! - [`model`], [`store`], [`domain`], [`idempotency`], [`auth`], [`clock`]: `bankd-core`.
//! - [`api`]: the generated traits implemented: parse, call one service, map; one error table
//!   (the `bankd-handlers` crate, `handlers/`, which a spec edit checks beside the glue).
//! - [`app`]: the poem application; the one place routes are assembled (shell).
//! - [`console`]: the sandbox console's assets at `/console`, compiled in (shell).
//! - [`config`]: one typed [`config::Config`]: defaults, TOML file, `BANKD_*` variables (shell).
//! - [`metrics`]: the Prometheus recorder and scrape (`/metrics`) (shell).
//! - [`webhook_sender`]: the HTTP client that delivers webhooks: no redirects, bounded time and body, targets checked after DNS (shell).
//! - [`webhook_worker`]: the delivery loop of the event outbox: claim, sign, send, record (shell).

pub use bankd_core::{auth, clock, domain, idempotency, model, store};
/// The generated traits implemented: the crate `bankd-handlers` (`handlers/`), which does not
/// depend on the routing glue.
pub use bankd_handlers::api;

pub mod app;
pub mod config;
pub mod console;
pub mod metrics;
pub mod webhook_sender;
pub mod webhook_worker;
