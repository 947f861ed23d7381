//! An OpenAPI 3.2 document through the generated crate of `codegen/tests/fixtures/openapi32.yaml`,
//! served in process: the `QUERY` method and an `additionalOperations` method (`LOCK`) routed to
//! their handlers, the whole query string read as a form and as JSON and validated with every
//! violation named, responses streamed as Server-Sent Events and JSON Lines, and the document
//! (tags with `parent`, `$self` references) served as written.

use std::sync::Arc;

use contract_tests::spec_equivalence::{differences, load};
use fixture_openapi32::entries::*;
use fixture_openapi32::feeds::*;
use fixture_openapi32::models::{
    Currency, Entry, EntryPage, Error, FollowEntriesOkBodyItem, FollowEntriesOkBodyItemEvent,
};
use fixture_openapi32::runtime::{Credentials, Hooks, ItemStream, RequestError};
use fixture_openapi32::search::*;
use fixture_openapi32::{Json, app};
use poem::http::{Method, StatusCode};
use poem::{Endpoint, Request};
use serde_json::{Value, json};

const SOURCE: &str = include_str!("../../codegen/tests/fixtures/openapi32.yaml");

struct Ledger {
    entries: Vec<Entry>,
}

fn entry(id: &str, account: &str, amount: i64, currency: Currency) -> Entry {
    Entry {
        id: id.into(),
        account: account.into(),
        amount,
        currency,
        memo: None,
    }
}

impl Ledger {
    fn new() -> Self {
        Ledger {
            entries: vec![
                entry("ent_1", "acc_a", 500, Currency::Eur),
                entry("ent_2", "acc_b", 20, Currency::Usd),
                entry("ent_3", "acc_a", 7, Currency::Usd),
            ],
        }
    }

    /// The entries a filter's three fields select.
    fn select(
        &self,
        account: Option<&str>,
        min_amount: Option<i64>,
        currency: Option<&[Currency]>,
    ) -> EntryPage {
        let data = self
            .entries
            .iter()
            .filter(|e| account.is_none_or(|a| e.account == a))
            .filter(|e| min_amount.is_none_or(|m| e.amount >= m))
            .filter(|e| currency.is_none_or(|c| c.contains(&e.currency)))
            .cloned()
            .collect();
        EntryPage { data }
    }

    fn find(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }
}

fn not_found() -> Json<Error> {
    Json(Error {
        code: "not_found".into(),
        message: "no such entry".into(),
    })
}

impl Hooks for Ledger {
    type Principal = ();
    async fn authenticate(&self, _credentials: Credentials) -> Result<(), RequestError> {
        Ok(())
    }
    fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
        poem::Response::builder()
            .status(error.status)
            .content_type("application/json")
            .body(
                json!({"code": "invalid", "message": error.message, "details": error.details})
                    .to_string(),
            )
    }
}

impl EntriesApi for Ledger {
    async fn list_entries(&self, input: ListEntriesInput) -> ListEntriesResponse {
        let page = match &input.filter {
            Some(f) => self.select(f.account.as_deref(), f.min_amount, f.currency.as_deref()),
            None => self.select(None, None, None),
        };
        ListEntriesResponse::Ok(Json(page))
    }
    async fn get_entry(&self, input: GetEntryInput) -> GetEntryResponse {
        match self.find(&input.entry_id) {
            Some(e) => GetEntryResponse::Ok(Json(e.clone())),
            None => GetEntryResponse::NotFound(not_found()),
        }
    }
    async fn lock_entry(&self, input: LockEntryInput) -> LockEntryResponse {
        match self.find(&input.entry_id) {
            Some(_) => LockEntryResponse::NoContent,
            None => LockEntryResponse::NotFound(not_found()),
        }
    }
}

impl SearchApi for Ledger {
    async fn search_entries(&self, input: SearchEntriesInput) -> SearchEntriesResponse {
        let f = &input.body;
        SearchEntriesResponse::Ok(Json(self.select(
            f.account.as_deref(),
            f.min_amount,
            f.currency.as_deref(),
        )))
    }
    async fn search_entries_in_query(
        &self,
        input: SearchEntriesInQueryInput,
    ) -> SearchEntriesInQueryResponse {
        let f = &input.q;
        SearchEntriesInQueryResponse::Ok(Json(self.select(
            f.account.as_deref(),
            f.min_amount,
            f.currency.as_deref(),
        )))
    }
}

