//! `src/callbacks.rs` of a generated crate: the `Callbacks` trait (one method per callback
//! request of the document, which the server implements to build each payload) and
//! `requests`, which turns an event into the requests to send.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Emitter, doc_str};
use crate::ir::*;

impl Emitter<'_> {
    /// Every callback request, with the operation that declares it.
    pub(super) fn all_callbacks(&self) -> impl Iterator<Item = (&Operation, &Callback)> {
        self.api
            .operations
            .iter()
            .flat_map(|o| o.callbacks.iter().map(move |c| (o, c)))
    }

    /// `callbacks.rs`: the `Callbacks` trait and `requests`.
    pub(super) fn callbacks(&self) -> TokenStream {
        let methods = self.callback_methods();
        let pushes = self.callback_pushes();
        quote! {
            //! The requests the server sends to its callers (`callbacks` in the document).
            //!
            //! The server implements [`Callbacks`]: one method per callback request, which builds
            //! its payload for an event (or declines). A new callback is a missing method, and a
            //! changed payload schema breaks the code that builds it.

            /// One method per callback request the document declares.
            pub trait Callbacks: Send + Sync + 'static {
                /// What the server has in hand when callbacks may be due (an event, a change).
                type Event;
                #(#methods)*
            }

            /// The callback requests `event` calls for, in document order, bodies serialised.
            pub fn requests<C: Callbacks>(
                callbacks: &C,
                event: &C::Event,
            ) -> ::std::result::Result<::std::vec::Vec<crate::runtime::CallbackRequest>, ::serde_json::Error> {
                let mut out = ::std::vec::Vec::new();
                #(#pushes)*
                ::std::result::Result::Ok(out)
            }
        }
    }

    /// What a callback's method returns: its body, or (without one) whether to send it.
    pub(super) fn callback_output(&self, c: &Callback) -> TokenStream {
        match &c.body {
            Some(b) => {
                let t = self.rust_type(&b.schema, false);
                quote!(::std::option::Option<#t>)
            }
            None => quote!(bool),
        }
    }

    /// The `Callbacks` trait's methods, one per callback request.
    fn callback_methods(&self) -> Vec<TokenStream> {
        self.all_callbacks()
            .map(|(o, c)| {
                let m = format_ident!("{}", c.rust);
                let docs = callback_doc(o, c);
                let out = self.callback_output(c);
                quote! {
                    #docs
                    fn #m(&self, event: &Self::Event) -> #out;
                }
            })
            .collect()
    }

    /// For each callback request, the code in `requests` that asks for its payload and, if
    /// the event calls for it, pushes the request.
    fn callback_pushes(&self) -> Vec<TokenStream> {
        self.all_callbacks()
            .map(|(o, c)| {
                let m = format_ident!("{}", c.rust);
                let (op, name, method, expression) =
                    (&o.id, &c.name, c.method.to_uppercase(), &c.expression);
                let head = quote!(operation: #op, callback: #name, method: #method, url_expression: #expression);
                match &c.body {
                    Some(b) => {
                        let ct = &b.content_type;
                        quote! {
                            if let ::std::option::Option::Some(body) = callbacks.#m(event) {
                                out.push(crate::runtime::CallbackRequest {
                                    #head,
                                    content_type: ::std::option::Option::Some(#ct),
                                    body: ::serde_json::to_vec(&body)?,
                                });
                            }
                        }
                    }
                    None => quote! {
                        if callbacks.#m(event) {
                            out.push(crate::runtime::CallbackRequest {
                                #head,
                                content_type: ::std::option::Option::None,
                                body: ::std::vec::Vec::new(),
                            });
                        }
                    },
                }
            })
            .collect()
    }

    /// `impl Callbacks for DocumentOnly` (uninhabited), when the document has callbacks.
    pub(super) fn document_only_callbacks(&self) -> TokenStream {
        if self.all_callbacks().next().is_none() {
            return quote!();
        }
        let methods: Vec<TokenStream> = self
            .all_callbacks()
            .map(|(_, c)| {
                let m = format_ident!("{}", c.rust);
                let out = self.callback_output(c);
                quote!(fn #m(&self, _event: &Self::Event) -> #out { match *self {} })
            })
            .collect();
        quote! {
            impl crate::callbacks::Callbacks for DocumentOnly {
                type Event = ::std::convert::Infallible;
                #(#methods)*
            }
        }
    }
}

/// The doc of a callback's method: summary, where the request goes, description, and what the
/// receiver may answer.
fn callback_doc(o: &Operation, c: &Callback) -> TokenStream {
    let mut text = String::new();
    if let Some(s) = &c.summary {
        text.push_str(s.trim());
        text.push_str("\n\n");
    }
    text.push_str(&format!(
        "Callback `{}` of `{}`: `{} {}` (`{}`). `None`/`false` when `event` does not call for it.",
        c.name,
        o.id,
        c.method.to_uppercase(),
        c.expression,
        c.pointer
    ));
    if let Some(d) = &c.description {
        text.push_str("\n\n");
        text.push_str(d.trim());
    }
    if !c.responses.is_empty() {
        text.push_str("\n\nThe receiver answers:");
        for (status, description) in &c.responses {
            let s = status.key();
            text.push_str(&format!("\n- {s}: {}", description.trim()));
        }
    }
    doc_str(&text)
}
