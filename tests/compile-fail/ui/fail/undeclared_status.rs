//! `show_pet_by_id` declares 200, 400 and default, so a handler cannot answer 404 Not Found.
use fixture_petstore::pets::*;

fn answer(_input: ShowPetByIdInput) -> ShowPetByIdResponse {
    ShowPetByIdResponse::NotFound
}

fn main() {}
