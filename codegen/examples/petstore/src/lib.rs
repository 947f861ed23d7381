//! A Petstore server in about forty lines: the generated crate parses, validates and routes;
//! this crate supplies the [`Hooks`] (the defaults: the document has no security, refusals are
//! RFC 9457 problems) and one trait per tag.

use std::sync::{Arc, Mutex};

use fixture_petstore::models::{Pet, Pets};
use fixture_petstore::pets::*;
use fixture_petstore::{Hooks, Json};

/// The pets, in memory, in the order they were created.
#[derive(Default)]
pub struct Store {
    pets: Mutex<Vec<Pet>>,
}

impl Hooks for Store {
    type Principal = ();
}

impl PetsApi for Store {
    async fn list_pets(&self, input: ListPetsInput) -> ListPetsResponse {
        let pets = self.pets.lock().expect("not poisoned");
        let limit = input.limit.map_or(pets.len(), |l| l.max(0) as usize);
        let page: Vec<Pet> = pets.iter().take(limit).cloned().collect();
        let next = (pets.len() > limit).then(|| format!("/pets?limit={}", limit + 1));
        ListPetsResponse::Ok(Json(Pets(page)), next)
    }

    async fn create_pets(&self, input: CreatePetsInput) -> CreatePetsResponse {
        self.pets.lock().expect("not poisoned").push(input.body);
        CreatePetsResponse::Created
    }

    async fn show_pet_by_id(&self, input: ShowPetByIdInput) -> ShowPetByIdResponse {
        let pets = self.pets.lock().expect("not poisoned");
        match pets.iter().find(|p| p.id.to_string() == input.pet_id) {
            Some(pet) => ShowPetByIdResponse::Ok(Json(pet.clone())),
            None => ShowPetByIdResponse::Default(
                poem::http::StatusCode::NOT_FOUND,
                Json(fixture_petstore::models::Error {
                    code: 404,
                    message: format!("no pet {}", input.pet_id),
                }),
            ),
        }
    }
}

/// The whole service: the API, `/openapi.json`, `/openapi.yaml` and `/docs`.
pub fn app() -> impl poem::Endpoint {
    fixture_petstore::app(Arc::new(Store::default()))
}
