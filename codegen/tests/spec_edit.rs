//! A maintainer adds an operation to a document and regenerates: a server written against the
//! old document stops compiling, and the compiler names the new operation's method.

use std::path::Path;
use std::process::Command;

const SERVER: &str = r#"
use petstore_edit::pets::*;
use petstore_edit::runtime::{Credentials, Hooks, RequestError};

pub struct Shop;

impl Hooks for Shop {
    type Principal = ();
    async fn authenticate(&self, _credentials: Credentials) -> Result<(), RequestError> {
        Ok(())
    }
    fn render_error(&self, _error: RequestError, _request: &poem::Request) -> poem::Response {
        poem::Response::default()
    }
}

impl PetsApi for Shop {
    async fn list_pets(&self, _input: ListPetsInput) -> ListPetsResponse {
        ListPetsResponse::Ok(petstore_edit::Json(petstore_edit::models::Pets(vec![])), None)
    }
    async fn create_pets(&self, _input: CreatePetsInput) -> CreatePetsResponse {
        CreatePetsResponse::Created
    }
    async fn show_pet_by_id(&self, _input: ShowPetByIdInput) -> ShowPetByIdResponse {
        ShowPetByIdResponse::Ok(petstore_edit::Json(petstore_edit::models::Pet { id: 1, name: "Rex".into(), tag: None }))
    }
}
"#;

fn build(dir: &Path, spec: &str) -> (bool, String) {
    let opts = openapi_poem::Options {
        crate_name: "petstore-edit",
        source: "petstore.yaml",
        runtime_path: Some(openapi_poem::RUNTIME_DIR),
        flags: "",
        types_per_crate: openapi_poem::emit::DEFAULT_TYPES_PER_CRATE,
        routes_apart: false,
    };
    let files = openapi_poem::generate(spec, &opts).expect("generates");
    openapi_poem::write(&dir.join("api"), &files).expect("writes the crate");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--workspace")
        // Share the workspace's compiled dependencies and exact versions.
        .env("CARGO_TARGET_DIR", root.join("target/spec-edit"))
        .output()
        .expect("cargo runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn adding_an_operation_makes_the_compiler_name_the_new_method() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::create_dir_all(dir.path().join("server/src")).expect("server dir");
    std::fs::write(
        dir.path().join("server/Cargo.toml"),
        "[package]\nname = \"shop\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[lib]\npath = \"src/lib.rs\"\n\n[dependencies]\npetstore-edit = { path = \"../api\" }\npoem = \"3.1\"\n",
    )
    .expect("manifest");
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[workspace]\nresolver = \"3\"\nmembers = [\"api\", \"server\"]\n",
    )
    .expect("workspace manifest");
    std::fs::copy(root.join("Cargo.lock"), dir.path().join("Cargo.lock")).expect("lock file");
    std::fs::write(dir.path().join("server/src/lib.rs"), SERVER).expect("server source");

    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/petstore.yaml"),
    )
    .expect("fixture");
    let (ok, stderr) = build(dir.path(), &original);
    assert!(
        ok,
        "the server must build against the original document:\n{stderr}"
    );

    let mut doc: serde_yaml::Value = serde_yaml::from_str(&original).expect("yaml");
    let new_op: serde_yaml::Value = serde_yaml::from_str(
        "operationId: deletePet\ntags: [pets]\ndescription: Delete a pet.\nparameters:\n  - {name: petId, in: path, required: true, description: The pet., schema: {type: string}}\nresponses:\n  '200': {description: Deleted.}\n",
    )
    .expect("yaml");
    doc["paths"]["/pets/{petId}"]["delete"] = new_op;
    let edited = serde_yaml::to_string(&doc).expect("yaml");
    let (ok, stderr) = build(dir.path(), &edited);
    assert!(!ok, "the stale server must not build");
    assert!(
        stderr.contains("E0046") && stderr.contains("delete_pet"),
        "the error must name the new method:\n{stderr}"
    );
}
