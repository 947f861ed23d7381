//! The intermediate representation: what the generator understood of a document.
//!
//! Plain data, no tokens and nothing of poem: the parser builds it, the emitters render it,
//! and tests inspect it. Order is the document's order everywhere (deterministic output).

use std::collections::{HashMap, HashSet};

/// A whole API.
#[derive(Debug, Clone, PartialEq)]
pub struct Api {
    pub openapi: String,
    pub title: String,
    pub version: String,
    pub description: Option<String>,
    pub servers: Vec<String>,
    /// Every tag an operation uses (document order, then first use), plus the unserved default
    /// tag when some operation has none.
    pub tags: Vec<Tag>,
    pub security_schemes: Vec<SecurityScheme>,
    /// `components.securitySchemes` as JSON text, as written (served as written).
    pub security_schemes_json: Option<String>,
    /// Top-level `security` as JSON text, when written (served as written).
    pub global_security_json: Option<String>,
    /// Every `additionalProperties: true|false` written, by JSON pointer of its schema.
    pub additional_flags: Vec<(String, bool)>,
    /// Named types: components first, then types hoisted from inline schemas.
    pub types: Vec<TypeDef>,
    pub operations: Vec<Operation>,
    /// Top-level `webhooks` (OpenAPI 3.1+): requests the API sends to URLs its callers
    /// register, by webhook name (`expression` empty), in document order.
    pub webhooks: Vec<Callback>,
    /// The document as written, as JSON text, for an OpenAPI 3.1 or 3.2 document: served as
    /// it is (poem-openapi writes 3.0). `None` for 3.0, served from the types.
    pub source: Option<String>,
    /// What was accepted with a weaker meaning than the document's, each as `pointer: why`
    /// (the fidelity report).
    pub warnings: Vec<String>,
}

impl Api {
    /// The document is served as written (OpenAPI 3.1 and 3.2: poem-openapi writes 3.0), so
    /// nothing reads poem-openapi's own rendering of it but the check that no two operations
    /// share an id: the glue and the response enums then describe no more than that (no
    /// descriptions, tags, media or headers), and the document patch carries only what the
    /// extractors read.
    pub fn serves_source(&self) -> bool {
        self.source.is_some()
    }

    /// The tags that hold a trait: those that are some operation's first tag (or the default).
    pub fn trait_tags(&self) -> impl Iterator<Item = &Tag> {
        self.tags
            .iter()
            .filter(|t| self.operations.iter().any(|o| o.tag == t.name))
    }

