//! Runtime support for code emitted by `openapi-poem`.
//!
//! One crate that every generated crate depends on (and re-exports as `runtime`). It is general:
//! nothing in it knows which API it serves; what it needs of one document (the closed schemas,
//! the declared headers) it reads through [`ApiDocument`], which each generated crate implements
//! on its `Document` type.
//!
//! Design notes:
//! - **Schemas are data.** Every generated type registers a `MetaSchema` that mirrors the source
//!   document. The same registry feeds the served document *and* [`validate`], so what is
//!   documented is exactly what is enforced.
//! - **Bodies are validated before they are typed.** [`JsonBody`] reads JSON, collects every
//!   violation of the schema (type, required, unknown field, lengths, ranges, patterns, enums,
//!   item counts), answers them all at once, and only then deserialises with serde.
//! - **Framework failures keep the API's error shape.** Every failure before a handler runs
//!   (authentication, parameters, body, unknown route, wrong method, wrong media type) becomes a
//!   [`RequestError`], which the server's [`Hooks::render_error`] turns into the API's own error
//!   body. There is no `text/plain` error path.
//! - **What poem-openapi cannot express** (`additionalProperties: false`, response `links`,
//!   top-level `security`, `servers`) is applied to the served document by [`patch_document`]
//!   from tables the generator emits, so the served document still equals the source.
#![allow(dead_code, clippy::all)]

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock, RwLock};

use poem::http::StatusCode;
use poem::{Endpoint, IntoResponse, Request, RequestBody, Response};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaResponses, MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, Type};
use serde_json::Value;

pub mod keywords;
pub use keywords::{Keywords, SchemaFn};

pub mod schema_data;
pub use schema_data::{Link, SchemaData, link};

pub mod string_enum;
pub use string_enum::{StringEnum, string_enum};

// ---------------------------------------------------------------------------------------------
// Errors raised before a handler runs
// ---------------------------------------------------------------------------------------------

/// Why a request was refused before it reached a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestErrorKind {
    /// Missing or unacceptable credentials (401).
    Unauthorized,
    /// A parameter, header or body violates the document (400).
    InvalidRequest,
    /// A body part exceeds the configured size limit (400, see [`BodyLimits`]).
    TooLarge,
    /// No route matches the path (404).
    RouteNotFound,
    /// The path exists but not with this method (405).
    MethodNotAllowed,
    /// The `Content-Type` is missing or not the declared one (415).
    UnsupportedMediaType,
    /// Anything else the framework refused; the status tells.
    Other,
}

/// A refusal before a handler ran, with every offending field named in `details`.
#[derive(Debug, Clone)]
pub struct RequestError {
    pub status: StatusCode,
    pub kind: RequestErrorKind,
    pub message: String,
    /// Field path (`limit`, `address.country_code`, `items[2].name`) to message.
    pub details: BTreeMap<String, String>,
}

impl RequestError {
    pub fn invalid(message: impl Into<String>, details: BTreeMap<String, String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: RequestErrorKind::InvalidRequest,
            message: message.into(),
            details,
        }
    }

    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        let mut details = BTreeMap::new();
        details.insert(field.into(), message.clone());
        Self::invalid(message, details)
    }

    /// A failure of the server itself (the message must not carry internals).
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: RequestErrorKind::Other,
            message: message.into(),
            details: BTreeMap::new(),
        }
    }

    pub fn unauthorized() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            kind: RequestErrorKind::Unauthorized,
            message: "missing or invalid credentials".into(),
            details: BTreeMap::new(),
        }
    }

    /// Classifies any error the framework produced.
    pub fn from_poem(err: &poem::Error) -> Self {
        use poem_openapi::error as oe;
        if let Some(e) = err.downcast_ref::<RequestError>() {
            return e.clone();
        }
        if err.is::<oe::AuthorizationError>() {
            return Self::unauthorized();
        }
        if let Some(e) = err.downcast_ref::<oe::ParseParamError>() {
            return Self::invalid_field(e.name.to_string(), e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ParsePathError>() {
            return Self::invalid_field(e.name.to_string(), e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ParseRequestPayloadError>() {
            return Self::invalid_field("body", e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ParseMultipartError>() {
            return Self::invalid_field("body", e.reason.clone());
        }
        if let Some(e) = err.downcast_ref::<oe::ContentTypeError>() {
            return Self {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                kind: RequestErrorKind::UnsupportedMediaType,
                message: e.to_string(),
                details: BTreeMap::new(),
            };
        }
        let status = err.status();
        let kind = match status {
            StatusCode::NOT_FOUND => RequestErrorKind::RouteNotFound,
            StatusCode::METHOD_NOT_ALLOWED => RequestErrorKind::MethodNotAllowed,
            StatusCode::UNAUTHORIZED => RequestErrorKind::Unauthorized,
            StatusCode::PAYLOAD_TOO_LARGE => RequestErrorKind::TooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => RequestErrorKind::UnsupportedMediaType,
            StatusCode::BAD_REQUEST => RequestErrorKind::InvalidRequest,
            _ => RequestErrorKind::Other,
        };
        let message = match kind {
            RequestErrorKind::RouteNotFound => "no such route".to_string(),
            RequestErrorKind::MethodNotAllowed => "method not allowed on this route".to_string(),
            RequestErrorKind::Other if status.is_server_error() => "internal error".to_string(),
            _ => err.to_string(),
        };
        Self {
            status,
            kind,
            message,
            details: BTreeMap::new(),
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequestError {}

impl poem::error::ResponseError for RequestError {
    fn status(&self) -> StatusCode {
        self.status
    }
}

/// An early exit from generated glue; carries a [`RequestError`] to the error renderer.
///
/// Its `meta()` is empty: it never adds a status to the served document.
pub struct Rejection(pub RequestError);

impl Rejection {
    /// The answer of a service built only to compute its document.
    pub fn document_only() -> Self {
        Rejection(RequestError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind: RequestErrorKind::Other,
            message: "this service only describes the API".into(),
            details: BTreeMap::new(),
        })
    }
}

impl poem_openapi::ApiResponse for Rejection {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: Vec::new(),
        }
    }

    fn register(_registry: &mut Registry) {}
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        poem::Error::from(self.0).into_response()
    }
}

impl From<Rejection> for poem::Error {
    fn from(r: Rejection) -> Self {
        poem::Error::from(r.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Hooks the server supplies once
// ---------------------------------------------------------------------------------------------

/// What the server supplies once: how to authenticate, and how to render a refusal.
pub trait Hooks: Send + Sync + 'static {
    /// The authenticated caller handed to every secured operation.
    type Principal: Clone + Send + Sync + 'static;

    /// Checks the credentials of the first requirement alternative the request completes, before
    /// any parameter is parsed ([`Credentials::requirement`] says which; each scheme's credential
    /// comes with the alternative's scopes). `Err` answers that error (a 401 from
    /// [`RequestError::unauthorized`], or a 5xx when the check itself failed).
    fn authenticate(
        &self,
        credentials: Credentials,
    ) -> impl Future<Output = Result<Self::Principal, RequestError>> + Send;

    /// Renders every refusal that happens before a handler runs, in the API's error schema.
    fn render_error(&self, error: RequestError, request: &Request) -> Response;
}

/// Response enums whose error statuses all carry one body type `B` implement this, so a server
/// can map its errors once, generically, instead of once per operation.
pub trait ErrorVariants<B>: Sized {
    /// The variant for `status` with `body`, or `None` when the operation does not declare it.
    fn from_error(status: u16, body: B) -> Option<Self>;
    /// Every error status the operation declares (`None` stands for `default`).
    const ERROR_STATUSES: &'static [Option<u16>];
    /// The variant for a server failure: 500 if declared, else `default`, else the first
    /// declared error. Total, so a server never needs a panic path to answer.
    fn server_failure(body: B) -> Self;
}

/// Hands the server's [`Hooks`] to the request (for [`Auth`], which authenticates each secured
/// operation before any of its parameters is parsed, so bad credentials are a 401 whatever else
/// is wrong), and refuses a declared header that is not text.
pub struct AuthMiddleware<H> {
    pub hooks: Arc<H>,
    /// Header parameters some operation declares ([`ApiDocument::DECLARED_HEADERS`]).
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
}

impl<H: Hooks, E: Endpoint> poem::Middleware<E> for ErrorRenderer<H> {
    type Output = ErrorRendererEndpoint<H, E>;

    fn transform(&self, ep: E) -> Self::Output {
        ErrorRendererEndpoint {
            hooks: self.hooks.clone(),
            inner: ep,
        }
    }
}

pub struct ErrorRendererEndpoint<H, E> {
    hooks: Arc<H>,
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
            Err(err) => Ok(self
                .hooks
                .render_error(RequestError::from_poem(&err), &probe)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schemas: builders used by generated `Type` impls, and a validator over them
// ---------------------------------------------------------------------------------------------

/// Starts a schema of the given JSON type (`"string"`, `"object"`, `""` for untyped).
pub fn schema(ty: &'static str) -> MetaSchema {
    MetaSchema::new(ty)
}

/// Wraps a schema as an inline reference.
pub fn inline(schema: MetaSchema) -> MetaSchemaRef {
    MetaSchemaRef::Inline(Box::new(schema))
}

/// A `format: date` parameter (poem-openapi's own `NaiveDate` documents itself as `naive-date`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date(pub chrono::NaiveDate);

impl Type for Date {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> std::borrow::Cow<'static, str> {
        "string_date".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let mut s = MetaSchema::new("string");
        s.format = Some("date");
        inline(s)
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(std::iter::once(self))
    }
}

impl poem_openapi::types::ParseFromParameter for Date {
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
            .map(Date)
            .map_err(|_| poem_openapi::types::ParseError::custom("must be a date (YYYY-MM-DD)"))
    }
}

/// Marks a schema reference nullable (an inline schema directly; a named one through `allOf`).
pub fn nullable(r: MetaSchemaRef) -> MetaSchemaRef {
    match r {
        MetaSchemaRef::Inline(mut s) => {
            s.nullable = true;
            MetaSchemaRef::Inline(s)
        }
        MetaSchemaRef::Reference(name) => MetaSchemaRef::Inline(Box::new(MetaSchema {
            all_of: vec![MetaSchemaRef::Reference(name)],
            nullable: true,
            ..MetaSchema::ANY
        })),
    }
}

/// A reference to a named component.
pub fn reference(name: &str) -> MetaSchemaRef {
    MetaSchemaRef::Reference(name.to_string())
}

/// The registry holding `T` and everything it refers to, built once per type.
pub fn registry_of<T: Type + 'static>() -> Arc<Registry> {
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<Registry>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(r) = cache
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&TypeId::of::<T>())
    {
        return r.clone();
    }
    let mut registry = Registry::new();
    T::register(&mut registry);
    let registry = Arc::new(registry);
    cache
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(TypeId::of::<T>(), registry.clone());
    registry
}

/// What the validator asks of a document beyond the registry: which components are closed to
/// other properties, and the 2020-12 keywords `MetaSchema` cannot hold.
pub trait Rules {
    fn is_closed(&self, name: &str) -> bool;
    fn keywords(&self, name: &str) -> Option<&'static Keywords>;
}

/// A document's [`Rules`], read from its [`ApiDocument`] tables.
pub struct DocumentRules<D>(PhantomData<D>);

impl<D> DocumentRules<D> {
    pub const fn new() -> Self {
        DocumentRules(PhantomData)
    }
}

impl<D: ApiDocument> Rules for DocumentRules<D> {
    fn is_closed(&self, name: &str) -> bool {
        D::is_closed(name)
    }
    fn keywords(&self, name: &str) -> Option<&'static Keywords> {
        D::KEYWORDS.iter().find(|(n, _)| *n == name).map(|(_, k)| k)
    }
}

/// Validates `value` against `schema`, appending `(path, message)` for every violation.
pub fn validate(
    registry: &Registry,
    schema: &MetaSchemaRef,
    value: &Value,
    path: &str,
    rules: &dyn Rules,
    errors: &mut BTreeMap<String, String>,
) {
    validate_at(registry, schema, value, path, rules, errors, 0)
}

const MAX_DEPTH: usize = 64;

pub(crate) fn field_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "body".to_string()
    } else {
        path.to_string()
    }
}

pub(crate) fn push(errors: &mut BTreeMap<String, String>, path: &str, message: String) {
    errors.entry(display_path(path)).or_insert(message);
}

pub(crate) fn validate_at(
    registry: &Registry,
    schema: &MetaSchemaRef,
    value: &Value,
    path: &str,
    rules: &dyn Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        push(errors, path, "nesting is too deep".into());
        return;
    }
    let (schema, name) = match schema {
        MetaSchemaRef::Inline(s) => (&**s, None),
        MetaSchemaRef::Reference(name) => match registry.schemas.get(name) {
            Some(s) => (s, Some(name.as_str())),
            None => return,
        },
    };
    // A component by its name; a schema the document writes inline by the name the generator
    // gave it (`rust_typename`, set only where there are keywords).
    let keywords = name
        .or(schema.rust_typename)
        .and_then(|n| rules.keywords(n));
    if value.is_null() {
        if !schema.nullable && refuses_null(registry, schema, depth) {
            push(errors, path, "must not be null".into());
        }
        return;
    }
    for part in &schema.all_of {
        validate_at(registry, part, value, path, rules, errors, depth + 1);
    }
    if !schema.one_of.is_empty() {
        validate_one_of(
            registry,
            schema,
            &schema.one_of,
            value,
            path,
            rules,
            errors,
            depth,
        );
    }
    if !schema.any_of.is_empty() {
        validate_one_of(
            registry,
            schema,
            &schema.any_of,
            value,
            path,
            rules,
            errors,
            depth,
        );
    }
    let type_ok = match schema.ty {
        "" => true,
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    if !type_ok {
        let expected = match (schema.ty, schema.format) {
            ("integer", Some(f)) => format!("an integer ({f})"),
            ("integer", None) => "an integer".to_string(),
            (ty, _) => format!("a value of type {ty}"),
        };
        push(errors, path, format!("must be {expected}"));
        return;
    }
    if !schema.enum_items.is_empty() && !schema.enum_items.contains(value) {
        let allowed: Vec<String> = schema.enum_items.iter().map(|v| v.to_string()).collect();
        push(
            errors,
            path,
            format!("must be one of {}", allowed.join(", ")),
        );
        return;
    }
    if let Some(k) = keywords {
        keywords::check(k, schema, value, path, rules, errors, depth);
    }
    match value {
        Value::String(s) => check_string(schema, s, path, errors),
        Value::Number(n) => check_number(schema, n, path, errors),
        Value::Array(items) => {
            if let Some(min) = schema.min_items {
                if items.len() < min {
                    push(errors, path, format!("must have at least {min} items"));
                }
            }
            if let Some(max) = schema.max_items {
                if items.len() > max {
                    push(errors, path, format!("must have at most {max} items"));
                }
            }
            if schema.unique_items == Some(true)
                && items
                    .iter()
                    .enumerate()
                    .any(|(i, a)| items[..i].contains(a))
            {
                push(errors, path, "must not contain duplicate items".into());
            }
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{}[{i}]", path);
                    validate_at(registry, item_schema, item, &p, rules, errors, depth + 1);
                }
            }
        }
        Value::Object(map) => {
            if let Some(min) = schema.min_properties {
                if map.len() < min {
                    push(errors, path, format!("must have at least {min} properties"));
                }
            }
            if let Some(max) = schema.max_properties {
                if map.len() > max {
                    push(errors, path, format!("must have at most {max} properties"));
                }
            }
            for required in &schema.required {
                // A read-only property is the server's to set: never required of a request.
                let read_only = schema.properties.iter().any(|(n, p)| {
                    n == required && matches!(p, MetaSchemaRef::Inline(p) if p.read_only)
                });
                if !map.contains_key(*required) && !read_only {
                    push(errors, &field_path(path, required), "is required".into());
                }
            }
            for (key, v) in map {
                let p = field_path(path, key);
                if let Some((_, prop)) = schema.properties.iter().find(|(n, _)| n == key) {
                    validate_at(registry, prop, v, &p, rules, errors, depth + 1);
                } else if keywords.is_some_and(|k| k.matches_pattern(key)) {
                    // Evaluated by `patternProperties` (below): not an additional property.
                } else if let Some(extra) = &schema.additional_properties {
                    validate_at(registry, extra, v, &p, rules, errors, depth + 1);
                } else if name
                    .or(schema.rust_typename)
                    .is_some_and(|n| rules.is_closed(n))
                    && !declared_by_all_of(registry, schema, key)
                {
                    push(errors, &p, "is not a known field".into());
                }
            }
        }
        _ => {}
    }
}

