//! Black-box checks of bankd against `spec/openapi.yaml`.
//!
//! - [`contract`]: every real response checked against the document (status, media type, body).
//! - [`process`]: a real `bankd` process over a fresh SQLite or PostgreSQL database.
//! - [`postgres_skip`]: the loud warning when a PostgreSQL test cannot run.
//! - [`spec_equivalence`]: the document a generated service serves, compared with its source
//!   document after removing only framework noise.

pub mod contract;
pub mod postgres_skip;
pub mod process;
pub mod spec_equivalence;
