//! `src/server.rs`: the poem-openapi routing glue (one method per operation that extracts and
//! validates its inputs, resolves the principal and calls the trait method), the server that
//! cannot exist with which the document is computed, and the entry points.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::{
    Emitter, doc, doc_str, f64_lit, ident, is_csv, param_default, poem_path, principal_param,
    tag_module,
};
use crate::ir::*;
use crate::names;

impl Emitter<'_> {
    /// `server.rs`: the `Server` bound (the hooks and every trait), the tags, the poem-openapi
    /// `Api` with one method per operation, the document-only server and the entry points.
    pub(super) fn server(&self) -> TokenStream {
        let api = self.api;
        let mut defaults = Vec::new();
        let parts: Vec<Vec<TokenStream>> = impl_parts(&api.operations, |o| &o.path)
            .into_iter()
            .map(|ops| ops.iter().map(|o| self.glue(o, &mut defaults)).collect())
            .collect();
        let api_types = api_types(&parts);
        let document_only = self.document_only();
        let bound = self.server_bound();
        let tags_enum = tags_enum(api);
        let entry_points = entry_points(api);
        quote! {
            //! poem-openapi routing glue: extracts and validates parameters and bodies, resolves the
            //! principal, calls the trait method, and serialises the response enum.

            use std::sync::Arc;
            use poem::{EndpointExt, IntoEndpoint};

            /// Everything a server implements: the hooks and one trait per tag.
            pub trait Server: #bound {}
            impl<T: #bound> Server for T {}

            #tags_enum

            #api_types

            #(#defaults)*

            #document_only
            #entry_points
        }
    }

    /// What a `Server` implements: the hooks, every tag's trait and the callbacks.
    fn server_bound(&self) -> TokenStream {
        let api = self.api;
        let mut traits: Vec<TokenStream> = api
            .trait_tags()
            .map(|t| {
                let m = ident(&tag_module(t));
                let tr = format_ident!("{}Api", t.rust);
                quote!(crate::#m::#tr)
            })
            .collect();
        for set in self.outgoing_sets() {
            let tr = set.trait_name();
            traits.push(quote!(crate::callbacks::#tr));
        }
        if traits.is_empty() {
            quote!(crate::runtime::Hooks)
        } else {
            quote!(crate::runtime::Hooks #(+ #traits)*)
        }
    }

    /// `DocumentOnly`, a server that cannot exist, implementing the hooks, every tag's trait
    /// and the callbacks (methods that cannot be called): what the document is computed with.
    fn document_only(&self) -> TokenStream {
        let impls = self.document_only_impls();
        let callbacks = self.document_only_callbacks();
        quote! {
            /// A server that cannot exist: the type with which [`document`] is computed without one.
            pub enum DocumentOnly {}

            impl crate::runtime::Hooks for DocumentOnly {
                type Principal = ::std::convert::Infallible;
                fn authenticate(&self, _credentials: crate::runtime::Credentials) -> impl ::std::future::Future<Output = ::std::result::Result<Self::Principal, crate::runtime::RequestError>> + Send {
                    async move { match *self {} }
                }
                fn render_error(&self, _error: crate::runtime::RequestError, _request: &::poem::Request) -> ::poem::Response {
                    match *self {}
                }
        }

        #(#impls)*
        #callbacks
        }
    }

    /// Every tag's trait implemented for `DocumentOnly`.
    fn document_only_impls(&self) -> Vec<TokenStream> {
        let api = self.api;
        api
            .trait_tags()
            .map(|t| {
                let m = ident(&tag_module(t));
                let tr = format_ident!("{}Api", t.rust);
                let fns: Vec<TokenStream> = api
                    .operations
                    .iter()
                    .filter(|o| o.tag == t.name)
                    .map(|o| {
                        let f = ident(&o.rust);
                        let input = format_ident!("{}Input", o.type_stem);
                        let output = format_ident!("{}Response", o.type_stem);
                        let principal = principal_param(o, quote!(_principal));
                        quote! {
                            fn #f(&self, #principal _input: crate::#m::#input) -> impl ::std::future::Future<Output = crate::#m::#output> + Send {
                                async move { match *self {} }
                            }
                        }
                    })
                    .collect();
                quote! {
                    impl crate::#m::#tr for DocumentOnly {
                        #(#fns)*
                    }
                }
            })
            .collect()
    }

    /// One operation's method on the poem-openapi `Api`: its route and attributes, one
    /// extractor per input, and the call of the trait method with the typed input. Parameter
    /// defaults become functions, pushed onto `defaults`.
    fn glue(&self, o: &Operation, defaults: &mut Vec<TokenStream>) -> TokenStream {
        let m = ident(&o.rust);
        let tag = self
            .api
            .tags
            .iter()
            .find(|t| t.name == o.tag)
            .expect("every operation's tag is known");
        let module = ident(&tag_module(tag));
        let trait_name = format_ident!("{}Api", tag.rust);
        let input = format_ident!("{}Input", o.type_stem);
        let output = format_ident!("{}Response", o.type_stem);
        // A method poem-openapi cannot route is registered as a hidden POST under
        // `runtime::EXTENSION_PREFIX`, where `runtime::ExtensionMethods` sends its requests.
        let (path, method, hidden) = if o.extension_method() {
            let path = format!(
                "{}/{}{}",
                crate::EXTENSION_PREFIX,
                o.http_method(),
                poem_path(&o.path)
            );
            (path, "post".to_string(), quote!(, hidden))
        } else {
            (poem_path(&o.path), o.method.clone(), quote!())
        };
        let op_id = if o.explicit_id {
            let id = &o.id;
            quote!(, operation_id = #id)
        } else {
            quote!()
        };
        let tag_exprs = self.tag_attrs(o);
        let deprecated = if o.deprecated {
            quote!(, deprecated)
        } else {
            quote!()
        };
        let docs = glue_doc(o);
        let (args, fields) = self.glue_inputs(o, defaults);
        let principal = if o.auth_mode() == AuthMode::None {
            quote!()
        } else {
            quote!(auth.0,)
        };
        let call = quote!(call(server, #principal input).await);
        let mut fields = fields;
        if o.writes_other_media() {
            fields.push(quote!(accept: crate::runtime::Accept(accept.0.clone())));
        }
        let (args, output, answer) = match response_media(o) {
            None => (args, quote!(crate::#module::#output), call),
            Some(media) => (
                std::iter::once(quote!(accept: crate::runtime::AcceptHeader))
                    .chain(args)
                    .collect(),
                quote!(crate::runtime::Negotiated<crate::#module::#output>),
                quote!(crate::runtime::Negotiated { response: #call, accept: accept.0, media: #media }),
            ),
        };
        quote! {
            #docs
            #[oai(path = #path, method = #method #op_id #(#tag_exprs)* #deprecated #hidden)]
            async fn #m(&self, #(#args),*) -> crate::runtime::Answer<#output> {
                let server = self.server()?;
                let input = crate::#module::#input { #(#fields),* };
                let call = <S as crate::#module::#trait_name>::#m;
                ::std::result::Result::Ok(#answer)
            }
        }
    }

    /// `, tag = ApiTags::X` for each of an operation's tags.
    fn tag_attrs(&self, o: &Operation) -> Vec<TokenStream> {
        o.tags
            .iter()
            .map(|name| {
                let t = self
                    .api
                    .tags
                    .iter()
                    .find(|t| t.served && &t.name == name)
                    .expect("every served tag is known");
                let e = format!("ApiTags::{}", t.rust);
                quote!(, tag = #e)
            })
            .collect()
    }

    /// The extractors of an operation's method and the input fields read from them:
    /// authentication first (a 401 comes before any 400), then each parameter, then the body.
    fn glue_inputs(
        &self,
        o: &Operation,
        defaults: &mut Vec<TokenStream>,
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let mut args = Vec::new();
        let mut fields = Vec::new();
        args.extend(self.auth_arg(o));
        for p in &o.params {
            let (arg, field) = self.param_arg(o, p, defaults);
            args.push(arg);
            fields.push(field);
        }
        if let Some(b) = &o.body {
            args.push(self.body_arg(b, &o.type_stem));
            fields.push(quote!(body: body.0));
            if !b.other_media.is_empty() {
                let marker = format_ident!("{}BodyMedia", o.type_stem);
                let types = &b.other_media;
                let docs = doc_str(&format!(
                    "The media types `{}` lists for its body beside those its extractor reads.",
                    o.id
                ));
                defaults.push(quote! {
                    #docs
                    pub struct #marker;
                    impl crate::runtime::MediaTypes for #marker {
                        const TYPES: &'static [&'static str] = &[#(#types),*];
                    }
                });
            }
        }
        (args, fields)
    }

    /// The authentication extractor of a secured operation, which knows the operation's
    /// requirements by its index in the document.
    fn auth_arg(&self, o: &Operation) -> Option<TokenStream> {
        let index = Literal::usize_unsuffixed(
            self.api
                .operations
                .iter()
                .position(|x| std::ptr::eq(x, o))
                .expect("the operation is the API's"),
        );
        match o.auth_mode() {
            AuthMode::None => None,
            AuthMode::Required => {
                Some(quote!(auth: crate::runtime::Auth<S, crate::Document, #index>))
            }
            AuthMode::Optional => {
                Some(quote!(auth: crate::runtime::OptionalAuth<S, crate::Document, #index>))
            }
        }
    }

    /// One parameter's extractor (its wrapper, type and `#[oai]` attributes) and the input field
    /// read from it: a date, a delimited array or a JSON document is unwrapped once more.
    fn param_arg(
        &self,
        o: &Operation,
        p: &Param,
        defaults: &mut Vec<TokenStream>,
    ) -> (TokenStream, TokenStream) {
        let local = format_ident!("p_{}", p.rust.trim_start_matches("r#"));
        let field = ident(&p.rust);
        let is_date = matches!(&p.schema.kind, Kind::String { format, .. } if format.as_deref() == Some("date"));
        let inner = if is_date {
            if p.required {
                quote!(crate::runtime::Date)
            } else {
                quote!(::std::option::Option<crate::runtime::Date>)
            }
        } else {
            self.param_type(p, true)
        };
        let wrapper = param_wrapper(p);
        let attrs = self.param_attrs(o, p, defaults);
        let docs = doc(&p.description);
        if p.query_string {
            let mode = match (p.form, &p.content_type) {
                (true, _) => quote!(crate::runtime::querystring::FORM),
                (false, Some(_)) => quote!(crate::runtime::querystring::JSON),
                (false, None) => quote!(crate::runtime::querystring::TEXT),
            };
            let arg = quote!(#docs #[oai(#(#attrs),*)] #local: crate::runtime::QueryString<#inner, crate::Document, { #mode }>);
            return (arg, quote!(#field: #local.0));
        }
        let wrapped = is_date || is_csv(p) || p.content_type.is_some();
        let field = if let Some(style) = p.path_style {
            // Path parameters are required: the prefix's wrapper, then the value's own.
            let (style, explode) = (Literal::character(style_char(style)), p.explode);
            let arg = quote!(#docs #[oai(#(#attrs),*)] #local: #wrapper<crate::runtime::PathStyled<#inner, #style, #explode>>);
            let value = if wrapped {
                quote!(#local.0.0.0)
            } else {
                quote!(#local.0.0)
            };
            return (arg, quote!(#field: #value));
        } else if wrapped && p.required {
            quote!(#field: #local.0.0)
        } else if wrapped {
            quote!(#field: #local.0.map(|d| d.0))
        } else {
            quote!(#field: #local.0)
        };
        let arg = quote!(#docs #[oai(#(#attrs),*)] #local: #wrapper<#inner>);
        (arg, field)
    }

    /// A parameter's `#[oai]` attributes: its name, style, deprecation, validators and the
    /// function of its default (pushed onto `defaults`).
    fn param_attrs(
        &self,
        o: &Operation,
        p: &Param,
        defaults: &mut Vec<TokenStream>,
    ) -> Vec<TokenStream> {
        let name = &p.name;
        let mut attrs = vec![quote!(name = #name)];
        if p.deep_object {
            attrs.push(quote!(style = "deep_object"));
        }
        if p.deprecated {
            attrs.push(quote!(deprecated));
        }
        let v = param_validators(p);
        if !v.is_empty() {
            attrs.push(quote!(validator(#(#v),*)));
        }
        if let Some(d) = param_default(p) {
            let f = format!("__default_{}_{}", o.rust, p.rust.trim_start_matches("r#"));
            let fid = ident(&f);
            let value = self.default_expr(&p.schema, d);
            let t = self.rust_type(&p.schema, false);
            defaults.push(quote! {
                fn #fid() -> #t { #value }
            });
            attrs.push(quote!(default = #f));
        }
        attrs
    }

    /// The body extractor: typed and validated by its media type (a JSON body also listed as a
    /// form with the same schema reads either); an optional JSON body may be absent (any other
    /// is taken as required).
    fn body_arg(&self, b: &Body, stem: &str) -> TokenStream {
        let docs = doc(&b.description);
        let ty = match b.media {
            Media::Json if b.also_form => {
                let t = self.rust_type(&b.schema, false);
                quote!(crate::runtime::JsonOrFormBody<#t, crate::Document>)
            }
            Media::Json => {
                let t = self.rust_type(&b.schema, false);
                quote!(crate::runtime::JsonBody<#t, crate::Document>)
            }
            Media::Multipart => {
                let t = self.rust_type(&b.schema, true);
                quote!(crate::runtime::MultipartBody<#t, crate::Document>)
            }
            Media::Form => {
                let t = self.rust_type(&b.schema, false);
                quote!(crate::runtime::FormBody<#t, crate::Document>)
            }
            Media::Text => quote!(::poem_openapi::payload::PlainText<::std::string::String>),
            // A request body is never streamed (the normaliser refuses `itemSchema` there).
            Media::Binary | Media::Stream(_) => quote!(crate::runtime::RawBody),
        };
        if !b.other_media.is_empty() {
            let marker = format_ident!("{}BodyMedia", stem);
            quote!(#docs body: crate::runtime::OrOther<#ty, #marker>)
        } else if !b.may_be_absent() {
            quote!(#docs body: #ty)
        } else {
            let t = self.rust_type(&b.schema, false);
            quote!(#docs body: crate::runtime::OptionalJsonBody<#t, crate::Document>)
        }
    }

    /// The Rust expression of a parameter's default value (`Default::default()` where the
    /// value does not fit the type).
    fn default_expr(&self, schema: &Schema, v: &serde_json::Value) -> TokenStream {
        match (&schema.kind, v) {
            (Kind::Ref(name), serde_json::Value::String(s)) => {
                let t = self.typedef(name);
                if let Kind::String { enum_values, .. } = &t.schema.kind {
                    let mut taken = std::collections::BTreeSet::new();
                    for ev in enum_values {
                        let variant = names::unique(names::camel(ev), &mut taken);
                        if ev == s {
                            let ty = ident(&t.rust);
                            let var = ident(&variant);
                            return quote!(crate::models::#ty::#var);
                        }
                    }
                }
                quote!(::std::default::Default::default())
            }
            (Kind::Integer { format }, serde_json::Value::Number(n)) => {
                let n = n.as_i64().unwrap_or_default();
                if format.as_deref() == Some("int32") {
                    let n = n as i32;
                    quote!(#n)
                } else {
                    quote!(#n)
                }
            }
            (Kind::Boolean, serde_json::Value::Bool(b)) => quote!(#b),
            (Kind::String { .. }, serde_json::Value::String(s)) => quote!(#s.to_string()),
            (Kind::Number { .. }, serde_json::Value::Number(n)) => {
                let n = f64_lit(n.as_f64().unwrap_or_default());
                quote!(#n as _)
            }
            _ => quote!(::std::default::Default::default()),
        }
    }
}

/// The `ResponseMedia` table of an operation some of whose responses are written in another
/// media type than their payload's own, or list types the handler writes itself (every declared
/// response is listed, so that a status is matched as the document matches it); `None` when all
/// are written as their payloads write them.
fn response_media(o: &Operation) -> Option<TokenStream> {
    if o.responses.iter().all(|r| r.written_as.is_empty()) && !o.writes_other_media() {
        return None;
    }
    let entries = o.responses.iter().map(|r| {
        let status = r.status.key();
        let types = &r.written_as;
        // Every type it lists: the primary, those its payload is also written as, the others.
        let mut listed: Vec<&String> = r.content.iter().map(|(_, primary, _)| primary).collect();
        for t in r.written_as.iter().chain(&r.other_media) {
            if !listed.contains(&t) {
                listed.push(t);
            }
        }
        quote!(crate::runtime::ResponseMedia { status: #status, types: &[#(#types),*], listed: &[#(#listed),*] })
    });
    Some(quote!(&[#(#entries),*]))
}

/// An operation's doc: summary and description (with no summary, the description starts the
/// text, as poem-openapi reads the first paragraph as the summary).
fn glue_doc(o: &Operation) -> TokenStream {
    let mut doc_text = o.summary.clone().unwrap_or_default();
    if let Some(d) = &o.description {
        if doc_text.is_empty() {
            // poem-openapi reads the first paragraph as the summary; keep it empty.
            doc_text.push_str(d);
        } else {
            doc_text.push_str("\n\n");
            doc_text.push_str(d);
        }
    }
    doc_str(&doc_text)
}

/// `runtime::PathStyled`'s name for a path style.
fn style_char(style: PathStyle) -> char {
    match style {
        PathStyle::Label => 'l',
        PathStyle::Matrix => 'm',
    }
}

/// The poem-openapi wrapper that extracts a parameter from where it is.
fn param_wrapper(p: &Param) -> TokenStream {
    match p.location {
        _ if p.deep_object => quote!(crate::runtime::DeepObject),
        Location::Path => quote!(::poem_openapi::param::Path),
        Location::Query => quote!(::poem_openapi::param::Query),
        Location::Header => quote!(::poem_openapi::param::Header),
        Location::Cookie => quote!(::poem_openapi::param::Cookie),
    }
}

/// A plain parameter's validators (poem-openapi's, but the pattern through
/// `runtime::ParamPattern`); none for references, arrays and JSON documents.
fn param_validators(p: &Param) -> Vec<TokenStream> {
    let mut v = Vec::new();
    if p.content_type.is_some() {
        return v;
    }
    let c = &p.schema.constraints;
    // Each validator only for the type poem-openapi has it for (and JSON Schema applies it to).
    match p.schema.kind {
        Kind::String { .. } => {
            if let Some(x) = c.max_length {
                v.push(quote!(max_length = #x));
            }
            if let Some(x) = c.min_length {
                v.push(quote!(min_length = #x));
            }
            if let Some(x) = &c.pattern {
                // Not poem-openapi's `pattern`, which compiles its regex on every request.
                let check = format!("crate::runtime::ParamPattern({x:?})");
                v.push(quote!(custom = #check));
            }
        }
        Kind::Integer { .. } | Kind::Number { .. } => {
            if let Some(x) = c.maximum {
                v.push(bound_validator("maximum", x, c.exclusive_maximum));
            }
            if let Some(x) = c.minimum {
                v.push(bound_validator("minimum", x, c.exclusive_minimum));
            }
        }
        // References validate as their type; arrays, objects and booleans have none here.
        _ => {}
    }
    v
}

/// `maximum(value = "x")` or `minimum(...)`, marked `exclusive` when the bound is.
fn bound_validator(which: &str, x: f64, exclusive: bool) -> TokenStream {
    let which = format_ident!("{which}");
    let x = x.to_string();
    if exclusive {
        quote!(#which(value = #x, exclusive))
    } else {
        quote!(#which(value = #x))
    }
}

/// The `ApiTags` enum of the served tags (none without).
fn tags_enum(api: &Api) -> TokenStream {
    let tag_variants: Vec<TokenStream> = api
        .tags
        .iter()
        .filter(|t| t.served)
        .map(|t| {
            let v = ident(&t.rust);
            let n = &t.name;
            let d = doc(&t.description);
            quote!(#d #[oai(rename = #n)] #v)
        })
        .collect();
    if tag_variants.is_empty() {
        quote!()
    } else {
        quote! {
            /// The document's tags.
            #[derive(::poem_openapi::Tags)]
            pub enum ApiTags {
                #(#tag_variants),*
            }
        }
    }
}

/// The operations cut into parts, one per path: each part is one `#[OpenApi]` impl.
///
/// poem-openapi puts all of an impl's routes in one function (`add_routes`) and all of its
/// operations' metadata in another (`meta`), and rustc type-checks and borrow-checks each as
/// one body, at a cost that grows faster than its size (GitHub's 1 223 operations in one impl
/// did not pass `cargo check` within 21 GB). Those bodies name every type their operations
/// touch, so after an edit of one schema incremental compilation checks again only the parts
/// whose operations reach it: with bankd's 55 operations in two impls of 32, an edit of
/// `AccountNumber` checked both giant bodies again (about 3 s of the 5.5 s the generated crate
/// took); one impl per path checks a few small ones.
///
/// The cut is only between paths: poem-openapi writes each impl's paths as keys of one map, so a
/// path split across two impls would be written twice.
fn impl_parts<T>(operations: &[T], path: impl Fn(&T) -> &str) -> Vec<Vec<&T>> {
    let mut parts: Vec<Vec<&T>> = vec![Vec::new()];
    for o in operations {
        let part = parts.last_mut().expect("never empty");
        if part.last().is_some_and(|last| path(last) != path(o)) {
            parts.push(vec![o]);
        } else {
            part.push(o);
        }
    }
    parts
}

/// The poem-openapi service type `Api<S>` and `fn api`, its constructor: one `#[OpenApi]`
/// struct when the operations fit one impl, else one `ApiPart<S, N>` per part, nested in
/// tuples of at most 16 (poem-openapi implements `OpenApi` for those).
fn api_types(parts: &[Vec<TokenStream>]) -> TokenStream {
    let server_fn = quote! {
        fn server(&self) -> ::std::result::Result<&S, crate::runtime::Rejection> {
            self.server.as_deref().ok_or_else(crate::runtime::Rejection::document_only)
        }
    };
    let doc = quote! {
        /// `None` only for [`document`]: the document is a property of the types, not of a
        /// running server.
    };
    if let [methods] = parts {
        return quote! {
            /// The API as a poem-openapi service over a [`Server`].
            ///
            #doc
            pub struct Api<S> {
                server: ::std::option::Option<Arc<S>>,
            }

            impl<S: Server> Api<S> {
                #server_fn
            }

            #[::poem_openapi::OpenApi]
            impl<S: Server> Api<S> {
                #(#methods)*
            }

            fn api<S: Server>(server: ::std::option::Option<Arc<S>>) -> Api<S> {
                Api { server }
            }
        };
    }
    let impls = parts.iter().enumerate().map(|(n, methods)| {
        quote! {
            #[::poem_openapi::OpenApi]
            impl<S: Server> ApiPart<S, #n> {
                #(#methods)*
            }
        }
    });
    let ty = nest_tuples((0..parts.len()).map(|n| quote!(ApiPart<S, #n>)).collect());
    quote! {
        /// A part of the API's operations as a poem-openapi service over a [`Server`] (see
        /// [`Api`]).
        ///
        #doc
        pub struct ApiPart<S, const N: usize> {
            server: ::std::option::Option<Arc<S>>,
        }

        impl<S: Server, const N: usize> ApiPart<S, N> {
            #server_fn
        }

        impl<S, const N: usize> crate::runtime::ApiParts<S> for ApiPart<S, N> {
            fn build(server: &::std::option::Option<Arc<S>>) -> Self {
                ApiPart { server: server.clone() }
            }
        }

        #(#impls)*

        /// The API as a poem-openapi service over a [`Server`]: one part per path, so that
        /// the functions poem-openapi writes for a part hold only that path's operations.
        pub type Api<S> = #ty;

        fn api<S: Server>(server: ::std::option::Option<Arc<S>>) -> Api<S> {
            crate::runtime::ApiParts::build(&server)
        }
    }
}

/// Types grouped into tuples of at most 16, level by level, until one is left.
fn nest_tuples(mut items: Vec<TokenStream>) -> TokenStream {
    while items.len() > 1 {
        items = items
            .chunks(16)
            .map(|group| match group {
                [one] => one.clone(),
                _ => quote!((#(#group),*)),
            })
            .collect();
    }
    items.pop().expect("at least one part")
}

/// The service (with the document's description and servers) and the entry points:
/// `document`, `routes` and `app`.
fn entry_points(api: &Api) -> TokenStream {
    let description = match &api.description {
        Some(d) => quote!(let service = service.description(#d);),
        None => quote!(),
    };
    let servers: Vec<TokenStream> = api
        .servers
        .iter()
        .map(|s| quote!(let service = service.server(#s);))
        .collect();
    let document = match &api.source {
        None => quote! {
            /// The document exactly as [`routes`] serves it at `/openapi.json`: poem-openapi's, plus
            /// [`crate::DOCUMENT_PATCH`] for what poem-openapi cannot represent.
            pub fn document() -> ::serde_json::Value {
                let spec = service::<DocumentOnly>(::std::option::Option::None).spec();
                let mut doc: ::serde_json::Value = ::serde_json::from_str(&spec).unwrap_or_default();
                crate::runtime::patch_document(&mut doc, &crate::DOCUMENT_PATCH);
                doc
            }
        },
        // poem-openapi writes OpenAPI 3.0: a 3.1 or 3.2 document is served as its source.
        Some(_) => quote! {
            /// The document exactly as [`routes`] serves it at `/openapi.json`: the source
            /// ([`crate::SOURCE_DOCUMENT`]), as written.
            pub fn document() -> ::serde_json::Value {
                ::serde_json::from_str(crate::SOURCE_DOCUMENT).unwrap_or_default()
            }
        },
    };
    let extension: std::collections::BTreeSet<String> = api
        .operations
        .iter()
        .filter(|o| o.extension_method())
        .map(Operation::http_method)
        .collect();
    let endpoint = if extension.is_empty() {
        quote!(svc.into_endpoint())
    } else {
        let prefix = crate::EXTENSION_PREFIX;
        quote!(svc.into_endpoint().with(crate::runtime::ExtensionMethods { methods: &[#(#extension),*], prefix: #prefix }))
    };
    let docs = match &api.source {
        None => quote!(let docs = svc.swagger_ui();),
        // poem-openapi's UI shows its own 3.0 reading: shown the source instead.
        Some(_) => quote! {
            let docs = crate::runtime::source_docs(svc.swagger_ui_html(), &svc.spec(), &doc, svc.swagger_ui());
        },
    };
    quote! {
        fn service<S: Server>(server: ::std::option::Option<Arc<S>>) -> ::poem_openapi::OpenApiService<Api<S>, ()> {
            let service = ::poem_openapi::OpenApiService::new(api(server), crate::TITLE, crate::VERSION);
            #description
            #(#servers)*
            service
        }

        #document

        /// The API routes (authenticated through [`crate::runtime::Hooks`]), `/openapi.json`,
        /// `/openapi.yaml` and interactive docs at `/docs`. Add your own routes, then wrap with
        /// `crate::runtime::ErrorRenderer::new(server, &document())` (or use [`app`]).
        pub fn routes<S: Server>(server: Arc<S>) -> ::poem::Route {
            let doc = document();
            let json = ::serde_json::to_string_pretty(&doc).unwrap_or_default();
            let yaml = ::serde_yaml::to_string(&doc).unwrap_or_default();
            let svc = service(::std::option::Option::Some(server.clone()));
            #docs
            ::poem::Route::new()
                .at("/openapi.json", crate::runtime::static_endpoint(json, "application/json"))
                .at("/openapi.yaml", crate::runtime::static_endpoint(yaml, "application/yaml"))
                .nest("/docs", docs)
                .nest("/", #endpoint.with(crate::runtime::AuthMiddleware { hooks: server, declared_headers: crate::DECLARED_HEADERS }))
        }

        /// [`routes`] with every framework error rendered through [`crate::runtime::Hooks::render_error`].
        pub fn app<S: Server>(server: Arc<S>) -> impl ::poem::Endpoint<Output = ::poem::Response> {
            routes(server.clone()).with(crate::runtime::ErrorRenderer::new(server, &document()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_cut_only_between_paths() {
        // Three operations on /a, then two on /b, one on /c, then /a again (another path item
        // cannot repeat a path, but the cut must not merge what is not consecutive).
        let paths: Vec<String> = ["/a", "/a", "/a", "/b", "/b", "/c", "/a"]
            .map(String::from)
            .to_vec();
        let parts = impl_parts(&paths, |p| p.as_str());
        let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![3, 2, 1, 1]);
        assert!(parts.iter().all(|part| part.iter().all(|p| *p == part[0])));
        let again: Vec<&String> = parts.concat();
        assert!(again.iter().zip(&paths).all(|(a, b)| *a == b), "order kept");
        assert_eq!(impl_parts(&Vec::<String>::new(), |p| p.as_str()).len(), 1);
    }

    #[test]
    fn parts_nest_in_tuples_of_at_most_sixteen() {
        let leaf = |n: usize| {
            let id = format_ident!("P{}", n);
            quote!(#id)
        };
        let ty = nest_tuples((0..3).map(leaf).collect());
        assert_eq!(ty.to_string(), "(P0 , P1 , P2)");
        // 17: a tuple of the first 16, then the 17th alone.
        let ty = nest_tuples((0..17).map(leaf).collect());
        let inner: Vec<String> = (0..16).map(|n| format!("P{n}")).collect();
        assert_eq!(ty.to_string(), format!("(({}) , P16)", inner.join(" , ")));
        // 300 parts: 19 tuples of at most 16, then one tuple of those.
        let text = nest_tuples((0..300).map(leaf).collect()).to_string();
        assert_eq!(text.matches('P').count(), 300);
        assert!(text.starts_with("(("), "{text}");
        // One part is the part itself.
        assert_eq!(nest_tuples(vec![leaf(0)]).to_string(), "P0");
    }
}
