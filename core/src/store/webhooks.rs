//! Webhook endpoints and delivery attempts: the API's reads and writes, and the worker's claim
//! and record.
//!
//! A worker claims due attempts by setting a lease (`lease_until`) in a write transaction of its
//! own, sends them outside any transaction, then records each outcome. On PostgreSQL the claim
//! skips rows another process has locked (`FOR UPDATE SKIP LOCKED`), so processes sharing a
//! database never claim the same attempt; a lease left by a process that died makes the attempt
//! claimable again once it expires (the event is sent again, with the same `webhook-id`).
//!
//! A deleted endpoint keeps its row, marked (`deleted_at`), until its attempts are gone: every
//! read here but the purge's sees only live endpoints (`LIVE`).

use chrono::{DateTime, Utc};

use super::{Backend, Row, Sql, StoreError, Tx, dialect};
use crate::model::events::EventRecord;
use crate::model::ids::{EventId, PlatformId, WebhookDeliveryId, WebhookEndpointId};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::model::webhooks::{
    AttemptOutcome, ClaimedDelivery, DeliveryRecord, DeliveryStatus, WebhookEndpointRecord,
};
use crate::store::keyset::{Keyset, ListError, SortKey};

const ENDPOINT_COLUMNS: &str = "id, url, description, enabled_events, is_disabled, secret, \
    previous_secret, previous_secret_expires_at, created_at, updated_at";

const DELIVERY_COLUMNS: &str = "id, endpoint_id, event_id, attempt, status, response_status, \
    latency_ms, error, created_at, next_attempt_at";

/// `enabled_events` as stored: `,a,b.*,`, or empty for every event (what the fan-out's substring test
/// matches; selectors are checked names, which hold no comma).
fn encode_selectors(selectors: &[String]) -> String {
    if selectors.is_empty() {
        String::new()
    } else {
        format!(",{},", selectors.join(","))
    }
}

fn decode_selectors(stored: &str) -> Vec<String> {
    stored
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The condition of an endpoint that is not deleted.
const LIVE: &str = "deleted_at IS NULL";

fn spelled<T: std::str::FromStr<Err = String>>(text: String) -> Result<T, StoreError> {
    text.parse().map_err(StoreError::Corrupt)
}

fn endpoint_from(row: &Row, p: &str) -> Result<WebhookEndpointRecord, StoreError> {
    Ok(WebhookEndpointRecord {
        id: WebhookEndpointId::from_trusted(row.get_prefixed(p, "id")?),
        url: row.get_prefixed(p, "url")?,
        description: row.get_prefixed(p, "description")?,
        enabled_events: decode_selectors(&row.get_prefixed::<String>(p, "enabled_events")?),
        is_disabled: row.get_prefixed(p, "is_disabled")?,
        secret: row.get_prefixed(p, "secret")?,
        previous_secret: row.get_prefixed(p, "previous_secret")?,
        previous_expires_at: row.get_prefixed(p, "previous_secret_expires_at")?,
        created_at: row.get_prefixed(p, "created_at")?,
        updated_at: row.get_prefixed(p, "updated_at")?,
    })
}

fn endpoint_from_row(row: &Row) -> Result<WebhookEndpointRecord, StoreError> {
    endpoint_from(row, "")
}

fn delivery_from(row: &Row, p: &str) -> Result<DeliveryRecord, StoreError> {
    Ok(DeliveryRecord {
        id: WebhookDeliveryId::from_trusted(row.get_prefixed(p, "id")?),
        endpoint_id: WebhookEndpointId::from_trusted(row.get_prefixed(p, "endpoint_id")?),
        event_id: EventId::from_trusted(row.get_prefixed(p, "event_id")?),
        attempt: i32::try_from(row.get_prefixed::<i64>(p, "attempt")?)
            .map_err(|e| StoreError::Corrupt(format!("delivery attempt number: {e}")))?,
        status: spelled::<DeliveryStatus>(row.get_prefixed(p, "status")?)?,
        response_status: row
            .get_prefixed::<Option<i64>>(p, "response_status")?
            .and_then(|s| i32::try_from(s).ok()),
        latency_ms: row.get_prefixed(p, "latency_ms")?,
        error: row.get_prefixed(p, "error")?,
        created_at: row.get_prefixed(p, "created_at")?,
        next_attempt_at: row.get_prefixed(p, "next_attempt_at")?,
    })
}

fn delivery_from_row(row: &Row) -> Result<DeliveryRecord, StoreError> {
    delivery_from(row, "")
}

// ------------------------------------------------------------------------------ endpoints

pub async fn insert_endpoint(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    e: &WebhookEndpointRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO webhook_endpoints (platform_id, {ENDPOINT_COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(e.id.as_str())
    .bind(&e.url)
    .bind(&e.description)
    .bind(encode_selectors(&e.enabled_events))
    .bind(e.is_disabled)
    .bind(&e.secret)
    .bind(e.previous_secret.clone())
    .bind(e.previous_expires_at)
    .bind(e.created_at)
    .bind(e.updated_at);
    tx.execute(sql).await?;
    Ok(())
}

/// How many endpoints the platform has.
pub async fn count_endpoints(tx: &mut Tx<'_>, platform_id: &PlatformId) -> Result<i64, StoreError> {
    let sql = Sql::new(format!(
        "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE platform_id = ? AND {LIVE}"
    ))
    .bind(platform_id.as_str());
    tx.fetch_one(sql).await?.get("n")
}

/// Writes every changeable field of `e` (the rules decided the new values).
pub async fn update_endpoint(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    e: &WebhookEndpointRecord,
) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "UPDATE webhook_endpoints SET url = ?, description = ?, enabled_events = ?, \
         is_disabled = ?, secret = ?, previous_secret = ?, previous_secret_expires_at = ?, \
         updated_at = ? WHERE platform_id = ? AND id = ? AND {LIVE}"
    ))
    .bind(&e.url)
    .bind(&e.description)
    .bind(encode_selectors(&e.enabled_events))
    .bind(e.is_disabled)
    .bind(&e.secret)
    .bind(e.previous_secret.clone())
    .bind(e.previous_expires_at)
    .bind(e.updated_at)
    .bind(platform_id.as_str())
    .bind(e.id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

pub async fn get_endpoint(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &WebhookEndpointId,
) -> Result<Option<WebhookEndpointRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints \
         WHERE platform_id = ? AND id = ? AND {LIVE}"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, endpoint_from_row).await
}

/// Marks the endpoint deleted at `now` (its attempts go later: [`delete_attempts_of_deleted`]);
/// whether it existed.
pub async fn mark_deleted(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &WebhookEndpointId,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "UPDATE webhook_endpoints SET deleted_at = ? WHERE platform_id = ? AND id = ? AND {LIVE}"
    ))
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

