//! bankd-core: the rules and the storage of bankd, with no HTTP and no wire types.
//!
//! The layers below the API, with one direction (`model` ← `store` ← `domain`; bankd's
//! `tests/layers.rs` fails on an arrow the other way). They are a crate of their own so that the
//! crate boundary refuses the API layer, the shell and the generated `bank-api` here, and so that
//! an edit of the spec re-checks only the `bankd` crate above them. `bankd` re-exports every
//! module under the same name (`bankd::store`, `bankd::domain`, ...).
//!
//! - [`model`]: ids, money, kinds, statuses, records and page requests every layer shares.
//! - [`store`]: SQLite/PostgreSQL, transactions with retry, keyset lists, the repositories.
//! - [`domain`]: the rules, as services that own their transactions ([`domain::Services`]).
//! - [`idempotency`]: `Idempotency-Key`: reserve → effects → stored result, one transaction.
//! - [`auth`]: API keys (`test_`/`live_`), stored as SHA-256, and the [`auth::Principal`].
//! - [`clock`]: injected time ([`clock::SystemClock`], [`clock::FixedClock`]); every layer's leaf.

pub mod auth;
pub mod clock;
pub mod domain;
pub mod idempotency;
pub mod model;
pub mod store;
