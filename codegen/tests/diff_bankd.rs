//! `codegen diff` on bankd's own document: a set of edits made in code, the report they give,
//! and the server side of that report held to the compiler (a stub server written against the
//! unedited document, built against the crate of the edited one).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use openapi_poem::diff::{Change, Level};
use serde_yaml::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn document() -> Value {
    let text = std::fs::read_to_string(root().join("spec/openapi.yaml")).expect("spec");
    serde_yaml::from_str(&text).expect("yaml")
}

fn schema<'v>(doc: &'v mut Value, name: &str) -> &'v mut Value {
    &mut doc["components"]["schemas"][name]
}

/// Removes an operation the server implements.
fn remove_operation(doc: &mut Value) {
    let item = doc["paths"]["/counterparties/{counterparty_id}"]
        .as_mapping_mut()
        .expect("path item");
    item.remove("delete")
        .expect("DELETE /counterparties/{counterparty_id}");
}

/// Schema edits that reach no further than types (the compiler type-checks every handler).
fn edit_schemas(doc: &mut Value) {
    // A new required request property.
    let create = schema(doc, "CreateBookTransferRequest");
    create["properties"]["memo"] =
        serde_yaml::from_str("{type: string, description: A memo.}").unwrap();
    create["required"]
        .as_sequence_mut()
        .unwrap()
        .push("memo".into());
    // A response property removed.
    let transfer = schema(doc, "BookTransfer");
    transfer["properties"]
        .as_mapping_mut()
        .unwrap()
        .remove("description");
    transfer["required"]
        .as_sequence_mut()
        .unwrap()
        .retain(|v| v.as_str() != Some("description"));
    // A new enum value in a response.
    schema(doc, "BookTransferStatus")["enum"]
        .as_sequence_mut()
        .unwrap()
        .push("PENDING".into());
    // One bound loosened, one tightened, on a request.
    let counterparty = schema(doc, "CreateCounterpartyRequest");
    counterparty["properties"]["name"]["maxLength"] = 300.into();
    counterparty["properties"]["description"]["maxLength"] = 100.into();
}

fn report(edit: fn(&mut Value)) -> Vec<Change> {
    let original = document();
    let mut edited = original.clone();
    edit(&mut edited);
    let parse =
        |v: &Value| openapi_poem::parse::parse(&serde_yaml::to_string(v).unwrap()).expect("parses");
    openapi_poem::diff::diff(&parse(&original), &parse(&edited))
}

fn find<'c>(changes: &'c [Change], id: &str, pointer_end: &str) -> &'c Change {
    changes
        .iter()
        .find(|c| c.id == id && c.pointer.ends_with(pointer_end))
        .unwrap_or_else(|| panic!("no {id} at …{pointer_end} in {changes:#?}"))
}

#[test]
fn the_report_of_edits_to_the_bankd_document() {
    let changes = report(|doc| {
        remove_operation(doc);
        edit_schemas(doc);
    });

    let removed = find(&changes, "operation-removed", "/delete");
    assert_eq!(removed.level, Level::Breaking);
    assert_eq!(
        removed.operation.as_deref(),
        Some("DELETE /counterparties/{counterparty_id}")
    );
    assert!(removed.server.breaks_build);
    assert_eq!(
        removed.server.handlers,
        ["CounterpartiesApi::delete_counterparty"]
    );

    let memo = find(
        &changes,
        "request-required-property-added",
        "/CreateBookTransferRequest/properties/memo",
    );
    assert_eq!(memo.level, Level::Breaking);
    assert_eq!(memo.operation.as_deref(), Some("POST /transfers/book"));
    assert!(
        !memo.server.breaks_build,
        "a handler ignores a field it does not know"
    );
    assert_eq!(
        memo.server.handlers,
        ["BookTransfersApi::create_book_transfer"]
    );
    assert_eq!(memo.server.items, ["models::CreateBookTransferRequest"]);

    let description = find(
        &changes,
        "response-property-removed",
        "/BookTransfer/properties/description",
    );
    assert_eq!(description.level, Level::Breaking);
    assert!(description.server.breaks_build);
    let handlers: BTreeSet<&str> = description
        .server
        .handlers
        .iter()
        .map(String::as_str)
        .collect();
    for h in [
        "BookTransfersApi::create_book_transfer",
        "BookTransfersApi::get_book_transfer",
        "BookTransfersApi::list_book_transfers",
        "BookTransfersApi::clear_book_transfer",
        "BookTransfersApi::cancel_book_transfer",
    ] {
        assert!(
            handlers.contains(h),
            "{h} builds a BookTransfer: {handlers:?}"
        );
    }
    assert_eq!(description.operations.len(), handlers.len());
    assert_eq!(
        description.operation, None,
        "several operations share the schema"
    );

    let pending = find(&changes, "response-enum-value-added", "/BookTransferStatus");
    assert_eq!(pending.level, Level::Warning);
    assert!(
        !pending.server.breaks_build,
        "handlers build the values they know"
    );
    assert!(pending.message.contains("PENDING"));

    let looser = find(
        &changes,
        "request-max-length-increased",
        "/CreateCounterpartyRequest/properties/name",
    );
    assert_eq!(looser.level, Level::Info);
    assert_eq!(looser.operation.as_deref(), Some("POST /counterparties"));
    assert_eq!(
        looser.server.handlers,
        ["CounterpartiesApi::create_counterparty"]
    );
    assert!(!looser.server.breaks_build);
    let tighter = find(
        &changes,
        "request-max-length-decreased",
        "/CreateCounterpartyRequest/properties/description",
    );
    assert_eq!(tighter.level, Level::Breaking);
    assert!(
        !tighter.server.breaks_build,
        "bounds are checked by the generated glue"
    );

    // Nothing else: each edit is reported once, by its own rule.
    let ids: BTreeSet<&str> = changes.iter().map(|c| c.id.as_str()).collect();
    let expected: BTreeSet<&str> = [
        "operation-removed",
        "request-required-property-added",
        "response-property-removed",
        "response-enum-value-added",
        "request-enum-value-added",
        "request-max-length-increased",
        "request-max-length-decreased",
    ]
    .into();
    assert!(
        ids.is_subset(&expected),
        "unexpected rules: {:?}",
        ids.difference(&expected).collect::<Vec<_>>()
    );
}

