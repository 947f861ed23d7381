//! The quick start's server answers a request per operation, and a refused parameter names
//! itself in the default RFC 9457 problem.

use poem::http::StatusCode;
use poem::test::TestClient;

#[tokio::test]
async fn every_operation_answers() {
    let client = TestClient::new(petstore_example::app());
    for (id, name) in [(1, "Rex"), (2, "Tom")] {
        client
            .post("/pets")
            .body_json(&serde_json::json!({"id": id, "name": name}))
            .send()
            .await
            .assert_status(StatusCode::CREATED);
    }
    let page = client.get("/pets").query("limit", &1).send().await;
    page.assert_status_is_ok();
    page.assert_header("x-next", "/pets?limit=2");
    page.assert_json(serde_json::json!([{"id": 1, "name": "Rex"}]))
        .await;
    let pet = client.get("/pets/2").send().await;
    pet.assert_status_is_ok();
    pet.assert_json(serde_json::json!({"id": 2, "name": "Tom"}))
        .await;
    client
        .get("/pets/3")
        .send()
        .await
        .assert_status(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_refused_body_is_an_rfc_9457_problem_naming_every_field() {
    let client = TestClient::new(petstore_example::app());
    let response = client
        .post("/pets")
        .body_json(&serde_json::json!({"id": "one"}))
        .send()
        .await;
    response.assert_status(StatusCode::BAD_REQUEST);
    response.assert_content_type("application/problem+json");
    let problem: serde_json::Value = response.json().await.value().deserialize();
    assert_eq!(problem["status"], 400);
    assert_eq!(problem["title"], "Bad Request");
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert_eq!(fields, ["id", "name"], "{problem}");
}

#[tokio::test]
async fn a_refused_parameter_names_itself() {
    let client = TestClient::new(petstore_example::app());
    let response = client.get("/pets").query("limit", &1000).send().await;
    response.assert_status(StatusCode::BAD_REQUEST);
    response.assert_content_type("application/problem+json");
    let problem: serde_json::Value = response.json().await.value().deserialize();
    assert_eq!(problem["detail"], "limit must be at most 100", "{problem}");
    assert_eq!(
        problem["errors"],
        serde_json::json!([{"field": "limit", "detail": "must be at most 100"}])
    );
    let response = client.get("/pets").query("limit", &"ten").send().await;
    response.assert_status(StatusCode::BAD_REQUEST);
    let problem: serde_json::Value = response.json().await.value().deserialize();
    assert_eq!(
        problem["detail"], "limit must be an integer (int32)",
        "{problem}"
    );
}
