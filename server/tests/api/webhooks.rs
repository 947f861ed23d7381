//! Webhook endpoints in process: what deleting one leaves to the purge, with the database
//! looked at directly (the worker does not run here, so attempts stay as written).

use std::sync::Arc;
use std::time::Duration;

use bankd::clock::FixedClock;
use bankd::config::Config;
use bankd::domain::webhooks::{RecordedAttempt, Retention};
use bankd::model::webhooks::{AttemptOutcome, ClaimedDelivery};
use bankd::store::{Sql, StoreError};
use serde_json::{Value, json};

use crate::common::Ctx;
use crate::helpers::{TestApp, api_tests, ctx_tests, exec, spawn_app_with};

api_tests!(deleting_an_endpoint_answers_at_once_and_its_attempts_go_in_small_transactions);
ctx_tests!(
    events_and_attempts_past_their_retention_are_purged_unless_still_to_send,
    attempts_are_neither_lost_nor_sent_early_when_the_clock_jumps,
);

/// `sql` (one `?`, bound to `id`) answers a count named `n`.
async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    app.ctx
        .db
        .read_single(|tx| {
            let sql = Sql::new(sql).bind(id);
            Box::pin(async move { tx.fetch_one(sql).await?.get::<i64>("n") })
        })
        .await
        .unwrap_or_else(|e: StoreError| panic!("{sql}: {e}"))
}

const ATTEMPTS: &str = "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?";

async fn new_person(app: &TestApp) {
    let person = json!({"first_name": "Del", "last_name": "Eted"});
    app.post("/entities/person", &app.a.key, &person)
        .await
        .expect(200);
}

/// An endpoint with 2 501 attempts is deleted: the request marks it and answers; from then on
/// the API does not know it and no event is fanned out to it; its attempts stay until the
/// purge removes them a thousand a transaction, and then its row.
async fn deleting_an_endpoint_answers_at_once_and_its_attempts_go_in_small_transactions(
    app: TestApp,
) {
    // A public address (no worker runs here, so nothing is sent to it).
    let body = json!({"url": "https://93.184.216.34/hooks"});
    let endpoint = app
        .post("/webhook-endpoints", &app.a.key, &body)
        .await
        .expect(200);
    let id = endpoint["id"].as_str().expect("id").to_owned();
    new_person(&app).await;
    assert_eq!(
        count(&app, ATTEMPTS, &id).await,
        1,
        "the event's first attempt"
    );
    // Its history: 2 500 more attempts, copies of the first.
    let history = Sql::new(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500) \
         INSERT INTO webhook_deliveries \
         (id, platform_id, endpoint_id, event_id, attempt, status, created_at) \
         SELECT d.id || '_' || CAST(n.i AS TEXT), d.platform_id, d.endpoint_id, d.event_id, \
         n.i + 1, 'failed', d.created_at FROM n, webhook_deliveries d WHERE d.endpoint_id = ?",
    )
    .bind(id.as_str());
    let written = app
        .ctx
        .db
        .write(|tx| {
            let history = history.clone();
            Box::pin(async move { tx.execute(history).await })
        })
        .await
        .unwrap_or_else(|e: StoreError| panic!("history: {e}"));
    assert_eq!(written, 2500);

    let path = format!("/webhook-endpoints/{id}");
    app.delete(&path, &app.a.key).await.expect(200);
    app.get(&path, &app.a.key).await.expect(404);
    app.get(&format!("{path}/deliveries"), &app.a.key)
        .await
        .expect(404);
    app.delete(&path, &app.a.key).await.expect(404);
    let listed = app.get("/webhook-endpoints", &app.a.key).await.expect(200);
    assert_eq!(listed["webhook_endpoints"], Value::Array(Vec::new()));
    assert_eq!(
        count(&app, ATTEMPTS, &id).await,
        2501,
        "the request left the attempts to the purge"
    );
    new_person(&app).await;
    assert_eq!(
        count(&app, ATTEMPTS, &id).await,
        2501,
        "no event fans out to a deleted endpoint"
    );

    let outbox = app.state.services.outbox();
    let purged = outbox.purge_deleted(1000).await.expect("purge");
    assert_eq!(purged, 2501);
    assert_eq!(count(&app, ATTEMPTS, &id).await, 0);
    let rows = "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE id = ?";
    assert_eq!(count(&app, rows, &id).await, 0, "then the endpoint's row");
    assert_eq!(outbox.purge_deleted(1000).await.expect("purge"), 0);
}

const ATTEMPTS_OF_EVENT: &str = "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_id = ?";

