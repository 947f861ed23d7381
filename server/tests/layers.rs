//! The layers of `bankd`'s source and the one direction between them, checked on the code.
//!
//! ```text
//! model  ←  store  ←  domain  ←  api  ←  shell (app, config, metrics, main)
//! ```
//!
//! `model` (ids, money, records, kinds, page requests) depends on nothing else; `store`
//! (repositories for both backends, keyset queries) knows only `model`; `domain` (rules,
//! idempotency, authentication) knows `store` and `model`; `api` (the generated traits'
//! implementations) knows `domain` and `model`, never `store`; the shell wires everything.
//! `clock` is a leaf every layer may use. Only `api` and the shell see the wire types
//! (`bank_api`).
//!
//! `model`, `store`, `domain`, `idempotency`, `auth` and `clock` are the `bankd-core` crate
//! (`core/src`), which cannot name `bank_api`, `api` or the shell at all; `api` is the
//! `bankd-handlers` crate (`handlers/src`), which cannot name the shell; `bankd` re-exports
//! them under the same names. The three crates' sources are read as one tree.
//!
//! Each `crate::…`, `bankd_core::…` and `super::…` path outside comments is an arrow from the
//! file's module to the named module. An arrow the table does not allow fails this test, with the file
//! and line. `KNOWN` would list accepted exceptions (none today); an entry that no longer
//! occurs fails too, so the list can only shrink.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Leaf,
    Model,
    Store,
    Domain,
    Api,
    Shell,
}

/// The layer of a module path (`store::ledger`, `api`, `idempotency`).
fn layer(module: &str) -> Layer {
    let top = module.split("::").next().unwrap_or(module);
    match top {
        "clock" => Layer::Leaf,
        "model" => Layer::Model,
        "store" => Layer::Store,
        "domain" | "idempotency" | "auth" => Layer::Domain,
        "api" => Layer::Api,
        _ => Layer::Shell,
    }
}

/// Whether code in `from` may name `to`.
fn allowed(from: Layer, to: Layer) -> bool {
    match (from, to) {
        (_, Layer::Leaf) | (Layer::Shell, _) => true,
        (Layer::Api, Layer::Store) => false,
        (Layer::Leaf, _) => false,
        (from, to) => to <= from,
    }
}

/// Arrows that break the table and are accepted for now, as (from module, to module); empty
/// since every area's transactions moved into domain services.
const KNOWN: &[(&str, &str)] = &[];

/// A use of another module: (from module, to module, file, line).
#[derive(Debug)]
struct Arrow {
    from: String,
    to: String,
    file: PathBuf,
    line: usize,
}

#[test]
fn every_arrow_points_down() {
    let arrows = arrows();
    assert!(
        arrows.len() > 100,
        "the scan found only {} arrows: it is not reading the source",
        arrows.len()
    );
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    let mut seen_known = BTreeSet::new();
    let mut wrong = Vec::new();
    for a in &arrows {
        if allowed(layer(&a.from), layer(&a.to)) {
            continue;
        }
        let pair = (a.from.clone(), a.to.clone());
        if known.contains(&pair) {
            seen_known.insert(pair);
        } else {
            wrong.push(format!(
                "{}:{}: {} ({:?}) uses {} ({:?})",
                a.file.display(),
                a.line,
                a.from,
                layer(&a.from),
                a.to,
                layer(&a.to)
            ));
        }
    }
    let stale: Vec<_> = known.difference(&seen_known).collect();
    assert!(
        wrong.is_empty(),
        "arrows against the layering:\n{}",
        wrong.join("\n")
    );
    assert!(
        stale.is_empty(),
        "KNOWN lists arrows that no longer exist; remove them: {stale:?}"
    );
}

