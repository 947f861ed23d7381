//! `openapi-poem`: OpenAPI 3.0 document → a Rust crate of server traits, types and routing glue.
//!
//! - [`bundle`]: a document split over several files (or with path item `$ref`s) as one.
//! - [`parse`]: reads and validates the document into the [`ir`] (unsupported constructs are
//!   errors naming their JSON pointer).
//! - [`ir`]: plain data describing operations, types and security; what tests inspect.
//! - [`emit`]: renders the IR with `quote`, formats with `prettyplease`; deterministic.
//! - [`check`]: compares a directory with what the document produces, as a readable diff.
//! - [`diff`]: what an edit of the document does to clients and to the server.
//! - [`names`]: document names as Rust identifiers, the same way every time.
//! - [`upgrade`]: an OpenAPI 3.0 document rewritten as 3.1, meaning kept.
//! - [`pattern`]: ECMA-262 `pattern`s (shared with the runtime, which checks values with it).
//!
//! Nothing here is specific to one API: the bankd document is one input among the fixtures.

pub mod bundle;
pub mod diff;
pub mod emit;
pub mod ir;
pub mod names;
pub mod parse;
pub mod upgrade;

pub use openapi_poem_pattern as pattern;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use emit::Options;
pub use parse::Error;

/// Where an operation of a method poem-openapi cannot route (OpenAPI 3.2's `QUERY`, an
/// `additionalOperations` method) is registered: `{EXTENSION_PREFIX}/{METHOD}{path}`, as a
/// hidden POST. The runtime's `ExtensionMethods` rewrites such requests there and refuses any
/// request sent to the prefix directly.
pub const EXTENSION_PREFIX: &str = "/.method";

/// The package name a crate generated into `out` gets when none is given: the one its
/// `Cargo.toml` already has (so regenerating keeps it), else the directory's name made a valid
/// package name (`crates/Pet Store` → `pet-store`; `api` when nothing is left).
pub fn default_crate_name(out: &Path) -> String {
    let manifest = std::fs::read_to_string(out.join("Cargo.toml")).unwrap_or_default();
    let in_package = manifest
        .lines()
        .skip_while(|l| l.trim() != "[package]")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['));
    for line in in_package {
        if let Some((key, value)) = line.split_once('=')
            && key.trim() == "name"
        {
            let name = value.trim().trim_matches('"');
            if !name.is_empty() {
                return name.to_string();
            }
        }
    }
    let dir = out
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| out.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut name = String::new();
    for c in dir.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c.to_ascii_lowercase());
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_end_matches('-').to_string();
    match name.chars().next() {
        None => "api".to_string(),
        Some(c) if c.is_ascii_digit() => format!("api-{name}"),
        Some(_) => name,
    }
}

/// The `openapi-poem-runtime` crate of this checkout (absolute).
pub const RUNTIME_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/runtime");

/// Where a crate generated into `out` finds the runtime by default: when `out` is inside a
/// checkout of this repository (a directory above it holds `codegen/runtime/`, the runtime's
/// package, as bankd's `generated/` does), that checkout's runtime as a path relative to `out`;
/// else `None`, the released runtime by version. Found from `out`, not from where the binary
/// was built, so a generator built in one clone writes the same crate in another.
pub fn default_runtime_path(out: &Path) -> Option<String> {
    let out_abs = if out.is_absolute() {
        out.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(out)
    };
    out_abs.ancestors().find_map(|dir| {
        let runtime = dir.join("codegen/runtime");
        let manifest = std::fs::read_to_string(runtime.join("Cargo.toml")).ok()?;
        manifest
            .lines()
            .any(|l| l.trim() == "name = \"openapi-poem-runtime\"")
            .then(|| relative_path(out, &runtime))
    })
}

/// Generates every file of the crate for `spec_text` (one file: a reference to another file
/// is refused; see [`generate_file`]).
pub fn generate(spec_text: &str, opts: &Options) -> Result<BTreeMap<String, String>, Error> {
    let api = parse::parse(spec_text)?;
    Ok(emit::emit(&api, opts))
}

