//! `src/callbacks.rs` of a generated crate: the `Callbacks` trait (one method per callback
//! request of the document) and the `Webhooks` trait (one per top-level webhook request), which
//! the server implements to build each payload, with `requests` and `webhook_requests`, which
//! turn an event into the requests to send.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Emitter, doc_str};
use crate::ir::*;

/// The two sets of requests a server sends: an operation's `callbacks`, to a URL its caller
/// gave in the request, and top-level `webhooks` (OpenAPI 3.1+), to URLs registered elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outgoing {
    Callbacks,
    Webhooks,
}

impl Outgoing {
    /// What the set's requests are called (plural).
    fn noun(self) -> &'static str {
        match self {
            Outgoing::Callbacks => "callbacks",
            Outgoing::Webhooks => "webhooks",
        }
    }

    /// The function of `callbacks.rs` that turns an event into the set's requests.
    fn requests_fn(self) -> proc_macro2::Ident {
        match self {
            Outgoing::Callbacks => format_ident!("requests"),
            Outgoing::Webhooks => format_ident!("webhook_requests"),
        }
    }

    /// The set's trait.
    pub(super) fn trait_name(self) -> proc_macro2::Ident {
        match self {
            Outgoing::Callbacks => format_ident!("Callbacks"),
            Outgoing::Webhooks => format_ident!("Webhooks"),
        }
    }
}

