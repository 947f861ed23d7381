//! Which ways each generated type derives serde (`ir::Api::directions`): requests read,
//! responses and outgoing callbacks written, unreached types written, and closed under
//! reachability so that every derive finds the impls of its fields.

use openapi_poem::ir::{Api, Direction};
use openapi_poem::parse::parse;
use serde_json::json;

fn direction(api: &Api, name: &str) -> Direction {
    let i = api.types.iter().position(|t| t.name == name).expect(name);
    api.directions()[i]
}

/// What a read type holds is read; what a written type holds is written.
fn assert_closed(api: &Api) {
    let dirs = api.directions();
    for (t, d) in api.types.iter().zip(&dirs) {
        for held in api.types_reached([&t.schema]) {
            let h = direction(api, held);
            assert!(
                !d.read || h.read,
                "{} is read but holds {held}, which is not",
                t.name
            );
            assert!(
                !d.write || h.write,
                "{} is written but holds {held}, which is not",
                t.name
            );
        }
    }
}

fn schema_ref(name: &str) -> serde_json::Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

#[test]
fn requests_read_responses_write_and_unreached_types_write_what_they_hold() {
    let doc = json!({
        "openapi": "3.0.3",
        "info": { "title": "t", "version": "1" },
        "paths": { "/things": { "post": {
            "operationId": "create_thing",
            "requestBody": { "required": true, "content": { "application/json": { "schema": schema_ref("NewThing") } } },
            "responses": { "200": { "description": "ok", "content": { "application/json": { "schema": schema_ref("Thing") } } } }
        } } },
        "components": { "schemas": {
            "Label": { "type": "object", "properties": { "text": { "type": "string" } } },
            "NewThing": { "type": "object", "properties": { "label": schema_ref("Label") } },
            "Thing": { "type": "object", "properties": { "label": schema_ref("Label"), "owner": schema_ref("Owner") } },
            "Owner": { "type": "object", "properties": { "name": { "type": "string" } } },
            "Draft": { "type": "object", "properties": { "input": schema_ref("Input") } },
            "Input": { "type": "object", "properties": { "n": { "type": "integer" } } },
            "Ask": { "type": "object", "properties": { "input": schema_ref("Input") } }
        } }
    });
    // `Ask` is read too: make it a parameter's schema.
    let mut doc = doc;
    doc["paths"]["/things"]["get"] = json!({
        "operationId": "list_things",
        "parameters": [{ "name": "ask", "in": "query", "content": { "application/json": { "schema": schema_ref("Ask") } } }],
        "responses": { "204": { "description": "none" } }
    });
    let api = parse(&doc.to_string()).expect("parses");
    let both = Direction {
        read: true,
        write: true,
    };
    assert_eq!(
        direction(&api, "NewThing"),
        Direction {
            read: true,
            write: false
        }
    );
    assert_eq!(
        direction(&api, "Thing"),
        Direction {
            read: false,
            write: true
        }
    );
    assert_eq!(
        direction(&api, "Owner"),
        Direction {
            read: false,
            write: true
        }
    );
    assert_eq!(
        direction(&api, "Label"),
        both,
        "held by a request and by a response"
    );
    assert_eq!(
        direction(&api, "Draft"),
        Direction {
            read: false,
            write: true
        },
        "unreached"
    );
    assert_eq!(
        direction(&api, "Input"),
        both,
        "read through Ask, written through Draft"
    );
    assert_closed(&api);
}

#[test]
fn bankd_and_every_fixture_are_closed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut specs = vec![root.join("../spec/openapi.yaml")];
    for entry in std::fs::read_dir(root.join("tests/fixtures")).expect("fixtures") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            specs.push(path);
        }
    }
    let mut checked = 0;
    for spec in &specs {
        // Fixtures of refusals do not parse; they have no types to check.
        if let Ok(api) = openapi_poem::parse::parse_file(spec) {
            assert_closed(&api);
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "only {checked} of {} documents parsed",
        specs.len()
    );
}