/// Generates every file of the crate for the document at `spec`, reading the files its
/// references name relative to it.
pub fn generate_file(spec: &Path, opts: &Options) -> Result<BTreeMap<String, String>, Error> {
    let api = parse::parse_file(spec)?;
    Ok(emit::emit(&api, opts))
}

/// Generation from a build script, as `tonic-build` and `prost-build` do it: the document's
/// crate written as one module file into `OUT_DIR`, included where the module lives.
///
/// ```no_run
/// // build.rs
/// fn main() -> std::io::Result<()> {
///     openapi_poem::Builder::new("api/openapi.yaml").module("api").generate()?;
///     Ok(())
/// }
/// ```
///
/// ```ignore
/// // src/lib.rs
/// pub mod api {
///     include!(concat!(env!("OUT_DIR"), "/api.rs"));
/// }
/// ```
///
/// The including crate depends on what a generated crate does (`openapi-poem-runtime`, `poem`,
/// `poem-openapi`, `serde`, `serde_json`, `serde_yaml`, `chrono`, `tokio`; the generated
/// `Cargo.toml`'s list). `generate` prints
/// `cargo:rerun-if-changed` for the document and every file its references read.
pub struct Builder {
    spec: PathBuf,
    module: String,
    out_dir: Option<PathBuf>,
    features: Vec<&'static str>,
}

impl Builder {
    /// Generation from the document at `spec` (YAML or JSON, 3.0 to 3.2, over several files or
    /// one), into the module `api` by default.
    pub fn new(spec: impl Into<PathBuf>) -> Self {
        Builder {
            spec: spec.into(),
            module: "api".to_string(),
            out_dir: None,
            features: Vec::new(),
        }
    }

    /// Request types also serialise (the generated crate's `serialize-requests` feature).
    pub fn serialize_requests(mut self) -> Self {
        self.features.push("serialize-requests");
        self
    }

    /// Types the server writes also deserialise (`deserialize-responses`).
    pub fn deserialize_responses(mut self) -> Self {
        self.features.push("deserialize-responses");
        self
    }

    /// The typed client too (`client`): the module `client`, and both serde directions. The
    /// including crate depends on `openapi-poem-runtime` with its `client` feature.
    pub fn client(mut self) -> Self {
        self.features
            .extend(["client", "serialize-requests", "deserialize-responses"]);
        self
    }

    /// The module path, from the crate root, at which the file is included (`api`,
    /// `generated::api`): generated paths name it. The file is `<last segment>.rs`.
    pub fn module(mut self, path: &str) -> Self {
        self.module = path.to_string();
        self
    }

    /// Where to write (default: `OUT_DIR`, which cargo sets for build scripts).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Writes the module file (only when it changed, so cargo does not rebuild for nothing),
    /// prints `cargo:rerun-if-changed` for every file read, and returns the files read, the
    /// document first. A document that cannot be generated is an error naming its pointer.
    pub fn generate(self) -> std::io::Result<Vec<PathBuf>> {
        let out_dir = match self.out_dir {
            Some(dir) => dir,
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    std::io::Error::other(
                        "OUT_DIR is not set: run from a build script or set out_dir",
                    )
                })?,
        };
        if !self
            .module
            .split("::")
            .all(|segment| syn::parse_str::<syn::Ident>(segment).is_ok())
        {
            return Err(std::io::Error::other(format!(
                "module path `{}` is not a Rust path of identifiers (such as `api` or `generated::api`)",
                self.module
            )));
        }
        let fail = |e: Error| {
            std::io::Error::other(format!(
                "{}#{}: {}",
                self.spec.display(),
                e.pointer.trim_start_matches('#'),
                e.message
            ))
        };
        let (doc, read) = bundle::bundle_file_and_sources(&self.spec).map_err(fail)?;
        let api = parse::parse_bundled(doc).map_err(fail)?;
        let source = self.spec.display().to_string();
        let crate_name = self.module.rsplit("::").next().unwrap_or("api").to_string();
        let opts = Options {
            crate_name: &crate_name,
            source: &source,
            flags: "",
            runtime_path: None,
            types_per_crate: 0,
            routes_apart: false,
        };
        let text = emit::emit_module(&api, &opts, &self.module, &self.features);
        let path = out_dir.join(format!("{crate_name}.rs"));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text)?;
        }
        for file in &read {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        Ok(read)
    }
}

