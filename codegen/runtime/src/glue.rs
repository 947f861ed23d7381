//! The routing glue's generic half: what poem-openapi's `#[OpenApi]` macro writes out again for
//! every operation and every input, written once.
//!
//! A generated crate describes each operation as an [`Operation`]: its route and the facts of
//! its description, one function that names the extractor of each input and the response type
//! (run once to describe the operation, once to register its types: [`Describer`]), and one
//! that builds its endpoint. Each input's facts (name, description, validators) are one
//! [`Input`] constant, read by both. The macro's expansion tested the kind of every input at run
//! time through `ApiExtractor::TYPES` in four blocks per input, written out per input; here it
//! is one generic function per concern, which rustc checks once.
//!
//! What is served is what the macro served: the same `MetaOperation` (the generator splits the
//! summary and description as the macro splits a doc comment; validators update the
//! parameter's schema), the same extractor options, the same `ParseParamError` when a validator
//! refuses a value, the same `OperationId` on the response.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use poem::endpoint::BoxEndpoint;
use poem::http::Method;
use poem::{EndpointExt, IntoResponse, Request, RequestBody, Response};
use poem_openapi::registry::{
    MetaApi, MetaOperation, MetaOperationParam, MetaPath, MetaResponses, MetaSchema, MetaSchemaRef,
    Registry,
};
use poem_openapi::types::ToJSON;
use poem_openapi::validation::{MaxLength, Maximum, MinLength, Minimum, Validator, ValidatorMeta};
use poem_openapi::{
    ApiExtractor, ApiExtractorType, ApiResponse, ExtractParamOptions, ParameterStyle, Tags,
};

use crate::{ParamPattern, Rejection};

/// What an operation's endpoint is given of its server: the server, or the rejection of a
/// service built only for the document ([`serve`]).
pub type Served<S> = Result<Arc<S>, Rejection>;

/// What an operation's endpoint answers: its response, or the error of a refused input.
pub type Outcome = poem::Result<Response>;

/// A request an operation's endpoint reads its inputs from: its head, and its body until an
/// input takes it.
pub struct Incoming {
    /// The request without its body.
    pub request: Request,
    /// Its body.
    pub body: RequestBody,
}

/// The routing table poem-openapi's `OpenApi::add_routes` fills.
pub type RouteTable = HashMap<String, HashMap<Method, BoxEndpoint<'static>>>;

/// One operation of a generated API over the server `S`.
pub struct Operation<S> {
    /// The path as the document writes it (`/entities/{id}`); poem routes it as
    /// [`Self::route`] says.
    pub path: &'static str,
    /// The HTTP method it is routed under.
    pub method: Method,
    /// Routed but not described (a method poem-openapi cannot route, sent here under another).
    pub hidden: bool,
    /// Its summary and description, as poem-openapi reads them from a doc comment (`""` for
    /// none).
    pub doc: (&'static str, &'static str),
    /// A deprecated operation.
    pub deprecated: bool,
    /// The operation id the document gives it (`""` for none).
    pub operation_id: &'static str,
    /// Names its tags, the extractor of each input and its response type to a [`Describer`].
    pub describe: fn(&mut Describer<'_>),
    /// Its endpoint over a server (`None` only for the document, which needs no server),
    /// with its operation id ([`endpoint`] sets it on every response).
    pub endpoint: EndpointFn<S>,
}

/// An operation's endpoint over a server: see [`Operation::endpoint`].
pub type EndpointFn<S> =
    Box<dyn Fn(Option<Arc<S>>, Option<&'static str>) -> BoxEndpoint<'static> + Send + Sync>;

impl<S: Send + Sync + 'static> Operation<S> {
    /// An operation routed and described as written (`operation_id` `""` for none), whose
    /// endpoint reads the request's inputs and calls the trait method with `serve` ([`serve`]):
    /// shown, not deprecated, without a summary or description, describing nothing of its
    /// inputs (the operation of a document served as written). The other methods say more.
    pub fn new<F, Fut>(
        method: Method,
        path: &'static str,
        operation_id: &'static str,
        serve: F,
    ) -> Self
    where
        F: Fn(Served<S>, Incoming) -> Fut + Copy + Send + Sync + 'static,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        Operation {
            path,
            method,
            hidden: false,
            doc: ("", ""),
            deprecated: false,
            operation_id,
            describe: |_| {},
            endpoint: Box::new(move |server, id| self::serve(id, server, serve)),
        }
    }

    /// Its summary and description (`""` for none) and its `describe` function.
    pub fn described(
        self,
        doc: (&'static str, &'static str),
        describe: fn(&mut Describer<'_>),
    ) -> Self {
        Operation {
            doc,
            describe,
            ..self
        }
    }

    /// Routed but not described.
    pub fn hidden(self) -> Self {
        Operation {
            hidden: true,
            ..self
        }
    }

    /// Deprecated.
    pub fn deprecated(self) -> Self {
        Operation {
            deprecated: true,
            ..self
        }
    }
}

