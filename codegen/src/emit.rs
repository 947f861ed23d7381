//! IR → Rust source. Renders only; every decision about meaning was made by the parser.
//!
//! Output layout of a generated crate:
//! - `Cargo.toml`
//! - `src/lib.rs`: module map, document constants, the table of what poem-openapi cannot say
//! - `src/models.rs` and `src/models/<type>.rs`: one type per schema, each with the schema it
//!   documents, in a file of its own (an edit of one schema moves no line of another, which
//!   incremental compilation sees); `models.rs` declares and re-exports them
//! - `src/<tag>.rs`: per tag, a trait with one method per operation, its input structs and its
//!   response enums
//! - `src/responses.rs`: each component response with headers, as a type its operations' enums
//!   hold (the headers named fields), when the document has any
//! - `src/server.rs`: poem-openapi routing glue and the served documents
//! - `parts/types-<k>/`: when the document has more schemas than `--types-per-crate`, the
//!   types are crates of their own (see `split`) and `src/models.rs` re-exports them
//!
//! The runtime support is the `openapi-poem-runtime` crate, a dependency of every generated
//! crate, re-exported as `runtime`.
//!
//! This module holds what every file uses (Rust types of schemas, doc attributes); each file
//! has a submodule:
//!
//! - `crate_root`: `src/lib.rs`, with `DOCUMENT_PATCH`.
//! - `meta`: the `MetaSchema` expressions that serve each schema as the document writes it.
//! - `models`: `src/models.rs` and its files.
//! - `operations`: `src/<tag>.rs`, and `src/responses.rs`.
//! - `server`: `src/server.rs`.
//! - `callbacks`: `src/callbacks.rs`.
//! - `split`: which crate of types each type goes to.
//! - [`stub`]: a stub server crate implementing every trait (for tests of a document's edit).

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::ir::*;

mod callbacks;
mod client;
mod crate_root;
mod meta;
mod models;
mod module;
mod operations;
mod server;
mod split;
pub mod stub;

/// Dependency versions of every generated crate (explicit, so any output builds on its own).
const CARGO_DEPENDENCIES: &str = r#"chrono = { version = "0.4", default-features = false, features = ["std", "serde"] }
poem = { version = "3.1.12", features = ["multipart"] }
poem-openapi = { version = "5.1.16", features = ["swagger-ui", "chrono"{COOKIE}] }
serde = { version = "1", features = ["derive"] }
serde_json = { version = "1", features = ["preserve_order"] }
serde_yaml = "0.9"
tokio = { version = "1", features = ["io-util"] }
"#;

/// The generated crate's features. A type derives serde only in the directions the server
/// moves it (request types deserialise, response types serialise); these add the others.
const FEATURES: &str = r#"[features]
# Request types also serialise (a server that fingerprints or logs what it read, a client).
serialize-requests = []
# Types the server writes (responses, callbacks, schemas no operation reaches) also deserialise
# (tests reading responses back, a client).
deserialize-responses = []
# The typed client (`client::Client`), over reqwest: the same inputs and response enums.
client = ["serialize-requests", "deserialize-responses", "openapi-poem-runtime/client"]
"#;

/// The generated crate's dependencies: poem-openapi's `cookie` feature only where a parameter
/// travels in a cookie.
pub(crate) fn cargo_dependencies(api: &Api) -> String {
    let cookie = api
        .operations
        .iter()
        .any(|o| o.params.iter().any(|p| p.location == Location::Cookie));
    CARGO_DEPENDENCIES.replace("{COOKIE}", if cookie { ", \"cookie\"" } else { "" })
}

