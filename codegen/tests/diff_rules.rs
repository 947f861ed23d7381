//! One fixture pair per rule under `tests/diff/<case>/` (`base.yaml` → `spec.yaml`), each with
//! its report committed as `expected.json`. A case is named after the rule it shows
//! (`<rule-id>` or `<rule-id>--<variant>`), and the report must contain that rule.
//!
//! `BLESS=1 cargo test -p openapi-poem --test diff_rules` rewrites the expected reports; read
//! the diff before committing it.

use std::path::Path;

fn report(dir: &Path) -> serde_json::Value {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
    };
    let parse = |name: &str| {
        openapi_poem::parse::parse(&read(name))
            .unwrap_or_else(|e| panic!("{}/{name}: {} at {}", dir.display(), e.message, e.pointer))
    };
    let (old, new) = (parse("base.yaml"), parse("spec.yaml"));
    let changes = openapi_poem::diff::diff(&old, &new);
    let report = openapi_poem::diff::Report::new("base.yaml", "spec.yaml", changes);
    serde_json::to_value(&report).expect("serializes")
}

#[test]
fn every_rule_fixture_reports_what_is_committed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/diff")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 40,
        "at least 40 rule fixtures, found {}",
        cases.len()
    );
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    for dir in &cases {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let rule = name.split("--").next().unwrap().to_string();
        let actual = report(dir);
        let ids: Vec<&str> = actual["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        if !ids.contains(&rule.as_str()) {
            failures.push(format!("{name}: no `{rule}` in the report (found {ids:?})"));
        }
        let expected_path = dir.join("expected.json");
        let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
        if bless {
            std::fs::write(&expected_path, &text).expect("writes expected.json");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != text {
            let diff = similar::TextDiff::from_lines(expected.as_str(), text.as_str())
                .unified_diff()
                .header("expected.json", "report")
                .to_string();
            failures.push(format!(
                "{name}: the report differs from expected.json\n{diff}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
