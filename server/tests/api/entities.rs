//! Entities: persons and businesses, verification, lists, deletion, associated persons and
//! additional requirements.

use bankd::model::bank_accounts::BankAccountRecord;
use bankd::model::ids::BankAccountId;
use bankd::model::ledger::AccountType;
use bankd::store::Sql;
use bankd::store::bank_accounts;
use serde_json::{Value, json};

use crate::helpers::{TestApp, api_tests};

api_tests!(
    creating_a_person_nests_its_details_and_never_returns_the_ssn,
    creating_a_business_nests_its_details,
    sandbox_names_decide_verification_on_create_and_update,
    an_idempotency_key_replays_the_first_creation,
    invalid_entity_fields_are_400_with_a_detail_per_field,
    updates_change_only_the_fields_present_and_check_the_type,
    entities_of_another_platform_are_not_found_anywhere,
    listing_entities_applies_every_filter,
    listing_entities_pages_in_both_directions,
    deleting_an_entity_requires_every_owned_account_closed,
    associated_persons_link_people_to_a_business,
    associated_persons_page_newest_link_first,
    additional_requirements_are_validated_and_merged,
);

fn person(first: &str, last: &str) -> Value {
    json!({"first_name": first, "last_name": last})
}

async fn create_person(app: &TestApp, key: &str, first: &str, last: &str) -> Value {
    app.post("/entities/person", key, &person(first, last))
        .await
        .expect(200)
}

async fn create_business(app: &TestApp, key: &str, name: &str) -> Value {
    app.post("/entities/business", key, &json!({"business_name": name}))
        .await
        .expect(200)
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_default().to_owned()
}

