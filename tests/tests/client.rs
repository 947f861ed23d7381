//! A real bankd driven through the generated typed client alone (`bank_api::client`), on SQLite
//! and PostgreSQL: entities, bank accounts, account numbers, a counterparty, a document upload
//! and its signed download, book transfers with a hold cleared and one canceled, simulated ACH,
//! the events paged through as a stream, and a webhook endpoint whose deliveries a local
//! receiver checks with the client's Standard Webhooks helper. Also what the client does for
//! its caller: an `Idempotency-Key` it generates and resends, retries of a 429, errors that keep
//! what was received.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bank_api::client::{Client, receive_event};
use bank_api::runtime::client::webhook::Verifier;
use bank_api::runtime::client::{Config, Error, Hook, Operation, Outcome};
use bank_api::{Json, account_numbers, bank_accounts, book_transfers, counterparties};
use bank_api::{documents, entities, events, models, simulations, webhooks};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use futures_util::StreamExt;
use serde_json::json;

#[path = "support/on_a_port.rs"]
mod on_a_port;

/// A request body from JSON: typed (the request types deserialise), and short to write.
fn body<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("a valid request body")
}

/// Records each attempt the client makes: (operation, attempt, status or failure).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, u32, String)>>>);

impl Hook for Recorder {
    fn before(&self, _op: &Operation, _attempt: u32, request: &mut reqwest::Request) {
        request
            .headers_mut()
            .insert("x-request-id", "client-test".parse().unwrap());
    }

    fn after(&self, op: &Operation, attempt: u32, outcome: Outcome<'_>, _elapsed: Duration) {
        let what = match outcome {
            Outcome::Answered(r) => r.status.as_u16().to_string(),
            Outcome::Failed(e) => format!("failed: {e}"),
        };
        self.0
            .lock()
            .unwrap()
            .push((op.id.to_string(), attempt, what));
    }
}

/// Each request a receiver got: its headers and body.
type Deliveries = Arc<Mutex<Vec<(reqwest::header::HeaderMap, Vec<u8>)>>>;

/// A webhook receiver on loopback: keeps each request's headers and body, answers 200.
struct Receiver {
    url: String,
    got: Deliveries,
}

impl Receiver {
    async fn start() -> Receiver {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let app = poem::endpoint::make(move |req: poem::Request| {
            let sink = sink.clone();
            async move {
                let mut headers = reqwest::header::HeaderMap::new();
                for (k, v) in req.headers() {
                    headers.insert(
                        reqwest::header::HeaderName::from_bytes(k.as_str().as_bytes()).unwrap(),
                        reqwest::header::HeaderValue::from_bytes(v.as_bytes()).unwrap(),
                    );
                }
                let bytes = req.into_body().into_vec().await.unwrap_or_default();
                sink.lock().unwrap().push((headers, bytes));
                poem::http::StatusCode::OK
            }
        });
        let url = format!("{}/hook", on_a_port::serve(app).await);
        Receiver { url, got }
    }
}

