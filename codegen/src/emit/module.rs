//! The crate as one module file, for generation from a build script: `lib.rs` with every module
//! it declares written inline, every `crate::` path (and every path in an attribute's string,
//! such as `serialize_with = "crate::runtime::…"`, or in a doc link) moved under the module's
//! own path, and the crate root's lint allowances on each item (an included file cannot carry
//! inner attributes).
//! The types are never split into crates of their own here: a build script writes one file.

use std::collections::BTreeMap;

use quote::ToTokens;
use syn::visit_mut::VisitMut;

/// `files` (a crate as [`super::emit`] renders it) as the text of one module reachable at
/// `crate::<module>` (`module` is a path such as `api` or `generated::api`). `features` are the
/// generated crate's features to build in (`serialize-requests`, `deserialize-responses`): the
/// including crate's own features mean nothing to the file, so each `cfg_attr` on one of them
/// becomes its attribute or goes.
pub(crate) fn module_file(
    files: &BTreeMap<String, String>,
    header: &str,
    module: &str,
    features: &[&str],
) -> String {
    let parse = |path: &str| -> syn::File {
        let text = files
            .get(path)
            .unwrap_or_else(|| panic!("the crate has {path}"));
        syn::parse_file(text)
            .unwrap_or_else(|e| panic!("{path} does not parse again ({e}); a generator bug"))
    };
    let mut lib = parse("src/lib.rs");
    let allow: Vec<syn::Attribute> = lib
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("allow"))
        .map(|a| syn::Attribute {
            style: syn::AttrStyle::Outer,
            ..a.clone()
        })
        .collect();
    // A module behind a feature (`#[cfg(feature = "client")] mod client;`): in the file when the
    // feature is built in, without its `cfg`; else left out.
    lib.items.retain_mut(|item| {
        let syn::Item::Mod(m) = item else {
            return true;
        };
        let gate = m.attrs.iter().position(|a| a.path().is_ident("cfg"));
        let Some(at) = gate else {
            return true;
        };
        let text = m.attrs[at].meta.to_token_stream().to_string();
        let on = features
            .iter()
            .any(|f| text.contains(&format!("feature = \"{f}\"")));
        m.attrs.remove(at);
        on
    });
    // Every `mod x;` written inline, and the modules those declare (`src/models/x.rs`) in turn.
    fn inline(items: &mut [syn::Item], dir: &str, parse: &dyn Fn(&str) -> syn::File) {
        for item in items {
            if let syn::Item::Mod(m) = item
                && m.content.is_none()
            {
                let inner = parse(&format!("{dir}/{}.rs", m.ident));
                // the module file's own doc becomes the declaration's
                m.attrs
                    .extend(inner.attrs.into_iter().map(|a| syn::Attribute {
                        style: syn::AttrStyle::Outer,
                        ..a
                    }));
                let mut items = inner.items;
                inline(&mut items, &format!("{dir}/{}", m.ident), parse);
                m.content = Some((syn::token::Brace::default(), items));
            }
        }
    }
    inline(&mut lib.items, "src", &parse);
    let mut file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: lib.items,
    };
    let segments: Vec<syn::Ident> = module
        .split("::")
        .map(|s| syn::Ident::new(s, proc_macro2::Span::call_site()))
        .collect();
    Rebase {
        segments: &segments,
        prefix: format!("\"crate::{module}::"),
        features,
    }
    .visit_file_mut(&mut file);
    for item in &mut file.items {
        if let Some(attrs) = item_attrs(item) {
            attrs.extend(allow.iter().cloned());
        }
    }
    format!("{header}{}", prettyplease::unparse(&file))
}

/// The outer attributes of an item that takes them (every item the generator writes).
fn item_attrs(item: &mut syn::Item) -> Option<&mut Vec<syn::Attribute>> {
    use syn::Item::*;
    Some(match item {
        Const(i) => &mut i.attrs,
        Enum(i) => &mut i.attrs,
        Fn(i) => &mut i.attrs,
        Impl(i) => &mut i.attrs,
        Mod(i) => &mut i.attrs,
        Static(i) => &mut i.attrs,
        Struct(i) => &mut i.attrs,
        Trait(i) => &mut i.attrs,
        Type(i) => &mut i.attrs,
        Use(i) => &mut i.attrs,
        _ => return None,
    })
}

/// Moves `crate::x` to `crate::<segments>::x`, in paths and in attribute strings, and settles
/// the crate features' `cfg_attr`s.
struct Rebase<'a> {
    segments: &'a [syn::Ident],
    /// `"crate::<module>::`, what `"crate::` becomes inside an attribute.
    prefix: String,
    features: &'a [&'a str],
}

impl Rebase<'_> {
    /// Whether `path` started with `crate` and now goes through the module.
    fn rebase(&self, path: &mut syn::Path) -> bool {
        if path.leading_colon.is_some()
            || path.segments.len() < 2
            || path.segments.first().is_none_or(|s| s.ident != "crate")
        {
            return false;
        }
        let rest: Vec<syn::PathSegment> = path.segments.iter().skip(1).cloned().collect();
        let mut segments: syn::punctuated::Punctuated<syn::PathSegment, syn::Token![::]> =
            syn::punctuated::Punctuated::new();
        segments.push(path.segments[0].clone());
        segments.extend(self.segments.iter().cloned().map(syn::PathSegment::from));
        segments.extend(rest);
        path.segments = segments;
        true
    }

    /// `#[cfg_attr(feature = "f", derive(…))]` as `#[derive(…)]` (and a field's
    /// `cfg_attr(…, serde(…))` as `serde(…)`) when `f` is built in, else nothing.
    fn settle_features(&self, attrs: &mut Vec<syn::Attribute>) {
        attrs.retain_mut(|attr| {
            let syn::Meta::List(list) = &attr.meta else {
                return true;
            };
            if !list.path.is_ident("cfg_attr") {
                return true;
            }
            let text = list.tokens.to_string();
            let Some(rest) = text.strip_prefix("feature = \"") else {
                return true;
            };
            let Some((feature, then)) = rest.split_once('"') else {
                return true;
            };
            if !self.features.contains(&feature) {
                return false;
            }
            let then = then.trim_start().trim_start_matches(',');
            *attr = syn::parse_quote!(#[placeholder]);
            attr.meta = syn::parse_str(then).expect("the attribute a cfg_attr applies");
            true
        });
    }
}

