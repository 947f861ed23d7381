//! `src/lib.rs`: the crate's module map, the document's constants, `DOCUMENT_PATCH` (what the
//! served document needs beyond what poem-openapi can represent) and the `Document` type through
//! which the runtime reads them.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::{Emitter, ident, is_csv, opt_str, param_default, tag_module, tag_phrase};
use crate::ir::*;

impl Emitter<'_> {
    /// `lib.rs`: the crate's doc and module map, the document's constants, `DOCUMENT_PATCH`
    /// and the `Document` type.
    pub(super) fn lib(&self) -> TokenStream {
        let api = self.api;
        let docs = module_doc(api, self.routes_apart);
        let mods = tag_modules(api);
        let callbacks_mod = if self.outgoing_sets().is_empty() {
            quote!()
        } else {
            let doc = if self.api.webhooks.is_empty() {
                " The `Callbacks` trait: the requests the server sends to its callers."
            } else {
                " The `Callbacks` and `Webhooks` traits: the requests the server sends."
            };
            quote! {
                #[doc = #doc]
                #[rustfmt::skip]
                pub mod callbacks;
            }
        };
        let responses_mod = if self.has_responses_module() {
            quote! {
                /// The component responses, each named once with its description: a type of
                /// its body and headers, or an alias of its body.
                #[rustfmt::skip]
                pub mod responses;
            }
        } else {
            quote!()
        };
        let title = &api.title;
        let version = &api.version;
        let description = opt_str(&api.description);
        let headers = declared_headers(api);
        let patch = document_patch(api);
        let source = match &api.source {
            Some(text) if self.routes_apart => quote! {
                /// The document as written (OpenAPI 3.1 or 3.2), bundled into one: what the
                /// routes crate's `document` serves.
                pub const SOURCE_DOCUMENT: &str = #text;
            },
            Some(text) => quote! {
                /// The document as written (OpenAPI 3.1 or 3.2), bundled into one: what
                /// [`server::document`] serves.
                pub const SOURCE_DOCUMENT: &str = #text;
            },
            None => quote!(),
        };
        let document = document_impl(api, self.keywords_table());
        let (server_mod, server_uses) = if self.routes_apart {
            (quote!(), quote!())
        } else {
            let server_mod = quote! {
                #[rustfmt::skip]
                pub mod server;
            };
            let server_uses = quote! {
                pub use server::{Server, app, document, routes};
            };
            (server_mod, server_uses)
        };
        quote! {
            #(#docs)*
            // The output is formatted by prettyplease and pinned by `codegen check`; rustfmt
            // formats some constructs differently, so `cargo fmt --all` must leave it alone:
            // the crate root through `cfg_attr(rustfmt, ...)` (a plain inner tool attribute is
            // unstable) and each module file through the attribute on its declaration.
            #![cfg_attr(rustfmt, rustfmt::skip)]
            #![allow(clippy::all, clippy::pedantic, unused_imports, non_camel_case_types, dead_code, deprecated)]

            #[rustfmt::skip]
            pub mod models;
            #(#mods)*
            #server_mod
            #callbacks_mod
            #responses_mod
            /// A typed client of the API (feature `client`).
            #[cfg(feature = "client")]
            #[rustfmt::skip]
            pub mod client;
            pub use ::openapi_poem_runtime as runtime;

            pub use poem_openapi::payload::Binary;
            pub use runtime::{Credentials, FilePart, Hooks, Json, RequestError, RequestErrorKind};
            #server_uses

            /// `info.title` of the document.
            pub const TITLE: &str = #title;
            /// `info.version` of the document.
            pub const VERSION: &str = #version;
            /// `info.description` of the document.
            pub const DESCRIPTION: ::std::option::Option<&str> = #description;
            /// Header parameters some operation declares (checked to be text before routing).
            pub const DECLARED_HEADERS: &[&str] = &[#(#headers),*];
            #patch
            #source
            #document
        }
    }
}

