//! The delivery worker: every `bankd serve` process runs one. It claims due attempts from the
//! event outbox (`domain::webhooks::Outbox`), builds each body through the generated callback
//! (`bank_api::callbacks::webhook_requests`, the document's top-level `event` webhook), signs it (Standard Webhooks), sends it with the shared
//! [`WebhookSender`] and records the outcome, which schedules the next attempt of a failure.
//!
//! Design note. The worker is one task that owns every decision, and the attempts it sends,
//! one task each, are its only concurrency. It claims no more attempts than it has free sending
//! slots, so a claimed attempt is always under way: on a graceful shutdown it stops claiming,
//! waits for the attempts in flight (each bounded by the timeout) and records them, and nothing
//! claimed is left waiting. A process killed mid-attempt leaves a lease that expires after the
//! timeout and a margin; any worker then claims the attempt again and sends it with the same
//! `webhook-id` (at-least-once). An idle worker asks the database with a read every [`POLL`]
//! whether anything is due, so it never takes SQLite's writer for nothing; the lag from commit
//! to delivery is therefore up to one poll interval plus the send.
//!
//! Every write of the worker is one transaction that records the outcomes of the attempts that
//! finished since the last one and claims due attempts for the slots they free
//! (`Outbox::record_and_claim`). A slot frees only once its attempt's outcome is written, so
//! under a stream of events each transaction carries a group of outcomes and a group of claims:
//! a few transactions a second, where one per outcome cost the platform's own writes about a
//! tenth of their rate, and a separate one per claim a further share (bench/README.md).

use std::sync::Arc;
use std::time::Duration;

use bank_api::callbacks::{self, Webhooks};
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use crate::domain::Services;
use crate::domain::events::Event;
use crate::domain::webhook_signing::{WebhookSecret, signature_header};
use crate::domain::webhook_targets::WebhookTarget;
use crate::domain::webhooks::{RecordedAttempt, signing_secrets};
use crate::model::webhooks::{AttemptOutcome, ClaimedDelivery};
use crate::webhook_sender::{Attempt, WebhookSender};

/// How often an idle worker looks for due attempts.
pub const POLL: Duration = Duration::from_millis(100);
/// How long a lease outlives the attempt's timeout (the outcome's write, a slow disk).
const LEASE_MARGIN: Duration = Duration::from_secs(30);
/// How long to wait after the database failed before trying again.
const BACKOFF_ON_ERROR: Duration = Duration::from_secs(1);

// Metric names (described in crate::metrics).
pub const ATTEMPTS_METRIC: &str = "bankd_webhook_attempts_total";
pub const CLAIM_SIZE_METRIC: &str = "bankd_webhook_claim_size";
pub const RECORD_SIZE_METRIC: &str = "bankd_webhook_record_batch_size";
pub const TRANSACTIONS_METRIC: &str = "bankd_webhook_worker_transactions_total";

/// Runs until `stop` turns true (or its sender is gone), then finishes and records the attempts
/// in flight.
pub async fn run<C>(
    services: Services,
    callbacks: Arc<C>,
    sender: WebhookSender,
    slots: usize,
    mut stop: watch::Receiver<bool>,
) where
    C: Webhooks<Event = Event>,
{
    let slots = slots.max(1);
    let lease = services.outbox().settings().timeout + LEASE_MARGIN;
    let mut in_flight = JoinSet::new();
    // Attempts made whose outcomes the next transaction writes; each still holds its slot.
    let mut finished = Vec::new();
    // Whether the last claim filled its room, so that more attempts are likely due.
    let mut backlog = false;
    // When an idle worker next asks whether anything is due.
    let mut next_poll = Instant::now();
    let mut stopping = false;
    loop {
        while let Some(done) = in_flight.try_join_next() {
            collect(done, &mut finished);
        }
        stopping |= *stop.borrow();
        if stopping && in_flight.is_empty() && finished.is_empty() {
            break;
        }
        let room = if stopping { 0 } else { slots - in_flight.len() };
        if !finished.is_empty() || (room > 0 && (backlog || Instant::now() >= next_poll)) {
            let limit = i64::try_from(room).unwrap_or(i64::MAX);
            let written = services
                .outbox()
                .record_and_claim(&finished, limit, lease, !backlog)
                .await;
            let recorded = std::mem::take(&mut finished);
            match written {
                Ok(None) => next_poll = Instant::now() + POLL,
                Ok(Some(claimed)) => {
                    counted(&recorded);
                    backlog = room > 0 && claimed.len() >= room;
                    if !backlog {
                        next_poll = Instant::now() + POLL;
                    }
                    if !claimed.is_empty() {
                        metrics::histogram!(CLAIM_SIZE_METRIC).record(claimed.len() as f64);
                    }
                    for delivery in claimed {
                        let (services, callbacks, sender) =
                            (services.clone(), callbacks.clone(), sender.clone());
                        in_flight.spawn(async move {
                            deliver(&services, callbacks.as_ref(), &sender, delivery).await
                        });
                    }
                }
                Err(e) => {
                    // Outcomes not written leave their leases to expire, and those attempts are
                    // made again (at-least-once).
                    tracing::warn!(
                        attempts = recorded.len(),
                        error = %e,
                        "webhook worker cannot record outcomes or claim deliveries"
                    );
                    backlog = false;
                    next_poll = Instant::now() + BACKOFF_ON_ERROR;
                }
            }
            continue;
        }
        tokio::select! {
            Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                collect(done, &mut finished);
            }
            _ = tokio::time::sleep_until(next_poll), if room > 0 => {}
            changed = stop.changed(), if !stopping => stopping |= changed.is_err(),
            // Unreachable (nothing in flight and no room means stopping with nothing left,
            // which ends the loop above); leaving is the safe answer all the same.
            else => break,
        }
    }
}

