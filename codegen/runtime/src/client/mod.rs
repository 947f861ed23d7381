//! The client half (feature `client`): what every generated `client::Client` shares.
//!
//! A generated client writes each operation's input into a [`Request`] (path, query, header and
//! cookie parameters in their styles, the body in its media type) and reads the answer back
//! into the operation's own response enum, the one its server answers with. Everything that is
//! the same for every operation lives here: the credentials given once and applied by each
//! operation's security requirements, the `Idempotency-Key` generated when the caller gives
//! none, the retries of 429 and 503 for requests that are safe to repeat, the hooks around each
//! attempt, and the errors a caller can act on ([`Error`]).

mod encode;
mod items;
pub mod paginate;
pub mod webhook;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use encode::{ParamStyle, PathStyle};
pub use futures_util::Stream;
pub use paginate::{Page, PageError, pages};
pub use reqwest;
pub use reqwest::StatusCode;
pub use reqwest::header::HeaderMap;

use reqwest::header::{HeaderName, HeaderValue};

use crate::security::{Requirement, SchemeKind, SecuritySchemeDef};

/// What a generated client knows of one operation.
#[derive(Debug)]
pub struct Operation {
    /// `operationId` (or the name derived from method and path).
    pub id: &'static str,
    /// As sent (`GET`, `QUERY`, ...).
    pub method: &'static str,
    /// The path template as the document writes it (`/pets/{pet_id}`).
    pub path: &'static str,
    /// Its security requirements, alternatives in document order (empty: none).
    pub security: &'static [Requirement],
    /// The name of its `Idempotency-Key` header parameter, when it declares one.
    pub idempotency_key: Option<&'static str>,
    /// Whether a success may be a stream of items (OpenAPI 3.2's `itemSchema`): such a body,
    /// when it comes in a stream format, is read as it arrives.
    pub streams: bool,
}

impl Operation {
    /// Whether sending it twice has the effect of sending it once: an idempotent method, or
    /// a request carrying an idempotency key.
    fn safe_to_repeat(&self, keyed: bool) -> bool {
        keyed
            || matches!(
                self.method,
                "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE" | "QUERY"
            )
    }
}

/// A credential given once to the client, applied wherever an operation's requirement names a
/// scheme it fits.
#[derive(Clone)]
enum Secret {
    Basic {
        username: String,
        password: String,
    },
    /// A bearer token, an API key, or the rest of another `http` scheme's header.
    Value(String),
}

/// How a client is set up: where the API is, the credentials, retries, timeouts and hooks.
#[derive(Clone)]
pub struct Config {
    base_url: String,
    http: Option<reqwest::Client>,
    /// (scheme name, secret); the name `*basic` / `*bearer` stands for any scheme of that kind.
    secrets: Vec<(String, Secret)>,
    retries: u32,
    max_retry_delay: Duration,
    timeout: Option<Duration>,
    hooks: Vec<Arc<dyn Hook>>,
}

impl Config {
    /// A client of the API at `base_url` (`http://127.0.0.1:8080`, or with a path prefix),
    /// with a default `reqwest::Client`, 2 retries within 30 s and no timeout of its own.
    pub fn new(base_url: impl Into<String>) -> Self {
        Config {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            http: None,
            secrets: Vec::new(),
            retries: 2,
            max_retry_delay: Duration::from_secs(30),
            timeout: None,
            hooks: Vec::new(),
        }
    }

    /// Sends through `http` (its TLS, proxies, connection pool and default headers).
    pub fn http(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// Credentials of every `http` `basic` scheme.
    pub fn basic_auth(mut self, username: impl Into<String>, password: impl Into<String>) -> Self {
        self.secrets.push((
            "*basic".into(),
            Secret::Basic {
                username: username.into(),
                password: password.into(),
            },
        ));
        self
    }

    /// The token of every `bearer`, `oauth2` and `openIdConnect` scheme.
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.secrets
            .push(("*bearer".into(), Secret::Value(token.into())));
        self
    }