impl<S> Operation<S> {
    /// The path as poem routes it: each `{variable}` segment is the next `:paramN`
    /// (`/entities/{id}` is `/entities/:param0`), as poem-openapi's macro routes it.
    pub fn route(&self) -> String {
        let mut route = String::new();
        let mut n = 0;
        for segment in self.path.split('/').filter(|s| !s.is_empty()) {
            route.push('/');
            if segment.starts_with('{') && segment.ends_with('}') {
                route.push_str(&format!(":param{n}"));
                n += 1;
            } else {
                route.push_str(segment);
            }
        }
        if route.is_empty() {
            route.push('/');
        }
        route
    }
}

/// What an operation's `describe` function tells its tags, inputs and response to: the
/// operation's `MetaOperation`, or the registry of the document's types.
pub enum Describer<'a> {
    /// Filling in the description.
    Meta(&'a mut MetaOperation),
    /// Registering the types (`hidden`: only the tags, as poem-openapi registers a hidden
    /// operation's).
    Register {
        /// The registry.
        registry: &'a mut Registry,
        /// The operation is hidden.
        hidden: bool,
    },
}

impl Describer<'_> {
    /// One of the operation's tags.
    pub fn tag<T: Tags>(&mut self, tag: &T) {
        match self {
            Describer::Meta(op) => op.tags.push(tag.name()),
            Describer::Register { registry, .. } => tag.register(registry),
        }
    }

    /// An input read by the extractor `E`: a parameter (its schema with the validators'
    /// keywords merged in), a request body, or security requirements, as `E`'s kinds say.
    pub fn input<'r, E: ApiExtractor<'r>>(&mut self, input: &Input) {
        self.input_with::<E>(input, None);
    }

    /// A parameter with a default, read by the extractor `E`.
    pub fn defaulted<'r, E: ApiExtractor<'r>, T: ToJSON>(
        &mut self,
        input: &Input,
        default: fn() -> T,
    ) {
        self.input_with::<E>(input, default().to_json());
    }

    /// The response type.
    pub fn response<R: ApiResponse>(&mut self) {
        match self {
            Describer::Meta(op) => op.responses = R::meta(),
            Describer::Register { registry, hidden } => {
                if !*hidden {
                    R::register(registry);
                }
            }
        }
    }

    fn input_with<'r, E: ApiExtractor<'r>>(
        &mut self,
        input: &Input,
        default: Option<serde_json::Value>,
    ) {
        match self {
            Describer::Meta(op) => describe::<E>(op, input, default),
            Describer::Register { registry, hidden } => {
                if !*hidden {
                    E::register(registry);
                }
            }
        }
    }
}

/// Adds what `E` contributes to an operation's description.
fn describe<'r, E: ApiExtractor<'r>>(
    operation: &mut MetaOperation,
    input: &Input,
    default: Option<serde_json::Value>,
) {
    if E::TYPES.contains(&ApiExtractorType::Parameter) {
        let original = E::param_schema_ref().expect("a parameter extractor has a schema");
        let mut patch = MetaSchema::ANY;
        let has_default = default.is_some();
        patch.default = default;
        if !input.rules.is_empty() {
            // Element validators: on the items of an array, the values of a map, or the value.
            let mut elements = MetaSchema::ANY;
            let target = if original.is_array() || original.is_object() {
                &mut elements
            } else {
                &mut patch
            };
            for rule in input.rules {
                rule.update_meta(target);
            }
            let elements = Some(Box::new(MetaSchemaRef::Inline(Box::new(elements))));
            if original.is_array() {
                patch.items = elements;
            } else if original.is_object() {
                patch.additional_properties = elements;
            }
        }
        operation.params.push(MetaOperationParam {
            name: input.name.to_string(),
            schema: original.merge(patch),
            in_type: E::param_in().expect("a parameter extractor has a location"),
            description: input.description.map(str::to_string),
            required: E::PARAM_IS_REQUIRED && !has_default,
            deprecated: input.deprecated,
            explode: true,
            style: input.style,
        });
    }
    if E::TYPES.contains(&ApiExtractorType::RequestObject) {
        operation.request = E::request_meta();
        if let Some(request) = operation.request.as_mut()
            && request.description.is_none()
        {
            request.description = input.description;
        }
    }
    if E::TYPES.contains(&ApiExtractorType::SecurityScheme) {
        for name in E::security_schemes() {
            operation.security.push(HashMap::from([(name, Vec::new())]));
        }
        if E::has_security_fallback() {
            operation.security.push(HashMap::new());
        }
    }
}

