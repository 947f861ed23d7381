//! `openapi_poem::Builder`, as a build script calls it: one module file in the output
//! directory, every generated path under the module's own, the files read reported for
//! `cargo:rerun-if-changed`, and a document that cannot be generated refused by pointer.
//! (`codegen/examples/build-script` compiles and serves such a file.)

use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn the_module_file_lives_under_its_path_and_names_every_file_read() {
    let out = tempfile::tempdir().expect("temp dir");
    let read = openapi_poem::Builder::new(fixture("multi_file.yaml"))
        .module("generated::pets")
        .out_dir(out.path())
        .generate()
        .expect("generates");
    let root = fixture("multi_file.yaml").canonicalize().expect("exists");
    assert_eq!(read[0], root, "the document first");
    let mut others: Vec<String> = read[1..]
        .iter()
        .map(|p| {
            p.strip_prefix(root.parent().unwrap())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    others.sort();
    let mut expected = Vec::new();
    let mut dirs = vec![fixture("multi_file")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let rel = path.strip_prefix(fixture("")).unwrap();
                expected.push(rel.display().to_string());
            }
        }
    }
    expected.sort();
    assert_eq!(others, expected, "every file the references read");

    let text = std::fs::read_to_string(out.path().join("pets.rs")).expect("pets.rs");
    assert!(text.contains("crate::generated::pets::models::Pet"));
    for line in text.lines() {
        assert!(
            !line.contains("crate::models") && !line.contains("crate::runtime"),
            "a path left at the crate root: {line}"
        );
        assert!(
            !line.trim_start().starts_with("#!["),
            "an inner attribute: {line}"
        );
        assert!(
            !line.contains("cfg_attr(feature"),
            "an unsettled feature: {line}"
        );
    }
    assert!(text.contains("pub mod models {"));
}

#[test]
fn paths_in_attribute_strings_move_too() {
    let out = tempfile::tempdir().expect("temp dir");
    openapi_poem::Builder::new(fixture("formats.yaml"))
        .module("formats")
        .out_dir(out.path())
        .generate()
        .expect("generates");
    let text = std::fs::read_to_string(out.path().join("formats.rs")).expect("formats.rs");
    assert!(text.contains("\"crate::formats::runtime::"), "{text}");
    assert!(!text.contains("\"crate::runtime::"));
}

#[test]
fn features_asked_for_are_built_in() {
    let out = tempfile::tempdir().expect("temp dir");
    openapi_poem::Builder::new(fixture("petstore.yaml"))
        .out_dir(out.path())
        .deserialize_responses()
        .generate()
        .expect("generates");
    let text = std::fs::read_to_string(out.path().join("api.rs")).expect("api.rs");
    // Pet is only written by the server: its Deserialize comes from the feature, here built in,
    // so the file reads it without a `cfg` on a feature the including crate does not have.
    let pet = text.find("pub struct Pet {").expect("Pet");
    let after = &text[pet..];
    let read = after.find("deserialize_object!(").expect("Pet is read");
    assert!(
        after[read..]
            .trim_start_matches("deserialize_object!(")
            .trim_start()
            .starts_with("Pet,")
    );
    assert!(!text.contains("deserialize-responses"), "{text}");

    // Without the feature, Error is not read at all.
    let plain = tempfile::tempdir().expect("temp dir");
    openapi_poem::Builder::new(fixture("petstore.yaml"))
        .out_dir(plain.path())
        .generate()
        .expect("generates");
    let text = std::fs::read_to_string(plain.path().join("api.rs")).expect("api.rs");
    let error = text.find("pub struct Error {").expect("Error");
    let end = text[error..].find("impl ").expect("Error's impls") + error;
    let between = &text[error..end];
    assert!(!between.contains("deserialize_object!"), "{between}");
    assert!(!text.contains("deserialize-responses"), "{text}");
}

#[test]
fn an_unchanged_file_is_not_written_again() {
    let out = tempfile::tempdir().expect("temp dir");
    let build = || {
        openapi_poem::Builder::new(fixture("objects.yaml"))
            .out_dir(out.path())
            .generate()
            .expect("generates")
    };
    build();
    let file = out.path().join("api.rs");
    let first = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    build();
    let second = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(first, second);
}

#[test]
fn a_document_that_cannot_be_generated_is_refused_by_pointer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("bad.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      responses:\n        '200':\n          description: x\n          content:\n            application/json:\n              schema: {$ref: '#/components/schemas/Missing'}\n",
    )
    .expect("write");
    let err = openapi_poem::Builder::new(&spec)
        .out_dir(dir.path())
        .generate()
        .expect_err("refused");
    let message = err.to_string();
    assert!(message.contains("bad.yaml#/paths"), "{message}");
    assert!(message.contains("Missing"), "{message}");
}

#[test]
fn a_module_path_that_is_not_rust_is_refused() {
    let out = tempfile::tempdir().expect("temp dir");
    for module in ["my-api", "api::", "2api", "a b"] {
        let err = openapi_poem::Builder::new(fixture("objects.yaml"))
            .module(module)
            .out_dir(out.path())
            .generate()
            .expect_err(module);
        assert!(
            err.to_string().contains("not a Rust path"),
            "{module}: {err}"
        );
    }
}