/// Whether a schema that is not itself nullable refuses `null`: it names a type, or an `allOf`
/// member (a reference without `nullable` beside it, `allOf: [$ref]`) does.
fn refuses_null(registry: &Registry, schema: &MetaSchema, depth: usize) -> bool {
    if !schema.ty.is_empty() {
        return true;
    }
    depth < MAX_DEPTH
        && schema.all_of.iter().any(|part| {
            let s = match part {
                MetaSchemaRef::Inline(s) => Some(&**s),
                MetaSchemaRef::Reference(n) => registry.schemas.get(n),
            };
            s.is_some_and(|s| !s.nullable && refuses_null(registry, s, depth + 1))
        })
}

fn declared_by_all_of(registry: &Registry, schema: &MetaSchema, key: &str) -> bool {
    schema.all_of.iter().any(|part| {
        let s = match part {
            MetaSchemaRef::Inline(s) => Some(&**s),
            MetaSchemaRef::Reference(n) => registry.schemas.get(n),
        };
        s.is_some_and(|s| {
            s.properties.iter().any(|(n, _)| *n == key) || declared_by_all_of(registry, s, key)
        })
    })
}

/// `oneOf` and `anyOf`: the discriminator's variant, else the first member that matches (the
/// Rust type is an untagged enum that takes the first member that parses).
#[allow(clippy::too_many_arguments)]
fn validate_one_of(
    registry: &Registry,
    schema: &MetaSchema,
    members: &[MetaSchemaRef],
    value: &Value,
    path: &str,
    rules: &dyn Rules,
    errors: &mut BTreeMap<String, String>,
    depth: usize,
) {
    if let (Some(disc), Some(obj)) = (&schema.discriminator, value.as_object()) {
        let tag = obj.get(disc.property_name).and_then(Value::as_str);
        let target = tag.and_then(|t| {
            disc.mapping
                .iter()
                .find(|(k, _)| k == t)
                .map(|(_, v)| reference(v.rsplit('/').next().unwrap_or(v)))
        });
        match target {
            Some(t) => validate_at(registry, &t, value, path, rules, errors, depth + 1),
            None => push(
                errors,
                &field_path(path, disc.property_name),
                "does not name a known variant".into(),
            ),
        }
        return;
    }
    let mut best: Option<BTreeMap<String, String>> = None;
    for variant in members {
        let mut e = BTreeMap::new();
        validate_at(registry, variant, value, path, rules, &mut e, depth + 1);
        if e.is_empty() {
            return;
        }
        if best.as_ref().is_none_or(|b| e.len() < b.len()) {
            best = Some(e);
        }
    }
    match best {
        Some(b) if members.len() == 1 => errors.extend(b),
        _ => push(errors, path, "matches none of the allowed shapes".into()),
    }
}

