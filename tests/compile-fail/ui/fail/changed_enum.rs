//! A server that builds an `Event` of type `updated`, a value the document no longer lists (its
//! enum is `created | deleted`): the compiler names the variant.
use fixture_callbacks::models::{Event, EventType};

fn updated(id: &str) -> Event {
    Event {
        id: id.to_string(),
        r#type: EventType::Updated,
    }
}

fn main() {
    let _ = updated("evt_1");
}