impl Rebase<'_> {
    /// Items under `#[cfg(feature = "f")]` (a `deserialize_object!` for the client): kept
    /// without the `cfg` when `f` is built in, else left out.
    fn settle_items(&self, items: &mut Vec<syn::Item>) {
        items.retain_mut(|item| {
            let syn::Item::Macro(m) = item else {
                return true;
            };
            let Some(at) = m.attrs.iter().position(|a| a.path().is_ident("cfg")) else {
                return true;
            };
            let text = m.attrs[at].meta.to_token_stream().to_string();
            let Some(feature) = text
                .split_once("feature = \"")
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(f, _)| f)
            else {
                return true;
            };
            m.attrs.remove(at);
            self.features.contains(&feature)
        });
    }

    /// `<S as crate::x::Trait>::f`: the trait's segments, counted by `QSelf::position`, grow
    /// too. Visits the rest itself (the path's own visit would rebase it again) and says whether
    /// there was a `QSelf` to handle.
    fn qualified(&mut self, qself: &mut Option<syn::QSelf>, path: &mut syn::Path) -> bool {
        let Some(q) = qself else {
            return false;
        };
        if self.rebase(path) {
            q.position += self.segments.len();
        }
        self.visit_qself_mut(q);
        for segment in &mut path.segments {
            self.visit_path_segment_mut(segment);
        }
        true
    }
}

impl VisitMut for Rebase<'_> {
    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        self.rebase(path);
        syn::visit_mut::visit_path_mut(self, path);
    }

    // `<S as crate::x::Trait>::f`: the trait's segments counted by `QSelf::position` grow too.
    fn visit_expr_path_mut(&mut self, e: &mut syn::ExprPath) {
        if !self.qualified(&mut e.qself, &mut e.path) {
            syn::visit_mut::visit_expr_path_mut(self, e);
        }
    }

    fn visit_type_path_mut(&mut self, t: &mut syn::TypePath) {
        if !self.qualified(&mut t.qself, &mut t.path) {
            syn::visit_mut::visit_type_path_mut(self, t);
        }
    }

    fn visit_file_mut(&mut self, f: &mut syn::File) {
        self.settle_items(&mut f.items);
        syn::visit_mut::visit_file_mut(self, f);
    }

    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut m.content {
            self.settle_items(items);
        }
        syn::visit_mut::visit_item_mod_mut(self, m);
    }

    fn visit_field_mut(&mut self, f: &mut syn::Field) {
        self.settle_features(&mut f.attrs);
        syn::visit_mut::visit_field_mut(self, f);
    }

    fn visit_item_struct_mut(&mut self, i: &mut syn::ItemStruct) {
        self.settle_features(&mut i.attrs);
        syn::visit_mut::visit_item_struct_mut(self, i);
    }

    fn visit_item_enum_mut(&mut self, i: &mut syn::ItemEnum) {
        self.settle_features(&mut i.attrs);
        syn::visit_mut::visit_item_enum_mut(self, i);
    }

    fn visit_use_tree_mut(&mut self, tree: &mut syn::UseTree) {
        // `use crate::x::…;` (not a `Path` to syn)
        if let syn::UseTree::Path(p) = tree
            && p.ident == "crate"
        {
            let mut inner = std::mem::replace(
                &mut *p.tree,
                syn::UseTree::Glob(syn::UseGlob {
                    star_token: Default::default(),
                }),
            );
            for ident in self.segments.iter().rev() {
                inner = syn::UseTree::Path(syn::UsePath {
                    ident: ident.clone(),
                    colon2_token: Default::default(),
                    tree: Box::new(inner),
                });
            }
            *p.tree = inner;
            return;
        }
        syn::visit_mut::visit_use_tree_mut(self, tree);
    }

    // A macro's own path is a `Path`; the paths among its tokens (`spec_type!`'s linked types)
    // are tokens to syn.
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        let tail = self.segments.iter().map(|s| quote::quote!(:: #s));
        let root = quote::quote!(crate #(#tail)*);
        m.tokens = super::server::crate_paths(std::mem::take(&mut m.tokens), &root);
        syn::visit_mut::visit_macro_mut(self, m);
    }

    fn visit_attribute_mut(&mut self, attr: &mut syn::Attribute) {
        // intra-doc links: [`crate::runtime::Hooks`]
        if let syn::Meta::NameValue(nv) = &mut attr.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) = &mut nv.value
            && text.value().contains("`crate::")
        {
            let module = &self.prefix["\"crate::".len()..];
            *text = syn::LitStr::new(
                &text
                    .value()
                    .replace("`crate::", &format!("`crate::{module}")),
                text.span(),
            );
        }
        if let syn::Meta::List(list) = &mut attr.meta {
            let text = list.tokens.to_string();
            if text.contains("\"crate::") {
                list.tokens = text
                    .replace("\"crate::", &self.prefix)
                    .parse()
                    .expect("the same tokens with a longer path in a string");
            }
        }
        syn::visit_mut::visit_attribute_mut(self, attr);
    }
}
