//! Black-box checks of bankd against `spec/openapi.yaml`.
//!
//! - [`contract`]: every real response checked against the document (status, media type, body).
//! - [`spec_equivalence`]: the document a generated service serves, compared with its source
//!   document after removing only framework noise.

pub mod contract;
pub mod process;
pub mod spec_equivalence;
