//! `GET` and `PATCH /platform`, authentication and the framework's own errors.

use bankd::store::{Sql, StoreError};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, TestApp, api_tests};

api_tests!(
    the_platform_answers_its_own_settings,
    updating_settings_validates_the_time_zone_and_the_field_list,
    requests_without_valid_credentials_get_401_with_a_challenge,
    a_key_as_the_username_with_an_empty_password_is_accepted,
    framework_errors_use_the_error_schema_and_echo_the_request_id,
    invalid_bodies_name_every_offending_field,
    a_failing_database_is_a_500_whose_message_carries_only_the_request_id,
);

async fn the_platform_answers_its_own_settings(app: TestApp) {
    let a = app.get("/platform", &app.a.key).await.expect(200);
    assert_eq!(a["id"], app.a.id.as_str());
    assert_eq!(a["name"], "Platform A");
    assert_eq!(a["reporting_time_zone"], serde_json::Value::Null);
    assert_eq!(a["additional_requirements"], json!([]));
    let b = app.get("/platform", &app.b.key).await.expect(200);
    assert_eq!(b["id"], app.b.id.as_str());
}

async fn updating_settings_validates_the_time_zone_and_the_field_list(app: TestApp) {
    let body = json!({
        "reporting_time_zone": "America/New_York",
        "additional_requirements": [
            {"name": "business_email", "type": "email", "required": true},
            {"name": "tier", "type": "enum", "required": false, "values": ["gold", "silver"]}
        ]
    });
    let p = app.patch("/platform", &app.a.key, &body).await.expect(200);
    assert_eq!(p["reporting_time_zone"], "America/New_York");
    assert_eq!(
        p["additional_requirements"][1]["values"],
        json!(["gold", "silver"])
    );
    // Another platform is untouched.
    let b = app.get("/platform", &app.b.key).await.expect(200);
    assert_eq!(b["reporting_time_zone"], serde_json::Value::Null);

    let e = app
        .patch(
            "/platform",
            &app.a.key,
            &json!({"reporting_time_zone": "Mars/Olympus"}),
        )
        .await;
    let e = e.expect_error(400, "invalid_request");
    assert!(e["details"]["reporting_time_zone"].is_string(), "{e}");
    let dup = json!({"additional_requirements": [
        {"name": "x", "type": "string", "required": true},
        {"name": "x", "type": "string", "required": false}
    ]});
    app.patch("/platform", &app.a.key, &dup)
        .await
        .expect_error(400, "invalid_request");
    // Nothing changed by the refused requests.
    let p = app.get("/platform", &app.a.key).await.expect(200);
    assert_eq!(p["reporting_time_zone"], "America/New_York");
}

async fn requests_without_valid_credentials_get_401_with_a_challenge(app: TestApp) {
    for key in [
        None,
        Some("test_wrong"),
        Some("live_00000000000000000000000000000000"),
    ] {
        let r = app.call(Method::GET, "/platform", key, None, &[]).await;
        assert_eq!(
            r.headers
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok()),
            Some("Basic realm=\"bankd\"")
        );
        r.expect_error(401, "unauthorized");
    }
    // 401 comes before 400: a bad key with a bad body is still 401.
    let r = app
        .call(
            Method::PATCH,
            "/platform",
            Some("test_wrong"),
            Some(&json!({"reporting_time_zone": 5})),
            &[],
        )
        .await;
    r.expect_error(401, "unauthorized");
}

async fn a_key_as_the_username_with_an_empty_password_is_accepted(app: TestApp) {
    let resp = app
        .client
        .get(format!("{}/platform", app.base))
        .basic_auth(&app.a.key, Some(""))
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status().as_u16(), 200);
}

async fn framework_errors_use_the_error_schema_and_echo_the_request_id(app: TestApp) {
    let r = app
        .call(
            Method::GET,
            "/no-such-route",
            Some(&app.a.key),
            None,
            &[("X-Request-Id", "my-req-1")],
        )
        .await;
    assert_eq!(
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        Some("my-req-1")
    );
    r.expect_error(404, "route_not_found");
    let r = app
        .call(Method::DELETE, "/platform", Some(&app.a.key), None, &[])
        .await;
    assert_eq!(
        r.headers.get("allow").and_then(|v| v.to_str().ok()),
        Some("GET, PATCH")
    );
    r.expect_error(405, "method_not_allowed");
    // A server-made id when the client's is unusable.
    let r = app
        .call(
            Method::GET,
            "/platform",
            Some(&app.a.key),
            None,
            &[("X-Request-Id", "")],
        )
        .await;
    let id = r
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(id.starts_with("req_"), "{id}");
    // Malformed JSON and a wrong media type.
    let resp = app
        .client
        .patch(format!("{}/platform", app.base))
        .basic_auth("", Some(&app.a.key))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("sent");
    let e = crate::helpers::answer(resp)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["body"].is_string(), "{e}");
    let resp = app
        .client
        .patch(format!("{}/platform", app.base))
        .basic_auth("", Some(&app.a.key))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("sent");
    crate::helpers::answer(resp)
        .await
        .expect_error(400, "unsupported_media_type");
}

async fn invalid_bodies_name_every_offending_field(app: TestApp) {
    let body = json!({
        "reporting_time_zone": 7,
        "additional_requirements": [{"name": "Bad Name", "type": "colour", "required": "yes"}],
        "is_root": true
    });
    let e = app
        .patch("/platform", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    let details = e["details"].as_object().expect("details");
    for field in [
        "reporting_time_zone",
        "additional_requirements[0].name",
        "additional_requirements[0].type",
        "additional_requirements[0].required",
        "is_root",
    ] {
        assert!(details.contains_key(field), "details lack {field}: {e}");
    }
}

/// A GET with `X-Request-Id: request_id` must be the shared 500 body, naming nothing but the id.
async fn assert_internal_error(app: &TestApp, path: &str, request_id: &str) {
    let r: Answer = app
        .call(
            Method::GET,
            path,
            Some(&app.a.key),
            None,
            &[("X-Request-Id", request_id)],
        )
        .await;
    assert_eq!(
        r.headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        Some(request_id),
        "{path}"
    );
    let body = r.expect_error(500, "internal_error");
    assert_eq!(body["type"], "server_error", "{path}: {body}");
    assert_eq!(body["details"], Value::Null, "{path}: {body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(request_id), "{path}: {body}");
    let lower = message.replace(request_id, "").to_lowercase();
    for cause in [
        "counterparties",
        "table",
        "relation",
        "select",
        "from",
        "sql",
        "pool",
        "closed",
        "database",
    ] {
        assert!(!lower.contains(cause), "{path}: the cause leaks: {body}");
    }
}

async fn a_failing_database_is_a_500_whose_message_carries_only_the_request_id(app: TestApp) {
    // Before: the list answers.
    app.get("/counterparties", &app.a.key).await.expect(200);

    // A table a handler reads is gone: the store error of a handler.
    app.ctx
        .db
        .write(|tx| {
            Box::pin(async move { tx.execute(Sql::new("DROP TABLE counterparties")).await })
        })
        .await
        .map(|_: u64| ())
        .unwrap_or_else(|e: StoreError| panic!("drop table: {e}"));
    assert_internal_error(&app, "/counterparties", "t-db-1").await;

    // No database at all: authentication, before any handler, is the first to fail.
    app.state.db.close().await;
    assert_internal_error(&app, "/platform", "t-db-2").await;
}
