//! `bank-codegen`: OpenAPI 3.0 document → a Rust crate of server traits, types and routing glue.
//!
//! - [`parse`]: reads and validates the document into the [`ir`] (unsupported constructs are
//!   errors naming their JSON pointer).
//! - [`ir`]: plain data describing operations, types and security; what tests inspect.
//! - [`emit`]: renders the IR with `quote`, formats with `prettyplease`; deterministic.
//! - [`check`]: compares a directory with what the document produces, as a readable diff.
//!
//! Nothing here is specific to one API: the bankd document is one input among the fixtures.

pub mod emit;
pub mod ir;
pub mod names;
pub mod parse;
#[path = "../runtime/pattern.rs"]
pub mod pattern;

use std::collections::BTreeMap;
use std::path::Path;

pub use parse::Error;

/// Generates every file of the crate for `spec_text`.
pub fn generate(
    spec_text: &str,
    crate_name: &str,
    source: &str,
) -> Result<BTreeMap<String, String>, Error> {
    let api = parse::parse(spec_text)?;
    Ok(emit::emit(&api, &emit::Options { crate_name, source }))
}

/// Writes `files` under `out`, removing files the generator no longer produces.
pub fn write(out: &Path, files: &BTreeMap<String, String>) -> std::io::Result<()> {
    for stale in existing_files(out)? {
        if !files.contains_key(&stale) {
            std::fs::remove_file(out.join(&stale))?;
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

/// Files under `dir` that a generator run owns (`Cargo.toml` and `src/**/*.rs`).
fn existing_files(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    if dir.join("Cargo.toml").exists() {
        out.push("Cargo.toml".to_string());
    }
    let mut stack = vec![dir.join("src")];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(rel) = path.strip_prefix(dir)
            {
                out.push(rel.to_string_lossy().replace('\\', "/"));
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
