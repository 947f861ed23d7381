//! `codegen diff` as a maintainer and CI run it: formats, exit statuses, the release gate.

use std::path::Path;
use std::process::Command;

const BASE: &str = r#"
openapi: 3.0.3
info: {title: Shop, version: "1.4"}
paths:
  /pets:
    get:
      operationId: listPets
      tags: [pets]
      responses:
        '200':
          description: The pets.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
components:
  schemas:
    Pet:
      type: object
      required: [id]
      properties:
        id: {type: integer}
        kind: {type: string, enum: [cat, dog]}
"#;

fn run(dir: &Path, base: &str, spec: &str, extra: &[&str]) -> (i32, String, String) {
    std::fs::write(dir.join("base.yaml"), base).unwrap();
    std::fs::write(dir.join("spec.yaml"), spec).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_openapi-poem"))
        .current_dir(dir)
        .args(["diff", "--base", "base.yaml", "--spec", "spec.yaml"])
        .args(extra)
        .output()
        .expect("codegen runs");
    (
        out.status.code().expect("exit status"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn exit_statuses_follow_the_worst_level() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = run(dir.path(), BASE, BASE, &[]);
    assert_eq!((code, out.contains("0 change(s)")), (0, true), "{out}");

    // A new enum value in a response: a warning, not a failure unless asked.
    let warning = BASE.replace("enum: [cat, dog]", "enum: [cat, dog, bird]");
    let (code, out, _) = run(dir.path(), BASE, &warning, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("response-enum-value-added"), "{out}");
    let (code, _, _) = run(dir.path(), BASE, &warning, &["--fail-on", "warning"]);
    assert_eq!(code, 1);

    // A removed response property: breaking.
    let breaking = BASE.replace("        kind: {type: string, enum: [cat, dog]}\n", "");
    let (code, out, _) = run(dir.path(), BASE, &breaking, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("breaking response-property-removed"), "{out}");

    // Unreadable or refused documents: 2, naming the file.
    let (code, _, err) = run(dir.path(), BASE, "openapi: 3.0.3\ninfo: [", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("spec.yaml"), "{err}");
}

#[test]
fn the_release_gate_lets_a_new_major_version_break() {
    let dir = tempfile::tempdir().unwrap();
    let breaking = BASE.replace("        kind: {type: string, enum: [cat, dog]}\n", "");
    let gate = ["--allow-major-bump"];
    let (code, _, _) = run(dir.path(), BASE, &breaking, &gate);
    assert_eq!(code, 1, "a breaking change within 1.x fails the gate");
    let minor = breaking.replace("version: \"1.4\"", "version: \"1.5\"");
    let (code, _, _) = run(dir.path(), BASE, &minor, &gate);
    assert_eq!(code, 1, "a minor version does not excuse it");
    let major = breaking.replace("version: \"1.4\"", "version: \"2.0\"");
    let (code, out, err) = run(dir.path(), BASE, &major, &gate);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("response-property-removed"),
        "still reported: {out}"
    );
    assert!(err.contains("major"), "{err}");
}

#[test]
fn markdown_and_json_reports() {
    let dir = tempfile::tempdir().unwrap();
    let spec = BASE.replace("enum: [cat, dog]", "enum: [cat]");
    let (_, md, _) = run(dir.path(), BASE, &spec, &["--format", "markdown"]);
    assert!(
        md.starts_with("## API changes: `base.yaml` → `spec.yaml`"),
        "{md}"
    );
    assert!(
        md.contains("| `response-enum-value-removed` | GET /pets |"),
        "{md}"
    );
    let (code, json, _) = run(dir.path(), BASE, &spec, &["--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["base"], "base.yaml");
    assert_eq!(v["summary"]["info"], 1);
    let c = &v["changes"][0];
    assert_eq!(c["id"], "response-enum-value-removed");
    assert_eq!(c["level"], "info");
    assert_eq!(c["operation"], "GET /pets");
    assert_eq!(c["pointer"], "#/components/schemas/Pet/properties/kind");
    assert_eq!(
        c["server"]["breaks_build"], true,
        "a handler that built `dog` breaks"
    );
    assert_eq!(c["server"]["handlers"][0], "PetsApi::list_pets");
}