/// How a generated crate is named and where it finds what it depends on.
pub struct Options<'a> {
    pub crate_name: &'a str,
    /// How the header names the source: the document path as given to the generator.
    pub source: &'a str,
    /// The flags of the command that made the crate beyond `--spec` (`--out generated/api`,
    /// ...), as the header repeats them; empty for none.
    pub flags: &'a str,
    /// Where the generated crate finds `openapi-poem-runtime` besides its version: a path
    /// relative to the crate directory (or absolute), written into its `Cargo.toml`. `None`:
    /// by version only, from the registry.
    pub runtime_path: Option<&'a str>,
    /// Above this many types, the types become several crates that cargo checks side by side
    /// (see [`DEFAULT_TYPES_PER_CRATE`]); 0 keeps one crate whatever the size.
    pub types_per_crate: usize,
    /// The routing glue (`server.rs`: `routes`, `app`, `document`, `Server`) as a crate of its
    /// own at `routes/` (package `<crate>-routes`) instead of a module: a server whose handlers
    /// are a crate that does not depend on it has them checked side by side with the glue.
    pub routes_apart: bool,
}

/// The version of the generator, which is the version of `openapi-poem-runtime` its output
/// needs: the two are released together (`tests/versions.rs`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Types per crate of a split crate by default. GitHub's description (2 970 types once inline
/// schemas written the same share one) makes 3 parts, none of them the largest process of its
/// check (codegen/README.md, "The weight of what is generated"); bankd's 95 stay one crate.
pub const DEFAULT_TYPES_PER_CRATE: usize = 1000;

/// Renders every file of the crate, by path relative to the crate root.
pub fn emit(api: &Api, opts: &Options) -> BTreeMap<String, String> {
    let mut e = Emitter::new(api);
    e.routes_apart = opts.routes_apart;
    let parts = split::types_parts(api, opts.types_per_crate);
    let header = format!(
        "// @generated by openapi-poem {VERSION} from {}. Do not edit by hand: edit the document and\n// run `{}` again.\n",
        opts.source,
        command(opts)
    );
    let mut files = BTreeMap::new();
    files.insert(
        "Cargo.toml".to_string(),
        cargo_toml(api, opts, parts.as_deref()),
    );
    for (k, part) in parts.iter().flatten().enumerate() {
        files.insert(
            format!("{}/Cargo.toml", part_dir(k)),
            part_cargo_toml(api, opts, k, part),
        );
    }
    if opts.routes_apart {
        files.insert(ROUTES_MANIFEST.to_string(), routes_cargo_toml(api, opts));
    }
    // A crate's root says how it was made; its modules, one line each, point there.
    let module_header = format!(
        "// @generated by openapi-poem {VERSION} from {}: not to be edited by hand (see lib.rs).\n",
        opts.source
    );
    for (path, text) in render(&e, &jobs(&e, opts.crate_name, parts.as_deref())) {
        let head = if path.ends_with("src/lib.rs") {
            &header
        } else {
            &module_header
        };
        files
            .entry(path)
            .or_insert_with(|| head.clone())
            .push_str(&text);
    }
    files
}

/// The crate as one module file reachable at `crate::<module>`, for a build script (see
/// [`crate::Builder`]); never split into crates of types.
pub fn emit_module(api: &Api, opts: &Options, module: &str, features: &[&str]) -> String {
    let files = emit(
        api,
        &Options {
            types_per_crate: 0,
            routes_apart: false,
            ..*opts
        },
    );
    let header = format!(
        "// @generated by openapi-poem {VERSION} from {} in a build script (`openapi_poem::Builder`).\n// Do not edit: edit the document; the build writes this file again.\n",
        opts.source
    );
    module::module_file(&files, &header, module, features)
}

/// The generated crate's `Cargo.toml`: its name, a description from the document's title and
/// version, the runtime by path and the explicit dependency versions (and its types' crates,
/// with the features passed on, when they are split).
fn cargo_toml(api: &Api, opts: &Options, parts: Option<&[split::TypesPart]>) -> String {
    let names: Vec<String> = (0..parts.map_or(0, <[_]>::len))
        .map(|k| part_name(opts.crate_name, k))
        .collect();
    let paths: Vec<String> = (0..names.len()).map(part_dir).collect();
    manifest(
        opts,
        opts.crate_name,
        &format!(
            "Server traits, types and routing for {} {} (generated)",
            api.title.replace('"', "'"),
            api.version.replace('"', "'")
        ),
        opts.runtime_path,
        &names.iter().zip(&paths).collect::<Vec<_>>(),
        api,
    )
}

