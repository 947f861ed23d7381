//! bankd's handlers: the generated `bank-api` traits implemented, each a parse, one service call
//! of `bankd-core` and a mapping, with one error table ([`api`]).
//!
//! A crate of its own so that nothing in it depends on the routing glue (`bank-api-routes`):
//! after an edit of `spec/openapi.yaml`, cargo checks this crate beside the glue, and the
//! handler the edit breaks is named as soon as the contract crate is checked. The `bankd` crate
//! re-exports [`api`] and assembles the application.

pub use bankd_core::{auth, clock, domain, idempotency, model, store};

pub mod api;
