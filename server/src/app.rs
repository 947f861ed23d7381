//! Builds the poem application: the single place where routes are assembled.

use std::sync::Arc;

use poem::web::Json;
use poem::{Endpoint, EndpointExt, Route, get, handler};

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

/// The HTTP application over `state`. The API routes (generated `bank_api::server::Api` over the
/// server's trait implementations) are mounted here.
pub fn build(state: AppState) -> impl Endpoint {
    Route::new().at("/healthz", get(healthz)).data(state)
}

/// Liveness: the process serves requests. Deliberately does not touch the database, so a slow
/// database does not get healthy processes restarted.
#[handler]
fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use crate::store::StoreOptions;
    use poem::http::StatusCode;

    #[tokio::test]
    async fn healthz_answers_ok() {
        let db = Db::connect("sqlite::memory:", &StoreOptions::default())
            .await
            .expect("connect");
        let app = build(AppState {
            db,
            config: Arc::new(Config::default()),
            clock: Arc::new(SystemClock),
        });
        let response = app
            .get_response(poem::Request::builder().uri_str("/healthz").finish())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().into_string().await.expect("body");
        assert_eq!(body, r#"{"status":"ok"}"#);
    }
}
