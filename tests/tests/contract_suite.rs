//! Black box: a real `bankd` process on a fresh database, driven through every operation of
//! `spec/openapi.yaml` on success and error paths; every response is checked against the
//! document (declared status, media type, body schema). Runs on SQLite and on PostgreSQL.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use contract_tests::contract::{Contract, Violation};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use reqwest::Method;
use serde_json::{Value, json};

struct Driver {
    base: String,
    client: reqwest::Client,
    contract: Contract,
    violations: Mutex<Vec<Violation>>,
    /// operation id → statuses seen
    seen: Mutex<BTreeMap<String, BTreeSet<u16>>>,
}

struct Reply {
    status: u16,
    json: Value,
    headers: reqwest::header::HeaderMap,
}

impl Driver {
    async fn send(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(k) = key {
            req = req.basic_auth("", Some(k));
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.record(
            method.as_str(),
            path,
            req.send().await.expect("request sent"),
        )
        .await
    }

    async fn record(&self, method: &str, path: &str, resp: reqwest::Response) -> Reply {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let ct = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp.bytes().await.expect("body").to_vec();
        let mut v = self
            .contract
            .check(method, path, status, ct.as_deref(), &bytes);
        self.violations.lock().expect("lock").append(&mut v);
        if let Some(op) = self.contract.operation(method, path) {
            self.seen
                .lock()
                .expect("lock")
                .entry(op.to_owned())
                .or_default()
                .insert(status);
        }
        Reply {
            status,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            headers,
        }
    }

    async fn ok(&self, method: Method, path: &str, key: &str, body: Option<Value>) -> Value {
        let r = self.send(method.clone(), path, Some(key), body, &[]).await;
        assert!(
            (200..300).contains(&r.status),
            "{method} {path}: {} {}",
            r.status,
            r.json
        );
        r.json
    }

    async fn err(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
        status: u16,
    ) -> Value {
        let r = self.send(method.clone(), path, key, body, &[]).await;
        assert_eq!(r.status, status, "{method} {path}: {}", r.json);
        r.json
    }
}

async fn scenario(d: &Driver, bankd: &BankdProcess) {
    use Method as M;
    let k = bankd.key.as_str();
    let other = bankd.cli(&["platform", "create", "--name", "Other"]);
    let k2 = other["api_key"].as_str().expect("second key").to_owned();
    let live = bankd.cli(&[
        "api-key",
        "create",
        "--platform",
        &bankd.platform_id,
        "--mode",
        "live",
    ]);
    let live = live["api_key"].as_str().expect("live key").to_owned();

    // Platform
    d.ok(M::GET, "/platform", k, None).await;
    d.err(M::GET, "/platform", None, None, 401).await;
    d.ok(M::PATCH, "/platform", k, Some(json!({"reporting_time_zone": "America/New_York", "additional_requirements": [{"name": "nickname", "type": "string", "required": false}]}))).await;
    d.err(
        M::PATCH,
        "/platform",
        Some(k),
        Some(json!({"reporting_time_zone": "Nowhere/Else"})),
        400,
    )
    .await;

    // Entities
    let person = d
        .send(
            M::POST,
            "/entities/person",
            Some(k),
            Some(json!({"first_name": "Ada", "last_name": "Lovelace", "ssn": "123456789"})),
            &[("Idempotency-Key", "p-1")],
        )
        .await;
    assert_eq!(person.status, 200, "{}", person.json);
    let pid = person.json["id"].as_str().expect("id").to_owned();
    let replay = d
        .send(
            M::POST,
            "/entities/person",
            Some(k),
            Some(json!({"first_name": "Ada", "last_name": "Lovelace", "ssn": "123456789"})),
            &[("Idempotency-Key", "p-1")],
        )
        .await;
    assert_eq!(
        replay
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    d.send(
        M::POST,
        "/entities/person",
        Some(k),
        Some(json!({"first_name": "Other"})),
        &[("Idempotency-Key", "p-1")],
    )
    .await;
    d.err(
        M::POST,
        "/entities/person",
        Some(k),
        Some(json!({"first_name": ""})),
        400,
    )
    .await;
    let business = d
        .ok(
            M::POST,
            "/entities/business",
            k,
            Some(json!({"business_name": "Acme LLC", "ein": "123456789"})),
        )
        .await;
    let bid = business["id"].as_str().expect("id").to_owned();
    d.err(
        M::POST,
        "/entities/business",
        Some(k),
        Some(json!({"business_name": "Acme", "ein": "12"})),
        400,
    )
    .await;
    d.err(
        M::PATCH,
        &format!("/entities/business/{bid}"),
        Some(k),
        Some(json!({"website": 5})),
        400,
    )
    .await;
    d.ok(
        M::PATCH,
        &format!("/entities/person/{pid}"),
        k,
        Some(json!({"middle_name": "K"})),
    )
    .await;
    d.err(
        M::PATCH,
        "/entities/person/enti_unknown",
        Some(k),
        Some(json!({"middle_name": "K"})),
        404,
    )
    .await;
    d.ok(
        M::PATCH,
        &format!("/entities/business/{bid}"),
        k,
        Some(json!({"description": "Widgets"})),
    )
    .await;
    d.ok(M::GET, "/entities?limit=5&type=PERSON", k, None).await;
    d.err(M::GET, "/entities?limit=0", Some(k), None, 400).await;
    d.ok(M::GET, &format!("/entities/{pid}"), k, None).await;
    d.err(M::GET, &format!("/entities/{pid}"), Some(&k2), None, 404)
        .await;
    d.ok(
        M::POST,
        &format!("/entities/{bid}/associated-persons"),
        k,
        Some(json!({"person_entity_id": pid, "roles": ["control_person"]})),
    )
    .await;
    d.err(
        M::POST,
        &format!("/entities/{bid}/associated-persons"),
        Some(k),
        Some(json!({"person_entity_id": pid, "roles": ["control_person"]})),
        400,
    )
    .await;
    d.ok(
        M::GET,
        &format!("/entities/{bid}/associated-persons"),
        k,
        None,
    )
    .await;
    d.err(
        M::GET,
        "/entities/enti_nope/associated-persons",
        Some(k),
        None,
        404,
    )
    .await;
    d.ok(
        M::POST,
        &format!("/entities/{pid}/additional-requirements"),
        k,
        Some(json!({"nickname": "ada"})),
    )
    .await;
    d.err(
        M::POST,
        &format!("/entities/{pid}/additional-requirements"),
        Some(k),
        Some(json!({"nickname": 5})),
        400,
    )
    .await;
    d.ok(
        M::GET,
        &format!("/entities/{pid}/additional-requirements"),
        k,
        None,
    )
    .await;
    d.err(
        M::GET,
        "/entities/enti_nope/additional-requirements",
        Some(k),
        None,
        404,
    )
    .await;

    // Bank accounts and account numbers
    let acct = d
        .send(
            M::POST,
            "/bank-accounts",
            Some(k),
            Some(json!({"entity_id": pid, "description": "Main account"})),
            &[("Idempotency-Key", "ba-1")],
        )
        .await;
    assert_eq!(acct.status, 200, "{}", acct.json);
    let a1 = acct.json["id"].as_str().expect("id").to_owned();
    let a1_number = acct.json["default_account_number_id"]
        .as_str()
        .expect("acno")
        .to_owned();
    let a2 = d
        .ok(
            M::POST,
            "/bank-accounts",
            k,
            Some(json!({"entity_id": pid, "description": "Savings"})),
        )
        .await;
    let a2 = a2["id"].as_str().expect("id").to_owned();
    d.err(
        M::POST,
        "/bank-accounts",
        Some(k),
        Some(json!({"entity_id": pid, "description": "x"})),
        400,
    )
    .await;
    d.err(
        M::POST,
        "/bank-accounts",
        Some(k),
        Some(json!({"entity_id": "enti_nope", "description": "Main account"})),
        404,
    )
    .await;
    d.ok(
        M::GET,
        "/bank-accounts?limit=10&sort=balance&sort_order=asc&status=open",
        k,
        None,
    )
    .await;
    d.err(
        M::GET,
        &format!("/bank-accounts?starting_after={a1}&ending_before={a2}"),
        Some(k),
        None,
        400,
    )
    .await;
    d.ok(M::GET, &format!("/bank-accounts/{a1}"), k, None).await;
    d.err(
        M::GET,
        &format!("/bank-accounts/{a1}"),
        Some(&k2),
        None,
        404,
    )
    .await;
    d.ok(
        M::PATCH,
        &format!("/bank-accounts/{a1}"),
        k,
        Some(json!({"display_name": "Everyday"})),
    )
    .await;
    d.err(
        M::PATCH,
        "/bank-accounts/bacc_nope",
        Some(k),
        Some(json!({"display_name": "x"})),
        404,
    )
    .await;
    d.ok(
        M::POST,
        &format!("/bank-accounts/{a1}/owner"),
        k,
        Some(json!({"entity_id": bid})),
    )
    .await;
    d.err(
        M::POST,
        &format!("/bank-accounts/{a1}/owner"),
        Some(k),
        Some(json!({"entity_id": "enti_nope"})),
        404,
    )
    .await;
    let acno = d
        .send(
            M::POST,
            &format!("/bank-accounts/{a1}/account-numbers"),
            Some(k),
            Some(json!({"description": "Payroll"})),
            &[("Idempotency-Key", "an-1")],
        )
        .await;
    assert_eq!(acno.status, 200, "{}", acno.json);
    let acno = acno.json["id"].as_str().expect("id").to_owned();
    d.err(
        M::POST,
        "/bank-accounts/bacc_nope/account-numbers",
        Some(k),
        Some(json!({})),
        404,
    )
    .await;
    d.ok(
        M::GET,
        &format!("/bank-accounts/{a1}/account-numbers"),
        k,
        None,
    )
    .await;
    d.err(
        M::GET,
        "/bank-accounts/bacc_nope/account-numbers",
        Some(k),
        None,
        404,
    )
    .await;
    d.ok(M::GET, &format!("/account-numbers/{acno}"), k, None)
        .await;
    d.err(
        M::GET,
        &format!("/account-numbers/{acno}"),
        Some(&k2),
        None,
        404,
    )
    .await;
    d.ok(
        M::PATCH,
        &format!("/account-numbers/{acno}"),
        k,
        Some(json!({"check_issuing_positive_pay_required": true})),
    )
    .await;
    d.err(
        M::PATCH,
        &format!("/account-numbers/{acno}"),
        Some(k),
        Some(json!({"description": 5})),
        400,
    )
    .await;

    // Positive pay
    let rule = d.ok(M::POST, "/ach-positive-pay-rules", k, Some(json!({"bank_account_id": a1, "ach_company_id": "ACME000001", "amount_condition": "less_than_or_equal_to", "amount": 5000, "description": "Utility"}))).await;
    let rule = rule["id"].as_str().expect("id").to_owned();
    d.err(M::POST, "/ach-positive-pay-rules", Some(k), Some(json!({"bank_account_id": a1, "ach_company_id": "short", "amount_condition": "equal", "description": "x"})), 400).await;
    d.ok(M::GET, &format!("/ach-positive-pay-rules/{rule}"), k, None)
        .await;
    d.ok(
        M::GET,
        &format!("/bank-accounts/{a1}/ach-positive-pay-rules"),
        k,
        None,
    )
    .await;
    d.err(
        M::GET,
        "/bank-accounts/bacc_nope/ach-positive-pay-rules",
        Some(k),
        None,
        404,
    )
    .await;

    // Money: simulations, ACH transfers, book transfers, history
    d.ok(M::POST, "/simulate/receive-ach-credit", k, Some(json!({"destination_account_number_id": a1_number, "amount": 100_000, "company_id": "PAYROLL001", "company_name": "Payroll Inc"}))).await;
    d.err(M::POST, "/simulate/receive-ach-credit", Some(&live), Some(json!({"destination_account_number_id": a1_number, "amount": 1, "company_id": "PAYROLL001", "company_name": "Payroll Inc"})), 403).await;
    let debit = d.ok(M::POST, "/simulate/receive-ach-debit", k, Some(json!({"destination_account_number_id": a1_number, "amount": 2_000, "company_id": "ACME000001", "company_name": "Acme Utility"}))).await;
    let ach = debit["id"].as_str().expect("id").to_owned();
    d.err(M::POST, "/simulate/receive-ach-debit", Some(k), Some(json!({"destination_account_number_id": "acno_nope", "amount": 1, "company_id": "ACME000001", "company_name": "x"})), 404).await;
    d.ok(M::GET, "/transfers/ach", k, None).await;
    d.err(M::GET, "/transfers/ach?limit=101", Some(k), None, 400)
        .await;
    d.ok(M::GET, &format!("/transfers/ach/{ach}"), k, None)
        .await;
    d.err(
        M::GET,
        &format!("/transfers/ach/{ach}"),
        Some(&k2),
        None,
        404,
    )
    .await;
    let t = d.send(M::POST, "/transfers/book", Some(k), Some(json!({"amount": 1_000, "sender_bank_account_id": a1, "receiver_bank_account_id": a2, "description": "Rent"})), &[("Idempotency-Key", "bt-1")]).await;
    assert_eq!(t.status, 200, "{}", t.json);
    d.err(M::POST, "/transfers/book", Some(k), Some(json!({"amount": 10_000_000, "sender_bank_account_id": a1, "receiver_bank_account_id": a2})), 400).await;
    let hold = d.ok(M::POST, "/transfers/book", k, Some(json!({"amount": 500, "sender_bank_account_id": a1, "receiver_bank_account_id": a2, "hold": true}))).await;
    let hold = hold["id"].as_str().expect("id").to_owned();
    d.ok(
        M::POST,
        &format!("/transfers/book/{hold}/clear"),
        k,
        Some(json!({"amount": 300})),
    )
    .await;
    d.err(
        M::POST,
        &format!("/transfers/book/{hold}/clear"),
        Some(k),
        Some(json!({})),
        400,
    )
    .await;
    let hold2 = d.ok(M::POST, "/transfers/book", k, Some(json!({"amount": 200, "sender_bank_account_id": a1, "receiver_bank_account_id": a2, "hold": true}))).await;
    let hold2 = hold2["id"].as_str().expect("id").to_owned();
    d.ok(M::POST, &format!("/transfers/book/{hold2}/cancel"), k, None)
        .await;
    d.err(
        M::POST,
        &format!("/transfers/book/{hold2}/cancel"),
        Some(k),
        None,
        400,
    )
    .await;
    d.ok(
        M::GET,
        &format!("/transfers/book?bank_account_id={a1}"),
        k,
        None,
    )
    .await;
    d.err(M::GET, "/transfers/book?limit=-1", Some(k), None, 400)
        .await;
    d.ok(M::GET, &format!("/transfers/book/{hold}"), k, None)
        .await;
    d.err(M::GET, "/transfers/book/book_nope", Some(k), None, 404)
        .await;
    d.ok(M::GET, &format!("/bank-accounts/{a1}/history"), k, None)
        .await;
    d.err(
        M::GET,
        &format!("/bank-accounts/{a1}/history?from_date=2001-01-01"),
        Some(k),
        None,
        400,
    )
    .await;

    // Counterparties
    let cp = d.ok(M::POST, "/counterparties", k, Some(json!({"routing_number": "021000021", "account_number": "123456789", "name": "Landlord"}))).await;
    let cp = cp["id"].as_str().expect("id").to_owned();
    d.err(
        M::POST,
        "/counterparties",
        Some(k),
        Some(json!({"routing_number": "021000022", "account_number": "123456789"})),
        400,
    )
    .await;
    d.ok(M::GET, "/counterparties?deduplicate=true", k, None)
        .await;
    d.err(M::GET, "/counterparties?limit=1000", Some(k), None, 400)
        .await;
    // Every failing parameter in one answer, in the body validator's words.
    let many = format!(
        "/counterparties?limit=1000&starting_after={}&ending_before=",
        "c".repeat(65)
    );
    let refused = d.err(M::GET, &many, Some(k), None, 400).await;
    assert_eq!(
        (&refused["code"], &refused["details"]),
        (
            &json!("invalid_request"),
            &json!({"limit": "must be at most 100",
                    "starting_after": "must be at most 64 characters long"})
        ),
        "{refused}"
    );
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit") && m.contains("starting_after")),
        "{refused}"
    );
    d.ok(M::GET, &format!("/counterparties/{cp}"), k, None)
        .await;
    d.ok(M::DELETE, &format!("/counterparties/{cp}"), k, None)
        .await;
    d.err(M::GET, &format!("/counterparties/{cp}"), Some(k), None, 404)
        .await;
    d.err(
        M::DELETE,
        &format!("/counterparties/{cp}"),
        Some(k),
        None,
        404,
    )
    .await;

    // Documents
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"%PDF-1.4 statement".to_vec())
                .file_name("statement.pdf")
                .mime_str("application/pdf")
                .expect("mime"),
        )
        .text("type", "bank_statement")
        .text("entity_id", pid.clone());
    let resp = d
        .client
        .post(format!("{}/documents", d.base))
        .basic_auth("", Some(k))
        .header("Idempotency-Key", "doc-1")
        .multipart(form)
        .send()
        .await
        .expect("sent");
    let doc = d.record("POST", "/documents", resp).await;
    assert_eq!(doc.status, 200, "{}", doc.json);
    let doc_id = doc.json["id"].as_str().expect("id").to_owned();
    let url = doc.json["url"].as_str().expect("url").to_owned();
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"x".to_vec()).file_name("e.png"),
        )
        .text("type", "card_dispute_evidence");
    let resp = d
        .client
        .post(format!("{}/documents", d.base))
        .basic_auth("", Some(k))
        .multipart(form)
        .send()
        .await
        .expect("sent");
    assert_eq!(d.record("POST", "/documents", resp).await.status, 400);
    d.ok(M::GET, "/documents?type=bank_statement", k, None)
        .await;
    d.err(M::GET, "/documents?limit=abc", Some(k), None, 400)
        .await;
    d.ok(M::GET, &format!("/documents/{doc_id}"), k, None).await;
    d.err(
        M::GET,
        &format!("/documents/{doc_id}"),
        Some(&k2),
        None,
        404,
    )
    .await;
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
        .expect("path of the signed url");
    let content = d.send(M::GET, &path, None, None, &[]).await;
    assert_eq!(content.status, 200);
    d.send(
        M::GET,
        &format!(
            "/documents/{doc_id}/content?expires=1&signature={}",
            "0".repeat(64)
        ),
        None,
        None,
        &[],
    )
    .await;

    // Deletes and their rules
    d.ok(
        M::DELETE,
        &format!("/ach-positive-pay-rules/{rule}"),
        k,
        None,
    )
    .await;
    d.err(
        M::GET,
        &format!("/ach-positive-pay-rules/{rule}"),
        Some(k),
        None,
        404,
    )
    .await;
    d.err(
        M::DELETE,
        &format!("/ach-positive-pay-rules/{rule}"),
        Some(k),
        None,
        404,
    )
    .await;
    d.err(
        M::DELETE,
        &format!("/bank-accounts/{a1}"),
        Some(k),
        None,
        400,
    )
    .await;
    let empty = d
        .ok(
            M::POST,
            "/bank-accounts",
            k,
            Some(json!({"entity_id": bid, "description": "To close"})),
        )
        .await;
    d.ok(
        M::DELETE,
        &format!("/bank-accounts/{}", empty["id"].as_str().expect("id")),
        k,
        None,
    )
    .await;
    d.err(M::DELETE, "/bank-accounts/bacc_nope", Some(k), None, 404)
        .await;
    d.err(M::DELETE, &format!("/entities/{pid}"), Some(k), None, 400)
        .await;
    let loner = d
        .ok(
            M::POST,
            "/entities/person",
            k,
            Some(json!({"first_name": "Solo", "last_name": "Person"})),
        )
        .await;
    d.ok(
        M::DELETE,
        &format!("/entities/{}", loner["id"].as_str().expect("id")),
        k,
        None,
    )
    .await;
    d.err(M::DELETE, "/entities/enti_nope", Some(k), None, 404)
        .await;
    events_and_webhooks(d, k, &k2).await;
}

