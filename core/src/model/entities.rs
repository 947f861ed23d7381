//! Entities as the rules and the store share them: the stored record (core and details), the
//! list filter, associations, a postal address, additional requirements, and the fields a
//! request gives.
//!
//! `Address` and `RequirementValue` serialize exactly as the wire types of the same names (the
//! store keeps them as JSON text), so a stored value reads back whichever side wrote it.

use crate::model::page::CreatedRange;
use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::model::ids::{EntityId, PlatformId};

spelled_enum! {
    /// What an entity is.
    pub enum EntityType { Person = "PERSON", Business = "BUSINESS" }
}

spelled_enum! {
    /// Where an entity's verification stands. `Verified` is the status of nearly every entity:
    /// the one the entity lists index through their list order, the others having an index of
    /// their own (`store::entities::list_keyset`).
    pub enum VerificationStatus {
        Unverified = "UNVERIFIED",
        Pending = "PENDING",
        ManualReview = "MANUAL_REVIEW",
        Verified = "VERIFIED",
        Denied = "DENIED",
    }
}

/// A postal address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    pub line_1: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_2: Option<String>,
    pub city: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub postal_code: String,
    pub country_code: String,
}

/// The value of one additional requirement field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequirementValue {
    String(String),
    Boolean(bool),
    Integer(i64),
}

/// A person's fields as a request gives them (creation: both names present; update: any
/// subset). Not yet validated; `ssn` is the full number, reduced to its last four digits by the
/// rules and never stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PersonFields {
    pub first_name: Option<String>,
    pub middle_name: Option<String>,
    pub last_name: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    pub email: Option<String>,
    pub ssn: Option<String>,
    pub address: Option<Address>,
}

/// A business's fields as a request gives them (creation: `business_name` present).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BusinessFields {
    pub business_name: Option<String>,
    pub address: Option<Address>,
    pub countries_of_operation: Option<Vec<String>>,
    pub description: Option<String>,
    pub ein: Option<String>,
    pub industry: Option<String>,
    pub legal_type: Option<String>,
    pub state_of_incorporation: Option<String>,
    pub website: Option<String>,
    pub year_of_incorporation: Option<String>,
}

/// The type of an additional requirement field (stored spelled as on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequirementFieldType {
    String,
    Boolean,
    Integer,
    Email,
    Phone,
    Date,
    Enum,
}

/// One field of a platform's additional requirements list, stored as JSON with the platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementField {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: RequirementFieldType,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i32>,
}

spelled_enum! {
    /// The role of a person associated with a business (stored as a JSON list).
    #[derive(PartialOrd, Ord)]
    pub enum AssociatedPersonRole {
        ControlPerson = "control_person",
        BeneficialOwner = "beneficial_owner",
    }
}

/// A stored entity's core fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRecord {
    pub id: EntityId,
    pub platform_id: PlatformId,
    pub entity_type: EntityType,
    pub name: String,
    pub is_root: bool,
    pub requires_screening: bool,
    pub verification_status: VerificationStatus,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub business_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The type-specific and compliance fields of an entity, beside its `EntityRecord` core.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EntityDetails {
    pub review_reasons: Vec<String>,
    // PERSON
    pub middle_name: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    pub email: Option<String>,
    /// Only the last four digits; the full SSN is never stored.
    pub ssn_last_4: Option<String>,
    // BUSINESS
    pub ein: Option<String>,
    pub industry: Option<String>,
    pub legal_type: Option<String>,
    pub state_of_incorporation: Option<String>,
    pub website: Option<String>,
    pub year_of_incorporation: Option<String>,
    pub description: Option<String>,
    pub countries_of_operation: Vec<String>,
    // Both
    pub address: Option<Address>,
    /// Additional requirement values submitted so far, by field name.
    pub additional_requirements: BTreeMap<String, RequirementValue>,
    pub additional_requirements_updated_at: Option<DateTime<Utc>>,
}

/// A stored entity with all its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRow {
    pub core: EntityRecord,
    pub details: EntityDetails,
}

/// Filters of `GET /entities`; `None` does not filter.
#[derive(Debug, Clone, Default)]
pub struct EntityFilter {
    pub created: CreatedRange,
    pub is_root: Option<bool>,
    /// Case-insensitive substring of the name.
    pub name: Option<String>,
    /// Case-insensitive substring of the name, or an exact id.
    pub query: Option<String>,
    /// `PERSON` or `BUSINESS`.
    pub entity_type: Option<EntityType>,
    pub verification_status: Option<VerificationStatus>,
}

/// A link between a BUSINESS and a PERSON of the same platform.
#[derive(Debug, Clone, PartialEq)]
pub struct AssociationRecord {
    pub platform_id: PlatformId,
    pub business_entity_id: EntityId,
    pub person_entity_id: EntityId,
    pub roles: Vec<AssociatedPersonRole>,
    pub title_in_business: Option<String>,
    pub created_at: DateTime<Utc>,
}