    /// The credential of the scheme named `scheme` in the document: an API key's value, a
    /// bearer token, or the rest of another `http` scheme's `Authorization` header. Takes
    /// precedence over [`Config::basic_auth`] and [`Config::bearer`] for that scheme.
    pub fn credential(mut self, scheme: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets
            .push((scheme.into(), Secret::Value(value.into())));
        self
    }

    /// Basic credentials for the scheme named `scheme` only.
    pub fn basic_for(
        mut self,
        scheme: impl Into<String>,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        self.secrets.push((
            scheme.into(),
            Secret::Basic {
                username: username.into(),
                password: password.into(),
            },
        ));
        self
    }

    /// How many times a request answered 429 or 503 is sent again (0: never), when it is safe
    /// to repeat. Each waits the answer's `Retry-After` (else 0.5 s, doubling), and none waits
    /// longer than [`Config::max_retry_delay`]: a longer `Retry-After` is answered as it came.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    pub fn max_retry_delay(mut self, delay: Duration) -> Self {
        self.max_retry_delay = delay;
        self
    }

    /// Each attempt's limit, from sending to the last byte of the answer ([`Error::Timeout`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Called before and after each attempt.
    pub fn hook(mut self, hook: impl Hook) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    fn secret(&self, scheme: &SecuritySchemeDef) -> Option<&Secret> {
        let fallback = match scheme.kind {
            SchemeKind::Basic => "*basic",
            SchemeKind::Bearer => "*bearer",
            _ => "",
        };
        let found = |name: &str| {
            self.secrets
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s)
        };
        found(scheme.name).or_else(|| found(fallback))
    }
}

/// Called around each attempt of each request: tracing, metrics, a header of your own.
pub trait Hook: Send + Sync + 'static {
    /// Before attempt `attempt` (1 for the first) is sent; may change the request.
    fn before(&self, operation: &Operation, attempt: u32, request: &mut reqwest::Request) {
        let _ = (operation, attempt, request);
    }

    /// After attempt `attempt`: what came back (or why nothing did) and how long it took.
    fn after(&self, operation: &Operation, attempt: u32, outcome: Outcome<'_>, elapsed: Duration) {
        let _ = (operation, attempt, outcome, elapsed);
    }
}

/// What an attempt ended with, as a [`Hook`] sees it.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    Answered(&'a Received),
    Failed(&'a Error),
}

/// An answer as received: status, headers and body bytes. A streamed success of an operation
/// that declares one is the exception: its `body` is empty and its items are read as they
/// arrive (what a hook's `after` sees then is the head alone).
#[derive(Debug, Clone)]
pub struct Received {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    live: Option<items::Live>,
}

impl Received {
    /// The header `name` as text (`None`: absent or not text).
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }

    /// The media type of the body, lowercased without parameters (empty without one).
    pub fn media_type(&self) -> String {
        self.header("content-type")
            .and_then(|c| c.split(';').next().map(|m| m.trim().to_ascii_lowercase()))
            .unwrap_or_default()
    }
}

/// Why a call did not give one of the operation's declared responses. Every variant that
/// received something keeps all of it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The input could not be written as the document says (a value that does not serialise,
    /// a header value that is not text); nothing was sent.
    Request {
        operation: &'static str,
        message: String,
    },
    /// Nothing came back: the connection failed or broke.
    Transport {
        operation: &'static str,
        source: reqwest::Error,
    },
    /// No whole answer within [`Config::timeout`].
    Timeout {
        operation: &'static str,
        source: reqwest::Error,
    },
    /// A status the document does not declare for the operation.
    UnexpectedStatus {
        operation: &'static str,
        received: Box<Received>,
    },
    /// A declared status whose body does not match its schema (or lacks a required header).
    InvalidResponse {
        operation: &'static str,
        received: Box<Received>,
        reason: String,
    },
}

impl Error {
    /// What was received, for the variants that received something.
    pub fn received(&self) -> Option<&Received> {
        match self {
            Error::UnexpectedStatus { received, .. } | Error::InvalidResponse { received, .. } => {
                Some(received)
            }
            _ => None,
        }
    }

