//! Documents: multipart uploads, reads, lists, and the signed download link.

use std::sync::Arc;

use bankd::clock::FixedClock;
use bankd::config::Config;
use chrono::{Duration, Utc};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::common::Ctx;
use crate::helpers::{Answer, TestApp, answer, api_tests, ctx_tests, spawn_app_with};

api_tests!(
    uploading_a_document_records_its_metadata_and_checksum,
    the_signed_link_downloads_the_file_without_credentials,
    tampered_links_are_refused,
    card_dispute_evidence_goes_through_its_own_endpoint,
    an_upload_names_an_entity_of_the_platform,
    documents_of_another_platform_are_not_found,
    listing_documents_applies_every_filter_and_pages,
    an_upload_with_an_idempotency_key_is_stored_once,
    the_entity_record_lists_its_documents_newest_first,
    uploads_without_a_file_or_type_are_400,
);

ctx_tests!(
    signed_links_expire_after_60_seconds,
    a_file_over_the_limit_is_document_too_large
);

/// SHA-256 of `abc`.
const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/// A form with a file part and the given text fields.
fn form(bytes: &[u8], file_name: &str, fields: &[(&str, &str)]) -> Form {
    let part = Part::bytes(bytes.to_vec())
        .file_name(file_name.to_owned())
        .mime_str("text/plain")
        .expect("mime");
    fields
        .iter()
        .fold(Form::new().part("file", part), |f, (k, v)| {
            f.text((*k).to_owned(), (*v).to_owned())
        })
}

async fn upload(app: &TestApp, key: &str, form: Form, idempotency_key: Option<&str>) -> Answer {
    let mut req = app
        .client
        .post(format!("{}/documents", app.base))
        .basic_auth("", Some(key))
        .multipart(form);
    if let Some(k) = idempotency_key {
        req = req.header("Idempotency-Key", k);
    }
    answer(req.send().await.expect("request sent")).await
}

async fn upload_ok(
    app: &TestApp,
    key: &str,
    bytes: &[u8],
    file_name: &str,
    fields: &[(&str, &str)],
) -> Value {
    upload(app, key, form(bytes, file_name, fields), None)
        .await
        .expect(200)
}

/// GETs a signed `url` against the running app (the url's host is the configured listen
/// address, not the test's port), without credentials.
async fn fetch(app: &TestApp, url: &str) -> Answer {
    let path = url.find("/documents/").map(|i| &url[i..]).unwrap_or(url);
    let resp = app
        .client
        .get(format!("{}{path}", app.base))
        .send()
        .await
        .expect("request sent");
    answer(resp).await
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_default().to_owned()
}

fn ids(list: &Value) -> Vec<String> {
    list["documents"]
        .as_array()
        .map(|a| a.iter().map(id).collect())
        .unwrap_or_default()
}

async fn uploading_a_document_records_its_metadata_and_checksum(app: TestApp) {
    let person = app
        .post(
            "/entities/person",
            &app.a.key,
            &json!({"first_name": "Ada", "last_name": "L"}),
        )
        .await
        .expect(200);
    let fields = [
        ("type", "identity_passport"),
        ("description", "Passport, front"),
        ("tag", "onboarding"),
        ("entity_id", person["id"].as_str().unwrap_or_default()),
    ];
    let d = upload_ok(&app, &app.a.key, b"abc", "passport.txt", &fields).await;
    assert!(id(&d).starts_with("docu_") && id(&d).len() == 32, "{d}");
    assert_eq!(d["type"], "identity_passport");
    assert_eq!(d["description"], "Passport, front");
    assert_eq!(d["tag"], "onboarding");
    assert_eq!(d["file_name"], "passport.txt");
    assert_eq!(d["content_type"], "text/plain");
    assert_eq!(d["size"], 3);
    assert_eq!(d["checksum"], ABC_SHA256);
    assert_eq!(d["entity_id"], person["id"]);
    assert_eq!(d["created_at"], d["updated_at"]);
    let url = d["url"].as_str().unwrap_or_default();
    assert!(
        url.starts_with("http://")
            && url.contains(&format!("/documents/{}/content?expires=", id(&d))),
        "{url}"
    );
    let signature = url.rsplit("signature=").next().unwrap_or_default();
    assert!(
        signature.len() == 64 && signature.bytes().all(|b| b.is_ascii_hexdigit()),
        "{url}"
    );

    let got = app
        .get(&format!("/documents/{}", id(&d)), &app.a.key)
        .await
        .expect(200);
    for field in [
        "id",
        "type",
        "tag",
        "description",
        "file_name",
        "content_type",
        "size",
        "checksum",
        "entity_id",
        "created_at",
    ] {
        assert_eq!(got[field], d[field], "{field}");
    }
    // Optional fields are null when not given.
    let plain = upload_ok(&app, &app.a.key, b"", "empty.txt", &[("type", "other")]).await;
    assert_eq!(plain["description"], Value::Null);
    assert_eq!(plain["tag"], Value::Null);
    assert_eq!(plain["entity_id"], Value::Null);
    assert_eq!(plain["size"], 0);
    app.get("/documents/docu_000000000000000000000000000", &app.a.key)
        .await
        .expect_error(404, "document_not_found");
    app.get("/documents/nope", &app.a.key)
        .await
        .expect_error(404, "document_not_found");
}