/// Where the routes crate's manifest is, relative to the crate.
const ROUTES_MANIFEST: &str = "routes/Cargo.toml";

/// The package name of the routes crate.
fn routes_name(crate_name: &str) -> String {
    format!("{crate_name}-routes")
}

/// The `Cargo.toml` of the routes crate: the crate of the contract by path, and what the glue
/// names of poem, poem-openapi and serde.
fn routes_cargo_toml(api: &Api, opts: &Options) -> String {
    format!(
        "# @generated by openapi-poem {VERSION} from {}. Do not edit by hand: run `{}` again.\n[package]\nname = \"{}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\ndescription = \"Routing for {} {} (generated): serves the traits of `{}`\"\n\n[dependencies]\n{} = {{ path = \"..\" }}\n{}",
        opts.source,
        command(opts),
        routes_name(opts.crate_name),
        api.title.replace('"', "'"),
        api.version.replace('"', "'"),
        opts.crate_name.replace('-', "_"),
        opts.crate_name,
        cargo_dependencies(api)
    )
}

/// The `Cargo.toml` of the `k`th crate of types: the runtime and the parts it holds types of.
fn part_cargo_toml(api: &Api, opts: &Options, k: usize, part: &split::TypesPart) -> String {
    let runtime = opts.runtime_path.map(|path| {
        if std::path::Path::new(path).is_absolute() {
            path.to_string()
        } else {
            format!("../../{path}")
        }
    });
    let names: Vec<String> = part
        .deps
        .iter()
        .map(|&d| part_name(opts.crate_name, d))
        .collect();
    let paths: Vec<String> = part.deps.iter().map(|&d| format!("../types-{d}")).collect();
    manifest(
        opts,
        &part_name(opts.crate_name, k),
        &format!(
            "Types of {} (part {k}, generated): use them through `{}::models`",
            api.title.replace('"', "'"),
            opts.crate_name.replace('-', "_")
        ),
        runtime.as_deref(),
        &names.iter().zip(&paths).collect::<Vec<_>>(),
        api,
    )
}

/// The command that makes the crate again, as the header and `Cargo.toml` name it.
fn command(opts: &Options) -> String {
    let mut command = format!("openapi-poem generate --spec {}", opts.source);
    if !opts.flags.is_empty() {
        command.push(' ');
        command.push_str(opts.flags);
    }
    command
}

/// A generated `Cargo.toml`: the package, the serde features (passed on to `parts`), the
/// runtime by version (and at `runtime` when given) and the parts by path.
fn manifest(
    opts: &Options,
    name: &str,
    description: &str,
    runtime: Option<&str>,
    parts: &[(&String, &String)],
    api: &Api,
) -> String {
    let mut features = FEATURES.to_string();
    for feature in ["serialize-requests", "deserialize-responses"] {
        let on: Vec<String> = parts
            .iter()
            .map(|(n, _)| format!("\"{n}/{feature}\""))
            .collect();
        features = features.replace(
            &format!("{feature} = []"),
            &format!("{feature} = [{}]", on.join(", ")),
        );
    }
    let part_deps: String = parts
        .iter()
        .map(|(n, p)| format!("{n} = {{ path = {p:?} }}\n"))
        .collect();
    let runtime = match runtime {
        Some(path) => format!("{{ version = \"{VERSION}\", path = {path:?} }}"),
        None => format!("\"{VERSION}\""),
    };
    format!(
        "# @generated by openapi-poem {VERSION} from {}. Do not edit by hand: run `{}` again.\n[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\ndescription = \"{description}\"\n\n{features}\n[dependencies]\nopenapi-poem-runtime = {runtime}\n{part_deps}{}",
        opts.source,
        command(opts),
        cargo_dependencies(api)
    )
}

/// The package name of the `k`th crate of types.
fn part_name(crate_name: &str, k: usize) -> String {
    format!("{crate_name}-types-{k}")
}

/// The directory of the `k`th crate of types, relative to the crate.
fn part_dir(k: usize) -> String {
    format!("parts/types-{k}")
}