/// Events and webhook endpoints: every operation's success and its errors (the deliveries
/// themselves are tested in `webhooks.rs`).
async fn events_and_webhooks(d: &Driver, k: &str, other_key: &str) {
    use Method as M;
    let events = d.ok(M::GET, "/events?limit=5", k, None).await;
    let event = events["events"][0]["id"]
        .as_str()
        .expect("an event")
        .to_owned();
    d.ok(M::GET, &format!("/events/{event}"), k, None).await;
    d.ok(
        M::GET,
        "/events?type=book.transfer.completed&limit=2",
        k,
        None,
    )
    .await;
    d.err(M::GET, "/events?type=no.such.type", Some(k), None, 400)
        .await;
    d.err(
        M::GET,
        &format!("/events/{event}"),
        Some(other_key),
        None,
        404,
    )
    .await;

    // A closed port on loopback: deliveries fail, which is fine here.
    let url = "http://127.0.0.1:9/hooks";
    let created = d
        .ok(
            M::POST,
            "/webhook-endpoints",
            k,
            Some(json!({"url": url, "description": "Ledger sync", "enabled_events": ["book.transfer.*", "entity.created"]})),
        )
        .await;
    let wend = created["id"].as_str().expect("id").to_owned();
    assert!(
        created["secret"]
            .as_str()
            .expect("secret")
            .starts_with("whsec_")
    );
    d.err(
        M::POST,
        "/webhook-endpoints",
        Some(k),
        Some(json!({"url": "ftp://example.com"})),
        400,
    )
    .await;
    d.err(
        M::POST,
        "/webhook-endpoints",
        Some(k),
        Some(json!({"url": url, "enabled_events": ["nope"]})),
        400,
    )
    .await;
    d.ok(M::GET, "/webhook-endpoints?limit=2", k, None).await;
    d.err(M::GET, "/webhook-endpoints?limit=0", Some(k), None, 400)
        .await;
    let path = format!("/webhook-endpoints/{wend}");
    d.ok(M::GET, &path, k, None).await;
    d.err(M::GET, &path, Some(other_key), None, 404).await;
    d.ok(
        M::PATCH,
        &path,
        k,
        Some(json!({"description": "Renamed", "is_disabled": false})),
    )
    .await;
    d.err(
        M::PATCH,
        &path,
        Some(k),
        Some(json!({"url": "gopher://x"})),
        400,
    )
    .await;
    let rotated = d
        .ok(M::POST, &format!("{path}/rotate-secret"), k, None)
        .await;
    assert_ne!(rotated["secret"], created["secret"], "a new secret");
    d.err(
        M::POST,
        "/webhook-endpoints/wend_nope/rotate-secret",
        Some(k),
        None,
        404,
    )
    .await;

    // An event the endpoint subscribes to makes a delivery attempt.
    d.ok(
        M::POST,
        "/entities/person",
        k,
        Some(json!({"first_name": "Hook", "last_name": "Ed"})),
    )
    .await;
    let deliveries = d.ok(M::GET, &format!("{path}/deliveries"), k, None).await;
    let delivery = deliveries["deliveries"][0]["id"]
        .as_str()
        .expect("a delivery attempt")
        .to_owned();
    d.err(
        M::GET,
        &format!("{path}/deliveries?limit=1000"),
        Some(k),
        None,
        400,
    )
    .await;
    d.ok(
        M::POST,
        &format!("{path}/deliveries/{delivery}/retry"),
        k,
        None,
    )
    .await;
    d.err(
        M::POST,
        &format!("{path}/deliveries/wdlv_nope/retry"),
        Some(k),
        None,
        404,
    )
    .await;
    d.ok(M::DELETE, &path, k, None).await;
    d.err(M::DELETE, &path, Some(k), None, 404).await;
}