/// Takes a finished attempt for the next transaction. An attempt whose task failed is left to
/// its lease, and made again once the lease expires.
fn collect(done: Result<RecordedAttempt, JoinError>, finished: &mut Vec<RecordedAttempt>) {
    match done {
        Ok(attempt) => finished.push(attempt),
        Err(e) => tracing::error!(error = %e, "webhook attempt task failed"),
    }
}

/// Counts a written transaction and its outcomes: an attempt whose outcome is lost is made (and
/// counted) again.
fn counted(recorded: &[RecordedAttempt]) {
    metrics::counter!(TRANSACTIONS_METRIC).increment(1);
    if recorded.is_empty() {
        return;
    }
    metrics::histogram!(RECORD_SIZE_METRIC).record(recorded.len() as f64);
    for a in recorded {
        let outcome = if a.outcome.succeeded {
            "succeeded"
        } else {
            "failed"
        };
        metrics::counter!(ATTEMPTS_METRIC, "outcome" => outcome).increment(1);
        tracing::debug!(
            delivery = %a.claimed.delivery.id,
            event = %a.claimed.event.id,
            succeeded = a.outcome.succeeded,
            status = ?a.outcome.response_status,
            "webhook attempt"
        );
    }
}

/// Makes one claimed attempt; answers it for the next transaction.
async fn deliver<C>(
    services: &Services,
    callbacks: &C,
    sender: &WebhookSender,
    claimed: ClaimedDelivery,
) -> RecordedAttempt
where
    C: Webhooks<Event = Event>,
{
    let attempt = attempt(services, callbacks, sender, &claimed).await;
    let outcome = AttemptOutcome {
        succeeded: attempt.succeeded,
        response_status: attempt.status.map(i32::from),
        latency_ms: i64::try_from(attempt.latency_ms).unwrap_or(i64::MAX),
        error: attempt.error,
    };
    RecordedAttempt {
        claimed,
        outcome,
        jitter: rand::random::<f64>(),
    }
}

/// Builds, signs and sends the attempt's request; what went wrong before sending is a failed
/// attempt too (the platform sees why in its delivery log).
async fn attempt<C>(
    services: &Services,
    callbacks: &C,
    sender: &WebhookSender,
    claimed: &ClaimedDelivery,
) -> Attempt
where
    C: Webhooks<Event = Event>,
{
    let refused = |error: &str| Attempt {
        status: None,
        latency_ms: 0,
        error: Some(error.to_owned()),
        succeeded: false,
    };
    let event = match Event::try_from(claimed.event.clone()) {
        Ok(event) => event,
        Err(e) => {
            tracing::error!(event = %claimed.event.id, error = %e, "stored event unreadable");
            return refused("internal error: the event cannot be read");
        }
    };
    let body = match callbacks::webhook_requests(callbacks, &event) {
        Ok(requests) => match requests.into_iter().next() {
            Some(request) => request.body,
            None => return refused("internal error: the event has no payload"),
        },
        Err(e) => {
            tracing::error!(event = %claimed.event.id, error = %e, "event payload not serialised");
            return refused("internal error: the event cannot be serialised");
        }
    };
    let target = match WebhookTarget::parse(&claimed.endpoint.url) {
        Ok(target) => target,
        Err(e) => return refused(&e.to_string()),
    };
    let now = services.clock().now();
    let secrets = match signing_secrets(&claimed.endpoint, now) {
        Ok(secrets) => secrets,
        Err(e) => {
            tracing::error!(endpoint = %claimed.endpoint.id, error = %e, "endpoint secret unreadable");
            return refused("internal error: the endpoint's secret cannot be read");
        }
    };
    let timestamp = now.timestamp();
    let id = claimed.event.id.as_str();
    let secrets: Vec<&WebhookSecret> = secrets.iter().collect();
    let headers = [
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            signature_header(&secrets, id, timestamp, &body),
        ),
    ];
    sender.send(&target, &headers, body).await
}
