//! `Events`: the event list and the payloads of the webhook callback.
//!
//! An event's `data` goes to the wire through the same function as its resource's GET, and the
//! webhook body is built as the generated callback type (`bank_api::models::Event`): a changed
//! event or resource schema breaks the build here.

use std::str::FromStr;

use bank_api::Json;
use bank_api::callbacks::{Callbacks, Webhooks};
use bank_api::events::*;
use bank_api::models::{self, EventList};

use super::convert::IntoTwin;
use super::errors::{ApiError, fail};
use super::{Bankd, account_numbers, ach_transfers, bank_accounts, book_transfers};
use super::{counterparties, documents, entities};
use crate::auth::Principal;
use crate::domain::events::{Event, EventData};
use crate::model::events::EventFilter;
use crate::model::page::{Bounds, PageRequest};

impl EventsApi for Bankd {
    async fn list_events(
        &self,
        principal: Principal,
        input: ListEventsInput,
    ) -> ListEventsResponse {
        let filter = filter(&input);
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let events = self.services.events();
        let listed = async { events.list(&principal.platform_id, &filter, &page?).await };
        let page = listed.await.map_err(ApiError::from).and_then(|page| {
            let events = page.items.into_iter().map(wire).collect::<Result<_, _>>()?;
            let has_more = page.has_more;
            Ok(EventList { events, has_more })
        });
        match page {
            Ok(list) => ListEventsResponse::Ok(Json(list)),
            Err(e) => fail(e),
        }
    }

    async fn get_event(&self, principal: Principal, input: GetEventInput) -> GetEventResponse {
        let events = self.services.events();
        let found = events.get(&principal.platform_id, &input.event_id).await;
        match found.map_err(ApiError::from).and_then(wire) {
            Ok(event) => GetEventResponse::Ok(Json(event)),
            Err(e) => fail(e),
        }
    }
}

/// The list's filters as the query gives them.
fn filter(input: &ListEventsInput) -> EventFilter {
    EventFilter {
        event_type: input.r#type.map(IntoTwin::twin),
        created: Bounds::new(
            input.created_gt,
            input.created_gte,
            input.created_lt,
            input.created_lte,
        ),
    }
}

/// The payload of an event's delivery, as `GET /events/{event_id}` answers it.
fn delivery(event: &Event) -> Option<models::Event> {
    match wire(event.clone()) {
        Ok(body) => Some(body),
        Err(e) => {
            tracing::error!(event = %event.id, error = ?e, "event payload cannot be built");
            None
        }
    }
}

/// The top-level `event` webhook: what the worker sends to every endpoint that subscribes to
/// the event (the outbox chose them).
impl Webhooks for Bankd {
    type Event = Event;

    fn event(&self, event: &Event) -> Option<models::Event> {
        delivery(event)
    }
}

/// The same request, declared as the `event` callback of `POST /webhook-endpoints` (the URL
/// its body registers).
impl Callbacks for Bankd {
    type Event = Event;

    fn create_webhook_endpoint_event(&self, event: &Event) -> Option<models::Event> {
        delivery(event)
    }
}

/// The group's own `type` enum of an event (`entity.created` → `EntityEventType`); an event
/// whose data does not belong to its type's group is corrupt.
fn group<T: FromStr<Err = String>>(event: &Event) -> Result<T, ApiError> {
    T::from_str(event.event_type.as_str())
        .map_err(|e| ApiError::internal(&format!("event {} has {e} with its data", event.id)))
}

/// The wire shape of an event: its data as the resource's GET answers it.
pub(super) fn wire(e: Event) -> Result<models::Event, ApiError> {
    let id = e.id.as_str().to_owned();
    let created_at = e.created_at;
    Ok(match &e.data {
        EventData::Entity(v) => models::Event::EntityEvent(models::EntityEvent {
            r#type: group(&e)?,
            data: entities::view_wire((**v).clone()),
            id,
            created_at,
        }),
        EventData::BankAccount(a) => models::Event::BankAccountEvent(models::BankAccountEvent {
            r#type: group(&e)?,
            data: bank_accounts::wire_details((**a).clone())?,
            id,
            created_at,
        }),
        EventData::AccountNumber(n) => {
            models::Event::AccountNumberEvent(models::AccountNumberEvent {
                r#type: group(&e)?,
                data: account_numbers::wire((**n).clone()),
                id,
                created_at,
            })
        }
        EventData::Counterparty(c) => models::Event::CounterpartyEvent(models::CounterpartyEvent {
            r#type: group(&e)?,
            data: counterparties::wire((**c).clone()),
            id,
            created_at,
        }),
        EventData::Document(d) => models::Event::DocumentEvent(models::DocumentEvent {
            r#type: group(&e)?,
            data: documents::wire((**d).clone()),
            id,
            created_at,
        }),
        EventData::BookTransfer(t) => models::Event::BookTransferEvent(models::BookTransferEvent {
            r#type: group(&e)?,
            data: book_transfers::wire((**t).clone()),
            id,
            created_at,
        }),
        EventData::AchTransfer(t) => models::Event::AchTransferEvent(models::AchTransferEvent {
            r#type: group(&e)?,
            data: ach_transfers::wire((**t).clone()),
            id,
            created_at,
        }),
    })
}
