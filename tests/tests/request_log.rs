//! The request log on a real `bankd` process: one line per request, naming the route's template
//! (never the ids in the path), the status, the latency and the client's `X-Request-Id`, which
//! the response echoes.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{Exchange, call, ok};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use serde_json::json;

/// The log without terminal colour codes (the server may colour even when writing to a file).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, ended by a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The `key=value` fields of the request lines (`bankd::app: request ...`) of `log`.
fn request_lines(log: &str) -> Vec<BTreeMap<String, String>> {
    log.lines()
        .filter_map(|line| line.split_once("bankd::app: request "))
        .map(|(_, fields)| {
            fields
                .split_whitespace()
                .filter_map(|f| f.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

#[test]
fn a_request_is_logged_once_with_its_route_template_status_latency_and_request_id() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "request log") else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let base = bankd.base.as_str();
    let person = ok(
        base,
        &bankd.key,
        "POST",
        "/entities/person",
        Some(&json!({"first_name": "Log", "last_name": "Line"})),
    );
    let account = ok(
        base,
        &bankd.key,
        "POST",
        "/bank-accounts",
        Some(&json!({"entity_id": person["id"], "description": "Logged account"})),
    );
    let id = account["id"].as_str().expect("id").to_owned();

    let got = call(
        base,
        &bankd.key,
        "GET",
        &format!("/bank-accounts/{id}"),
        None,
        &[("X-Request-Id", "t-123")],
    );
    let Exchange::Answered(r) = got else {
        panic!("no answer: {got:?}");
    };
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["id"], id.as_str());
    assert_eq!(r.header("x-request-id"), Some("t-123"), "{:?}", r.headers);

    // The line is written before the response is sent; allow the file a moment all the same.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (log, ours) = loop {
        let log = plain(&std::fs::read_to_string(&bankd.stderr_log).expect("server log"));
        let ours: Vec<_> = request_lines(&log)
            .into_iter()
            .filter(|f| f.get("request_id").map(String::as_str) == Some("t-123"))
            .collect();
        if !ours.is_empty() || Instant::now() > deadline {
            break (log, ours);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(ours.len(), 1, "one request line for t-123 in:\n{log}");
    let line = &ours[0];
    let field = |k: &str| line.get(k).map(String::as_str);
    assert_eq!(field("method"), Some("GET"), "{line:?}");
    assert_eq!(
        field("path"),
        Some("/bank-accounts/{bank_account_id}"),
        "{line:?}"
    );
    assert_eq!(field("status"), Some("200"), "{line:?}");
    assert!(
        field("latency_us").is_some_and(|v| v.parse::<u64>().is_ok()),
        "a numeric latency field: {line:?}"
    );
    assert!(
        line.values().all(|v| !v.contains(&id)),
        "the concrete id is logged: {line:?}"
    );
}
