//! The schema keywords of `codegen/tests/fixtures/schemas.yaml` are enforced on request bodies,
//! every violation named at once: readOnly fields are never required of a request, integer,
//! number and boolean enums, sized and unsigned integer formats, multipleOf, uniqueItems,
//! min/maxProperties and anyOf.

use std::collections::BTreeMap;

use fixture_schemas::Document;
use fixture_schemas::models::{Shape, Thing};

#[path = "support/json_body.rs"]
mod json_body;

async fn parse(json: serde_json::Value) -> Result<Thing, BTreeMap<String, String>> {
    json_body::parse::<Thing, Document>(json).await
}

#[tokio::test]
async fn a_request_without_the_read_only_fields_is_complete() {
    let thing = parse(serde_json::json!({"name": "a", "secret": "s", "level": 2}))
        .await
        .expect("accepted");
    assert_eq!(thing.id, None);
    assert_eq!(thing.secret.as_deref(), Some("s"));
    // A required field that is neither read- nor write-only is still required.
    let missing = parse(serde_json::json!({"secret": "s"}))
        .await
        .expect_err("refused");
    assert_eq!(
        missing.keys().collect::<Vec<_>>(),
        ["level", "name"],
        "{missing:?}"
    );
}

#[tokio::test]
async fn every_keyword_violation_is_named() {
    let errors = parse(serde_json::json!({
        "name": "a", "secret": "s",
        "level": 4,                 // integer enum [1, 2, 3]
        "ratio": 1.0,               // number enum [0.5, 1.5]
        "flag": false,              // boolean enum [true]
        "tiny": 128,                // int8
        "small": -40000,            // int16
        "byte_value": 256,          // uint8
        "count": -1,                // uint32
        "weight": 0.7,              // multipleOf 0.5
        "step": 12,                 // multipleOf 5
        "labels": ["x", "y", "x"],  // uniqueItems
        "attributes": {},           // minProperties 1
        "shape": "round"            // anyOf: Circle, Square or a number
    }))
    .await
    .expect_err("refused");
    let fields: Vec<&str> = errors.keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "attributes",
            "byte_value",
            "count",
            "flag",
            "labels",
            "level",
            "ratio",
            "shape",
            "small",
            "step",
            "tiny",
            "weight"
        ],
        "{errors:?}"
    );
    assert_eq!(errors["weight"], "must be a multiple of 0.5");
    assert_eq!(errors["labels"], "must not contain duplicate items");
    assert_eq!(errors["attributes"], "must have at least 1 properties");
    let too_many = parse(serde_json::json!({
        "name": "a", "secret": "s", "level": 1,
        "attributes": {"a": 1, "b": 2, "c": 3, "d": 4}
    }))
    .await
    .expect_err("refused");
    assert_eq!(too_many["attributes"], "must have at most 3 properties");
}

#[tokio::test]
async fn values_at_the_edges_and_any_of_members_are_accepted() {
    let thing = parse(serde_json::json!({
        "name": "a", "secret": "s", "level": 3, "ratio": 1.5, "flag": true,
        "tiny": -128, "small": 32767, "byte_value": 255, "count": 4294967295u64,
        "big": 18446744073709551615u64, "weight": 2.5, "step": -15,
        "labels": ["x", "y"], "attributes": {"a": 1, "b": "two", "c": null},
        "shape": {"radius": 1.0, "side": 2.0},
        "tree": {"value": 1, "next": {"value": 2, "children": [{"value": 3}]}},
        "owner": {"name": "p", "pet": {"name": "q", "owner": {"name": "r"}}}
    }))
    .await
    .expect("accepted");
    assert_eq!(thing.big, Some(u64::MAX));
    // The value is a Circle and a Square: the larger object is tried first, so its `side`
    // is kept; a value without `side` is a Circle.
    assert!(
        matches!(thing.shape, Some(Shape::Square(ref s)) if s.side == 2.0),
        "{:?}",
        thing.shape
    );
    let circle = parse(serde_json::json!({
        "name": "a", "secret": "s", "level": 1, "shape": {"radius": 1.0}
    }))
    .await
    .expect("accepted");
    assert!(
        matches!(circle.shape, Some(Shape::Circle(_))),
        "{:?}",
        circle.shape
    );
    let tree = thing.tree.expect("tree");
    assert_eq!(
        tree.next.expect("next").children.expect("children")[0].value,
        3
    );
    let number = parse(serde_json::json!({"name": "a", "secret": "s", "level": 1, "shape": 2.5}))
        .await
        .expect("accepted");
    assert_eq!(number.shape, Some(Shape::Number(2.5)));
}