fn check_string(schema: &MetaSchema, s: &str, path: &str, errors: &mut BTreeMap<String, String>) {
    // Policy beyond the document: U+0000 is never meaningful text, and databases such as
    // PostgreSQL cannot store it; refusing it here keeps it from becoming a server error later.
    if s.contains('\u{0}') {
        push(errors, path, "must not contain NUL characters".into());
        return;
    }
    let len = s.chars().count();
    if let Some(min) = schema.min_length {
        if len < min {
            push(
                errors,
                path,
                format!("must be at least {min} characters long"),
            );
        }
    }
    if let Some(max) = schema.max_length {
        if len > max {
            push(
                errors,
                path,
                format!("must be at most {max} characters long"),
            );
        }
    }
    if let Some(pattern) = &schema.pattern {
        if !pattern_matches(pattern, s) {
            push(errors, path, format!("must match the pattern {pattern}"));
        }
    }
    match schema.format {
        Some("date") if chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_err() => {
            push(errors, path, "must be a date (YYYY-MM-DD)".into())
        }
        Some("date-time") if chrono::DateTime::parse_from_rfc3339(s).is_err() => {
            push(errors, path, "must be an RFC 3339 date-time".into())
        }
        _ => {}
    }
}

fn check_number(
    schema: &MetaSchema,
    n: &serde_json::Number,
    path: &str,
    errors: &mut BTreeMap<String, String>,
) {
    if schema.ty == "integer" {
        let signed = |min: i64, max: i64| n.as_i64().is_some_and(|v| (min..=max).contains(&v));
        let fits = match schema.format {
            Some("int8") => signed(i8::MIN.into(), i8::MAX.into()),
            Some("int16") => signed(i16::MIN.into(), i16::MAX.into()),
            Some("int32") => signed(i32::MIN.into(), i32::MAX.into()),
            Some("uint8") => signed(0, u8::MAX.into()),
            Some("uint16") => signed(0, u16::MAX.into()),
            Some("uint32") => signed(0, u32::MAX.into()),
            Some("uint64" | "uint") => n.as_u64().is_some(),
            _ => n.as_i64().is_some(),
        };
        if !fits {
            push(
                errors,
                path,
                "is out of range for its integer format".into(),
            );
            return;
        }
    }
    let Some(v) = n.as_f64() else { return };
    if let Some(m) = schema.multiple_of.filter(|m| *m > 0.0) {
        let q = v / m;
        if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            push(errors, path, format!("must be a multiple of {m}"));
        }
    }
    if let Some(min) = schema.minimum {
        let exclusive = schema.exclusive_minimum.unwrap_or(false);
        if v < min || (exclusive && v == min) {
            let op = if exclusive {
                "greater than"
            } else {
                "at least"
            };
            push(errors, path, format!("must be {op} {min}"));
        }
    }
    if let Some(max) = schema.maximum {
        let exclusive = schema.exclusive_maximum.unwrap_or(false);
        if v > max || (exclusive && v == max) {
            let op = if exclusive { "less than" } else { "at most" };
            push(errors, path, format!("must be {op} {max}"));
        }
    }
}

/// Whether `s` matches the ECMA-262 `pattern` (see [`pattern`]); a pattern that does not
/// compile checks nothing (the generator warned about it when it read the document).
///
/// Each thread compiles a pattern once and keeps it: a document has a bounded set of patterns,
/// and checking one runs on every request that carries the value.
pub fn pattern_matches(pattern: &str, s: &str) -> bool {
    thread_local! {
        static COMPILED: std::cell::RefCell<HashMap<String, Option<regress::Regex>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    COMPILED.with(|compiled| {
        let mut compiled = compiled.borrow_mut();
        let re = compiled
            .entry(pattern.to_owned())
            .or_insert_with(|| pattern::compile(pattern).ok());
        re.as_ref().is_none_or(|re| pattern::is_match(re, s))
    })
}

/// A non-exploded array parameter: one value, items separated by `SEP` (`colors=red,blue` in
/// `form` style, `red blue` in `spaceDelimited`, `red|blue` in `pipeDelimited`).
///
/// poem-openapi's own `explode = false` unwraps a missing value (a panic when the parameter is
/// absent) and knows commas only, so generated code parses these itself and
/// [`DocumentPatch::unexploded_params`] puts `explode: false` (and the style) back in the served
/// document.
#[derive(Debug, Clone, PartialEq)]
pub struct Delimited<T, const SEP: char>(pub Vec<T>);

/// A comma-separated array parameter (`form` and `simple` styles).
pub type Csv<T> = Delimited<T, ','>;

impl<T: poem_openapi::types::ParseFromParameter + Send + Sync, const SEP: char> Type
    for Delimited<T, SEP>
{
    const IS_REQUIRED: bool = true;
    type RawValueType = Vec<T>;
    type RawElementValueType = T::RawValueType;

    fn name() -> std::borrow::Cow<'static, str> {
        <Vec<T> as Type>::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        <Vec<T> as Type>::schema_ref()
    }

    fn register(registry: &mut Registry) {
        <Vec<T> as Type>::register(registry);
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        self.0.raw_element_iter()
    }
}

impl<T: poem_openapi::types::ParseFromParameter + Send + Sync, const SEP: char>
    poem_openapi::types::ParseFromParameter for Delimited<T, SEP>
{
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        value
            .split(SEP)
            .map(|item| T::parse_from_parameter(item.trim()))
            .collect::<Result<Vec<T>, _>>()
            .map(Delimited)
            .map_err(poem_openapi::types::ParseError::propagate)
    }
}

/// `Type` for a parameter wrapper around one value of type `$inner` (its field `.0`): read its
/// own way, documented and validated as the value's type.
macro_rules! type_of_inner {
    ($inner:ident; [$($g:tt)*] $ty:ty) => {
        impl<$($g)*> Type for $ty {
            const IS_REQUIRED: bool = true;
            type RawValueType = $inner::RawValueType;
            type RawElementValueType = $inner::RawElementValueType;

            fn name() -> std::borrow::Cow<'static, str> {
                $inner::name()
            }

            fn schema_ref() -> MetaSchemaRef {
                $inner::schema_ref()
            }

            fn register(registry: &mut Registry) {
                $inner::register(registry);
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                self.0.as_raw_value()
            }

            fn raw_element_iter<'a>(
                &'a self,
            ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                self.0.raw_element_iter()
            }
        }
    };
}

/// A path parameter in `label` (`STYLE = 'l'`: `.5`, `.3,4,5`, exploded `.3.4.5`) or `matrix`
/// style (`'m'`: `;id=5`, `;id=3,4,5`, exploded `;id=3;id=4;id=5`): the prefix is removed
/// (exploded matrix pairs are rejoined with commas) and the rest read as `W` reads it (the
/// value's type, or a [`Delimited`] array). A value without its prefix is a 400.
#[derive(Debug, Clone, PartialEq)]
pub struct PathStyled<W, const STYLE: char, const EXPLODE: bool>(pub W);

type_of_inner!(W; [W: Type, const STYLE: char, const EXPLODE: bool] PathStyled<W, STYLE, EXPLODE>);

impl<W: poem_openapi::types::ParseFromParameter, const STYLE: char, const EXPLODE: bool>
    poem_openapi::types::ParseFromParameter for PathStyled<W, STYLE, EXPLODE>
{
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        let text = path_style_text(value, STYLE, EXPLODE)
            .map_err(poem_openapi::types::ParseError::custom)?;
        W::parse_from_parameter(&text)
            .map(PathStyled)
            .map_err(poem_openapi::types::ParseError::propagate)
    }
}

/// The text of a `label` or `matrix` path value without its prefix (see [`PathStyled`]).
fn path_style_text(value: &str, style: char, explode: bool) -> Result<String, &'static str> {
    let after_name = |pair: &str| pair.split_once('=').map_or("", |(_, v)| v).to_string();
    match style {
        'l' => value
            .strip_prefix('.')
            .map(str::to_string)
            .ok_or("must begin with `.` (label style)"),
        'm' => {
            let rest = value
                .strip_prefix(';')
                .ok_or("must begin with `;name=` (matrix style)")?;
            if explode {
                Ok(rest
                    .split(';')
                    .map(after_name)
                    .collect::<Vec<_>>()
                    .join(","))
            } else {
                Ok(after_name(rest))
            }
        }
        _ => Ok(value.to_string()),
    }
}

/// A parameter written with `content` of a JSON media type: its value is a JSON document
/// (`?filter={"name":"Rex"}`, percent-encoded), read with the type's serde rules.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonParam<T>(pub T);

type_of_inner!(T; [T: Type + serde::de::DeserializeOwned] JsonParam<T>);

impl<T: Type + serde::de::DeserializeOwned> poem_openapi::types::ParseFromParameter
    for JsonParam<T>
{
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        serde_json::from_str(value).map(JsonParam).map_err(|e| {
            poem_openapi::types::ParseError::custom(format!("not the JSON expected: {e}"))
        })
    }
}

/// The items of a poem-openapi extractor of a query parameter that reads a `T` into `.0` (all
/// but `from_request`): [`DeepObject`] and [`QueryString`].
macro_rules! query_parameter_extractor {
    () => {
        const TYPES: &'static [poem_openapi::ApiExtractorType] =
            &[poem_openapi::ApiExtractorType::Parameter];
        const PARAM_IS_REQUIRED: bool = T::IS_REQUIRED;

        type ParamType = T;
        type ParamRawType = T::RawValueType;

        fn register(registry: &mut Registry) {
            T::register(registry);
        }

        fn param_in() -> Option<poem_openapi::registry::MetaParamIn> {
            Some(poem_openapi::registry::MetaParamIn::Query)
        }

        fn param_schema_ref() -> Option<MetaSchemaRef> {
            Some(T::schema_ref())
        }

        fn param_raw_type(&self) -> Option<&Self::ParamRawType> {
            self.0.as_raw_value()
        }
    };
}
pub(crate) use query_parameter_extractor;

/// A `deepObject` query parameter: `filter[name]=Rex&filter[min_age]=3` is the object
/// `{"name": "Rex", "min_age": 3}`.
///
/// poem-openapi's `Query` knows no `deepObject` (it serves the style but reads one value), so
/// this extractor gathers the bracketed keys itself and types each value by the property's
/// schema (integers, numbers and booleans from their text, a repeated key of an array property
/// as its items); then the object is read like a JSON body. No key at all is an absent
/// parameter.
pub struct DeepObject<T>(pub T);