/// What a generated operation says of one of its inputs besides its extractor's type.
#[derive(Clone, Copy)]
pub struct Input {
    /// The parameter's name (an argument's name for a body or credentials).
    pub name: &'static str,
    /// The name its extractor looks up: the name, or `paramN` for the N-th path parameter (as
    /// poem routes them).
    pub key: &'static str,
    /// Its description, as poem-openapi reads a doc comment.
    pub description: Option<&'static str>,
    /// A deprecated parameter.
    pub deprecated: bool,
    /// Its style, when not the default of where it is.
    pub style: Option<ParameterStyle>,
    /// Its validators, in poem-openapi's order.
    pub rules: &'static [Rule],
}

impl Input {
    /// An input known by its name only.
    pub const fn named(name: &'static str) -> Self {
        Input {
            name,
            key: name,
            description: None,
            deprecated: false,
            style: None,
            rules: &[],
        }
    }

    /// Looked up by another name (`paramN` for a path parameter).
    pub const fn key(self, key: &'static str) -> Self {
        Input { key, ..self }
    }

    /// With a description.
    pub const fn described(self, description: &'static str) -> Self {
        Input {
            description: Some(description),
            ..self
        }
    }

    /// Deprecated.
    pub const fn deprecated(self) -> Self {
        Input {
            deprecated: true,
            ..self
        }
    }

    /// A `deepObject` query parameter.
    pub const fn deep_object(self) -> Self {
        Input {
            style: Some(ParameterStyle::DeepObject),
            ..self
        }
    }

    /// With validators.
    pub const fn rules(self, rules: &'static [Rule]) -> Self {
        Input { rules, ..self }
    }

    /// The options its extractor reads it with.
    pub fn options<T>(&self) -> ExtractParamOptions<T> {
        ExtractParamOptions {
            name: self.key,
            ignore_case: false,
            default_value: None,
            example_value: None,
            explode: true,
            style: self.style,
        }
    }

    /// The options for a parameter with a default.
    pub fn defaulted<T>(&self, default: fn() -> T) -> ExtractParamOptions<T> {
        ExtractParamOptions {
            default_value: Some(default),
            ..self.options()
        }
    }

    /// Reads the input from `incoming` with its extractor `E`.
    pub fn read<'a, E: ApiExtractor<'a> + 'a>(
        &self,
        incoming: &'a mut Incoming,
    ) -> impl Future<Output = poem::Result<E>> + Send + 'a {
        E::from_request(&incoming.request, &mut incoming.body, self.options())
    }

    /// Reads the input from `incoming` with its extractor `E` and checks it against its rules
    /// ([`check`]).
    pub fn checked<'a, E: ApiExtractor<'a> + 'a>(
        &'a self,
        incoming: &'a mut Incoming,
    ) -> impl Future<Output = poem::Result<E>> + Send + 'a
    where
        E::ParamRawType: RawParam,
    {
        then_check(self.read(incoming), self)
    }

    /// Read with `default` when the request leaves it out.
    pub fn or<T>(&self, default: fn() -> T) -> Defaulted<'_, T> {
        Defaulted {
            input: self,
            default,
        }
    }
}

/// An input read with a default when the request leaves it out ([`Input::or`]).
pub struct Defaulted<'i, T> {
    input: &'i Input,
    default: fn() -> T,
}

impl<'i, T> Defaulted<'i, T> {
    /// Reads the input from `incoming` with its extractor `E`.
    pub fn read<'a, E: ApiExtractor<'a, ParamType = T> + 'a>(
        &self,
        incoming: &'a mut Incoming,
    ) -> impl Future<Output = poem::Result<E>> + Send + 'a {
        let options = self.input.defaulted(self.default);
        E::from_request(&incoming.request, &mut incoming.body, options)
    }

    /// Reads the input from `incoming` with its extractor `E` and checks it against its rules.
    pub fn checked<'a, E: ApiExtractor<'a, ParamType = T> + 'a>(
        &self,
        incoming: &'a mut Incoming,
    ) -> impl Future<Output = poem::Result<E>> + Send + 'a
    where
        E::ParamRawType: RawParam,
        'i: 'a,
    {
        then_check(self.read(incoming), self.input)
    }
}

