//! Under pressure: a key over its rate limit, and a database that cannot grow.

use std::sync::Arc;

use bankd::clock::FixedClock;
use bankd::config::Config;
use bankd::store::{Sql, StoreError};
use chrono::Utc;
use reqwest::Method;
use serde_json::json;

use crate::common::{Ctx, sqlite_db, test_options};
use crate::helpers::{Answer, TestApp, ctx_tests, spawn_app_with};

ctx_tests!(a_key_over_its_rate_limit_is_answered_429_and_no_other_key_is);

fn header<'a>(answer: &'a Answer, name: &str) -> &'a str {
    answer
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no {name} header in {:?}", answer.headers))
}

async fn a_key_over_its_rate_limit_is_answered_429_and_no_other_key_is(ctx: Ctx) {
    let config = Config {
        rate_limit_per_second: 1,
        rate_limit_burst: 3,
        ..Config::default()
    };
    // A clock that stands still: the bucket refills only when the test moves it.
    let clock = Arc::new(FixedClock::new(Utc::now()));
    let app = spawn_app_with(ctx, clock.clone(), config).await;
    for remaining in [2, 1, 0] {
        let ok = app.get("/platform", &app.a.key).await;
        assert_eq!(header(&ok, "ratelimit-policy"), "\"per-key\";q=3;w=3");
        assert_eq!(
            header(&ok, "ratelimit"),
            format!("\"per-key\";r={remaining};t={}", 3 - remaining)
        );
        ok.expect(200);
    }
    // Over the limit, a write is refused before anything of it runs.
    let person = json!({"first_name": "Ada", "last_name": "Lovelace"});
    let refused = app.post("/entities/person", &app.a.key, &person).await;
    assert_eq!(header(&refused, "retry-after"), "1");
    assert_eq!(header(&refused, "ratelimit"), "\"per-key\";r=0;t=3");
    let body = refused.expect_error(429, "rate_limited");
    assert_eq!(body["type"], "rate_limit_error", "{body}");
    // Another platform's key has its own bucket; a wrong key is 401, not 429.
    app.get("/platform", &app.b.key).await.expect(200);
    app.get("/platform", "test_00000000000000000000000000000000")
        .await
        .expect_error(401, "unauthorized");
    // A second later one request fits again; the refused write had left nothing.
    clock.advance(chrono::Duration::seconds(1));
    let entities = app.get("/entities?limit=100", &app.a.key).await.expect(200);
    let people = entities["entities"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|e| e["type"] == "PERSON")
        .count();
    assert_eq!(people, 0, "the refused create left nothing: {entities}");
    let again = app.get("/platform", &app.a.key).await;
    again.expect_error(429, "rate_limited");
    // An empty bucket refuses before the key is looked up: revoked now, the key is refused
    // until its bucket has room, and unknown after.
    bankd::auth::revoke_api_key(&app.ctx.db, clock.as_ref(), &app.a.key)
        .await
        .expect("revoked");
    let refused = app.get("/platform", &app.a.key).await;
    assert_eq!(header(&refused, "ratelimit"), "\"per-key\";r=0;t=3");
    refused.expect_error(429, "rate_limited");
    clock.advance(chrono::Duration::seconds(1));
    app.get("/platform", &app.a.key)
        .await
        .expect_error(401, "unauthorized");
}

/// Caps the SQLite database at its size now plus `pages` pages: past that it answers
/// `SQLITE_FULL`, as a full disk does.
async fn cap_sqlite_size(app: &TestApp, pages: i64) {
    app.ctx
        .db
        .write(|tx| {
            Box::pin(async move {
                let now: i64 = tx
                    .fetch_one(Sql::new("PRAGMA page_count"))
                    .await?
                    .get("page_count")?;
                tx.fetch_one(Sql::new(format!("PRAGMA max_page_count = {}", now + pages)))
                    .await?;
                Ok::<_, StoreError>(())
            })
        })
        .await
        .expect("capped");
}

async fn upload(app: &TestApp, bytes: usize) -> Answer {
    let part = reqwest::multipart::Part::bytes(vec![7u8; bytes])
        .file_name("scan.bin")
        .mime_str("application/octet-stream")
        .expect("mime");
    let form = reqwest::multipart::Form::new()
        .part("file", part)
        .text("type", "other");
    let response = app
        .client
        .post(format!("{}/documents", app.base))
        .basic_auth("", Some(&app.a.key))
        .multipart(form)
        .send()
        .await
        .expect("sent");
    crate::helpers::answer(response).await
}

async fn readiness(app: &TestApp) -> (u16, serde_json::Value) {
    let answer = app.call(Method::GET, "/readyz", None, None, &[]).await;
    (answer.status.as_u16(), answer.json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_refuses_writes_with_storage_full_and_keeps_reads_and_integrity() {
    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let app = spawn_app_with(ctx, Arc::new(bankd::clock::SystemClock), Config::default()).await;
    upload(&app, 1024).await.expect(200);
    cap_sqlite_size(&app, 40).await;
    // 64 KiB uploads until one does not fit (40 pages of 4 KiB: the third at the latest).
    let mut stored = 1;
    let refused = loop {
        let answer = upload(&app, 64 * 1024).await;
        if answer.status.as_u16() != 200 {
            break answer;
        }
        stored += 1;
        assert!(stored < 10, "the cap never struck");
    };
    assert_eq!(header(&refused, "retry-after"), "30");
    let body = refused.expect_error(503, "storage_full");
    assert_eq!(body["type"], "server_error", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("storage is full") && !m.contains("SQLITE")),
        "{body}"
    );
    // Sent again at once, it is refused the same way, not as a conflict.
    upload(&app, 64 * 1024)
        .await
        .expect_error(503, "storage_full");
    let (status, ready) = readiness(&app).await;
    assert_eq!(
        (status, ready["reason"].as_str()),
        (503, Some("storage_full"))
    );
    // Reads go on; nothing of the refused uploads is listed.
    let list = app
        .get("/documents?limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(list["documents"].as_array().map(Vec::len), Some(stored));
    // Space comes back: writes are accepted and readiness recovers with the first one.
    cap_sqlite_size(&app, 100_000).await;
    upload(&app, 64 * 1024).await.expect(200);
    let (status, ready) = readiness(&app).await;
    assert_eq!(status, 200, "{ready}");
    let list = app
        .get("/documents?limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(list["documents"].as_array().map(Vec::len), Some(stored + 1));
    let check: String = app
        .ctx
        .db
        .read(|tx| {
            Box::pin(async move {
                tx.fetch_one(Sql::new("PRAGMA integrity_check"))
                    .await?
                    .get("integrity_check")
            })
        })
        .await
        .expect("integrity check");
    assert_eq!(check, "ok");
}