/// The property schemas of `T`'s object schema, by name, and the schema of the values of any
/// other key (a map's `additionalProperties`), if it has one.
fn object_properties<T: Type>() -> (Vec<(&'static str, MetaSchema)>, Option<MetaSchema>) {
    let mut registry = Registry::new();
    T::register(&mut registry);
    let resolve = |r: &MetaSchemaRef| -> Option<MetaSchema> {
        match r {
            MetaSchemaRef::Inline(s) => Some((**s).clone()),
            MetaSchemaRef::Reference(name) => registry.schemas.get(name).cloned(),
        }
    };
    let Some(object) = resolve(&T::schema_ref()) else {
        return (Vec::new(), None);
    };
    let properties = object
        .properties
        .iter()
        .filter_map(|(name, r)| resolve(r).map(|s| (*name, s)))
        .collect();
    let additional = object.additional_properties.as_deref().and_then(resolve);
    (properties, additional)
}

/// A value of the query string typed as the schema `ty` says (`integer`, `number`,
/// `boolean`); text otherwise, and where it does not parse (the body reader names it).
fn typed_text(ty: &str, text: String) -> Value {
    let parsed = match ty {
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text.parse::<f64>().ok().map(Value::from),
        "boolean" => text.parse::<bool>().ok().map(Value::from),
        _ => None,
    };
    parsed.unwrap_or(Value::String(text))
}

/// The object that `(key, text)` pairs of a query string write for `T`'s object schema: each
/// value typed by its property's schema, the repeated key of an array property gathered as its
/// items. Keys `field` maps to `None` are not the object's.
pub(crate) fn object_of_pairs<T: Type>(
    pairs: Vec<(String, String)>,
    field: impl Fn(&str) -> Option<&str>,
) -> serde_json::Map<String, Value> {
    let (properties, additional) = object_properties::<T>();
    let mut object = serde_json::Map::new();
    for (key, text) in pairs {
        let Some(field) = field(&key) else {
            continue;
        };
        let schema = properties
            .iter()
            .find(|(n, _)| *n == field)
            .map(|(_, s)| s)
            .or(additional.as_ref());
        match schema {
            Some(s) if s.ty == "array" => {
                let item_ty = s.items.as_deref().map_or("string", |i| match i {
                    MetaSchemaRef::Inline(i) => i.ty,
                    MetaSchemaRef::Reference(_) => "string",
                });
                let slot = object
                    .entry(field.to_string())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = slot {
                    items.push(typed_text(item_ty, text));
                }
            }
            _ => {
                let ty = schema.map_or("string", |s| s.ty);
                object.insert(field.to_string(), typed_text(ty, text));
            }
        }
    }
    object
}

impl<'a, T> poem_openapi::ApiExtractor<'a> for DeepObject<T>
where
    T: Type + serde::de::DeserializeOwned + Send + Sync,
{
    query_parameter_extractor!();

    async fn from_request(
        request: &'a Request,
        _body: &mut RequestBody,
        param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let name = param_opts.name;
        let fail = |reason: String| poem_openapi::error::ParseParamError { name, reason };
        let query = request.uri().query().unwrap_or_default();
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(query).map_err(|e| fail(e.to_string()))?;
        let prefix = format!("{name}[");
        let object = object_of_pairs::<T>(pairs, |key| {
            key.strip_prefix(&prefix).and_then(|k| k.strip_suffix(']'))
        });
        let value = if object.is_empty() {
            Value::Null
        } else {
            Value::Object(object)
        };
        if value.is_null() && T::IS_REQUIRED {
            return Err(fail("missing".to_string()).into());
        }
        serde_json::from_value(value)
            .map(DeepObject)
            .map_err(|e| fail(e.to_string()).into())
    }
}

/// The `pattern` of a path, query or header parameter, checked with [`pattern_matches`].
///
/// poem-openapi's own `pattern` validator compiles its regular expression on every request
/// (measured in bankd: 8 % of the server's samples under book transfers, for the
/// `Idempotency-Key` header). A custom validator does not show in the document poem-openapi
/// serves, so [`DocumentPatch::param_patterns`] puts the pattern back. It prints like
/// poem-openapi's validator, so the 400 a bad value gets reads the same.
pub struct ParamPattern(pub &'static str);

impl std::fmt::Display for ParamPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pattern(\"{}\")", self.0)
    }
}

impl<T: AsRef<str>> poem_openapi::validation::Validator<T> for ParamPattern {
    fn check(&self, value: &T) -> bool {
        pattern_matches(self.0, value.as_ref())
    }
}

/// Responses written in the listed media type that `Accept` prefers.
pub mod methods;
pub use methods::ExtensionMethods;

pub mod querystring;
pub use querystring::QueryString;

pub mod stream;
pub use stream::ItemStream;

pub mod negotiate;
pub use negotiate::{Accept, AcceptHeader, Negotiated, ResponseMedia};
/// ECMA-262 patterns through `regress`, shared with the generator.
pub mod pattern;
/// Security schemes, requirements and the credentials a request presents.
pub mod security;
pub use security::{
    Auth, Credential, Credentials, OptionalAuth, SchemeCredential, SchemeKind, SecuritySchemeDef,
};

// ---------------------------------------------------------------------------------------------
// Types whose schema is generated: glue between serde and poem-openapi's `Type`
// ---------------------------------------------------------------------------------------------

/// A generated type: its documented schema, and whether that schema is a named component.
///
/// A type implements serde only in the directions the server moves it (see [`spec_type!`]): a
/// request-only type deserialises, a response-only type serialises.
pub trait SpecType: Send + Sync + 'static {
    /// The component name, or `None` for a schema written inline in the document.
    const NAME: Option<&'static str>;
    /// The schema as the document writes it, as data ([`SchemaData`]).
    const SCHEMA: SchemaData;

    /// The schema; registers what it refers to.
    fn schema(registry: &mut Registry) -> MetaSchema {
        Self::SCHEMA.schema(registry)
    }
}

/// Implements poem-openapi's traits for a [`SpecType`]. One line in generated code instead of
/// sixty. `spec_type!(T)` for a type that goes both ways; `spec_type!(T, read)` for one that is
/// only read from requests (`ParseFromJSON`, and `ParseFromParameter` for string enums used as
/// parameters); `spec_type!(T, write)` for one that is only written (`ToJSON`).
#[macro_export]
#[doc(hidden)]
macro_rules! __spec_type {
    ($ty:ty) => {
        $crate::__spec_type!($ty, type);
        $crate::__spec_type!($ty, read_impls);
        $crate::__spec_type!($ty, write_impls);
    };
    ($ty:ty, read) => {
        $crate::__spec_type!($ty, type);
        $crate::__spec_type!($ty, read_impls);
    };
    ($ty:ty, write) => {
        $crate::__spec_type!($ty, type);
        $crate::__spec_type!($ty, write_impls);
    };
    ($ty:ty, type) => {
        impl ::poem_openapi::types::Type for $ty {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(
                    <$ty as $crate::SpecType>::NAME.unwrap_or(stringify!($ty)),
                )
            }

            fn schema_ref() -> ::poem_openapi::registry::MetaSchemaRef {
                match <$ty as $crate::SpecType>::NAME {
                    ::std::option::Option::Some(name) => $crate::reference(name),
                    ::std::option::Option::None => {
                        let mut registry = ::poem_openapi::registry::Registry::new();
                        $crate::inline(<$ty as $crate::SpecType>::schema(&mut registry))
                    }
                }
            }

            fn register(registry: &mut ::poem_openapi::registry::Registry) {
                match <$ty as $crate::SpecType>::NAME {
                    ::std::option::Option::Some(name) => registry
                        .create_schema::<Self, _>(name.to_string(), |registry| {
                            <$ty as $crate::SpecType>::schema(registry)
                        }),
                    ::std::option::Option::None => {
                        let _ = <$ty as $crate::SpecType>::schema(registry);
                    }
                }
            }

            fn as_raw_value(&self) -> ::std::option::Option<&Self::RawValueType> {
                ::std::option::Option::Some(self)
            }

            fn raw_element_iter<'a>(
                &'a self,
            ) -> ::std::boxed::Box<
                dyn ::std::iter::Iterator<Item = &'a Self::RawElementValueType> + 'a,
            > {
                ::std::boxed::Box::new(::std::iter::once(self))
            }
        }
    };
    ($ty:ty, read_impls) => {
        impl ::poem_openapi::types::ParseFromJSON for $ty {
            fn parse_from_json(
                value: ::std::option::Option<::serde_json::Value>,
            ) -> ::poem_openapi::types::ParseResult<Self> {
                ::serde_json::from_value(value.unwrap_or_default())
                    .map_err(::poem_openapi::types::ParseError::custom)
            }
        }

        impl ::poem_openapi::types::ParseFromParameter for $ty {
            fn parse_from_parameter(value: &str) -> ::poem_openapi::types::ParseResult<Self> {
                ::serde_json::from_value(::serde_json::Value::String(value.to_string())).map_err(
                    |_| {
                        ::poem_openapi::types::ParseError::custom(format!(
                            "`{value}` is not an allowed value"
                        ))
                    },
                )
            }
        }
    };
    ($ty:ty, write_impls) => {
        impl ::poem_openapi::types::ToJSON for $ty {
            fn to_json(&self) -> ::std::option::Option<::serde_json::Value> {
                ::serde_json::to_value(self).ok()
            }
        }
    };
}
pub use __spec_type as spec_type;

// ---------------------------------------------------------------------------------------------
// Response bodies
// ---------------------------------------------------------------------------------------------

/// A JSON response body, written straight from the typed value.
///
/// Documents itself exactly as poem-openapi's `Json` does (same content type, the type's
/// schema), but poem-openapi's builds a `serde_json::Value` of the whole answer before writing
/// bytes: a map and a string for every field, which was a quarter of the server's time on a
/// page of 100 bank accounts.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T> std::ops::Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Type> Payload for Json<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

/// The bytes a [`Json`] body holds for `value`: serde_json's compact text, written straight from
/// the value. Anything that must equal what the server sends (a stored answer that is replayed,
/// for instance) takes its bytes from here.
pub fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(value)
}

