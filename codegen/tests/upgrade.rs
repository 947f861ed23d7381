//! A 3.0 document and its faithful 3.1 rewrite (`upgrade::to_openapi_31`: `nullable` as type
//! unions, `example` as `examples`, boolean exclusive bounds as numbers) are the same API to the
//! generator: `codegen diff` reports no change of any level, for bankd's document and for every
//! 3.0 golden fixture; and the rewrite reads as 3.1 (the type unions are really there).

use std::path::{Path, PathBuf};

use openapi_poem::diff::diff;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The changes `codegen diff` reports from the document at `path` to its 3.1 rewrite.
fn changes_of_upgrade(path: &Path) -> Vec<String> {
    let old = openapi_poem::parse::parse_file(path).expect("the 3.0 document parses");
    let mut doc = openapi_poem::bundle::bundle_file(path).expect("bundles");
    openapi_poem::upgrade::to_openapi_31(&mut doc);
    let new = openapi_poem::parse::parse(&doc.to_string()).expect("the 3.1 rewrite parses");
    assert_eq!(new.openapi, "3.1.1");
    diff(&old, &new)
        .into_iter()
        .map(|c| format!("{} {:?} {}: {}", c.id, c.level, c.pointer, c.message))
        .collect()
}

#[test]
fn bankd_1_4_written_as_openapi_3_1_is_the_same_api() {
    let spec = root().join("spec/releases/1.4.yaml");
    let changes = changes_of_upgrade(&spec);
    assert!(changes.is_empty(), "{}", changes.join("\n"));
    // The rewrite says it in 3.1's words: a nullable field is a type union.
    let mut doc = openapi_poem::bundle::bundle_file(&spec).expect("bundles");
    openapi_poem::upgrade::to_openapi_31(&mut doc);
    let text = doc.to_string();
    assert!(text.contains(r#"["string","null"]"#));
    assert!(!text.contains(r#""nullable""#));
}

#[test]
fn every_3_0_fixture_written_as_openapi_3_1_is_the_same_api() {
    let dir = root().join("codegen/tests/fixtures");
    let mut failures = Vec::new();
    let mut tried = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        let text = match path.extension().and_then(|e| e.to_str()) {
            Some("yaml") => std::fs::read_to_string(&path).expect("readable"),
            _ => continue,
        };
        if !text.starts_with("openapi: 3.0") {
            continue;
        }
        tried += 1;
        let changes = changes_of_upgrade(&path);
        if !changes.is_empty() {
            failures.push(format!("{}:\n  {}", path.display(), changes.join("\n  ")));
        }
    }
    assert!(tried >= 20, "only {tried} fixtures found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The comparison can fail: an upgrade that drops a `nullable` is a change.
#[test]
fn a_rewrite_that_loses_meaning_is_reported() {
    let spec = root().join("spec/releases/1.4.yaml");
    let old = openapi_poem::parse::parse_file(&spec).expect("parses");
    let mut doc = openapi_poem::bundle::bundle_file(&spec).expect("bundles");
    openapi_poem::upgrade::to_openapi_31(&mut doc);
    doc["components"]["schemas"]["PersonDetails"]["properties"]["middle_name"]["type"] =
        "string".into();
    let new = openapi_poem::parse::parse(&doc.to_string()).expect("parses");
    assert!(
        diff(&old, &new).iter().any(|c| c.id.contains("nullable")),
        "a field that lost its null went unnoticed"
    );
}
