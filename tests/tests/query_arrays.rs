//! Array query parameters through the generated crate of `codegen/tests/fixtures/parameters.yaml`:
//! form style exploded (`ids=1&ids=2`) and not (`colors=red,blue`), items typed and checked.

use std::sync::Arc;

use fixture_parameters::models::{Pet, PetList};
use fixture_parameters::pets::*;
use fixture_parameters::runtime::{Credentials, Hooks, RequestError};
use fixture_parameters::{Json, app};
use poem::http::StatusCode;
use poem::{Endpoint, Request};

struct Server;

impl Hooks for Server {
    type Principal = ();
    async fn authenticate(&self, _credentials: Credentials) -> Result<(), RequestError> {
        Ok(())
    }
    fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
        poem::Response::builder()
            .status(error.status)
            .body(error.message)
    }
}

/// Answers with one pet whose name says what the arrays held.
impl PetsApi for Server {
    async fn list_owner_pets(&self, input: ListOwnerPetsInput) -> ListOwnerPetsResponse {
        let name = format!("{:?} {:?}", input.ids, input.colors);
        ListOwnerPetsResponse::Ok(Json(PetList(vec![Pet {
            id: 1,
            owner_id: input.owner_id,
            name,
            r#type: None,
            balance: None,
        }])))
    }
    async fn create_owner_pet(&self, _input: CreateOwnerPetInput) -> CreateOwnerPetResponse {
        unreachable!("not called")
    }
    async fn get_owner_pet(&self, _input: GetOwnerPetInput) -> GetOwnerPetResponse {
        unreachable!("not called")
    }
}

async fn list(query: &str) -> (StatusCode, String) {
    let uri = format!("/owners/o1/pets?region=eu&{query}");
    let req = Request::builder()
        .uri(uri.parse().expect("uri"))
        .header("X-Trace", "t")
        .finish();
    let resp = match app(Arc::new(Server)).call(req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let body = resp.into_body().into_string().await.expect("body");
    if status != StatusCode::OK {
        return (status, body);
    }
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    (
        status,
        v[0]["name"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test]
async fn exploded_and_comma_separated_arrays_are_parsed() {
    assert_eq!(
        list("ids=1&ids=22&colors=red,blue").await,
        (
            StatusCode::OK,
            r#"Some([1, 22]) Some(["red", "blue"])"#.to_string()
        )
    );
    assert_eq!(list("").await, (StatusCode::OK, "None None".to_string()));
    // An item of the wrong type is a 400.
    assert_eq!(list("ids=1&ids=x").await.0, StatusCode::BAD_REQUEST);
}
