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

/// The other half of the quick start: the same crate's typed client (feature `client`) against
/// the server on a port, with the same inputs and response enums.
#[tokio::test]
async fn the_typed_client_drives_the_server() {
    use fixture_petstore::Json;
    use fixture_petstore::client::Client;
    use fixture_petstore::models::{Pet, Pets};
    use fixture_petstore::pets::*;
    use fixture_petstore::runtime::client::Config;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    let acceptor = poem::listener::TcpAcceptor::from_tokio(listener).expect("an acceptor");
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(petstore_example::app()));

    let api = Client::new(Config::new(base));
    let rex = Pet {
        id: 1,
        name: "Rex".into(),
        tag: Some("dog".into()),
    };
    let tom = Pet {
        id: 2,
        name: "Tom".into(),
        tag: None,
    };
    for pet in [&rex, &tom] {
        let created = api
            .create_pets(CreatePetsInput { body: pet.clone() })
            .await
            .expect("an answer");
        assert!(
            matches!(created, CreatePetsResponse::Created),
            "{created:?}"
        );
    }
    match api
        .list_pets(ListPetsInput { limit: Some(1) })
        .await
        .expect("an answer")
    {
        ListPetsResponse::Ok(Json(Pets(pets)), next) => {
            assert_eq!((pets, next.as_deref()), (vec![rex], Some("/pets?limit=2")))
        }
        other => panic!("{other:?}"),
    }
    let missing = ShowPetByIdInput { pet_id: "7".into() };
    match api.show_pet_by_id(missing).await.expect("an answer") {
        ShowPetByIdResponse::Default(status, Json(e)) => assert_eq!(status.as_u16(), 404, "{e:?}"),
        other => panic!("{other:?}"),
    }
}