/// The source files to render (workers take them in this order): a file per type and the
/// `models.rs` that declares them (or the crates of types, each `models.rs` in parts, and the
/// module that re-exports them); `server.rs`; `lib.rs`; one module per tag; and `callbacks.rs` when the
/// document has callbacks.
fn jobs<'a>(
    e: &Emitter<'a>,
    crate_name: &str,
    parts: Option<&[split::TypesPart]>,
) -> Vec<(String, Job<'a>)> {
    let api = e.api;
    let lib_name = |k: usize| part_name(crate_name, k).replace('-', "_");
    let mut jobs: Vec<(String, Job)> = Vec::new();
    // A `models.rs` in pieces rendered apart (the first is `head`).
    fn models(jobs: &mut Vec<(String, Job)>, path: String, types: &[usize], head: ModelsHead) {
        let mut head = Some(head);
        for chunk in types.chunks(MODELS_PER_PART) {
            let first = head.take().unwrap_or(ModelsHead::Continued);
            jobs.push((path.clone(), Job::Models(chunk.to_vec(), first)));
        }
        if let Some(head) = head {
            jobs.push((path, Job::Models(Vec::new(), head)));
        }
    }
    match parts {
        None => {
            // One file per type under `src/models/`: an edit of one schema moves no line of
            // another type, so incremental compilation keeps what it knew of the others.
            let files = model_files(api);
            for (i, file) in files.iter().enumerate() {
                jobs.push((
                    format!("src/models/{file}.rs"),
                    Job::Models(vec![i], ModelsHead::Continued),
                ));
            }
            jobs.push((
                "src/models.rs".into(),
                Job::Models(Vec::new(), ModelsHead::Index(files)),
            ));
        }
        Some(parts) => {
            for (k, part) in parts.iter().enumerate() {
                let uses = part.deps.iter().map(|&d| lib_name(d)).collect();
                let dir = part_dir(k);
                models(
                    &mut jobs,
                    format!("{dir}/src/models.rs"),
                    &part.types,
                    ModelsHead::Part(k, uses),
                );
                jobs.push((format!("{dir}/src/lib.rs"), Job::PartLib(k)));
            }
            let facade = (0..parts.len()).map(lib_name).collect();
            models(
                &mut jobs,
                "src/models.rs".into(),
                &[],
                ModelsHead::Facade(facade),
            );
        }
    }
    if e.routes_apart {
        jobs.push((
            "routes/src/lib.rs".into(),
            Job::Routes(crate_name.replace('-', "_")),
        ));
    } else {
        jobs.push(("src/server.rs".into(), Job::Server));
    }
    jobs.push(("src/lib.rs".into(), Job::Lib));
    jobs.extend(
        api.trait_tags()
            .map(|tag| (format!("src/{}.rs", tag_module(tag)), Job::Tag(tag))),
    );
    if !e.outgoing_sets().is_empty() {
        jobs.push(("src/callbacks.rs".into(), Job::Callbacks));
    }
    if e.has_responses_module() {
        jobs.push(("src/responses.rs".into(), Job::Responses));
    }
    // The client in pieces of operations rendered apart (a large document's is most of the
    // generation time otherwise); the first piece holds the file's head, the last the receivers.
    let ops = api.operations.len();
    let pieces = ops.div_ceil(CLIENT_OPS_PER_PART).max(1);
    for k in 0..pieces {
        let range = k * CLIENT_OPS_PER_PART..((k + 1) * CLIENT_OPS_PER_PART).min(ops);
        jobs.push((
            "src/client.rs".into(),
            Job::Client(range, k == 0, k + 1 == pieces),
        ));
    }
    jobs
}

/// Renders every job, `(path, text)` in job order (so the parts of `models.rs` join in order).
/// Each file is built and rendered on its own thread (tokens are not `Send`, so a worker builds
/// what it renders); the workers share the jobs.
fn render(e: &Emitter, jobs: &[(String, Job)]) -> Vec<(String, String)> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(jobs.len()));
    let rendered: Vec<Vec<(usize, String, String)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((path, job)) = jobs.get(i) else {
                            return out;
                        };
                        out.push((i, path.clone(), unparse(e.job(job))));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rendering does not panic"))
            .collect()
    });
    let mut rendered: Vec<(usize, String, String)> = rendered.into_iter().flatten().collect();
    rendered.sort_by_key(|r| r.0);
    rendered
        .into_iter()
        .map(|(_, path, text)| (path, text))
        .collect()
}

