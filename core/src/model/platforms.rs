//! The platform (tenant) record the rules and the store share.

use chrono::{DateTime, Utc};

use crate::model::ids::PlatformId;

/// A stored platform.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformRecord {
    pub id: PlatformId,
    pub name: String,
    pub reporting_time_zone: Option<String>,
    /// JSON array of additional requirement fields, as stored.
    pub additional_requirements: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