/// Whether any endpoint is marked deleted (a read, so an idle purge never takes the writer).
pub async fn any_deleted(tx: &mut Tx<'_>) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE NOT ({LIVE})) AS found"
    ));
    tx.fetch_one(sql).await?.get::<bool>("found")
}

/// Deletes up to `limit` attempts of endpoints marked deleted; how many.
pub async fn delete_attempts_of_deleted(tx: &mut Tx<'_>, limit: u32) -> Result<u64, StoreError> {
    let sql = Sql::new(format!(
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT d.id FROM webhook_endpoints w \
         JOIN webhook_deliveries d ON d.endpoint_id = w.id WHERE NOT (w.{LIVE}) LIMIT ?)"
    ))
    .bind(i64::from(limit));
    tx.execute(sql).await
}

/// Deletes up to `limit` of the oldest attempts created before `cutoff`, all platforms, never a
/// pending one (retention); how many.
pub async fn delete_attempts_created_before(
    tx: &mut Tx<'_>,
    cutoff: DateTime<Utc>,
    limit: u32,
) -> Result<u64, StoreError> {
    let sql = Sql::new(
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries \
         WHERE created_at < ? AND status <> 'pending' ORDER BY created_at, id LIMIT ?)",
    )
    .bind(cutoff)
    .bind(i64::from(limit));
    tx.execute(sql).await
}

/// The oldest events created before `cutoff` that no pending attempt still has to send.
const EXPIRED_EVENTS: &str = "SELECT id FROM events e WHERE created_at < ? AND NOT EXISTS \
     (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending') \
     ORDER BY created_at, id LIMIT ?";

/// Deletes up to `limit` of the oldest events created before `cutoff`, all platforms, with
/// their attempts; an event an attempt still has to send stays until it is sent (retention).
/// How many events.
pub async fn delete_events_created_before(
    tx: &mut Tx<'_>,
    cutoff: DateTime<Utc>,
    limit: u32,
) -> Result<u64, StoreError> {
    let limit = i64::from(limit);
    // Both statements pick the same events (the order is total, and deleting finished
    // attempts changes no event's pending ones): the attempts go first, as they refer to them.
    let attempts = Sql::new(format!(
        "DELETE FROM webhook_deliveries WHERE event_id IN ({EXPIRED_EVENTS})"
    ));
    tx.execute(attempts.bind(cutoff).bind(limit)).await?;
    let events = Sql::new(format!("DELETE FROM events WHERE id IN ({EXPIRED_EVENTS})"));
    tx.execute(events.bind(cutoff).bind(limit)).await
}

