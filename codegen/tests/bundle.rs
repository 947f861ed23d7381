//! Documents over several files and path item `$ref`s, bundled into one document
//! (`openapi_poem::bundle`): what each reference becomes, and the refusals.

use std::path::{Path, PathBuf};

use openapi_poem::bundle::{bundle, bundle_file, read_document};
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/multi_file.yaml")
}

/// Every `$ref` in `v` (and every discriminator mapping value), with where it is.
fn refs(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let p = format!("{at}/{k}");
                match (k.as_str(), child) {
                    ("$ref", Value::String(r)) => out.push((at.to_string(), r.clone())),
                    ("mapping", Value::Object(m)) => {
                        for (name, r) in m {
                            out.push((format!("{p}/{name}"), r.as_str().unwrap_or("").into()));
                        }
                    }
                    _ => refs(child, &p, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                refs(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn a_document_over_several_files_becomes_one_whose_references_all_point_into_it() {
    let doc = bundle_file(&fixture()).expect("bundles");
    let mut all = Vec::new();
    // Extensions are not read (the path item under `x-path-items` was inlined where used).
    let mut read = doc.clone();
    read.as_object_mut()
        .expect("a document")
        .retain(|k, _| !k.starts_with("x-"));
    refs(&read, "#", &mut all);
    assert!(!all.is_empty());
    for (at, r) in &all {
        // Schema pointers into the document stay as written; anything else points into
        // components, and every reference resolves.
        assert!(
            r.starts_with("#/"),
            "{at}: `{r}` still points into another file"
        );
        let target = r.trim_start_matches('#').replace("%25", "%");
        assert!(
            doc.pointer(&target).is_some(),
            "{at}: `{r}` does not resolve"
        );
    }
    let schemas = &doc["components"]["schemas"];
    // A root component that was a `$ref` into another file took that file's content.
    assert_eq!(schemas["Pet"]["description"], "A pet.");
    assert_eq!(
        schemas["Pet"]["properties"]["parent"]["$ref"], "#/components/schemas/Pet",
        "Pet.yaml's reference to itself is the adopted component"
    );
    assert_eq!(
        schemas["Pet"]["properties"]["tag"]["$ref"],
        "#/components/schemas/Tag"
    );
    assert_eq!(schemas["Tag"]["maxLength"], 32);
    // The root's own `Error` kept its name; the other file's took the next one.
    assert_eq!(schemas["Error"]["properties"]["code"]["type"], "integer");
    assert_eq!(schemas["Error2"]["properties"]["code"]["type"], "string");
    assert_eq!(
        doc["components"]["responses"]["BadRequest"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Error2"
    );
    // Recursive through its own file.
    assert_eq!(
        schemas["Node"]["properties"]["children"]["items"]["$ref"],
        "#/components/schemas/Node"
    );
    // The discriminator mapping, a bare name and a pointer, both into Animal.yaml.
    assert_eq!(
        schemas["Animal"]["discriminator"]["mapping"],
        json!({"cat": "#/components/schemas/Cat", "dog": "#/components/schemas/Dog"})
    );
    assert_eq!(schemas["Cat"]["properties"]["lives"]["maximum"], 9);
    // Path items: the other file's became the path item; the one in this file was inlined,
    // its `$ref`'s summary kept.
    assert_eq!(doc["paths"]["/pets"]["get"]["operationId"], "listPets");
    assert_eq!(
        doc["paths"]["/pets"]["get"]["parameters"][0]["$ref"],
        "#/components/parameters/Limit"
    );
    assert_eq!(
        doc["paths"]["/animals"]["summary"],
        "Animals, written once elsewhere in this file."
    );
    assert_eq!(
        doc["paths"]["/animals"]["get"]["description"],
        "Every animal, cats and dogs."
    );
    // Copied once, however often referenced.
    let copies = schemas
        .as_object()
        .expect("schemas")
        .keys()
        .collect::<Vec<_>>();
    assert_eq!(
        copies,
        [
            "Pet", "Error", "Tag", "Error2", "Animal", "Cat", "Dog", "Owner", "Node"
        ],
        "the copies follow the root's own components, in the order they were named"
    );
}

#[test]
fn the_bundled_fixture_generates_and_the_ir_sees_every_operation() {
    let api = openapi_poem::parse::parse_file(&fixture()).expect("parses");
    let ids: Vec<&str> = api.operations.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["listPets", "addPet", "get_animals", "getOwner"]);
}

#[test]
fn a_document_whose_references_stay_in_components_is_returned_as_it_was() {
    let doc = read_document(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/petstore.yaml"),
        )
        .expect("fixture"),
        "#",
    )
    .expect("parses");
    assert_eq!(bundle(doc.clone(), None).expect("bundles"), doc);
}

fn refusal(doc: Value, path: Option<PathBuf>) -> openapi_poem::Error {
    bundle(doc, path).expect_err("refused")
}

fn with_ref(reference: &str) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"responses": {"200": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": reference}}}
        }}}}}
    })
}