/// The ids of the platform's events, newest first.
async fn event_ids(app: &TestApp) -> Vec<String> {
    let list = app.get("/events?limit=100", &app.a.key).await.expect(200);
    list["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect()
}

/// Creates a person and answers the ids of the events it wrote.
async fn person_events(app: &TestApp) -> Vec<String> {
    let before = event_ids(app).await;
    new_person(app).await;
    let mut new: Vec<String> = event_ids(app).await;
    new.retain(|id| !before.contains(id));
    assert!(!new.is_empty(), "creating a person writes an event");
    new
}

/// Sets the status of every attempt of `event` (the worker does not run here).
async fn finish_attempts(app: &TestApp, event: &str, status: &str) {
    let sql = Sql::new(
        "UPDATE webhook_deliveries SET status = ?, next_attempt_at = NULL WHERE event_id = ?",
    )
    .bind(status)
    .bind(event);
    exec(app, sql).await;
}

async fn events_and_attempts_past_their_retention_are_purged_unless_still_to_send(ctx: Ctx) {
    let (clock, app) = app_with_endpoint(ctx).await;
    // Two old events: one whose attempt failed for good, one whose attempt is still pending.
    let finished = person_events(&app).await;
    let pending = person_events(&app).await;
    for event in &finished {
        finish_attempts(&app, event, "failed").await;
    }
    clock.advance(chrono::Duration::days(31));
    let recent = person_events(&app).await;
    let month = Duration::from_secs(30 * 86_400);
    let retention = Retention {
        events: Some(month),
        attempts: Some(month),
    };
    assert_eq!(count(&app, ATTEMPTS_OF_EVENT, &finished[0]).await, 1);

    let outbox = app.state.services.outbox();
    let (attempts, events) = outbox.purge_expired(&retention, 1).await.expect("purge");
    assert_eq!(
        (attempts, events),
        (finished.len() as u64, finished.len() as u64)
    );
    for event in &finished {
        app.get(&format!("/events/{event}"), &app.a.key)
            .await
            .expect_error(404, "event_not_found");
        assert_eq!(count(&app, ATTEMPTS_OF_EVENT, event).await, 0);
    }
    let listed = event_ids(&app).await;
    assert!(finished.iter().all(|e| !listed.contains(e)), "{listed:?}");
    // The pending one is kept until it is sent; the recent one is within retention.
    for event in pending.iter().chain(&recent) {
        app.get(&format!("/events/{event}"), &app.a.key)
            .await
            .expect(200);
        assert!(listed.contains(event));
    }
    assert_eq!(
        outbox.purge_expired(&retention, 1).await.expect("purge"),
        (0, 0)
    );

    // Once sent, it goes too (its attempt first, as a finished one past retention).
    for event in &pending {
        finish_attempts(&app, event, "succeeded").await;
    }
    let n = pending.len() as u64;
    assert_eq!(
        outbox.purge_expired(&retention, 1).await.expect("purge"),
        (n, n)
    );
    let listed = event_ids(&app).await;
    assert_eq!(listed, recent, "only the recent events are left");
    // Retention off keeps everything.
    clock.advance(chrono::Duration::days(400));
    let forever = Retention::default();
    assert_eq!(
        outbox.purge_expired(&forever, 1).await.expect("purge"),
        (0, 0)
    );
    assert_eq!(event_ids(&app).await, listed);
}

/// bankd on a clock the test moves, with platform A's webhook endpoint on a public address
/// (no worker runs here, so nothing is sent to it).
async fn app_with_endpoint(ctx: Ctx) -> (Arc<FixedClock>, TestApp) {
    let clock = Arc::new(FixedClock::new(chrono::Utc::now()));
    let app = spawn_app_with(ctx, clock.clone(), Config::default()).await;
    let body = json!({"url": "https://93.184.216.34/hooks"});
    app.post("/webhook-endpoints", &app.a.key, &body)
        .await
        .expect(200);
    (clock, app)
}

/// The claimed attempts as made, answered `status` (jitter 0.5: the back-off exactly).
fn made(claimed: Vec<ClaimedDelivery>, status: i32) -> Vec<RecordedAttempt> {
    let outcome = AttemptOutcome {
        succeeded: (200..300).contains(&status),
        response_status: Some(status),
        latency_ms: 3,
        error: None,
    };
    claimed
        .into_iter()
        .map(|claimed| RecordedAttempt {
            claimed,
            outcome: outcome.clone(),
            jitter: 0.5,
        })
        .collect()
}

/// Claims what is due now (nothing to record); answers the claimed attempts.
async fn claim(app: &TestApp, finished: &[RecordedAttempt]) -> Vec<ClaimedDelivery> {
    let lease = Duration::from_secs(30);
    let outbox = app.state.services.outbox();
    let claimed = outbox.record_and_claim(finished, 10, lease, false).await;
    claimed.expect("claim").unwrap_or_default()
}

/// The clock jumps hours back and forth while an event's attempts are due, leased, failed and
/// retried: no attempt is claimed before it is due, none is lost, and the retry waits its
/// back-off from the time the failure was recorded.
async fn attempts_are_neither_lost_nor_sent_early_when_the_clock_jumps(ctx: Ctx) {
    let (clock, app) = app_with_endpoint(ctx).await;
    let events = person_events(&app).await;
    // Three hours back: the first attempt is not due yet.
    clock.advance(chrono::Duration::hours(-3));
    assert!(
        claim(&app, &[]).await.is_empty(),
        "claimed before it was due"
    );
    clock.advance(chrono::Duration::hours(3));
    let first = claim(&app, &[]).await;
    assert_eq!(first.len(), events.len(), "every event's attempt is due");
    // The attempt fails while the clock is five hours back; its retry is due one back-off
    // (60 s, jitter 0.5: exactly 60 s) after the failure was recorded.
    clock.advance(chrono::Duration::hours(-5));
    let failed = made(first, 500);
    assert!(claim(&app, &failed).await.is_empty(), "the retry waits");
    clock.advance(chrono::Duration::seconds(59));
    assert!(claim(&app, &[]).await.is_empty(), "not a second early");
    clock.advance(chrono::Duration::seconds(2));
    let second = claim(&app, &[]).await;
    assert_eq!(second.len(), events.len(), "the retry is not lost");
    assert!(second.iter().all(|c| c.delivery.attempt == 2));
    // The clock leaps a day forward: nothing else is due, and the retry is recorded once.
    clock.advance(chrono::Duration::hours(24));
    let succeeded = made(second, 204);
    assert!(claim(&app, &succeeded).await.is_empty());
    for event in &events {
        let statuses = "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_id = ? \
             AND status IN ('failed', 'succeeded')";
        assert_eq!(count(&app, statuses, event).await, 2, "two attempts made");
        assert_eq!(
            count(&app, ATTEMPTS_OF_EVENT, event).await,
            2,
            "and no third"
        );
    }
}
