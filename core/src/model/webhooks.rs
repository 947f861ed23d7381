//! Webhook endpoints and their delivery attempts as the rules and the store share them.

use chrono::{DateTime, Utc};

use crate::model::events::EventRecord;
use crate::model::ids::{EventId, PlatformId, WebhookDeliveryId, WebhookEndpointId};

/// A registered webhook endpoint. `enabled_events` holds types and `prefix.*` selectors, already
/// checked; empty means every event.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEndpointRecord {
    pub id: WebhookEndpointId,
    pub url: String,
    pub description: String,
    pub enabled_events: Vec<String>,
    pub is_disabled: bool,
    /// `whsec_` + base64 of the key bytes.
    pub secret: String,
    /// The secret before the last rotation, which keeps signing until `previous_expires_at`.
    pub previous_secret: Option<String>,
    pub previous_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

spelled_enum! {
    /// Where a delivery attempt stands.
    pub enum DeliveryStatus {
        /// Scheduled at `next_attempt_at` (or being made under a lease).
        Pending = "pending",
        /// The receiver answered 2xx.
        Succeeded = "succeeded",
        /// The receiver did not answer 2xx in time.
        Failed = "failed",
    }
}

/// One attempt to deliver an event to an endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: WebhookDeliveryId,
    pub endpoint_id: WebhookEndpointId,
    pub event_id: EventId,
    pub attempt: i32,
    pub status: DeliveryStatus,
    pub response_status: Option<i32>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// A pending attempt a worker has claimed, with what sending it needs.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub platform_id: PlatformId,
    pub delivery: DeliveryRecord,
    pub endpoint: WebhookEndpointRecord,
    pub event: EventRecord,
}

/// What a made attempt came to, to be recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptOutcome {
    pub succeeded: bool,
    pub response_status: Option<i32>,
    pub latency_ms: i64,
    pub error: Option<String>,
}