async fn scenario(backend: Backend) {
    let Some(db) = TestDatabase::create(backend, "typed_client_scenario") else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let recorder = Recorder::default();
    let client = Client::new(
        Config::new(&bankd.base)
            .basic_auth("", &bankd.key)
            .hook(recorder.clone()),
    );

    // A webhook endpoint first, so that every event below is delivered to it.
    let receiver = Receiver::start().await;
    let endpoint = match client
        .create_webhook_endpoint(webhooks::CreateWebhookEndpointInput {
            body: body(json!({"url": receiver.url})),
        })
        .await
        .unwrap()
    {
        webhooks::CreateWebhookEndpointResponse::Ok(Json(e)) => e,
        other => panic!("create_webhook_endpoint: {other:?}"),
    };

    // Entities: a person, and a typed 404 for an id of nobody's.
    let person = match client
        .create_person_entity(entities::CreatePersonEntityInput {
            idempotency_key: None,
            body: body(json!({"first_name": "Ada", "last_name": "Lovelace"})),
        })
        .await
        .unwrap()
    {
        entities::CreatePersonEntityResponse::Ok(Json(e), replayed) => {
            assert_eq!(replayed, None, "a first request is no replay");
            e
        }
        other => panic!("create_person_entity: {other:?}"),
    };
    match client
        .get_entity(entities::GetEntityInput {
            entity_id: "enti_000000000000000000000000000".into(),
        })
        .await
        .unwrap()
    {
        entities::GetEntityResponse::NotFound(Json(e)) => assert_eq!(e.code, "entity_not_found"),
        other => panic!("an unknown entity: {other:?}"),
    }

    // Two bank accounts of the person, each with an account number.
    let mut accounts = Vec::new();
    for description in ["first", "second"] {
        let account = match client
            .create_bank_account(bank_accounts::CreateBankAccountInput {
                idempotency_key: None,
                body: body(json!({"entity_id": &person.id, "description": description})),
            })
            .await
            .unwrap()
        {
            bank_accounts::CreateBankAccountResponse::Ok(Json(a), _) => a,
            other => panic!("create_bank_account: {other:?}"),
        };
        let number = match client
            .create_account_number(account_numbers::CreateAccountNumberInput {
                bank_account_id: account.id.clone(),
                idempotency_key: None,
                body: body(json!({})),
            })
            .await
            .unwrap()
        {
            account_numbers::CreateAccountNumberResponse::Ok(Json(n), _) => n,
            other => panic!("create_account_number: {other:?}"),
        };
        accounts.push((account.id, number.id));
    }
    let [(a1, n1), (a2, _)] = <[_; 2]>::try_from(accounts).unwrap();

    // A counterparty.
    match client
        .create_counterparty(counterparties::CreateCounterpartyInput {
            body: body(json!({"routing_number": "121000248", "account_number": "123456789012"})),
        })
        .await
        .unwrap()
    {
        counterparties::CreateCounterpartyResponse::Ok(Json(c)) => {
            assert_eq!(c.routing_number, "121000248")
        }
        other => panic!("create_counterparty: {other:?}"),
    }

    // A document upload (multipart) and its signed download (binary).
    let content = b"%PDF-1.4 statement of the typed client".to_vec();
    let document = match client
        .upload_document(documents::UploadDocumentInput {
            idempotency_key: None,
            body: models::UploadDocumentRequest {
                file: bank_api::FilePart {
                    file_name: Some("statement.pdf".into()),
                    content_type: Some("application/pdf".into()),
                    bytes: content.clone(),
                },
                r#type: body(json!("bank_statement")),
                description: Some("November".into()),
                tag: None,
                entity_id: Some(person.id.clone()),
            },
        })
        .await
        .unwrap()
    {
        documents::UploadDocumentResponse::Ok(Json(d), _) => d,
        other => panic!("upload_document: {other:?}"),
    };
    assert_eq!(
        (document.size, document.file_name.as_str()),
        (content.len() as i64, "statement.pdf")
    );
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(document.url.split_once('?').expect("a signed url").1).unwrap();
    let param = |k: &str| query.iter().find(|(n, _)| n == k).unwrap().1.clone();
    match client
        .get_document_content(documents::GetDocumentContentInput {
            document_id: document.id.clone(),
            expires: param("expires").parse().unwrap(),
            signature: param("signature"),
        })
        .await
        .unwrap()
    {
        documents::GetDocumentContentResponse::Ok(bytes, ..) => assert_eq!(bytes.0, content),
        other => panic!("get_document_content: {other:?}"),
    }

    // Money in through a simulated ACH credit, then book transfers: one held and cleared, one
    // held and canceled.
    match client
        .simulate_receive_ach_credit(simulations::SimulateReceiveAchCreditInput {
            body: body(
                json!({"destination_account_number_id": n1, "amount": 100_000,
                              "company_id": "PAYROLL001", "company_name": "Payroll Inc"}),
            ),
        })
        .await
        .unwrap()
    {
        simulations::SimulateReceiveAchCreditResponse::Ok(Json(t)) => assert_eq!(t.amount, 100_000),
        other => panic!("simulate_receive_ach_credit: {other:?}"),
    }
    let transfer = |amount: i64, key: Option<&str>| book_transfers::CreateBookTransferInput {
        idempotency_key: key.map(str::to_string),
        body: body(
            json!({"sender_bank_account_id": a1, "receiver_bank_account_id": a2,
                          "amount": amount, "currency_code": "USD", "hold": true}),
        ),
    };
    let held = |r: book_transfers::CreateBookTransferResponse| match r {
        book_transfers::CreateBookTransferResponse::Ok(Json(t), replayed) => (t, replayed),
        other => panic!("create_book_transfer: {other:?}"),
    };
    let (cleared, _) = held(
        client
            .create_book_transfer(transfer(30_000, Some("hold-1")))
            .await
            .unwrap(),
    );
    // The same key again: the stored answer, replayed.
    let (again, replayed) = held(
        client
            .create_book_transfer(transfer(30_000, Some("hold-1")))
            .await
            .unwrap(),
    );
    assert_eq!(
        (again.id.as_str(), replayed.as_deref()),
        (cleared.id.as_str(), Some("true"))
    );
    match client
        .clear_book_transfer(book_transfers::ClearBookTransferInput {
            book_transfer_id: cleared.id.clone(),
            body: None,
        })
        .await
        .unwrap()
    {
        book_transfers::ClearBookTransferResponse::Ok(Json(t)) => {
            assert_eq!(t.status.as_str(), "COMPLETED")
        }
        other => panic!("clear_book_transfer: {other:?}"),
    }
    let (canceled, _) = held(
        client
            .create_book_transfer(transfer(5_000, None))
            .await
            .unwrap(),
    );
    match client
        .cancel_book_transfer(book_transfers::CancelBookTransferInput {
            book_transfer_id: canceled.id.clone(),
        })
        .await
        .unwrap()
    {
        book_transfers::CancelBookTransferResponse::Ok(Json(t)) => {
            assert_eq!(t.status.as_str(), "CANCELED")
        }
        other => panic!("cancel_book_transfer: {other:?}"),
    }
    let balance = |id: String| {
        let client = client.clone();
        async move {
            match client
                .get_bank_account(bank_accounts::GetBankAccountInput {
                    bank_account_id: id,
                })
                .await
                .unwrap()
            {
                bank_accounts::GetBankAccountResponse::Ok(Json(a)) => {
                    (a.balances.available_amount, a.balances.holding_amount)
                }
                other => panic!("get_bank_account: {other:?}"),
            }
        }
    };
    assert_eq!(balance(a1.clone()).await, (70_000, 0));
    assert_eq!(balance(a2.clone()).await, (30_000, 0));

    // The events, paged through as a stream two at a time: each exactly once, newest first.
    let streamed: Vec<models::Event> = client
        .list_events_stream(events::ListEventsInput {
            r#type: None,
            created_gt: None,
            created_gte: None,
            created_lt: None,
            created_lte: None,
            starting_after: None,
            ending_before: None,
            limit: 2,
        })
        .map(|e| e.expect("every page answers"))
        .collect()
        .await;
    let ids: Vec<String> = streamed.iter().map(event_id).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "an event came twice: {ids:?}");
    assert!(ids.len() >= 10, "every change made an event: {ids:?}");
    let pages = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(op, ..)| op == "list_events")
        .count();
    assert_eq!(
        pages,
        ids.len().div_ceil(2),
        "one request per page, has_more is exact"
    );

    // Every event reaches the receiver, each signed and read with the client's helper.
    let verifier = Verifier::new(&endpoint.secret).expect("a whsec_ secret");
    let deadline = Instant::now() + Duration::from_secs(30);
    let received = loop {
        let got = receiver.got.lock().unwrap().clone();
        if got.len() >= ids.len() || Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut delivered: Vec<String> = received
        .iter()
        .map(|(headers, bytes)| {
            event_id(&receive_event(&verifier, headers, bytes).expect("genuine"))
        })
        .collect();
    delivered.sort();
    assert_eq!(delivered, unique, "each event delivered once, signed");
    let (headers, bytes) = &received[0];
    let mut tampered = bytes.clone();
    tampered.push(b' ');
    assert!(
        receive_event(&verifier, headers, &tampered).is_err(),
        "a changed body is refused"
    );

    // The key the client generated for a keyed operation is sent once per call and the
    // server's answer is the operation's own enum.
    let log = recorder.0.lock().unwrap().clone();
    assert!(
        log.iter().all(|(_, attempt, _)| *attempt == 1),
        "no retries were needed: {log:?}"
    );
    let audit = bankd.ledger_check();
    assert_eq!(
        (&audit["balance_total"], &audit["discrepancies"]),
        (&json!(0), &json!([])),
        "{audit}"
    );
}

