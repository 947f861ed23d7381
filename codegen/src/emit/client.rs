//! `src/client.rs` (feature `client`): a typed client over the same inputs and response enums
//! as the server. Per operation: a method that sends, a function that writes its input into a
//! request and one that reads an answer into its response enum; a `<operation>_stream` method
//! for operations that page; a `receive_<callback>` function per callback or webhook body.
//! Everything the operations share (credentials, retries, keys, hooks, errors) is the
//! runtime's `client` module.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Emitter, doc_str, ident};
use crate::ir::*;

impl Emitter<'_> {
    /// A piece of `client.rs`: the operations in `ops` (their methods in an `impl Client` of
    /// their own, their writers and readers), after the file's head when `head`, and the
    /// receivers when `receivers`.
    pub(super) fn client_file(
        &self,
        ops: std::ops::Range<usize>,
        head: bool,
        receivers: bool,
    ) -> TokenStream {
        let api = self.api;
        let chosen = || {
            api.operations
                .iter()
                .enumerate()
                .skip(ops.start)
                .take(ops.len())
        };
        let methods: Vec<TokenStream> = chosen().map(|(_, o)| self.client_method(o)).collect();
        let writers: Vec<TokenStream> = chosen().map(|(i, o)| self.request_writer(o, i)).collect();
        let readers: Vec<TokenStream> = chosen().map(|(i, o)| self.response_reader(o, i)).collect();
        let head = if head { self.client_head() } else { quote!() };
        let receivers = if receivers {
            self.receivers()
        } else {
            quote!()
        };
        quote! {
            #head

            impl Client {
                #(#methods)*
            }

            #(#writers)*
            #(#readers)*
            #receivers
        }
    }

    /// The file's doc, `OPERATIONS` and the `Client` type.
    fn client_head(&self) -> TokenStream {
        let api = self.api;
        let count = api.operations.len();
        let others = super::crate_root::operation_security(api);
        let ops: Vec<TokenStream> = api
            .operations
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let security = match others.iter().position(|(k, _)| *k == i) {
                    Some(k) => quote!(OPERATION_SECURITY[#k].1),
                    None => quote!(SECURITY),
                };
                operation_entry(o, security)
            })
            .collect();
        let title = format!(" A client of {} {}.", api.title, api.version);
        quote! {
            //! A typed client: one method per operation, taking the operation's input and
            //! answering its response enum (the same types as the server), over `reqwest`.
            //! Credentials, retries, `Idempotency-Key`s and hooks are set once in a
            //! [`Config`](crate::runtime::client::Config).

            /// What the client knows of each operation, in document order.
            static OPERATIONS: [crate::runtime::client::Operation; #count] = [#(#ops),*];

            #[doc = #title]
            ///
            /// A declared status, error statuses included, is `Ok` with its variant; anything
            /// else is a [`crate::runtime::client::Error`] that keeps what was received.
            #[derive(Clone)]
            pub struct Client {
                core: crate::runtime::client::Core,
            }

            impl Client {
                pub fn new(config: crate::runtime::client::Config) -> Self {
                    Client {
                        core: crate::runtime::client::Core::new(
                            config,
                            <crate::Document as crate::runtime::ApiDocument>::SECURITY_SCHEMES,
                        ),
                    }
                }

                pub fn core(&self) -> &crate::runtime::client::Core {
                    &self.core
                }
            }
        }
    }

    fn client_method(&self, o: &Operation) -> TokenStream {
        let m = ident(&o.rust);
        let (input, output) = self.op_types(o);
        let write = format_ident!("write_{}", o.rust);
        let read = format_ident!("read_{}", o.rust);
        let mut text = String::new();
        if let Some(s) = &o.summary {
            text.push_str(s.trim());
            text.push_str("\n\n");
        }
        text.push_str(&format!("`{} {}`", o.http_method(), o.path));
        let docs = doc_str(&text);
        let stream = self.stream_method(o).unwrap_or_default();
        let deprecated = if o.deprecated {
            quote!(#[deprecated])
        } else {
            quote!()
        };
        quote! {
            #docs
            #deprecated
            pub async fn #m(&self, input: #input) -> ::std::result::Result<#output, crate::runtime::client::Error> {
                let received = self.core.send(#write(&input)?).await?;
                #read(received)
            }
            #stream
        }
    }

    /// The paths of an operation's input struct and response enum.
    fn op_types(&self, o: &Operation) -> (TokenStream, TokenStream) {
        let module = ident(&self.tag_module_of(o));
        let input = format_ident!("{}Input", o.type_stem);
        let output = format_ident!("{}Response", o.type_stem);
        (
            quote!(crate::#module::#input),
            quote!(crate::#module::#output),
        )
    }

    fn tag_module_of(&self, o: &Operation) -> String {
        self.api
            .tags
            .iter()
            .find(|t| t.name == o.tag)
            .map(|t| t.module.clone())
            .unwrap_or_default()
    }

    /// `write_<operation>`: the input as a request.
    fn request_writer(&self, o: &Operation, i: usize) -> TokenStream {
        let f = format_ident!("write_{}", o.rust);
        let (input, _) = self.op_types(o);
        let params: Vec<TokenStream> = o.params.iter().map(param_writer).collect();
        let body = o.body.as_ref().map(body_writer).unwrap_or_default();
        let accept = if o.writes_other_media() {
            quote!(r.accept(input.accept.0.as_ref());)
        } else {
            quote!()
        };
        let r = if params.is_empty() && body.is_empty() && accept.is_empty() {
            quote!(r)
        } else {
            quote!(mut r)
        };
        quote! {
            fn #f(input: &#input) -> ::std::result::Result<crate::runtime::client::Request, crate::runtime::client::Error> {
                let _ = &input;
                let #r = crate::runtime::client::Request::new(&OPERATIONS[#i]);
                #(#params)*
                #body
                #accept
                ::std::result::Result::Ok(r)
            }
        }
    }

    /// `read_<operation>`: an answer as the response enum's variant of its status.
    fn response_reader(&self, o: &Operation, i: usize) -> TokenStream {
        let f = format_ident!("read_{}", o.rust);
        let (_, output) = self.op_types(o);
        let mut arms = Vec::new();
        let mut ranges = Vec::new();
        let mut default = quote!(_ => return ::std::result::Result::Err(received.unexpected(op)));
        for r in &o.responses {
            let v = ident(&r.variant);
            let fields = self.read_fields(r);
            let value = if fields.is_empty() {
                quote!(#output::#v)
            } else {
                quote!(#output::#v(#(#fields),*))
            };
            match r.status {
                Status::Code(c) => arms.push(quote!(#c => #value)),
                Status::Range(d) => ranges.push(quote!(s if s / 100 == #d => #value)),
                Status::Default => default = quote!(_ => #value),
            }
        }
        quote! {
            fn #f(received: crate::runtime::client::Received) -> ::std::result::Result<#output, crate::runtime::client::Error> {
                let op = &OPERATIONS[#i];
                let _ = op;
                ::std::result::Result::Ok(match received.status.as_u16() {
                    #(#arms,)*
                    #(#ranges,)*
                    #default,
                })
            }
        }
    }

    /// The expressions that read a response variant's fields from `received`, in the order of
    /// [`Emitter::variant_fields`]: the parts, or the status and the typed response built of
    /// them.
    fn read_fields(&self, r: &Response) -> Vec<TokenStream> {
        let mut parts = self.read_parts(r);
        let Some(path) = self.typed_response_path(r) else {
            return parts;
        };
        let carries_status = matches!(r.status, Status::Default | Status::Range(_));
        let mut fields = Vec::new();
        if carries_status {
            fields.push(parts.remove(0));
        }
        let headers = parts.split_off(parts.len() - r.headers.len());
        let names = super::operations::typed_header_fields(r);
        let body = r
            .content
            .as_ref()
            .and_then(|_| parts.pop())
            .map(|b| quote!(body: #b,));
        fields.push(quote!(#path { #body #(#names: #headers),* }));
        fields
    }

    /// The expressions that read a response's parts from `received`, in the order of
    /// [`Emitter::response_fields`].
    fn read_parts(&self, r: &Response) -> Vec<TokenStream> {
        let mut fields = Vec::new();
        if matches!(r.status, Status::Default | Status::Range(_)) {
            fields.push(quote!(received.status));
        }
        if r.status == Status::Default && r.content.is_none() {
            fields.push(quote!(crate::runtime::NoBody));
        }
        if let Some((media, content_type, _)) = &r.content {
            let payload = match media {
                Media::Binary | Media::Form | Media::Multipart => {
                    quote!(::poem_openapi::payload::Binary(received.body.clone()))
                }
                Media::Text => quote!(::poem_openapi::payload::PlainText(received.text(op)?)),
                Media::Stream(_) => {
                    quote!(received.item_stream(op)?)
                }
                Media::Json => quote!(crate::runtime::Json(
                    received.checked_json::<_, crate::Document>(op)?
                )),
            };
            fields.push(if r.other_media.is_empty() {
                payload
            } else {
                quote! {
                    if received.is_media(#content_type) {
                        crate::runtime::Representation::Primary(#payload)
                    } else {
                        crate::runtime::Representation::Other {
                            media_type: received.media_type(),
                            bytes: received.body.clone(),
                        }
                    }
                }
            });
        }
        for h in &r.headers {
            let n = &h.name;
            fields.push(match (h.required, h.ty) {
                (true, _) => quote!(received.required_header(op, #n)?),
                (false, HeaderType::Text) => quote!(received.header(#n)),
                (false, _) => quote!(received.typed_header(op, #n)?),
            });
        }
        fields
    }

    /// `<operation>_stream`, for an operation that pages (see [`Api::pagination`]) with a JSON
    /// success whose variant has the page first.
    fn stream_method(&self, o: &Operation) -> Option<TokenStream> {
        let p = self.api.pagination(o)?;
        let ok = o
            .responses
            .iter()
            .find(|r| matches!(r.status, Status::Code(200..=299)))?;
        let Some((Media::Json, _, schema)) = &ok.content else {
            return None;
        };
        if !ok.other_media.is_empty() {
            return None;
        }
        let param = o
            .params
            .iter()
            .find(|q| q.name == p.param && q.location == Location::Query)?;
        if param.required || super::param_default(param).is_some() {
            return None;
        }
        let param_field = ident(&param.rust);
        let body = self.api.resolved(schema);
        // The page's items: an array property, or the body itself (a named array is a newtype).
        let (items_expr, item_schema) = match &p.items {
            Some(name) => {
                let Kind::Object(object) = &body.kind else {
                    return None;
                };
                let prop = object.properties.iter().find(|q| &q.name == name)?;
                let Kind::Array(item) = &self.api.resolved(&prop.schema).kind else {
                    return None;
                };
                let field = ident(&prop.rust);
                let newtype = matches!(prop.schema.kind, Kind::Ref(_));
                let access = if newtype {
                    quote!(page.#field.map(|a| a.0))
                } else {
                    quote!(page.#field)
                };
                (
                    quote!(crate::runtime::client::paginate::IntoItems::into_items(#access)),
                    item.as_ref(),
                )
            }
            None => {
                let Kind::Array(item) = &body.kind else {
                    return None;
                };
                let access = if matches!(schema.kind, Kind::Ref(_)) {
                    quote!(page.0)
                } else {
                    quote!(page)
                };
                (access, item.as_ref())
            }
        };
        // A property of `page` that may be optional in Rust: read through `IntoItems`-like
        // traits that take both shapes.
        let prop_field = |name: &str| -> Option<syn::Ident> {
            let Kind::Object(object) = &body.kind else {
                return None;
            };
            object
                .properties
                .iter()
                .find(|q| q.name == name)
                .map(|q| ident(&q.rust))
        };
        let item_ty = self.rust_type(item_schema, false);
        let (before, next) = match &p.next {
            NextPage::LastItem { field, flag } => {
                let flag = prop_field(flag)?;
                (
                    quote!(),
                    quote! {
                        let more = crate::runtime::client::paginate::Flag::is_set(&page.#flag);
                        let items: ::std::vec::Vec<#item_ty> = #items_expr;
                        let next = if more {
                            items.last().and_then(|i| crate::runtime::client::paginate::field_text(i, #field))
                        } else {
                            ::std::option::Option::None
                        };
                    },
                )
            }
            NextPage::Token(token) => {
                let token = prop_field(token)?;
                (
                    quote!(),
                    quote! {
                        let next = crate::runtime::client::paginate::Token::token(&page.#token);
                        let items: ::std::vec::Vec<#item_ty> = #items_expr;
                    },
                )
            }
            NextPage::Link => {
                let name = &p.param;
                (
                    quote!(let link = crate::runtime::client::paginate::link_next(&received, #name);),
                    quote! {
                        let next = link;
                        let items: ::std::vec::Vec<#item_ty> = #items_expr;
                    },
                )
            }
        };
        let m = format_ident!("{}_stream", o.rust);
        let write = format_ident!("write_{}", o.rust);
        let read = format_ident!("read_{}", o.rust);
        let (input, output) = self.op_types(o);
        let ok_variant = ident(&ok.variant);
        let d = format!(
            " Every item of `{}`, page after page (query parameter `{}` moves on), read as the stream is.",
            o.id, p.param
        );
        // Any other declared answer ends the stream; with none, the match is already whole.
        let other_arm = if o.responses.len() > 1 {
            quote!(other => ::std::result::Result::Err(crate::runtime::client::PageError::Answered(::std::boxed::Box::new(other))),)
        } else {
            quote!()
        };
        Some(quote! {
            #[doc = #d]
            pub fn #m(&self, input: #input) -> impl crate::runtime::client::Stream<
                Item = ::std::result::Result<#item_ty, crate::runtime::client::PageError<#output>>,
            > + '_ {
                crate::runtime::client::pages(input, move |input: #input| async move {
                    let received = self.core.send(#write(&input)?).await?;
                    #before
                    match #read(received)? {
                        #output::#ok_variant(crate::runtime::Json(page), ..) => {
                            #next
                            let next = next.and_then(|c| {
                                let mut input = input.clone();
                                input.#param_field = ::std::option::Option::Some(::std::str::FromStr::from_str(&c).ok()?);
                                ::std::option::Option::Some(input)
                            });
                            ::std::result::Result::Ok(crate::runtime::client::Page { items, next })
                        }
                        #other_arm
                    }
                })
            }
        })
    }

    /// `receive_<callback>` for each callback and webhook the server sends with a JSON body:
    /// its signature checked, its body read into its type.
    fn receivers(&self) -> TokenStream {
        let callbacks = self
            .api
            .operations
            .iter()
            .flat_map(|o| &o.callbacks)
            .chain(&self.api.webhooks);
        let fns: Vec<TokenStream> = callbacks
            .filter_map(|c| {
                let b = c.body.as_ref()?;
                if b.media != Media::Json {
                    return None;
                }
                let ty = self.rust_type(&b.schema, false);
                let f = format_ident!("receive_{}", c.rust);
                let d = format!(
                    " A `{}` request received (`{} {}`): its Standard Webhooks signature checked, then its body read.",
                    c.name,
                    c.method.to_uppercase(),
                    if c.expression.is_empty() { "(webhook)" } else { &c.expression }
                );
                Some(quote! {
                    #[doc = #d]
                    pub fn #f(
                        verifier: &crate::runtime::client::webhook::Verifier,
                        headers: &crate::runtime::client::HeaderMap,
                        body: &[u8],
                    ) -> ::std::result::Result<#ty, crate::runtime::client::webhook::WebhookError> {
                        verifier.receive(headers, body)
                    }
                })
            })
            .collect();
        quote!(#(#fns)*)
    }
}

/// One entry of `OPERATIONS`.
fn operation_entry(o: &Operation, security: TokenStream) -> TokenStream {
    let id = &o.id;
    let method = o.http_method();
    let path = &o.path;
    let key =
        match o.params.iter().find(|p| {
            p.location == Location::Header && p.name.eq_ignore_ascii_case("idempotency-key")
        }) {
            Some(p) => {
                let n = &p.name;
                quote!(::std::option::Option::Some(#n))
            }
            None => quote!(::std::option::Option::None),
        };
    let streams = o
        .responses
        .iter()
        .any(|r| matches!(r.content, Some((Media::Stream(_), _, _))));
    quote! {
        crate::runtime::client::Operation {
            id: #id,
            method: #method,
            path: #path,
            security: <crate::Document as crate::runtime::ApiDocument>::#security,
            idempotency_key: #key,
            streams: #streams,
        }
    }
}

/// The statement that writes one parameter of `input` into `r`.
fn param_writer(p: &Param) -> TokenStream {
    let field = ident(&p.rust);
    let name = &p.name;
    let explode = p.explode;
    let loc = p.location.wire();
    if p.query_string {
        let form = p.form;
        let json = p.content_type.is_some() && !p.form;
        return quote!(r.query_string(&input.#field, #form, #json)?;);
    }
    if p.content_type.is_some() && p.location != Location::Path {
        return quote!(r.json_param(#loc, #name, &input.#field)?;);
    }
    match p.location {
        Location::Path => {
            let style = match p.path_style {
                Some(PathStyle::Label) => quote!(Label),
                Some(PathStyle::Matrix) => quote!(Matrix),
                None => quote!(Simple),
            };
            quote!(r.path(#name, &input.#field, crate::runtime::client::PathStyle::#style, #explode)?;)
        }
        Location::Query => {
            let delimiter = p.delimiter;
            let deep = p.deep_object;
            quote! {
                r.query(#name, &input.#field, crate::runtime::client::ParamStyle {
                    explode: #explode,
                    delimiter: #delimiter,
                    deep_object: #deep,
                })?;
            }
        }
        Location::Header => quote!(r.header(#name, &input.#field, #explode)?;),
        Location::Cookie => quote!(r.cookie(#name, &input.#field, #explode)?;),
    }
}

/// The statements that write `input.body` into `r` in its media type.
fn body_writer(b: &Body) -> TokenStream {
    let ct = &b.content_type;
    let primary = |value: TokenStream| match b.media {
        Media::Form => quote!(r.form(#value)?;),
        Media::Multipart => quote!(r.multipart(#value)?;),
        Media::Text => quote!(r.bytes(#ct, ::std::string::String::clone(#value).into_bytes());),
        Media::Binary => quote!(r.bytes(#ct, ::std::vec::Vec::clone(#value));),
        Media::Json | Media::Stream(_) => quote!(r.json(#ct, #value)?;),
    };
    if !b.other_media.is_empty() {
        let write = primary(quote!(body));
        quote! {
            match &input.body {
                crate::runtime::Representation::Primary(body) => { #write }
                crate::runtime::Representation::Other { media_type, bytes } => {
                    r.bytes(media_type, bytes.clone());
                }
            }
        }
    } else if b.may_be_absent() {
        let write = primary(quote!(body));
        quote!(if let ::std::option::Option::Some(body) = &input.body { #write })
    } else {
        primary(quote!(&input.body))
    }
}
