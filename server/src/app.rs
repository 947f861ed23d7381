//! Builds the poem application: the single place where routes and middleware are assembled.
//!
//! Layers, outermost first: request id and one structured log line per request → panic guard
//! (a panic anywhere below is a 500 in the API's error schema, and still gets its log line) →
//! request timeout → the generated error renderer (every framework failure in the API's error
//! schema) → routes (`/healthz`, `/readyz`, `/metrics`, `/console`, and the generated API with its
//! documents).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bank_api::runtime::{BodyLimits, ErrorRenderer};
use poem::http::{HeaderValue, Method, StatusCode};
use poem::middleware::CatchPanic;
use poem::web::Json;
use poem::{Endpoint, EndpointExt, IntoResponse, Request, Response, get, handler};

use crate::api::errors::{self, ApiError, REQUEST_ID, REQUEST_NOTES, RequestNotes};
use crate::api::{Bankd, PathTemplates};
use crate::clock::Clock;
use crate::config::Config;
use crate::metrics::{HTTP_DURATION, HTTP_IN_FLIGHT, HTTP_REQUESTS, Metrics};
use crate::store::{self, Db};

/// What every handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The rules over `db` and `clock`, what migrated handlers call.
    pub services: crate::domain::Services,
    pub db: Db,
    pub config: Arc<Config>,
    pub clock: Arc<dyn Clock>,
    /// The metrics recorder, when this process serves `/metrics`.
    pub metrics: Option<Metrics>,
}

/// How long `/readyz` waits for the database before it answers that it is not ready.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The handlers over `services`, with the served document's routes (for `Allow` headers).
pub fn handlers(services: crate::domain::Services) -> Bankd {
    Bankd {
        services,
        routes: Arc::new(PathTemplates::from_document(&bank_api_routes::document())),
    }
}

/// The HTTP application over `state`.
pub fn build(state: AppState) -> impl Endpoint<Output = Response> {
    let _ = errors::DOCS_BASE.set(format!("http://{}", state.config.listen));
    let limits = BodyLimits {
        json: 1024 * 1024,
        file: usize::try_from(state.config.max_document_bytes).unwrap_or(usize::MAX),
    };
    let timeout = Duration::from_secs(state.config.request_timeout_secs.max(1));
    let templates = Arc::new(PathTemplates::from_document(&bank_api_routes::document()));
    let server = Arc::new(Bankd {
        services: state.services.clone(),
        routes: templates.clone(),
    });
    let mut routes = bank_api_routes::routes(server.clone())
        .at("/healthz", get(healthz))
        .at("/readyz", get(readyz));
    if state.config.metrics_listen.is_none() && state.metrics.is_some() {
        routes = routes.at("/metrics", get(scrape));
    }
    if state.config.console {
        routes = routes.nest("/console", crate::console::routes());
    }
    let inner = routes
        .data(state)
        .data(limits)
        .with(ErrorRenderer::new(
            server.clone(),
            &bank_api_routes::document(),
        ))
        .around(move |ep, req| {
            let server = server.clone();
            async move {
                match tokio::time::timeout(timeout, ep.call(req)).await {
                    Ok(result) => result,
                    Err(_) => {
                        let error = errors::timeout_request_error();
                        let probe = Request::builder().finish();
                        Ok(bank_api::Hooks::render_error(&*server, error, &probe))
                    }
                }
            }
        });
    observed(inner, templates)
}

/// `/metrics` alone, for `metrics_listen`.
pub fn metrics_only(state: AppState) -> impl Endpoint<Output = Response> {
    poem::Route::new().at("/metrics", get(scrape)).data(state)
}

/// The outermost layers around `ep`: request id and log line, then the panic guard, so that a
/// panic is answered (500 `internal_error`) and logged like any other request.
fn observed<E: Endpoint + 'static>(
    ep: E,
    templates: Arc<PathTemplates>,
) -> impl Endpoint<Output = Response> {
    ep.with(CatchPanic::new().with_handler(panic_response))
        .around(move |ep, req| {
            let templates = templates.clone();
            async move { Ok(observe(ep, req, &templates).await) }
        })
}

/// A handler panicked: the shared 500 body (the request id only); the panic text goes to the log.
fn panic_response(panic: Box<dyn std::any::Any + Send>) -> Response {
    let text = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)");
    let error = ApiError::internal(&format!("handler panicked: {text}"));
    Json(error.body())
        .with_status(StatusCode::INTERNAL_SERVER_ERROR)
        .into_response()
}