impl FeedsApi for Ledger {
    async fn follow_entries(&self, _input: FollowEntriesInput) -> FollowEntriesResponse {
        let events: Vec<FollowEntriesOkBodyItem> = self
            .entries
            .iter()
            .map(|e| FollowEntriesOkBodyItem {
                event: Some(FollowEntriesOkBodyItemEvent::Entry),
                id: Some(e.id.clone()),
                data: e.clone(),
            })
            .collect();
        FollowEntriesResponse::Ok(ItemStream::from_items(events))
    }
    async fn export_entries(&self, _input: ExportEntriesInput) -> ExportEntriesResponse {
        let entries = self.entries.clone();
        // Items that come one at a time, as from a cursor over storage.
        let items = fixture_openapi32::runtime::stream::unfold(0, move |i| {
            let next = entries.get(i).cloned();
            async move { next.map(|e| (e, i + 1)) }
        });
        ExportEntriesResponse::Ok(ItemStream::new(items))
    }
}

/// Sends `method` `uri` (with a JSON `body` if given): status, content type and body text.
async fn send(method: &str, uri: &str, body: Option<Value>) -> (StatusCode, String, String) {
    let ep = app(Arc::new(Ledger::new()));
    let method = Method::from_bytes(method.as_bytes()).expect("a method");
    let mut req = Request::builder()
        .method(method)
        .uri(uri.parse().expect("a URI"));
    let req = match body {
        Some(b) => {
            req = req.content_type("application/json");
            req.body(b.to_string())
        }
        None => req.finish(),
    };
    let resp = ep.get_response(req).await;
    let status = resp.status();
    let content_type = resp.content_type().unwrap_or_default().to_string();
    let text = resp.into_body().into_string().await.expect("a text body");
    (status, content_type, text)
}