/// The value `read` gives, checked against `input`'s rules ([`check`]).
async fn then_check<'a, E: ApiExtractor<'a>>(
    read: impl Future<Output = poem::Result<E>>,
    input: &Input,
) -> poem::Result<E>
where
    E::ParamRawType: RawParam,
{
    let value = read.await?;
    check(&value, input)?;
    Ok(value)
}

/// A parameter's validator: poem-openapi's bounds and lengths (which also write the schema's
/// keywords), and the pattern through [`ParamPattern`] (which does not, as a custom validator).
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// `maxLength`.
    MaxLength(usize),
    /// `minLength`.
    MinLength(usize),
    /// `maximum`, exclusive or not.
    Maximum(f64, bool),
    /// `minimum`, exclusive or not.
    Minimum(f64, bool),
    /// `pattern`.
    Pattern(&'static str),
}

impl Rule {
    fn update_meta(&self, schema: &mut MetaSchema) {
        match *self {
            Rule::MaxLength(n) => MaxLength::new(n).update_meta(schema),
            Rule::MinLength(n) => MinLength::new(n).update_meta(schema),
            Rule::Maximum(n, exclusive) => Maximum::new(n, exclusive).update_meta(schema),
            Rule::Minimum(n, exclusive) => Minimum::new(n, exclusive).update_meta(schema),
            Rule::Pattern(_) => {}
        }
    }
}

/// A parameter's raw value, which its [`Rule`]s check; the refusal names the validator as
/// poem-openapi does (`maxLength(255)`).
pub trait RawParam {
    /// `None` when the value passes `rule`, else the validator's name.
    fn refused_by(&self, rule: &Rule) -> Option<String>;
}

/// A validator's name when it refuses `value`.
fn refusal<T, V: Validator<T>>(validator: V, value: &T) -> Option<String> {
    (!validator.check(value)).then(|| validator.to_string())
}

impl RawParam for String {
    fn refused_by(&self, rule: &Rule) -> Option<String> {
        match *rule {
            Rule::MaxLength(n) => refusal(MaxLength::new(n), self),
            Rule::MinLength(n) => refusal(MinLength::new(n), self),
            Rule::Pattern(p) => refusal(ParamPattern(p), self),
            // The generator gives bounds only to numbers.
            Rule::Maximum(..) | Rule::Minimum(..) => None,
        }
    }
}

macro_rules! numeric_raw_params {
    ($($t:ty),*) => {$(
        impl RawParam for $t {
            fn refused_by(&self, rule: &Rule) -> Option<String> {
                match *rule {
                    Rule::Maximum(n, exclusive) => refusal(Maximum::new(n, exclusive), self),
                    Rule::Minimum(n, exclusive) => refusal(Minimum::new(n, exclusive), self),
                    // The generator gives lengths and patterns only to strings.
                    Rule::MaxLength(_) | Rule::MinLength(_) | Rule::Pattern(_) => None,
                }
            }
        }
    )*};
}

numeric_raw_params!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Checks a parameter's value against its rules, in order; the first that refuses it is the
/// request's 400 (`ParseParamError`, worded as poem-openapi words it).
pub fn check<'r, E: ApiExtractor<'r>>(value: &E, input: &Input) -> poem::Result<()>
where
    E::ParamRawType: RawParam,
{
    let Some(raw) = value.param_raw_type() else {
        return Ok(());
    };
    match input.rules.iter().find_map(|rule| raw.refused_by(rule)) {
        None => Ok(()),
        Some(validator) => Err(poem_openapi::error::ParseParamError {
            name: input.name,
            reason: format!("verification failed. {validator}"),
        }
        .into()),
    }
}