#[test]
fn references_that_cannot_be_followed_are_refused_where_they_are_written() {
    let at = "#/paths/~1a/get/responses/200/content/application~1json/schema";
    let e = refusal(with_ref("other.yaml#/Pet"), None);
    assert_eq!(e.pointer, at);
    assert!(e.message.contains("needs the document's path"), "{e}");

    let e = refusal(with_ref("https://example.com/s.yaml#/Pet"), None);
    assert!(e.message.contains("remote"), "{e}");

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("openapi.yaml");
    std::fs::write(&root, "{}").expect("write");
    let e = refusal(with_ref("missing.yaml"), Some(root.clone()));
    assert_eq!(e.pointer, at);
    assert!(e.message.contains("cannot read"), "{e}");

    std::fs::write(dir.path().join("s.yaml"), "Pet: {type: string}").expect("write");
    let e = refusal(with_ref("s.yaml#/Dog"), Some(root.clone()));
    assert!(e.message.contains("does not exist"), "{e}");

    let e = refusal(with_ref("s.yaml#Pet"), Some(root));
    assert!(e.message.contains("JSON pointer"), "{e}");

    let mut cycle = with_ref("#/components/schemas/X");
    cycle["paths"]["/b"] = json!({"$ref": "#/x-items/b"});
    cycle["x-items"] = json!({"b": {"$ref": "#/x-items/c"}, "c": {"$ref": "#/x-items/b"}});
    let e = refusal(cycle, None);
    assert_eq!(e.pointer, "#/paths/~1b");
    assert!(e.message.contains("refers to itself"), "{e}");
}

#[test]
fn a_non_schema_reference_outside_components_is_copied_into_its_section() {
    let mut doc = with_ref("#/components/schemas/X");
    doc["components"] = json!({"schemas": {"X": {"type": "string"}}});
    doc["paths"]["/a"]["get"]["parameters"] =
        json!([{"name": "q", "in": "query", "schema": {"type": "string"}}]);
    doc["paths"]["/b"] = json!({"get": {
        "parameters": [{"$ref": "#/paths/~1a/get/parameters/0"}],
        "responses": {"200": {"$ref": "#/paths/~1a/get/responses/200"}}
    }});
    let out = bundle(doc, None).expect("bundles");
    // A parameter is named by its `name`; another part by its pointer's last segments.
    assert_eq!(
        out["paths"]["/b"]["get"]["parameters"][0]["$ref"],
        "#/components/parameters/q"
    );
    assert_eq!(out["components"]["parameters"]["q"]["in"], "query");
    assert_eq!(
        out["paths"]["/b"]["get"]["responses"]["200"]["$ref"],
        "#/components/responses/get_responses_200"
    );
    assert_eq!(
        out["components"]["responses"]["get_responses_200"]["description"],
        "ok"
    );
    // The parts themselves are still where they were.
    assert_eq!(out["paths"]["/a"]["get"]["parameters"][0]["name"], "q");
}