async fn the_signed_link_downloads_the_file_without_credentials(app: TestApp) {
    let content = b"%PDF-1.4 binary \x00\x01\x02 bytes";
    let d = upload_ok(
        &app,
        &app.a.key,
        content,
        "statement \"may\".pdf",
        &[("type", "bank_statement")],
    )
    .await;
    let got = fetch(&app, d["url"].as_str().unwrap_or_default()).await;
    assert_eq!(got.status.as_u16(), 200);
    assert_eq!(got.bytes, content.to_vec());
    let disposition = got
        .headers
        .get("content-disposition")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        disposition.starts_with("attachment; filename=\"statement _may_.pdf\""),
        "{disposition}"
    );
    // A fresh GET gives a fresh link that works too.
    let again = app
        .get(&format!("/documents/{}", id(&d)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(
        fetch(&app, again["url"].as_str().unwrap_or_default())
            .await
            .bytes,
        content.to_vec()
    );
}

async fn tampered_links_are_refused(app: TestApp) {
    let d = upload_ok(&app, &app.a.key, b"abc", "a.txt", &[("type", "other")]).await;
    let other = upload_ok(&app, &app.a.key, b"xyz", "b.txt", &[("type", "other")]).await;
    let url = d["url"].as_str().unwrap_or_default().to_owned();
    let (head, signature) = url.split_once("&signature=").unwrap_or_default();
    let expires: i64 = head
        .rsplit("expires=")
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or_default();
    let flipped = format!(
        "{}{}",
        if signature.starts_with('0') { "1" } else { "0" },
        &signature[1..]
    );
    let cases = [
        format!("{head}&signature={flipped}"),
        url.replace(
            &format!("expires={expires}"),
            &format!("expires={}", expires + 3600),
        ),
        url.replace(&id(&d), &id(&other)),
        format!("{head}&signature={}", "0".repeat(64)),
        url.replace(&id(&d), "docu_000000000000000000000000000"),
    ];
    for case in cases {
        let e = fetch(&app, &case)
            .await
            .expect_error(401, "invalid_signature");
        assert_eq!(e["type"], "authentication_error");
    }
    // Missing or malformed parameters are the request's shape.
    fetch(&app, head).await.expect_error(400, "invalid_request");
    fetch(&app, &format!("{head}&signature=zz"))
        .await
        .expect_error(400, "invalid_request");
    fetch(
        &app,
        &format!("/documents/{}/content?signature={signature}", id(&d)),
    )
    .await
    .expect_error(400, "invalid_request");
    // Basic credentials do not replace the signature.
    let r = app
        .get(
            &format!(
                "/documents/{}/content?expires={expires}&signature={flipped}",
                id(&d)
            ),
            &app.a.key,
        )
        .await;
    r.expect_error(401, "invalid_signature");
    // The untouched link still works.
    assert_eq!(fetch(&app, &url).await.bytes, b"abc".to_vec());
}

async fn signed_links_expire_after_60_seconds(ctx: Ctx) {
    let start = Utc::now();
    let clock = Arc::new(FixedClock::new(start));
    let app = spawn_app_with(ctx, clock.clone(), Config::default()).await;
    let d = upload_ok(&app, &app.a.key, b"abc", "a.txt", &[("type", "other")]).await;
    let url = d["url"].as_str().unwrap_or_default().to_owned();
    let expires: i64 = url
        .split("expires=")
        .nth(1)
        .and_then(|rest| rest.split('&').next())
        .and_then(|e| e.parse().ok())
        .unwrap_or_default();
    assert_eq!(expires, start.timestamp() + 60);
    clock.advance(
        Duration::seconds(60) - Duration::microseconds(i64::from(start.timestamp_subsec_micros())),
    );
    assert_eq!(
        fetch(&app, &url).await.status.as_u16(),
        200,
        "still valid at its expiry second"
    );
    clock.set(start + Duration::seconds(61));
    fetch(&app, &url)
        .await
        .expect_error(401, "invalid_signature");
    // A new read signs a new link from the current time.
    let fresh = app
        .get(&format!("/documents/{}", id(&d)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(
        fetch(&app, fresh["url"].as_str().unwrap_or_default())
            .await
            .status
            .as_u16(),
        200
    );
}

async fn a_file_over_the_limit_is_document_too_large(ctx: Ctx) {
    let config = Config {
        max_document_bytes: 16,
        ..Config::default()
    };
    let app = spawn_app_with(ctx, Arc::new(bankd::clock::SystemClock), config).await;
    upload_ok(&app, &app.a.key, &[7u8; 16], "ok.bin", &[("type", "other")]).await;
    let e = upload(
        &app,
        &app.a.key,
        form(&[7u8; 17], "big.bin", &[("type", "other")]),
        None,
    )
    .await
    .expect_error(400, "document_too_large");
    assert!(e["details"]["file"].is_string(), "{e}");
    let list = app.get("/documents", &app.a.key).await.expect(200);
    assert_eq!(list["documents"].as_array().map(Vec::len), Some(1));
}

async fn card_dispute_evidence_goes_through_its_own_endpoint(app: TestApp) {
    let e = upload(
        &app,
        &app.a.key,
        form(b"abc", "a.txt", &[("type", "card_dispute_evidence")]),
        None,
    )
    .await
    .expect_error(400, "document_type_not_allowed");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("POST /issuing/card-disputes/documents"),
        "{e}"
    );
    assert_eq!(e["type"], "document_error");
    let list = app.get("/documents", &app.a.key).await.expect(200);
    assert_eq!(list["documents"], json!([]));
}

async fn an_upload_names_an_entity_of_the_platform(app: TestApp) {
    let b_person = app
        .post(
            "/entities/person",
            &app.b.key,
            &json!({"first_name": "B", "last_name": "B"}),
        )
        .await
        .expect(200);
    let b_id = id(&b_person);
    for entity in [b_id.as_str(), "enti_000000000000000000000000000", "nope"] {
        upload(
            &app,
            &app.a.key,
            form(b"abc", "a.txt", &[("type", "other"), ("entity_id", entity)]),
            None,
        )
        .await
        .expect_error(404, "entity_not_found");
    }
    // 404 for the entity comes before the type rule; a bad Idempotency-Key (400) before both.
    upload(
        &app,
        &app.a.key,
        form(
            b"abc",
            "a.txt",
            &[("type", "card_dispute_evidence"), ("entity_id", "nope")],
        ),
        None,
    )
    .await
    .expect_error(404, "entity_not_found");
    upload(
        &app,
        &app.a.key,
        form(b"abc", "a.txt", &[("type", "other"), ("entity_id", "nope")]),
        Some(&"k".repeat(256)),
    )
    .await
    .expect_error(400, "invalid_request");
    // A deleted entity is gone for uploads too.
    let a_person = app
        .post(
            "/entities/person",
            &app.a.key,
            &json!({"first_name": "A", "last_name": "A"}),
        )
        .await
        .expect(200);
    app.delete(&format!("/entities/{}", id(&a_person)), &app.a.key)
        .await
        .expect(200);
    upload(
        &app,
        &app.a.key,
        form(
            b"abc",
            "a.txt",
            &[("type", "other"), ("entity_id", &id(&a_person))],
        ),
        None,
    )
    .await
    .expect_error(404, "entity_not_found");
    assert_eq!(
        app.get("/documents", &app.a.key).await.expect(200)["documents"],
        json!([])
    );
    // The root entity is an entity of the platform.
    let root = app.a.root_entity_id.clone();
    let d = upload_ok(
        &app,
        &app.a.key,
        b"abc",
        "a.txt",
        &[("type", "w9"), ("entity_id", &root)],
    )
    .await;
    assert_eq!(d["entity_id"], root.as_str());
}

async fn documents_of_another_platform_are_not_found(app: TestApp) {
    let d = upload_ok(
        &app,
        &app.a.key,
        b"abc",
        "a.txt",
        &[("type", "other"), ("tag", "t")],
    )
    .await;
    app.get(&format!("/documents/{}", id(&d)), &app.b.key)
        .await
        .expect_error(404, "document_not_found");
    assert_eq!(
        app.get("/documents", &app.b.key).await.expect(200)["documents"],
        json!([])
    );
    app.get("/documents?tag=t", &app.b.key).await.expect(200);
    app.get(&format!("/documents?starting_after={}", id(&d)), &app.b.key)
        .await
        .expect_error(400, "invalid_pagination_cursor");
    app.get(&format!("/documents/{}", id(&d)), &app.a.key)
        .await
        .expect(200);
}

async fn listing_documents_applies_every_filter_and_pages(app: TestApp) {
    let key = &app.a.key;
    let a = upload_ok(
        &app,
        key,
        b"1",
        "id.png",
        &[
            ("type", "identity_license"),
            ("description", "Driver LICENSE front"),
            ("tag", "kyc"),
        ],
    )
    .await;
    let b = upload_ok(
        &app,
        key,
        b"2",
        "id.png",
        &[
            ("type", "identity_license"),
            ("description", "back"),
            ("tag", "kyc-2"),
        ],
    )
    .await;
    let c = upload_ok(
        &app,
        key,
        b"3",
        "w9.pdf",
        &[("type", "w9"), ("description", "tax form"), ("tag", "kyc")],
    )
    .await;
    let get_ids = |path: String| {
        let app = &app;
        async move { ids(&app.get(&path, key).await.expect(200)) }
    };
    assert_eq!(
        get_ids("/documents".into()).await,
        vec![id(&c), id(&b), id(&a)]
    );
    assert_eq!(
        get_ids("/documents?type=identity_license".into()).await,
        vec![id(&b), id(&a)]
    );
    assert_eq!(
        get_ids("/documents?description=license".into()).await,
        vec![id(&a)]
    );
    assert_eq!(
        get_ids("/documents?description=FORM".into()).await,
        vec![id(&c)]
    );
    assert_eq!(
        get_ids("/documents?file_name=id.png".into()).await,
        vec![id(&b), id(&a)]
    );
    assert_eq!(
        get_ids("/documents?file_name=id".into()).await,
        Vec::<String>::new()
    );
    assert_eq!(
        get_ids("/documents?tag=kyc".into()).await,
        vec![id(&c), id(&a)]
    );
    assert_eq!(
        get_ids("/documents?tag=kyc&type=w9".into()).await,
        vec![id(&c)]
    );
    let at = b["created_at"]
        .as_str()
        .unwrap_or_default()
        .replace('+', "%2B");
    assert_eq!(
        get_ids(format!("/documents?created.gte={at}")).await,
        vec![id(&c), id(&b)]
    );
    assert_eq!(
        get_ids(format!("/documents?created.gt={at}")).await,
        vec![id(&c)]
    );
    assert_eq!(
        get_ids(format!("/documents?created.lte={at}")).await,
        vec![id(&b), id(&a)]
    );
    assert_eq!(
        get_ids(format!("/documents?created.lt={at}")).await,
        vec![id(&a)]
    );
    // Every listed document carries a working link.
    let list = app.get("/documents?limit=1", key).await.expect(200);
    assert_eq!(list["has_more"], true);
    assert_eq!(
        fetch(
            &app,
            list["documents"][0]["url"].as_str().unwrap_or_default()
        )
        .await
        .bytes,
        b"3".to_vec()
    );
    let page = app
        .get(
            &format!("/documents?limit=1&starting_after={}", id(&c)),
            key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&page), vec![id(&b)]);
    assert_eq!(page["has_more"], true);
    let page = app
        .get(&format!("/documents?limit=5&ending_before={}", id(&a)), key)
        .await
        .expect(200);
    assert_eq!(ids(&page), vec![id(&c), id(&b)]);
    assert_eq!(page["has_more"], false);
    app.get(
        &format!("/documents?type=w9&starting_after={}", id(&a)),
        key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    app.get("/documents?type=card", key)
        .await
        .expect_error(400, "invalid_request");
    app.get("/documents?limit=101", key)
        .await
        .expect_error(400, "invalid_limit");
}

async fn an_upload_with_an_idempotency_key_is_stored_once(app: TestApp) {
    let key = &app.a.key;
    let first = upload(
        &app,
        key,
        form(b"abc", "a.txt", &[("type", "other"), ("tag", "x")]),
        Some("up-1"),
    )
    .await;
    assert!(first.headers.get("idempotent-replayed").is_none());
    let first_bytes = first.bytes.clone();
    let first = first.expect(200);
    let again = upload(
        &app,
        key,
        form(b"abc", "a.txt", &[("type", "other"), ("tag", "x")]),
        Some("up-1"),
    )
    .await;
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.bytes, first_bytes);
    assert_eq!(again.expect(200)["id"], first["id"]);
    // Another file or another field under the same key.
    upload(
        &app,
        key,
        form(b"abd", "a.txt", &[("type", "other"), ("tag", "x")]),
        Some("up-1"),
    )
    .await
    .expect_error(422, "idempotency_key_reused");
    upload(
        &app,
        key,
        form(b"abc", "a.txt", &[("type", "other"), ("tag", "y")]),
        Some("up-1"),
    )
    .await
    .expect_error(422, "idempotency_key_reused");
    assert_eq!(
        ids(&app.get("/documents", key).await.expect(200)),
        vec![id(&first)]
    );
}

async fn the_entity_record_lists_its_documents_newest_first(app: TestApp) {
    let key = &app.a.key;
    let ada = app
        .post(
            "/entities/person",
            key,
            &json!({"first_name": "Ada", "last_name": "L"}),
        )
        .await
        .expect(200);
    let ada_id = id(&ada);
    let first = upload_ok(
        &app,
        key,
        b"1",
        "one.txt",
        &[("type", "identity_passport"), ("entity_id", &ada_id)],
    )
    .await;
    let second = upload_ok(
        &app,
        key,
        b"2",
        "two.txt",
        &[("type", "identity_utility"), ("entity_id", &ada_id)],
    )
    .await;
    upload_ok(&app, key, b"3", "loose.txt", &[("type", "other")]).await;
    let record = app
        .get(&format!("/entities/{ada_id}"), key)
        .await
        .expect(200);
    let docs = &record["documents"];
    assert_eq!(
        docs.as_array()
            .map(|a| a.iter().map(id).collect::<Vec<_>>()),
        Some(vec![id(&second), id(&first)])
    );
    assert_eq!(docs[0]["file_name"], "two.txt");
    assert_eq!(docs[0]["checksum"], second["checksum"]);
    assert_eq!(
        fetch(&app, docs[1]["url"].as_str().unwrap_or_default())
            .await
            .bytes,
        b"1".to_vec()
    );
    // List items carry their documents too; other entities have none.
    let list = app.get("/entities", key).await.expect(200);
    let item = list["entities"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["id"] == ada["id"]).cloned())
        .unwrap_or_default();
    assert_eq!(item["documents"].as_array().map(Vec::len), Some(2));
    assert_eq!(list["entities"][1]["documents"], json!([]));
    // An update answers the documents as well.
    let updated = app
        .patch(
            &format!("/entities/person/{ada_id}"),
            key,
            &json!({"middle_name": "K"}),
        )
        .await
        .expect(200);
    assert_eq!(updated["documents"].as_array().map(Vec::len), Some(2));
}