fn ids(body: &str) -> Vec<String> {
    let page: Value = serde_json::from_str(body).expect("JSON");
    page["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_string())
        .collect()
}

fn details(body: &str) -> Value {
    serde_json::from_str::<Value>(body).expect("JSON")["details"].clone()
}

#[test]
fn the_document_is_served_as_written() {
    let served = fixture_openapi32::document();
    assert_eq!(served["openapi"], "3.2.0");
    let diffs = differences(&load(SOURCE), &served);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert!(served["paths"]["/entries"]["query"].is_object());
    assert!(served["paths"]["/entries/{entry_id}"]["additionalOperations"]["LOCK"].is_object());
    assert_eq!(served["tags"][1]["parent"], "entries");
    assert_eq!(served["$self"], "https://ledger.example.com/openapi.yaml");
}

#[tokio::test]
async fn query_takes_its_filter_as_a_body_and_validates_it() {
    let (status, _, body) = send(
        "QUERY",
        "/entries",
        Some(json!({"account": "acc_a", "min_amount": 10})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body), ["ent_1"]);
    let (status, _, body) = send(
        "QUERY",
        "/entries",
        Some(json!({"min_amount": -1, "currency": ["GBP"], "colour": "red"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let d = details(&body);
    for field in ["min_amount", "currency[0]", "colour"] {
        assert!(d.get(field).is_some(), "{field} not named: {d}");
    }
}

#[tokio::test]
async fn extension_methods_are_reachable_only_by_their_own_method() {
    // The route a QUERY is registered under cannot be called as a POST.
    let (status, _, _) = send("POST", "/.method/QUERY/entries", Some(json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A method the document declares, on a path that has no operation of it.
    let (status, _, _) = send("QUERY", "/entries/ent_1", Some(json!({}))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    // The path's other methods are where they were.
    let (status, _, body) = send("GET", "/entries/ent_2", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn an_additional_operation_is_served_with_its_parameters_checked() {
    let (status, _, body) = send("LOCK", "/entries/ent_1", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, _, body) = send("LOCK", "/entries/ent_9", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON")["code"],
        "not_found"
    );
    let (status, _, body) = send("LOCK", "/entries/bad-id", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Methods are case-sensitive: `lock` is not `LOCK`.
    let (status, _, _) = send("lock", "/entries/ent_1", None).await;
    assert_ne!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn the_whole_query_string_is_read_as_a_form() {
    let (status, _, body) = send(
        "GET",
        "/entries?currency=USD&currency=EUR&min_amount=10",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body), ["ent_1", "ent_2"]);
    let (status, _, body) = send("GET", "/entries", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body).len(), 3);
    let (status, _, body) =
        send("GET", "/entries?account=ACC&min_amount=-5&colour=red", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let d = details(&body);
    for field in ["account", "min_amount", "colour"] {
        assert!(d.get(field).is_some(), "{field} not named: {d}");
    }
    let (status, _, body) = send("GET", "/entries?min_amount=ten", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(details(&body).get("min_amount").is_some(), "{body}");
}

#[tokio::test]
async fn the_whole_query_string_is_read_as_json() {
    let q = "%7B%22account%22%3A%22acc_a%22%2C%22currency%22%3A%5B%22USD%22%5D%7D";
    let (status, _, body) = send("GET", &format!("/entries/search?{q}"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body), ["ent_3"]);
    let (status, _, body) = send("GET", "/entries/search", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(details(&body)["q"], "is required");
    let (status, _, body) = send("GET", "/entries/search?account=acc_a", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        details(&body)["q"]
            .as_str()
            .unwrap_or_default()
            .contains("not JSON"),
        "{body}"
    );
    let bad = "%7B%22min_amount%22%3A-1%7D";
    let (status, _, body) = send("GET", &format!("/entries/search?{bad}"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(details(&body).get("min_amount").is_some(), "{body}");
}

#[tokio::test]
async fn events_are_streamed_one_by_one() {
    let (status, content_type, body) = send("GET", "/entries/feed", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "text/event-stream");
    let events: Vec<&str> = body.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 3, "{body}");
    let first: Vec<&str> = events[0].lines().collect();
    assert_eq!(first[0], "event: entry");
    assert_eq!(first[1], "id: ent_1");
    let data: Value =
        serde_json::from_str(first[2].strip_prefix("data: ").expect("data")).expect("JSON");
    assert_eq!(
        data,
        json!({"id": "ent_1", "account": "acc_a", "amount": 500, "currency": "EUR"})
    );
}

#[tokio::test]
async fn json_lines_are_written_in_the_media_type_the_document_names() {
    let (status, content_type, body) = send("GET", "/entries/export", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "application/x-ndjson");
    let lines: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON text a line"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[2]["id"], "ent_3");
    assert!(body.ends_with('\n'));
}

#[tokio::test]
async fn the_interactive_docs_show_the_source_not_its_3_0_reading() {
    let (status, content_type, html) = send("GET", "/docs", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // The document as written (its `$self`, its `additionalOperations`), labelled 3.1.1 for the
    // bundled Swagger UI, which reads up to 3.1.
    assert!(html.contains(r#""$self":"https://ledger.example.com/openapi.yaml""#));
    assert!(html.contains(r#""additionalOperations""#));
    assert!(html.contains(r#""openapi":"3.1.1""#));
    assert!(
        !html.contains(r#""openapi": "3.0.0""#),
        "poem-openapi's 3.0 reading"
    );
    let (status, _, _) = send("GET", "/docs/oauth-receiver.html", None).await;
    assert_eq!(status, StatusCode::OK);
}

/// The fixture's own client against its server on a port: a `QUERY` with a body, a whole query
/// string from one value, a deepObject filter, an extension method (`LOCK`), and both streamed
/// responses read into their items.
#[path = "support/on_a_port.rs"]
mod on_a_port;

mod round_trip {
    use super::*;
    use fixture_openapi32::client::Client;
    use fixture_openapi32::models::{EntryFilter, ListEntriesFilter};
    use fixture_openapi32::runtime::client::Config;
    use fixture_openapi32::runtime::client::Stream;

    async fn client() -> Client {
        Client::new(Config::new(
            on_a_port::serve(app(Arc::new(Ledger::new()))).await,
        ))
    }

    fn filter() -> EntryFilter {
        EntryFilter {
            account: Some("acc_a".into()),
            min_amount: Some(10),
            currency: Some(vec![Currency::Eur, Currency::Usd]),
        }
    }

    fn page_ids(page: &EntryPage) -> Vec<&str> {
        page.data.iter().map(|e| e.id.as_str()).collect()
    }

    async fn items<T>(stream: impl Stream<Item = T>) -> Vec<T> {
        use futures_util::StreamExt;
        Box::pin(stream).collect().await
    }

    #[tokio::test]
    async fn every_method_and_parameter_form_goes_and_comes_back() {
        let client = client().await;
        match client
            .search_entries(SearchEntriesInput { body: filter() })
            .await
            .unwrap()
        {
            SearchEntriesResponse::Ok(Json(page)) => assert_eq!(page_ids(&page), ["ent_1"]),
            other => panic!("{other:?}"),
        }
        match client
            .search_entries_in_query(SearchEntriesInQueryInput { q: filter() })
            .await
            .unwrap()
        {
            SearchEntriesInQueryResponse::Ok(Json(page)) => assert_eq!(page_ids(&page), ["ent_1"]),
            other => panic!("{other:?}"),
        }
        let deep = ListEntriesInput {
            filter: Some(ListEntriesFilter {
                account: None,
                min_amount: Some(10),
                currency: Some(vec![Currency::Usd]),
            }),
        };
        match client.list_entries(deep).await.unwrap() {
            ListEntriesResponse::Ok(Json(page)) => assert_eq!(page_ids(&page), ["ent_2"]),
            other => panic!("{other:?}"),
        }
        let get = |id: &str| GetEntryInput {
            entry_id: id.into(),
        };
        match client.get_entry(get("ent_2")).await.unwrap() {
            GetEntryResponse::Ok(Json(e)) => assert_eq!(e, Ledger::new().entries[1]),
            other => panic!("{other:?}"),
        }
        match client.get_entry(get("ent_0")).await.unwrap() {
            GetEntryResponse::NotFound(Json(e)) => assert_eq!(e.code, "not_found"),
            other => panic!("{other:?}"),
        }
        let lock = |id: &str| LockEntryInput {
            entry_id: id.into(),
        };
        assert!(matches!(
            client.lock_entry(lock("ent_1")).await.unwrap(),
            LockEntryResponse::NoContent
        ));
        match client.lock_entry(lock("ent_0")).await.unwrap() {
            LockEntryResponse::NotFound(Json(e)) => assert_eq!(e.code, "not_found"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn streamed_responses_are_read_into_their_items() {
        let client = client().await;
        let FollowEntriesResponse::Ok(events) =
            client.follow_entries(FollowEntriesInput {}).await.unwrap();
        let events = items(events.into_stream()).await;
        let ids: Vec<_> = events.iter().map(|e| e.data.id.as_str()).collect();
        assert_eq!(ids, ["ent_1", "ent_2", "ent_3"]);
        assert_eq!(events[0].event, Some(FollowEntriesOkBodyItemEvent::Entry));
        let ExportEntriesResponse::Ok(exported) =
            client.export_entries(ExportEntriesInput {}).await.unwrap();
        let exported = items(exported.into_stream()).await;
        assert_eq!(exported, Ledger::new().entries);
    }

    /// A feed that never ends gives each item as it is sent, even one the network cut in two;
    /// an item that does not match its schema ends the stream with an error that says which.
    #[tokio::test]
    async fn an_endless_feed_gives_each_item_as_it_comes() {
        use fixture_openapi32::runtime::client::Error;
        use futures_util::StreamExt;
        use std::time::Duration;

        #[poem::handler]
        fn feed() -> poem::Response {
            let entry = serde_json::to_string(&Ledger::new().entries[0]).unwrap();
            let event = format!("event: entry\nid: ent_1\ndata: {entry}\n\n");
            let (a, b) = event.split_at(event.len() / 2);
            let chunks = [a.to_string(), b.to_string()];
            let bad = "event: entry\ndata: {\"not\": \"an entry\"}\n\n".to_string();
            // Item one in two pieces, a pause, a bad item, then nothing, for ever.
            let body = futures_util::stream::iter(chunks.map(Ok::<_, std::io::Error>))
                .chain(futures_util::stream::once(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(bad)
                }))
                .chain(futures_util::stream::pending());
            poem::Response::builder()
                .content_type("text/event-stream")
                .body(poem::Body::from_bytes_stream(body))
        }
        let client = Client::new(Config::new(on_a_port::serve(feed).await));
        fn within<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
            tokio::time::timeout(Duration::from_secs(10), f)
        }
        let FollowEntriesResponse::Ok(events) =
            within(client.follow_entries(FollowEntriesInput {}))
                .await
                .expect("the answer's head, not its end")
                .unwrap();
        let mut events = events.into_results();
        let first = within(events.next())
            .await
            .expect("the first item as it comes");
        assert_eq!(first.unwrap().unwrap().data, Ledger::new().entries[0]);
        let second = within(events.next()).await.expect("the bad item").unwrap();
        let error = second.expect_err("an item that is not an entry");
        match *error.into_inner().downcast::<Error>().unwrap() {
            Error::InvalidResponse {
                reason, received, ..
            } => {
                assert!(reason.starts_with("item 1:"), "{reason}");
                assert_eq!(received.status, StatusCode::OK);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            within(events.next()).await.unwrap().is_none(),
            "nothing after an error"
        );
    }
}
