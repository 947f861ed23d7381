//! A server that forgets `show_pet_by_id`: the compiler names the missing method.
use fixture_petstore::pets::*;
use fixture_petstore::runtime::{Credentials, Hooks, RequestError};

struct Shop;

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
        ListPetsResponse::Ok(fixture_petstore::Json(fixture_petstore::models::Pets(vec![])), None)
    }
    async fn create_pets(&self, _input: CreatePetsInput) -> CreatePetsResponse {
        CreatePetsResponse::Created
    }
}

fn main() {}