/// The module (and file) name of each type's file under `src/models/`, in type order: the type's
/// name in snake case, made unique and kept off Rust's keywords.
fn model_files(api: &Api) -> Vec<String> {
    let mut taken = std::collections::BTreeSet::new();
    api.types
        .iter()
        .map(|t| {
            let mut name = crate::names::snake(&t.rust);
            if crate::names::is_keyword(&name) || name.is_empty() {
                name.push('_');
            }
            crate::names::unique(name, &mut taken)
        })
        .collect()
}

/// What a piece of a `models.rs` starts with.
pub(crate) enum ModelsHead {
    /// The crate's `models.rs` when each type has a file of its own: the module's doc, and each
    /// file (module names) declared and re-exported.
    Index(Vec<String>),
    /// Nothing: a later piece of the same file.
    Continued,
    /// The `k`th crate of types: its doc and the crates of types it imports (library names).
    Part(usize, Vec<String>),
    /// The crate's `models.rs` when the types are in crates of their own: the doc and a
    /// re-export of each.
    Facade(Vec<String>),
}

/// Models per part of `models.rs` rendered on its own.
const MODELS_PER_PART: usize = 200;

/// One file of the generated crate, or one part of a `models.rs`.
enum Job<'a> {
    Lib,
    /// The routing glue as the root of the routes crate, naming the crate of the contract
    /// (its library name) where the module says `crate`.
    Routes(String),
    /// Indices into [`Api::types`], and what comes before them.
    Models(Vec<usize>, ModelsHead),
    /// `src/lib.rs` of the `k`th crate of types.
    PartLib(usize),
    Tag(&'a Tag),
    Server,
    Callbacks,
    /// `src/responses.rs`: the component responses that are types of their own.
    Responses,
    /// The client's operations in a range of [`Api::operations`], with the file's head (first
    /// piece) and the receivers (last piece).
    Client(std::ops::Range<usize>, bool, bool),
}

/// Operations per piece of `client.rs` rendered on its own.
const CLIENT_OPS_PER_PART: usize = 150;

/// Formatted Rust source of `tokens` (a file's items).
fn unparse(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("openapi-poem emitted invalid Rust ({e}); this is a generator bug"),
    }
}

/// The module of a tag's file (`src/<module>.rs`).
pub fn tag_module(tag: &Tag) -> String {
    tag.module.clone()
}

/// An array parameter read as one delimited value (by `runtime::Csv` or `Delimited`): a
/// non-exploded one, and any in the path (whose one segment holds every item).
fn is_csv(p: &Param) -> bool {
    matches!(p.schema.kind, Kind::Array(_))
        && (!p.explode || p.location == Location::Path)
        && p.content_type.is_none()
}

/// A parameter's default as the generated code applies it. `None` where the extracted type
/// cannot hold it as written (a date or date-time, a delimited array, a JSON-content
/// parameter): such a parameter is optional, and only the document shows its default.
fn param_default(p: &Param) -> Option<&serde_json::Value> {
    let dated = matches!(&p.schema.kind, Kind::String { format: Some(f), .. } if f == "date" || f == "date-time");
    let wrapped = dated || is_csv(p) || p.content_type.is_some();
    p.schema.default.as_ref().filter(|_| !wrapped)
}

