//! Callbacks through the generated crate of `codegen/tests/fixtures/callbacks.yaml`: the server
//! implements one method per callback request, and `callbacks::requests` turns an event into
//! exactly the requests the document declares, bodies serialised as JSON.

use fixture_callbacks::callbacks::{Callbacks, requests};
use fixture_callbacks::models::{Event, EventType, SubscribeOnPingPostBody};

struct Server;

/// What happened in the server.
enum Happened {
    Deleted(&'static str),
    Tick(i64),
    Unsubscribed,
}

impl Callbacks for Server {
    type Event = Happened;
    fn subscribe_on_event(&self, event: &Happened) -> Option<Event> {
        match event {
            Happened::Deleted(id) => Some(Event {
                id: (*id).to_string(),
                r#type: EventType::Deleted,
            }),
            _ => None,
        }
    }
    fn subscribe_on_ping_post(&self, event: &Happened) -> Option<SubscribeOnPingPostBody> {
        match event {
            Happened::Tick(sequence) => Some(SubscribeOnPingPostBody {
                sequence: *sequence,
            }),
            _ => None,
        }
    }
    fn subscribe_on_ping_delete(&self, event: &Happened) -> bool {
        matches!(event, Happened::Unsubscribed)
    }
}

#[test]
fn each_event_becomes_the_requests_the_document_declares() {
    let sent = requests(&Server, &Happened::Deleted("evt_1")).expect("serialises");
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!(
        (
            r.operation,
            r.callback,
            r.method,
            r.url_expression,
            r.content_type
        ),
        (
            "subscribe",
            "onEvent",
            "POST",
            "{$request.body#/url}",
            Some("application/json")
        )
    );
    assert_eq!(r.body, br#"{"id":"evt_1","type":"deleted"}"#);

    let sent = requests(&Server, &Happened::Tick(7)).expect("serialises");
    assert_eq!(
        sent.iter()
            .map(|r| (r.callback, r.method, r.url_expression, r.body.as_slice()))
            .collect::<Vec<_>>(),
        [(
            "onPing",
            "POST",
            "{$request.body#/url}/ping",
            &br#"{"sequence":7}"#[..]
        )]
    );

    let sent = requests(&Server, &Happened::Unsubscribed).expect("serialises");
    assert_eq!(
        sent.iter()
            .map(|r| (r.method, r.content_type, r.body.len()))
            .collect::<Vec<_>>(),
        [("DELETE", None, 0)]
    );
}