    pub fn operation(&self) -> &'static str {
        match self {
            Error::Request { operation, .. }
            | Error::Transport { operation, .. }
            | Error::Timeout { operation, .. }
            | Error::UnexpectedStatus { operation, .. }
            | Error::InvalidResponse { operation, .. } => operation,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Request { operation, message } => {
                write!(
                    f,
                    "{operation}: the request could not be written: {message}"
                )
            }
            Error::Transport { operation, source } => {
                write!(f, "{operation}: no answer: {source}")
            }
            Error::Timeout { operation, .. } => write!(f, "{operation}: timed out"),
            Error::UnexpectedStatus {
                operation,
                received,
            } => write!(
                f,
                "{operation}: status {} is not declared ({} bytes of body)",
                received.status,
                received.body.len()
            ),
            Error::InvalidResponse {
                operation,
                received,
                reason,
            } => write!(
                f,
                "{operation}: the {} answer does not match the document: {reason}",
                received.status
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Transport { source, .. } | Error::Timeout { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The shared part of a generated client: cheap to clone.
#[derive(Clone)]
pub struct Core {
    config: Arc<Config>,
    http: reqwest::Client,
    schemes: &'static [SecuritySchemeDef],
}

impl Core {
    /// A client of the document whose security schemes are `schemes`.
    pub fn new(config: Config, schemes: &'static [SecuritySchemeDef]) -> Self {
        let http = config.http.clone().unwrap_or_default();
        Core {
            config: Arc::new(config),
            http,
            schemes,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn base_url(&self) -> &str {
        &self.config.base_url
    }

    /// Sends `request` (again after a 429 or 503, when it is safe to repeat) and returns the
    /// answer, whatever its status.
    pub async fn send(&self, mut request: Request) -> Result<Received, Error> {
        let op = request.operation;
        self.apply_credentials(&mut request)?;
        let keyed = match op.idempotency_key {
            Some(name) => {
                if !request.has_header(name) {
                    request.header_text(name, new_idempotency_key())?;
                }
                true
            }
            None => false,
        };
        let repeatable = op.safe_to_repeat(keyed);
        let mut attempt = 1;
        loop {
            let built = self.build(&request)?;
            let received = self.attempt(op, attempt, built).await?;
            let status = received.status.as_u16();
            if !(repeatable && attempt <= self.config.retries && (status == 429 || status == 503)) {
                return Ok(received);
            }
            let delay = retry_delay(&received, attempt);
            if delay > self.config.max_retry_delay {
                return Ok(received);
            }
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        op: &'static Operation,
        attempt: u32,
        mut built: reqwest::Request,
    ) -> Result<Received, Error> {
        for hook in &self.config.hooks {
            hook.before(op, attempt, &mut built);
        }
        let started = Instant::now();
        let result = self.exchange(op, built).await;
        let outcome = match &result {
            Ok(r) => Outcome::Answered(r),
            Err(e) => Outcome::Failed(e),
        };
        for hook in &self.config.hooks {
            hook.after(op, attempt, outcome, started.elapsed());
        }
        result
    }

    async fn exchange(
        &self,
        op: &'static Operation,
        built: reqwest::Request,
    ) -> Result<Received, Error> {
        let failed = |source: reqwest::Error| {
            if source.is_timeout() {
                Error::Timeout {
                    operation: op.id,
                    source,
                }
            } else {
                Error::Transport {
                    operation: op.id,
                    source,
                }
            }
        };
        let response = self.http.execute(built).await.map_err(failed)?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut received = Received {
            status,
            headers,
            body: Vec::new(),
            live: None,
        };
        if op.streams && status.is_success() && items::is_stream_media(&received.media_type()) {
            received.live = Some(items::Live::new(response));
        } else {
            received.body = response.bytes().await.map_err(failed)?.to_vec();
        }
        Ok(received)
    }

    fn build(&self, request: &Request) -> Result<reqwest::Request, Error> {
        let op = request.operation;
        let mut url = format!("{}{}", self.config.base_url, request.path);
        if !request.query.is_empty() {
            url.push('?');
            url.push_str(&request.query.join("&"));
        }
        let method =
            reqwest::Method::from_bytes(op.method.as_bytes()).map_err(|e| request_error(op, e))?;
        let mut builder = self.http.request(method, &url);
        if let Some(timeout) = self.config.timeout {
            builder = builder.timeout(timeout);
        }
        let mut headers = request.headers.clone();
        if !request.cookies.is_empty() {
            let cookie = HeaderValue::from_str(&request.cookies.join("; "))
                .map_err(|e| request_error(op, e))?;
            headers.insert(reqwest::header::COOKIE, cookie);
        }
        builder = builder.headers(headers);
        builder = match &request.body {
            Body::None => builder,
            Body::Bytes {
                content_type,
                bytes,
            } => builder
                .header(reqwest::header::CONTENT_TYPE, content_type.as_str())
                .body(bytes.clone()),
            Body::Multipart(parts) => builder.multipart(multipart_form(op, parts)?),
        };
        builder.build().map_err(|e| request_error(op, e))
    }

    /// Adds the credentials of the first alternative of the operation's requirements that the
    /// configured secrets meet. When none is met the request goes without (an operation that
    /// admits `{}` runs anonymously; another answers as it does to anyone without credentials).
    fn apply_credentials(&self, request: &mut Request) -> Result<(), Error> {
        let config = &*self.config;
        let scheme = |name: &str| self.schemes.iter().find(|s| s.name == name);
        // An alternative with credentials wins over `{}` (anonymous), wherever it is listed.
        let met = request.operation.security.iter().find(|alternative| {
            !alternative.is_empty()
                && alternative.iter().all(|(name, _)| {
                    scheme(name).is_some_and(|s| {
                        s.kind == SchemeKind::MutualTls || config.secret(s).is_some()
                    })
                })
        });
        let Some(alternative) = met else {
            return Ok(());
        };
        for (name, _) in *alternative {
            let Some(s) = scheme(name) else { continue };
            let Some(secret) = config.secret(s) else {
                continue;
            };
            let value = match secret {
                Secret::Value(v) => v.clone(),
                // RFC 7617: the user-id ends at the first colon, so one inside it would
                // send another user-id and password than the caller gave.
                Secret::Basic { username, .. } if username.contains(':') => {
                    return Err(request_error(
                        request.operation,
                        format!("the Basic user-id of scheme `{name}` contains `:` (RFC 7617)"),
                    ));
                }
                Secret::Basic { username, password } => format!("{username}:{password}"),
            };
            match (s.kind, secret) {
                (SchemeKind::Basic, _) | (_, Secret::Basic { .. }) => {
                    use base64::Engine;
                    let token = base64::engine::general_purpose::STANDARD.encode(value);
                    request.header_text("authorization", format!("Basic {token}"))?;
                }
                (SchemeKind::Bearer, _) => {
                    request.header_text("authorization", format!("Bearer {value}"))?
                }
                (SchemeKind::Http(scheme), _) => {
                    request.header_text("authorization", format!("{scheme} {value}"))?
                }
                (SchemeKind::ApiKeyHeader(h), _) => request.header_text(h, value)?,
                (SchemeKind::ApiKeyQuery(q), _) => request.query_pair(q, &value),
                (SchemeKind::ApiKeyCookie(c), _) => request.cookie_pair(c, &value),
                (SchemeKind::MutualTls, _) => {}
            }
        }
        Ok(())
    }
}

fn request_error(op: &Operation, e: impl fmt::Display) -> Error {
    Error::Request {
        operation: op.id,
        message: e.to_string(),
    }
}

/// How long to wait before attempt `attempt + 1`: the answer's `Retry-After` (seconds or an
/// HTTP date), else 0.5 s doubling per attempt.
fn retry_delay(received: &Received, attempt: u32) -> Duration {
    let fallback = Duration::from_millis(500) * 2u32.saturating_pow(attempt - 1);
    let Some(value) = received.header("retry-after") else {
        return fallback;
    };
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Duration::from_secs(seconds);
    }
    match chrono::DateTime::parse_from_rfc2822(value) {
        Ok(at) => (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or_default(),
        Err(_) => fallback,
    }
}

/// A fresh idempotency key: 128 random bits as hex, kept for every attempt of one call.
fn new_idempotency_key() -> String {
    let mut bytes = [0u8; 16];
    // An OS without a random source still gets a key unique within the process.
    if getrandom::fill(&mut bytes).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        bytes[..8].copy_from_slice(&t.to_be_bytes());
        bytes[8..].copy_from_slice(&n.to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One part of a multipart body.
#[derive(Debug, Clone)]
pub enum Part {
    Text { name: String, value: String },
    File { name: String, file: crate::FilePart },
}

fn multipart_form(op: &Operation, parts: &[Part]) -> Result<reqwest::multipart::Form, Error> {
    let mut form = reqwest::multipart::Form::new();
    for part in parts {
        form = match part {
            Part::Text { name, value } => form.text(name.clone(), value.clone()),
            Part::File { name, file } => {
                let mut p = reqwest::multipart::Part::bytes(file.bytes.clone());
                if let Some(f) = &file.file_name {
                    p = p.file_name(f.clone());
                }
                if let Some(c) = &file.content_type {
                    p = p.mime_str(c).map_err(|e| {
                        request_error(op, format_args!("part `{name}`: content type {c:?}: {e}"))
                    })?;
                }
                form.part(name.clone(), p)
            }
        };
    }
    Ok(form)
}

/// A request body as written.
#[derive(Debug, Clone, Default)]
enum Body {
    #[default]
    None,
    Bytes {
        content_type: String,
        bytes: Vec<u8>,
    },
    Multipart(Vec<Part>),
}

/// One request of an operation as its input writes it, before credentials and retries.
#[derive(Debug, Clone)]
pub struct Request {
    operation: &'static Operation,
    path: String,
    /// `name=value`, each already percent-encoded.
    query: Vec<String>,
    headers: HeaderMap,
    /// `name=value`.
    cookies: Vec<String>,
    body: Body,
}

impl Request {
    pub fn new(operation: &'static Operation) -> Self {
        Request {
            operation,
            path: operation.path.to_string(),
            query: Vec::new(),
            headers: HeaderMap::new(),
            cookies: Vec::new(),
            body: Body::None,
        }
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers.contains_key(name)
    }

    fn header_text(&mut self, name: &str, value: String) -> Result<(), Error> {
        let op = self.operation;
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| request_error(op, e))?;
        let value = HeaderValue::from_str(&value).map_err(|e| {
            request_error(
                op,
                format_args!("header `{name}`: {e} (the value is not text)"),
            )
        })?;
        self.headers.insert(name, value);
        Ok(())
    }

    fn query_pair(&mut self, name: &str, value: &str) {
        self.query.push(format!(
            "{}={}",
            encode::component(name),
            encode::component(value)
        ));
    }

    fn cookie_pair(&mut self, name: &str, value: &str) {
        self.cookies
            .push(format!("{name}={}", encode::component(value)));
    }

    /// Writes path parameter `name` into the template (`{name}`), in `style`.
    pub fn path<T: serde::Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
        style: PathStyle,
        explode: bool,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, name, value)?;
        let text = encode::path(name, &value, style, explode);
        self.path = self.path.replace(&format!("{{{name}}}"), &text);
        Ok(self)
    }

    /// Adds query parameter `name` (nothing for `None`), in `style`.
    pub fn query<T: serde::Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
        style: ParamStyle,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, name, value)?;
        for (k, v) in encode::query(name, &value, style) {
            self.query.push(format!(
                "{}={}",
                encode::component(&k),
                encode::query_value(&v, style)
            ));
        }
        Ok(self)
    }

    /// Adds a parameter of `content` `application/json` (`in` `query`, `header` or `cookie`):
    /// the value's JSON text.
    pub fn json_param<T: serde::Serialize + ?Sized>(
        &mut self,
        location: &str,
        name: &str,
        value: &T,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, name, value)?;
        if value.is_null() {
            return Ok(self);
        }
        let text = value.to_string();
        match location {
            "header" => self.header_text(name, text)?,
            "cookie" => self.cookie_pair(name, &text),
            _ => self.query_pair(name, &text),
        }
        Ok(self)
    }

    /// The whole query string from one value (OpenAPI 3.2's `in: querystring`): a form of its
    /// properties, its JSON text, or its text as it is.
    pub fn query_string<T: serde::Serialize + ?Sized>(
        &mut self,
        value: &T,
        form: bool,
        json: bool,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, "querystring", value)?;
        match (&value, form, json) {
            (serde_json::Value::Null, _, _) => {}
            (_, true, _) => {
                for (k, v) in encode::query(
                    "",
                    &value,
                    ParamStyle {
                        explode: true,
                        ..ParamStyle::FORM
                    },
                ) {
                    self.query_pair(&k, &v);
                }
            }
            (_, _, true) => self.query.push(encode::component(&value.to_string())),
            (serde_json::Value::String(s), _, _) => self.query.push(encode::component(s)),
            (other, _, _) => self.query.push(encode::component(&other.to_string())),
        }
        Ok(self)
    }

    /// Sends the caller's `Accept` as it is (nothing for `None`).
    pub fn accept(&mut self, value: Option<&HeaderValue>) -> &mut Self {
        if let Some(v) = value {
            self.headers.insert(reqwest::header::ACCEPT, v.clone());
        }
        self
    }

    /// Sets header parameter `name` (nothing for `None`): scalars as text, arrays and objects
    /// in the `simple` style.
    pub fn header<T: serde::Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
        explode: bool,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, name, value)?;
        if let Some(text) = encode::simple(&value, explode) {
            self.header_text(name, text)?;
        }
        Ok(self)
    }