impl<T: Type + serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match json_bytes(&self.0) {
            Ok(body) => Response::builder()
                .content_type(<Self as Payload>::CONTENT_TYPE)
                .body(body),
            // Generated types are structs, strings, numbers, lists and string-keyed maps, which
            // serde_json always writes; a failure would be a bug here, answered without detail.
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
}

/// `date-time` fields, written as chrono writes them (RFC 3339, `Z`, the shortest of 0, 3, 6 or 9
/// fraction digits that holds the value) without going through `core::fmt`.
///
/// chrono's `Serialize` formats through `Display`, which serde_json receives a few characters at
/// a time and scans for escapes piece by piece: with two timestamps an account, that was 8 % of
/// the server's time on a page of 100 accounts. The generator puts `serialize_with` on every
/// field whose schema is a `date-time` string. Anything outside the common case (a year outside
/// 0..=9999, a leap second) is left to chrono, so the text is always chrono's.
pub mod date_time {
    use chrono::{DateTime, Datelike, Timelike, Utc};

    /// The longest text of the common case: `9999-12-31T23:59:59.999999999Z`.
    const MAX_LEN: usize = 30;

    fn two(out: &mut [u8], at: usize, value: u32) {
        out[at] = b'0' + (value / 10) as u8;
        out[at + 1] = b'0' + (value % 10) as u8;
    }

    /// Writes `value` into `out` and answers the length, or `None` when chrono must do it.
    pub fn write(value: &DateTime<Utc>, out: &mut [u8; MAX_LEN]) -> Option<usize> {
        let year = value.year();
        let nanos = value.nanosecond();
        if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
            return None;
        }
        let year = year as u32;
        two(out, 0, year / 100);
        two(out, 2, year % 100);
        out[4] = b'-';
        two(out, 5, value.month());
        out[7] = b'-';
        two(out, 8, value.day());
        out[10] = b'T';
        two(out, 11, value.hour());
        out[13] = b':';
        two(out, 14, value.minute());
        out[16] = b':';
        two(out, 17, value.second());
        let (mut fraction, digits) = if nanos == 0 {
            (0, 0)
        } else if nanos % 1_000_000 == 0 {
            (nanos / 1_000_000, 3)
        } else if nanos % 1_000 == 0 {
            (nanos / 1_000, 6)
        } else {
            (nanos, 9)
        };
        let mut len = 19;
        if digits > 0 {
            out[19] = b'.';
            for i in (0..digits).rev() {
                out[20 + i] = b'0' + (fraction % 10) as u8;
                fraction /= 10;
            }
            len = 20 + digits;
        }
        out[len] = b'Z';
        Some(len + 1)
    }

    pub fn serialize<S: serde::Serializer>(
        value: &DateTime<Utc>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut out = [0u8; MAX_LEN];
        match write(value, &mut out).and_then(|len| std::str::from_utf8(&out[..len]).ok()) {
            Some(text) => serializer.serialize_str(text),
            None => serde::Serialize::serialize(value, serializer),
        }
    }

    pub fn serialize_option<S: serde::Serializer>(
        value: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serialize(value, serializer),
            None => serializer.serialize_none(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------------------------

/// Limits the server sets on request bodies (inserted into request data; default: none).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Largest JSON body, in bytes.
    pub json: usize,
    /// Largest file part of a multipart body, in bytes.
    pub file: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        Self {
            json: usize::MAX,
            file: usize::MAX,
        }
    }
}

/// Whether a `Content-Type` value names `media` (parameters ignored, case-insensitive).
fn media_type_is(content_type: &str, media: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
}

/// `application/json`, `text/json` (ASP.NET's) and any structured-syntax `+json` type
/// (`application/vnd.x+json`): the media types the generator reads and writes as JSON.
fn is_json_media(content_type: &str) -> bool {
    media_type_is(content_type, "application/json")
        || media_type_is(content_type, "text/json")
        || content_type
            .split(';')
            .next()
            .is_some_and(|m| m.trim().to_ascii_lowercase().ends_with("+json"))
}

/// A JSON request body validated against its documented schema before it is typed.
pub struct JsonBody<T, D>(pub T, pub PhantomData<D>);

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::Payload
    for JsonBody<T, D>
{
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(content_type: &str) -> bool {
        is_json_media(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::ParsePayload
    for JsonBody<T, D>
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        read_json::<T, D>(request, body)
            .await
            .map(|v| JsonBody(v, PhantomData))
    }
}

/// A JSON body read (at most the JSON limit), validated against `T`'s schema and typed.
async fn read_json<T: Type + ParseFromJSON + 'static, D: ApiDocument>(
    request: &Request,
    body: &mut RequestBody,
) -> poem::Result<T> {
    let bytes = limited_bytes(request, body).await?;
    let value: Value = serde_json::from_slice(bytes.as_ref()).map_err(|e| {
        poem::Error::from(RequestError::invalid_field(
            "body",
            format!("invalid JSON: {e}"),
        ))
    })?;
    checked_body::<T, D>(&registry_of::<T>(), value)
}

/// The body's bytes, at most the JSON limit: a larger body is refused (400) without being
/// buffered whole.
async fn limited_bytes(
    request: &Request,
    body: &mut RequestBody,
) -> poem::Result<impl AsRef<[u8]>> {
    let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
    body.take()?
        .into_bytes_limit(limits.json)
        .await
        .map_err(|e| match e {
            poem::error::ReadBodyError::PayloadTooLarge => poem::Error::from(RequestError {
                status: StatusCode::BAD_REQUEST,
                kind: RequestErrorKind::TooLarge,
                message: format!("request body is larger than {} bytes", limits.json),
                details: BTreeMap::new(),
            }),
            other => poem::Error::from(other),
        })
}

/// A body's JSON value validated against `T`'s schema (every problem collected, 400 with the
/// fields) and then typed.
fn checked_body<T: ParseFromJSON, D: ApiDocument>(
    registry: &Registry,
    value: Value,
) -> poem::Result<T> {
    checked_value::<T, D>(registry, value, "body")
}

/// A JSON value validated against `T`'s schema (every problem collected, 400 with the fields;
/// the value itself is called `root`) and then typed.
pub(crate) fn checked_value<T: ParseFromJSON, D: ApiDocument>(
    registry: &Registry,
    value: Value,
    root: &str,
) -> poem::Result<T> {
    let mut errors = BTreeMap::new();
    validate(
        registry,
        &T::schema_ref(),
        &value,
        "",
        &DocumentRules::<D>::new(),
        &mut errors,
    );
    if root != "body"
        && let Some(message) = errors.remove("body")
    {
        errors.insert(root.to_string(), message);
    }
    if !errors.is_empty() {
        let message = summarize(&errors);
        return Err(RequestError::invalid(message, errors).into());
    }
    T::parse_from_json(Some(value))
        .map_err(|e| RequestError::invalid_field(root, e.into_message()).into())
}

poem_openapi::impl_apirequest_for_payload!(JsonBody<T, D>, T: Type + ParseFromJSON + 'static, D: ApiDocument);

/// An optional JSON request body (`requestBody.required: false`): absent when the request has
/// no body, validated like [`JsonBody`] otherwise.
pub struct OptionalJsonBody<T, D>(pub Option<T>, pub PhantomData<D>);

impl<'a, T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::ApiExtractor<'a>
    for OptionalJsonBody<T, D>
{
    const TYPES: &'static [poem_openapi::ApiExtractorType] =
        &[poem_openapi::ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn request_meta() -> Option<poem_openapi::registry::MetaRequest> {
        Some(poem_openapi::registry::MetaRequest {
            description: None,
            content: vec![poem_openapi::registry::MetaMediaType {
                content_type: "application/json",
                schema: T::schema_ref(),
            }],
            required: false,
        })
    }

    async fn from_request(
        request: &'a Request,
        body: &mut RequestBody,
        _param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let declared_len = request
            .headers()
            .get(poem::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if request.content_type().is_none() && declared_len.unwrap_or(0) == 0 {
            return Ok(OptionalJsonBody(None, PhantomData));
        }
        match request.content_type() {
            Some(ct) if <JsonBody<T, D> as Payload>::check_content_type(ct) => {
                <JsonBody<T, D> as ParsePayload>::from_request(request, body)
                    .await
                    .map(|b| OptionalJsonBody(Some(b.0), PhantomData))
            }
            Some(ct) => Err(poem_openapi::error::ContentTypeError::NotSupported {
                content_type: ct.to_string(),
            }
            .into()),
            None => Err(poem_openapi::error::ContentTypeError::ExpectContentType.into()),
        }
    }
}

/// The body of a `default` response that declares none (poem-openapi needs one beside the
/// status): nothing is written.
pub struct NoBody;

impl IntoResponse for NoBody {
    fn into_response(self) -> Response {
        Response::default()
    }
}

impl poem_openapi::ResponseContent for NoBody {
    fn media_types() -> Vec<poem_openapi::registry::MetaMediaType> {
        Vec::new()
    }
}

/// A callback request to send, built by a generated crate's `callbacks::requests`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackRequest {
    /// The `operationId` (or derived name) of the operation that declares the callback.
    pub operation: &'static str,
    /// The callback's name.
    pub callback: &'static str,
    /// The HTTP method, upper case.
    pub method: &'static str,
    /// The runtime expression of the URL (`{$request.body#/url}`), for the server to resolve.
    pub url_expression: &'static str,
    /// The body's media type, when there is a body.
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
}

/// A callback or webhook body in `application/x-www-form-urlencoded`, its error as JSON's (the
/// error type of a generated `requests`).
pub fn form_bytes<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    serde_urlencoded::to_string(value)
        .map(String::into_bytes)
        .map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// What the runtime needs to know of one document; each generated crate implements it on its
/// `Document` type, which parameterises the body extractors.
pub trait ApiDocument: Send + Sync + 'static {
    /// The tables applied to the served document.
    const PATCH: &'static DocumentPatch;
    /// Header parameters some operation declares (checked to be text before routing).
    const DECLARED_HEADERS: &'static [&'static str];
    /// The document's security schemes.
    const SECURITY_SCHEMES: &'static [SecuritySchemeDef];
    /// Per secured operation (indexed as [`Auth`]'s `OP`): its requirements, alternatives in
    /// document order, each a list of (scheme name, scopes) that must all be presented; an
    /// empty alternative (`{}`) lets the operation run anonymously.
    const OPERATION_SECURITY: &'static [&'static [security::Requirement]];
    /// JSON Schema 2020-12 keywords `MetaSchema` cannot hold, by component name (OpenAPI 3.1+).
    const KEYWORDS: &'static [(&'static str, Keywords)] = &[];

    /// Whether a component rejects unknown fields (`additionalProperties: false`).
    fn is_closed(name: &str) -> bool {
        Self::PATCH.closed_schemas.contains(&name)
    }
}