fn event_id(e: &models::Event) -> String {
    serde_json::to_value(e).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_platform_drives_bankd_through_the_typed_client_on_sqlite() {
    scenario(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_platform_drives_bankd_through_the_typed_client_on_postgres() {
    scenario(Backend::Postgres).await;
}

/// With a rate limit of one request per second, a burst of reads is answered in full: each
/// 429 is sent again after its `Retry-After`; a write without a key is not repeated (it is not
/// safe to), and its 429 reaches the caller as the declared variant.
#[tokio::test(flavor = "multi_thread")]
async fn answers_of_429_are_retried_only_when_safe() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "typed_client_retries") else {
        return;
    };
    let bankd = BankdProcess::start_with_env(
        &db.url,
        &[
            ("BANKD_RATE_LIMIT_PER_SECOND", "1"),
            ("BANKD_RATE_LIMIT_BURST", "1"),
        ],
    );
    let recorder = Recorder::default();
    let client = Client::new(
        Config::new(&bankd.base)
            .basic_auth("", &bankd.key)
            .retries(3)
            .hook(recorder.clone()),
    );
    for _ in 0..3 {
        match client
            .get_platform(bank_api::platform::GetPlatformInput {})
            .await
            .unwrap()
        {
            bank_api::platform::GetPlatformResponse::Ok(Json(p)) => {
                assert_eq!(p.id, bankd.platform_id)
            }
            other => panic!("get_platform: {other:?}"),
        }
    }
    let retried = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, a, s)| *a > 1 && s == "200")
        .count();
    assert!(
        retried >= 2,
        "the reads were sent again after 429: {:?}",
        recorder.0.lock().unwrap()
    );

    // A counterparty create declares no Idempotency-Key: not safe to repeat.
    let answer = client
        .create_counterparty(counterparties::CreateCounterpartyInput {
            body: body(json!({"routing_number": "121000248", "account_number": "123456789012"})),
        })
        .await
        .unwrap();
    let answer2 = client
        .create_counterparty(counterparties::CreateCounterpartyInput {
            body: body(json!({"routing_number": "121000248", "account_number": "123456789012"})),
        })
        .await
        .unwrap();
    let limited: Vec<_> = [answer, answer2]
        .into_iter()
        .filter_map(|a| match a {
            counterparties::CreateCounterpartyResponse::TooManyRequests(r) => Some(r),
            _ => None,
        })
        .collect();
    // The refusal's headers, read into the response's named fields.
    for r in &limited {
        assert_eq!(r.body.code, "rate_limited");
        let seconds: u64 = r.retry_after.as_deref().unwrap().parse().unwrap();
        assert!(seconds >= 1, "Retry-After {seconds}");
        assert!(
            r.rate_limit_policy
                .as_deref()
                .is_some_and(|p| p.starts_with("\"per-key\";q=")),
            "{:?}",
            r.rate_limit_policy
        );
        assert!(r.rate_limit.is_some());
    }
    let limited = limited.len();
    assert!(
        limited >= 1,
        "one of two writes in a second is refused and not repeated"
    );
    let creates: Vec<u32> = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(op, ..)| op == "create_counterparty")
        .map(|(_, a, _)| *a)
        .collect();
    assert_eq!(creates, [1, 1], "a write without a key is sent once");
}

