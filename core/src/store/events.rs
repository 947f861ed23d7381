//! Events and their fan-out to webhook endpoints: the transactional outbox's writes, and the
//! reads of `GET /events`.
//!
//! Both writes are deferred (`Tx::execute_deferred`): on PostgreSQL they travel with the
//! change's own last writes in one statement, so an event costs the transaction no round trip.

use super::{Row, Sql, StoreError, Tx, dialect};
use crate::model::events::{EventFilter, EventRecord, EventType};
use crate::model::ids::{EventId, PlatformId, WebhookDeliveryId};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::store::keyset::{Keyset, ListError, SortKey};

const COLUMNS: &str = "id, type, data, created_at";

pub(super) fn from_row(row: &Row) -> Result<EventRecord, StoreError> {
    Ok(EventRecord {
        id: EventId::from_trusted(row.get("id")?),
        event_type: row.spelled("type")?,
        data: row.get("data")?,
        created_at: row.get("created_at")?,
    })
}

/// Writes `event` and, for each enabled endpoint of the platform that subscribes to its type,
/// the first delivery attempt, due at once.
pub async fn insert(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    event: &EventRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO events (platform_id, {COLUMNS}) VALUES (?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(event.id.as_str())
    .bind(event.event_type.as_str())
    .bind(&event.data)
    .bind(event.created_at);
    tx.execute_deferred(sql, 1, "the event").await?;
    let fan_out = fan_out(tx.backend(), platform_id, event);
    tx.execute_deferred_any(fan_out, "the event's deliveries")
        .await
}

/// The selectors an endpoint's `enabled_events` must hold one of to receive `event_type`: the
/// type itself and each of its prefixes with `.*` (`book.*`, `book.transfer.*`).
pub fn selectors_of(event_type: EventType) -> Vec<String> {
    let name = event_type.as_str();
    let mut selectors = vec![name.to_owned()];
    selectors.extend(
        name.match_indices('.')
            .map(|(i, _)| format!("{}.*", &name[..i])),
    );
    selectors
}

/// `INSERT ... SELECT` of a pending first attempt per subscribed endpoint. Each row's id is the
/// time part of an id made now and random digits from the database (one statement makes
/// several rows, so Rust cannot name each).
fn fan_out(backend: dialect::Backend, platform_id: &PlatformId, event: &EventRecord) -> Sql {
    let template = WebhookDeliveryId::generate(event.created_at);
    let time_part = &template.as_str()[..WebhookDeliveryId::PREFIX.len() + 1 + TIME_CHARS];
    let random = dialect::random_hex(backend, crate::model::ids::ENCODED_LEN - TIME_CHARS);
    let mut sql = Sql::new(format!(
        "INSERT INTO webhook_deliveries (id, platform_id, endpoint_id, event_id, attempt, \
         status, created_at, next_attempt_at) \
         SELECT ? || {random}, platform_id, id, ?, 1, 'pending', ?, ? FROM webhook_endpoints \
         WHERE platform_id = ? AND NOT is_disabled AND deleted_at IS NULL \
         AND (enabled_events = ''"
    ))
    .bind(time_part)
    .bind(event.id.as_str())
    .bind(event.created_at)
    .bind(event.created_at)
    .bind(platform_id.as_str());
    let contains = dialect::contains(backend, "enabled_events");
    for selector in selectors_of(event.event_type) {
        sql.push(" OR ");
        sql.append(Sql::new(contains.as_str()).bind(format!(",{selector},")));
    }
    sql.push(")");
    sql
}

/// Characters of an id's 27 that its creation time decides (6 of its 20 bytes: the first 8
/// base62 digits, the 8th shared with the random part, which is fine for a sort key).
const TIME_CHARS: usize = 8;

pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EventId,
) -> Result<Option<EventRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM events WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, from_row).await
}

/// One page of the platform's events, newest first.
pub async fn page(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    filter: &EventFilter,
    request: &PageRequest,
) -> Result<Page<EventRecord>, ListError> {
    let mut keyset = Keyset::new(COLUMNS, "events", SortKey::CREATED_AT, SortOrder::Desc)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()));
    keyset = match filter.event_type {
        Some(t) => keyset
            .filter(Sql::new("type = ?").bind(t.as_str()))
            .through_index("events_by_type"),
        None => keyset.through_index("events_list"),
    };
    keyset
        .created_within(&filter.created)
        .fetch(tx, request, from_row)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_type_is_selected_by_its_name_and_each_of_its_prefixes() {
        assert_eq!(
            selectors_of(EventType::BookTransferCompleted),
            ["book.transfer.completed", "book.*", "book.transfer.*"]
        );
        assert_eq!(
            selectors_of(EventType::EntityCreated),
            ["entity.created", "entity.*"]
        );
    }

    #[test]
    fn a_fanned_out_delivery_id_is_a_valid_id_of_its_kind() {
        let now = chrono::Utc::now();
        let id = WebhookDeliveryId::generate(now);
        let head = &id.as_str()[..WebhookDeliveryId::PREFIX.len() + 1 + TIME_CHARS];
        let made = format!(
            "{head}{}",
            "f".repeat(crate::model::ids::ENCODED_LEN - TIME_CHARS)
        );
        assert!(WebhookDeliveryId::parse(&made).is_some(), "{made}");
    }
}
