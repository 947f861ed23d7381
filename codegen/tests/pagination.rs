//! How the client pages (`ir::Api::pagination`): the common shapes recognised, `x-pagination`
//! taken as written, and operations that only look like lists left alone.

use openapi_poem::ir::{NextPage, Pagination};
use openapi_poem::parse::{parse, parse_file};
use serde_json::{Value, json};

fn list(
    params: Value,
    body: Value,
    headers: Value,
    extension: Option<Value>,
) -> Option<Pagination> {
    let mut op = json!({
        "operationId": "list",
        "parameters": params,
        "responses": {"200": {
            "description": "a page",
            "headers": headers,
            "content": {"application/json": {"schema": body}}
        }}
    });
    if let Some(e) = extension {
        op["x-pagination"] = e;
    }
    let doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/items": {"get": op}},
        "components": {"schemas": {"Item": {"type": "object", "properties": {"id": {"type": "string"}}}}}
    });
    let api = parse(&doc.to_string()).expect("parses");
    api.pagination(&api.operations[0])
}

fn query(name: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "schema": schema})
}

fn items() -> Value {
    json!({"type": "array", "items": {"$ref": "#/components/schemas/Item"}})
}

#[test]
fn a_cursor_with_has_more_is_fed_from_the_last_item() {
    let found = list(
        json!([
            query("limit", json!({"type": "integer"})),
            query("starting_after", json!({"type": "string"}))
        ]),
        json!({"type": "object", "properties": {"data": items(), "has_more": {"type": "boolean"}}}),
        json!({}),
        None,
    );
    assert_eq!(
        found,
        Some(Pagination {
            param: "starting_after".into(),
            items: Some("data".into()),
            next: NextPage::LastItem {
                field: "id".into(),
                flag: "has_more".into()
            },
        })
    );
}

#[test]
fn a_next_page_token_is_fed_to_its_parameter() {
    let found = list(
        json!([query("page_token", json!({"type": "string"}))]),
        json!({"type": "object", "properties": {"items": items(), "next_page_token": {"type": "string"}}}),
        json!({}),
        None,
    );
    assert_eq!(
        found.map(|p| (p.param, p.next)),
        Some((
            "page_token".into(),
            NextPage::Token("next_page_token".into())
        ))
    );
}

#[test]
fn an_array_with_a_declared_link_header_follows_rel_next() {
    let found = list(
        json!([query("page", json!({"type": "integer"}))]),
        items(),
        json!({"Link": {"schema": {"type": "string"}}}),
        None,
    );
    assert_eq!(
        found,
        Some(Pagination {
            param: "page".into(),
            items: None,
            next: NextPage::Link
        })
    );
    // Without the header, an array is just an array.
    assert_eq!(
        list(
            json!([query("page", json!({"type": "integer"}))]),
            items(),
            json!({}),
            None
        ),
        None
    );
}

#[test]
fn lookalikes_are_not_paged() {
    // Two arrays: which one holds the items is not for the generator to guess.
    let two = json!({"type": "object", "properties": {"a": items(), "b": items(), "has_more": {"type": "boolean"}}});
    let cursor = json!([query("starting_after", json!({"type": "string"}))]);
    assert_eq!(list(cursor.clone(), two, json!({}), None), None);
    // No parameter takes the position.
    let one =
        json!({"type": "object", "properties": {"data": items(), "has_more": {"type": "boolean"}}});
    assert_eq!(list(json!([]), one.clone(), json!({}), None), None);
    // A required cursor cannot be left out of the first page.
    let required = json!([{"name": "starting_after", "in": "query", "required": true, "schema": {"type": "string"}}]);
    assert_eq!(list(required, one, json!({}), None), None);
}

#[test]
fn x_pagination_says_what_the_shapes_do_not() {
    let body =
        json!({"type": "object", "properties": {"results": items(), "more": {"type": "boolean"}}});
    let found = list(
        json!([query("from", json!({"type": "string"}))]),
        body.clone(),
        json!({}),
        Some(json!({"param": "from", "items": "results", "cursor": "id", "has_more": "more"})),
    );
    assert_eq!(
        found,
        Some(Pagination {
            param: "from".into(),
            items: Some("results".into()),
            next: NextPage::LastItem {
                field: "id".into(),
                flag: "more".into()
            },
        })
    );
    let doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/items": {"get": {"x-pagination": {"items": "results"}, "responses": {"200": {"description": "x"}}}}}
    });
    let e = parse(&doc.to_string()).expect_err("x-pagination without `param`");
    assert!(e.to_string().contains("x-pagination"), "{e}");
}

#[test]
fn every_list_of_bankd_pages_by_its_cursor() {
    let api = parse_file(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../spec/openapi.yaml"
    )))
    .expect("bankd's document parses");
    let lists: Vec<&str> = api
        .operations
        .iter()
        .filter(|o| o.id.starts_with("list_"))
        .map(|o| o.id.as_str())
        .collect();
    let paged: Vec<&str> = api
        .operations
        .iter()
        .filter(|o| {
            api.pagination(o)
                .is_some_and(|p| p.param == "starting_after")
        })
        .map(|o| o.id.as_str())
        .collect();
    assert_eq!(paged, lists);
    assert_eq!(lists.len(), 12);
}