/// Deletes the rows of endpoints marked deleted whose attempts are all gone; how many.
pub async fn delete_emptied_endpoints(tx: &mut Tx<'_>) -> Result<u64, StoreError> {
    let sql = Sql::new(format!(
        "DELETE FROM webhook_endpoints WHERE NOT ({LIVE}) AND NOT EXISTS \
         (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = webhook_endpoints.id)"
    ));
    tx.execute(sql).await
}

/// One page of the platform's endpoints, newest first.
pub async fn page_endpoints(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    request: &PageRequest,
) -> Result<Page<WebhookEndpointRecord>, ListError> {
    newest_first(ENDPOINT_COLUMNS, "webhook_endpoints", platform_id)
        .filter(Sql::new(LIVE))
        .through_index("webhook_endpoints_list")
        .fetch(tx, request, endpoint_from_row)
        .await
}

/// The platform's rows of `table`, newest first.
fn newest_first(columns: &str, table: &str, platform_id: &PlatformId) -> Keyset {
    Keyset::new(columns, table, SortKey::CREATED_AT, SortOrder::Desc)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
}

// ----------------------------------------------------------------------------- deliveries

/// One page of an endpoint's attempts, newest first.
pub async fn page_deliveries(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    endpoint_id: &WebhookEndpointId,
    request: &PageRequest,
) -> Result<Page<DeliveryRecord>, ListError> {
    newest_first(DELIVERY_COLUMNS, "webhook_deliveries", platform_id)
        .filter(Sql::new("endpoint_id = ?").bind(endpoint_id.as_str()))
        .through_index("webhook_deliveries_list")
        .fetch(tx, request, delivery_from_row)
        .await
}

pub async fn get_delivery(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    endpoint_id: &WebhookEndpointId,
    id: &WebhookDeliveryId,
) -> Result<Option<DeliveryRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
         WHERE platform_id = ? AND endpoint_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(endpoint_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, delivery_from_row).await
}

/// The reads of one event's attempts to one endpoint name their index on SQLite, which
/// without statistics may prefer the endpoint's list index and walk every attempt the endpoint
/// ever had.
fn by_event(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => " INDEXED BY webhook_deliveries_by_event",
        Backend::Postgres => "",
    }
}

/// Whether the platform has endpoint `id`, locked until the transaction ends against another
/// change of its attempts' schedule (`FOR NO KEY UPDATE` on PostgreSQL: the foreign-key checks
/// of new attempts take `KEY SHARE` and are not held up).
pub async fn lock_endpoint(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &WebhookEndpointId,
) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "SELECT id FROM webhook_endpoints WHERE platform_id = ? AND id = ? AND {LIVE}{}",
        dialect::for_no_key_update(tx.backend())
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.fetch_optional(sql).await?.is_some())
}

/// The pending attempt of `event_id` to the endpoint (scheduled, or under way), if any.
pub async fn pending_attempt(
    tx: &mut Tx<'_>,
    endpoint_id: &WebhookEndpointId,
    event_id: &EventId,
) -> Result<Option<DeliveryRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries{} \
         WHERE event_id = ? AND endpoint_id = ? AND status = 'pending' LIMIT 1",
        by_event(tx.backend())
    ))
    .bind(event_id.as_str())
    .bind(endpoint_id.as_str());
    tx.fetch_optional_as(sql, delivery_from_row).await
}

/// Makes pending attempt `id` due at `due`.
pub async fn reschedule(
    tx: &mut Tx<'_>,
    id: &WebhookDeliveryId,
    due: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND status = 'pending'",
    )
    .bind(due)
    .bind(id.as_str());
    tx.execute(sql).await?;
    Ok(())
}

/// The highest attempt number of `event_id` to the endpoint so far.
pub async fn last_attempt(
    tx: &mut Tx<'_>,
    endpoint_id: &WebhookEndpointId,
    event_id: &EventId,
) -> Result<i32, StoreError> {
    let sql = Sql::new(format!(
        "SELECT CAST(COALESCE(MAX(attempt), 0) AS BIGINT) AS n \
         FROM webhook_deliveries{} WHERE event_id = ? AND endpoint_id = ?",
        by_event(tx.backend())
    ))
    .bind(event_id.as_str())
    .bind(endpoint_id.as_str());
    let n: i64 = tx.fetch_one(sql).await?.get("n")?;
    i32::try_from(n).map_err(|e| StoreError::Corrupt(format!("attempt number: {e}")))
}

