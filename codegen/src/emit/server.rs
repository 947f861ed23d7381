//! `src/server.rs`: the routing glue (one function per operation, a `runtime::glue::Operation`
//! that describes the operation, extracts and validates its inputs, resolves the principal and
//! calls the trait method; the service's `OpenApi` impl over the list of them), the server that
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
        let mut markers = Vec::new();
        let mut inputs = SharedInputs::default();
        let operations: Vec<TokenStream> = api
            .operations
            .iter()
            .map(|o| self.glue(o, &mut markers, &mut inputs))
            .collect();
        let inputs = imported_paths(prelude_paths(inputs.items()));
        let names: Vec<proc_macro2::Ident> = api.operations.iter().map(glue_fn).collect();
        let api_types = api_types(&names);
        let imports = glue_imports(api);
        let document_only = self.document_only();
        let bound = self.server_bound();
        let tags_enum = tags_enum(api);
        let entry_points = entry_points(api);
        let operations = imported_paths(prelude_paths(quote!(#(#operations)*)));
        quote! {
            //! poem-openapi routing glue: extracts and validates parameters and bodies, resolves the
            //! principal, calls the trait method, and serialises the response enum.

            use std::sync::Arc;
            use poem::{EndpointExt, IntoEndpoint};
            #imports

            /// Everything a server implements: the hooks and one trait per tag.
            pub trait Server: #bound {}
            impl<T: #bound> Server for T {}

            #tags_enum

            #api_types

            #inputs

            #operations

            #(#markers)*

            #document_only
            #entry_points
        }
    }

    /// The routes crate's root (`Options::routes_apart`): the glue of [`Self::server`], its
    /// `crate::` paths naming `contract`, the crate of the contract.
    pub(super) fn routes_root(&self, contract: &str) -> TokenStream {
        let contract = format_ident!("{contract}");
        let glue = crate_paths(self.server(), &quote!(::#contract));
        quote! {
            #![cfg_attr(rustfmt, rustfmt::skip)]
            #![allow(clippy::all, clippy::pedantic, unused_imports, non_camel_case_types, dead_code, deprecated)]
            #glue
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
    /// and the callbacks (methods that cannot be called): what poem-openapi's reading of a 3.0
    /// document is computed with. A document served as its source needs none.
    fn document_only(&self) -> TokenStream {
        if self.api.serves_source() {
            return quote!();
        }
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

    /// One operation as a `runtime::glue::Operation`: its route, its description (built from
    /// each input's extractor as poem-openapi's macro builds it), its registrations and its
    /// endpoint, an `async fn serve` nested in the operation's function (beside the inputs'
    /// constants it reads), which reads each input with its extractor in a line of its own and
    /// calls the trait method with the typed input. A parameter's default is a closure; a body's
    /// marker of media types is pushed onto `markers`; the inputs' constants are the module's,
    /// each written once in `inputs`.
    fn glue(
        &self,
        o: &Operation,
        markers: &mut Vec<TokenStream>,
        shared: &mut SharedInputs,
    ) -> TokenStream {
        let m = ident(&o.rust);
        let f = glue_fn(o);
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
            (path, "POST".to_string(), true)
        } else {
            (poem_path(&o.path), o.method.to_uppercase(), false)
        };
        let path = routed_path(&path);
        let method = format_ident!("{method}");
        let op_id = if o.explicit_id { o.id.as_str() } else { "" };
        let tags = self.tag_exprs(o);
        let described = !self.api.serves_source();
        let (summary, description) = if described {
            poem_doc_parts(&glue_doc_text(o))
        } else {
            (None, None)
        };
        let (summary, description) = (summary.unwrap_or_default(), description.unwrap_or_default());
        let deprecated = o.deprecated;
        let mut inputs = self.glue_inputs(o, markers);
        for i in &mut inputs {
            i.constant = shared.constant(&i.constant, &i.input);
        }
        let principal = if o.auth_mode() == AuthMode::None {
            quote!()
        } else {
            quote!(auth.0,)
        };
        let call = quote!(call(&*server?, #principal input).await);
        let read = |i: &GlueInput, ty: &TokenStream| {
            let name = &i.constant;
            let input = match &i.default {
                None => quote!(#name),
                Some(f) => quote!(#name.or(#f)),
            };
            let method = if i.checked {
                quote!(checked)
            } else {
                quote!(read)
            };
            if ty.is_empty() {
                quote!(#input.#method(&mut cx).await?)
            } else {
                quote!(#input.#method::<#ty>(&mut cx).await?)
            }
        };
        // Each input read in order: into a local, or into its field of the input.
        let mut locals = Vec::new();
        let mut fields = Vec::new();
        for i in &inputs {
            match &i.field {
                Some((field, value)) => {
                    let read = read(i, &i.read_ty);
                    fields.push(quote!(#field: #read #value));
                }
                None => {
                    let (local, ty) = (&i.local, &i.ty);
                    let read = read(i, &quote!());
                    locals.push(quote!(let #local: #ty = #read;));
                }
            }
        }
        if o.writes_other_media() {
            fields.push(quote!(accept: crate::runtime::Accept(accept.0.clone())));
        }
        let (output, answer) = match response_media(o) {
            None => (quote!(crate::#module::#output), call),
            Some(media) => (
                quote!(crate::runtime::Negotiated<crate::#module::#output>),
                quote!(crate::runtime::Negotiated { response: #call, accept: accept.0, media: #media }),
            ),
        };
        let describe = described.then(|| {
            let inputs = inputs.iter().map(|i| {
                let (ty, name) = (&i.ty, &i.constant);
                match &i.default {
                    None => quote!(d.input::<#ty>(&#name);),
                    Some(f) => quote!(d.defaulted::<#ty, _>(&#name, #f);),
                }
            });
            quote!(|d| {
                #(d.tag(&#tags);)*
                #(#inputs)*
                d.response::<crate::runtime::Answer<#output>>();
            })
        });
        let mut operation = quote!(Operation::new(Method::#method, #path, #op_id, serve::<S>));
        if described {
            operation = quote!(#operation.described((#summary, #description), #describe));
        }
        if hidden {
            operation = quote!(#operation.hidden());
        }
        if deprecated {
            operation = quote!(#operation.deprecated());
        }
        let incoming = if inputs.is_empty() {
            quote!(_: Incoming)
        } else {
            quote!(mut cx: Incoming)
        };
        quote! {
            fn #f<S: Server>() -> Operation<S> {
                async fn serve<S: Server>(server: Served<S>, #incoming) -> Outcome {
                    #(#locals)*
                    let input = crate::#module::#input { #(#fields),* };
                    let call = <S as crate::#module::#trait_name>::#m;
                    crate::runtime::glue::respond(#answer)
                }
                #operation
            }
        }
    }

    /// `ApiTags::X` for each of an operation's tags.
    fn tag_exprs(&self, o: &Operation) -> Vec<TokenStream> {
        o.tags
            .iter()
            .map(|name| {
                let t = self
                    .api
                    .tags
                    .iter()
                    .find(|t| t.served && &t.name == name)
                    .expect("every served tag is known");
                let v = ident(&t.rust);
                quote!(ApiTags::#v)
            })
            .collect()
    }

    /// The inputs of an operation's endpoint: authentication first (a 401 comes before any
    /// 400), then each parameter, then the body.
    fn glue_inputs(&self, o: &Operation, markers: &mut Vec<TokenStream>) -> Vec<GlueInput> {
        let mut inputs = Vec::new();
        if response_media(o).is_some() {
            inputs.push(GlueInput::plain(
                "accept",
                quote!(crate::runtime::AcceptHeader),
                None,
            ));
        }
        inputs.extend(self.auth_input(o));
        let mut path_params = 0;
        for p in &o.params {
            inputs.push(self.param_input(p, &mut path_params));
        }
        if let Some(b) = &o.body {
            let description = b
                .description
                .as_deref()
                .filter(|_| !self.api.serves_source());
            inputs.push(GlueInput::plain(
                "body",
                self.body_type(b, &o.type_stem, false),
                description,
            ));
            let body = inputs.last_mut().expect("just pushed");
            body.field = Some((quote!(body), quote!(.0)));
            body.read_ty = self.body_type(b, &o.type_stem, true);
            if !b.other_media.is_empty() {
                let marker = format_ident!("{}BodyMedia", o.type_stem);
                let types = &b.other_media;
                let docs = doc_str(&format!(
                    "The media types `{}` lists for its body beside those its extractor reads.",
                    o.id
                ));
                markers.push(quote! {
                    #docs
                    pub struct #marker;
                    impl crate::runtime::MediaTypes for #marker {
                        const TYPES: &'static [&'static str] = &[#(#types),*];
                    }
                });
            }
        }
        inputs
    }

    /// The authentication input of a secured operation, whose extractor knows the operation's
    /// requirements by its index in the document.
    fn auth_input(&self, o: &Operation) -> Option<GlueInput> {
        let index = Literal::usize_unsuffixed(
            self.api
                .operations
                .iter()
                .position(|x| std::ptr::eq(x, o))
                .expect("the operation is the API's"),
        );
        let ty = match o.auth_mode() {
            AuthMode::None => return None,
            AuthMode::Required => quote!(Auth<S, crate::Document, #index>),
            AuthMode::Optional => {
                quote!(OptionalAuth<S, crate::Document, #index>)
            }
        };
        Some(GlueInput::plain("auth", ty, None))
    }

    /// One parameter's input: its extractor (the wrapper of where it is around its type), the
    /// options and description it is read and described with, its validators, and the input
    /// field read from it (a date, a delimited array or a JSON document is unwrapped once more).
    fn param_input(&self, p: &Param, path_params: &mut usize) -> GlueInput {
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
        let wrapped = is_date || is_csv(p) || p.content_type.is_some();
        // The extractor's type and what of it the input field takes.
        let (ty, value) = if p.query_string {
            let mode = match (p.form, &p.content_type) {
                (true, _) => quote!(crate::runtime::querystring::FORM),
                (false, Some(_)) => quote!(crate::runtime::querystring::JSON),
                (false, None) => quote!(crate::runtime::querystring::TEXT),
            };
            (
                quote!(crate::runtime::QueryString<#inner, crate::Document, { #mode }>),
                quote!(.0),
            )
        } else if let Some(style) = p.path_style {
            // Path parameters are required: the prefix's wrapper, then the value's own.
            let (style, explode) = (Literal::character(style_char(style)), p.explode);
            let value = if wrapped {
                quote!(.0.0.0)
            } else {
                quote!(.0.0)
            };
            (
                quote!(#wrapper<crate::runtime::PathStyled<#inner, #style, #explode>>),
                value,
            )
        } else if wrapped && p.required {
            (quote!(#wrapper<#inner>), quote!(.0.0))
        } else if wrapped {
            (quote!(#wrapper<#inner>), quote!(.0.map(|d| d.0)))
        } else {
            (quote!(#wrapper<#inner>), quote!(.0))
        };
        // Read as the field's type when the field takes the extractor's value as it is.
        let read_ty = if !p.query_string && p.path_style.is_none() && !wrapped {
            quote!(#wrapper<_>)
        } else {
            ty.clone()
        };
        // poem routes the N-th path parameter as `paramN`.
        let extract_name = if p.location == Location::Path && !p.query_string {
            *path_params += 1;
            format!("param{}", *path_params - 1)
        } else {
            p.name.clone()
        };
        let name = &p.name;
        let mut input = quote!(Input::named(#name));
        if extract_name != p.name {
            input = quote!(#input.key(#extract_name));
        }
        if !self.api.serves_source() {
            if let Some(d) = runtime_description(&p.description) {
                input = quote!(#input.described(#d));
            }
            if p.deprecated {
                input = quote!(#input.deprecated());
            }
        }
        if p.deep_object {
            input = quote!(#input.deep_object());
        }
        let rules = param_rules(p);
        if !rules.is_empty() {
            input = quote!(#input.rules(&[#(#rules),*]));
        }
        let default = param_default(p).map(|d| match self.default_expr(&p.schema, d) {
            (value, true) => quote!(|| #value),
            (value, false) => {
                let t = self.rust_type(&p.schema, false);
                quote!(|| -> #t { #value })
            }
        });
        GlueInput {
            constant: format_ident!("{}", local.to_string().to_uppercase()),
            local,
            ty,
            input,
            default,
            checked: !rules.is_empty(),
            field: Some((quote!(#field), value)),
            read_ty,
        }
    }

    /// The body extractor: typed and validated by its media type (a JSON body also listed as a
    /// form with the same schema reads either); an optional JSON body may be absent (any other
    /// is taken as required).
    /// The body's type `_` where the input field says it (`infer`: read into the field, and the
    /// extractor's value is its type parameter).
    fn body_type(&self, b: &Body, stem: &str, infer: bool) -> TokenStream {
        let infer = infer && b.other_media.is_empty();
        let model = |multipart: bool| {
            if infer {
                quote!(_)
            } else {
                self.rust_type(&b.schema, multipart)
            }
        };
        let ty = match b.media {
            Media::Json if b.also_form => {
                let t = model(false);
                quote!(crate::runtime::JsonOrFormBody<#t, crate::Document>)
            }
            Media::Json => {
                let t = model(false);
                quote!(crate::runtime::JsonBody<#t, crate::Document>)
            }
            Media::Multipart => {
                let t = model(true);
                quote!(crate::runtime::MultipartBody<#t, crate::Document>)
            }
            Media::Form => {
                let t = model(false);
                quote!(crate::runtime::FormBody<#t, crate::Document>)
            }
            Media::Text => quote!(::poem_openapi::payload::PlainText<::std::string::String>),
            // A request body is never streamed (the normaliser refuses `itemSchema` there).
            Media::Binary | Media::Stream(_) => quote!(crate::runtime::RawBody),
        };
        if !b.other_media.is_empty() {
            let marker = format_ident!("{}BodyMedia", stem);
            quote!(crate::runtime::OrOther<#ty, #marker>)
        } else if !b.may_be_absent() {
            ty
        } else {
            let t = model(false);
            quote!(crate::runtime::OptionalJsonBody<#t, crate::Document>)
        }
    }

    /// A parameter's default as an expression, and whether the expression alone says its type
    /// (`false` for `Default::default()` and a cast, which need the parameter's).
    fn default_expr(&self, schema: &Schema, v: &serde_json::Value) -> (TokenStream, bool) {
        let typed = match (&schema.kind, v) {
            (Kind::Ref(name), serde_json::Value::String(s)) => {
                let t = self.typedef(name);
                if let Kind::String { enum_values, .. } = &t.schema.kind {
                    let mut taken = std::collections::BTreeSet::new();
                    for ev in enum_values {
                        let variant = names::unique(names::camel(ev), &mut taken);
                        if ev == s {
                            let ty = ident(&t.rust);
                            let var = ident(&variant);
                            return (quote!(crate::models::#ty::#var), true);
                        }
                    }
                }
                None
            }
            (Kind::Integer { format }, serde_json::Value::Number(n)) => {
                let n = n.as_i64().unwrap_or_default();
                if format.as_deref() == Some("int32") {
                    let n = n as i32;
                    Some(quote!(#n))
                } else {
                    Some(quote!(#n))
                }
            }
            (Kind::Boolean, serde_json::Value::Bool(b)) => Some(quote!(#b)),
            (Kind::String { .. }, serde_json::Value::String(s)) => Some(quote!(#s.to_string())),
            (Kind::Number { .. }, serde_json::Value::Number(n)) => {
                let n = f64_lit(n.as_f64().unwrap_or_default());
                return (quote!(#n as _), false);
            }
            _ => None,
        };
        match typed {
            Some(value) => (value, true),
            None => (quote!(::std::default::Default::default()), false),
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

/// An operation's doc text as the glue's doc comment carried it: summary and description
/// (with no summary, the description starts the text, as poem-openapi reads the first paragraph
/// as the summary; `DocumentPatch::untitled_operations` undoes that in the served document).
fn glue_doc_text(o: &Operation) -> String {
    let mut doc_text = o.summary.clone().unwrap_or_default();
    if let Some(d) = &o.description {
        if !doc_text.is_empty() {
            doc_text.push_str("\n\n");
        }
        doc_text.push_str(d);
    }
    doc_text
}

/// An input's description as poem-openapi reads it from a doc comment: each line trimmed.
fn runtime_description(text: &Option<String>) -> Option<String> {
    let (summary, description) = poem_doc_parts(text.as_deref()?);
    match (summary, description) {
        (Some(s), Some(d)) => Some(format!("{s}\n\n{d}")),
        (s, _) => s,
    }
}

/// A text split as poem-openapi's macro splits a doc comment into summary and description:
/// each line trimmed, the lines joined, the first blank line the cut (`None` for an empty text).
fn poem_doc_parts(text: &str) -> (Option<String>, Option<String>) {
    let joined = poem_doc(text);
    if joined.is_empty() {
        return (None, None);
    }
    match joined.split_once("\n\n") {
        Some((s, d)) => (Some(s.to_string()), Some(d.to_string())),
        None => (Some(joined), None),
    }
}

/// A description as poem-openapi reads it from the doc comment the generator writes for it:
/// each line trimmed, joined by `\n` (empty: none).
pub(crate) fn poem_doc(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    text.trim_end()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The path as the document writes it, from poem's form of a path (`/a/:id`): `/a/{id}`. The
/// runtime routes it as poem-openapi's macro does (`runtime::glue::Operation::route`).
fn routed_path(poem_path: &str) -> String {
    let mut path = String::new();
    for seg in poem_path.split('/').filter(|s| !s.is_empty()) {
        match seg.strip_prefix(':') {
            Some(var) => path.push_str(&format!("/{{{var}}}")),
            None => {
                path.push('/');
                path.push_str(seg);
            }
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    path
}

/// The glue's function of an operation: `op_` and the operation's method name, which cannot be
/// the name of the glue's own functions (`routes`, `app`, `document`, `operations`, ...).
fn glue_fn(o: &Operation) -> proc_macro2::Ident {
    format_ident!("op_{}", o.rust)
}

/// One input of an operation's endpoint, as the glue reads and describes it.
/// The glue module's input constants: each definition written once and named for the first
/// input that has it (`P_LIMIT`, then `P_LIMIT_2` for a `limit` defined otherwise), so that the
/// operations that share a parameter (a component, or one written alike) share its constant.
#[derive(Default)]
struct SharedInputs {
    /// Each constant with its definition, in the order first met.
    defined: Vec<(proc_macro2::Ident, TokenStream)>,
    /// Each definition's text, with its constant's name.
    by_text: std::collections::HashMap<String, proc_macro2::Ident>,
    taken: std::collections::BTreeSet<String>,
}

impl SharedInputs {
    /// The constant defined as `input`, defined now under `name` (made unique) if it is new.
    fn constant(&mut self, name: &proc_macro2::Ident, input: &TokenStream) -> proc_macro2::Ident {
        let text = input.to_string();
        if let Some(c) = self.by_text.get(&text) {
            return c.clone();
        }
        let mut unique = name.to_string();
        let mut n = 1;
        while !self.taken.insert(unique.clone()) {
            n += 1;
            unique = format!("{name}_{n}");
        }
        let c = format_ident!("{unique}");
        self.by_text.insert(text, c.clone());
        self.defined.push((c.clone(), input.clone()));
        c
    }

    /// The constants' definitions.
    fn items(&self) -> TokenStream {
        let items = self
            .defined
            .iter()
            .map(|(c, input)| quote!(const #c: Input = #input;));
        quote!(#(#items)*)
    }
}

struct GlueInput {
    /// The local it is read into.
    local: proc_macro2::Ident,
    /// The constant of its `runtime::glue::Input`.
    constant: proc_macro2::Ident,
    /// Its extractor.
    ty: TokenStream,
    /// Its `runtime::glue::Input` (name, description, deprecation, style, rules).
    input: TokenStream,
    /// The closure of its default.
    default: Option<TokenStream>,
    /// It has rules to check.
    checked: bool,
    /// The input field read from it, and what of the extractor it takes (`.0`); none for an
    /// input read into a local (`auth`, `accept`).
    field: Option<(TokenStream, TokenStream)>,
    /// The extractor's type as the field reads it (`Query<_>` when the field's type says the
    /// rest).
    read_ty: TokenStream,
}

impl GlueInput {
    /// An input read by a local of its own name, without rules or field.
    fn plain(name: &str, ty: TokenStream, description: Option<&str>) -> Self {
        let mut input = quote!(Input::named(#name));
        if let Some(d) = runtime_description(&description.map(str::to_string)) {
            input = quote!(#input.described(#d));
        }
        GlueInput {
            local: format_ident!("{name}"),
            constant: format_ident!("{}", name.to_uppercase()),
            ty: ty.clone(),
            input,
            default: None,
            checked: false,
            field: None,
            read_ty: ty.clone(),
        }
    }
}

/// `runtime::PathStyled`'s name for a path style.
fn style_char(style: PathStyle) -> char {
    match style {
        PathStyle::Label => 'l',
        PathStyle::Matrix => 'm',
    }
}

/// The imports of the glue: the poem-openapi wrappers its parameters are read with, the
/// authentication extractors its operations use, and the glue's types it names (all named in
/// camel case: a module-level import could not clash with an operation's function).
fn glue_imports(api: &Api) -> TokenStream {
    let params = || api.operations.iter().flat_map(|o| &o.params);
    let wrappers: std::collections::BTreeSet<String> = params()
        .filter(|p| !p.query_string && !p.deep_object)
        .map(|p| param_wrapper(p).to_string())
        .collect();
    let wrappers: Vec<_> = wrappers.iter().map(|w| format_ident!("{w}")).collect();
    let wrappers =
        (!wrappers.is_empty()).then(|| quote!(use ::poem_openapi::param::{#(#wrappers),*};));
    let mut glue = vec![
        quote!(Incoming),
        quote!(Operation),
        quote!(Outcome),
        quote!(Served),
    ];
    let has_inputs = |o: &Operation| {
        !o.params.is_empty()
            || o.body.is_some()
            || o.auth_mode() != AuthMode::None
            || response_media(o).is_some()
    };
    if api.operations.iter().any(has_inputs) {
        glue.insert(0, quote!(Input));
    }
    if params().any(|p| !param_rules(p).is_empty()) {
        glue.push(quote!(Rule));
    }
    let mut auth = Vec::new();
    for (mode, extractor) in [
        (AuthMode::Required, quote!(Auth)),
        (AuthMode::Optional, quote!(OptionalAuth)),
    ] {
        if api.operations.iter().any(|o| o.auth_mode() == mode) {
            auth.push(extractor);
        }
    }
    let auth = (!auth.is_empty()).then(|| quote!(use crate::runtime::{#(#auth),*};));
    quote! {
        #wrappers
        #auth
        use ::poem::http::Method;
        use crate::{Document, models, runtime};
        use crate::runtime::glue::{self, #(#glue),*};
    }
}

/// The poem-openapi wrapper that extracts a parameter from where it is (imported by
/// [`glue_imports`]).
fn param_wrapper(p: &Param) -> TokenStream {
    match p.location {
        _ if p.deep_object => quote!(crate::runtime::DeepObject),
        Location::Path => quote!(Path),
        Location::Query => quote!(Query),
        Location::Header => quote!(Header),
        Location::Cookie => quote!(Cookie),
    }
}

/// A plain parameter's validators as `runtime::glue::Rule`s, in poem-openapi's order (bounds,
/// lengths, then the pattern); none for references, arrays and JSON documents.
fn param_rules(p: &Param) -> Vec<TokenStream> {
    let mut v = Vec::new();
    if p.content_type.is_some() {
        return v;
    }
    let c = &p.schema.constraints;
    let rule = quote!(Rule);
    // Each validator only for the type poem-openapi has it for (and JSON Schema applies it to).
    match p.schema.kind {
        Kind::String { .. } => {
            if let Some(x) = c.max_length {
                v.push(quote!(#rule::MaxLength(#x)));
            }
            if let Some(x) = c.min_length {
                v.push(quote!(#rule::MinLength(#x)));
            }
            if let Some(x) = &c.pattern {
                // Not poem-openapi's `Pattern`, which compiles its regex on every request.
                v.push(quote!(#rule::Pattern(#x)));
            }
        }
        Kind::Integer { .. } | Kind::Number { .. } => {
            if let Some(x) = c.maximum {
                let (x, exclusive) = (f64_lit(x), c.exclusive_maximum);
                v.push(quote!(#rule::Maximum(#x, #exclusive)));
            }
            if let Some(x) = c.minimum {
                let (x, exclusive) = (f64_lit(x), c.exclusive_minimum);
                v.push(quote!(#rule::Minimum(#x, #exclusive)));
            }
        }
        // References validate as their type; arrays, objects and booleans have none here.
        _ => {}
    }
    v
}

/// The `ApiTags` enum of the served tags (none without).
fn tags_enum(api: &Api) -> TokenStream {
    if api.serves_source() {
        return quote!();
    }
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

/// The poem-openapi service type `Api<S>`, its `OpenApi` impl over the list of operations, and
/// `fn api`, its constructor.
///
/// poem-openapi's `#[OpenApi]` macro writes every operation of an impl into two functions
/// (`meta` and `add_routes`), with four blocks per input that test its kind at run time; rustc
/// checks each function as one body, at a cost that grows faster than its size (GitHub's
/// 1 223 operations in one impl did not pass `cargo check` within 21 GB), and an edit of one
/// schema checks again every body that names it. Here each operation is a function of its own
/// (`runtime::glue::Operation`), typed and short; what is the same for every operation is
/// generic code in `runtime::glue`; the impl only lists the operations.
fn api_types(operations: &[proc_macro2::Ident]) -> TokenStream {
    quote! {
        /// The API as a poem-openapi service over a [`Server`].
        ///
        /// `None` only for [`document`]: the document is a property of the types, not of a
        /// running server.
        pub struct Api<S> {
            server: ::std::option::Option<Arc<S>>,
        }

        /// Every operation, in document order.
        fn operations<S: Server>() -> ::std::vec::Vec<Operation<S>> {
            ::std::vec![#(#operations::<S>()),*]
        }

        impl<S: Server> ::poem_openapi::OpenApi for Api<S> {
            fn meta() -> ::std::vec::Vec<::poem_openapi::registry::MetaApi> {
                crate::runtime::glue::meta(&operations::<S>())
            }

            fn register(registry: &mut ::poem_openapi::registry::Registry) {
                crate::runtime::glue::register(&operations::<S>(), registry)
            }

            fn add_routes(self, route_table: &mut crate::runtime::glue::RouteTable) {
                crate::runtime::glue::add_routes(&operations::<S>(), &self.server, route_table)
            }
        }

        fn api<S: Server>(server: ::std::option::Option<Arc<S>>) -> Api<S> {
            Api { server }
        }
    }
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

/// `tokens`, in every group too, with each run of token trees that `replace` matches (given the
/// trees of a level and a position, it answers the replacement and how many trees it takes)
/// replaced.
fn rewrite(tokens: TokenStream, replace: &Replace<'_>) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < trees.len() {
        if let Some((replacement, taken)) = replace(&trees, i) {
            out.extend(replacement);
            i += taken;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), rewrite(g.stream(), replace));
                inner.set_span(g.span());
                out.extend([TokenTree::Group(inner)]);
            }
            other => out.extend([other.clone()]),
        }
        i += 1;
    }
    out
}

/// What [`rewrite`] asks at each position: the replacement and how many trees it takes.
type Replace<'a> = dyn Fn(&[proc_macro2::TokenTree], usize) -> Option<(TokenStream, usize)> + 'a;

/// The text of the token tree at `i`, if any.
fn text_at(trees: &[proc_macro2::TokenTree], i: usize) -> Option<String> {
    trees.get(i).map(ToString::to_string)
}

/// Whether the token trees at `i` are `::`.
fn path_sep_at(trees: &[proc_macro2::TokenTree], i: usize) -> bool {
    text_at(trees, i).as_deref() == Some(":") && text_at(trees, i + 1).as_deref() == Some(":")
}

/// `tokens` with each path that starts at `crate` starting at `root` instead (`::contract`: the
/// glue written for a module of the crate of the contract, as the root of a crate beside it;
/// `crate::a::b`: the paths in a macro's tokens, for a crate generated as a module).
pub(super) fn crate_paths(tokens: TokenStream, root: &TokenStream) -> TokenStream {
    rewrite(tokens, &|trees, i| {
        (text_at(trees, i).as_deref() == Some("crate") && path_sep_at(trees, i + 1))
            .then(|| (root.clone(), 1))
    })
}

/// `tokens` with `::std::option::Option`, `::std::string::String` and `::std::vec::Vec` named
/// as the prelude names them: the glue's modules declare no type of those names, and its
/// reads fit a line.
fn prelude_paths(tokens: TokenStream) -> TokenStream {
    const PRELUDE: [(&str, &str); 3] = [("option", "Option"), ("string", "String"), ("vec", "Vec")];
    rewrite(tokens, &|trees, i| {
        let text = |at: usize| text_at(trees, at);
        if !(path_sep_at(trees, i)
            && text(i + 2).as_deref() == Some("std")
            && path_sep_at(trees, i + 3)
            && path_sep_at(trees, i + 6))
        {
            return None;
        }
        let (_, name) = PRELUDE.iter().find(|(module, name)| {
            text(i + 5).as_deref() == Some(module) && text(i + 8).as_deref() == Some(name)
        })?;
        let name = format_ident!("{name}");
        Some((quote!(#name), 9))
    })
}

/// `tokens` with `crate::runtime::glue::x` as `glue::x`, and `crate::runtime::x`,
/// `crate::models::x` and `crate::Document` without `crate::`: the names [`glue_imports`]
/// imports, which the glue's module declares no item of.
fn imported_paths(tokens: TokenStream) -> TokenStream {
    rewrite(tokens, &|trees, i| {
        let text = |at: usize| text_at(trees, at);
        if !(text(i).as_deref() == Some("crate") && path_sep_at(trees, i + 1)) {
            return None;
        }
        match text(i + 3).as_deref() {
            Some("runtime")
                if path_sep_at(trees, i + 4) && text(i + 6).as_deref() == Some("glue") =>
            {
                Some((quote!(), 6))
            }
            Some("runtime" | "models" | "Document") => Some((quote!(), 3)),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imported_names_lose_their_crate_paths_and_nothing_else_does() {
        let tokens = quote!(crate::runtime::glue::respond(x); crate::runtime::Json<crate::models::A, crate::Document>; crate::tag::Input; other::runtime::X);
        assert_eq!(
            imported_paths(tokens).to_string(),
            quote!(glue::respond(x); runtime::Json<models::A, Document>; crate::tag::Input; other::runtime::X).to_string()
        );
    }

    #[test]
    fn prelude_types_lose_their_std_paths_and_nothing_else_does() {
        let tokens = quote!(x: ::std::option::Option<::std::string::String>, y: ::std::sync::Arc<::std::vec::Vec<u8>>);
        assert_eq!(
            prelude_paths(tokens).to_string(),
            quote!(x: Option<String>, y: ::std::sync::Arc<Vec<u8>>).to_string()
        );
    }

    #[test]
    fn paths_are_written_back_from_poems_form() {
        assert_eq!(routed_path("/"), "/");
        assert_eq!(
            routed_path("/a/:id/b/:id__again2"),
            "/a/{id}/b/{id__again2}"
        );
        assert_eq!(routed_path("/a/b/"), "/a/b");
    }

    #[test]
    fn doc_texts_split_as_poem_openapi_splits_a_doc_comment() {
        assert_eq!(poem_doc_parts(" \n "), (None, None));
        assert_eq!(
            poem_doc_parts("Title\n\n  First\r\nsecond  \n\nthird"),
            (Some("Title".into()), Some("First\nsecond\n\nthird".into()))
        );
        assert_eq!(
            runtime_description(&Some(" a\n\n b ".into())),
            Some("a\n\nb".into())
        );
    }
}
