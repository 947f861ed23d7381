//! The HTTP edge: [`Bankd`] implements the generated `bank_api` traits.
//!
//! Handlers are thin: convert the generated input to domain values, call one domain function,
//! map the result (success → the `Ok` variant, failure → [`errors::fail`]). Rules live in
//! `crate::domain`; the only HTTP knowledge outside this module is in `crate::app`.

mod account_numbers;
mod ach_transfers;
mod bank_accounts;
mod book_transfers;
mod counterparties;
mod documents;
mod entities;
pub mod errors;
pub mod idempotent;
mod platform;
mod positive_pay;
mod simulations;

use bank_api::runtime::{Credentials, Hooks, RequestError};
use poem::{IntoResponse, Response};

use crate::app::AppState;
use crate::auth::{self, Principal};

/// The server: state shared by every handler.
pub struct Bankd {
    pub state: AppState,
    /// The document's routes, for `Allow` headers.
    pub routes: std::sync::Arc<PathTemplates>,
}

/// The document's path templates with their methods: to log `/bank-accounts/{bank_account_id}`
/// rather than ids, and to answer `Allow` on a 405.
pub struct PathTemplates(Vec<(Vec<String>, Vec<String>)>);

impl PathTemplates {
    pub fn from_document(doc: &serde_json::Value) -> Self {
        let mut t: Vec<(Vec<String>, Vec<String>)> = doc["paths"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(path, item)| {
                        let segments = path.split('/').map(str::to_owned).collect();
                        let methods = item
                            .as_object()
                            .map(|ops| ops.keys().map(|k| k.to_ascii_uppercase()).collect())
                            .unwrap_or_default();
                        (segments, methods)
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Literal segments before parameters, so `/entities/person` wins over `/entities/{id}`.
        t.sort_by_key(|(segs, _)| segs.iter().map(|s| s.starts_with('{')).collect::<Vec<_>>());
        PathTemplates(t)
    }

    fn find(&self, path: &str) -> Option<&(Vec<String>, Vec<String>)> {
        let segs: Vec<&str> = path.split('/').collect();
        self.0.iter().find(|(t, _)| {
            t.len() == segs.len()
                && t.iter()
                    .zip(&segs)
                    .all(|(a, b)| a.starts_with('{') || a == b)
        })
    }

    /// The template `path` matches, for logs.
    pub fn template(&self, path: &str) -> String {
        match self.find(path) {
            Some((t, _)) => t.join("/"),
            None => match path {
                "/healthz" | "/openapi.json" | "/openapi.yaml" => path.to_owned(),
                p if p.starts_with("/docs") => "/docs".to_owned(),
                _ => "(unmatched)".to_owned(),
            },
        }
    }

    /// The methods the document serves on `path` (`GET, PATCH`).
    pub fn allowed(&self, path: &str) -> Option<String> {
        self.find(path).map(|(_, m)| m.join(", "))
    }
}

impl Hooks for Bankd {
    type Principal = Principal;

    async fn authenticate(&self, credentials: Credentials) -> Result<Principal, RequestError> {
        let Credentials::Basic { username, password } = credentials;
        let Some(key) = auth::key_from_basic(&username, &password) else {
            return Err(RequestError::unauthorized());
        };
        match auth::authenticate(&self.state.db, key).await {
            Ok(Some(principal)) => Ok(principal),
            Ok(None) => Err(RequestError::unauthorized()),
            Err(e) => {
                let id = errors::request_id();
                tracing::error!(request_id = %id, error = %e, "authentication failed");
                Err(RequestError::internal(format!(
                    "internal error (request id {id})"
                )))
            }
        }
    }

    fn render_error(&self, error: RequestError, request: &poem::Request) -> Response {
        let (status, api) = errors::request_error(&error);
        let mut response = poem::web::Json(api.body())
            .with_status(status)
            .into_response();
        // RFC 9110: a 405 lists the methods the resource supports.
        if status == poem::http::StatusCode::METHOD_NOT_ALLOWED
            && let Some(allow) = self.routes.allowed(request.uri().path())
            && let Ok(value) = poem::http::HeaderValue::from_str(&allow)
        {
            response
                .headers_mut()
                .insert(poem::http::header::ALLOW, value);
        }
        if status == poem::http::StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                "WWW-Authenticate",
                poem::http::HeaderValue::from_static("Basic realm=\"bankd\""),
            );
        }
        response
    }
}
