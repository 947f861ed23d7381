//! The delivery worker: every `bankd serve` process runs one. It claims due attempts from the
//! event outbox (`domain::webhooks::Outbox`), builds each body through the generated callback
//! (`bank_api::callbacks::requests`), signs it (Standard Webhooks), sends it with the shared
//! [`WebhookSender`] and records the outcome, which schedules the next attempt of a failure.
//!
//! Design note. The worker claims no more attempts than it has free sending slots, so a
//! claimed attempt is always under way: on a graceful shutdown it stops claiming and waits for
//! the attempts in flight (each bounded by the timeout), and nothing claimed is left waiting.
//! A process killed mid-attempt leaves a lease that expires after the timeout and a margin;
//! any worker then claims the attempt again and sends it with the same `webhook-id`
//! (at-least-once). An idle worker asks the database with a read every [`POLL`] whether
//! anything is due, so it never takes SQLite's writer for nothing; the lag from commit to
//! delivery is therefore up to one poll interval plus the send. A worker whose last claim
//! filled every free slot claims again without asking.
//!
//! Outcomes are written by one recorder task, each transaction carrying every attempt that
//! finished while the previous one was written ([`record`]); a slot frees only once its
//! attempt's outcome is written, so the claims too come in groups rather than one by one.
//! Under a stream of events this makes a few transactions a second where one per attempt cost
//! the platform's own writes about a tenth of their rate (bench/README.md).

use std::sync::Arc;
use std::time::Duration;

use bank_api::callbacks::{self, Callbacks};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinSet;

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
/// The most outcomes one recording transaction carries.
const MAX_RECORDED: usize = 256;

// Metric names (described in crate::metrics).
pub const ATTEMPTS_METRIC: &str = "bankd_webhook_attempts_total";
pub const CLAIM_SIZE_METRIC: &str = "bankd_webhook_claim_size";
pub const RECORD_SIZE_METRIC: &str = "bankd_webhook_record_batch_size";

/// A finished attempt on its way to the recorder, with the slot it holds until recorded.
type Finished = (RecordedAttempt, OwnedSemaphorePermit);

/// Runs until `stop` turns true, then waits for the attempts in flight.
pub async fn run<C>(
    services: Services,
    callbacks: Arc<C>,
    sender: WebhookSender,
    slots: usize,
    mut stop: watch::Receiver<bool>,
) where
    C: Callbacks<Event = Event>,
{
    let free = Arc::new(Semaphore::new(slots.max(1)));
    let mut in_flight = JoinSet::new();
    let (finished, to_record) = mpsc::unbounded_channel::<Finished>();
    let recorder = tokio::spawn(record(services.clone(), to_record));
    let lease = services.outbox().settings().timeout + LEASE_MARGIN;
    // Whether the last claim filled its room, so that more attempts are likely due.
    let mut backlog = false;
    while !*stop.borrow() {
        while in_flight.try_join_next().is_some() {}
        if free.available_permits() == 0 {
            // Every slot is sending: claim again as soon as one is free, not after a poll.
            tokio::select! {
                permit = free.acquire() => drop(permit),
                _ = stop.changed() => {}
            }
            continue;
        }
        let room = free.available_permits();
        let claimed = services
            .outbox()
            .claim(i64::try_from(room).unwrap_or(i64::MAX), lease, !backlog)
            .await;
        backlog = matches!(&claimed, Ok(claimed) if claimed.len() >= room);
        let wait = match claimed {
            Ok(claimed) if claimed.is_empty() => POLL,
            Ok(claimed) => {
                metrics::histogram!(CLAIM_SIZE_METRIC).record(claimed.len() as f64);
                for delivery in claimed {
                    let Ok(permit) = free.clone().try_acquire_owned() else {
                        break;
                    };
                    let (services, callbacks, sender, finished) = (
                        services.clone(),
                        callbacks.clone(),
                        sender.clone(),
                        finished.clone(),
                    );
                    in_flight.spawn(async move {
                        let made = deliver(&services, callbacks.as_ref(), &sender, delivery).await;
                        // The recorder outlives every attempt (`run` waits for them first).
                        let _ = finished.send((made, permit));
                    });
                }
                Duration::ZERO
            }
            Err(e) => {
                tracing::warn!(error = %e, "webhook worker cannot claim deliveries");
                BACKOFF_ON_ERROR
            }
        };
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
        } else {
            // Let finished attempts hand back their slots before claiming again.
            tokio::task::yield_now().await;
        }
    }
    while in_flight.join_next().await.is_some() {}
    drop(finished);
    if let Err(e) = recorder.await {
        tracing::error!(error = %e, "webhook recorder failed");
    }
}

/// Writes finished attempts' outcomes until every sender is gone: all that finished since the
/// last write go in one transaction, then their slots free. A failed write leaves their leases
/// to expire, and the attempts are made again (at-least-once).
async fn record(services: Services, mut finished: mpsc::UnboundedReceiver<Finished>) {
    let mut batch = Vec::new();
    while finished.recv_many(&mut batch, MAX_RECORDED).await > 0 {
        let (attempts, slots): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
        metrics::histogram!(RECORD_SIZE_METRIC).record(attempts.len() as f64);
        // Counted once written: an attempt whose outcome is lost is made (and counted) again.
        let recorded = match services.outbox().record_attempts(&attempts).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(attempts = attempts.len(), error = %e, "webhook attempts not recorded");
                false
            }
        };
        for a in &attempts {
            if recorded {
                let outcome = if a.outcome.succeeded {
                    "succeeded"
                } else {
                    "failed"
                };
                metrics::counter!(ATTEMPTS_METRIC, "outcome" => outcome).increment(1);
            }
            tracing::debug!(
                delivery = %a.claimed.delivery.id,
                event = %a.claimed.event.id,
                succeeded = a.outcome.succeeded,
                status = ?a.outcome.response_status,
                "webhook attempt"
            );
        }
        drop(slots);
    }
}

/// Makes one claimed attempt; answers it for the recorder.
async fn deliver<C>(
    services: &Services,
    callbacks: &C,
    sender: &WebhookSender,
    claimed: ClaimedDelivery,
) -> RecordedAttempt
where
    C: Callbacks<Event = Event>,
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
    C: Callbacks<Event = Event>,
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
    let body = match callbacks::requests(callbacks, &event) {
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