impl Emitter<'_> {
    /// `lib.rs` of the `k`th crate of types: the runtime under the name the types use and
    /// their module.
    pub(super) fn part_lib(&self, k: usize) -> TokenStream {
        let doc = format!(
            " Part {k} of the types of **{} {}**, generated from the OpenAPI document: use them\n through the crate generated beside it (its `models` re-exports every part).",
            self.api.title, self.api.version
        );
        let doc = doc.lines().map(|l| quote!(#![doc = #l]));
        quote! {
            #(#doc)*
            #![cfg_attr(rustfmt, rustfmt::skip)]
            #![allow(clippy::all, clippy::pedantic, unused_imports, non_camel_case_types, dead_code, deprecated)]

            #[rustfmt::skip]
            pub mod models;
            pub use ::openapi_poem_runtime as runtime;
        }
    }
}

/// The crate's doc: what each module holds.
fn module_doc(api: &Api, routes_apart: bool) -> Vec<TokenStream> {
    let (title, version) = (&api.title, &api.version);
    let glue = if routes_apart {
        "the routing glue is the crate `<this crate>-routes` beside it (`routes`, `app`, `document`)"
    } else {
        "[`server`]: the poem-openapi routing glue; [`server::routes`] serves the API, `/openapi.json`,\n   `/openapi.yaml` and `/docs`"
    };
    let module_doc = format!(
        " Server-side contract of **{title}** {version}, generated from the OpenAPI document.\n\n \
         - [`models`]: one type per schema.\n \
         - one module per tag: a trait with one method per operation, typed inputs, and a response\n   enum per operation with exactly the statuses the document declares.\n \
         - {glue}.\n \
         - [`runtime`]: validation, authentication and error plumbing shared by all generated code."
    );
    module_doc.lines().map(|l| quote!(#![doc = #l])).collect()
}

/// One `pub mod` per tag with a trait, each saying which operations it holds.
fn tag_modules(api: &Api) -> Vec<TokenStream> {
    api.trait_tags()
        .map(|t| {
            let m = ident(&tag_module(t));
            let d = format!(
                " {}: the `{}Api` trait, its inputs and responses.",
                tag_phrase(t),
                t.rust
            );
            quote!(#[doc = #d] #[rustfmt::skip] pub mod #m;)
        })
        .collect()
}

/// Header parameters some operation declares, sorted, each once.
fn declared_headers(api: &Api) -> Vec<&str> {
    let mut headers: Vec<&str> = api
        .operations
        .iter()
        .flat_map(|o| o.params.iter())
        .filter(|p| p.location == Location::Header)
        .map(|p| p.name.as_str())
        .collect();
    headers.sort_unstable();
    headers.dedup();
    headers
}

/// `DOCUMENT_PATCH`: what the served document needs beyond what poem-openapi can represent,
/// each table in document order.
fn document_patch(api: &Api) -> TokenStream {
    let openapi = &api.openapi;
    if api.serves_source() {
        let closed = closed_schemas(api);
        return quote! {
            /// What the extractors read of the document, which is served as written
            /// ([`SOURCE_DOCUMENT`]).
            pub static DOCUMENT_PATCH: runtime::DocumentPatch =
                runtime::DocumentPatch::served_as_written(#openapi, &[#(#closed),*]);
        };
    }
    let servers = &api.servers;
    let scheme_json = api.security_schemes_json.as_deref().unwrap_or_default();
    let global_json = api.global_security_json.as_deref().unwrap_or_default();
    let op_security = operation_json(api, |o| o.security_json.as_deref());
    let unexploded = param_rows(api, |p| {
        let style = match p.delimiter {
            ' ' => "spaceDelimited",
            '|' => "pipeDelimited",
            _ => "",
        };
        (is_csv(p) && !p.explode).then(|| style.to_string())
    });
    let path_styles = param_rows(api, |p| Some(p.path_style?.name().to_string()));
    let renamed_paths: Vec<TokenStream> = api
        .operations
        .iter()
        .filter_map(|o| Some((super::served_path(&o.path)?, o.path.as_str())))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|(served, source)| quote!((#served, #source)))
        .collect();
    let callbacks_json = operation_json(api, |o| o.callbacks_json.as_deref());
    let content_patches = content_patches(api);
    let closed = closed_schemas(api);
    let additional_flags: Vec<TokenStream> = api
        .additional_flags
        .iter()
        .map(|(pointer, flag)| quote!((#pointer, #flag)))
        .collect();
    let links = rows(
        api,
        |o| o.responses.as_slice(),
        |r| {
            let (status, links) = (r.status.key(), r.links.as_ref()?);
            Some(quote!(#status, #links))
        },
    );
    let binary = rows(api, |o| o.responses.as_slice(), binary_schema);
    let param_patterns = param_rows(api, |p| {
        let pattern = p.schema.constraints.pattern.as_ref()?;
        let typed = matches!(p.schema.kind, Kind::Ref(_)) || p.content_type.is_some();
        (!typed).then(|| pattern.clone())
    });
    let content_params = param_rows(api, |p| p.content_type.clone());
    let param_formats = param_rows(api, |p| {
        // What poem-openapi documents for the Rust type (`rust_type`) of each kind.
        let documented: &[&str] = match &p.schema.kind {
            Kind::Integer { .. } => &[
                "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            ],
            Kind::Number { .. } => &["float", "double"],
            _ => return None,
        };
        let format = match &p.schema.kind {
            Kind::Integer { format } | Kind::Number { format } => format.as_deref(),
            _ => None,
        };
        (p.content_type.is_none() && !format.is_some_and(|f| documented.contains(&f)))
            .then(|| format.unwrap_or_default().to_string())
    });
    let param_defaults = param_rows(api, |p| {
        let written = p.schema.default.as_ref()?;
        param_default(p).is_none().then(|| written.to_string())
    });
    let param_fields = param_rows(api, |p| p.served_as_written.clone());
    let optional_bodies = operation_rows(api, |o| {
        o.body
            .as_ref()
            .is_some_and(|b| !b.required && !b.may_be_absent())
    });
    let untitled = operation_rows(api, |o| o.summary.is_none() && o.description.is_some());
    let undeclared = operation_rows(api, |o| !o.responses_declared);
    quote! {
        /// What the served document needs beyond what poem-openapi can represent.
        pub static DOCUMENT_PATCH: runtime::DocumentPatch = runtime::DocumentPatch {
            openapi: #openapi,
            servers: &[#(#servers),*],
            security_schemes: #scheme_json,
            global_security: #global_json,
            operation_security: &[#(#op_security),*],
            unexploded_params: &[#(#unexploded),*],
            path_styles: &[#(#path_styles),*],
            renamed_paths: &[#(#renamed_paths),*],
            callbacks: &[#(#callbacks_json),*],
            content: &[#(#content_patches),*],
            closed_schemas: &[#(#closed),*],
            additional_flags: &[#(#additional_flags),*],
            links: &[#(#links),*],
            binary_schemas: &[#(#binary),*],
            param_formats: &[#(#param_formats),*],
            param_patterns: &[#(#param_patterns),*],
            content_params: &[#(#content_params),*],
            optional_bodies: &[#(#optional_bodies),*],
            untitled_operations: &[#(#untitled),*],
            undeclared_responses: &[#(#undeclared),*],
            param_defaults: &[#(#param_defaults),*],
            param_fields: &[#(#param_fields),*],
        };
    }
}

/// `(path, method)` of each operation `pick` selects, in document order.
fn operation_rows(api: &Api, pick: impl Fn(&Operation) -> bool) -> Vec<TokenStream> {
    api.operations
        .iter()
        .filter(|o| pick(o))
        .map(|o| {
            let (path, method) = (&o.path, &o.method);
            quote!((#path, #method))
        })
        .collect()
}

/// `(path, method, json)` for each operation that has the JSON text `json` picks (its own
/// `security`, its `callbacks`), served as written.
fn operation_json(api: &Api, json: impl Fn(&Operation) -> Option<&str>) -> Vec<TokenStream> {
    api.operations
        .iter()
        .filter_map(|o| {
            let json = json(o)?;
            let (path, method) = (&o.path, &o.method);
            Some(quote!((#path, #method, #json)))
        })
        .collect()
}

/// `(path, method, ...)` for each item of each operation (its parameters, its responses) that
/// `row` says something of (`...`).
fn rows<T>(
    api: &Api,
    items: fn(&Operation) -> &[T],
    row: impl Fn(&T) -> Option<TokenStream>,
) -> Vec<TokenStream> {
    let row = &row;
    api.operations
        .iter()
        .flat_map(|o| {
            let (path, method) = (&o.path, &o.method);
            items(o).iter().filter_map(move |x| {
                let row = row(x)?;
                Some(quote!((#path, #method, #row)))
            })
        })
        .collect()
}

/// `(path, method, location, name, value)` for each parameter `value` says something of.
fn param_rows(api: &Api, value: impl Fn(&Param) -> Option<String>) -> Vec<TokenStream> {
    rows(
        api,
        |o| o.params.as_slice(),
        |p| {
            let v = value(p)?;
            let (location, name) = (p.location.wire(), &p.name);
            Some(quote!(#location, #name, #v))
        },
    )
}

/// The schema of a binary response, which poem-openapi cannot say: `status, content_type, json`.
fn binary_schema(r: &Response) -> Option<TokenStream> {
    let Some((Media::Binary, ct, schema)) = &r.content else {
        return None;
    };
    let mut json = serde_json::json!({"type": "string"});
    if let Kind::String {
        format: Some(format),
        ..
    } = &schema.kind
    {
        json["format"] = serde_json::Value::String(format.clone());
    }
    if let Some(d) = &schema.description {
        json["description"] = serde_json::Value::String(d.clone());
    }
    let json = json.to_string();
    let status = r.status.key();
    Some(quote!(#status, #ct, #json))
}

/// The `content` maps served as written (several media types, or unusual names): per
/// operation, its request body's then its responses'.
fn content_patches(api: &Api) -> Vec<TokenStream> {
    api.operations
        .iter()
        .flat_map(|o| {
            let (path, method) = (&o.path, &o.method);
            let body = o
                .body
                .as_ref()
                .and_then(|b| b.content_json.as_deref())
                .map(|json| quote!((#path, #method, "requestBody", #json)));
            let responses = o.responses.iter().filter_map(move |r| {
                let json = r.content_json.as_deref()?;
                let status = r.status.key();
                Some(quote!((#path, #method, #status, #json)))
            });
            body.into_iter().chain(responses)
        })
        .collect()
}

/// The components closed to other properties (`additionalProperties: false`).
/// The types closed to other properties, components and inline ones (an inline one carries
/// its name as `rust_typename`), by which the validator names an unknown field.
fn closed_schemas(api: &Api) -> Vec<&str> {
    api.types
        .iter()
        .filter(|t| closed(t))
        .map(|t| t.name.as_str())
        .collect()
}

/// Whether a type is an object closed to other properties (`additionalProperties: false`).
pub(super) fn closed(t: &TypeDef) -> bool {
    matches!(&t.schema.kind, Kind::Object(o) if o.additional == Additional::Closed)
}

impl Emitter<'_> {
    /// `KEYWORDS` of the `Document` impl: each named type's JSON Schema 2020-12 keywords that
    /// `MetaSchema` cannot hold, sub-schemas as functions of the registry (none: left out).
    fn keywords_table(&self) -> TokenStream {
        let entries: Vec<TokenStream> = self
            .api
            .types
            .iter()
            .filter(|t| !t.schema.keywords.is_empty())
            .map(|t| {
                let k = &t.schema.keywords;
                let f = |s: &Schema| {
                    let d = self.schema_ref_data(s);
                    quote!(|registry: &mut ::poem_openapi::registry::Registry| {
                        const D: crate::runtime::SchemaData = #d;
                        D.schema_ref(registry)
                    })
                };
                let opt_f = |s: &Option<Box<Schema>>| match s {
                    Some(s) => {
                        let f = f(s);
                        quote!(::std::option::Option::Some(#f))
                    }
                    None => quote!(::std::option::Option::None),
                };
                let opt_n = |n: Option<usize>| match n {
                    Some(n) => quote!(::std::option::Option::Some(#n)),
                    None => quote!(::std::option::Option::None),
                };
                let prefix = k.prefix_items.iter().map(f);
                let (rest, contains, names, others) = (
                    opt_f(&k.items_after_prefix),
                    opt_f(&k.contains),
                    opt_f(&k.property_names),
                    opt_f(&k.additional_after_patterns),
                );
                let (not, if_, then, else_) = (
                    opt_f(&k.not),
                    opt_f(&k.if_),
                    opt_f(&k.then),
                    opt_f(&k.else_),
                );
                let dependent = k.dependent_schemas.iter().map(|(p, s)| {
                    let f = f(s);
                    quote!((#p, #f))
                });
                let (min, max, closed) =
                    (opt_n(k.min_contains), opt_n(k.max_contains), k.items_closed);
                let deps = k
                    .dependent_required
                    .iter()
                    .map(|(p, r)| quote!((#p, &[#(#r),*])));
                let patterns = k.pattern_properties.iter().map(|(p, s)| {
                    let f = f(s);
                    quote!((#p, #f))
                });
                let name = &t.name;
                quote! {
                    (#name, runtime::Keywords {
                        prefix_items: &[#(#prefix),*],
                        items_after_prefix: #rest,
                        items_closed: #closed,
                        contains: #contains,
                        min_contains: #min,
                        max_contains: #max,
                        dependent_required: &[#(#deps),*],
                        pattern_properties: &[#(#patterns),*],
                        additional_after_patterns: #others,
                        property_names: #names,
                        dependent_schemas: &[#(#dependent),*],
                        not: #not,
                        if_: #if_,
                        then: #then,
                        else_: #else_,
                    })
                }
            })
            .collect();
        if entries.is_empty() {
            return quote!();
        }
        quote! {
            /// JSON Schema 2020-12 keywords `MetaSchema` cannot hold, by type name.
            const KEYWORDS: &'static [(&'static str, runtime::Keywords)] = &[#(#entries),*];
        }
    }
}

/// `Document`, through which the runtime reads the patch, the declared headers, the security
/// schemes and each operation's requirements.
fn document_impl(api: &Api, keywords: TokenStream) -> TokenStream {
    let schemes: Vec<TokenStream> = api.security_schemes.iter().map(scheme_def).collect();
    let common = common_security(api);
    let security = requirements_expr(common);
    let others = operation_security(api).into_iter().map(|(k, o)| {
        let k = Literal::usize_unsuffixed(k);
        let r = requirements_expr(&o.security);
        quote!((#k, #r))
    });
    quote! {
        /// This document, as the runtime's body extractors see it.
        pub struct Document;

        impl runtime::ApiDocument for Document {
            const PATCH: &'static runtime::DocumentPatch = &DOCUMENT_PATCH;
            const DECLARED_HEADERS: &'static [&'static str] = DECLARED_HEADERS;
            const SECURITY_SCHEMES: &'static [runtime::SecuritySchemeDef] = &[#(#schemes),*];
            const SECURITY: &'static [runtime::security::Requirement] = #security;
            const OPERATION_SECURITY: &'static [(usize, &'static [runtime::security::Requirement])] = &[#(#others),*];
            #keywords
        }
    }
}

/// The security requirements most operations have (the first of the most common, in document
/// order): `Document::SECURITY`.
pub(crate) fn common_security(api: &Api) -> &[Requirement] {
    let mut best: (&[Requirement], usize) = (&[], 0);
    for o in &api.operations {
        let n = api
            .operations
            .iter()
            .filter(|x| x.security == o.security)
            .count();
        if n > best.1 {
            best = (&o.security, n);
        }
    }
    best.0
}

/// The operations whose requirements are not the common ones, with their index in document
/// order: `Document::OPERATION_SECURITY`, in order.
pub(crate) fn operation_security(api: &Api) -> Vec<(usize, &Operation)> {
    let common = common_security(api);
    api.operations
        .iter()
        .enumerate()
        .filter(|(_, o)| o.security != common)
        .collect()
}

/// Security requirements as the runtime reads them: alternatives, each of (scheme, scopes).
fn requirements_expr(security: &[Requirement]) -> TokenStream {
    let alternatives = security.iter().map(|alt| {
        let pairs = alt
            .iter()
            .map(|(name, scopes)| quote!((#name, &[#(#scopes),*])));
        quote!(&[#(#pairs),*])
    });
    quote!(&[#(#alternatives),*])
}

/// A scheme as the runtime reads its credentials.
fn scheme_def(s: &SecurityScheme) -> TokenStream {
    let name = &s.name;
    let kind = match &s.kind {
        SchemeKind::Http { scheme } if scheme == "basic" => quote!(Basic),
        SchemeKind::Http { scheme } if scheme == "bearer" => quote!(Bearer),
        SchemeKind::OAuth2 | SchemeKind::OpenIdConnect => quote!(Bearer),
        SchemeKind::MutualTls => quote!(MutualTls),
        SchemeKind::Http { scheme } => quote!(Http(#scheme)),
        SchemeKind::ApiKey { location, name } => match location {
            ApiKeyIn::Header => quote!(ApiKeyHeader(#name)),
            ApiKeyIn::Query => quote!(ApiKeyQuery(#name)),
            ApiKeyIn::Cookie => quote!(ApiKeyCookie(#name)),
        },
    };
    quote!(runtime::SecuritySchemeDef { name: #name, kind: runtime::SchemeKind::#kind })
}