    /// The named types `roots` reach through references, in first-reached order.
    pub fn types_reached<'s>(
        &'s self,
        roots: impl IntoIterator<Item = &'s Schema>,
    ) -> Vec<&'s str> {
        let index: HashMap<&str, &TypeDef> =
            self.types.iter().map(|t| (t.name.as_str(), t)).collect();
        self.walk(Some(&index), roots)
    }

    /// The named types `t`'s own schema names, without following them: the edges of the
    /// type graph (in first-named order).
    pub fn direct_refs<'s>(&'s self, t: &'s TypeDef) -> Vec<&'s str> {
        self.walk(None, [&t.schema])
    }

    /// Which ways each of [`Api::types`] (same order) crosses the wire for a server: read from
    /// requests (parameters and bodies), written in responses and in the callbacks and webhooks
    /// the server sends. A type no operation reaches (a payload of `x-webhooks`, a schema kept
    /// for the implementer) counts as written, and so does everything it holds. Closed under
    /// reachability: what a read type holds is read, what a written type holds is written, so
    /// every derive finds the impls of its fields.
    pub fn directions(&self) -> Vec<Direction> {
        let index: HashMap<&str, &TypeDef> =
            self.types.iter().map(|t| (t.name.as_str(), t)).collect();
        let read: HashSet<&str> = self
            .walk(
                Some(&index),
                self.operations.iter().flat_map(|o| {
                    o.params
                        .iter()
                        .map(|p| &p.schema)
                        .chain(o.body.iter().map(|b| &b.schema))
                }),
            )
            .into_iter()
            .collect();
        let mut written: HashSet<&str> = self
            .walk(
                Some(&index),
                self.operations
                    .iter()
                    .flat_map(|o| {
                        o.responses
                            .iter()
                            .filter_map(|r| r.content.as_ref().map(|c| &c.2))
                            .chain(o.callbacks.iter().filter_map(Callback::sent))
                    })
                    .chain(self.webhooks.iter().filter_map(Callback::sent)),
            )
            .into_iter()
            .collect();
        let unreached: Vec<&TypeDef> = self
            .types
            .iter()
            .filter(|t| !read.contains(t.name.as_str()) && !written.contains(t.name.as_str()))
            .collect();
        written.extend(unreached.iter().map(|t| t.name.as_str()));
        written.extend(self.walk(Some(&index), unreached.iter().map(|t| &t.schema)));
        self.types
            .iter()
            .map(|t| Direction {
                read: read.contains(t.name.as_str()),
                write: written.contains(t.name.as_str()),
            })
            .collect()
    }

    /// The named types `roots` reach, following each reference through `index` (`None`: not
    /// following them).
    fn walk<'s>(
        &'s self,
        index: Option<&HashMap<&str, &'s TypeDef>>,
        roots: impl IntoIterator<Item = &'s Schema>,
    ) -> Vec<&'s str> {
        let mut found: Vec<&str> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut stack: Vec<&Schema> = roots.into_iter().collect();
        stack.reverse();
        while let Some(s) = stack.pop() {
            let mut children: Vec<&Schema> = match &s.kind {
                Kind::Ref(name) => {
                    if seen.insert(name) {
                        found.push(name);
                        if let Some(t) = index.and_then(|i| i.get(name.as_str())) {
                            stack.push(&t.schema);
                        }
                    }
                    Vec::new()
                }
                Kind::Array(item) => vec![item],
                Kind::Object(o) => {
                    let mut c: Vec<&Schema> = o.all_of.iter().collect();
                    c.extend(o.properties.iter().map(|p| &p.schema));
                    if let Additional::Schema(v) = &o.additional {
                        c.push(v);
                    }
                    c
                }
                Kind::AllOf(m) | Kind::AnyOf(m) | Kind::OneOf { variants: m, .. } => {
                    m.iter().collect()
                }
                _ => Vec::new(),
            };
            children.extend(s.keywords.schemas());
            children.reverse();
            stack.extend(children);
        }
        found
    }

    /// The named types an operation's request (parameters and body) reaches.
    pub fn request_types<'s>(&'s self, o: &'s Operation) -> Vec<&'s str> {
        self.types_reached(
            o.params
                .iter()
                .map(|p| &p.schema)
                .chain(o.body.iter().map(|b| &b.schema)),
        )
    }

    /// The named types an operation's responses reach.
    pub fn response_types<'s>(&'s self, o: &'s Operation) -> Vec<&'s str> {
        self.types_reached(
            o.responses
                .iter()
                .filter_map(|r| r.content.as_ref().map(|c| &c.2)),
        )
    }
}

/// Which ways a type crosses the wire: read (deserialised from a request) and/or written
/// (serialised into a response or an outgoing callback). The emitter derives only what is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Direction {
    pub read: bool,
    pub write: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    pub name: String,
    /// Rust identifier stem (`Bank Accounts` → `BankAccounts`), unique among tags.
    pub rust: String,
    /// The module of its trait (snake case, unique, never `models`, `server` or `runtime`).
    pub module: String,
    pub description: Option<String>,
    /// False for the tag the generator supplies to operations without one (`DefaultApi`):
    /// it has a trait but is not served.
    pub served: bool,
}