#[test]
fn only_the_api_and_the_shell_see_wire_types() {
    let mut wrong = Vec::new();
    for (module, file, code) in sources() {
        if layer(&module) >= Layer::Api {
            continue;
        }
        for (no, line) in code.lines().enumerate() {
            if line.contains("bank_api") {
                wrong.push(format!("{}:{}: {}", file.display(), no + 1, line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "wire types below the API layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_table_refuses_upward_arrows() {
    // The rules themselves, so a loosened table is seen here.
    assert!(!allowed(Layer::Store, Layer::Domain));
    assert!(!allowed(Layer::Model, Layer::Store));
    assert!(!allowed(Layer::Api, Layer::Store));
    assert!(!allowed(Layer::Domain, Layer::Api));
    assert!(allowed(Layer::Api, Layer::Domain));
    assert!(allowed(Layer::Store, Layer::Model));
    assert_eq!(layer("store::keyset"), Layer::Store);
    assert_eq!(layer("idempotency"), Layer::Domain);
}

/// Every arrow in the two crates' sources.
fn arrows() -> Vec<Arrow> {
    let mut out = Vec::new();
    for (module, file, code) in sources() {
        for (no, line) in code.lines().enumerate() {
            for to in targets(&module, line) {
                if to != module && !to.starts_with(&format!("{module}::")) {
                    out.push(Arrow {
                        from: module.clone(),
                        to,
                        file: file.clone(),
                        line: no + 1,
                    });
                }
            }
        }
    }
    out
}

/// The modules a line names: `crate::a::b`, `crate::{a::b, c}`, and `super::x` or
/// `super::{x, y}` resolved against `module`. A target is cut to two segments (`store::ledger`),
/// enough for the table.
fn targets(module: &str, line: &str) -> Vec<String> {
    let segments: Vec<&str> = module.split("::").collect();
    let parent = segments[..segments.len().saturating_sub(1)].join("::");
    let mut out = Vec::new();
    for (prefix, base) in [
        ("crate::", String::new()),
        ("bankd_core::", String::new()),
        ("super::", parent),
    ] {
        for (i, _) in line.match_indices(prefix) {
            let before = &line[..i];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // part of a longer path (`super::super::`, `bank_api::…`)
            }
            let rest = &line[i + prefix.len()..];
            let paths: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                None => vec![rest],
            };
            for head in paths.into_iter().filter_map(path_head) {
                out.push(if base.is_empty() {
                    head
                } else {
                    format!("{base}::{head}")
                });
            }
        }
    }
    out
}

/// `a::b::C` → `a::b`; `a::B` → `a`; `a` → `a`. Lower-case segments are modules.
fn path_head(path: &str) -> Option<String> {
    let path = path.trim();
    let segments: Vec<&str> = path
        .split("::")
        .map(|s| s.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_')))
        .take_while(|s| s.starts_with(|c: char| c.is_ascii_lowercase()) && !s.is_empty())
        .take(2)
        .collect();
    (!segments.is_empty() && segments[0] != "self").then(|| segments.join("::"))
}

/// (module path, file, code without comments or the test module) for every source file of
/// `bankd`, `bankd-handlers` and `bankd-core`: the module paths are the same in all three, as
/// `bankd` re-exports the others' modules under their own names.
fn sources() -> Vec<(String, PathBuf, String)> {
    let server = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for root in [
        server.join("src"),
        server.join("../handlers/src"),
        server.join("../core/src"),
    ] {
        out.extend(sources_under(&root));
    }
    out
}

fn sources_under(root: &Path) -> Vec<(String, PathBuf, String)> {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let text = match text.find("#[cfg(test)]") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        let rel = file
            .strip_prefix(root)
            .expect("under src")
            .with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts
            .last()
            .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
        {
            parts.pop();
        }
        out.push((parts.join("::"), file.clone(), strip_comments(text)));
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code with `//` comments (doc comments included) blanked, lines kept.
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_scanner_reads_paths_as_the_compiler_does() {
    assert_eq!(
        targets(
            "api::entities",
            "use crate::{domain::entities, model::ids::EntityId};"
        ),
        vec!["domain::entities", "model::ids"]
    );
    assert_eq!(
        targets("store::ledger", "use super::{Row, dialect};"),
        vec!["store::dialect"]
    );
    assert_eq!(
        targets("store::ledger", "use super::dialect;"),
        vec!["store::dialect"]
    );
    assert_eq!(
        targets("api", "let x = crate::store::Db::open();"),
        vec!["store"]
    );
}