async fn run(backend: Backend, name: &str) {
    let Some(db) = TestDatabase::create(backend, name) else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let d = Driver {
        base: bankd.base.clone(),
        client: reqwest::Client::new(),
        contract: Contract::load(include_str!("../../spec/openapi.yaml")),
        violations: Mutex::new(Vec::new()),
        seen: Mutex::new(BTreeMap::new()),
    };
    scenario(&d, &bankd).await;
    let violations = d.violations.into_inner().expect("lock");
    assert!(
        violations.is_empty(),
        "{} responses differ from the document:\n{}",
        violations.len(),
        violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let seen = d.seen.into_inner().expect("lock");
    let mut missing = Vec::new();
    for op in d.contract.operation_ids() {
        let statuses = seen.get(&op).cloned().unwrap_or_default();
        if !statuses.iter().any(|s| (200..300).contains(s)) {
            missing.push(format!("{op}: no success"));
        }
        if !statuses.iter().any(|s| *s >= 400) {
            missing.push(format!("{op}: no error path"));
        }
    }
    assert!(
        missing.is_empty(),
        "operations not exercised:\n{}",
        missing.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_as_the_document_says_on_sqlite() {
    run(Backend::Sqlite, "contract suite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_as_the_document_says_on_postgres() {
    run(Backend::Postgres, "contract suite").await;
}
