//! Events as the rules and the store share them: the types, the stored record and the list
//! filter. What an event's `data` holds is the domain's business (`domain::events`); the store
//! keeps it as JSON text.

use chrono::{DateTime, Utc};

use crate::model::ids::EventId;
use crate::model::page::CreatedRange;

spelled_enum! {
    /// What happened; the stored and wire spelling is the event's `type`.
    pub enum EventType {
        EntityCreated = "entity.created",
        EntityUpdated = "entity.updated",
        EntityDeleted = "entity.deleted",
        BankAccountCreated = "bank_account.created",
        BankAccountUpdated = "bank_account.updated",
        BankAccountClosed = "bank_account.closed",
        BankAccountOverdrafted = "bank_account.overdrafted",
        AccountNumberCreated = "account_number.created",
        AccountNumberUpdated = "account_number.updated",
        CounterpartyCreated = "counterparty.created",
        CounterpartyDeleted = "counterparty.deleted",
        DocumentCreated = "document.created",
        BookTransferCompleted = "book.transfer.completed",
        BookTransferHoldCreated = "book.transfer.hold_created",
        BookTransferCanceled = "book.transfer.canceled",
        AchIncomingTransferCompleted = "ach.incoming_transfer.completed",
        AchIncomingTransferReturned = "ach.incoming_transfer.returned",
    }
}

/// A stored event; `data` is the JSON of the domain's snapshot of the resource.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    pub id: EventId,
    pub event_type: EventType,
    pub created_at: DateTime<Utc>,
    pub data: String,
}

/// Filters of `GET /events`.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub event_type: Option<EventType>,
    pub created: CreatedRange,
}