    /// Adds cookie parameter `name` (nothing for `None`).
    pub fn cookie<T: serde::Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
        explode: bool,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, name, value)?;
        if let Some(text) = encode::simple(&value, explode) {
            self.cookie_pair(name, &text);
        }
        Ok(self)
    }

    /// A JSON body (of media type `content_type`, a JSON one).
    pub fn json<T: serde::Serialize + ?Sized>(
        &mut self,
        content_type: &str,
        body: &T,
    ) -> Result<&mut Self, Error> {
        let bytes = serde_json::to_vec(body).map_err(|e| request_error(self.operation, e))?;
        Ok(self.bytes(content_type, bytes))
    }

    /// An `application/x-www-form-urlencoded` body of the value's properties.
    pub fn form<T: serde::Serialize + ?Sized>(&mut self, body: &T) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, "body", body)?;
        let pairs = encode::query(
            "",
            &value,
            ParamStyle {
                explode: true,
                ..ParamStyle::FORM
            },
        );
        let text =
            serde_urlencoded::to_string(pairs).map_err(|e| request_error(self.operation, e))?;
        Ok(self.bytes("application/x-www-form-urlencoded", text.into_bytes()))
    }

    /// A body of bytes as they are, of media type `content_type` (a range such as `image/*`
    /// is sent as `application/octet-stream`).
    pub fn bytes(&mut self, content_type: &str, bytes: Vec<u8>) -> &mut Self {
        let content_type = if content_type.contains('*') {
            "application/octet-stream"
        } else {
            content_type
        };
        self.body = Body::Bytes {
            content_type: content_type.to_string(),
            bytes,
        };
        self
    }

    /// A `multipart/form-data` body: each file part with its bytes, each other property as a
    /// text part (a string as it is, anything else as JSON; an array as one part per item).
    pub fn multipart<T: crate::MultipartForm + serde::Serialize>(
        &mut self,
        body: &T,
    ) -> Result<&mut Self, Error> {
        let value = encode::value(self.operation, "body", body)?;
        let mut parts = Vec::new();
        for (name, file) in body.file_parts() {
            parts.push(Part::File {
                name: name.to_string(),
                file: file.clone(),
            });
        }
        if let serde_json::Value::Object(fields) = value {
            for (name, v) in fields {
                if T::FILE_FIELDS.contains(&name.as_str()) {
                    continue;
                }
                let items = match v {
                    serde_json::Value::Array(items) => items,
                    serde_json::Value::Null => Vec::new(),
                    other => vec![other],
                };
                for item in items {
                    let value = match item {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    parts.push(Part::Text {
                        name: name.clone(),
                        value,
                    });
                }
            }
        }
        self.body = Body::Multipart(parts);
        Ok(self)
    }
}