/// A security scheme of `components.securitySchemes`.
#[derive(Debug, Clone, PartialEq)]
pub struct SecurityScheme {
    pub name: String,
    pub description: Option<String>,
    pub kind: SchemeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SchemeKind {
    /// `type: http`; `scheme` lowercased (`basic`, `bearer`, `digest`, ...).
    Http { scheme: String },
    /// `type: apiKey`: the key's parameter name and where it travels.
    ApiKey { location: ApiKeyIn, name: String },
    /// `type: oauth2`: a bearer token.
    OAuth2,
    /// `type: openIdConnect`: a bearer token.
    OpenIdConnect,
    /// `type: mutualTLS` (OpenAPI 3.1+): the client certificate, which the TLS layer checks.
    MutualTls,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyIn {
    Header,
    Query,
    Cookie,
}

/// One alternative of a security requirement: every (scheme, scopes) must be presented. An
/// empty alternative (`{}`) admits anonymous callers.
pub type Requirement = Vec<(String, Vec<String>)>;

/// Whether an operation takes a principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// No requirement (`security: []`, or none anywhere): no principal.
    None,
    /// Some alternative must be met: a principal.
    Required,
    /// `{}` is among the alternatives: maybe a principal.
    Optional,
}

/// A named Rust type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// Component name, or a synthesized name for a hoisted inline schema.
    pub name: String,
    pub rust: String,
    /// True when the document writes the schema inline (served inline, not as a `$ref`).
    pub inline: bool,
    /// True when used as a `multipart/form-data` body.
    pub multipart: bool,
    pub schema: Schema,
    /// Where it came from, as a JSON pointer.
    pub pointer: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    pub kind: Kind,
    pub nullable: bool,
    pub description: Option<String>,
    pub default: Option<serde_json::Value>,
    pub example: Option<serde_json::Value>,
    pub deprecated: bool,
    pub constraints: Constraints,
    /// `type: object` written beside `allOf` (served as written).
    pub object_type: bool,
    /// `readOnly`: not required in requests.
    pub read_only: bool,
    /// `writeOnly`: not required in responses.
    pub write_only: bool,
    /// JSON Schema 2020-12 keywords beyond the 3.0 model (OpenAPI 3.1+); a schema with any is
    /// a named type, whose component the validator finds them by.
    pub keywords: Keywords,
}

/// The JSON Schema 2020-12 keywords of a schema that OpenAPI 3.0 has no construct for, read
/// from a 3.1/3.2 document and enforced by the request validator.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Keywords {
    /// `prefixItems`: one schema per leading item.
    pub prefix_items: Vec<Schema>,
    /// `items` beside `prefixItems` (the items after the prefix); `None`: any.
    pub items_after_prefix: Option<Box<Schema>>,
    /// `items: false` beside `prefixItems`.
    pub items_closed: bool,
    pub contains: Option<Box<Schema>>,
    pub min_contains: Option<usize>,
    pub max_contains: Option<usize>,
    /// `dependentRequired`: (property, the properties it requires), as written.
    pub dependent_required: Vec<(String, Vec<String>)>,
    /// `patternProperties`: (ECMA-262 pattern, schema), as written.
    pub pattern_properties: Vec<(String, Schema)>,
    /// `additionalProperties` beside `patternProperties`: the properties neither declared nor
    /// matched by a pattern (the 3.0 reading takes any values there).
    pub additional_after_patterns: Option<Box<Schema>>,
    pub property_names: Option<Box<Schema>>,
    /// `dependentSchemas`: (property, the schema the whole object must then match).
    pub dependent_schemas: Vec<(String, Schema)>,
    pub not: Option<Box<Schema>>,
    /// `if`, `then`, `else`.
    pub if_: Option<Box<Schema>>,
    pub then: Option<Box<Schema>>,
    pub else_: Option<Box<Schema>>,
}

impl Keywords {
    pub fn is_empty(&self) -> bool {
        *self == Keywords::default()
    }

