//! `src/<tag>.rs`: per tag, a trait with one method per operation, the operations' input
//! structs and their response enums (with `ErrorVariants` where the errors share a body).

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

use super::{Emitter, doc, doc_str, ident, is_csv, param_default, principal_param, tag_phrase};
use crate::ir::*;

impl Emitter<'_> {
    pub(super) fn tag(&self, tag: &Tag) -> TokenStream {
        let ops: Vec<&Operation> = self
            .api
            .operations
            .iter()
            .filter(|o| o.tag == tag.name)
            .collect();
        let trait_name = format_ident!("{}Api", tag.rust);
        let module_doc = format!(" {}.", tag_phrase(tag));
        let tag_doc = doc(&tag.description);
        let methods: Vec<TokenStream> = ops.iter().map(|o| self.trait_method(o)).collect();
        let inputs: Vec<TokenStream> = ops.iter().map(|o| self.input_struct(o)).collect();
        let responses: Vec<TokenStream> = ops.iter().map(|o| self.response_enum(o)).collect();
        // The error tables' bodies (`error_table`).
        let json = ops
            .iter()
            .any(|o| self.common_error_body(&error_responses(o)).is_some())
            .then(|| {
                quote!(
                    use crate::runtime::Json;
                )
            });
        quote! {
            #![doc = #module_doc]
            #json

            #tag_doc
            ///
            /// Implement this for your server; a missing operation is a compile error naming it.
            pub trait #trait_name: crate::runtime::Hooks {
                #(#methods)*
            }

            #(#inputs)*
            #(#responses)*
        }
    }

    fn op_doc(&self, o: &Operation) -> TokenStream {
        let mut text = String::new();
        if let Some(s) = &o.summary {
            text.push_str(s.trim());
            text.push_str("\n\n");
        }
        let id = if o.explicit_id {
            format!("operationId `{}`", o.id)
        } else {
            "no operationId; named from method and path".to_string()
        };
        text.push_str(&format!(
            "`{} {}` ({id}, `{}`)",
            o.http_method(),
            o.path,
            o.pointer
        ));
        if let Some(d) = &o.description {
            text.push_str("\n\n");
            text.push_str(d.trim());
        }
        doc_str(&text)
    }

    fn trait_method(&self, o: &Operation) -> TokenStream {
        let m = ident(&o.rust);
        let input = format_ident!("{}Input", o.type_stem);
        let output = format_ident!("{}Response", o.type_stem);
        let docs = self.op_doc(o);
        let principal = principal_param(o, quote!(principal));
        quote! {
            #docs
            fn #m(&self, #principal input: #input) -> impl ::std::future::Future<Output = #output> + Send;
        }
    }

    fn input_struct(&self, o: &Operation) -> TokenStream {
        let name = format_ident!("{}Input", o.type_stem);
        let mut fields: Vec<TokenStream> = o
            .params
            .iter()
            .map(|p| {
                let id = ident(&p.rust);
                let ty = self.param_type(p, false);
                let loc = p.location.wire();
                // The wire name and place, then the description: on the same line where it
                // starts as a paragraph, below where it starts as a block (a list, a heading,
                // a quote, a table, code).
                let head = format!("`{}` ({loc})", p.name);
                let docs = match p.description.as_deref().map(str::trim_start) {
                    Some(text) if !text.is_empty() && !starts_block(text) => {
                        doc_str(&format!("{head}: {text}"))
                    }
                    Some(text) if !text.is_empty() => doc_str(&format!("{head}.\n\n{text}")),
                    _ => doc_str(&format!("{head}.")),
                };
                quote!(#docs pub #id: #ty)
            })
            .collect();
        if let Some(b) = &o.body {
            let ty = self.body_field_type(b);
            let docs = doc(&b.description);
            fields.push(quote!(#docs pub body: #ty));
        }
        if o.writes_other_media() {
            fields.push(quote! {
                /// The request's `Accept`: which of a response's `<STATUS>_MEDIA_TYPES` the client
                /// prefers, for the handler that writes one its payload cannot
                /// (`runtime::Representation::Other`).
                pub accept: crate::runtime::Accept
            });
        }
        let d = format!(
            " Input of `{}`: its parameters and body, parsed and validated.",
            o.id
        );
        quote! {
            #[doc = #d]
            #[derive(Debug, Clone, PartialEq)]
            pub struct #name {
                #(#fields),*
            }
        }
    }

    /// A parameter's type in its input struct (`wire`: as extracted, where a non-exploded array
    /// is a `runtime::Csv`).
    pub(crate) fn param_type(&self, p: &Param, wire: bool) -> TokenStream {
        let t = match &p.schema.kind {
            _ if p.query_string => self.rust_type(&p.schema, false),
            _ if wire && p.content_type.is_some() => {
                let t = self.rust_type(&p.schema, false);
                quote!(crate::runtime::JsonParam<#t>)
            }
            Kind::Array(item) if wire && is_csv(p) => {
                let i = self.rust_type(item, false);
                match p.delimiter {
                    ',' => quote!(crate::runtime::Csv<#i>),
                    d => quote!(crate::runtime::Delimited<#i, #d>),
                }
            }
            _ => self.rust_type(&p.schema, false),
        };
        if p.required || param_default(p).is_some() {
            t
        } else {
            quote!(::std::option::Option<#t>)
        }
    }

    /// The type of the handler input's `body` field.
    pub(crate) fn body_field_type(&self, b: &Body) -> TokenStream {
        let t = self.body_inner_type(b);
        if !b.other_media.is_empty() {
            quote!(crate::runtime::Representation<#t>)
        } else if b.may_be_absent() {
            quote!(::std::option::Option<#t>)
        } else {
            t
        }
    }

    pub(crate) fn body_inner_type(&self, b: &Body) -> TokenStream {
        match b.media {
            Media::Binary => quote!(::std::vec::Vec<u8>),
            Media::Text => quote!(::std::string::String),
            _ => self.rust_type(&b.schema, b.media == Media::Multipart),
        }
    }

    fn response_enum(&self, o: &Operation) -> TokenStream {
        let name = format_ident!("{}Response", o.type_stem);
        let variants: Vec<TokenStream> = o
            .responses
            .iter()
            .map(|r| {
                let v = ident(&r.variant);
                // A named component response is described where it is named.
                let docs = if self.named_response_path(r).is_some() {
                    quote!()
                } else if r.description.is_empty() {
                    doc_str(" ")
                } else {
                    doc_str(&r.description)
                };
                let mut fields = self.variant_fields(r);
                if !r.typed() {
                    let first_header = fields.len() - r.headers.len();
                    for (f, h) in fields[first_header..].iter_mut().zip(&r.headers) {
                        let hd = doc(&h.description);
                        *f = quote!(#hd #f);
                    }
                }
                if fields.is_empty() {
                    quote!(#docs #v)
                } else {
                    quote!(#docs #v(#(#fields),*))
                }
            })
            .collect();
        let d = format!(
            " Every response `{}` may give, one variant per declared status.",
            o.id
        );
        let responses_impl = self.responses_impl(o, &name);
        let error_impl = self.error_variants(o, &name);
        let consts = media_type_consts(o, &name);
        quote! {
            #[doc = #d]
            #[cfg_attr(feature = "client", derive(Debug))]
            pub enum #name {
                #(#variants),*
            }
            #responses_impl
            crate::runtime::api_response!(#name);
            #consts
            #error_impl
        }
    }

    /// `runtime::Responses` for a response enum: each variant described (status, content,
    /// description and headers as poem-openapi's derive reads them from the enum) and answered.
    fn responses_impl(&self, o: &Operation, name: &syn::Ident) -> TokenStream {
        let (mut describe, mut arms) = (Vec::new(), Vec::new());
        // The descriptions, in the order described: one array, so that each call fits a line.
        let mut texts: Vec<String> = Vec::new();
        let mut text = |t: String| {
            texts.push(t);
            proc_macro2::Literal::usize_unsuffixed(texts.len() - 1)
        };
        let mut any_header = false;
        for r in &o.responses {
            let v = ident(&r.variant);
            let fields = self.response_fields(r);
            let carries_status = matches!(r.status, Status::Default | Status::Range(_));
            let body_at = usize::from(carries_status);
            let has_body = fields.len() - r.headers.len() > body_at;
            let content = if has_body {
                fields[body_at].clone()
            } else {
                quote!(crate::runtime::NoBody)
            };
            let description = text(super::server::poem_doc(&r.description));
            let call = match r.status {
                Status::Code(c) => {
                    let c = proc_macro2::Literal::u16_unsuffixed(c);
                    quote!(d.code::<#content>(#c, D[#description]))
                }
                Status::Range(_) => {
                    let range = r.status.key();
                    quote!(d.range::<#content>(#range, D[#description]))
                }
                Status::Default => quote!(d.default::<#content>(D[#description])),
            };
            let headers: Vec<TokenStream> = r
                .headers
                .iter()
                .map(|h| {
                    let (n, ty) = (h.name.to_uppercase(), header_type(h.ty));
                    let hd = text(super::server::poem_doc(
                        h.description.as_deref().unwrap_or(""),
                    ));
                    if h.required {
                        quote!(.header::<#ty>(#n, D[#hd]))
                    } else {
                        quote!(.optional::<#ty>(#n, D[#hd]))
                    }
                })
                .collect();
            describe.push(quote!(#call #(#headers)*;));

            let status = match r.status {
                Status::Code(c) => proc_macro2::Literal::u16_unsuffixed(c).into_token_stream(),
                _ => quote!(status),
            };
            if r.typed() {
                let pattern = if carries_status {
                    quote!(Self::#v(status, r))
                } else {
                    quote!(Self::#v(r))
                };
                arms.push(quote!(#pattern => r.reply(#status)));
                continue;
            }
            let mut binds = Vec::new();
            if carries_status {
                binds.push(quote!(status));
            }
            if has_body {
                binds.push(quote!(b));
            }
            let values: Vec<TokenStream> = r
                .headers
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let id = format_ident!("h{i}");
                    binds.push(quote!(#id));
                    let n = h.name.to_uppercase();
                    quote!((#n, header(&#id)))
                })
                .collect();
            any_header |= !values.is_empty();
            let pattern = if binds.is_empty() {
                quote!(Self::#v)
            } else {
                quote!(Self::#v(#(#binds),*))
            };
            let body = if has_body {
                quote!(b)
            } else {
                quote!(crate::runtime::NoBody)
            };
            arms.push(quote!(#pattern => reply(#body, #status, &[#(#values),*])));
        }
        let any_reply = o.responses.iter().any(|r| !r.typed());
        let uses = match (any_reply, any_header) {
            (false, _) => quote!(),
            (true, true) => quote!(
                use crate::runtime::responses::{header, reply};
            ),
            (true, false) => quote!(
                use crate::runtime::responses::reply;
            ),
        };
        // An operation without responses describes nothing, nor does one of a document served
        // as written (`Api::serves_source`): the trait's default.
        let describe = if describe.is_empty() || self.api.serves_source() {
            quote!()
        } else {
            let n = proc_macro2::Literal::usize_unsuffixed(texts.len());
            quote! {
                fn describe(d: &mut crate::runtime::ResponseDescriber<'_>) {
                    const D: [&str; #n] = [#(#texts),*];
                    #(#describe)*
                }
            }
        };
        quote! {
            impl crate::runtime::Responses for #name {
                #describe

                fn reply(self) -> ::poem::Response {
                    #uses
                    match self {
                        #(#arms),*
                    }
                }
            }
        }
    }

    /// The field types of a response's variant, in order: the status (a range or `default`),
    /// then the response as a type of the `responses` module ([`Response::typed`]) or its
    /// parts ([`response_fields`](Self::response_fields)).
    pub(crate) fn variant_fields(&self, r: &Response) -> Vec<TokenStream> {
        let Some(path) = self.named_response_path(r) else {
            return self.response_fields(r);
        };
        let mut fields = Vec::new();
        if matches!(r.status, Status::Default | Status::Range(_)) {
            fields.push(quote!(::poem::http::StatusCode));
        }
        fields.push(path);
        fields
    }

    /// `src/responses.rs`: each typed component response ([`Response::typed`]) as a struct of
    /// its body and its headers, named, with the `reply` its variants answer through.
    pub(super) fn responses_file(&self) -> TokenStream {
        let items = self.typed_responses.iter().map(|(component, rust, r)| {
            let name = ident(rust);
            let docs = response_docs(component, r);
            let body = self.typed_body(r);
            let body_field = body.as_ref().map(|t| quote!(#[doc = " The body."] pub body: #t,));
            let names = typed_header_fields(r);
            let headers = r.headers.iter().zip(&names).map(|(h, f)| {
                let hd = doc(&h.description);
                let t = header_type(h.ty);
                let t = if h.required {
                    t
                } else {
                    quote!(::std::option::Option<#t>)
                };
                quote!(#hd pub #f: #t,)
            });
            let sent = r.headers.iter().zip(&names).map(|(h, f)| {
                let n = h.name.to_uppercase();
                quote!((#n, header(&self.#f)))
            });
            let reply_body = if body.is_some() {
                quote!(self.body)
            } else {
                quote!(crate::runtime::NoBody)
            };
            // Every header optional: the response from its body alone, none of its headers
            // sent (what a server's error mapping builds).
            let from = match &body {
                Some(t) if r.headers.iter().all(|h| !h.required) => {
                    let nones = names.iter().map(|f| quote!(#f: ::std::option::Option::None));
                    quote! {
                        impl ::std::convert::From<#t> for #name {
                            fn from(body: #t) -> Self {
                                Self { body, #(#nones),* }
                            }
                        }
                    }
                }
                _ => quote!(),
            };
            quote! {
                #docs
                #[cfg_attr(feature = "client", derive(Debug))]
                pub struct #name {
                    #body_field
                    #(#headers)*
                }
                #from
                impl #name {
                    /// The response, answered with `status` and the headers that have a value.
                    pub fn reply(self, status: impl crate::runtime::responses::IntoStatus) -> ::poem::Response {
                        use crate::runtime::responses::{header, reply};
                        reply(#reply_body, status, &[#(#sent),*])
                    }
                }
            }
        });
        let aliases = self
            .aliased_responses
            .iter()
            .map(|(component, rust, part)| {
                let name = ident(rust);
                let r = self
                    .api
                    .operations
                    .iter()
                    .flat_map(|o| &o.responses)
                    .find(|r| r.component.as_deref() == Some(*component))
                    .expect("an aliased component is referred to");
                let docs = response_docs(component, r);
                let part: TokenStream = part.parse().expect("the text of a type");
                quote! {
                    #docs
                    pub type #name = #part;
                }
            });
        quote! {
            //! The component responses, each named once with its description, and held by the
            //! response enum of every operation that refers to it: a response with headers as
            //! a type whose headers are named fields, one without as an alias of its body.
            #(#aliases)*
            #(#items)*
        }
    }

    /// The body type of a typed response's struct, if it has content.
    fn typed_body(&self, r: &Response) -> Option<TokenStream> {
        r.content.as_ref()?;
        let fields = self.response_fields(r);
        let at = usize::from(matches!(r.status, Status::Default | Status::Range(_)));
        fields.get(at).cloned()
    }

    /// The field types of a response's parts, in order: the status (a range or `default`),
    /// the body, then each header.
    pub(crate) fn response_fields(&self, r: &Response) -> Vec<TokenStream> {
        let mut fields = Vec::new();
        if matches!(r.status, Status::Default | Status::Range(_)) {
            fields.push(quote!(::poem::http::StatusCode));
        }
        if r.status == Status::Default && r.content.is_none() {
            // poem-openapi needs a body beside the status of a `default` response.
            fields.push(quote!(crate::runtime::NoBody));
        }
        if let Some((media, _, schema)) = &r.content {
            let payload = match media {
                Media::Binary | Media::Form | Media::Multipart => {
                    quote!(::poem_openapi::payload::Binary<::std::vec::Vec<u8>>)
                }
                Media::Text => {
                    quote!(::poem_openapi::payload::PlainText<::std::string::String>)
                }
                Media::Stream(format) => {
                    let t = self.rust_type(schema, false);
                    let format = match format {
                        StreamFormat::Sse => quote!(SSE),
                        StreamFormat::JsonLines => quote!(JSON_LINES),
                        StreamFormat::JsonSeq => quote!(JSON_SEQ),
                    };
                    quote!(crate::runtime::ItemStream<#t, { crate::runtime::stream::#format }>)
                }
                _ => {
                    let t = self.rust_type(schema, false);
                    quote!(crate::runtime::Json<#t>)
                }
            };
            fields.push(if r.other_media.is_empty() {
                payload
            } else {
                quote!(crate::runtime::Representation<#payload>)
            });
        }
        for h in &r.headers {
            let t = header_type(h.ty);
            fields.push(if h.required {
                t
            } else {
                quote!(::std::option::Option<#t>)
            });
        }
        fields
    }

    /// `ErrorVariants` for operations whose error responses (4xx, 5xx, `default`) all carry the
    /// same JSON body type and no required headers: the table of how the runtime answers an
    /// error with the operation's own variants.
    fn error_variants(&self, o: &Operation, name: &syn::Ident) -> TokenStream {
        let errors = error_responses(o);
        let Some(body_ty) = self.common_error_body(&errors) else {
            return quote!();
        };
        let entries = error_table(&errors);
        quote! {
            impl crate::runtime::ErrorVariants<#body_ty> for #name {
                const ERRORS: &'static [crate::runtime::ErrorVariant<Self, #body_ty>] = &[#(#entries),*];
            }
        }
    }

    /// The body type every error response shares, if they do: each is JSON of the same Rust
    /// type without required headers, and none is a range (a range's variant needs a status
    /// the error cannot choose, so there is no generic mapping). `None` without errors.
    fn common_error_body(&self, errors: &[&Response]) -> Option<TokenStream> {
        if errors.iter().any(|r| matches!(r.status, Status::Range(_))) {
            return None;
        }
        let mut body: Option<String> = None;
        for r in errors {
            let Some((Media::Json, _, schema)) = &r.content else {
                return None;
            };
            if r.headers.iter().any(|h| h.required) {
                return None;
            }
            let t = self.rust_type(schema, false).to_string();
            if body.get_or_insert_with(|| t.clone()) != &t {
                return None;
            }
        }
        let (_, _, schema) = errors.first()?.content.as_ref()?;
        Some(self.rust_type(schema, false))
    }
}

/// Whether Markdown text starts with a block other than a paragraph.
fn starts_block(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    let numbered = first
        .split_once(['.', ')'])
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    numbered
        || ["- ", "* ", "+ ", "#", ">", "|", "```", "~~~"]
            .iter()
            .any(|marker| first.starts_with(marker))
}

/// The Rust type of a response header's value.
pub(super) fn header_type(ty: HeaderType) -> TokenStream {
    match ty {
        HeaderType::Text => quote!(::std::string::String),
        HeaderType::I32 => quote!(i32),
        HeaderType::I64 => quote!(i64),
        HeaderType::F64 => quote!(f64),
        HeaderType::Bool => quote!(bool),
    }
}

/// An operation's error responses: 4xx and 5xx codes and ranges, and `default`.
fn error_responses(o: &Operation) -> Vec<&Response> {
    o.responses
        .iter()
        .filter(|r| {
            matches!(r.status, Status::Default | Status::Range(4..))
                || matches!(r.status, Status::Code(c) if c >= 400)
        })
        .collect()
}

/// The names of a typed response's header fields: each header's own, but never `body`.
pub(crate) fn typed_header_fields(r: &Response) -> Vec<syn::Ident> {
    r.headers
        .iter()
        .map(|h| {
            if h.rust == "body" {
                format_ident!("body_header")
            } else {
                ident(&h.rust)
            }
        })
        .collect()
}

/// `ErrorVariants::ERRORS`' entries, in document order, each a short line:
/// `(Some(404), |_, b| Self::NotFound(Json(b)))`. The module imports `Json` ([`Emitter::tag`]);
/// `Some` and `None` are the prelude's, which a tag's module declares nothing to shadow (its
/// items are named `…Api`, `…Input` and `…Response`).
fn error_table(errors: &[&Response]) -> Vec<TokenStream> {
    errors
        .iter()
        .filter_map(|r| {
            let v = ident(&r.variant);
            let mut body = if r.other_media.is_empty() {
                quote!(Json(b))
            } else {
                quote!(crate::runtime::Representation::Primary(Json(b)))
            };
            let nones: Vec<TokenStream> = if r.typed() {
                body = quote!(#body.into());
                Vec::new()
            } else {
                r.headers.iter().map(|_| quote!(, None)).collect()
            };
            match r.status {
                Status::Code(c) => {
                    let c = proc_macro2::Literal::u16_unsuffixed(c);
                    Some(quote!((Some(#c), |_, b| Self::#v(#body #(#nones)*))))
                }
                // `common_error_body` leaves out operations with ranges.
                Status::Range(_) => None,
                Status::Default => Some(quote!((None, |s, b| Self::#v(s, #body #(#nones)*)))),
            }
        })
        .collect()
}

/// `<STATUS>_MEDIA_TYPES` for each response that lists media types its payload cannot write:
/// every type it lists, those its payload writes first (so that `Accept: */*` picks one of
/// those), then the others in document order.
fn media_type_consts(o: &Operation, name: &syn::Ident) -> TokenStream {
    let consts: Vec<TokenStream> = o
        .responses
        .iter()
        .filter(|r| !r.other_media.is_empty())
        .filter_map(|r| {
            let (_, primary, _) = r.content.as_ref()?;
            let own = if r.written_as.is_empty() {
                std::slice::from_ref(primary)
            } else {
                &r.written_as[..]
            };
            let types = own.iter().chain(&r.other_media);
            let c = format_ident!(
                "{}_MEDIA_TYPES",
                crate::names::snake(&r.variant).to_uppercase()
            );
            let d = format!(
                " The media types the `{}` response is listed in: its payload's first.",
                r.status.key()
            );
            Some(quote!(#[doc = #d] pub const #c: &'static [&'static str] = &[#(#types),*];))
        })
        .collect();
    if consts.is_empty() {
        return quote!();
    }
    quote! {
        impl #name {
            #(#consts)*
        }
    }
}

/// The doc of a component response named in the `responses` module: its description, then
/// where the document writes it.
fn response_docs(component: &str, r: &Response) -> TokenStream {
    let docs = doc_str(if r.description.is_empty() {
        " "
    } else {
        &r.description
    });
    let pointer = format!(
        " Response: `#/components/responses/{}`.",
        crate::names::escape(component)
    );
    quote! {
        #docs
        #[doc = ""]
        #[doc = #pointer]
    }
}

#[cfg(test)]
mod tests {
    use super::starts_block;

    #[test]
    fn a_list_heading_quote_table_or_fence_starts_a_block_and_prose_does_not() {
        for block in [
            "- a\n- b",
            "* a",
            "1. first",
            "2) second",
            "# Title",
            "> quoted",
            "| a |",
            "```\nx\n```",
        ] {
            assert!(starts_block(block), "{block}");
        }
        for prose in [
            "Id of the bank account.",
            "10 items at most.",
            "-1 means none",
            "*emphasis* first",
            "",
        ] {
            assert!(!starts_block(prose), "{prose}");
        }
    }
}
