//! Events: what happened to a platform's resources, written in the transaction of the change.
//!
//! Design note. An event's `data` must be the resource as its own `GET` answered at that moment,
//! and a delivery may be made days later. Options: store the wire JSON (the domain would need
//! the HTTP types, which it never sees), store only the resource's id and read it at delivery
//! (later changes would leak into older events), or store the rules' own snapshot of the
//! resource. The snapshot it is ([`EventData`], serialized with the records' serde, the same
//! form idempotent replays keep): the API maps it to the wire with the very functions its GETs
//! use, so an event and a GET cannot drift apart, and the generated callback types make a
//! changed event schema a compile error where the payload is built (`api/events.rs`).
//!
//! [`record`] runs inside the caller's write transaction: it writes the event and, for every
//! subscribed endpoint, the first delivery attempt (`store::events::insert`). A rolled-back
//! change therefore leaves no event, an idempotent replay (which does not run the effects again)
//! adds none, and a committed change always has its event and its pending deliveries.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::bank_accounts::BankAccountDetails;
use crate::domain::entities::EntityView;
use crate::model::bank_accounts::AccountNumberRecord;
use crate::model::counterparties::CounterpartyRecord;
use crate::model::documents::SignedDocument;
use crate::model::events::{EventFilter, EventRecord, EventType};
use crate::model::ids::{EventId, PlatformId};
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::model::transfers::{AchTransferRecord, BookTransferRecord};
use crate::store::events as repo;
use crate::store::{StoreError, Tx};

/// The resource an event is about, as the rules held it when the change committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resource", content = "snapshot", rename_all = "snake_case")]
pub enum EventData {
    Entity(Box<EntityView>),
    BankAccount(Box<BankAccountDetails>),
    AccountNumber(Box<AccountNumberRecord>),
    Counterparty(Box<CounterpartyRecord>),
    Document(Box<SignedDocument>),
    BookTransfer(Box<BookTransferRecord>),
    AchTransfer(Box<AchTransferRecord>),
}

/// An event read back: its type, time and snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub event_type: EventType,
    pub created_at: DateTime<Utc>,
    pub data: EventData,
}

impl TryFrom<EventRecord> for Event {
    type Error = StoreError;

    fn try_from(r: EventRecord) -> Result<Event, StoreError> {
        let data = serde_json::from_str(&r.data)
            .map_err(|e| StoreError::Corrupt(format!("event {}: {e}", r.id)))?;
        Ok(Event {
            id: r.id,
            event_type: r.event_type,
            created_at: r.created_at,
            data,
        })
    }
}

/// Records that `event_type` happened to `data` at `now`, in the caller's transaction.
pub async fn record(
    tx: &mut Tx<'_>,
    now: DateTime<Utc>,
    platform_id: &PlatformId,
    event_type: EventType,
    data: EventData,
) -> Result<(), StoreError> {
    let record = EventRecord {
        id: EventId::generate(now),
        event_type,
        created_at: now,
        data: crate::store::to_json(&data)?,
    };
    repo::insert(tx, platform_id, &record).await
}

/// Failures of the events' reads. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("event not found")]
    NotFound,
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(EventError);

super::service! {
    /// Events: read one, list them.
    Events
}

impl Events<'_> {
    /// The platform's event `id` (a malformed id is simply not found).
    pub async fn get(&self, platform_id: &PlatformId, id: &str) -> Result<Event, EventError> {
        let record = super::get_one(
            self.db,
            platform_id,
            EventId::parse(id),
            || EventError::NotFound,
            |tx, p, id| Box::pin(repo::get(tx, p, id)),
        )
        .await?;
        Ok(Event::try_from(record)?)
    }

    /// One page of the platform's events, newest first.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        filter: &EventFilter,
        request: &PageRequest,
    ) -> Result<Page<Event>, EventError> {
        let page = self
            .db
            .read(|tx| {
                Box::pin(async move {
                    Ok::<_, EventError>(repo::page(tx, platform_id, filter, request).await?)
                })
            })
            .await?;
        let items = page
            .items
            .into_iter()
            .map(Event::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            has_more: page.has_more,
        })
    }
}