fn summarize(errors: &BTreeMap<String, String>) -> String {
    let mut parts: Vec<String> = errors
        .iter()
        .take(3)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if errors.len() > 3 {
        parts.push(format!("and {} more", errors.len() - 3));
    }
    format!("invalid request: {}", parts.join("; "))
}

/// One file of a multipart body, read into memory within [`BodyLimits::file`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePart {
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

impl serde::Serialize for FilePart {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.file_name.as_deref().unwrap_or(""))
    }
}

impl<'de> serde::Deserialize<'de> for FilePart {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _ = <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d)?;
        Ok(FilePart::default())
    }
}

/// A multipart form the generator emitted: which parts are files.
pub trait MultipartForm: SpecType + serde::de::DeserializeOwned + Sized {
    const FILE_FIELDS: &'static [&'static str];
    fn attach_files(&mut self, files: &mut BTreeMap<String, FilePart>);
}

/// A text field of a form as the JSON value its declared property type reads it as (a value
/// that does not parse stays a string, so the validator names it).
fn text_value(form: &MetaSchema, name: &str, raw: String) -> Value {
    let ty = form
        .properties
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| match s {
            MetaSchemaRef::Inline(s) => s.ty,
            MetaSchemaRef::Reference(_) => "string",
        })
        .unwrap_or("string");
    match ty {
        "integer" => raw
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(raw)),
        "number" => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::String(raw)),
        "boolean" => match raw.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(raw),
        },
        _ => Value::String(raw),
    }
}

/// An `application/x-www-form-urlencoded` body: each field read as its declared property type
/// (a repeated field of an array property becomes the array), then validated like JSON.
pub struct FormBody<T, D>(pub T, pub PhantomData<D>);

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::Payload
    for FormBody<T, D>
{
    const CONTENT_TYPE: &'static str = "application/x-www-form-urlencoded";

    fn check_content_type(content_type: &str) -> bool {
        media_type_is(content_type, Self::CONTENT_TYPE)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::ParsePayload
    for FormBody<T, D>
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        read_form::<T, D>(request, body)
            .await
            .map(|v| FormBody(v, PhantomData))
    }
}

/// A form body read (at most the JSON limit): each field as its declared property type, then
/// validated like JSON and typed.
async fn read_form<T: Type + ParseFromJSON + 'static, D: ApiDocument>(
    request: &Request,
    body: &mut RequestBody,
) -> poem::Result<T> {
    let bytes = limited_bytes(request, body).await?;
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(bytes.as_ref()).map_err(|e| {
            poem::Error::from(RequestError::invalid_field(
                "body",
                format!("invalid form: {e}"),
            ))
        })?;
    let registry = registry_of::<T>();
    let form = match T::schema_ref() {
        MetaSchemaRef::Inline(s) => *s,
        MetaSchemaRef::Reference(n) => match registry.schemas.get(&n) {
            Some(s) => s.clone(),
            None => MetaSchema::ANY,
        },
    };
    let mut object = serde_json::Map::new();
    for (name, raw) in pairs {
        let is_array = form
            .properties
            .iter()
            .any(|(n, s)| *n == name && matches!(s, MetaSchemaRef::Inline(s) if s.ty == "array"));
        let value = text_value(&form, &name, raw);
        match object.get_mut(&name) {
            Some(Value::Array(items)) if is_array => items.push(value),
            _ if is_array => {
                object.insert(name, Value::Array(vec![value]));
            }
            _ => {
                object.insert(name, value);
            }
        }
    }
    checked_body::<T, D>(&registry, Value::Object(object))
}

poem_openapi::impl_apirequest_for_payload!(FormBody<T, D>, T: Type + ParseFromJSON + 'static, D: ApiDocument);

/// A body the document lists both as JSON and as `application/x-www-form-urlencoded` with one
/// schema: read as the request's `Content-Type` says, then validated and typed alike.
pub struct JsonOrFormBody<T, D>(pub T, pub PhantomData<D>);

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::Payload
    for JsonOrFormBody<T, D>
{
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(content_type: &str) -> bool {
        JsonBody::<T, D>::check_content_type(content_type)
            || FormBody::<T, D>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + ParseFromJSON + 'static, D: ApiDocument> poem_openapi::payload::ParsePayload
    for JsonOrFormBody<T, D>
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let form = request
            .content_type()
            .is_some_and(FormBody::<T, D>::check_content_type);
        let value = if form {
            read_form::<T, D>(request, body).await?
        } else {
            read_json::<T, D>(request, body).await?
        };
        Ok(JsonOrFormBody(value, PhantomData))
    }
}

poem_openapi::impl_apirequest_for_payload!(JsonOrFormBody<T, D>, T: Type + ParseFromJSON + 'static, D: ApiDocument);

/// A body of any other media type, as its bytes (any `Content-Type` is accepted).
pub struct RawBody(pub Vec<u8>);

impl poem_openapi::payload::Payload for RawBody {
    const CONTENT_TYPE: &'static str = "application/octet-stream";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Inline(Box::new(MetaSchema::new_with_format("string", "binary")))
    }
}

impl poem_openapi::payload::ParsePayload for RawBody {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
        Ok(RawBody(
            body.take()?.into_bytes_limit(limits.file).await?.to_vec(),
        ))
    }
}

poem_openapi::impl_apirequest_for_payload!(RawBody,);

/// A body the document lists in several media types of which the primary payload type handles
/// only some. In a request, the others reach the handler as written, for it to read; in a
/// response, the handler may write one of the others itself (`Accept` in its input says which
/// the client prefers; see [`negotiate`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Representation<T> {
    /// A media type the primary payload handles: parsed and validated in a request, written
    /// from the typed value in a response.
    Primary(T),
    /// Another media type the document lists for this body (`application/xml` beside JSON),
    /// with the body's bytes: the request's `Content-Type`, or the one the handler writes.
    Other { media_type: String, bytes: Vec<u8> },
}

/// A response variant's payload: documented as its primary payload (the served document lists
/// every media type as written).
impl<P: Payload> Payload for Representation<P> {
    const CONTENT_TYPE: &'static str = P::CONTENT_TYPE;

    fn check_content_type(content_type: &str) -> bool {
        P::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        P::schema_ref()
    }

    fn register(registry: &mut Registry) {
        P::register(registry);
    }
}

impl<P: IntoResponse> IntoResponse for Representation<P> {
    fn into_response(self) -> Response {
        match self {
            Representation::Primary(payload) => payload.into_response(),
            Representation::Other { media_type, bytes } => {
                let mut response = Response::builder().content_type(&media_type).body(bytes);
                response.extensions_mut().insert(negotiate::ChosenByHandler);
                response
            }
        }
    }
}

/// The media types a body lists beside those its primary extractor reads (a marker type per
/// body, written by the generator).
pub trait MediaTypes: Send + Sync + 'static {
    /// As the document writes them; `type/*` and `*/*` are ranges.
    const TYPES: &'static [&'static str];
}

/// A body extractor's value, as the handler's input holds it.
pub trait PayloadValue {
    type Value: Send + 'static;
    fn into_value(self) -> Self::Value;
}

impl<T: Send + 'static, D> PayloadValue for JsonBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl<T: Send + 'static, D> PayloadValue for FormBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl<T: Send + 'static, D> PayloadValue for JsonOrFormBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl<T: Send + 'static, D> PayloadValue for MultipartBody<T, D> {
    type Value = T;
    fn into_value(self) -> T {
        self.0
    }
}

impl PayloadValue for poem_openapi::payload::PlainText<String> {
    type Value = String;
    fn into_value(self) -> String {
        self.0
    }
}

/// Whether `content_type` is one of `listed` (a media type, `type/*` or `*/*`), parameters
/// and case aside.
pub fn media_listed(content_type: &str, listed: &[&str]) -> bool {
    let essence = |m: &str| {
        m.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    };
    let ct = essence(content_type);
    listed.iter().any(|l| {
        let l = essence(l);
        l == ct
            || l == "*/*"
            || l.strip_suffix("/*")
                .is_some_and(|t| ct.split('/').next() == Some(t))
    })
}

/// The body of a request in one of several listed media types: `P` reads the ones it reads,
/// `L` names the others, which are taken as their bytes ([`Representation::Other`]); any
/// other `Content-Type` is a 415, as for every body.
pub struct OrOther<P: PayloadValue, L>(pub Representation<P::Value>, pub PhantomData<L>);

impl<P, L> poem_openapi::payload::Payload for OrOther<P, L>
where
    P: poem_openapi::payload::Payload + poem_openapi::payload::ParsePayload + PayloadValue,
    L: MediaTypes,
{
    const CONTENT_TYPE: &'static str = P::CONTENT_TYPE;

    fn check_content_type(content_type: &str) -> bool {
        P::check_content_type(content_type) || media_listed(content_type, L::TYPES)
    }

    fn schema_ref() -> MetaSchemaRef {
        P::schema_ref()
    }

    fn register(registry: &mut Registry) {
        P::register(registry);
    }
}

impl<P, L> poem_openapi::payload::ParsePayload for OrOther<P, L>
where
    P: poem_openapi::payload::Payload + poem_openapi::payload::ParsePayload + PayloadValue,
    L: MediaTypes,
{
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let content_type = request.content_type().unwrap_or_default();
        if P::check_content_type(content_type) {
            let value = P::from_request(request, body).await?.into_value();
            return Ok(OrOther(Representation::Primary(value), PhantomData));
        }
        let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
        let bytes = body.take()?.into_bytes_limit(limits.file).await?.to_vec();
        Ok(OrOther(
            Representation::Other {
                media_type: content_type.to_string(),
                bytes,
            },
            PhantomData,
        ))
    }
}