/// `to` as a path relative to the directory `from` (both made absolute against the current
/// directory and normalised lexically, so neither needs to exist yet). Used to write the runtime
/// dependency of a generated crate as a relative path, the same on every checkout.
pub fn relative_path(from: &Path, to: &Path) -> String {
    let absolute = |p: &Path| -> Vec<String> {
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        let mut parts: Vec<String> = Vec::new();
        for c in full.components() {
            match c {
                std::path::Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
                std::path::Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (from, to) = (absolute(from), absolute(to));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; from.len() - common];
    out.extend(to[common..].iter().map(String::as_str));
    if out.is_empty() {
        ".".to_string()
    } else {
        out.join("/")
    }
}

/// Writes `files` under `out`, removing files the generator no longer produces.
pub fn write(out: &Path, files: &BTreeMap<String, String>) -> std::io::Result<()> {
    for stale in existing_files(out)? {
        if !files.contains_key(&stale) {
            let path = out.join(&stale);
            std::fs::remove_file(&path)?;
            // and the directories it leaves empty (a crate of types no longer produced)
            let mut dir = path.parent();
            while let Some(d) = dir.filter(|d| *d != out) {
                if std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }
    for (rel, content) in files {
        let path = out.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // Only touch files that change, so cargo does not rebuild for nothing.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
            std::fs::write(&path, content)?;
        }
    }
    Ok(())
}

/// Files under `dir` that a generator run owns: `Cargo.toml` and `src/**/*.rs`, and the same
/// of every crate under `parts/` (the types of a split crate).
fn existing_files(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut crates = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir.join("parts")) {
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                crates.push(path);
            }
        }
    }
    let mut out = Vec::new();
    let relative = |path: &Path| {
        path.strip_prefix(dir)
            .ok()
            .map(|rel| rel.to_string_lossy().replace('\\', "/"))
    };
    for root in crates {
        if root.join("Cargo.toml").exists() {
            out.extend(relative(&root.join("Cargo.toml")));
        }
        let mut stack = vec![root.join("src")];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in entries {
                let path = entry?.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.extend(relative(&path));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A readable unified diff of `dir` against `files`; `None` when they are identical.
pub fn check(dir: &Path, files: &BTreeMap<String, String>) -> std::io::Result<Option<String>> {
    let mut report = String::new();
    for (rel, expected) in files {
        let actual = std::fs::read_to_string(dir.join(rel)).unwrap_or_default();
        if &actual != expected {
            let diff = similar::TextDiff::from_lines(actual.as_str(), expected.as_str());
            report.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(
                        &format!("{rel} (committed)"),
                        &format!("{rel} (from the document)"),
                    )
                    .to_string(),
            );
        }
    }
    for stale in existing_files(dir)? {
        if !files.contains_key(&stale) {
            report.push_str(&format!(
                "{stale}: not produced by the document any more (delete it)\n"
            ));
        }
    }
    Ok(if report.is_empty() {
        None
    } else {
        Some(report)
    })
}

#[cfg(test)]
mod tests {
    use super::default_crate_name;

    #[test]
    fn the_default_crate_name_is_the_manifests_else_the_directorys() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let out = dir.path().join("Pet Store API");
        std::fs::create_dir(&out).expect("created");
        assert_eq!(default_crate_name(&out), "pet-store-api");
        std::fs::write(
            out.join("Cargo.toml"),
            "# @generated\n[package]\nname = \"bank-api\"\nversion = \"0.1.0\"\n\n[dependencies]\nname = \"not-this\"\n",
        )
        .expect("written");
        assert_eq!(default_crate_name(&out), "bank-api");
        assert_eq!(default_crate_name(&dir.path().join("2024")), "api-2024");
        assert_eq!(default_crate_name(&dir.path().join("---")), "api");
    }
}