/// Reading an answer into a response variant.
impl Received {
    /// The body as JSON of type `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self, op: &Operation) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| self.invalid(op, format!("body: {e}")))
    }

    /// The body as JSON of type `T`, checked first against every keyword of its schema in the
    /// document `D` (lengths, ranges, patterns, formats, closed objects, ...), as the server
    /// checks a request body: each violation is named, by field, in the invalid response.
    pub fn checked_json<T, D>(&self, op: &Operation) -> Result<T, Error>
    where
        T: poem_openapi::types::Type + serde::de::DeserializeOwned + 'static,
        D: crate::ApiDocument,
    {
        let value: serde_json::Value = self.json(op)?;
        let mut errors = std::collections::BTreeMap::new();
        crate::validate::validate(
            &crate::validate::registry_of::<T>(),
            &T::schema_ref(),
            &value,
            "body",
            &crate::validate::DocumentRules::<D>::for_response(),
            &mut errors,
        );
        if !errors.is_empty() {
            let violations: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
            return Err(self.invalid(op, violations.join("; ")));
        }
        serde_json::from_value(value).map_err(|e| self.invalid(op, format!("body: {e}")))
    }

    /// The body as UTF-8 text.
    pub fn text(&self, op: &Operation) -> Result<String, Error> {
        String::from_utf8(self.body.clone())
            .map_err(|e| self.invalid(op, format!("body is not UTF-8 text: {e}")))
    }

    /// A declared response header that must be present, read as the type its schema declares.
    pub fn required_header<T: std::str::FromStr>(
        &self,
        op: &Operation,
        name: &str,
    ) -> Result<T, Error> {
        self.typed_header(op, name)?
            .ok_or_else(|| self.invalid(op, format!("required header `{name}` is missing")))
    }

    /// Header `name` read as the type its schema declares (`None` when absent); a value that
    /// does not parse is an invalid response.
    pub fn typed_header<T: std::str::FromStr>(
        &self,
        op: &Operation,
        name: &str,
    ) -> Result<Option<T>, Error> {
        let Some(text) = self.header(name) else {
            return Ok(None);
        };
        match text.trim().parse() {
            Ok(value) => Ok(Some(value)),
            Err(_) => Err(self.invalid(
                op,
                format!("header `{name}` is `{text}`, not of its declared type"),
            )),
        }
    }

    /// Whether the body's media type is one the primary payload reads (else it is one of the
    /// other listed types, kept as bytes).
    pub fn is_media(&self, primary: &str) -> bool {
        let mine = self.media_type();
        let primary = primary.to_ascii_lowercase();
        mine == primary
            || primary.ends_with("/*") && mine.starts_with(primary.trim_end_matches('*'))
            || primary == "*/*"
            || (primary.ends_with("json")
                && (mine == "application/json" || mine.ends_with("+json")))
    }

    /// This answer as an error: its status is not declared.
    pub fn unexpected(self, op: &Operation) -> Error {
        Error::UnexpectedStatus {
            operation: op.id,
            received: Box::new(self),
        }
    }

    fn invalid(&self, op: &Operation, reason: String) -> Error {
        Error::InvalidResponse {
            operation: op.id,
            received: Box::new(self.clone()),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_a_date_else_a_doubling_back_off() {
        let with = |v: Option<&str>| {
            let mut headers = HeaderMap::new();
            if let Some(v) = v {
                headers.insert("retry-after", v.parse().unwrap());
            }
            Received {
                status: StatusCode::SERVICE_UNAVAILABLE,
                headers,
                body: Vec::new(),
                live: None,
            }
        };
        assert_eq!(retry_delay(&with(Some("3")), 1), Duration::from_secs(3));
        assert_eq!(retry_delay(&with(None), 1), Duration::from_millis(500));
        assert_eq!(retry_delay(&with(None), 3), Duration::from_secs(2));
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc2822();
        let d = retry_delay(&with(Some(&soon)), 1);
        assert!(
            d > Duration::from_secs(17) && d <= Duration::from_secs(20),
            "{d:?}"
        );
        assert_eq!(retry_delay(&with(Some("soon")), 2), Duration::from_secs(1));
    }
}