/// Writes a new attempt (a retry asked for, or the next one after a failure).
pub async fn insert_delivery(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    d: &DeliveryRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO webhook_deliveries (platform_id, {DELIVERY_COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(d.id.as_str())
    .bind(d.endpoint_id.as_str())
    .bind(d.event_id.as_str())
    .bind(d.attempt)
    .bind(d.status.as_str())
    .bind(d.response_status)
    .bind(d.latency_ms)
    .bind(d.error.clone())
    .bind(d.created_at)
    .bind(d.next_attempt_at);
    tx.execute(sql).await?;
    Ok(())
}

/// The condition of an attempt a worker may claim at `now`.
const DUE: &str = "status = 'pending' AND next_attempt_at <= ? \
    AND (lease_until IS NULL OR lease_until <= ?)";

/// Whether any attempt is due at `now` (a read, so an idle worker never takes the writer).
pub async fn any_due(tx: &mut Tx<'_>, now: DateTime<Utc>) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE {DUE}) AS due"
    ))
    .bind(now)
    .bind(now);
    tx.fetch_one(sql).await?.get::<bool>("due")
}

/// Leases up to `limit` due attempts until `lease_until`, oldest due first, and answers them
/// with their endpoints and events.
pub async fn claim_due(
    tx: &mut Tx<'_>,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ClaimedDelivery>, StoreError> {
    let skip_locked = match tx.backend() {
        Backend::Sqlite => "",
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
    };
    let claim = Sql::new(format!(
        "UPDATE webhook_deliveries SET lease_until = ? WHERE id IN (SELECT id FROM \
         webhook_deliveries WHERE {DUE} ORDER BY next_attempt_at LIMIT ?{skip_locked}) \
         RETURNING id"
    ))
    .bind(lease_until)
    .bind(now)
    .bind(now)
    .bind(limit);
    let ids: Vec<String> = tx.fetch_all_as(claim, |r| r.get("id")).await?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let d = prefixed("d", DELIVERY_COLUMNS);
    let w = prefixed("w", ENDPOINT_COLUMNS);
    let mut sql = Sql::new(format!(
        "SELECT d.platform_id AS platform_id, {d}, {w}, v.id AS v_id, v.type AS v_type, \
         v.data AS v_data, v.created_at AS v_created_at \
         FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id \
         AND w.{LIVE} JOIN events v ON v.id = d.event_id WHERE d.id IN ("
    ));
    for (i, id) in ids.into_iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push_bind(id);
    }
    sql.push(")");
    tx.fetch_all_as(sql, claimed_from_row).await
}

/// `a.x AS a_x, a.y AS a_y, ...` for a join's alias `a`.
fn prefixed(alias: &str, columns: &str) -> String {
    columns
        .split(',')
        .map(|c| {
            let c = c.trim();
            format!("{alias}.{c} AS {alias}_{c}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn claimed_from_row(row: &Row) -> Result<ClaimedDelivery, StoreError> {
    Ok(ClaimedDelivery {
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        delivery: delivery_from(row, "d_")?,
        endpoint: endpoint_from(row, "w_")?,
        event: EventRecord {
            id: EventId::from_trusted(row.get("v_id")?),
            event_type: spelled(row.get("v_type")?)?,
            data: row.get("v_data")?,
            created_at: row.get("v_created_at")?,
        },
    })
}

/// Records a made attempt on its still pending row; `false` when the row is gone or no longer
/// pending (its endpoint was deleted meanwhile, or another worker recorded it after this one's
/// lease expired).
pub async fn record_attempt(
    tx: &mut Tx<'_>,
    id: &WebhookDeliveryId,
    outcome: &AttemptOutcome,
) -> Result<bool, StoreError> {
    let status = if outcome.succeeded {
        DeliveryStatus::Succeeded
    } else {
        DeliveryStatus::Failed
    };
    let sql = Sql::new(
        "UPDATE webhook_deliveries SET status = ?, response_status = ?, latency_ms = ?, \
         error = ?, next_attempt_at = NULL, lease_until = NULL \
         WHERE id = ? AND status = 'pending'",
    )
    .bind(status.as_str())
    .bind(outcome.response_status)
    .bind(outcome.latency_ms)
    .bind(outcome.error.clone())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_stored_so_that_a_substring_test_finds_each_one_whole() {
        let selectors = vec!["book.transfer.*".to_owned(), "entity.created".to_owned()];
        let stored = encode_selectors(&selectors);
        assert_eq!(stored, ",book.transfer.*,entity.created,");
        assert_eq!(decode_selectors(&stored), selectors);
        assert_eq!(encode_selectors(&[]), "");
        assert!(decode_selectors("").is_empty());
    }

    #[test]
    fn a_join_alias_prefixes_every_column() {
        assert_eq!(
            prefixed("d", "id, status"),
            "d.id AS d_id, d.status AS d_status"
        );
    }
}
