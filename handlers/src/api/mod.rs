//! The HTTP edge: [`Bankd`] implements the generated `bank_api` traits.
//!
//! Handlers are thin: convert the generated input to domain values, call one domain function,
//! map the result (success → the `Ok` variant, failure → [`errors::fail`]). Rules live in
//! `crate::domain`; the only HTTP knowledge outside this module is in `crate::app`.

mod account_numbers;
mod ach_transfers;
mod bank_accounts;
mod book_transfers;
mod convert;
mod counterparties;
mod documents;
mod entities;
pub mod errors;
mod events;
pub mod idempotent;
mod platform;
mod positive_pay;
mod simulations;
mod webhooks;

use bank_api::runtime::{Credential, Credentials, Hooks, RequestError};
use poem::{IntoResponse, Response};

use crate::auth::{self, Principal};
use crate::domain::{Admission, Fault, Services};

/// The server: state shared by every handler.
pub struct Bankd {
    /// The rules, as services that own their transactions.
    pub services: Services,
    /// The document's routes, for `Allow` headers.
    pub routes: std::sync::Arc<PathTemplates>,
}

/// The document's path templates with their methods and operation ids: to log
/// `/bank-accounts/{bank_account_id}` rather than ids, to label metrics by operation, and to
/// answer `Allow` on a 405.
pub struct PathTemplates(Vec<Route>);

/// One path of the document.
struct Route {
    segments: Vec<String>,
    /// (`GET`, its operation id), in the document's order.
    methods: Vec<(String, &'static str)>,
}

impl Route {
    /// Whether the template matches a path's segments. A parameter stands for one non-empty
    /// segment: `/bank-accounts/` (a trailing slash) is not `/bank-accounts/{bank_account_id}`.
    fn matches(&self, segs: &[&str]) -> bool {
        self.segments.len() == segs.len()
            && self
                .segments
                .iter()
                .zip(segs)
                .all(|(a, b)| a == b || (a.starts_with('{') && !b.is_empty()))
    }
}

/// The label of requests outside the document's operations, by path.
fn unlisted_operation(path: &str) -> &'static str {
    match path {
        "/healthz" => "healthz",
        "/readyz" => "readyz",
        "/metrics" => "metrics",
        "/openapi.json" | "/openapi.yaml" => "openapi",
        p if p.starts_with("/docs") => "docs",
        _ => "unmatched",
    }
}

/// `text` as a `&'static str`, leaked once per distinct value (operation ids of documents and
/// HTTP statuses: bounded sets).
pub fn intern(text: &str) -> &'static str {
    static INTERNED: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut set = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = set.get(text) {
        return found;
    }
    let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
    set.insert(leaked);
    leaked
}