poem_openapi::impl_apirequest_for_payload!(OrOther<P, L>, P: poem_openapi::payload::Payload + poem_openapi::payload::ParsePayload + PayloadValue, L: MediaTypes);

/// A `multipart/form-data` body: text parts are validated like JSON fields, file parts are
/// streamed with a size limit.
pub struct MultipartBody<T, D>(pub T, pub PhantomData<D>);

impl<T: MultipartForm, D: ApiDocument> poem_openapi::payload::Payload for MultipartBody<T, D> {
    const CONTENT_TYPE: &'static str = "multipart/form-data";

    fn check_content_type(content_type: &str) -> bool {
        media_type_is(content_type, "multipart/form-data")
    }

    fn schema_ref() -> MetaSchemaRef {
        match T::NAME {
            Some(name) => reference(name),
            None => inline(T::schema(&mut Registry::new())),
        }
    }

    fn register(registry: &mut Registry) {
        match T::NAME {
            Some(name) => registry.create_schema::<T, _>(name.to_string(), |r| T::schema(r)),
            None => {
                let _ = T::schema(registry);
            }
        }
    }
}

/// Reads one multipart part in chunks of at most `chunk_size` bytes, handing each to `each`
/// (which refuses by returning an error).
async fn read_part(
    field: poem::web::Field,
    chunk_size: usize,
    mut each: impl FnMut(&[u8]) -> poem::Result<()>,
) -> poem::Result<()> {
    let mut reader = Box::pin(field.into_async_read());
    let mut chunk = vec![0u8; chunk_size];
    loop {
        let n = tokio::io::AsyncReadExt::read(&mut reader, &mut chunk)
            .await
            .map_err(|e| {
                poem::Error::from(RequestError::invalid_field(
                    "body",
                    format!("malformed multipart body: {e}"),
                ))
            })?;
        if n == 0 {
            return Ok(());
        }
        each(&chunk[..n])?;
    }
}

impl<T: MultipartForm, D: ApiDocument> poem_openapi::payload::ParsePayload for MultipartBody<T, D> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let limits = request.data::<BodyLimits>().copied().unwrap_or_default();
        let mut multipart =
            <poem::web::Multipart as poem::FromRequest>::from_request(request, body).await?;
        let bad = |m: String| poem::Error::from(RequestError::invalid_field("body", m));
        let mut text = serde_json::Map::new();
        let mut files = BTreeMap::new();
        // Text parts together are capped like one JSON body, so that many parts (declared or
        // not: unknown ones are refused only once the form is complete) cannot add up to more
        // memory than one body may take. File parts are capped one by one, and a repeated file
        // part replaces the earlier one.
        let text_limit = limits.json.min(1024 * 1024);
        let mut text_total = 0usize;
        // Register the form itself too, so a named form's `$ref` resolves when validating.
        let mut registry = Registry::new();
        <Self as Payload>::register(&mut registry);
        let schema = T::schema(&mut registry);
        while let Some(field) = multipart
            .next_field()
            .await
            .map_err(|e| bad(format!("malformed multipart body: {e}")))?
        {
            let name = field.name().unwrap_or_default().to_string();
            if T::FILE_FIELDS.contains(&name.as_str()) {
                let file_name = field.file_name().map(str::to_string);
                let content_type = field.content_type().map(str::to_string);
                // The part is kept as the pieces read and joined once at the end: a growing
                // `Vec` doubles its capacity and copies, so a part refused near the limit had
                // held about 2.4 times the limit at its peak; this way it holds the bytes read.
                let mut pieces: Vec<Vec<u8>> = Vec::new();
                let mut read = 0usize;
                read_part(field, 64 * 1024, |chunk| {
                    if read + chunk.len() > limits.file {
                        let mut details = BTreeMap::new();
                        details.insert(
                            name.clone(),
                            format!("must be at most {} bytes", limits.file),
                        );
                        return Err(RequestError {
                            status: StatusCode::BAD_REQUEST,
                            kind: RequestErrorKind::TooLarge,
                            message: format!(
                                "file part `{name}` is larger than {} bytes",
                                limits.file
                            ),
                            details,
                        }
                        .into());
                    }
                    pieces.push(chunk.to_vec());
                    read += chunk.len();
                    Ok(())
                })
                .await?;
                let bytes = pieces.concat();
                text.insert(
                    name.clone(),
                    Value::String(file_name.clone().unwrap_or_default()),
                );
                files.insert(
                    name,
                    FilePart {
                        file_name,
                        content_type,
                        bytes,
                    },
                );
            } else {
                // Text parts are small by nature; cap them like a JSON body.
                let mut raw_bytes = Vec::new();
                read_part(field, 16 * 1024, |chunk| {
                    let n = chunk.len();
                    if raw_bytes.len() + n > text_limit {
                        return Err(RequestError::invalid_field(
                            name.clone(),
                            "text part is too large",
                        )
                        .into());
                    }
                    text_total += n;
                    if text_total > text_limit {
                        return Err(RequestError::invalid_field(
                            "body",
                            format!("text parts are larger than {text_limit} bytes in total"),
                        )
                        .into());
                    }
                    raw_bytes.extend_from_slice(chunk);
                    Ok(())
                })
                .await?;
                let raw = String::from_utf8(raw_bytes).map_err(|_| {
                    poem::Error::from(RequestError::invalid_field(
                        name.clone(),
                        "must be UTF-8 text",
                    ))
                })?;
                let value = text_value(&schema, &name, raw);
                text.insert(name, value);
            }
        }
        let value = Value::Object(text);
        let mut errors = BTreeMap::new();
        let schema_ref = <Self as poem_openapi::payload::Payload>::schema_ref();
        validate(
            &registry,
            &schema_ref,
            &value,
            "",
            &DocumentRules::<D>::new(),
            &mut errors,
        );
        if T::NAME.is_none() && matches!(schema_ref, MetaSchemaRef::Inline(_)) {
            // Inline forms are closed: only declared parts are accepted.
            if let Value::Object(map) = &value {
                for key in map.keys() {
                    if !schema.properties.iter().any(|(n, _)| n == key) {
                        errors.insert(key.clone(), "is not a known field".into());
                    }
                }
            }
        }
        if !errors.is_empty() {
            let message = summarize(&errors);
            return Err(RequestError::invalid(message, errors).into());
        }
        let mut form: T = serde_json::from_value(value)
            .map_err(|e| poem::Error::from(RequestError::invalid_field("body", e.to_string())))?;
        form.attach_files(&mut files);
        Ok(MultipartBody(form, PhantomData))
    }
}

poem_openapi::impl_apirequest_for_payload!(MultipartBody<T, D>, T: MultipartForm, D: ApiDocument);

// ---------------------------------------------------------------------------------------------
// The served document
// ---------------------------------------------------------------------------------------------

/// What the generator knows about the document beyond what poem-openapi can represent.
pub struct DocumentPatch {
    /// The source document's `openapi` version string.
    pub openapi: &'static str,
    /// Top-level `servers` (URLs) of the source.
    pub servers: &'static [&'static str],
    /// `components.securitySchemes` of the source as JSON (empty: none).
    pub security_schemes: &'static str,
    /// Top-level `security` of the source as JSON (empty: not written).
    pub global_security: &'static str,
    /// Operation-level `security` as written: (path, method, JSON). Operations not listed have
    /// none written.
    pub operation_security: &'static [(&'static str, &'static str, &'static str)],
    /// Array parameters with `explode: false` (parsed by [`Delimited`]): (path, method, `in`,
    /// name, `style` when it is not the location's default, else empty).
    pub unexploded_params: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Path parameters in `label` or `matrix` style (read by [`PathStyled`]): (path, method,
    /// `in`, name, style).
    pub path_styles: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Paths that name a variable twice, which poem serves renamed: (served, source).
    pub renamed_paths: &'static [(&'static str, &'static str)],
    /// Operation `callbacks` as written: (path, method, JSON).
    pub callbacks: &'static [(&'static str, &'static str, &'static str)],
    /// `content` maps the generated code cannot say itself (several or unusual media types):
    /// (path, method, `requestBody` or a status, JSON).
    pub content: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// Types with `additionalProperties: false` (what the validator refuses): components by
    /// name, inline types by the name they carry as `rust_typename`.
    pub closed_schemas: &'static [&'static str],
    /// Every `additionalProperties: true|false` of the source, by JSON pointer (poem-openapi's
    /// model can only say a schema; the served document mirrors the source's layout).
    pub additional_flags: &'static [(&'static str, bool)],
    /// Response links: (path, method, status, JSON of the `links` object).
    pub links: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// Binary response schemas (poem-openapi's `Binary` documents a fixed one): (path, method,
    /// status, media type, JSON of the schema).
    pub binary_schemas: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Parameter patterns checked by [`ParamPattern`]: (path, method, `in`, name, pattern).
    /// Integer and number parameters whose `format` is not what their Rust type documents
    /// (none, or one the generator reads as the base type): (path, method, `in`, name, the
    /// source's format, empty for none).
    pub param_formats: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    pub param_patterns: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Parameters written with `content` (read by [`JsonParam`]): (path, method, `in`, name,
    /// media type); poem-openapi serves a `schema`, which goes back under `content`.
    pub content_params: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Optional request bodies that are not JSON: (path, method). The handler takes them as
    /// required (poem-openapi's text and bytes payloads are), the document says what the
    /// source says.
    pub optional_bodies: &'static [(&'static str, &'static str)],
    /// Operations with a `description` and no `summary`: (path, method). poem-openapi serves
    /// the first paragraph of a doc comment as the summary; the document says what the source
    /// says.
    pub untitled_operations: &'static [(&'static str, &'static str)],
    /// Operations whose document declares no response: (path, method). Served with empty
    /// `responses`, as written (the handler's `default` variant is not documented).
    pub undeclared_responses: &'static [(&'static str, &'static str)],
    /// Parameter defaults the extracted type cannot hold (a date, a delimited array, a JSON
    /// parameter): (path, method, `in`, name, JSON of the default). Such a parameter is
    /// optional in the handler's input; the document still shows its default.
    pub param_defaults: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
    /// Parameter fields served as written (a `deepObject` map or free-form object, or one on a
    /// value the style does not apply to): (path, method, `in`, name, JSON object of fields;
    /// `null` removes the field).
    pub param_fields: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )],
}

