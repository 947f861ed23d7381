//! Prometheus metrics: what an operator of bankd watches, in the text format at `/metrics`.
//!
//! Design note. Options considered: `prometheus-client` (typed label sets, a registry passed
//! around) and the `metrics` facade with `metrics-exporter-prometheus`. Chosen: the facade.
//! Every layer records where the event happens (the store its commits, retries and pool waits;
//! idempotency its replays; the HTTP edge its requests) through the facade crate alone, so the
//! store does not depend on the shell that serves the scrape, and with `metrics = false` no
//! recorder is installed and each call site is a check of an unset global. The exporter keeps
//! histograms as fixed buckets (`BUCKETS`); its upkeep task drains recorded values every few
//! seconds, so memory stays bounded between scrapes.
//!
//! Cardinality. Labels carry only values from closed sets: an operation id of the document (or
//! one of a few names for what is outside it), an HTTP status, a reason, a cause, an outcome.
//! Never a platform id, a key, an id from a path or anything else a client sent.

use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::store::Db;

/// Histogram buckets in seconds (latencies) and members (batch sizes): 100 µs to 10 s.
const BUCKETS: &[f64] = &[
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// How often the exporter folds recorded histogram values into its buckets.
const UPKEEP: Duration = Duration::from_secs(5);

// The names, in one place.
pub const HTTP_REQUESTS: &str = "bankd_http_requests_total";
pub const HTTP_DURATION: &str = "bankd_http_request_duration_seconds";
pub const HTTP_IN_FLIGHT: &str = "bankd_http_requests_in_flight";
pub const HTTP_REJECTED: &str = crate::api::REJECTED_METRIC;
pub const IDEMPOTENCY: &str = crate::idempotency::IDEMPOTENCY_METRIC;
pub const BUILD_INFO: &str = "bankd_build_info";
pub const LOG_DROPPED: &str = "bankd_log_lines_dropped_total";
pub const SQLITE_QUEUE: &str = "bankd_sqlite_writer_queue_depth";
pub const POSTGRES_POOL: &str = "bankd_postgres_pool_connections";
pub const POSTGRES_POOL_MAX: &str = "bankd_postgres_pool_max_connections";
pub const WEBHOOK_ATTEMPTS: &str = crate::webhook_worker::ATTEMPTS_METRIC;
pub const WEBHOOK_CLAIM_SIZE: &str = crate::webhook_worker::CLAIM_SIZE_METRIC;
pub const WEBHOOK_RECORD_SIZE: &str = crate::webhook_worker::RECORD_SIZE_METRIC;
pub const WEBHOOK_TRANSACTIONS: &str = crate::webhook_worker::TRANSACTIONS_METRIC;

/// The installed recorder, for scrapes.
#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
    process: metrics_process::Collector,
}

impl Metrics {
    /// Installs the process-wide recorder, describes every metric, records the build's
    /// identity, and starts the exporter's upkeep on the current runtime. `None` when a
    /// recorder was installed already (a second app in one process, e.g. in tests): the first
    /// one keeps recording.
    pub fn install(backend: &str) -> Option<Metrics> {
        let handle = PrometheusBuilder::new()
            .set_buckets(BUCKETS)
            .and_then(|b| {
                [
                    crate::store::metric_names::BATCH_SIZE,
                    WEBHOOK_CLAIM_SIZE,
                    WEBHOOK_RECORD_SIZE,
                ]
                .into_iter()
                .try_fold(b, |b, name| {
                    b.set_buckets_for_metric(
                        metrics_exporter_prometheus::Matcher::Full(name.to_owned()),
                        BATCH_BUCKETS,
                    )
                })
            })
            .ok()?
            .install_recorder()
            .ok()?;
        describe();
        let process = metrics_process::Collector::default();
        process.describe();
        metrics::gauge!(
            BUILD_INFO,
            "version" => env!("CARGO_PKG_VERSION"),
            "commit" => env!("BANKD_GIT_COMMIT"),
            "backend" => backend.to_owned(),
        )
        .set(1.0);
        let upkeep = handle.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP);
            loop {
                tick.tick().await;
                upkeep.run_upkeep();
            }
        });
        Some(Metrics { handle, process })
    }

    /// The scrape: values read at this moment (process, pools, the writer's queue), then
    /// everything in the text format.
    pub fn render(&self, db: &Db) -> String {
        self.process.collect();
        let pool = db.pool_stats();
        if let Some(queue) = pool.sqlite_writer_queue {
            metrics::gauge!(SQLITE_QUEUE).set(queue as f64);
        }
        if let Some(pg) = pool.postgres {
            metrics::gauge!(POSTGRES_POOL, "state" => "idle").set(f64::from(pg.idle));
            metrics::gauge!(POSTGRES_POOL, "state" => "in_use").set(f64::from(pg.in_use));
            metrics::gauge!(POSTGRES_POOL_MAX).set(f64::from(pg.max));
        }
        if let Some(dropped) = DROPPED_LOG_LINES.get() {
            metrics::counter!(LOG_DROPPED).absolute(dropped.dropped_lines() as u64);
        }
        self.handle.render()
    }
}