#[test]
fn a_path_item_served_at_two_paths_names_its_operations_once() {
    let mut doc = with_ref("#/components/schemas/X");
    doc["components"] = json!({"schemas": {"X": {"type": "string"}}});
    doc["paths"]["/a"]["get"]["operationId"] = json!("getA");
    doc["paths"]["/b"] = json!({"$ref": "#/paths/~1a"});
    let out = bundle(doc.clone(), None).expect("bundles");
    assert_eq!(out["paths"]["/a"]["get"]["operationId"], "getA");
    assert!(out["paths"]["/b"]["get"].get("operationId").is_none());
    assert_eq!(
        out["paths"]["/b"]["get"]["responses"],
        doc["paths"]["/a"]["get"]["responses"]
    );
    let api = openapi_poem::parse::parse(&out.to_string()).expect("parses");
    let ids: Vec<&str> = api.operations.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["getA", "get_b"]);
}

#[test]
fn a_component_that_is_a_reference_to_another_is_followed_and_a_cycle_refused() {
    let mut doc = with_ref("#/components/schemas/X");
    doc["components"] = json!({
        "schemas": {"X": {"type": "string"}},
        "parameters": {
            "Alias": {"$ref": "#/components/parameters/Q"},
            "Q": {"name": "q", "in": "query", "schema": {"type": "string"}},
            "Loop": {"$ref": "#/components/parameters/Loop2"},
            "Loop2": {"$ref": "#/components/parameters/Loop"}
        }
    });
    doc["paths"]["/a"]["get"]["parameters"] = json!([{"$ref": "#/components/parameters/Alias"}]);
    let api = openapi_poem::parse::parse(&doc.to_string()).expect("parses");
    assert_eq!(api.operations[0].params[0].name, "q");

    doc["paths"]["/a"]["get"]["parameters"] = json!([{"$ref": "#/components/parameters/Loop"}]);
    let e = openapi_poem::parse::parse(&doc.to_string()).expect_err("refused");
    assert_eq!(e.pointer, "#/paths/~1a/get/parameters/0");
    assert!(e.message.contains("refers to itself"), "{e}");
}

#[test]
fn a_callback_written_as_a_reference_is_read_in_place() {
    let mut doc = with_ref("#/components/schemas/X");
    doc["components"] = json!({
        "schemas": {"X": {"type": "string"}},
        "callbacks": {"Ev": {"{$request.body#/url}": {"post": {
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/X"}}}},
            "responses": {"200": {"description": "ok"}}
        }}}}
    });
    doc["paths"]["/a"]["get"]["callbacks"] =
        json!({"onEvent": {"$ref": "#/components/callbacks/Ev"}});
    let out = bundle(doc.clone(), None).expect("bundles");
    assert_eq!(
        out["paths"]["/a"]["get"]["callbacks"]["onEvent"],
        doc["components"]["callbacks"]["Ev"]
    );
    let api = openapi_poem::parse::parse(&doc.to_string()).expect("parses");
    assert_eq!(api.operations[0].callbacks.len(), 1);
}

#[test]
fn a_schema_pointer_is_followed_in_the_document_as_written() {
    // A pointer into the siblings of a `$ref`, which a typed document drops (APIs.guru's
    // conversion of dnd5eapi.co writes them).
    let mut doc = with_ref("#/components/schemas/X");
    doc["components"] = json!({"schemas": {"X": {"type": "string"}}});
    doc["paths"]["/a"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["extra"] =
        json!({"n": {"type": "integer", "format": "int32"}});
    doc["paths"]["/b"] = json!({"get": {"responses": {"200": {
        "description": "ok",
        "content": {"application/json": {"schema": {
            "$ref": "#/paths/~1a/get/responses/200/content/application~1json/schema/extra/n"
        }}}
    }}}});
    let api = openapi_poem::parse::parse(&doc.to_string()).expect("parses");
    assert_eq!(api.operations.len(), 2);
}

#[test]
fn a_schema_pointer_into_another_section_of_components_still_resolves() {
    // rev.ai (APIs.guru) points a schema at a response; read as it always was (any value),
    // whether or not the document as written is kept.
    let mut doc = with_ref("#/components/responses/R");
    doc["components"] = json!({"responses": {"R": {"description": "text"}}});
    let api = openapi_poem::parse::parse(&doc.to_string()).expect("parses");
    assert_eq!(api.operations.len(), 1);
}