/// The JSON pointer of an operation in a document (`/paths/~1pets/get`).
fn operation_pointer(path: &str, method: &str) -> String {
    format!(
        "/paths/{}/{method}",
        path.replace('~', "~0").replace('/', "~1")
    )
}

/// The served parameter `name` in `location` of the operation `method` `path`, if any.
fn served_param<'d>(
    doc: &'d mut Value,
    path: &str,
    method: &str,
    location: &str,
    name: &str,
) -> Option<&'d mut Value> {
    let pointer = format!("{}/parameters", operation_pointer(path, method));
    doc.pointer_mut(&pointer)?
        .as_array_mut()?
        .iter_mut()
        .find(|p| p["name"] == *name && p["in"] == *location)
}

/// Applies `patch` to the document poem-openapi produced.
pub fn patch_document(doc: &mut Value, patch: &DocumentPatch) {
    // First, so that every other table finds each path under its source name.
    for (served, source) in patch.renamed_paths {
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut)
            && let Some(item) = paths.remove(*served)
        {
            paths.insert(source.to_string(), item);
        }
    }
    doc["openapi"] = Value::String(patch.openapi.to_string());
    if !patch.servers.is_empty() {
        doc["servers"] = Value::Array(
            patch
                .servers
                .iter()
                .map(|u| serde_json::json!({ "url": u }))
                .collect(),
        );
    }
    // Security is served as written: poem-openapi's model cannot say alternatives, optional
    // (`{}`) requirements or scopes of every scheme kind, and [`Auth`] enforces it instead.
    if let Ok(schemes) = serde_json::from_str::<Value>(patch.security_schemes) {
        doc["components"]["securitySchemes"] = schemes;
    }
    if let Ok(security) = serde_json::from_str::<Value>(patch.global_security) {
        doc["security"] = security;
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            for (method, op) in item.as_object_mut().into_iter().flatten() {
                let Some(op) = op.as_object_mut() else {
                    continue;
                };
                let written = patch
                    .operation_security
                    .iter()
                    .find(|(p, m, _)| p == path && m == method)
                    .and_then(|(_, _, json)| serde_json::from_str::<Value>(json).ok());
                match written {
                    Some(security) => op.insert("security".into(), security),
                    None => op.remove("security"),
                };
            }
        }
    }
    for (path, method, place, json) in patch.content {
        let op = operation_pointer(path, method);
        let pointer = if *place == "requestBody" {
            format!("{op}/requestBody")
        } else {
            format!("{op}/responses/{place}")
        };
        if let (Some(Value::Object(target)), Ok(content)) = (
            doc.pointer_mut(&pointer),
            serde_json::from_str::<Value>(json),
        ) {
            target.insert("content".into(), content);
        }
    }
    for (path, method, json) in patch.callbacks {
        let pointer = operation_pointer(path, method);
        if let (Some(Value::Object(op)), Ok(callbacks)) = (
            doc.pointer_mut(&pointer),
            serde_json::from_str::<Value>(json),
        ) {
            op.insert("callbacks".into(), callbacks);
        }
    }
    for (pointer, flag) in patch.additional_flags {
        if let Some(Value::Object(schema)) = doc.pointer_mut(pointer.trim_start_matches('#')) {
            schema
                .entry("additionalProperties")
                .or_insert(Value::Bool(*flag));
        }
    }
    for (path, method, status, media, schema) in patch.binary_schemas {
        let pointer = format!(
            "{}/responses/{}/content/{}/schema",
            operation_pointer(path, method),
            status,
            media.replace('~', "~0").replace('/', "~1")
        );
        if let (Some(slot), Ok(schema)) = (
            doc.pointer_mut(&pointer),
            serde_json::from_str::<Value>(schema),
        ) {
            *slot = schema;
        }
    }
    for (path, method, location, name, style) in patch.unexploded_params {
        if let Some(param) = served_param(doc, path, method, location, name) {
            param["explode"] = Value::Bool(false);
            // `str::is_empty` by name: on a `&&str`, `.is_empty()` finds poem-openapi's
            // `Type::is_empty` of `&str` first, which is always false.
            if !str::is_empty(style) {
                param["style"] = Value::String(style.to_string());
            }
        }
    }
    for (path, method, location, name, style) in patch.path_styles {
        if let Some(param) = served_param(doc, path, method, location, name) {
            param["style"] = Value::String(style.to_string());
        }
    }
    for (path, method, location, name, media) in patch.content_params {
        if let Some(map) =
            served_param(doc, path, method, location, name).and_then(Value::as_object_mut)
            && let Some(schema) = map.remove("schema")
        {
            map.remove("explode");
            map.remove("style");
            map.insert(
                "content".into(),
                serde_json::json!({ *media: { "schema": schema } }),
            );
        }
    }
    for (path, method, location, name, pattern) in patch.param_patterns {
        if let Some(Value::Object(schema)) =
            served_param(doc, path, method, location, name).and_then(|p| p.get_mut("schema"))
        {
            schema.insert("pattern".into(), Value::String(pattern.to_string()));
        }
    }
    for (path, method, location, name, format) in patch.param_formats {
        if let Some(Value::Object(schema)) =
            served_param(doc, path, method, location, name).and_then(|p| p.get_mut("schema"))
        {
            if str::is_empty(format) {
                schema.remove("format");
            } else {
                schema.insert("format".into(), Value::String(format.to_string()));
            }
        }
    }
    for (path, method, location, name, default) in patch.param_defaults {
        if let (Some(Value::Object(schema)), Ok(default)) = (
            served_param(doc, path, method, location, name).and_then(|p| p.get_mut("schema")),
            serde_json::from_str::<Value>(default),
        ) {
            schema.insert("default".into(), default);
        }
    }
    for (path, method, location, name, fields) in patch.param_fields {
        if let (Some(Value::Object(param)), Ok(Value::Object(fields))) = (
            served_param(doc, path, method, location, name),
            serde_json::from_str::<Value>(fields),
        ) {
            for (key, value) in fields {
                if value.is_null() {
                    param.remove(&key);
                } else {
                    param.insert(key, value);
                }
            }
        }
    }
    for (path, method) in patch.undeclared_responses {
        if let Some(Value::Object(op)) = doc.pointer_mut(&operation_pointer(path, method)) {
            op.insert("responses".into(), Value::Object(serde_json::Map::new()));
        }
    }
    for (path, method) in patch.untitled_operations {
        let pointer = operation_pointer(path, method);
        if let Some(Value::Object(op)) = doc.pointer_mut(&pointer)
            && let Some(Value::String(first)) = op.remove("summary")
        {
            let text = match op.get("description").and_then(Value::as_str) {
                Some(rest) => format!("{first}\n\n{rest}"),
                None => first,
            };
            op.insert("description".into(), Value::String(text));
        }
    }
    for (path, method) in patch.optional_bodies {
        let pointer = format!("{}/requestBody", operation_pointer(path, method));
        if let Some(Value::Object(body)) = doc.pointer_mut(&pointer) {
            body.remove("required");
        }
    }
    for (path, method, status, links) in patch.links {
        let pointer = format!("{}/responses/{}", operation_pointer(path, method), status);
        if let Some(Value::Object(resp)) = doc.pointer_mut(&pointer) {
            if let Ok(links) = serde_json::from_str::<Value>(links) {
                resp.insert("links".into(), links);
            }
        }
    }
}

/// Serves a fixed body with a content type (the JSON and YAML documents).
pub fn static_endpoint(
    body: String,
    content_type: &'static str,
) -> impl Endpoint<Output = Response> {
    let body = Arc::new(body);
    poem::endpoint::make_sync(move |_| {
        Response::builder()
            .content_type(content_type)
            .body(body.as_str().to_string())
    })
}

/// Interactive docs (poem-openapi's Swagger UI, `ui`) that show `source`, the document as
/// written, rather than poem-openapi's OpenAPI 3.0 reading of it (`poem_spec`, which `html`
/// embeds). The bundled Swagger UI reads OpenAPI 3.1, not 3.2: a 3.2 document is shown labelled
/// 3.1.1 (the page only; `/openapi.json` serves it as written), so what 3.1 has is rendered and
/// what 3.2 adds (`query`, `additionalOperations`) is not listed.
pub fn source_docs(
    html: String,
    poem_spec: &str,
    source: &Value,
    ui: impl Endpoint + 'static,
) -> poem::Route {
    let mut shown = source.clone();
    if shown["openapi"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.2."))
    {
        shown["openapi"] = Value::String("3.1.1".into());
    }
    // The page embeds the document as a JavaScript expression: JSON is one.
    let html = match serde_json::to_string(&shown) {
        Ok(json) if html.contains(poem_spec) => html.replacen(poem_spec, &json, 1),
        _ => html,
    };
    poem::Route::new()
        .at(
            "/",
            poem::endpoint::make_sync(move |_| poem::web::Html(html.clone())),
        )
        // The OAuth receiver page of the same UI.
        .at("/oauth-receiver.html", ui)
}

#[cfg(test)]
mod tests {
    use super::media_listed;

    #[test]
    fn a_listed_media_type_matches_by_essence_and_ranges_match_their_types() {
        let listed = ["application/xml", "image/*"];
        assert!(media_listed("application/xml", &listed));
        assert!(media_listed("Application/XML; charset=utf-8", &listed));
        assert!(media_listed("image/png", &listed));
        assert!(!media_listed("text/xml", &listed));
        assert!(!media_listed("imagery/png", &listed));
        assert!(!media_listed("", &listed));
        assert!(media_listed("text/csv", &["*/*"]));
    }
}
