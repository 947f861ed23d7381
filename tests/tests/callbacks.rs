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

/// The receiving side, as the fixture's client gives it: a callback request signed per
/// Standard Webhooks (here by an independent HMAC-SHA256) is read into its type; a body of the
/// wrong shape, a changed body and an old timestamp are refused.
#[test]
fn a_signed_callback_is_received_into_its_type() {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use fixture_callbacks::client::{receive_subscribe_on_event, receive_subscribe_on_ping_post};
    use fixture_callbacks::runtime::client::HeaderMap;
    use fixture_callbacks::runtime::client::webhook::{Verifier, WebhookError};
    use hmac::{Hmac, Mac};

    let key = b"a receiver's secret of 32 bytes!";
    let secret = format!("whsec_{}", STANDARD.encode(key));
    let signed = |body: &[u8], timestamp: i64| {
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
        mac.update(format!("msg_1.{timestamp}.").as_bytes());
        mac.update(body);
        let mut h = HeaderMap::new();
        h.insert("webhook-id", "msg_1".parse().unwrap());
        h.insert("webhook-timestamp", timestamp.to_string().parse().unwrap());
        let signature = STANDARD.encode(mac.finalize().into_bytes());
        h.insert(
            "webhook-signature",
            format!("v1,{signature}").parse().unwrap(),
        );
        h
    };
    let verifier = Verifier::new(&secret).unwrap();
    let now = chrono::Utc::now().timestamp();

    let sent = requests(&Server, &Happened::Deleted("evt_9")).expect("serialises");
    let body = &sent[0].body;
    let event = receive_subscribe_on_event(&verifier, &signed(body, now), body).expect("genuine");
    assert_eq!(
        event,
        Event {
            id: "evt_9".into(),
            r#type: EventType::Deleted
        }
    );
    assert!(matches!(
        receive_subscribe_on_ping_post(&verifier, &signed(body, now), body),
        Err(WebhookError::BadPayload(_))
    ));
    let mut changed = body.clone();
    changed[2] = b'X';
    assert_eq!(
        receive_subscribe_on_event(&verifier, &signed(body, now), &changed),
        Err(WebhookError::BadSignature)
    );
    assert!(matches!(
        receive_subscribe_on_event(&verifier, &signed(body, now - 3600), body),
        Err(WebhookError::OutsideTolerance(_))
    ));
}

/// The subscriptions the server was asked for, by URL (the fixture's server is a unit type).
static SUBSCRIBED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

impl fixture_callbacks::runtime::Hooks for Server {
    type Principal = ();
}

impl fixture_callbacks::subscriptions::SubscriptionsApi for Server {
    async fn subscribe(
        &self,
        input: fixture_callbacks::subscriptions::SubscribeInput,
    ) -> fixture_callbacks::subscriptions::SubscribeResponse {
        SUBSCRIBED.lock().unwrap().push(input.body.url);
        fixture_callbacks::subscriptions::SubscribeResponse::Ok
    }
}

#[path = "support/on_a_port.rs"]
mod on_a_port;

/// The operation that registers the callbacks, through the fixture's client: the URL the
/// client sends is the one the server stores.
#[tokio::test]
async fn a_subscription_goes_through_the_client() {
    use fixture_callbacks::client::Client;
    use fixture_callbacks::runtime::client::Config;
    use fixture_callbacks::subscriptions::{SubscribeInput, SubscribeResponse};

    let base = on_a_port::serve(fixture_callbacks::app(std::sync::Arc::new(Server))).await;
    let url = "https://receiver.example/hooks?x=1&y=2";
    let input = SubscribeInput {
        body: fixture_callbacks::models::Subscription { url: url.into() },
    };
    let answer = Client::new(Config::new(base)).subscribe(input).await;
    assert!(matches!(answer, Ok(SubscribeResponse::Ok)), "{answer:?}");
    assert_eq!(*SUBSCRIBED.lock().unwrap(), [url]);
}