async fn uploads_without_a_file_or_type_are_400(app: TestApp) {
    let key = &app.a.key;
    let no_file = Form::new().text("type", "other");
    upload(&app, key, no_file, None)
        .await
        .expect_error(400, "invalid_request");
    let e = upload(&app, key, form(b"abc", "a.txt", &[]), None)
        .await
        .expect_error(400, "invalid_request");
    assert!(
        e["message"].as_str().unwrap_or_default().contains("type"),
        "{e}"
    );
    upload(
        &app,
        key,
        form(b"abc", "a.txt", &[("type", "selfie")]),
        None,
    )
    .await
    .expect_error(400, "invalid_request");
    let e = upload(
        &app,
        key,
        form(
            b"abc",
            "a.txt",
            &[("type", "other"), ("description", &"x".repeat(128))],
        ),
        None,
    )
    .await
    .expect_error(400, "invalid_request");
    assert!(e["details"]["description"].is_string(), "{e}");
    let e = upload(
        &app,
        key,
        form(
            b"abc",
            "a.txt",
            &[("type", "other"), ("tag", &"x".repeat(256))],
        ),
        None,
    )
    .await
    .expect_error(400, "invalid_request");
    assert!(e["details"]["tag"].is_string(), "{e}");
    upload_ok(
        &app,
        key,
        b"",
        "a.txt",
        &[
            ("type", "other"),
            ("description", &"x".repeat(127)),
            ("tag", &"x".repeat(255)),
        ],
    )
    .await;
    upload(
        &app,
        key,
        form(b"abc", "a.txt", &[("type", "other"), ("color", "red")]),
        None,
    )
    .await
    .expect_error(400, "invalid_request");
    // 401 before anything else.
    let resp = app
        .client
        .post(format!("{}/documents", app.base))
        .multipart(form(b"abc", "a.txt", &[("type", "other")]))
        .send()
        .await;
    answer(resp.expect("sent"))
        .await
        .expect_error(401, "unauthorized");
    assert_eq!(
        app.get("/documents", key).await.expect(200)["documents"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}