/// What went wrong keeps what was received: an undeclared status with its bytes, a body that
/// is not the declared schema, a refused connection and a timeout are told apart.
#[tokio::test(flavor = "multi_thread")]
async fn failures_are_told_apart_and_keep_what_was_received() {
    use poem::{EndpointExt, Route, get};
    let app = Route::new().at(
        "/platform",
        get(poem::endpoint::make(|req: poem::Request| async move {
            match req.header("x-case") {
                Some("teapot") => poem::Response::builder()
                    .status(poem::http::StatusCode::IM_A_TEAPOT)
                    .body("short and stout"),
                Some("slow") => {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    poem::Response::builder().body("late")
                }
                _ => poem::Response::builder()
                    .content_type("application/json")
                    .body(r#"{"id": 7}"#),
            }
        })),
    );
    let base = on_a_port::serve(app.boxed()).await;

    #[derive(Clone)]
    struct Case(&'static str);
    impl Hook for Case {
        fn before(&self, _: &Operation, _: u32, request: &mut reqwest::Request) {
            request
                .headers_mut()
                .insert("x-case", self.0.parse().unwrap());
        }
    }
    let call = |case: &'static str, base: &str| {
        let client = Client::new(
            Config::new(base)
                .basic_auth("", "test_key")
                .timeout(Duration::from_millis(300))
                .hook(Case(case)),
        );
        async move {
            client
                .get_platform(bank_api::platform::GetPlatformInput {})
                .await
        }
    };
    match call("teapot", &base).await {
        Err(Error::UnexpectedStatus { received, .. }) => {
            assert_eq!(
                (received.status.as_u16(), received.body.as_slice()),
                (418, &b"short and stout"[..])
            )
        }
        other => panic!("an undeclared status: {other:?}"),
    }
    match call("bad-body", &base).await {
        Err(Error::InvalidResponse {
            received, reason, ..
        }) => {
            assert_eq!(received.body, br#"{"id": 7}"#);
            assert!(reason.contains("body"), "{reason}");
        }
        other => panic!("a body that is not a Platform: {other:?}"),
    }
    assert!(matches!(
        call("slow", &base).await,
        Err(Error::Timeout { .. })
    ));
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    assert!(matches!(
        call("any", &closed).await,
        Err(Error::Transport { .. })
    ));
}
