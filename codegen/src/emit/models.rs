//! `src/models.rs` and `src/models/<type>.rs`: one Rust type per named schema (string enums,
//! structs, untagged enums, newtypes), each implementing the runtime's `SpecType` with the schema it documents.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Emitter, ModelsHead, Shape, date_time_writer, doc, ident};
use crate::ir::*;
use crate::names;

impl Emitter<'_> {
    /// A piece of a `models.rs`: what `head` says it starts with, then the types at `types`
    /// (indices into [`Api::types`]). The pieces of a file, rendered apart and joined in order,
    /// are the whole file.
    pub(super) fn models(&self, types: &[usize], head: &ModelsHead) -> TokenStream {
        const DOC: &str = " One Rust type per schema of the document (components, then inline schemas that need\n a name). Each documents itself with the schema the document writes.";
        let lines = |text: &str| -> Vec<TokenStream> {
            text.lines().map(|l| quote!(#![doc = #l])).collect()
        };
        let head = match head {
            ModelsHead::Index(files) => {
                let doc = lines(DOC);
                // `self::` names the file's own module, never a crate of the same name (`core`).
                let files = files.iter().map(|f| ident(f));
                quote! {
                    #(#doc)*
                    #(mod #files; pub use self::#files::*;)*
                }
            }
            ModelsHead::Continued => quote!(),
            ModelsHead::Part(k, uses) => {
                let doc = lines(&format!(
                    " Part {k} of the types: the crate's `models` re-exports every part.\n\n{DOC}"
                ));
                let uses = uses.iter().map(|u| ident(u));
                quote! {
                    #(#doc)*
                    #(use ::#uses::models::*;)*
                }
            }
            ModelsHead::Facade(parts) => {
                let doc = lines(&format!(
                    "{DOC}\n\n The types are in crates of their own (compiled side by side); each is re-exported here."
                ));
                let parts = parts.iter().map(|u| ident(u));
                quote! {
                    #(#doc)*
                    #(pub use ::#parts::models::*;)*
                }
            }
        };
        let items: Vec<TokenStream> = types
            .iter()
            .map(|&i| self.model(&self.api.types[i]))
            .collect();
        quote! {
            #head
            #(#items)*
        }
    }

    fn model(&self, t: &TypeDef) -> TokenStream {
        let name = ident(&t.rust);
        let docs = doc(&t.schema.description);
        // Where the document writes the schema, unless the type is its component's namesake.
        let pointer_doc = if t.pointer == format!("#/components/schemas/{}", t.rust) {
            quote!()
        } else {
            let pointer = format!(" Schema: `{}`.", t.pointer);
            if t.schema.description.is_some() {
                quote!(#[doc = ""] #[doc = #pointer])
            } else {
                quote!(#[doc = #pointer])
            }
        };
        let direction = self.directions[t.name.as_str()];
        // serde only in the directions the server moves the type: derives are most of what a
        // large crate costs to check.
        let shape = self.model_shape(t);
        // A struct without a map of additional properties (serde's `flatten`) is read by the
        // runtime's `deserialize_object!`, which writes far less than serde's derive.
        let written_de = matches!(&shape, Shape::Struct { additional, .. } if !matches!(additional, Additional::Schema(_)));
        let de = if written_de {
            quote!()
        } else {
            quote!(::serde::Deserialize)
        };
        let (serde, other_way) = match (direction.read, direction.write) {
            // A string enum implements serde both ways in the runtime (`string_enum!`).
            _ if matches!(shape, Shape::Enum(_)) => (quote!(), quote!()),
            (true, false) => (
                de.clone(),
                quote!(#[cfg_attr(feature = "serialize-requests", derive(::serde::Serialize))]),
            ),
            (false, true) if written_de => (quote!(::serde::Serialize), quote!()),
            (false, true) => (
                quote!(::serde::Serialize),
                quote!(#[cfg_attr(feature = "deserialize-responses", derive(::serde::Deserialize))]),
            ),
            _ if written_de => (quote!(::serde::Serialize), quote!()),
            _ => (quote!(::serde::Serialize, ::serde::Deserialize), quote!()),
        };
        let deserialize = match &shape {
            Shape::Struct {
                props, additional, ..
            } if written_de => {
                let closed = *additional == Additional::Closed;
                // A field named as on the wire is written bare; `r#type` names `"type"`.
                let fields = props.iter().map(|p| {
                    let (id, wire) = (ident(&p.rust), &p.name);
                    if p.rust == *wire {
                        quote!(#id)
                    } else {
                        quote!(#id: #wire)
                    }
                });
                let call =
                    quote!(crate::runtime::deserialize_object!(#name, #closed, { #(#fields),* }););
                if direction.read {
                    call
                } else {
                    quote!(#[cfg(feature = "deserialize-responses")] #call)
                }
            }
            _ => quote!(),
        };
        let body = match shape {
            Shape::Enum(values) => self.string_enum(&name, &values),
            Shape::Struct {
                props,
                required,
                additional,
            } => self.object_struct(
                &name,
                &t.name,
                (&props, &required, &additional),
                t.multipart,
                (&serde, written_de),
            ),
            Shape::OneOf(variants) => self.one_of_enum(&name, &t.name, variants, &serde),
            Shape::Newtype => {
                let inner = self.rust_type(&t.schema, false);
                quote! {
                    #[derive(Debug, Clone, PartialEq, #serde)]
                    #[serde(transparent)]
                    pub struct #name(pub #inner);
                }
            }
        };
        let way = match (direction.read, direction.write) {
            (true, false) => quote!(read),
            (false, true) => quote!(write),
            _ => quote!(both),
        };
        let type_name = if t.inline {
            quote!(_)
        } else {
            let n = &t.name;
            quote!(#n)
        };
        // The validator finds the type's 2020-12 keywords (`Document::KEYWORDS`) and whether it
        // is closed (`closed_schemas`) by this name.
        let typename = (!t.schema.keywords.is_empty()
            || (t.inline && super::crate_root::closed(t)))
        .then_some(t.name.as_str());
        let (json, links) = self.schema_parts(
            &Schema {
                nullable: false,
                ..t.schema.clone()
            },
            typename,
        );
        let multipart = if t.multipart {
            self.multipart_impl(&name, t)
        } else {
            quote!()
        };
        quote! {
            #docs
            #pointer_doc
            #other_way
            #body

            #deserialize

            crate::runtime::spec_type!(#name, #way, #type_name, #json, [#(#links),*]);
            #multipart
        }
    }

    /// What Rust item a named type becomes.
    pub(crate) fn model_shape<'t>(&self, t: &'t TypeDef) -> Shape<'t> {
        match &t.schema.kind {
            Kind::String { enum_values, .. } if !enum_values.is_empty() => {
                let mut values: Vec<&str> = Vec::with_capacity(enum_values.len());
                for v in enum_values {
                    if !values.contains(&v.as_str()) {
                        values.push(v);
                    }
                }
                Shape::Enum(values)
            }
            Kind::Object(o) if !o.all_of.is_empty() => {
                let (props, required) = self.object_parts(&t.schema);
                Shape::Struct {
                    props,
                    required,
                    additional: o.additional.clone(),
                }
            }
            Kind::Object(o) if !o.properties.is_empty() || o.additional == Additional::Closed => {
                Shape::Struct {
                    props: o.properties.clone(),
                    required: o.required.clone(),
                    additional: o.additional.clone(),
                }
            }
            Kind::AllOf(members) if members.len() > 1 => {
                let (props, required) = self.merged_properties(members);
                Shape::Struct {
                    props,
                    required,
                    additional: Additional::Open,
                }
            }
            Kind::OneOf { variants, .. } | Kind::AnyOf(variants) => Shape::OneOf(variants),
            _ => Shape::Newtype,
        }
    }

    /// The fields of a model struct: one per property, then the map of additional properties
    /// when they have a schema.
    pub(crate) fn struct_fields(
        &self,
        container: &str,
        props: &[Property],
        required: &[String],
        additional: &Additional,
        multipart: bool,
    ) -> Vec<(syn::Ident, TokenStream)> {
        let mut fields: Vec<(syn::Ident, TokenStream)> = props
            .iter()
            .map(|p| {
                let is_required = required.contains(&p.name);
                let ty = self.field_type(&p.schema, is_required, multipart, container);
                (ident(&p.rust), ty)
            })
            .collect();
        if let Additional::Schema(v) = additional {
            let t = self.rust_type(v, multipart);
            let taken = props.iter().any(|p| p.rust == "additional_properties");
            let field = if taken {
                format_ident!("additional_properties_")
            } else {
                format_ident!("additional_properties")
            };
            fields.push((
                field,
                quote!(::std::collections::BTreeMap<::std::string::String, #t>),
            ));
        }
        fields
    }

    /// The variants of a string enum, in document order.
    pub(crate) fn enum_variants(values: &[&str]) -> Vec<syn::Ident> {
        let mut taken = std::collections::BTreeSet::new();
        values
            .iter()
            .map(|v| ident(&names::unique(names::camel(v), &mut taken)))
            .collect()
    }

    /// A string enum: the variants, every value and the wire text; serde, `Display` and
    /// `FromStr` come from the runtime's `string_enum!`, written once over `as_str` (serde's
    /// derives for an enum are the heaviest part of a large crate's models).
    fn string_enum(&self, name: &syn::Ident, values: &[&str]) -> TokenStream {
        let variants = Self::enum_variants(values);
        let decl: Vec<TokenStream> = variants
            .iter()
            .zip(values)
            .map(|(id, v)| {
                let d = format!(" `{v}`");
                quote!(#[doc = #d] #id)
            })
            .collect();
        quote! {
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum #name {
                #(#decl),*
            }

            impl #name {
                /// Every value, in document order.
                pub const ALL: &'static [#name] = &[#(#name::#variants),*];

                /// The value as it appears on the wire.
                pub fn as_str(&self) -> &'static str {
                    match self {
                        #(#name::#variants => #values),*
                    }
                }
            }

            crate::runtime::string_enum!(#name);
        }
    }

    /// The type a schema holds by value (not behind a `Vec` or map): a reference, or `allOf` of one.
    pub(super) fn direct_ref<'s>(&self, schema: &'s Schema) -> Option<&'s str> {
        match &schema.kind {
            Kind::Ref(n) => Some(n),
            Kind::AllOf(members) if members.len() == 1 => self.direct_ref(&members[0]),
            _ => None,
        }
    }

    /// Whether type `from` holds type `target` by value, directly or through other types.
    pub(super) fn contains(&self, from: &str, target: &str, seen: &mut Vec<String>) -> bool {
        if from == target {
            return true;
        }
        if seen.iter().any(|s| s == from) {
            return false;
        }
        seen.push(from.to_string());
        let schema = &self.typedef(from).schema;
        let held: Vec<&Schema> = match &schema.kind {
            Kind::Object(o) => o
                .properties
                .iter()
                .map(|p| &p.schema)
                .chain(&o.all_of)
                .collect(),
            Kind::AllOf(m) | Kind::AnyOf(m) | Kind::OneOf { variants: m, .. } => m.iter().collect(),
            _ => vec![schema],
        };
        held.into_iter()
            .filter_map(|s| self.direct_ref(s))
            .any(|n| self.contains(n, target, seen))
    }

    fn object_struct(
        &self,
        name: &syn::Ident,
        container: &str,
        (props, required, additional): (&[Property], &[String], &Additional),
        multipart: bool,
        (serde, written_de): (&TokenStream, bool),
    ) -> TokenStream {
        let typed = self.struct_fields(container, props, required, additional, multipart);
        // Without a serde derive of its own, a request type's `serde` attributes are for the
        // client's `Serialize`, under its feature.
        let attr = |inner: TokenStream| {
            if serde.is_empty() {
                quote!(#[cfg_attr(feature = "serialize-requests", serde(#inner))])
            } else {
                quote!(#[serde(#inner)])
            }
        };
        let fields: Vec<TokenStream> = typed
            .iter()
            .enumerate()
            .map(|(i, (id, ty))| {
                let Some(p) = props.get(i) else {
                    let flatten = attr(quote!(flatten));
                    return quote! {
                        /// Properties beyond the declared ones (`additionalProperties`).
                        #flatten
                        pub #id: #ty
                    };
                };
                let is_required = required.contains(&p.name);
                let docs = doc(&p.schema.description);
                let deprecated = if p.schema.deprecated {
                    quote!(#[deprecated])
                } else {
                    quote!()
                };
                let plain = p.rust.trim_start_matches("r#");
                let rename = if plain != p.name {
                    let n = &p.name;
                    attr(quote!(rename = #n))
                } else {
                    quote!()
                };
                let optional = if !is_required || p.schema.read_only || p.schema.write_only {
                    attr(quote!(
                        default,
                        skip_serializing_if = "::std::option::Option::is_none"
                    ))
                } else {
                    quote!()
                };
                let written = date_time_writer(&p.schema, is_required).map(&attr);
                quote!(#docs #deprecated #rename #optional #written pub #id: #ty)
            })
            .collect();
        let deny = if *additional == Additional::Closed && !written_de {
            quote!(#[serde(deny_unknown_fields)])
        } else {
            quote!()
        };
        quote! {
            #[derive(Debug, Clone, PartialEq, #serde)]
            #deny
            pub struct #name {
                #(#fields),*
            }
        }
    }

    /// Properties of every member of an `allOf`, merged in order.
    fn merged_properties(&self, members: &[Schema]) -> (Vec<Property>, Vec<String>) {
        let mut props: Vec<Property> = Vec::new();
        let mut required: Vec<String> = Vec::new();
        for m in members {
            let (ps, rs) = self.object_parts(m);
            for p in ps {
                if let Some(existing) = props.iter_mut().find(|x| x.name == p.name) {
                    *existing = p;
                } else {
                    props.push(p);
                }
            }
            for r in rs {
                if !required.contains(&r) {
                    required.push(r);
                }
            }
        }
        (props, required)
    }

    pub(crate) fn object_parts(&self, s: &Schema) -> (Vec<Property>, Vec<String>) {
        match &s.kind {
            Kind::Ref(name) => self.object_parts(&self.typedef(name).schema),
            Kind::Object(o) if o.all_of.is_empty() => (o.properties.clone(), o.required.clone()),
            Kind::Object(o) => {
                let mut members = o.all_of.clone();
                members.push(Schema {
                    kind: Kind::Object(Object {
                        all_of: Vec::new(),
                        ..o.clone()
                    }),
                    ..Schema::default()
                });
                self.merged_properties(&members)
            }
            Kind::AllOf(members) => self.merged_properties(members),
            _ => (Vec::new(), Vec::new()),
        }
    }

    fn one_of_enum(
        &self,
        name: &syn::Ident,
        container: &str,
        variants: &[Schema],
        serde: &TokenStream,
    ) -> TokenStream {
        let mut taken = std::collections::BTreeSet::new();
        let mut decl: Vec<(usize, TokenStream)> = variants
            .iter()
            .map(|v| {
                let stem = match &v.kind {
                    Kind::Ref(n) => self.typedef(n).rust.clone(),
                    Kind::String { .. } => "String".into(),
                    Kind::Integer { .. } => "Integer".into(),
                    Kind::Number { .. } => "Number".into(),
                    Kind::Boolean => "Boolean".into(),
                    Kind::Array(_) => "Array".into(),
                    _ => "Value".into(),
                };
                let id = ident(&names::unique(stem, &mut taken));
                let mut ty = self.rust_type(v, false);
                if self
                    .direct_ref(v)
                    .is_some_and(|n| self.contains(n, container, &mut Vec::new()))
                {
                    ty = quote!(::std::boxed::Box<#ty>);
                }
                (self.object_parts(v).0.len(), quote!(#id(#ty)))
            })
            .collect();
        // Serde reads an untagged enum into its first variant that accepts the value, and an
        // object variant accepts the fields of a larger one (unknown fields are ignored): a
        // Square {radius, side} would be read as the Circle {radius} before it, its side
        // lost. Objects with more properties are tried first; everything else keeps its
        // place after them (scalars and objects never accept the same value).
        decl.sort_by_key(|(properties, _)| std::cmp::Reverse(*properties));
        let decl = decl.into_iter().map(|(_, d)| d);
        quote! {
            #[derive(Debug, Clone, PartialEq, #serde)]
            #[serde(untagged)]
            pub enum #name {
                #(#decl),*
            }
        }
    }

    fn multipart_impl(&self, name: &syn::Ident, t: &TypeDef) -> TokenStream {
        let Kind::Object(o) = &t.schema.kind else {
            return quote!();
        };
        let files: Vec<&Property> = o
            .properties
            .iter()
            .filter(|p| matches!(&p.schema.kind, Kind::String { format, .. } if format.as_deref() == Some("binary")))
            .collect();
        let names: Vec<&str> = files.iter().map(|p| p.name.as_str()).collect();
        let attach: Vec<TokenStream> = files
            .iter()
            .map(|p| {
                let id = ident(&p.rust);
                let n = &p.name;
                if o.required.contains(&p.name) {
                    quote!(if let ::std::option::Option::Some(f) = files.remove(#n) { self.#id = f; })
                } else {
                    quote!(self.#id = files.remove(#n);)
                }
            })
            .collect();
        let parts: Vec<TokenStream> = files
            .iter()
            .map(|p| {
                let id = ident(&p.rust);
                let n = &p.name;
                if o.required.contains(&p.name) {
                    quote!(parts.push((#n, &self.#id));)
                } else {
                    quote!(parts.extend(self.#id.as_ref().map(|f| (#n, f)));)
                }
            })
            .collect();
        // A form without file fields has no parts: no `mut` binding to warn about.
        let parts_body = if parts.is_empty() {
            quote!(::std::vec::Vec::new())
        } else {
            quote! {
                let mut parts = ::std::vec::Vec::new();
                #(#parts)*
                parts
            }
        };
        quote! {
            impl crate::runtime::MultipartForm for #name {
                const FILE_FIELDS: &'static [&'static str] = &[#(#names),*];
                fn attach_files(&mut self, files: &mut ::std::collections::BTreeMap<::std::string::String, crate::runtime::FilePart>) {
                    let _ = &files;
                    #(#attach)*
                }
                fn file_parts(&self) -> ::std::vec::Vec<(&'static str, &crate::runtime::FilePart)> {
                    #parts_body
                }
            }
        }
    }
}
