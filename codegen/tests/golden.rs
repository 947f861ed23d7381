//! Golden files: every fixture document under `tests/fixtures/` generates exactly the crate
//! committed under `tests/expected/<name>/`. The expected crates are workspace members, so every
//! `cargo build --workspace` / `cargo test --workspace` also compiles them.
//!
//! After an intended generator change: `BLESS=1 cargo test -p openapi-poem --test golden`.

use std::path::{Path, PathBuf};

/// Types per crate for the `split_*` fixtures.
const SPLIT_TYPES_PER_CRATE: usize = 3;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fixtures exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_fixture_generates_its_committed_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("BLESS").is_some();
    let mut stale = Vec::new();
    for spec in fixtures() {
        let name = spec
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 name")
            .to_string();
        let source = format!("codegen/tests/fixtures/{name}.yaml");
        let crate_name = format!("fixture-{}", name.replace('_', "-"));
        let split = name.starts_with("split_");
        let routes_apart = name.starts_with("routes_apart");
        // What the header names: the command that writes this crate (as BLESS does).
        let mut flags = format!(
            "--out codegen/tests/expected/{name} --crate-name {crate_name} --runtime-path ../../../runtime"
        );
        if split {
            flags.push_str(&format!(" --types-per-crate {SPLIT_TYPES_PER_CRATE}"));
        }
        if routes_apart {
            flags.push_str(" --routes-apart");
        }
        let opts = openapi_poem::Options {
            crate_name: &crate_name,
            source: &source,
            runtime_path: Some("../../../runtime"),
            flags: &flags,
            // `split_*` fixtures are the layout of a large document at a small scale.
            types_per_crate: if split {
                SPLIT_TYPES_PER_CRATE
            } else {
                openapi_poem::emit::DEFAULT_TYPES_PER_CRATE
            },
            // `routes_apart*` fixtures: the glue as a crate of its own at `routes/`.
            routes_apart,
        };
        let files =
            openapi_poem::generate_file(&spec, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = root.join("tests/expected").join(&name);
        if bless {
            openapi_poem::write(&expected, &files).expect("write expected files");
        } else if let Some(diff) =
            openapi_poem::check(&expected, &files).expect("read expected files")
        {
            stale.push(format!("== {name}\n{diff}"));
        }
    }
    assert!(
        stale.is_empty(),
        "generated output changed (BLESS=1 to accept):\n{}",
        stale.join("\n")
    );
}

#[test]
fn there_is_one_expected_crate_per_fixture_and_the_set_is_complete() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names: Vec<String> = fixtures()
        .iter()
        .map(|p| {
            p.file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for required in [
        "objects",
        "nested_objects",
        "arrays",
        "maps",
        "enums",
        "nullable",
        "all_of",
        "one_of",
        "formats",
        "parameters",
        "validation",
        "multipart",
        "responses",
        "security",
        "keywords",
        "petstore",
        "names",
        "security_schemes",
        "schemas",
        "callbacks",
        "media_types",
        "split_types",
        "routes_apart",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "fixture {required}.yaml is missing"
        );
    }
    let mut expected: Vec<String> = std::fs::read_dir(root.join("tests/expected"))
        .expect("tests/expected exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    expected.sort();
    assert_eq!(
        names, expected,
        "tests/expected must hold exactly one crate per fixture"
    );
    let workspace =
        std::fs::read_to_string(root.join("../Cargo.toml")).expect("workspace manifest");
    assert!(
        workspace.contains("\"codegen/tests/expected/*\""),
        "the expected crates must be workspace members so that they are compiled"
    );
}

#[test]
fn generation_is_deterministic() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/openapi.yaml"))
            .expect("the bankd document");
    let opts = openapi_poem::Options {
        crate_name: "bank-api",
        source: "spec/openapi.yaml",
        runtime_path: Some("../codegen/runtime"),
        flags: "",
        types_per_crate: openapi_poem::emit::DEFAULT_TYPES_PER_CRATE,
        routes_apart: false,
    };
    let a = openapi_poem::generate(&text, &opts).expect("generates");
    let b = openapi_poem::generate(&text, &opts).expect("generates");
    assert_eq!(a, b);
}

/// `check` and a plain `generate` keep a crate's routes apart without `--routes-apart`: the
/// routes crate on disk says so (CI checks bankd's crate with no flags).
#[test]
fn the_routes_crate_on_disk_keeps_the_routes_apart() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let check = |out: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_openapi-poem"))
            .current_dir(&root)
            .args([
                "check",
                "--spec",
                "codegen/tests/fixtures/routes_apart.yaml",
            ])
            .args(["--out", out, "--crate-name", "fixture-routes-apart"])
            .args(["--runtime-path", "../../../runtime"])
            .output()
            .expect("the generator runs")
    };
    let kept = check("codegen/tests/expected/routes_apart");
    assert!(
        kept.status.success(),
        "{}",
        String::from_utf8_lossy(&kept.stderr)
    );
    // Without the routes crate, the same command wants the glue back in the crate.
    let dir = std::env::temp_dir().join(format!("routes-apart-{}", std::process::id()));
    let copy = dir.join("codegen/tests/expected/routes_apart");
    std::fs::create_dir_all(&copy).expect("a scratch dir");
    for entry in ["Cargo.toml", "src"] {
        let status = std::process::Command::new("cp")
            .args(["-r"])
            .arg(root.join("codegen/tests/expected/routes_apart").join(entry))
            .arg(&copy)
            .status()
            .expect("cp runs");
        assert!(status.success());
    }
    let moved = std::process::Command::new(env!("CARGO_BIN_EXE_openapi-poem"))
        .current_dir(&dir)
        .args(["check", "--spec"])
        .arg(root.join("codegen/tests/fixtures/routes_apart.yaml"))
        .args(["--out", "codegen/tests/expected/routes_apart"])
        .args([
            "--crate-name",
            "fixture-routes-apart",
            "--runtime-path",
            "../../../runtime",
        ])
        .output()
        .expect("the generator runs");
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        moved.status.code(),
        Some(1),
        "the glue is missing from src/"
    );
    assert!(String::from_utf8_lossy(&moved.stderr).contains("src/server.rs"));
}