/// Request id in, request id out, one log line per request.
async fn observe<E: Endpoint>(ep: Arc<E>, mut req: Request, templates: &PathTemplates) -> Response {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
        // Never echo (or log) something shaped like an API key sent in the wrong header.
        .filter(|v| !v.starts_with("test_") && !v.starts_with("live_"))
        .map(str::to_owned)
        .unwrap_or_else(new_request_id);
    if let Ok(v) = HeaderValue::from_str(&id) {
        req.headers_mut().insert("x-request-id", v);
    }
    let method = req.method().clone();
    let template = templates.template(req.uri().path());
    let operation = templates.operation(method.as_str(), req.uri().path());
    let started = Instant::now();
    let reads_only = method == Method::GET || method == Method::HEAD;
    let in_flight = InFlight::enter();
    let (mut response, notes) = REQUEST_ID
        .scope(id.clone(), async move {
            let call = async move {
                match ep.call(req).await {
                    Ok(r) => r.into_response(),
                    Err(e) => e.into_response(),
                }
            };
            let call = store::request_connection(call);
            let call = async move {
                let response = if reads_only {
                    store::request_snapshot(call).await
                } else {
                    call.await
                };
                let notes = REQUEST_NOTES.with(|n| n.take());
                (response, notes)
            };
            REQUEST_NOTES.scope(Default::default(), call).await
        })
        .await;
    drop(in_flight);
    let status = response.status();
    let latency = started.elapsed();
    record_request(operation, status_label(status), latency);
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", v);
    }
    add_headers(&mut response, &notes);
    let platform = notes.platform;
    tracing::info!(
        request_id = %id,
        method = %method,
        path = %template,
        operation,
        status = status.as_u16(),
        latency_us = latency.as_micros() as u64,
        platform_id = platform.as_deref().unwrap_or("-"),
        "request"
    );
    response
}

/// The headers the generated response enums leave to the server: a 503 (a transaction conflict,
/// a request timeout, a full storage, or `/readyz` not ready) and a 429 tell when to come back,
/// and while rate limits are on every authenticated answer tells the key's limit.
fn add_headers(response: &mut Response, notes: &RequestNotes) {
    use poem::http::header::RETRY_AFTER;
    let status = response.status();
    let headers = response.headers_mut();
    if let Some(limit) = &notes.rate_limit {
        let policy = format!(
            "\"per-key\";q={};w={}",
            limit.limit.burst,
            limit.limit.window_secs()
        );
        let state = format!("\"per-key\";r={};t={}", limit.remaining, limit.reset_secs);
        for (name, value) in [("ratelimit-policy", policy), ("ratelimit", state)] {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            headers.insert(RETRY_AFTER, HeaderValue::from(limit.retry_after_secs));
        }
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        let secs = notes.retry_after.unwrap_or(errors::RETRY_AFTER_SECS);
        headers
            .entry(RETRY_AFTER)
            .or_insert_with(|| HeaderValue::from(secs));
    }
}

/// A request's metric handles by (operation, status).
type RequestHandles =
    std::collections::HashMap<(&'static str, &'static str), (metrics::Counter, metrics::Histogram)>;

thread_local! {
    /// Each worker thread's handles on the request metrics: after the first request of a kind,
    /// recording it takes no lock, no allocation and no lookup in the exporter's registry.
    /// Bounded by the document's operations times the statuses.
    static REQUEST_METRICS: std::cell::RefCell<RequestHandles> = Default::default();
}

/// Counts a request by operation and status and records its latency.
fn record_request(operation: &'static str, status: &'static str, latency: Duration) {
    REQUEST_METRICS.with(|handles| {
        let mut handles = handles.borrow_mut();
        let (count, time) = handles.entry((operation, status)).or_insert_with(|| {
            (
                metrics::counter!(HTTP_REQUESTS, "operation" => operation, "status" => status),
                metrics::histogram!(HTTP_DURATION, "operation" => operation),
            )
        });
        count.increment(1);
        time.record(latency.as_secs_f64());
    });
}

/// Counts a request as in flight until dropped (also when the client goes away mid-request).
struct InFlight;

/// The in-flight gauge's handle, taken once (bankd installs its recorder before serving).
fn in_flight_gauge() -> &'static metrics::Gauge {
    static GAUGE: std::sync::OnceLock<metrics::Gauge> = std::sync::OnceLock::new();
    GAUGE.get_or_init(|| metrics::gauge!(HTTP_IN_FLIGHT))
}

impl InFlight {
    fn enter() -> InFlight {
        in_flight_gauge().increment(1.0);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight_gauge().decrement(1.0);
    }
}

/// A status as a label value (statuses are a bounded set). The statuses the API answers are
/// spelled out, so that a request takes no lock for its label.
fn status_label(status: StatusCode) -> &'static str {
    match status.as_u16() {
        200 => "200",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        409 => "409",
        413 => "413",
        415 => "415",
        422 => "422",
        429 => "429",
        500 => "500",
        503 => "503",
        _ => crate::api::intern(status.as_str()),
    }
}