impl PathTemplates {
    pub fn from_document(doc: &serde_json::Value) -> Self {
        let route = |(path, item): (&String, &serde_json::Value)| Route {
            segments: path.split('/').map(str::to_owned).collect(),
            methods: item
                .as_object()
                .map(|ops| {
                    ops.iter()
                        .map(|(method, op)| {
                            let id = op["operationId"].as_str().unwrap_or(method);
                            (method.to_ascii_uppercase(), intern(id))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        let mut routes: Vec<Route> = doc["paths"]
            .as_object()
            .map(|m| m.iter().map(route).collect())
            .unwrap_or_default();
        // Literal segments before parameters, so `/entities/person` wins over `/entities/{id}`.
        routes.sort_by_key(|r| {
            r.segments
                .iter()
                .map(|s| s.starts_with('{'))
                .collect::<Vec<_>>()
        });
        PathTemplates(routes)
    }

    fn find(&self, path: &str) -> Option<&Route> {
        let segs: Vec<&str> = path.split('/').collect();
        self.0.iter().find(|r| r.matches(&segs))
    }

    /// The operation id that `method` on `path` serves, or a fixed name for what is outside the
    /// document's operations; never anything taken from the request itself.
    pub fn operation(&self, method: &str, path: &str) -> &'static str {
        match self.find(path) {
            Some(route) => route
                .methods
                .iter()
                .find(|(m, _)| m == method)
                .map_or("unmatched", |(_, id)| id),
            None => unlisted_operation(path),
        }
    }

    /// The template `path` matches, for logs.
    pub fn template(&self, path: &str) -> String {
        match self.find(path) {
            Some(route) => route.segments.join("/"),
            None => match path {
                "/healthz" | "/readyz" | "/metrics" | "/openapi.json" | "/openapi.yaml" => {
                    path.to_owned()
                }
                p if p.starts_with("/docs") => "/docs".to_owned(),
                _ => "(unmatched)".to_owned(),
            },
        }
    }

    /// The methods the document serves on `path` (`GET, PATCH`).
    pub fn allowed(&self, path: &str) -> Option<String> {
        self.find(path).map(|route| {
            let methods: Vec<&str> = route.methods.iter().map(|(m, _)| m.as_str()).collect();
            methods.join(", ")
        })
    }
}

/// The API key an HTTP Basic credential carries (the document's one scheme, `BasicAuth`).
fn basic_key(credentials: &Credentials) -> Option<&str> {
    credentials
        .schemes
        .iter()
        .find_map(|s| match &s.credential {
            Credential::Basic { username, password } => auth::key_from_basic(username, password),
            _ => None,
        })
}

impl Hooks for Bankd {
    type Principal = Principal;

    async fn authenticate(&self, credentials: Credentials) -> Result<Principal, RequestError> {
        let Some(key) = basic_key(&credentials) else {
            return Err(RequestError::unauthorized());
        };
        match self.services.admit(key).await {
            Ok(Admission::Admitted {
                principal,
                decision,
            }) => {
                errors::note_platform(principal.platform_id.as_str());
                if let Some(decision) = decision {
                    errors::note_rate_limit(decision);
                }
                Ok(principal)
            }
            Ok(Admission::Limited {
                decision,
                platform_id,
            }) => {
                errors::note_platform(&platform_id);
                errors::note_rate_limit(decision);
                Err(errors::rate_limited_request_error())
            }
            Ok(Admission::Unknown) => Err(RequestError::unauthorized()),
            Err(Fault::Conflict(_)) => Err(errors::conflict_request_error()),
            Err(Fault::Busy(e)) => {
                let id = errors::request_id();
                tracing::warn!(request_id = %id, error = %e, "authentication waited too long");
                Err(errors::timeout_request_error())
            }
            Err(Fault::Unavailable { detail, .. }) => {
                let id = errors::request_id();
                tracing::warn!(request_id = %id, error = %detail, "authentication: database unavailable");
                Err(errors::unavailable_request_error())
            }
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
        if status.is_client_error() {
            metrics::counter!(REJECTED_METRIC, "reason" => rejection(&error)).increment(1);
        }
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

/// Requests refused before any handler ran, by reason (`crate::metrics` serves it).
pub const REJECTED_METRIC: &str = "bankd_http_rejected_total";

/// The reason label of a refusal before any handler ran.
fn rejection(error: &RequestError) -> &'static str {
    use bank_api::runtime::RequestErrorKind as K;
    match error.kind {
        K::Unauthorized => "unauthorized",
        K::InvalidRequest => "invalid_request",
        K::TooLarge => "too_large",
        K::RouteNotFound => "route_not_found",
        K::MethodNotAllowed => "method_not_allowed",
        K::UnsupportedMediaType => "unsupported_media_type",
        K::Other if error.status == poem::http::StatusCode::TOO_MANY_REQUESTS => "rate_limited",
        K::Other => "other",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::PathTemplates;

    /// The served document: bankd's is OpenAPI 3.1, served as written.
    fn served() -> serde_json::Value {
        serde_json::from_str(bank_api::SOURCE_DOCUMENT).expect("the source document is JSON")
    }

    #[test]
    fn literal_segments_beat_parameters_whatever_the_document_order() {
        // Parameters first on purpose: the document's order must not decide.
        let t = PathTemplates::from_document(&json!({"paths": {
            "/entities/{entity_id}": {"get": {}, "delete": {}},
            "/entities/person/{entity_id}": {"patch": {}},
            "/entities/person": {"post": {}},
            "/entities": {"get": {}},
        }}));
        assert_eq!(t.template("/entities/person"), "/entities/person");
        assert_eq!(t.allowed("/entities/person").as_deref(), Some("POST"));
        assert_eq!(t.template("/entities/enti_1"), "/entities/{entity_id}");
        assert_eq!(
            t.allowed("/entities/enti_1").as_deref(),
            Some("GET, DELETE")
        );
        assert_eq!(
            t.template("/entities/person/enti_1"),
            "/entities/person/{entity_id}"
        );
        assert_eq!(t.template("/entities"), "/entities");
    }

    #[test]
    fn the_served_document_logs_templates_never_ids() {
        let t = PathTemplates::from_document(&served());
        for (path, template) in [
            ("/entities/person", "/entities/person"),
            ("/entities/business", "/entities/business"),
            ("/entities/person/enti_x", "/entities/person/{entity_id}"),
            ("/entities/enti_x", "/entities/{entity_id}"),
            (
                "/entities/enti_x/associated-persons",
                "/entities/{entity_id}/associated-persons",
            ),
            ("/bank-accounts/bacc_x", "/bank-accounts/{bank_account_id}"),
            (
                "/bank-accounts/bacc_x/account-numbers",
                "/bank-accounts/{bank_account_id}/account-numbers",
            ),
            (
                "/account-numbers/acno_x",
                "/account-numbers/{account_number_id}",
            ),
            (
                "/transfers/book/book_x/clear",
                "/transfers/book/{book_transfer_id}/clear",
            ),
        ] {
            assert_eq!(t.template(path), template, "{path}");
        }
    }

    #[test]
    fn requests_are_labelled_by_the_documents_operation_id_and_nothing_they_carry() {
        let t = PathTemplates::from_document(&served());
        for (method, path, operation) in [
            ("GET", "/bank-accounts/bacc_x", "get_bank_account"),
            ("PATCH", "/bank-accounts/bacc_x", "update_bank_account"),
            ("POST", "/entities/person", "create_person_entity"),
            ("GET", "/entities", "list_entities"),
            ("PUT", "/entities", "unmatched"),
            ("GET", "/bank-accounts/bacc_x/extra", "unmatched"),
            ("GET", "/healthz", "healthz"),
            ("GET", "/readyz", "readyz"),
            ("GET", "/metrics", "metrics"),
            ("GET", "/docs/index.html", "docs"),
        ] {
            assert_eq!(t.operation(method, path), operation, "{method} {path}");
        }
    }

    #[test]
    fn unmatched_paths_and_trailing_slashes_log_no_template() {
        let t = PathTemplates::from_document(&json!({"paths": {
            "/bank-accounts": {"get": {}},
            "/bank-accounts/{bank_account_id}": {"get": {}},
        }}));
        for path in [
            "/nope",
            "/bank-accounts/",
            "/bank-accounts/bacc_x/",
            "/bank-accounts//",
            "/bank-accounts/bacc_x/extra",
            "",
        ] {
            assert_eq!(t.template(path), "(unmatched)", "{path:?}");
            assert_eq!(t.allowed(path), None, "{path:?}");
        }
        // Paths outside the document that the server serves keep their own name.
        assert_eq!(t.template("/healthz"), "/healthz");
        assert_eq!(t.template("/docs/index.html"), "/docs");
    }
}