/// The `MetaApi` of a list of operations: one `MetaPath` per path, in the order paths first
/// appear, each with its operations in order; hidden operations are left out.
pub fn meta<S>(operations: &[Operation<S>]) -> Vec<MetaApi> {
    let mut paths: Vec<MetaPath> = Vec::new();
    for o in operations.iter().filter(|o| !o.hidden) {
        let mut operation = MetaOperation {
            tags: Vec::new(),
            method: o.method.clone(),
            summary: some(o.doc.0),
            description: some(o.doc.1),
            external_docs: None,
            params: Vec::new(),
            request: None,
            responses: MetaResponses {
                responses: Vec::new(),
            },
            deprecated: o.deprecated,
            security: Vec::new(),
            operation_id: some(o.operation_id),
            code_samples: Vec::new(),
        };
        (o.describe)(&mut Describer::Meta(&mut operation));
        match paths.iter_mut().find(|p| p.path == o.path) {
            Some(path) => path.operations.push(operation),
            None => paths.push(MetaPath {
                path: o.path.to_string(),
                operations: vec![operation],
            }),
        }
    }
    vec![MetaApi { paths }]
}

/// Registers every operation's types and tags.
pub fn register<S>(operations: &[Operation<S>], registry: &mut Registry) {
    for o in operations {
        (o.describe)(&mut Describer::Register {
            registry,
            hidden: o.hidden,
        });
    }
}

/// Adds every operation's endpoint over `server` to poem-openapi's routing table.
pub fn add_routes<S>(
    operations: &[Operation<S>],
    server: &Option<Arc<S>>,
    route_table: &mut RouteTable,
) {
    for o in operations {
        route_table.entry(o.route()).or_default().insert(
            o.method.clone(),
            (o.endpoint)(server.clone(), some(o.operation_id)),
        );
    }
}

/// `None` for an empty text.
fn some(text: &'static str) -> Option<&'static str> {
    (!text.is_empty()).then_some(text)
}

/// The server of an endpoint, or the rejection of one built only for the document.
pub fn server<S>(server: &Option<Arc<S>>) -> Result<Arc<S>, Rejection> {
    server.clone().ok_or_else(Rejection::document_only)
}

/// An operation's response as poem's result.
pub fn respond<T: IntoResponse>(response: T) -> poem::Result<Response> {
    Ok(response.into_response())
}

/// An operation's endpoint over `server`: `serve` reads the request's inputs and calls the
/// trait method ([`endpoint`] sets the operation id). `serve` is given the server, or the
/// rejection of a service built only for the document, to answer after reading the inputs.
pub fn serve<S, F, Fut>(
    operation_id: Option<&'static str>,
    server: Option<Arc<S>>,
    serve: F,
) -> BoxEndpoint<'static>
where
    S: Send + Sync + 'static,
    F: Fn(Served<S>, Incoming) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    endpoint(operation_id, move |request, body| {
        serve(self::server(&server), Incoming { request, body })
    })
}