/// Builds `api` (generated from `spec`) and the stub (written against the unedited document);
/// returns the handlers the compiler names in the stub's errors.
fn compiler_handlers(ws: &Path, spec: &str) -> BTreeSet<String> {
    let opts = openapi_poem::Options {
        crate_name: "bank-api",
        source: "spec/openapi.yaml",
        runtime_path: Some(openapi_poem::RUNTIME_DIR),
        flags: "",
        types_per_crate: openapi_poem::emit::DEFAULT_TYPES_PER_CRATE,
        routes_apart: false,
    };
    let files = openapi_poem::generate(spec, &opts).expect("generates");
    openapi_poem::write(&ws.join("api"), &files).expect("writes the crate");
    let out = Command::new(env!("CARGO"))
        .args([
            "check",
            "--quiet",
            "--message-format=json",
            "-p",
            "stub",
            "--manifest-path",
        ])
        .arg(ws.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", root().join("target/diff-compiler"))
        .output()
        .expect("cargo runs");
    let stub = std::fs::read_to_string(ws.join("stub/src/lib.rs")).expect("stub");
    let mut named = BTreeSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let m = &msg["message"];
        if msg["reason"] != "compiler-message" || m["level"] != "error" {
            continue;
        }
        let span = m["spans"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["is_primary"] == true));
        let Some(span) = span.filter(|s| {
            s["file_name"]
                .as_str()
                .is_some_and(|f| f.ends_with("stub/src/lib.rs"))
        }) else {
            panic!("an error outside the stub: {}", m["rendered"]);
        };
        let line_no = span["line_start"].as_u64().unwrap() as usize;
        named.extend(handler_at(&stub, line_no, m["message"].as_str().unwrap()));
    }
    assert!(
        named.is_empty() == out.status.success(),
        "errors and the exit status disagree:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    named
}

/// The handler(s) an error at `line` (1-based) of the stub is about: the method it is in, or,
/// on an `impl` line, the trait items the message says are missing.
fn handler_at(stub: &str, line: usize, message: &str) -> Vec<String> {
    let lines: Vec<&str> = stub.lines().collect();
    let trait_of = |upto: usize| {
        lines[..upto]
            .iter()
            .rev()
            .find_map(|l| l.trim().strip_prefix("impl crate::"))
            .and_then(|l| l.split(" for ").next())
            .and_then(|p| p.rsplit("::").next())
            .map(str::to_string)
            .expect("inside an impl")
    };
    let here = lines[line - 1].trim();
    if here.starts_with("impl crate::") {
        let t = trait_of(line);
        return message
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|m| format!("{t}::{m}"))
            .collect();
    }
    // Handlers are `async fn`, the callback builders plain `fn`.
    let method = lines[..line]
        .iter()
        .rev()
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix("async fn ")
                .or_else(|| l.strip_prefix("fn "))
        })
        .and_then(|l| l.split('(').next())
        .expect("inside a method");
    vec![format!("{}::{method}", trait_of(line))]
}

fn reported_handlers(changes: &[Change]) -> BTreeSet<String> {
    changes
        .iter()
        .filter(|c| c.server.breaks_build)
        .flat_map(|c| c.server.handlers.iter().cloned())
        .collect()
}

#[test]
fn the_handlers_the_report_says_break_are_those_the_compiler_names() {
    let ws = tempfile::tempdir().expect("temp dir");
    let ws = ws.path();
    let original = document();
    let original_text = serde_yaml::to_string(&original).unwrap();
    let api = openapi_poem::parse::parse(&original_text).expect("parses");
    std::fs::create_dir_all(ws.join("stub/src")).unwrap();
    std::fs::write(
        ws.join("stub/Cargo.toml"),
        openapi_poem::emit::stub::contact_manifest(&api, "stub", "bank-api", "../api"),
    )
    .unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[workspace]\nresolver = \"3\"\nmembers = [\"api\", \"stub\"]\n",
    )
    .unwrap();
    std::fs::copy(root().join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    std::fs::write(
        ws.join("stub/src/lib.rs"),
        openapi_poem::emit::stub::contact_server(&api, "bank_api"),
    )
    .unwrap();

    assert_eq!(
        compiler_handlers(ws, &original_text),
        BTreeSet::new(),
        "the stub builds against its own document"
    );

    // Name resolution stops the compiler before type checking, so the two kinds of edit are
    // built apart.
    for edit in [remove_operation as fn(&mut Value), edit_schemas] {
        let mut edited = original.clone();
        edit(&mut edited);
        let text = serde_yaml::to_string(&edited).unwrap();
        let reported = reported_handlers(&report(edit));
        assert!(!reported.is_empty(), "each edit breaks some handler");
        assert_eq!(compiler_handlers(ws, &text), reported);
    }
}