    /// The sub-schemas, in the order they are written above.
    pub fn schemas(&self) -> Vec<&Schema> {
        let mut out: Vec<&Schema> = self.prefix_items.iter().collect();
        out.extend(self.items_after_prefix.as_deref());
        out.extend(self.contains.as_deref());
        out.extend(self.pattern_properties.iter().map(|(_, s)| s));
        out.extend(self.additional_after_patterns.as_deref());
        out.extend(self.property_names.as_deref());
        out.extend(self.dependent_schemas.iter().map(|(_, s)| s));
        out.extend(self.not.as_deref());
        out.extend(self.if_.as_deref());
        out.extend(self.then.as_deref());
        out.extend(self.else_.as_deref());
        out
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Kind {
    /// A named type (component or hoisted inline schema), by `TypeDef::name`.
    Ref(String),
    String {
        format: Option<String>,
        enum_values: Vec<String>,
    },
    Integer {
        format: Option<String>,
    },
    Number {
        format: Option<String>,
    },
    Boolean,
    Array(Box<Schema>),
    Object(Object),
    /// Members in order; a type built from it merges the members' properties.
    AllOf(Vec<Schema>),
    /// At least one member matches (an untagged enum, tried in order).
    AnyOf(Vec<Schema>),
    OneOf {
        variants: Vec<Schema>,
        discriminator: Option<Discriminator>,
    },
    /// No type constraint at all.
    #[default]
    Any,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    pub properties: Vec<Property>,
    pub required: Vec<String>,
    pub additional: Additional,
    /// `allOf` written beside the properties: their properties are merged in first.
    pub all_of: Vec<Schema>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Additional {
    /// Not stated: other properties are allowed and ignored.
    #[default]
    Open,
    /// `additionalProperties: false`.
    Closed,
    /// `additionalProperties: <schema>`.
    Schema(Box<Schema>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub name: String,
    pub rust: String,
    pub schema: Schema,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Discriminator {
    pub property: String,
    /// (value, type name)
    pub mapping: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Constraints {
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    pub pattern: Option<String>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: bool,
    pub exclusive_maximum: bool,
    pub min_items: Option<usize>,
    pub max_items: Option<usize>,
    pub unique_items: bool,
    pub min_properties: Option<usize>,
    pub max_properties: Option<usize>,
    pub multiple_of: Option<f64>,
    /// `enum` of an integer, number or boolean schema (string enums are Rust enums instead).
    pub enum_values: Vec<serde_json::Value>,
}

impl Constraints {
    pub fn is_empty(&self) -> bool {
        *self == Constraints::default()
    }
}

/// One operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// `operationId` as written, or the name derived from method and path when there is none.
    pub id: String,
    /// Whether the document writes the `operationId` (only then is it served).
    pub explicit_id: bool,
    /// snake_case method name.
    pub rust: String,
    /// UpperCamelCase stem for the operation's types.
    pub type_stem: String,
    pub method: String,
    pub path: String,
    /// `Tag::name` of the tag whose trait holds it: its first tag, or the unserved default tag.
    pub tag: String,
    /// Its tags as written (served).
    pub tags: Vec<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub deprecated: bool,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    /// Whether the document declares any response (OpenAPI 3.0 requires one); when not,
    /// `responses` holds one `default` without a body and the document serves none.
    pub responses_declared: bool,
    pub responses: Vec<Response>,
    /// Effective security requirement alternatives (its own, else the document's; empty: none).
    pub security: Vec<Requirement>,
    /// Its own `security` as JSON text, when written (served as written).
    pub security_json: Option<String>,
    /// Outgoing requests it declares (`callbacks`), in document order.
    pub callbacks: Vec<Callback>,
    /// Its `callbacks` as JSON text, when written (served as written).
    pub callbacks_json: Option<String>,
    /// How it pages, as its `x-pagination` extension says (else see [`Api::pagination`]).
    pub pagination: Option<Pagination>,
    pub pointer: String,
}

/// How a list operation pages: a client walks it as one stream of items.
#[derive(Debug, Clone, PartialEq)]
pub struct Pagination {
    /// The query parameter that takes the next page's position.
    pub param: String,
    /// The array property of the page's body that holds the items; `None`: the body is the
    /// array.
    pub items: Option<String>,
    pub next: NextPage,
}

/// Where the next page's position comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum NextPage {
    /// Property `field` (`id`) of the page's last item, while the body's boolean property
    /// `flag` (`has_more`) is true.
    LastItem { field: String, flag: String },
    /// The body's property (`next_page_token`), until it is absent, null or empty.
    Token(String),
    /// The `param` of the target of the answer's `Link: <…>; rel="next"`.
    Link,
}

/// Query parameters that take a cursor after the last item (with a `has_more` flag).
const CURSOR_PARAMS: &[&str] = &["starting_after", "after", "cursor"];
/// Body properties that say whether more pages follow.
const MORE_FLAGS: &[&str] = &["has_more", "hasMore"];
/// Body properties that carry the next page's token, and the parameters that take one.
const TOKEN_PROPERTIES: &[&str] = &[
    "next_page_token",
    "nextPageToken",
    "next_cursor",
    "nextCursor",
    "next_token",
    "nextToken",
];
const TOKEN_PARAMS: &[&str] = &[
    "page_token",
    "pageToken",
    "cursor",
    "next_token",
    "nextToken",
    "token",
    "after",
];
/// Parameters a `Link: rel="next"` target sets.
const LINK_PARAMS: &[&str] = &["page", "cursor", "after", "page_token"];

impl Api {
    /// How `o` pages: its `x-pagination`, else one of the common shapes recognised: a `GET`
    /// whose first success is a JSON object with one array property and
    /// - a `has_more` flag, and an optional `starting_after` (`after`, `cursor`) parameter
    ///   that takes the last item's `id`;
    /// - or a next-page token (`next_page_token`, `next_cursor`, ...) and an optional
    ///   parameter that takes it (`page_token`, `cursor`, ...);
    /// - or a JSON array with a declared `Link` header and an optional `page` (`cursor`,
    ///   `after`) parameter.
    pub fn pagination(&self, o: &Operation) -> Option<Pagination> {
        if let Some(p) = &o.pagination {
            return Some(p.clone());
        }
        if o.method != "get" {
            return None;
        }
        let ok = o.responses.iter().find(|r| {
            matches!(r.status, Status::Code(200..=299))
                && matches!(r.content, Some((Media::Json, ..)))
        })?;
        let (_, _, schema) = ok.content.as_ref()?;
        let param = |names: &[&str]| {
            o.params
                .iter()
                .find(|p| {
                    p.location == Location::Query
                        && !p.required
                        && p.schema.default.is_none()
                        && names.contains(&p.name.as_str())
                })
                .map(|p| p.name.clone())
        };
        let body = self.resolved(schema);
        if let Kind::Array(_) = body.kind {
            let link = ok
                .headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case("link"));
            if !link {
                return None;
            }
            return Some(Pagination {
                param: param(LINK_PARAMS)?,
                items: None,
                next: NextPage::Link,
            });
        }
        let Kind::Object(object) = &body.kind else {
            return None;
        };
        let mut arrays = object
            .properties
            .iter()
            .filter(|p| matches!(self.resolved(&p.schema).kind, Kind::Array(_)));
        let items = arrays.next()?.name.clone();
        if arrays.next().is_some() {
            return None;
        }
        let property = |names: &[&str], boolean: bool| {
            object
                .properties
                .iter()
                .find(|p| {
                    names.contains(&p.name.as_str())
                        && match &self.resolved(&p.schema).kind {
                            Kind::Boolean => boolean,
                            Kind::String { enum_values, .. } => !boolean && enum_values.is_empty(),
                            _ => false,
                        }
                })
                .map(|p| p.name.clone())
        };
        if let (Some(flag), Some(param)) = (property(MORE_FLAGS, true), param(CURSOR_PARAMS)) {
            return Some(Pagination {
                param,
                items: Some(items),
                next: NextPage::LastItem {
                    field: "id".into(),
                    flag,
                },
            });
        }
        let token = property(TOKEN_PROPERTIES, false)?;
        Some(Pagination {
            param: param(TOKEN_PARAMS)?,
            items: Some(items),
            next: NextPage::Token(token),
        })
    }

    /// `schema`, or the schema of the type it names.
    pub fn resolved<'s>(&'s self, schema: &'s Schema) -> &'s Schema {
        match &schema.kind {
            Kind::Ref(name) => self
                .types
                .iter()
                .find(|t| &t.name == name)
                .map_or(schema, |t| &t.schema),
            _ => schema,
        }
    }
}

/// The methods a path item has a field for in OpenAPI 3.0 and 3.1, which poem-openapi routes.
pub const ROUTED_METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

impl Operation {
    /// The method as sent on the wire: a path item's field upper-cased (`GET`, OpenAPI 3.2's
    /// `QUERY`), an `additionalOperations` key as written.
    pub fn http_method(&self) -> String {
        if self.method == "query" || ROUTED_METHODS.contains(&self.method.as_str()) {
            self.method.to_uppercase()
        } else {
            self.method.clone()
        }
    }

    /// Whether poem-openapi cannot route the method (`QUERY`, an `additionalOperations` one):
    /// the runtime's `ExtensionMethods` routes it.
    pub fn extension_method(&self) -> bool {
        !ROUTED_METHODS.contains(&self.method.as_str())
    }

    /// Whether a response lists media types its payload cannot write, so that the handler is
    /// told the request's `Accept` (the input's `accept` field).
    pub fn writes_other_media(&self) -> bool {
        self.responses.iter().any(|r| !r.other_media.is_empty())
    }

    pub fn auth_mode(&self) -> AuthMode {
        if self.security.is_empty() {
            AuthMode::None
        } else if self.security.iter().any(Vec::is_empty) {
            AuthMode::Optional
        } else {
            AuthMode::Required
        }
    }
}

/// One request of a callback: the server sends it to a URL the expression names.
#[derive(Debug, Clone, PartialEq)]
pub struct Callback {
    /// The callback's name (the key under `callbacks`).
    pub name: String,
    /// The runtime expression of the URL (`{$request.body#/url}`).
    pub expression: String,
    pub method: String,
    /// snake_case name of the server's method that builds it (`<operation>_<callback>`).
    pub rust: String,
    pub summary: Option<String>,
    pub description: Option<String>,
    /// The body the server sends (JSON); `None` for a request without one.
    pub body: Option<Body>,
    /// The statuses the receiver may answer, with their descriptions.
    pub responses: Vec<(Status, String)>,
    pub pointer: String,
}

impl Callback {
    /// The schema of the body the server sends, if any.
    pub fn sent(&self) -> Option<&Schema> {
        self.body.as_ref().map(|b| &b.schema)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    /// The value of `in` in the document.
    pub fn wire(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// `explode` (default true for `form` query parameters): an array is repeated keys, not one
    /// value with delimiters.
    pub explode: bool,
    /// The items' delimiter of a non-exploded array: `,` (`form`, `simple`), ` `
    /// (`spaceDelimited`) or `|` (`pipeDelimited`).
    pub delimiter: char,
    /// `style: deepObject`: an object as bracketed keys (`filter[name]=x`).
    pub deep_object: bool,
    /// OpenAPI 3.2's `in: querystring`: the whole query string is the value, read by its
    /// `content` (`content_type`: JSON, or a form when `form` is set; raw text otherwise).
    pub query_string: bool,
    /// With `query_string`, whether the query string is read as `application/x-www-form-urlencoded`.
    pub form: bool,
    /// A path parameter in `label` (`.5`) or `matrix` (`;id=5`) style; `None` for `simple` and
    /// every other location.
    pub path_style: Option<PathStyle>,
    /// `content` instead of `schema`: the value is a document of this (JSON) media type.
    pub content_type: Option<String>,
    pub name: String,
    pub rust: String,
    pub location: Location,
    pub required: bool,
    pub description: Option<String>,
    pub deprecated: bool,
    pub schema: Schema,
    /// Where it is written (the operation's pointer for an undeclared path parameter).
    pub pointer: String,
    /// Fields of the parameter served as written, as a JSON object (`null`: not written): a
    /// `deepObject` that is not a named struct (a map, a free-form object, a value the style
    /// does not apply to), whose schema and style poem-openapi cannot say.
    pub served_as_written: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStyle {
    Label,
    Matrix,
}

impl PathStyle {
    /// The style's name in the document.
    pub fn name(self) -> &'static str {
        match self {
            PathStyle::Label => "label",
            PathStyle::Matrix => "matrix",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// `application/json` and any `*/*+json`.
    Json,
    /// A response of items (OpenAPI 3.2's `itemSchema`), written one by one as they come.
    Stream(StreamFormat),
    Multipart,
    /// `application/x-www-form-urlencoded`.
    Form,
    /// `text/plain`.
    Text,
    /// Any other media type: the raw bytes.
    Binary,
}

/// How a streamed response writes its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// `text/event-stream`: each item is one event.
    Sse,
    /// `application/jsonl`, `application/x-ndjson`, `application/x-jsonlines`.
    JsonLines,
    /// `application/json-seq` (RFC 7464).
    JsonSeq,
}

impl StreamFormat {
    /// The format of a streamed media type, if it is one the runtime writes.
    pub fn of(media_type: &str) -> Option<Self> {
        let essence = media_type.split(';').next()?.trim().to_ascii_lowercase();
        match essence.as_str() {
            "text/event-stream" => Some(Self::Sse),
            "application/jsonl" | "application/x-ndjson" | "application/x-jsonlines" => {
                Some(Self::JsonLines)
            }
            "application/json-seq" => Some(Self::JsonSeq),
            _ => None,
        }
    }

    /// The media type the runtime's `ItemStream` writes for it.
    pub fn own_media_type(self) -> &'static str {
        match self {
            Self::Sse => "text/event-stream",
            Self::JsonLines => "application/jsonl",
            Self::JsonSeq => "application/json-seq",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub media: Media,
    pub content_type: String,
    /// The `content` map as JSON text when it is not just `content_type` with its schema
    /// (several media types): served as written.
    pub content_json: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub schema: Schema,
    /// A JSON body that the document also lists as `application/x-www-form-urlencoded` with
    /// the same schema: read as either, by the request's `Content-Type`.
    pub also_form: bool,
    /// The other media types the document lists for this body that its primary extractor does
    /// not read (`application/xml` beside JSON): the handler gets them as their bytes
    /// (`runtime::Representation`).
    pub other_media: Vec<String>,
}

impl Body {
    /// Whether a request may leave this body out: an optional JSON body (in no other media
    /// type). An optional body of any other media type is taken as required (the parser
    /// warns), so its handler input is not an `Option`.
    pub fn may_be_absent(&self) -> bool {
        !self.required && self.media == Media::Json && self.other_media.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Code(u16),
    /// `1XX` .. `5XX`, by its first digit.
    Range(u16),
    Default,
}

impl Status {
    /// The key under `responses` (`200`, `4XX`, `default`).
    pub fn key(self) -> String {
        match self {
            Status::Code(c) => c.to_string(),
            Status::Range(d) => format!("{d}XX"),
            Status::Default => "default".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: Status,
    /// Variant name (`Ok`, `NotFound`, `Default`, `Status418`).
    pub variant: String,
    pub description: String,
    pub content: Option<(Media, String, Schema)>,
    /// The `content` map as JSON text when it has several media types (served as written).
    pub content_json: Option<String>,
    /// The listed media types the primary content is written in, when its payload's own type
    /// (`application/json`, `text/plain`, `application/octet-stream`) is not what the document
    /// says: the primary first, then every other JSON type with the same schema; the request's
    /// `Accept` chooses. Empty: written as the payload writes it.
    pub written_as: Vec<String>,
    /// The listed media types the primary payload cannot write (XML beside JSON, a JSON type
    /// with another schema), as written: the handler writes them itself
    /// (`runtime::Representation::Other`), told the request's `Accept`.
    pub other_media: Vec<String>,
    pub headers: Vec<ResponseHeader>,
    /// The `links` object as JSON text (applied to the served document).
    pub links: Option<String>,
    /// The name in `#/components/responses` the response is a `$ref` to, if it is one.
    pub component: Option<String>,
}

impl Response {
    /// Whether the variant holds the response as a type of its own in the crate's `responses`
    /// module (a component response with headers: its headers are named fields there, written
    /// once for every operation that refers to it), rather than as its parts.
    pub fn typed(&self) -> bool {
        self.component.is_some() && !self.headers.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResponseHeader {
    pub name: String,
    pub rust: String,
    pub required: bool,
    pub description: Option<String>,
    pub ty: HeaderType,
}

/// What a response header's value is, by its schema: a scalar the handler sets and the client
/// reads typed, or text (strings, and every schema that is not a scalar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderType {
    Text,
    /// `type: integer, format: int32`.
    I32,
    /// `type: integer`, any other format.
    I64,
    /// `type: number`.
    F64,
    /// `type: boolean`.
    Bool,
}