fn ids(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e[field].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn creating_a_person_nests_its_details_and_never_returns_the_ssn(app: TestApp) {
    let body = json!({
        "first_name": "Ada",
        "middle_name": "King",
        "last_name": "Lovelace",
        "date_of_birth": "1990-12-10",
        "email": "ada@example.org",
        "ssn": "123456789",
        "address": {"line_1": "1 Main St", "city": "London", "postal_code": "N1", "country_code": "GB"}
    });
    let answer = app.post("/entities/person", &app.a.key, &body).await;
    assert!(
        !String::from_utf8_lossy(&answer.bytes).contains("12345"),
        "the full SSN leaked"
    );
    let e = answer.expect(200);
    assert!(
        e["id"]
            .as_str()
            .is_some_and(|s| s.starts_with("enti_") && s.len() == 32),
        "{e}"
    );
    assert_eq!(e["name"], "Ada Lovelace");
    assert_eq!(e["type"], "PERSON");
    assert_eq!(e["is_root"], false);
    assert_eq!(e["requires_screening"], false);
    assert_eq!(e["verification_status"], "VERIFIED");
    assert_eq!(e["review_reasons"], json!([]));
    assert_eq!(e["documents"], json!([]));
    assert!(e.get("business_details").is_none(), "{e}");
    let d = &e["person_details"];
    assert_eq!(d["first_name"], "Ada");
    assert_eq!(d["middle_name"], "King");
    assert_eq!(d["last_name"], "Lovelace");
    assert_eq!(d["date_of_birth"], "1990-12-10");
    assert_eq!(d["email"], "ada@example.org");
    assert_eq!(d["ssn_last_4"], "6789");
    assert_eq!(d["address"]["city"], "London");
    assert!(d.get("ssn").is_none());
    assert_eq!(e["created_at"], e["updated_at"]);

    let fetched = app
        .get(&format!("/entities/{}", id(&e)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(fetched, e);
    // Unset optional fields are null, not absent.
    let plain = create_person(&app, &app.a.key, "Grace", "Hopper").await;
    assert_eq!(plain["person_details"]["middle_name"], Value::Null);
    assert_eq!(plain["person_details"]["ssn_last_4"], Value::Null);
}

async fn creating_a_business_nests_its_details(app: TestApp) {
    let body = json!({
        "business_name": "Acme Robotics LLC",
        "countries_of_operation": ["US", "CA"],
        "description": "Robots",
        "ein": "123456789",
        "industry": "Manufacturing",
        "legal_type": "llc",
        "state_of_incorporation": "DE",
        "website": "https://acme.example",
        "year_of_incorporation": "2015"
    });
    let e = app
        .post("/entities/business", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(e["name"], "Acme Robotics LLC");
    assert_eq!(e["type"], "BUSINESS");
    assert_eq!(e["verification_status"], "VERIFIED");
    assert!(e.get("person_details").is_none(), "{e}");
    let d = &e["business_details"];
    assert_eq!(d["business_name"], "Acme Robotics LLC");
    assert_eq!(d["countries_of_operation"], json!(["US", "CA"]));
    assert_eq!(d["ein"], "123456789");
    assert_eq!(d["website"], "https://acme.example");
    assert_eq!(d["year_of_incorporation"], "2015");
    let root = app
        .get(&format!("/entities/{}", app.a.root_entity_id), &app.a.key)
        .await
        .expect(200);
    assert_eq!(root["is_root"], true);
    assert_eq!(root["name"], "Platform A");
    assert_eq!(
        root["business_details"]["countries_of_operation"],
        json!([])
    );
}

async fn sandbox_names_decide_verification_on_create_and_update(app: TestApp) {
    let review = create_person(&app, &app.a.key, "Ada", "Review").await;
    assert_eq!(review["verification_status"], "MANUAL_REVIEW");
    assert_eq!(review["review_reasons"], json!(["other_review_reason"]));
    let denied = create_person(&app, &app.a.key, "Ada", "Denied").await;
    assert_eq!(denied["verification_status"], "DENIED");
    assert_eq!(denied["review_reasons"], json!([]));
    let business = create_business(&app, &app.a.key, "Review").await;
    assert_eq!(business["verification_status"], "MANUAL_REVIEW");
    let business = create_business(&app, &app.a.key, "Denied").await;
    assert_eq!(business["verification_status"], "DENIED");

    // Updates verify again.
    let path = format!("/entities/person/{}", id(&review));
    let fixed = app
        .patch(&path, &app.a.key, &json!({"last_name": "Lovelace"}))
        .await
        .expect(200);
    assert_eq!(fixed["verification_status"], "VERIFIED");
    assert_eq!(fixed["review_reasons"], json!([]));
    assert_eq!(fixed["name"], "Ada Lovelace");
    let path = format!("/entities/business/{}", id(&business));
    let renamed = app
        .patch(&path, &app.a.key, &json!({"business_name": "Review"}))
        .await
        .expect(200);
    assert_eq!(renamed["verification_status"], "MANUAL_REVIEW");
    assert_eq!(renamed["name"], "Review");
}

async fn an_idempotency_key_replays_the_first_creation(app: TestApp) {
    let body = person("Ada", "Lovelace");
    let first = app
        .post_idempotent("/entities/person", &app.a.key, &body, "create-ada")
        .await;
    assert!(first.headers.get("idempotent-replayed").is_none());
    let first_bytes = first.bytes.clone();
    let first = first.expect(200);
    let again = app
        .post_idempotent("/entities/person", &app.a.key, &body, "create-ada")
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
    // Another body, or another endpoint, with the same key.
    app.post_idempotent(
        "/entities/person",
        &app.a.key,
        &person("Ada", "Other"),
        "create-ada",
    )
    .await
    .expect_error(422, "idempotency_key_reused");
    app.post_idempotent(
        "/entities/business",
        &app.a.key,
        &json!({"business_name": "X"}),
        "create-ada",
    )
    .await
    .expect_error(422, "idempotency_key_reused");
    // Keys are per platform.
    let b = app
        .post_idempotent("/entities/person", &app.b.key, &body, "create-ada")
        .await
        .expect(200);
    assert_ne!(b["id"], first["id"]);
    // Exactly one Ada on platform A.
    let list = app
        .get("/entities?type=PERSON", &app.a.key)
        .await
        .expect(200);
    assert_eq!(ids(&list, "entities", "id"), vec![id(&first)]);
    // A failed request is not stored: the corrected retry runs.
    app.post_idempotent(
        "/entities/person",
        &app.a.key,
        &json!({"first_name": "x"}),
        "retry",
    )
    .await
    .expect_error(400, "invalid_request");
    let bad = json!({"first_name": "Bo", "last_name": "B", "email": "nope"});
    app.post_idempotent("/entities/person", &app.a.key, &bad, "retry2")
        .await
        .expect_error(400, "invalid_request");
    app.post_idempotent("/entities/person", &app.a.key, &person("Bo", "B"), "retry2")
        .await
        .expect(200);
    app.post_idempotent("/entities/person", &app.a.key, &body, "")
        .await
        .expect_error(400, "invalid_request");
}

async fn invalid_entity_fields_are_400_with_a_detail_per_field(app: TestApp) {
    let bad = json!({
        "first_name": "  ",
        "last_name": "Lovelace",
        "email": "not-an-email",
        "ssn": "123-45-6789",
        "date_of_birth": "2999-01-01"
    });
    let e = app
        .post("/entities/person", &app.a.key, &bad)
        .await
        .expect_error(400, "invalid_request");
    assert_eq!(e["type"], "request_validation_error");
    // The schema's pattern refuses the SSN before the domain rules run.
    assert!(e["details"]["ssn"].is_string(), "{e}");
    // Without the schema violation, the rules of the domain name every other field.
    let bad = json!({"first_name": "  ", "last_name": "Lovelace", "email": "a@b", "date_of_birth": "2999-01-01"});
    let e = app
        .post("/entities/person", &app.a.key, &bad)
        .await
        .expect_error(400, "invalid_request");
    for field in ["first_name", "email", "date_of_birth"] {
        assert!(
            e["details"][field].is_string(),
            "no detail for {field}: {e}"
        );
    }
    // No mass assignment.
    let e = app
        .post(
            "/entities/person",
            &app.a.key,
            &json!({"first_name": "A", "last_name": "B", "is_root": true}),
        )
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["is_root"].is_string(), "{e}");
    let e = app
        .post(
            "/entities/business",
            &app.a.key,
            &json!({"business_name": "Acme", "website": "not a uri"}),
        )
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["website"].is_string(), "{e}");
    app.post("/entities/business", &app.a.key, &json!({}))
        .await
        .expect_error(400, "invalid_request");
    // Nothing was created.
    let list = app.get("/entities", &app.a.key).await.expect(200);
    assert_eq!(
        ids(&list, "entities", "id"),
        vec![app.a.root_entity_id.clone()]
    );
}

async fn updates_change_only_the_fields_present_and_check_the_type(app: TestApp) {
    let body = json!({"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.org", "ssn": "123456789"});
    let ada = app
        .post("/entities/person", &app.a.key, &body)
        .await
        .expect(200);
    let path = format!("/entities/person/{}", id(&ada));
    let updated = app
        .patch(&path, &app.a.key, &json!({"middle_name": "King"}))
        .await
        .expect(200);
    assert_eq!(updated["person_details"]["middle_name"], "King");
    assert_eq!(updated["person_details"]["email"], "ada@example.org");
    assert_eq!(updated["person_details"]["ssn_last_4"], "6789");
    assert_eq!(updated["created_at"], ada["created_at"]);
    let updated = app
        .patch(
            &path,
            &app.a.key,
            &json!({"ssn": "987654321", "first_name": "Augusta"}),
        )
        .await
        .expect(200);
    assert_eq!(updated["person_details"]["ssn_last_4"], "4321");
    assert_eq!(updated["name"], "Augusta Lovelace");
    assert_eq!(updated["person_details"]["middle_name"], "King");

    // The wrong endpoint for the type.
    let wrong = format!("/entities/business/{}", id(&ada));
    app.patch(&wrong, &app.a.key, &json!({"business_name": "X"}))
        .await
        .expect_error(400, "entity_type_mismatch");
    let acme = create_business(&app, &app.a.key, "Acme").await;
    let wrong = format!("/entities/person/{}", id(&acme));
    app.patch(&wrong, &app.a.key, &json!({"last_name": "X"}))
        .await
        .expect_error(400, "entity_type_mismatch");
    let path = format!("/entities/business/{}", id(&acme));
    let acme2 = app
        .patch(
            &path,
            &app.a.key,
            &json!({"industry": "Robots", "countries_of_operation": ["US"]}),
        )
        .await
        .expect(200);
    assert_eq!(acme2["business_details"]["industry"], "Robots");
    assert_eq!(acme2["business_details"]["business_name"], "Acme");
    assert_eq!(
        acme2["business_details"]["countries_of_operation"],
        json!(["US"])
    );

    // Unknown, malformed: 404. Shape errors first: 400 even for an unknown id.
    app.patch(
        "/entities/person/enti_000000000000000000000000000",
        &app.a.key,
        &json!({"last_name": "X"}),
    )
    .await
    .expect_error(404, "entity_not_found");
    app.patch(
        "/entities/person/nope",
        &app.a.key,
        &json!({"last_name": "X"}),
    )
    .await
    .expect_error(404, "entity_not_found");
    app.patch(
        "/entities/person/nope",
        &app.a.key,
        &json!({"email": "bad"}),
    )
    .await
    .expect_error(400, "invalid_request");
}

async fn entities_of_another_platform_are_not_found_anywhere(app: TestApp) {
    let ada = create_person(&app, &app.a.key, "Ada", "Lovelace").await;
    let acme = create_business(&app, &app.a.key, "Acme").await;
    let (ada_id, acme_id) = (id(&ada), id(&acme));
    let b = &app.b.key;
    app.get(&format!("/entities/{ada_id}"), b)
        .await
        .expect_error(404, "entity_not_found");
    app.patch(
        &format!("/entities/person/{ada_id}"),
        b,
        &json!({"last_name": "X"}),
    )
    .await
    .expect_error(404, "entity_not_found");
    app.delete(&format!("/entities/{ada_id}"), b)
        .await
        .expect_error(404, "entity_not_found");
    app.get(&format!("/entities/{acme_id}/associated-persons"), b)
        .await
        .expect_error(404, "entity_not_found");
    app.get(&format!("/entities/{ada_id}/additional-requirements"), b)
        .await
        .expect_error(404, "entity_not_found");
    app.post(
        &format!("/entities/{ada_id}/additional-requirements"),
        b,
        &json!({}),
    )
    .await
    .expect_error(404, "entity_not_found");
    // B's business cannot link A's person, nor the other way round.
    let b_business = create_business(&app, b, "B Corp").await;
    let link = json!({"person_entity_id": ada_id, "roles": ["control_person"]});
    app.post(
        &format!("/entities/{}/associated-persons", id(&b_business)),
        b,
        &link,
    )
    .await
    .expect_error(404, "entity_not_found");
    app.post(&format!("/entities/{acme_id}/associated-persons"), b, &link)
        .await
        .expect_error(404, "entity_not_found");
    // Lists and cursors.
    let list = app.get("/entities?limit=100", b).await.expect(200);
    let seen = ids(&list, "entities", "id");
    assert!(
        !seen.contains(&ada_id) && !seen.contains(&acme_id),
        "{list}"
    );
    app.get(&format!("/entities?starting_after={ada_id}"), b)
        .await
        .expect_error(400, "invalid_pagination_cursor");
    let found = app
        .get(&format!("/entities?query={ada_id}"), b)
        .await
        .expect(200);
    assert_eq!(found["entities"], json!([]));
    // A still sees its own.
    app.get(&format!("/entities/{ada_id}"), &app.a.key)
        .await
        .expect(200);
}

async fn listing_entities_applies_every_filter(app: TestApp) {
    let key = &app.a.key;
    let ada = create_person(&app, key, "Ada", "Lovelace").await;
    let grace = create_person(&app, key, "Grace", "Review").await;
    let acme = create_business(&app, key, "Acme ADA Works").await;
    let root = app.a.root_entity_id.clone();
    let get_ids = |path: String| {
        let app = &app;
        async move { ids(&app.get(&path, key).await.expect(200), "entities", "id") }
    };
    // Newest first.
    assert_eq!(
        get_ids("/entities".into()).await,
        vec![id(&acme), id(&grace), id(&ada), root.clone()]
    );
    assert_eq!(
        get_ids("/entities?type=PERSON".into()).await,
        vec![id(&grace), id(&ada)]
    );
    assert_eq!(
        get_ids("/entities?type=BUSINESS".into()).await,
        vec![id(&acme), root.clone()]
    );
    assert_eq!(
        get_ids("/entities?verification_status=MANUAL_REVIEW".into()).await,
        vec![id(&grace)]
    );
    assert_eq!(
        get_ids("/entities?is_root=true".into()).await,
        vec![root.clone()]
    );
    assert_eq!(
        get_ids("/entities?is_root=false".into()).await,
        vec![id(&acme), id(&grace), id(&ada)]
    );
    assert_eq!(
        get_ids("/entities?name=ada".into()).await,
        vec![id(&acme), id(&ada)]
    );
    assert_eq!(get_ids("/entities?name=LOVE".into()).await, vec![id(&ada)]);
    assert_eq!(
        get_ids("/entities?name=%25".into()).await,
        Vec::<String>::new()
    );
    assert_eq!(
        get_ids(format!("/entities?query={}", id(&grace))).await,
        vec![id(&grace)]
    );
    assert_eq!(
        get_ids("/entities?query=works".into()).await,
        vec![id(&acme)]
    );
    assert_eq!(
        get_ids("/entities?type=PERSON&name=grace".into()).await,
        vec![id(&grace)]
    );
    // Creation time bounds (RFC 3339 in the query string; `+` must be encoded).
    let at = grace["created_at"]
        .as_str()
        .unwrap_or_default()
        .replace('+', "%2B");
    assert_eq!(
        get_ids(format!("/entities?created.gte={at}&is_root=false")).await,
        vec![id(&acme), id(&grace)]
    );
    assert_eq!(
        get_ids(format!("/entities?created.gt={at}&is_root=false")).await,
        vec![id(&acme)]
    );
    assert_eq!(
        get_ids(format!("/entities?created.lte={at}&is_root=false")).await,
        vec![id(&grace), id(&ada)]
    );
    assert_eq!(
        get_ids(format!("/entities?created.lt={at}&is_root=false")).await,
        vec![id(&ada)]
    );
    app.get("/entities?type=ROBOT", key)
        .await
        .expect_error(400, "invalid_request");
    app.get("/entities?created.gt=yesterday", key)
        .await
        .expect_error(400, "invalid_request");
}

async fn listing_entities_pages_in_both_directions(app: TestApp) {
    let key = &app.a.key;
    for i in 0..5 {
        create_person(&app, key, "P", &format!("N{i}")).await;
    }
    let all = ids(
        &app.get("/entities?limit=100", key).await.expect(200),
        "entities",
        "id",
    );
    assert_eq!(all.len(), 6);
    let mut walked = Vec::new();
    let mut path = "/entities?limit=2".to_owned();
    loop {
        let page = app.get(&path, key).await.expect(200);
        let got = ids(&page, "entities", "id");
        walked.extend(got.iter().cloned());
        if page["has_more"] != true {
            break;
        }
        path = format!("/entities?limit=2&starting_after={}", got[got.len() - 1]);
    }
    assert_eq!(walked, all);
    let before = app
        .get(&format!("/entities?limit=2&ending_before={}", all[4]), key)
        .await
        .expect(200);
    assert_eq!(ids(&before, "entities", "id"), all[2..4].to_vec());
    assert_eq!(before["has_more"], true);
    let first = app
        .get(&format!("/entities?limit=2&ending_before={}", all[2]), key)
        .await
        .expect(200);
    assert_eq!(ids(&first, "entities", "id"), all[0..2].to_vec());
    assert_eq!(first["has_more"], false);
    app.get("/entities?limit=0", key)
        .await
        .expect_error(400, "invalid_limit");
    app.get("/entities?limit=101", key)
        .await
        .expect_error(400, "invalid_limit");
    app.get(
        &format!(
            "/entities?starting_after={}&ending_before={}",
            all[0], all[1]
        ),
        key,
    )
    .await
    .expect_error(400, "conflicting_pagination_cursors");
    app.get(
        "/entities?starting_after=enti_000000000000000000000000000",
        key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    // A cursor filtered out of the list is not in it.
    app.get(
        &format!(
            "/entities?is_root=false&starting_after={}",
            app.a.root_entity_id
        ),
        key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
}

/// Inserts an open CHECKING account owned by `owners` straight into the store (the bank account
/// API is not what this test is about).
async fn open_account(app: &TestApp, platform: &str, owners: &[&str]) -> String {
    let now = app.state.clock.now();
    let platform_id = bankd::model::ids::PlatformId::from_trusted(platform.to_owned());
    let account = BankAccountRecord::opened(
        BankAccountId::generate(now),
        platform_id.clone(),
        AccountType::Checking,
        "Joint".into(),
        "USD".into(),
        now,
    );
    let owners: Vec<bankd::model::ids::EntityId> = owners
        .iter()
        .map(|o| bankd::model::ids::EntityId::from_trusted((*o).to_owned()))
        .collect();
    app.state
        .db
        .write(|tx| {
            let (account, owners, platform_id) = (&account, &owners, &platform_id);
            Box::pin(async move {
                bank_accounts::insert(tx, account).await?;
                for (i, owner) in owners.iter().enumerate() {
                    let position = i64::try_from(i).unwrap_or(0);
                    bank_accounts::add_owner(tx, platform_id, &account.id, owner, position, now)
                        .await?;
                }
                Ok::<_, bankd::store::StoreError>(())
            })
        })
        .await
        .expect("account inserted");
    account.id.into_string()
}

async fn close_account(app: &TestApp, account_id: &str) {
    app.state
        .db
        .write(|tx| {
            Box::pin(async move {
                tx.execute(
                    Sql::new("UPDATE bank_accounts SET status = 'closed' WHERE id = ?")
                        .bind(account_id),
                )
                .await
            })
        })
        .await
        .expect("account closed");
}

async fn deleting_an_entity_requires_every_owned_account_closed(app: TestApp) {
    let key = &app.a.key;
    // The root entity owns the open root accounts.
    app.delete(&format!("/entities/{}", app.a.root_entity_id), key)
        .await
        .expect_error(400, "entity_has_bank_accounts");
    let ada = create_person(&app, key, "Ada", "Lovelace").await;
    let grace = create_person(&app, key, "Grace", "Hopper").await;
    let (ada_id, grace_id) = (id(&ada), id(&grace));
    // Grace is the joint (second) owner of an account Ada holds.
    let joint = open_account(&app, &app.a.id, &[&ada_id, &grace_id]).await;
    let e = app
        .delete(&format!("/entities/{grace_id}"), key)
        .await
        .expect_error(400, "entity_has_bank_accounts");
    assert_eq!(e["type"], "entity_error");
    app.delete(&format!("/entities/{ada_id}"), key)
        .await
        .expect_error(400, "entity_has_bank_accounts");
    app.get(&format!("/entities/{grace_id}"), key)
        .await
        .expect(200);

    close_account(&app, &joint).await;
    let gone = app
        .delete(&format!("/entities/{grace_id}"), key)
        .await
        .expect(200);
    assert_eq!(gone, json!({}));
    app.get(&format!("/entities/{grace_id}"), key)
        .await
        .expect_error(404, "entity_not_found");
    app.delete(&format!("/entities/{grace_id}"), key)
        .await
        .expect_error(404, "entity_not_found");
    app.patch(
        &format!("/entities/person/{grace_id}"),
        key,
        &json!({"last_name": "X"}),
    )
    .await
    .expect_error(404, "entity_not_found");
    let list = app.get("/entities?limit=100", key).await.expect(200);
    assert!(!ids(&list, "entities", "id").contains(&grace_id), "{list}");
    app.get(&format!("/entities?starting_after={grace_id}"), key)
        .await
        .expect_error(400, "invalid_pagination_cursor");
    // An entity without accounts is deleted at once.
    app.delete(&format!("/entities/{ada_id}"), key)
        .await
        .expect(200);
    app.delete("/entities/nope", key)
        .await
        .expect_error(404, "entity_not_found");
}

async fn associated_persons_link_people_to_a_business(app: TestApp) {
    let key = &app.a.key;
    let acme = create_business(&app, key, "Acme").await;
    let ada = app
        .post(
            "/entities/person",
            key,
            &json!({"first_name": "Ada", "last_name": "Lovelace", "ssn": "123456789"}),
        )
        .await
        .expect(200);
    let path = format!("/entities/{}/associated-persons", id(&acme));
    let body = json!({"person_entity_id": id(&ada), "roles": ["control_person", "beneficial_owner"], "title_in_business": "CEO"});
    let link = app.post(&path, key, &body).await.expect(200);
    assert_eq!(link["person_entity_id"], ada["id"]);
    assert_eq!(link["roles"], json!(["control_person", "beneficial_owner"]));
    assert_eq!(link["title_in_business"], "CEO");
    assert_eq!(link["person_details"], ada["person_details"]);
    assert!(link["created_at"].is_string());
    let list = app.get(&path, key).await.expect(200);
    assert_eq!(list["associated_persons"], json!([link]));
    assert_eq!(list["has_more"], false);

    app.post(&path, key, &body)
        .await
        .expect_error(400, "associated_person_already_linked");
    // Types: the path must be a BUSINESS, the person a PERSON.
    let other = create_business(&app, key, "Other").await;
    let e = app
        .post(
            &path,
            key,
            &json!({"person_entity_id": id(&other), "roles": ["beneficial_owner"]}),
        )
        .await
        .expect_error(400, "entity_type_mismatch");
    assert_eq!(e["type"], "entity_error");
    let person_path = format!("/entities/{}/associated-persons", id(&ada));
    app.post(
        &person_path,
        key,
        &json!({"person_entity_id": id(&ada), "roles": ["control_person"]}),
    )
    .await
    .expect_error(400, "entity_type_mismatch");
    // Unknown or malformed ids are 404; bad shapes are 400.
    for unknown in ["enti_000000000000000000000000000", "nope"] {
        app.post(
            &path,
            key,
            &json!({"person_entity_id": unknown, "roles": ["control_person"]}),
        )
        .await
        .expect_error(404, "entity_not_found");
    }
    app.post(
        "/entities/nope/associated-persons",
        key,
        &json!({"person_entity_id": id(&ada), "roles": ["control_person"]}),
    )
    .await
    .expect_error(404, "entity_not_found");
    let e = app
        .post(
            &path,
            key,
            &json!({"person_entity_id": id(&ada), "roles": ["control_person", "control_person"]}),
        )
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["roles"].is_string(), "{e}");
    app.post(
        &path,
        key,
        &json!({"person_entity_id": id(&ada), "roles": []}),
    )
    .await
    .expect_error(400, "invalid_request");
    app.post(
        &path,
        key,
        &json!({"person_entity_id": id(&ada), "roles": ["ceo"]}),
    )
    .await
    .expect_error(400, "invalid_request");
}

async fn associated_persons_page_newest_link_first(app: TestApp) {
    let key = &app.a.key;
    let acme = create_business(&app, key, "Acme").await;
    let path = format!("/entities/{}/associated-persons", id(&acme));
    let mut linked = Vec::new();
    for i in 0..4 {
        let p = create_person(&app, key, "P", &format!("N{i}")).await;
        app.post(
            &path,
            key,
            &json!({"person_entity_id": id(&p), "roles": ["beneficial_owner"]}),
        )
        .await
        .expect(200);
        linked.push(id(&p));
    }
    linked.reverse();
    let all = app.get(&path, key).await.expect(200);
    assert_eq!(ids(&all, "associated_persons", "person_entity_id"), linked);
    assert_eq!(
        all["associated_persons"][0]["title_in_business"],
        Value::Null
    );
    let page = app.get(&format!("{path}?limit=2"), key).await.expect(200);
    assert_eq!(
        ids(&page, "associated_persons", "person_entity_id"),
        linked[0..2].to_vec()
    );
    assert_eq!(page["has_more"], true);
    let page = app
        .get(&format!("{path}?limit=2&starting_after={}", linked[1]), key)
        .await
        .expect(200);
    assert_eq!(
        ids(&page, "associated_persons", "person_entity_id"),
        linked[2..4].to_vec()
    );
    assert_eq!(page["has_more"], false);
    let page = app
        .get(&format!("{path}?limit=1&ending_before={}", linked[2]), key)
        .await
        .expect(200);
    assert_eq!(
        ids(&page, "associated_persons", "person_entity_id"),
        linked[1..2].to_vec()
    );
    assert_eq!(page["has_more"], true);
    // A person that is not linked here is not a cursor of this list.
    let stranger = create_person(&app, key, "S", "T").await;
    app.get(&format!("{path}?starting_after={}", id(&stranger)), key)
        .await
        .expect_error(400, "invalid_pagination_cursor");
    app.get(&format!("{path}?limit=0"), key)
        .await
        .expect_error(400, "invalid_limit");
}

async fn additional_requirements_are_validated_and_merged(app: TestApp) {
    let key = &app.a.key;
    let fields = json!({"additional_requirements": [
        {"name": "business_email", "type": "email", "required": true},
        {"name": "phone", "type": "phone", "required": true},
        {"name": "founded", "type": "date", "required": false},
        {"name": "employees", "type": "integer", "required": false},
        {"name": "regulated", "type": "boolean", "required": true},
        {"name": "tier", "type": "enum", "required": false, "values": ["gold", "silver"]},
        {"name": "nickname", "type": "string", "required": false, "max_length": 5}
    ]});
    app.patch("/platform", key, &fields).await.expect(200);
    let acme = create_business(&app, key, "Acme").await;
    let path = format!("/entities/{}/additional-requirements", id(&acme));
    let empty = app.get(&path, key).await.expect(200);
    assert_eq!(empty["entity_id"], acme["id"]);
    assert_eq!(empty["submitted"], json!({}));
    assert_eq!(
        empty["missing"],
        json!(["business_email", "phone", "regulated"])
    );
    assert_eq!(empty["updated_at"], Value::Null);

    let bad = json!({
        "business_email": "nope",
        "phone": "555-1234",
        "founded": "2020-13-01",
        "employees": "12",
        "regulated": "yes",
        "tier": "bronze",
        "nickname": "toolong",
        "favourite_colour": "blue"
    });
    let e = app
        .post(&path, key, &bad)
        .await
        .expect_error(400, "invalid_additional_requirements");
    for field in [
        "business_email",
        "phone",
        "founded",
        "employees",
        "regulated",
        "tier",
        "nickname",
        "favourite_colour",
    ] {
        assert!(
            e["details"][field].is_string(),
            "no detail for {field}: {e}"
        );
    }
    // Nothing was stored by the refused request, and one bad field refuses all.
    let e = app
        .post(
            &path,
            key,
            &json!({"business_email": "ops@acme.example", "employees": true}),
        )
        .await
        .expect_error(400, "invalid_additional_requirements");
    assert!(e["details"]["employees"].is_string(), "{e}");
    // A value of no accepted JSON type at all (a fraction, null, an array, an object) is the
    // field's error too, not a shape error of the request.
    let e = app
        .post(
            &path,
            key,
            &json!({"employees": 12.5, "regulated": null, "tier": ["gold"], "nickname": {"a": 1}}),
        )
        .await
        .expect_error(400, "invalid_additional_requirements");
    assert_eq!(e["details"]["employees"], "must be an integer", "{e}");
    assert_eq!(e["details"]["regulated"], "must be a boolean", "{e}");
    assert_eq!(e["details"]["tier"], "must be a string", "{e}");
    assert_eq!(e["details"]["nickname"], "must be a string", "{e}");
    assert_eq!(
        app.get(&path, key).await.expect(200)["submitted"],
        json!({})
    );

    let first = app
        .post(
            &path,
            key,
            &json!({"business_email": "ops@acme.example", "employees": 12, "tier": "gold"}),
        )
        .await
        .expect(200);
    assert_eq!(
        first["submitted"],
        json!({"business_email": "ops@acme.example", "employees": 12, "tier": "gold"})
    );
    assert_eq!(first["missing"], json!(["phone", "regulated"]));
    assert!(first["updated_at"].is_string());
    let second = app
        .post(&path, key, &json!({"phone": "+14155550123", "regulated": false, "tier": "silver", "founded": "2015-06-01"}))
        .await
        .expect(200);
    assert_eq!(
        second["submitted"],
        json!({"business_email": "ops@acme.example", "employees": 12, "tier": "silver", "phone": "+14155550123", "regulated": false, "founded": "2015-06-01"})
    );
    assert_eq!(second["missing"], json!([]));
    assert_eq!(app.get(&path, key).await.expect(200), second);
    // Validation (400) comes before the lookup (404).
    app.post(
        "/entities/nope/additional-requirements",
        key,
        &json!({"unknown": 1}),
    )
    .await
    .expect_error(400, "invalid_additional_requirements");
    app.post(
        "/entities/nope/additional-requirements",
        key,
        &json!({"tier": "gold"}),
    )
    .await
    .expect_error(404, "entity_not_found");
    // A fraction for an integer field is that field's error (API-DECISIONS), not the request's
    // shape; a body that is not an object is the request's shape.
    app.post(&path, key, &json!({"employees": 1.5}))
        .await
        .expect_error(400, "invalid_additional_requirements");
    app.post(&path, key, &json!([1]))
        .await
        .expect_error(400, "invalid_request");
}