/// The principal parameter of an operation's trait method (`name: Self::Principal,`), if any.
fn principal_param(o: &Operation, name: TokenStream) -> TokenStream {
    match o.auth_mode() {
        AuthMode::None => quote!(),
        AuthMode::Required => quote!(#name: Self::Principal,),
        AuthMode::Optional => quote!(#name: ::std::option::Option<Self::Principal>,),
    }
}

/// How a tag's module and trait describe which operations they hold.
fn tag_phrase(tag: &Tag) -> String {
    if tag.served {
        format!("Operations tagged `{}`", tag.name)
    } else {
        "Operations without a tag".to_string()
    }
}

/// The `serialize_with = ...` of a field's `serde` attribute when its schema is a `date-time` string: the
/// runtime's `date_time` writer, which writes chrono's text without `core::fmt`. Nothing for any
/// other field.
fn date_time_writer(schema: &Schema, required: bool) -> Option<TokenStream> {
    let is_date_time = matches!(
        &schema.kind,
        Kind::String { format, .. } if format.as_deref() == Some("date-time")
    );
    match (is_date_time, always_present(schema, required)) {
        (false, _) => None,
        (true, true) => Some(quote!(
            serialize_with = "crate::runtime::date_time::serialize"
        )),
        (true, false) => Some(quote!(
            serialize_with = "crate::runtime::date_time::serialize_option"
        )),
    }
}

/// Whether a property is in every request and every response (so its Rust type is not optional).
fn always_present(schema: &Schema, required: bool) -> bool {
    required && !schema.nullable && !schema.read_only && !schema.write_only
}

/// `s` (a Rust name the parser made: `r#type` for a keyword) as an identifier.
fn ident(s: &str) -> syn::Ident {
    syn::parse_str::<syn::Ident>(s).unwrap_or_else(|_| format_ident!("{}", s))
}

/// Doc attributes of an optional text (none without).
fn doc(text: &Option<String>) -> TokenStream {
    match text {
        Some(t) => doc_str(t),
        None => quote!(),
    }
}

/// Doc attributes of a text, one per line (trailing whitespace trimmed; a lone carriage
/// return is a line break too, since rustc refuses one in a doc comment).
pub(crate) fn doc_str(t: &str) -> TokenStream {
    let t = t.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<TokenStream> = t
        .trim_end()
        .lines()
        .map(|l| {
            let l = format!(" {}", l.trim_end());
            quote!(#[doc = #l])
        })
        .collect();
    quote!(#(#lines)*)
}

/// An `Option<&str>` expression of an optional text.
fn opt_str(s: &Option<String>) -> TokenStream {
    match s {
        Some(s) => quote!(::std::option::Option::Some(#s)),
        None => quote!(::std::option::Option::None),
    }
}

/// `v` as an `f64` literal.
fn f64_lit(v: f64) -> Literal {
    Literal::f64_suffixed(v)
}

/// What Rust item a named type becomes.
pub(crate) enum Shape<'t> {
    /// A string enum: a Rust enum, one variant per value (a value listed twice is one).
    Enum(Vec<&'t str>),
    /// A struct of the (merged) properties.
    Struct {
        props: Vec<Property>,
        required: Vec<String>,
        additional: Additional,
    },
    /// `oneOf` / `anyOf`: an untagged Rust enum.
    OneOf(&'t [Schema]),
    /// Anything else: a transparent newtype.
    Newtype,
}

pub(crate) struct Emitter<'a> {
    api: &'a Api,
    /// Named types by name (the emitter looks one up for every reference it renders).
    types: std::collections::HashMap<&'a str, &'a TypeDef>,
    /// Which ways each named type crosses the wire, by name: what its serde derives cover.
    directions: std::collections::HashMap<&'a str, Direction>,
    /// The glue is the routes crate's, not a module of the crate (`Options::routes_apart`).
    routes_apart: bool,
    /// The component responses that are types of the `responses` module ([`Response::typed`]),
    /// in the order operations first refer to them: the component's name, the type's name, and
    /// the first reference (each reference to a component reads the same).
    typed_responses: Vec<(&'a str, String, &'a Response)>,
    /// The component responses without headers, each an alias of its one part (the body, or
    /// `NoBody` under `default`) in the `responses` module, where its description is written
    /// once: the component's name, the alias's name and the part's type (as text: the emitter
    /// is shared by the threads that render). A component whose references read different
    /// parts (a hoisted schema named apart) has none.
    aliased_responses: Vec<(&'a str, String, String)>,
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(api: &'a Api) -> Self {
        let types = api.types.iter().map(|t| (t.name.as_str(), t)).collect();
        let directions = api
            .types
            .iter()
            .map(|t| t.name.as_str())
            .zip(api.directions())
            .collect();
        let mut e = Emitter {
            api,
            types,
            directions,
            routes_apart: false,
            typed_responses: Vec::new(),
            aliased_responses: Vec::new(),
        };
        // The parts each component response without headers reads in each reference.
        let mut parts: Vec<(&str, Vec<String>)> = Vec::new();
        let mut taken = std::collections::BTreeSet::new();
        let mut names: Vec<(&str, String)> = Vec::new();
        for r in api.operations.iter().flat_map(|o| &o.responses) {
            let Some(component) = r.component.as_deref() else {
                continue;
            };
            if !names.iter().any(|(c, _)| *c == component) {
                let rust = crate::names::unique(crate::names::camel(component), &mut taken);
                names.push((component, rust.clone()));
                if r.typed() {
                    e.typed_responses.push((component, rust, r));
                }
            }
            if !r.typed() {
                let body = e.response_body_part(r).map(|t| t.to_string());
                match parts.iter_mut().find(|(c, _)| *c == component) {
                    Some((_, seen)) => seen.extend(body),
                    None => parts.push((component, body.into_iter().collect())),
                }
            }
        }
        for (component, rust) in names {
            let Some((_, seen)) = parts.iter().find(|(c, _)| *c == component) else {
                continue;
            };
            let references = api
                .operations
                .iter()
                .flat_map(|o| &o.responses)
                .filter(|r| r.component.as_deref() == Some(component))
                .count();
            // Every reference reads one part, the same one.
            if seen.len() == references && seen.iter().all(|t| *t == seen[0]) {
                e.aliased_responses.push((component, rust, seen[0].clone()));
            }
        }
        e
    }

    /// The path of the name a component response has in the `responses` module: its type
    /// ([`Self::typed_response_path`]) or the alias of its one part.
    pub(crate) fn named_response_path(&self, r: &Response) -> Option<TokenStream> {
        let component = r.component.as_deref()?;
        let rust = if r.typed() {
            let (_, rust, _) = self
                .typed_responses
                .iter()
                .find(|(c, _, _)| *c == component)?;
            rust
        } else {
            let (_, rust, _) = self
                .aliased_responses
                .iter()
                .find(|(c, _, _)| *c == component)?;
            rust
        };
        let id = ident(rust);
        Some(quote!(crate::responses::#id))
    }

    /// The one part of a response without headers beside its status (its body, or `NoBody`
    /// under `default`), if it has exactly one.
    fn response_body_part(&self, r: &Response) -> Option<TokenStream> {
        if !r.headers.is_empty() {
            return None;
        }
        let mut fields = self.response_fields(r);
        if matches!(r.status, Status::Default | Status::Range(_)) {
            fields.remove(0);
        }
        (fields.len() == 1).then(|| fields.remove(0))
    }

    /// Whether the crate has a `responses` module: some component response is named there.
    pub(crate) fn has_responses_module(&self) -> bool {
        !self.typed_responses.is_empty() || !self.aliased_responses.is_empty()
    }

    /// The path of the type of a typed response ([`Response::typed`]).
    pub(crate) fn typed_response_path(&self, r: &Response) -> Option<TokenStream> {
        self.named_response_path(r).filter(|_| r.typed())
    }

    pub(crate) fn typedef(&self, name: &str) -> &'a TypeDef {
        self.types
            .get(name)
            .expect("the parser resolved every reference")
    }

    fn type_path(&self, name: &str) -> TokenStream {
        let id = ident(&self.typedef(name).rust);
        quote!(crate::models::#id)
    }

    /// The Rust type of a value of `schema` (without the `Option` of optional fields).
    pub(crate) fn rust_type(&self, schema: &Schema, multipart: bool) -> TokenStream {
        match &schema.kind {
            Kind::Ref(name) => self.type_path(name),
            Kind::String { format, .. } => match format.as_deref() {
                Some("date") => quote!(::chrono::NaiveDate),
                Some("date-time") => quote!(::chrono::DateTime<::chrono::Utc>),
                Some("binary") if multipart => quote!(crate::runtime::FilePart),
                _ => quote!(::std::string::String),
            },
            Kind::Integer { format } => match format.as_deref() {
                Some("int8") => quote!(i8),
                Some("int16") => quote!(i16),
                Some("int32") => quote!(i32),
                Some("uint8") => quote!(u8),
                Some("uint16") => quote!(u16),
                Some("uint32") => quote!(u32),
                Some("uint64" | "uint") => quote!(u64),
                _ => quote!(i64),
            },
            Kind::Number { format } if format.as_deref() == Some("float") => quote!(f32),
            Kind::Number { .. } => quote!(f64),
            Kind::Boolean => quote!(bool),
            Kind::Array(item) => {
                let t = self.rust_type(item, multipart);
                quote!(::std::vec::Vec<#t>)
            }
            Kind::Object(o) => match &o.additional {
                Additional::Schema(v) => {
                    let t = self.rust_type(v, multipart);
                    quote!(::std::collections::BTreeMap<::std::string::String, #t>)
                }
                // A free-form object: poem-openapi knows `Value` (not `Map`) as a body type.
                _ => quote!(::serde_json::Value),
            },
            Kind::AllOf(members) => match members.as_slice() {
                [one] => self.rust_type(one, multipart),
                _ => quote!(::serde_json::Value),
            },
            Kind::OneOf { .. } | Kind::AnyOf(_) | Kind::Any => quote!(::serde_json::Value),
        }
    }

    /// A property's Rust type: optional unless required in both directions (a `readOnly`
    /// property is absent from requests, a `writeOnly` one from responses) and not nullable;
    /// boxed when it holds its container again (a recursive schema).
    pub(crate) fn field_type(
        &self,
        schema: &Schema,
        required: bool,
        multipart: bool,
        container: &str,
    ) -> TokenStream {
        let mut t = self.rust_type(schema, multipart);
        if self
            .direct_ref(schema)
            .is_some_and(|n| self.contains(n, container, &mut Vec::new()))
        {
            t = quote!(::std::boxed::Box<#t>);
        }
        if always_present(schema, required) {
            t
        } else {
            quote!(::std::option::Option<#t>)
        }
    }

    /// The items of one file (or one part of `models.rs`).
    fn job(&self, job: &Job) -> TokenStream {
        match job {
            Job::Lib => self.lib(),
            Job::Models(types, head) => self.models(types, head),
            Job::PartLib(k) => self.part_lib(*k),
            Job::Tag(tag) => self.tag(tag),
            Job::Server => self.server(),
            Job::Routes(contract) => self.routes_root(contract),
            Job::Callbacks => self.callbacks_file(),
            Job::Responses => self.responses_file(),
            Job::Client(ops, head, receivers) => self.client_file(ops.clone(), *head, *receivers),
        }
    }
}

/// `/pets/{pet_id}` → `/pets/:pet_id` (poem-openapi's syntax).
pub fn poem_path(path: &str) -> String {
    let mut seen = std::collections::BTreeMap::new();
    path.split('/')
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => {
                    let times = seen.entry(name).or_insert(0);
                    *times += 1;
                    // poem refuses a variable named twice (`/a/{id}/b/{id}`): a repeat gets a
                    // name of its own and is matched, not compared with the first.
                    if *times == 1 {
                        format!(":{name}")
                    } else {
                        format!(":{name}__again{times}")
                    }
                }
                None => seg.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// The path poem-openapi serves for a template that names a variable twice (`None` otherwise):
/// the route's own names in braces, renamed back by `DocumentPatch::renamed_paths`.
pub fn served_path(path: &str) -> Option<String> {
    let route = poem_path(path);
    let served: String = route
        .split('/')
        .map(|seg| match seg.strip_prefix(':') {
            Some(name) => format!("{{{name}}}"),
            None => seg.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/");
    (served != path).then_some(served)
}