/// Readiness: 200 when the database answers, every migration is applied and writes fit; 503
/// with the reason otherwise (`storage_full` from a write that found the storage full until a
/// write fits again). `/healthz` stays liveness only.
#[handler]
async fn readyz(state: poem::web::Data<&AppState>) -> Response {
    let reason = if storage_still_full(&state).await {
        Some("storage_full".to_owned())
    } else {
        database_not_ready(&state).await
    };
    match reason {
        None => Json(serde_json::json!({ "status": "ready" })).into_response(),
        Some(reason) => Json(serde_json::json!({ "status": "not_ready", "reason": reason }))
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
            .into_response(),
    }
}

/// How long `/readyz` answers `storage_full` on the word of a failed write alone; after that it
/// writes a probe row to learn whether writes fit again (a server out of rotation gets no
/// client writes to tell it).
const STORAGE_PROBE_AFTER: Duration =
    Duration::from_secs(errors::STORAGE_FULL_RETRY_AFTER_SECS as u64);

/// Whether a write found the storage full and none has committed since (nor a probe write,
/// once [`STORAGE_PROBE_AFTER`] has passed).
async fn storage_still_full(state: &AppState) -> bool {
    match state.db.storage_full_for() {
        None => return false,
        Some(since) if since < STORAGE_PROBE_AFTER => return true,
        Some(_) => {}
    }
    let probe = state.db.probe_storage(state.clock.now());
    !matches!(tokio::time::timeout(READY_TIMEOUT, probe).await, Ok(Ok(())))
}

/// Why the database cannot serve: it does not answer, or migrations are missing.
async fn database_not_ready(state: &AppState) -> Option<String> {
    match tokio::time::timeout(READY_TIMEOUT, state.db.pending_migrations()).await {
        Ok(Ok(0)) => None,
        Ok(Ok(n)) => Some(format!("{n} database migrations are not applied")),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the database does not answer");
            Some("the database does not answer".to_owned())
        }
        Err(_) => Some(format!(
            "the database did not answer within {} ms",
            READY_TIMEOUT.as_millis()
        )),
    }
}

/// The Prometheus scrape.
#[handler]
fn scrape(state: poem::web::Data<&AppState>) -> Response {
    match &state.metrics {
        Some(m) => m
            .render(&state.db)
            .with_content_type("text/plain; version=0.0.4; charset=utf-8")
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn new_request_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    format!("req_{:016x}{:016x}", rng.r#gen::<u64>(), rng.r#gen::<u64>())
}

/// Liveness: the process serves requests. Deliberately does not touch the database, so a slow
/// database does not get healthy processes restarted.
#[handler]
fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Mutex;

    use serde_json::{Value, json};

    use super::*;

    /// A log sink the test can read back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().expect("log lock")).into_owned()
        }
    }

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log lock").extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    #[handler]
    fn boom() -> &'static str {
        panic!("boom: SELECT secret FROM cause")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_internal_error_and_still_logs_its_request_line() {
        let log = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(log.clone())
            .with_ansi(false)
            .finish();
        // The current-thread test runtime polls the handler on this thread.
        let _guard = tracing::subscriber::set_default(subscriber);
        let templates = Arc::new(PathTemplates::from_document(
            &json!({"paths": {"/boom": {"get": {}}}}),
        ));
        let ep = observed(poem::Route::new().at("/boom", get(boom)), templates);

        let request = Request::builder()
            .uri_str("/boom")
            .header("x-request-id", "t-panic")
            .finish();
        let response = ep.call(request).await.expect("an answer, not an error");

        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            response
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok()),
            Some("t-panic")
        );
        let bytes = response.into_body().into_vec().await.expect("body");
        let body: Value = serde_json::from_slice(&bytes).expect("a JSON body");
        assert_eq!(body["type"], "server_error", "{body}");
        assert_eq!(body["code"], "internal_error", "{body}");
        assert_eq!(body["message"], "internal error (request id t-panic)");
        assert_eq!(body["details"], Value::Null, "{body}");
        assert!(body["documentation_url"].is_string(), "{body}");

        let text = log.text();
        let request_lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("bankd::app: request "))
            .collect();
        assert_eq!(request_lines.len(), 1, "one request line in:\n{text}");
        for field in [
            "request_id=t-panic",
            "method=GET",
            "path=/boom",
            "status=500",
        ] {
            assert!(request_lines[0].contains(field), "{field} in {text}");
        }
        // The cause is in the log, with the request id, never in the body.
        assert!(
            text.lines()
                .any(|l| l.contains("request_id=t-panic") && l.contains("SELECT secret")),
            "the panic's text is logged with the request id:\n{text}"
        );
    }
}
