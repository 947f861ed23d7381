//! What the server supplies once ([`Hooks`]: authentication and error rendering), and the
//! middleware that hands them to every request.

use std::future::Future;
use std::sync::Arc;

use poem::{Endpoint, IntoResponse, Request, Response};

use crate::{Credentials, ParameterIndex, RequestError};

/// What the server supplies once: how to authenticate, and how to render a refusal.
pub trait Hooks: Send + Sync + 'static {
    /// The authenticated caller handed to every secured operation.
    type Principal: Clone + Send + Sync + 'static;

    /// Checks the credentials of the first requirement alternative the request completes, before
    /// any parameter is parsed ([`Credentials::requirement`] says which; each scheme's credential
    /// comes with the alternative's scopes). `Err` answers that error (a 401 from
    /// [`RequestError::unauthorized`], or a 5xx when the check itself failed).
    ///
    /// By default every credential is refused (401): a document without security never asks,
    /// and one with security must say how its callers are known.
    fn authenticate(
        &self,
        credentials: Credentials,
    ) -> impl Future<Output = Result<Self::Principal, RequestError>> + Send {
        let _ = credentials;
        std::future::ready(Err(RequestError::unauthorized()))
    }

    /// Renders every refusal that happens before a handler runs, in the API's error schema.
    ///
    /// By default an RFC 9457 problem (`application/problem+json`, see [`problem`]); a server
    /// whose document declares its own error schema replaces it.
    fn render_error(&self, error: RequestError, request: &Request) -> Response {
        let _ = request;
        problem(&error)
    }
}

/// `error` as an RFC 9457 problem: `type` `about:blank`, the status's `title`, the `status`,
/// the message as `detail`, and each offending field with its message in `errors` (an extension
/// member: `[{"field": "limit", "detail": "..."}]`), as `application/problem+json`. A 401 gets
/// no `WWW-Authenticate` here: which challenge to send depends on the document's schemes.
pub fn problem(error: &RequestError) -> Response {
    let errors: Vec<serde_json::Value> = error
        .details
        .iter()
        .map(|(field, detail)| serde_json::json!({ "field": field, "detail": detail }))
        .collect();
    let mut body = serde_json::json!({
        "type": "about:blank",
        "title": error.status.canonical_reason().unwrap_or("Error"),
        "status": error.status.as_u16(),
        "detail": error.message,
    });
    if !errors.is_empty() {
        body["errors"] = errors.into();
    }
    Response::builder()
        .status(error.status)
        .content_type("application/problem+json")
        .body(body.to_string())
}

/// Hands the server's [`Hooks`] to the request (for [`Auth`], which authenticates each secured
/// operation before any of its parameters is parsed, so bad credentials are a 401 whatever else
/// is wrong), and refuses a declared header that is not text.
///
/// [`Auth`]: crate::Auth
pub struct AuthMiddleware<H> {
    pub hooks: Arc<H>,
    /// Header parameters some operation declares ([`ApiDocument::DECLARED_HEADERS`]).
    ///
    /// [`ApiDocument::DECLARED_HEADERS`]: crate::ApiDocument::DECLARED_HEADERS
    pub declared_headers: &'static [&'static str],
}

impl<H: Hooks, E: Endpoint> poem::Middleware<E> for AuthMiddleware<H> {
    type Output = AuthEndpoint<H, E>;

    fn transform(&self, ep: E) -> Self::Output {
        AuthEndpoint {
            hooks: self.hooks.clone(),
            declared_headers: self.declared_headers,
            inner: ep,
        }
    }
}

pub struct AuthEndpoint<H, E> {
    hooks: Arc<H>,
    declared_headers: &'static [&'static str],
    inner: E,
}

impl<H: Hooks, E: Endpoint> Endpoint for AuthEndpoint<H, E> {
    type Output = Response;

    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        req.extensions_mut().insert(self.hooks.clone());
        // A declared header that is present but not text would otherwise read as absent.
        for name in self.declared_headers {
            if req
                .headers()
                .get_all(*name)
                .iter()
                .any(|v| v.to_str().is_err())
            {
                return Err(
                    RequestError::invalid_field(*name, "must be printable ASCII text").into(),
                );
            }
        }
        self.inner.call(req).await.map(IntoResponse::into_response)
    }
}

/// Turns every framework error into the API's error body through [`Hooks::render_error`].
pub struct ErrorRenderer<H> {
    pub hooks: Arc<H>,
    /// The document's parameters: a refused parameter is answered together with every other
    /// that fails ([`ParameterIndex`]).
    pub parameters: Arc<ParameterIndex>,
}

impl<H> ErrorRenderer<H> {
    /// The renderer of `hooks` for the API `document` describes (as served).
    pub fn new(hooks: Arc<H>, document: &serde_json::Value) -> Self {
        ErrorRenderer {
            hooks,
            parameters: Arc::new(ParameterIndex::of(document)),
        }
    }
}

impl<H: Hooks, E: Endpoint> poem::Middleware<E> for ErrorRenderer<H> {
    type Output = ErrorRendererEndpoint<H, E>;

    fn transform(&self, ep: E) -> Self::Output {
        ErrorRendererEndpoint {
            hooks: self.hooks.clone(),
            parameters: self.parameters.clone(),
            inner: ep,
        }
    }
}

pub struct ErrorRendererEndpoint<H, E> {
    hooks: Arc<H>,
    parameters: Arc<ParameterIndex>,
    inner: E,
}

impl<H: Hooks, E: Endpoint> Endpoint for ErrorRendererEndpoint<H, E> {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        // The request is consumed by the inner endpoint; keep what the renderer may need.
        let mut probe = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone());
        for (name, value) in req.headers() {
            probe = probe.header(name.clone(), value.clone());
        }
        let probe = probe.finish();
        match self.inner.call(req).await {
            Ok(resp) => Ok(resp.into_response()),
            Err(err) => {
                let mut error = RequestError::from_poem(&err);
                if is_parameter_error(&err) {
                    error.add_failures(self.parameters.check(&probe));
                }
                Ok(self.hooks.render_error(error, &probe))
            }
        }
    }
}

/// Whether poem-openapi refused a parameter (it stops at the first).
fn is_parameter_error(err: &poem::Error) -> bool {
    err.is::<poem_openapi::error::ParseParamError>()
        || err.is::<poem_openapi::error::ParsePathError>()
}
