//! HTTP-agnostic rules. Nothing here knows about status codes or poem: each area has its own
//! `thiserror` enum, and `api/error_map.rs` (with the handlers) is the one place that turns them
//! into responses.

pub mod bank_codes;
pub mod ids;
pub mod money;
pub mod platforms;
