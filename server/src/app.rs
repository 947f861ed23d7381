//! Builds the poem application: the single place where routes and middleware are assembled.
//!
//! Layers, outermost first: request id and one structured log line per request → request
//! timeout → the generated error renderer (every framework failure in the API's error schema)
//! → routes (`/healthz`, and the generated API with its documents).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bank_api::runtime::{BodyLimits, ErrorRenderer, RequestError};
use poem::http::{HeaderValue, StatusCode};
use poem::web::Json;
use poem::{Endpoint, EndpointExt, IntoResponse, Request, Response, get, handler};

use crate::api::errors::{self, REQUEST_ID};
use crate::api::{Bankd, PathTemplates};
use crate::clock::Clock;
use crate::config::Config;
use crate::store::Db;

/// What every handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub config: Arc<Config>,
    pub clock: Arc<dyn Clock>,
}

/// The HTTP application over `state`.
pub fn build(state: AppState) -> impl Endpoint<Output = Response> {
    let _ = errors::DOCS_BASE.set(format!("http://{}", state.config.listen));
    let limits = BodyLimits {
        json: 1024 * 1024,
        file: usize::try_from(state.config.max_document_bytes).unwrap_or(usize::MAX),
    };
    let timeout = Duration::from_secs(state.config.request_timeout_secs.max(1));
    let templates = Arc::new(PathTemplates::from_document(&bank_api::document()));
    let server = Arc::new(Bankd {
        state: state.clone(),
        routes: templates.clone(),
    });
    bank_api::routes(server.clone())
        .at("/healthz", get(healthz))
        .data(state)
        .data(limits)
        .with(ErrorRenderer {
            hooks: server.clone(),
        })
        .around(move |ep, req| {
            let server = server.clone();
            async move {
                match tokio::time::timeout(timeout, ep.call(req)).await {
                    Ok(result) => result,
                    Err(_) => {
                        let error = RequestError {
                            status: StatusCode::SERVICE_UNAVAILABLE,
                            kind: bank_api::RequestErrorKind::Other,
                            message: "request timed out".into(),
                            details: Default::default(),
                        };
                        let probe = Request::builder().finish();
                        Ok(bank_api::Hooks::render_error(&*server, error, &probe))
                    }
                }
            }
        })
        .around(move |ep, req| {
            let templates = templates.clone();
            async move { Ok(observe(ep, req, &templates).await) }
        })
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
    let started = Instant::now();
    let mut response = REQUEST_ID
        .scope(id.clone(), async move {
            match ep.call(req).await {
                Ok(r) => r.into_response(),
                Err(e) => e.into_response(),
            }
        })
        .await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", v);
    }
    tracing::info!(
        request_id = %id,
        method = %method,
        path = %template,
        status = response.status().as_u16(),
        latency_us = started.elapsed().as_micros() as u64,
        "request"
    );
    response
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
