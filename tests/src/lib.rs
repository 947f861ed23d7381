//! Black-box checks of bankd against `spec/openapi.yaml`.
//!
//! - [`spec_equivalence`]: the document a generated service serves, compared with its source
//!   document after removing only framework noise.

pub mod spec_equivalence;