/// An operation's endpoint: `handler` over every request, the operation id (when the
/// document gives one) set on its response or error, as poem-openapi sets it.
pub fn endpoint<F, Fut>(operation_id: Option<&'static str>, handler: F) -> BoxEndpoint<'static>
where
    F: Fn(Request, RequestBody) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = poem::Result<Response>> + Send + 'static,
{
    let endpoint = poem::endpoint::make(move |request: Request| {
        let (request, body) = request.split();
        handler(request, body)
    });
    match operation_id {
        None => endpoint.boxed(),
        Some(id) => endpoint
            .after(move |mut res| async move {
                let id = poem_openapi::OperationId(id);
                match &mut res {
                    Ok(resp) => resp.set_data(id),
                    Err(err) => err.set_data(id),
                }
                res
            })
            .boxed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(path: &'static str, hidden: bool) -> Operation<()> {
        Operation {
            path,
            method: Method::GET,
            hidden,
            doc: (path, ""),
            deprecated: false,
            operation_id: "",
            describe: |_| {},
            endpoint: Box::new(|_, _| endpoint(None, |_, _| async { respond("ok") })),
        }
    }

    #[test]
    fn routes_number_the_path_variables_in_order() {
        let route = |path| op(path, false).route();
        assert_eq!(route("/"), "/");
        assert_eq!(route("/platform"), "/platform");
        assert_eq!(route("/a/{id}/b/{b_id}"), "/a/:param0/b/:param1");
        assert_eq!(route("/files/{name}.{ext}"), "/files/:param0");
        assert_eq!(route("/a/{x}.json/{y}"), "/a/{x}.json/:param0");
    }

    #[test]
    fn meta_groups_operations_by_path_in_first_seen_order_without_hidden_ones() {
        let ops = [
            op("/b", false),
            op("/a", false),
            op("/b", false),
            op("/c", true),
        ];
        let api = meta(&ops);
        let paths: Vec<(&str, usize)> = api[0]
            .paths
            .iter()
            .map(|p| (p.path.as_str(), p.operations.len()))
            .collect();
        assert_eq!(paths, vec![("/b", 2), ("/a", 1)]);
        assert_eq!(api[0].paths[1].operations[0].summary, Some("/a"));
    }

    #[test]
    fn rules_refuse_in_order_with_poem_openapis_words() {
        use poem_openapi::param::Query;
        const Q: Input = Input::named("q").rules(&[
            Rule::MinLength(1),
            Rule::MaxLength(3),
            Rule::Pattern("^[a-z]+$"),
        ]);
        assert!(check(&Query(Some("abc".to_string())), &Q).is_ok());
        let err = check(&Query(Some("abcdef".to_string())), &Q).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to parse parameter `q`: verification failed. maxLength(3)"
        );
        let err = check(&Query(Some("AB".to_string())), &Q).unwrap_err();
        assert!(err.to_string().ends_with("pattern(\"^[a-z]+$\")"), "{err}");
        assert!(check(&Query(None::<String>), &Q).is_ok());
        const N: Input = Input::named("n").rules(&[Rule::Maximum(10.0, true)]);
        assert!(check(&Query(9i64), &N).is_ok());
        assert!(check(&Query(10i64), &N).is_err());
    }

    /// A request as poem-openapi's service hands it on: its query string parsed.
    fn incoming(uri: &str) -> Incoming {
        let (mut request, body) = Request::builder().uri_str(uri).finish().split();
        let query = request
            .params::<Vec<(String, String)>>()
            .unwrap_or_default();
        request
            .extensions_mut()
            .insert(poem_openapi::__private::UrlQuery(query));
        Incoming { request, body }
    }

    #[tokio::test]
    async fn inputs_are_read_with_their_defaults_and_checked_against_their_rules() {
        use poem_openapi::param::Query;
        const LIMIT: Input =
            Input::named("limit").rules(&[Rule::Maximum(100.0, false), Rule::Minimum(1.0, false)]);
        let ten = || 10i64;
        let read: Query<i64> = LIMIT.or(ten).checked(&mut incoming("/")).await.unwrap();
        assert_eq!(read.0, 10);
        let read: Query<i64> = LIMIT
            .or(ten)
            .checked(&mut incoming("/?limit=7"))
            .await
            .unwrap();
        assert_eq!(read.0, 7);
        let mut over = incoming("/?limit=500");
        let Err(err) = LIMIT.or(ten).checked::<Query<i64>>(&mut over).await else {
            panic!("500 is over the maximum");
        };
        let err = err.to_string();
        assert!(
            err.ends_with("verification failed. maximum(100, exclusive: false)"),
            "{err}"
        );
        // Read without checking, the same value passes; without a default, absent is refused.
        let read: Query<i64> = LIMIT.read(&mut incoming("/?limit=500")).await.unwrap();
        assert_eq!(read.0, 500);
        assert!(LIMIT.read::<Query<i64>>(&mut incoming("/")).await.is_err());
        let absent: Query<Option<i64>> = LIMIT.checked(&mut incoming("/")).await.unwrap();
        assert_eq!(absent.0, None);
    }

    #[test]
    fn a_parameter_is_described_with_its_rules_and_default() {
        use poem_openapi::param::Query;
        let mut operation = MetaOperation {
            tags: vec![],
            method: Method::GET,
            summary: None,
            description: None,
            external_docs: None,
            params: vec![],
            request: None,
            responses: MetaResponses { responses: vec![] },
            deprecated: false,
            security: vec![],
            operation_id: None,
            code_samples: vec![],
        };
        const LIMIT: Input = Input::named("limit")
            .described("How many.")
            .rules(&[Rule::Maximum(100.0, false), Rule::Minimum(1.0, false)]);
        let mut d = Describer::Meta(&mut operation);
        d.defaulted::<Query<i64>, i64>(&LIMIT, || 10);
        let p = &operation.params[0];
        assert_eq!((p.name.as_str(), p.required), ("limit", false));
        assert_eq!(p.description.as_deref(), Some("How many."));
        let MetaSchemaRef::Inline(schema) = &p.schema else {
            panic!("an inline schema");
        };
        assert_eq!((schema.maximum, schema.minimum), (Some(100.0), Some(1.0)));
        assert_eq!(schema.default, Some(serde_json::json!(10)));
    }
}