impl Emitter<'_> {
    /// Every callback request, with the operation that declares it.
    pub(super) fn all_callbacks(&self) -> impl Iterator<Item = (&Operation, &Callback)> {
        self.api
            .operations
            .iter()
            .flat_map(|o| o.callbacks.iter().map(move |c| (o, c)))
    }

    /// The requests of one set, each with the `operationId` that declares it (empty for a
    /// webhook, which no operation declares).
    pub(super) fn outgoing(&self, set: Outgoing) -> Vec<(&str, &Callback)> {
        match set {
            Outgoing::Callbacks => self
                .all_callbacks()
                .map(|(o, c)| (o.id.as_str(), c))
                .collect(),
            Outgoing::Webhooks => self.api.webhooks.iter().map(|c| ("", c)).collect(),
        }
    }

    /// The sets the document has requests in.
    pub(super) fn outgoing_sets(&self) -> Vec<Outgoing> {
        [Outgoing::Callbacks, Outgoing::Webhooks]
            .into_iter()
            .filter(|set| !self.outgoing(*set).is_empty())
            .collect()
    }

    /// `callbacks.rs`: the module's doc, then each set's trait and the function that turns an
    /// event into its requests (`requests` for callbacks, `webhook_requests` for webhooks).
    pub(super) fn callbacks_file(&self) -> TokenStream {
        let sets = self.outgoing_sets();
        let head = match sets.as_slice() {
            [Outgoing::Webhooks] => quote! {
                //! The requests the server sends to the URLs its callers register (top-level
                //! `webhooks` in the document).
                //!
                //! The server implements [`Webhooks`]: one method per webhook request, which builds
                //! its payload for an event (or declines). A new webhook is a missing method, and a
                //! changed payload schema breaks the code that builds it.
            },
            [_, Outgoing::Webhooks] => quote! {
                //! The requests the server sends to its callers (`callbacks` in the document).
                //!
                //! The server implements [`Callbacks`]: one method per callback request, which builds
                //! its payload for an event (or declines). A new callback is a missing method, and a
                //! changed payload schema breaks the code that builds it.
                //!
                //! [`Webhooks`] does the same for the top-level `webhooks`, sent to the URLs callers
                //! register; [`webhook_requests`] turns an event into them.
            },
            _ => quote! {
                //! The requests the server sends to its callers (`callbacks` in the document).
                //!
                //! The server implements [`Callbacks`]: one method per callback request, which builds
                //! its payload for an event (or declines). A new callback is a missing method, and a
                //! changed payload schema breaks the code that builds it.
            },
        };
        let sets = sets.into_iter().map(|set| self.outgoing_set(set));
        quote! {
            #head
            #(#sets)*
        }
    }

    /// One set's trait and its requests function.
    fn outgoing_set(&self, set: Outgoing) -> TokenStream {
        let items = self.outgoing(set);
        let methods = self.outgoing_methods(&items);
        let pushes = self.outgoing_pushes(&items);
        let tr = set.trait_name();
        let requests = set.requests_fn();
        let noun = set.noun();
        let trait_doc = format!(
            " One method per {} request the document declares.",
            &noun[..noun.len() - 1]
        );
        let event_doc =
            format!(" What the server has in hand when {noun} may be due (an event, a change).");
        let requests_doc = format!(
            " The {} requests `event` calls for, in document order, bodies serialised.",
            &noun[..noun.len() - 1]
        );
        quote! {
            #[doc = #trait_doc]
            pub trait #tr: Send + Sync + 'static {
                #[doc = #event_doc]
                type Event;
                #(#methods)*
            }

            #[doc = #requests_doc]
            pub fn #requests<C: #tr>(
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

    /// The trait's methods, one per request.
    fn outgoing_methods(&self, items: &[(&str, &Callback)]) -> Vec<TokenStream> {
        items
            .iter()
            .map(|(op, c)| {
                let m = format_ident!("{}", c.rust);
                let docs = callback_doc(op, c);
                let out = self.callback_output(c);
                quote! {
                    #docs
                    fn #m(&self, event: &Self::Event) -> #out;
                }
            })
            .collect()
    }

    /// For each request, the code in `requests` that asks for its payload and, if the event
    /// calls for it, pushes the request.
    fn outgoing_pushes(&self, items: &[(&str, &Callback)]) -> Vec<TokenStream> {
        items
            .iter()
            .map(|(op, c)| {
                let m = format_ident!("{}", c.rust);
                let (name, method, expression) = (&c.name, c.method.to_uppercase(), &c.expression);
                let head = quote!(operation: #op, callback: #name, method: #method, url_expression: #expression);
                match &c.body {
                    Some(b) => {
                        let ct = &b.content_type;
                        let write = if b.media == Media::Form {
                            quote!(crate::runtime::form_bytes(&body)?)
                        } else {
                            quote!(::serde_json::to_vec(&body)?)
                        };
                        quote! {
                            if let ::std::option::Option::Some(body) = callbacks.#m(event) {
                                out.push(crate::runtime::CallbackRequest {
                                    #head,
                                    content_type: ::std::option::Option::Some(#ct),
                                    body: #write,
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

    /// `impl Callbacks for DocumentOnly` and `impl Webhooks for DocumentOnly` (uninhabited),
    /// for the sets the document has.
    pub(super) fn document_only_callbacks(&self) -> TokenStream {
        let impls = self.outgoing_sets().into_iter().map(|set| {
            let methods: Vec<TokenStream> = self
                .outgoing(set)
                .into_iter()
                .map(|(_, c)| {
                    let m = format_ident!("{}", c.rust);
                    let out = self.callback_output(c);
                    quote!(fn #m(&self, _event: &Self::Event) -> #out { match *self {} })
                })
                .collect();
            let tr = set.trait_name();
            quote! {
                impl crate::callbacks::#tr for DocumentOnly {
                    type Event = ::std::convert::Infallible;
                    #(#methods)*
                }
            }
        });
        quote!(#(#impls)*)
    }
}

/// The doc of a request's method: summary, where the request goes, description, and what the
/// receiver may answer.
fn callback_doc(operation: &str, c: &Callback) -> TokenStream {
    let mut text = String::new();
    if let Some(s) = &c.summary {
        text.push_str(s.trim());
        text.push_str("\n\n");
    }
    if operation.is_empty() {
        text.push_str(&format!(
            "Webhook `{}`: `{}` to a registered URL (`{}`). `None`/`false` when `event` does not call for it.",
            c.name,
            c.method.to_uppercase(),
            c.pointer
        ));
    } else {
        text.push_str(&format!(
            "Callback `{}` of `{}`: `{} {}` (`{}`). `None`/`false` when `event` does not call for it.",
            c.name,
            operation,
            c.method.to_uppercase(),
            c.expression,
            c.pointer
        ));
    }
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