/// The log writer's count of lines it dropped because its queue was full.
static DROPPED_LOG_LINES: std::sync::OnceLock<tracing_appender::non_blocking::ErrorCounter> =
    std::sync::OnceLock::new();

/// Reports `counter` (the process's log writer) as `bankd_log_lines_dropped_total`.
pub fn count_dropped_log_lines(counter: tracing_appender::non_blocking::ErrorCounter) {
    let _ = DROPPED_LOG_LINES.set(counter);
}

/// HELP texts and units.
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        HTTP_REQUESTS,
        "Answered HTTP requests by the document's operationId and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time from a request's arrival to its answer, by operationId."
    );
    describe_gauge!(HTTP_IN_FLIGHT, "HTTP requests being served now.");
    describe_counter!(
        HTTP_REJECTED,
        "Requests refused before any handler ran, by reason (unauthorized, rate_limited, \
         invalid_request, too_large, route_not_found, method_not_allowed, \
         unsupported_media_type)."
    );
    describe_counter!(
        IDEMPOTENCY,
        "Requests with an Idempotency-Key by outcome: replayed, in_use (409), reused (422)."
    );
    describe_counter!(
        LOG_DROPPED,
        "Log lines dropped because the log writer's queue was full."
    );
    describe_gauge!(
        BUILD_INFO,
        "1, labelled with the build's version, commit and backend."
    );
    describe_store();
    describe_webhooks();
}

/// HELP texts of the delivery worker's metrics.
fn describe_webhooks() {
    use metrics::{describe_counter, describe_histogram};
    describe_counter!(
        WEBHOOK_ATTEMPTS,
        "Webhook delivery attempts made and recorded, by outcome (succeeded, failed)."
    );
    describe_counter!(
        WEBHOOK_TRANSACTIONS,
        "Write transactions of the delivery worker (each records outcomes, claims, or both)."
    );
    describe_histogram!(
        WEBHOOK_CLAIM_SIZE,
        "Due attempts leased per transaction of the delivery worker that claimed any."
    );
    describe_histogram!(
        WEBHOOK_RECORD_SIZE,
        "Attempt outcomes written per transaction of the delivery worker that recorded any."
    );
}

/// HELP texts and units of the storage layer's metrics.
fn describe_store() {
    use crate::store::metric_names as store;
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        SQLITE_QUEUE,
        "SQLite writes queued for the one writer or working in its open batch."
    );
    describe_histogram!(
        store::BATCH_SIZE,
        "Member writes per SQLite group commit (one fsync each)."
    );
    describe_histogram!(
        store::COMMIT_DURATION,
        Unit::Seconds,
        "Time in the COMMIT of a SQLite group commit (the log's write and fsync)."
    );
    describe_histogram!(
        store::CHECKPOINT_DURATION,
        Unit::Seconds,
        "Time of each SQLite checkpoint pass (off the writer)."
    );
    describe_gauge!(
        POSTGRES_POOL,
        "PostgreSQL pool connections by state (idle, in_use)."
    );
    describe_gauge!(POSTGRES_POOL_MAX, "The PostgreSQL pool's size limit.");
    describe_histogram!(
        store::ACQUIRE_WAIT,
        Unit::Seconds,
        "Time a PostgreSQL transaction waited for a pooled connection."
    );
    describe_counter!(
        store::RETRIES,
        "Transactions run again, by cause (serialization, deadlock, busy, batch_aborted, \
         disconnected)."
    );
    describe_counter!(
        store::EXHAUSTED,
        "Transactions whose every attempt conflicted (answered 503 transaction_conflict)."
    );
    describe_counter!(
        store::STORAGE_FULL,
        "Writes refused because the database could not grow (answered 503 storage_full)."
    );
}
