//! A server written before `onPing` got its `DELETE` request: the document added a callback,
//! and the compiler names the method that builds it.
use fixture_callbacks::callbacks::Callbacks;
use fixture_callbacks::models::{Event, SubscribeOnPingPostBody};

struct Server;

impl Callbacks for Server {
    type Event = ();
    fn subscribe_on_event(&self, _event: &()) -> Option<Event> {
        None
    }
    fn subscribe_on_ping_post(&self, _event: &()) -> Option<SubscribeOnPingPostBody> {
        None
    }
}

fn main() {}
