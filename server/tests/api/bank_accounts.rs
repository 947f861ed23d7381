//! Bank accounts: create, get, update, delete (close), owners, every list filter and sort with
//! keyset pagination in both directions, and the daily history.

use std::collections::HashSet;

use bankd::domain::history::{day_start, local_date};
use bankd::model::ids::EntityId;
use bankd::store::Sql;
use chrono::{DateTime, Days, TimeDelta, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Tenant, TestApp, api_tests, exec, walk};
use crate::transfers::{
    Bal, assert_books_balance, balances, book, book_overdraft, overdraft_accounts,
};

api_tests!(
    creating_an_account_answers_its_details_and_a_default_account_number,
    creation_checks_the_body_field_by_field,
    the_owner_must_be_a_verified_entity_of_the_same_platform,
    the_overdraft_reserve_must_be_the_platforms_overdraft_reserve_account,
    creation_with_an_idempotency_key_replays_and_refuses_reuse,
    unknown_foreign_and_malformed_account_ids_are_404_everywhere,
    updates_change_only_the_given_fields_and_keep_the_rules,
    an_overdrawn_account_keeps_its_overdraft_settings_until_it_is_repaid,
    deleting_closes_an_account_only_at_zero_balances,
    owners_are_added_once_verified_and_listed_primary_first,
    every_list_filter_narrows_the_list_within_the_platform,
    balance_filters_compare_available_amounts_with_and_without_a_currency,
    pagination_walks_every_sort_both_ways_while_accounts_are_created,
    list_parameters_and_cursors_outside_the_list_are_refused,
    history_needs_a_time_zone_and_a_window_and_sums_the_postings,
);

// ------------------------------------------------------------------------------ fixtures

/// A BUSINESS entity written straight to the database (the entity API is another area).
pub async fn insert_entity(app: &TestApp, tenant: &Tenant, name: &str, status: &str) -> String {
    let now = app.state.clock.now();
    let id = EntityId::generate(now).into_string();
    exec(
        app,
        Sql::new(
            "INSERT INTO entities (id, platform_id, type, name, is_root, requires_screening, \
             verification_status, business_name, created_at, updated_at) \
             VALUES (?, ?, 'BUSINESS', ?, FALSE, FALSE, ?, ?, ?, ?)",
        )
        .bind(id.as_str())
        .bind(tenant.id.as_str())
        .bind(name)
        .bind(status)
        .bind(name)
        .bind(now)
        .bind(now),
    )
    .await;
    id
}

/// Sets the four balances of an account directly (no transfer API in this area).
pub async fn set_balances(app: &TestApp, account_id: &str, balances: [i64; 4]) {
    exec(
        app,
        Sql::new(
            "UPDATE bank_accounts SET available_amount = ?, pending_amount = ?, holding_amount = ?, \
             locked_amount = ? WHERE id = ?",
        )
        .bind(balances[0])
        .bind(balances[1])
        .bind(balances[2])
        .bind(balances[3])
        .bind(account_id),
    )
    .await;
}

pub async fn set_status(app: &TestApp, account_id: &str, status: &str) {
    exec(
        app,
        Sql::new("UPDATE bank_accounts SET status = ? WHERE id = ?")
            .bind(status)
            .bind(account_id),
    )
    .await;
}

async fn set_created_at(app: &TestApp, account_id: &str, at: DateTime<Utc>) {
    exec(
        app,
        Sql::new("UPDATE bank_accounts SET created_at = ? WHERE id = ?")
            .bind(at)
            .bind(account_id),
    )
    .await;
}

async fn insert_posting(
    app: &TestApp,
    tenant: &Tenant,
    account_id: &str,
    kind: &str,
    amount: i64,
    at: DateTime<Utc>,
) {
    exec(
        app,
        Sql::new(
            "INSERT INTO ledger_postings (platform_id, journal_id, bank_account_id, balance, amount, \
             currency_code, source_type, source_id, created_at) VALUES (?, 'jrnl_test', ?, ?, ?, 'USD', 'test', 'test', ?)",
        )
        .bind(tenant.id.as_str())
        .bind(account_id)
        .bind(kind)
        .bind(amount)
        .bind(at),
    )
    .await;
    // As the ledger does: the stored balance is the sum of its postings.
    let column = match kind {
        "available" => "available_amount",
        "pending" => "pending_amount",
        "holding" => "holding_amount",
        "locked" => "locked_amount",
        other => panic!("no balance kind {other}"),
    };
    exec(
        app,
        Sql::new(format!(
            "UPDATE bank_accounts SET {column} = {column} + ? WHERE platform_id = ? AND id = ?"
        ))
        .bind(amount)
        .bind(tenant.id.as_str())
        .bind(account_id),
    )
    .await;
}

/// Creates an account for `entity` with `extra` fields merged into the body.
pub async fn create_account(
    app: &TestApp,
    tenant: &Tenant,
    entity: &str,
    description: &str,
    extra: Value,
) -> Value {
    let mut body = json!({"entity_id": entity, "description": description});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    app.post("/bank-accounts", &tenant.key, &body)
        .await
        .expect(200)
}

fn ids(list: &Value) -> Vec<String> {
    list["bank_accounts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn list_ids(app: &TestApp, tenant: &Tenant, query: &str) -> Vec<String> {
    let body = app
        .get(&format!("/bank-accounts?limit=100&{query}"), &tenant.key)
        .await
        .expect(200);
    ids(&body)
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_owned()
}

// ------------------------------------------------------------------------------ create / get

async fn creating_an_account_answers_its_details_and_a_default_account_number(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme Corp", "VERIFIED").await;
    let created = create_account(
        &app,
        &app.a,
        &entity,
        "Operating account",
        json!({"display_name": "Acme Ops"}),
    )
    .await;
    assert!(
        created["id"]
            .as_str()
            .is_some_and(|s| s.starts_with("bacc_")),
        "{created}"
    );
    assert_eq!(created["type"], "CHECKING");
    assert_eq!(created["status"], "open");
    assert_eq!(created["currency_code"], "USD");
    assert_eq!(created["description"], "Operating account");
    assert_eq!(created["display_name"], "Acme Ops");
    assert_eq!(created["is_overdraftable"], false);
    assert_eq!(created["overdraft_reserve_account_id"], Value::Null);
    assert_eq!(created["owners"], json!([entity]));
    assert_eq!(
        created["balances"],
        json!({"available_amount": 0, "pending_amount": 0, "holding_amount": 0, "locked_amount": 0})
    );
    assert_eq!(
        created["routing_number"],
        app.state.config.routing_number.as_str()
    );
    assert_eq!(created["bic"], app.state.config.bic.as_str());
    let number = created["default_account_number"]
        .as_str()
        .expect("a number");
    assert!(
        (12..=17).contains(&number.len()) && number.bytes().all(|b| b.is_ascii_digit()),
        "{number}"
    );

    let fetched = app
        .get(&format!("/bank-accounts/{}", id(&created)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(fetched, created);
    let acno = created["default_account_number_id"]
        .as_str()
        .expect("an id");
    let n = app
        .get(&format!("/account-numbers/{acno}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(n["account_number"], number);
    assert_eq!(n["bank_account_id"], created["id"]);

    // Other currencies, and a root account reads with its details too.
    let jpy = create_account(
        &app,
        &app.a,
        &entity,
        "Yen account",
        json!({"currency_code": "JPY"}),
    )
    .await;
    assert_eq!(jpy["currency_code"], "JPY");
    let root = app
        .get(
            &format!("/bank-accounts/{}", app.a.root_accounts[0]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(root["type"], "PROGRAM_RESERVE");
    assert_eq!(root["owners"], json!([app.a.root_entity_id]));
}

async fn creation_checks_the_body_field_by_field(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let cases = [
        (
            json!({"entity_id": entity, "description": "ab"}),
            "invalid_request",
            "description",
        ),
        (
            json!({"entity_id": entity, "description": "x".repeat(256)}),
            "invalid_request",
            "description",
        ),
        (
            json!({"entity_id": entity}),
            "invalid_request",
            "description",
        ),
        (
            json!({"description": "Operating"}),
            "invalid_request",
            "entity_id",
        ),
        (
            json!({"entity_id": entity, "description": "Operating", "display_name": ""}),
            "invalid_request",
            "display_name",
        ),
        (
            json!({"entity_id": entity, "description": "Operating", "currency_code": "usd"}),
            "invalid_request",
            "currency_code",
        ),
        (
            json!({"entity_id": entity, "description": "Operating", "currency_code": "XXX"}),
            "unsupported_currency",
            "currency_code",
        ),
        (
            json!({"entity_id": entity, "description": "Operating", "is_overdraftable": true}),
            "invalid_request",
            "overdraft_reserve_account_id",
        ),
        (
            json!({"entity_id": entity, "description": "Operating", "status": "closed"}),
            "invalid_request",
            "status",
        ),
        (
            json!({"entity_id": entity, "description": "Operating", "balances": {}}),
            "invalid_request",
            "balances",
        ),
    ];
    for (body, code, field) in cases {
        let e = app
            .post("/bank-accounts", &app.a.key, &body)
            .await
            .expect_error(400, code);
        assert!(e["details"][field].is_string(), "{body} → {e}");
    }
    // Shape errors come before the 404 of an unknown entity.
    let e = app
        .post(
            "/bank-accounts",
            &app.a.key,
            &json!({"entity_id": "enti_nope", "description": "ab"}),
        )
        .await;
    e.expect_error(400, "invalid_request");
    // Nothing was created by the refused requests: only the three root accounts exist.
    assert_eq!(list_ids(&app, &app.a, "").await.len(), 3);
}

async fn the_owner_must_be_a_verified_entity_of_the_same_platform(app: TestApp) {
    let review = insert_entity(&app, &app.a, "Review", "MANUAL_REVIEW").await;
    let denied = insert_entity(&app, &app.a, "Denied", "DENIED").await;
    let foreign = insert_entity(&app, &app.b, "Foreign", "VERIFIED").await;
    let deleted = insert_entity(&app, &app.a, "Gone", "VERIFIED").await;
    exec(
        &app,
        Sql::new("UPDATE entities SET deleted_at = created_at WHERE id = ?").bind(deleted.as_str()),
    )
    .await;
    for unverified in [&review, &denied] {
        let body = json!({"entity_id": unverified, "description": "Operating"});
        app.post("/bank-accounts", &app.a.key, &body)
            .await
            .expect_error(400, "entity_not_verified");
    }
    for missing in [
        foreign.as_str(),
        deleted.as_str(),
        "enti_nope",
        "bacc_x",
        app.b.root_entity_id.as_str(),
    ] {
        let body = json!({"entity_id": missing, "description": "Operating"});
        app.post("/bank-accounts", &app.a.key, &body)
            .await
            .expect_error(404, "entity_not_found");
    }
    assert_eq!(list_ids(&app, &app.a, "").await.len(), 3);
    assert_eq!(list_ids(&app, &app.b, "").await.len(), 3);
}

async fn the_overdraft_reserve_must_be_the_platforms_overdraft_reserve_account(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let [program, reserve, settlement] = [0, 1, 2].map(|i| app.a.root_accounts[i].clone());
    let plain = create_account(&app, &app.a, &entity, "Plain", json!({})).await;
    for wrong in [
        program.as_str(),
        settlement.as_str(),
        plain["id"].as_str().unwrap_or_default(),
    ] {
        let body = json!({"entity_id": entity, "description": "Overdraft", "is_overdraftable": true,
                          "overdraft_reserve_account_id": wrong});
        let e = app.post("/bank-accounts", &app.a.key, &body).await;
        let e = e.expect_error(400, "invalid_overdraft_reserve_account");
        assert!(
            e["details"]["overdraft_reserve_account_id"].is_string(),
            "{e}"
        );
    }
    for missing in [app.b.root_accounts[1].as_str(), "bacc_nope"] {
        let body = json!({"entity_id": entity, "description": "Overdraft", "is_overdraftable": true,
                          "overdraft_reserve_account_id": missing});
        // Unknown and foreign alike: the one valid value is the platform's reserve.
        app.post("/bank-accounts", &app.a.key, &body)
            .await
            .expect_error(400, "invalid_overdraft_reserve_account");
    }
    let ok = create_account(
        &app,
        &app.a,
        &entity,
        "Overdraft",
        json!({"is_overdraftable": true, "overdraft_reserve_account_id": reserve}),
    )
    .await;
    assert_eq!(ok["is_overdraftable"], true);
    assert_eq!(ok["overdraft_reserve_account_id"], reserve.as_str());
}

async fn creation_with_an_idempotency_key_replays_and_refuses_reuse(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let body = json!({"entity_id": entity, "description": "Operating"});
    let first = app
        .post_idempotent("/bank-accounts", &app.a.key, &body, "key-1")
        .await;
    assert_eq!(first.status.as_u16(), 200);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let again = app
        .post_idempotent("/bank-accounts", &app.a.key, &body, "key-1")
        .await;
    assert_eq!(again.status.as_u16(), 200);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(
        again.bytes, first.bytes,
        "a replay is byte for byte the first answer"
    );
    assert_eq!(
        list_ids(&app, &app.a, "type=CHECKING").await,
        vec![id(&first.json)]
    );

    let other = json!({"entity_id": entity, "description": "Another"});
    app.post_idempotent("/bank-accounts", &app.a.key, &other, "key-1")
        .await
        .expect_error(422, "idempotency_key_reused");
    // 404 for the named entity comes before the key's 422; a malformed key (400) before both.
    let unknown = json!({"entity_id": "enti_nope", "description": "Operating"});
    app.post_idempotent("/bank-accounts", &app.a.key, &unknown, "key-1")
        .await
        .expect_error(404, "entity_not_found");
    let long = "k".repeat(256);
    app.post_idempotent("/bank-accounts", &app.a.key, &unknown, &long)
        .await
        .expect_error(400, "invalid_request");
    // Printable ASCII only (the parameter's `pattern`): a tab is a valid header byte, not a key.
    let refused = app
        .post_idempotent("/bank-accounts", &app.a.key, &unknown, "key\t1")
        .await
        .expect_error(400, "invalid_request");
    assert!(
        refused.to_string().contains("pattern"),
        "names the broken rule: {refused}"
    );
    // Keys are scoped per platform: B may use the same key for its own request.
    let b_entity = insert_entity(&app, &app.b, "Beta", "VERIFIED").await;
    let b_body = json!({"entity_id": b_entity, "description": "Operating"});
    let b = app
        .post_idempotent("/bank-accounts", &app.b.key, &b_body, "key-1")
        .await
        .expect(200);
    assert_ne!(b["id"], first.json["id"]);
    // A failed request is not stored: its key runs again once corrected.
    let bad = json!({"entity_id": entity, "description": "Bad", "currency_code": "XXX"});
    app.post_idempotent("/bank-accounts", &app.a.key, &bad, "key-2")
        .await
        .expect_error(400, "unsupported_currency");
    let unverified = insert_entity(&app, &app.a, "Review", "MANUAL_REVIEW").await;
    let rule = json!({"entity_id": unverified, "description": "Rule"});
    app.post_idempotent("/bank-accounts", &app.a.key, &rule, "key-3")
        .await
        .expect_error(400, "entity_not_verified");
    let fixed = json!({"entity_id": entity, "description": "Rule"});
    app.post_idempotent("/bank-accounts", &app.a.key, &fixed, "key-3")
        .await
        .expect(200);
}

async fn unknown_foreign_and_malformed_account_ids_are_404_everywhere(app: TestApp) {
    let b_entity = insert_entity(&app, &app.b, "Beta", "VERIFIED").await;
    let foreign = create_account(&app, &app.b, &b_entity, "B's account", json!({})).await;
    let a_entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    for target in [
        id(&foreign),
        "bacc_nope".to_owned(),
        "acno_whatever".to_owned(),
        "%20".to_owned(),
    ] {
        let base = format!("/bank-accounts/{target}");
        app.get(&base, &app.a.key)
            .await
            .expect_error(404, "bank_account_not_found");
        app.patch(&base, &app.a.key, &json!({"description": "Mine now"}))
            .await
            .expect_error(404, "bank_account_not_found");
        app.delete(&base, &app.a.key)
            .await
            .expect_error(404, "bank_account_not_found");
        app.get(&format!("{base}/history"), &app.a.key)
            .await
            .expect_error(404, "bank_account_not_found");
        app.post(
            &format!("{base}/owner"),
            &app.a.key,
            &json!({"entity_id": a_entity}),
        )
        .await
        .expect_error(404, "bank_account_not_found");
    }
    // B's account is untouched.
    let still = app
        .get(&format!("/bank-accounts/{}", id(&foreign)), &app.b.key)
        .await
        .expect(200);
    assert_eq!(still, foreign);
}

// ------------------------------------------------------------------------------ update / delete

async fn updates_change_only_the_given_fields_and_keep_the_rules(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let created = create_account(
        &app,
        &app.a,
        &entity,
        "Operating",
        json!({"display_name": "Ops"}),
    )
    .await;
    let path = format!("/bank-accounts/{}", id(&created));
    let updated = app
        .patch(&path, &app.a.key, &json!({"description": "Payroll"}))
        .await
        .expect(200);
    assert_eq!(updated["description"], "Payroll");
    assert_eq!(updated["display_name"], "Ops");
    assert_eq!(
        updated["default_account_number_id"],
        created["default_account_number_id"]
    );
    assert!(updated["updated_at"].as_str() >= created["updated_at"].as_str());
    assert_eq!(updated["created_at"], created["created_at"]);

    let e = app
        .patch(&path, &app.a.key, &json!({"is_overdraftable": true}))
        .await
        .expect_error(400, "invalid_request");
    assert!(
        e["details"]["overdraft_reserve_account_id"].is_string(),
        "{e}"
    );
    app.patch(&path, &app.a.key, &json!({"description": "no"}))
        .await
        .expect_error(400, "invalid_request");
    app.patch(&path, &app.a.key, &json!({"status": "frozen"}))
        .await
        .expect_error(400, "invalid_request");
    let program =
        json!({"is_overdraftable": true, "overdraft_reserve_account_id": app.a.root_accounts[0]});
    app.patch(&path, &app.a.key, &program)
        .await
        .expect_error(400, "invalid_overdraft_reserve_account");
    let foreign =
        json!({"is_overdraftable": true, "overdraft_reserve_account_id": app.b.root_accounts[1]});
    app.patch(&path, &app.a.key, &foreign)
        .await
        .expect_error(400, "invalid_overdraft_reserve_account");
    // Not a 404: that would read as the account in the path being missing.
    app.patch(
        &path,
        &app.a.key,
        &json!({"overdraft_reserve_account_id": "bacc_nope"}),
    )
    .await
    .expect_error(400, "invalid_overdraft_reserve_account");
    let unchanged = app.get(&path, &app.a.key).await.expect(200);
    assert_eq!(unchanged, updated, "refused updates change nothing");

    let reserve = &app.a.root_accounts[1];
    let ok = json!({"is_overdraftable": true, "overdraft_reserve_account_id": reserve, "display_name": "Payroll ops"});
    let over = app.patch(&path, &app.a.key, &ok).await.expect(200);
    assert_eq!(over["is_overdraftable"], true);
    assert_eq!(over["overdraft_reserve_account_id"], reserve.as_str());
    assert_eq!(over["display_name"], "Payroll ops");
    let off = app
        .patch(&path, &app.a.key, &json!({"is_overdraftable": false}))
        .await
        .expect(200);
    assert_eq!(off["is_overdraftable"], false);

    // Root accounts keep their nature: they can be renamed but not made overdraftable.
    let root = format!("/bank-accounts/{}", app.a.root_accounts[0]);
    let renamed = app
        .patch(
            &root,
            &app.a.key,
            &json!({"description": "Reserve of the program"}),
        )
        .await
        .expect(200);
    assert_eq!(renamed["type"], "PROGRAM_RESERVE");
    let body = json!({"is_overdraftable": true, "overdraft_reserve_account_id": reserve});
    app.patch(&root, &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
}

async fn an_overdrawn_account_keeps_its_overdraft_settings_until_it_is_repaid(app: TestApp) {
    let (reserve, account, other) = overdraft_accounts(&app, 10_000, 300).await;
    let overdraft = book_overdraft(&account, &other, 1_000);
    app.post("/transfers/book", &app.a.key, &overdraft)
        .await
        .expect(200);
    let path = format!("/bank-accounts/{}", account.id);
    let before = app.get(&path, &app.a.key).await.expect(200);
    let overdrawn = Bal {
        available: -700,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &account.id).await, overdrawn);
    let locked = Bal {
        available: 9_300,
        locked: 700,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &reserve.id).await, locked);

    // Turning overdraft off would strand the shortfall locked on the reserve.
    for body in [
        json!({"is_overdraftable": false}),
        json!({"is_overdraftable": false, "overdraft_reserve_account_id": reserve.id}),
        json!({"is_overdraftable": false, "description": "Renamed"}),
    ] {
        let e = app
            .patch(&path, &app.a.key, &body)
            .await
            .expect_error(400, "bank_account_overdrawn");
        assert_eq!(e["type"], "bank_account_error", "{e}");
    }
    assert_eq!(
        app.get(&path, &app.a.key).await.expect(200),
        before,
        "a refused update changes nothing"
    );
    assert_eq!(balances(&app, &app.a, &account.id).await, overdrawn);
    assert_eq!(balances(&app, &app.a, &reserve.id).await, locked);
    assert_books_balance(&app, &app.a.id).await;

    // Changes that keep the overdraft as it is are fine, also on the settlement account, which
    // is negative by design.
    let same = json!({"is_overdraftable": true, "overdraft_reserve_account_id": reserve.id,
                      "description": "Still overdrawn"});
    let renamed = app.patch(&path, &app.a.key, &same).await.expect(200);
    assert_eq!(renamed["description"], "Still overdrawn");
    assert_eq!(renamed["is_overdraftable"], true);
    let settlement = format!("/bank-accounts/{}", app.a.root_accounts[2]);
    app.patch(
        &settlement,
        &app.a.key,
        &json!({"description": "Settlement"}),
    )
    .await
    .expect(200);

    // Once repaid, the reserve has released the lock and overdraft may be turned off.
    app.post("/transfers/book", &app.a.key, &book(&other, &account, 700))
        .await
        .expect(200);
    assert_eq!(balances(&app, &app.a, &reserve.id).await.locked, 0);
    let off = app
        .patch(&path, &app.a.key, &json!({"is_overdraftable": false}))
        .await
        .expect(200);
    assert_eq!(off["is_overdraftable"], false);
    assert_eq!(balances(&app, &app.a, &account.id).await, Bal::default());
    assert_books_balance(&app, &app.a.id).await;
}

async fn deleting_closes_an_account_only_at_zero_balances(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let created = create_account(&app, &app.a, &entity, "Operating", json!({})).await;
    let account = id(&created);
    let path = format!("/bank-accounts/{account}");
    for i in 0..4 {
        let mut balances = [0; 4];
        balances[i] = 5;
        set_balances(&app, &account, balances).await;
        app.delete(&path, &app.a.key)
            .await
            .expect_error(400, "bank_account_balance_not_zero");
        assert_eq!(
            app.get(&path, &app.a.key).await.expect(200)["status"],
            "open"
        );
    }
    set_balances(&app, &account, [0; 4]).await;
    let deleted = app.delete(&path, &app.a.key).await;
    assert_eq!(deleted.status.as_u16(), 200);
    assert!(deleted.bytes.is_empty(), "no body");
    let closed = app.get(&path, &app.a.key).await.expect(200);
    assert_eq!(closed["status"], "closed");
    assert_eq!(
        app.delete(&path, &app.a.key).await.status.as_u16(),
        200,
        "deleting again answers 200"
    );
    assert_eq!(
        list_ids(&app, &app.a, "status=closed").await,
        vec![account.clone()]
    );
    // A closed account takes no new account numbers.
    app.post(&format!("{path}/account-numbers"), &app.a.key, &json!({}))
        .await
        .expect_error(400, "bank_account_not_open");
    // Root accounts cannot be closed, even at zero.
    for root in &app.a.root_accounts {
        let e = app
            .delete(&format!("/bank-accounts/{root}"), &app.a.key)
            .await
            .expect_error(400, "invalid_request");
        assert!(
            e["message"].as_str().is_some_and(|m| m.contains("root")),
            "{e}"
        );
    }
}

// ------------------------------------------------------------------------------ owners

async fn owners_are_added_once_verified_and_listed_primary_first(app: TestApp) {
    let primary = insert_entity(&app, &app.a, "Primary", "VERIFIED").await;
    let second = insert_entity(&app, &app.a, "Second", "VERIFIED").await;
    let third = insert_entity(&app, &app.a, "Third", "VERIFIED").await;
    let pending = insert_entity(&app, &app.a, "Pending", "PENDING").await;
    let foreign = insert_entity(&app, &app.b, "Foreign", "VERIFIED").await;
    let created = create_account(&app, &app.a, &primary, "Joint", json!({})).await;
    let path = format!("/bank-accounts/{}/owner", id(&created));

    let added = app
        .post(&path, &app.a.key, &json!({"entity_id": second}))
        .await
        .expect(200);
    assert_eq!(added["owners"], json!([primary, second]));
    assert_eq!(
        added["default_account_number_id"],
        created["default_account_number_id"]
    );
    let again = app
        .post(&path, &app.a.key, &json!({"entity_id": second}))
        .await
        .expect(200);
    assert_eq!(
        again["owners"],
        json!([primary, second]),
        "adding an owner again changes nothing"
    );
    let primary_again = app
        .post(&path, &app.a.key, &json!({"entity_id": primary}))
        .await
        .expect(200);
    assert_eq!(primary_again["owners"], json!([primary, second]));
    let added = app
        .post(&path, &app.a.key, &json!({"entity_id": third}))
        .await
        .expect(200);
    assert_eq!(added["owners"], json!([primary, second, third]));

    app.post(&path, &app.a.key, &json!({"entity_id": pending}))
        .await
        .expect_error(400, "entity_not_verified");
    for missing in [foreign.as_str(), "enti_nope", "nonsense"] {
        app.post(&path, &app.a.key, &json!({"entity_id": missing}))
            .await
            .expect_error(404, "entity_not_found");
    }
    app.post(&path, &app.a.key, &json!({}))
        .await
        .expect_error(400, "invalid_request");
    app.post(
        &path,
        &app.a.key,
        &json!({"entity_id": second, "position": 0}),
    )
    .await
    .expect_error(400, "invalid_request");

    let got = app
        .get(&format!("/bank-accounts/{}", id(&created)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got["owners"], json!([primary, second, third]));
    // A joint owner finds the account through the `entity_id` filter; the list shows owners too.
    assert_eq!(
        list_ids(&app, &app.a, &format!("entity_id={third}")).await,
        vec![id(&created)]
    );
    let listed = app
        .get("/bank-accounts?type=CHECKING", &app.a.key)
        .await
        .expect(200);
    assert_eq!(
        listed["bank_accounts"][0]["owners"],
        json!([primary, second, third])
    );

    // Owners come in the order they were added, not in the order of their ids (the entities
    // were created primary, second, third, and ids follow creation time).
    let later = create_account(&app, &app.a, &third, "Joint, later", json!({})).await;
    let path = format!("/bank-accounts/{}/owner", id(&later));
    for owner in [&primary, &second] {
        app.post(&path, &app.a.key, &json!({"entity_id": owner}))
            .await
            .expect(200);
    }
    let got = app
        .get(&format!("/bank-accounts/{}", id(&later)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got["owners"], json!([third, primary, second]));
    let listed = app
        .get("/bank-accounts?type=CHECKING&limit=1", &app.a.key)
        .await
        .expect(200);
    assert_eq!(listed["bank_accounts"][0]["id"], later["id"]);
    assert_eq!(
        listed["bank_accounts"][0]["owners"],
        json!([third, primary, second])
    );
}

// ------------------------------------------------------------------------------ list filters

async fn every_list_filter_narrows_the_list_within_the_platform(app: TestApp) {
    let acme = insert_entity(&app, &app.a, "Acme Industries", "VERIFIED").await;
    let zeta = insert_entity(&app, &app.a, "Zeta Holdings", "VERIFIED").await;
    let reserve = app.a.root_accounts[1].clone();
    let ops = id(&create_account(
        &app,
        &app.a,
        &acme,
        "Operating Account",
        json!({"display_name": "Main Street"}),
    )
    .await);
    let pay = id(&create_account(
        &app,
        &app.a,
        &acme,
        "Payroll",
        json!({"currency_code": "EUR"}),
    )
    .await);
    let over = id(&create_account(
        &app,
        &app.a,
        &zeta,
        "Overdraft line",
        json!({
        "is_overdraftable": true, "overdraft_reserve_account_id": reserve}),
    )
    .await);
    let frozen = id(&create_account(&app, &app.a, &zeta, "Frozen funds 50%_off", json!({})).await);
    set_status(&app, &frozen, "frozen").await;
    // B has a look-alike account that A must never see.
    let b_entity = insert_entity(&app, &app.b, "Acme Industries", "VERIFIED").await;
    let b_ops = id(&create_account(&app, &app.b, &b_entity, "Operating Account", json!({})).await);

    let set = |v: Vec<String>| v.into_iter().collect::<HashSet<_>>();
    let of = |v: &[&String]| v.iter().map(|s| (*s).clone()).collect::<HashSet<_>>();
    assert_eq!(
        set(list_ids(&app, &app.a, "type=CHECKING").await),
        of(&[&ops, &pay, &over, &frozen])
    );
    assert_eq!(
        list_ids(&app, &app.a, "type=OVERDRAFT_RESERVE").await,
        vec![reserve.clone()]
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "currency_code=EUR").await),
        of(&[&pay])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "description=operating").await),
        of(&[&ops])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "description=50%25_").await),
        of(&[&frozen]),
        "LIKE wildcards are literal"
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "description=RESERVE").await).len(),
        2,
        "program and overdraft reserves"
    );
    assert_eq!(
        set(list_ids(&app, &app.a, &format!("entity_id={zeta}")).await),
        of(&[&over, &frozen])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, &format!("entity_id={}", app.a.root_entity_id)).await).len(),
        3
    );
    assert_eq!(
        list_ids(&app, &app.a, &format!("entity_id={b_entity}")).await,
        Vec::<String>::new()
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "is_overdraftable=true").await),
        of(&[&over])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "is_overdraftable=false&type=CHECKING").await),
        of(&[&ops, &pay, &frozen])
    );
    assert_eq!(
        set(list_ids(
            &app,
            &app.a,
            &format!("overdraft_reserve_account_id={reserve}")
        )
        .await),
        of(&[&over])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "status=frozen").await),
        of(&[&frozen])
    );
    assert_eq!(list_ids(&app, &app.a, "status=closed").await.len(), 0);
    assert_eq!(
        set(list_ids(&app, &app.a, "status=open&type=CHECKING").await),
        of(&[&ops, &pay, &over])
    );
    // `query`: description, display name, an owner's name (case-insensitive), or the exact id.
    assert_eq!(
        set(list_ids(&app, &app.a, "query=PAYROLL").await),
        of(&[&pay])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "query=main%20str").await),
        of(&[&ops])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "query=zeta%20hold").await),
        of(&[&over, &frozen])
    );
    assert_eq!(
        set(list_ids(&app, &app.a, &format!("query={over}")).await),
        of(&[&over])
    );
    assert_eq!(
        list_ids(&app, &app.a, &format!("query={b_ops}"))
            .await
            .len(),
        0
    );
    assert_eq!(
        set(list_ids(&app, &app.a, "query=acme&currency_code=USD").await),
        of(&[&ops])
    );
    // created.*: bounds at an account's own creation time.
    let all = app
        .get(
            "/bank-accounts?limit=100&type=CHECKING&sort_order=asc",
            &app.a.key,
        )
        .await
        .expect(200);
    let created: Vec<String> = all["bank_accounts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["created_at"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let second = created[1].replace('+', "%2B");
    assert_eq!(
        list_ids(&app, &app.a, &format!("type=CHECKING&created.gte={second}"))
            .await
            .len(),
        3
    );
    assert_eq!(
        list_ids(&app, &app.a, &format!("type=CHECKING&created.gt={second}"))
            .await
            .len(),
        2
    );
    assert_eq!(
        list_ids(&app, &app.a, &format!("type=CHECKING&created.lte={second}"))
            .await
            .len(),
        2
    );
    assert_eq!(
        list_ids(&app, &app.a, &format!("type=CHECKING&created.lt={second}"))
            .await
            .len(),
        1
    );
    // B sees only its own.
    assert_eq!(
        set(list_ids(&app, &app.b, "type=CHECKING").await),
        of(&[&b_ops])
    );
}

async fn balance_filters_compare_available_amounts_with_and_without_a_currency(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let mut made = Vec::new();
    for (currency, amount) in [
        ("USD", 1234),
        ("USD", 1233),
        ("JPY", 12),
        ("JPY", 13),
        ("BHD", 12340),
        ("BHD", 12339),
        ("USD", -50),
    ] {
        let extra = if amount < 0 {
            json!({"currency_code": currency, "is_overdraftable": true, "overdraft_reserve_account_id": app.a.root_accounts[1]})
        } else {
            json!({"currency_code": currency})
        };
        let account = id(&create_account(
            &app,
            &app.a,
            &entity,
            &format!("{currency} {amount}"),
            extra,
        )
        .await);
        set_balances(&app, &account, [amount, 7, 0, 0]).await;
        made.push(((currency, amount), account));
    }
    let pick = |wanted: &[(&str, i64)]| -> HashSet<String> {
        made.iter()
            .filter(|(k, _)| wanted.contains(k))
            .map(|(_, id)| id.clone())
            .collect()
    };
    let q = |s: &str| format!("type=CHECKING&{s}");
    let get = |s: String| {
        let app = &app;
        async move {
            list_ids(app, &app.a, &s)
                .await
                .into_iter()
                .collect::<HashSet<_>>()
        }
    };
    // Without currency: two implied decimals, 12.34 in every currency.
    assert_eq!(
        get(q("balance.gte=1234")).await,
        pick(&[("USD", 1234), ("JPY", 13), ("BHD", 12340)])
    );
    assert_eq!(get(q("balance.gt=1234")).await, pick(&[("JPY", 13)]));
    assert_eq!(
        get(q("balance.lt=1234")).await,
        pick(&[("USD", 1233), ("JPY", 12), ("BHD", 12339), ("USD", -50)])
    );
    assert_eq!(
        get(q("balance.lte=1234")).await,
        pick(&[
            ("USD", 1234),
            ("USD", 1233),
            ("JPY", 12),
            ("BHD", 12340),
            ("BHD", 12339),
            ("USD", -50)
        ])
    );
    assert_eq!(
        get(q("balance.gte=1200&balance.lt=1234")).await,
        pick(&[("USD", 1233), ("JPY", 12), ("BHD", 12339)])
    );
    assert_eq!(get(q("balance.lt=0")).await, pick(&[("USD", -50)]));
    // Extremes never overflow into a 500.
    assert_eq!(
        get(q(&format!("balance.lt={}", i64::MAX))).await.len(),
        made.len()
    );
    assert_eq!(get(q(&format!("balance.gt={}", i64::MAX))).await.len(), 0);
    assert_eq!(
        get(q(&format!("balance.gte={}", i64::MIN))).await.len(),
        made.len()
    );
    // With a currency: that currency's minor units, and only that currency.
    assert_eq!(
        get(q("currency_code=JPY&balance.gte=13")).await,
        pick(&[("JPY", 13)])
    );
    assert_eq!(
        get(q("currency_code=BHD&balance.lt=12340")).await,
        pick(&[("BHD", 12339)])
    );
    assert_eq!(
        get(q("currency_code=USD&balance.gte=1234")).await,
        pick(&[("USD", 1234)])
    );
    // The sort by balance agrees with the amounts (ties broken by id).
    let sorted = app
        .get(
            "/bank-accounts?type=CHECKING&sort=balance&sort_order=asc&limit=100",
            &app.a.key,
        )
        .await
        .expect(200);
    let amounts: Vec<i64> = sorted["bank_accounts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["balances"]["available_amount"].as_i64())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(amounts, vec![-50, 12, 13, 1233, 1234, 12339, 12340]);
    app.get("/bank-accounts?balance.gt=abc", &app.a.key)
        .await
        .expect_error(400, "invalid_request");
    app.get("/bank-accounts?currency_code=XXX", &app.a.key)
        .await
        .expect_error(400, "unsupported_currency");
}

// ------------------------------------------------------------------------------ pagination

async fn pagination_walks_every_sort_both_ways_while_accounts_are_created(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    // Ties on purpose: equal balances and descriptions differing only in case.
    for i in 0..14 {
        let description = match i % 3 {
            0 => "alpha".to_owned(),
            1 => "ALPHA".to_owned(),
            _ => format!("Account {i:02}"),
        };
        let account = id(&create_account(&app, &app.a, &entity, &description, json!({})).await);
        set_balances(&app, &account, [(i % 4) * 100, 0, 0, 0]).await;
    }
    for sort in ["created_at", "balance", "description"] {
        for order in ["asc", "desc"] {
            let params = format!("type=CHECKING&sort={sort}&sort_order={order}");
            let full = app
                .get(&format!("/bank-accounts?{params}&limit=100"), &app.a.key)
                .await
                .expect(200);
            let expected = ids(&full);
            assert_eq!(expected.len(), 14 + created_during(&app).await);
            check_order(&full, sort, order);

            // Walk while another task creates accounts.
            let writer = {
                let (base, key, entity) = (app.base.clone(), app.a.key.clone(), entity.clone());
                let client = app.client.clone();
                tokio::spawn(async move {
                    for n in 0..4 {
                        let body =
                            json!({"entity_id": entity, "description": format!("concurrent {n}")});
                        let _ = client
                            .post(format!("{base}/bank-accounts"))
                            .basic_auth("", Some(&key))
                            .json(&body)
                            .send()
                            .await;
                    }
                })
            };
            let (forward, backward) = walk(&app, &format!("/bank-accounts?{params}"), 4, ids).await;
            let _ = writer.await;
            let unique: HashSet<&String> = forward.iter().collect();
            assert_eq!(
                unique.len(),
                forward.len(),
                "no account twice ({sort} {order})"
            );
            let seen: Vec<&String> = forward.iter().filter(|id| expected.contains(id)).collect();
            assert_eq!(
                seen,
                expected.iter().collect::<Vec<_>>(),
                "every account that existed throughout, once, in order ({sort} {order})"
            );
            // The backward walk ran while the writer may still have been inserting too: it
            // starts at the forward walk's last account, at or after every account that
            // existed throughout, so it must see each of them once, in order.
            let unique: HashSet<&String> = backward.iter().collect();
            assert_eq!(unique.len(), backward.len(), "no account twice backward");
            let seen_back: Vec<&String> =
                backward.iter().filter(|id| expected.contains(id)).collect();
            assert_eq!(
                seen_back,
                expected.iter().collect::<Vec<_>>(),
                "backward: every account that existed throughout, once, in order ({sort} {order})"
            );

            // Nothing changes now: both directions give exactly the whole list.
            let now_full = ids(&app
                .get(&format!("/bank-accounts?{params}&limit=100"), &app.a.key)
                .await
                .expect(200));
            let (forward, backward_quiet) =
                walk(&app, &format!("/bank-accounts?{params}"), 3, ids).await;
            assert_eq!(forward, now_full, "forward walk ({sort} {order})");
            assert_eq!(backward_quiet, now_full, "backward walk ({sort} {order})");
        }
    }
}

async fn created_during(app: &TestApp) -> usize {
    let all = app
        .get(
            "/bank-accounts?type=CHECKING&description=concurrent&limit=100",
            &app.a.key,
        )
        .await
        .expect(200);
    ids(&all).len()
}

fn check_order(list: &Value, sort: &str, order: &str) {
    let items = list["bank_accounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let key = |x: &Value| -> (String, String) {
        let k = match sort {
            "balance" => format!(
                "{:020}",
                x["balances"]["available_amount"]
                    .as_i64()
                    .unwrap_or_default()
                    + 1_000_000
            ),
            "description" => x["description"].as_str().unwrap_or_default().to_lowercase(),
            _ => x["created_at"].as_str().unwrap_or_default().to_owned(),
        };
        (k, x["id"].as_str().unwrap_or_default().to_owned())
    };
    for pair in items.windows(2) {
        let (a, b) = (key(&pair[0]), key(&pair[1]));
        if sort == "created_at" {
            // RFC 3339 text of equal length compares like time; ties fall back to the id.
            continue;
        }
        match order {
            "asc" => assert!(a < b, "{a:?} before {b:?}"),
            _ => assert!(a > b, "{a:?} before {b:?}"),
        }
    }
}

async fn list_parameters_and_cursors_outside_the_list_are_refused(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let mine = id(&create_account(&app, &app.a, &entity, "Mine", json!({})).await);
    let b_entity = insert_entity(&app, &app.b, "Beta", "VERIFIED").await;
    let theirs = id(&create_account(&app, &app.b, &b_entity, "Theirs", json!({})).await);
    for cursor in ["starting_after", "ending_before"] {
        let path = format!("/bank-accounts?{cursor}={theirs}");
        app.get(&path, &app.a.key)
            .await
            .expect_error(400, "invalid_pagination_cursor");
        app.get(&format!("/bank-accounts?{cursor}=bacc_nope"), &app.a.key)
            .await
            .expect_error(400, "invalid_pagination_cursor");
        // A cursor the filters exclude is not in this list either.
        let filtered = format!("/bank-accounts?type=PROGRAM_RESERVE&{cursor}={mine}");
        app.get(&filtered, &app.a.key)
            .await
            .expect_error(400, "invalid_pagination_cursor");
        app.get(
            &format!("/bank-accounts?sort=balance&{cursor}={mine}"),
            &app.a.key,
        )
        .await
        .expect(200);
    }
    let both = format!("/bank-accounts?starting_after=x&ending_before={mine}");
    app.get(&both, &app.a.key)
        .await
        .expect_error(400, "conflicting_pagination_cursors");
    for limit in ["0", "101", "-1"] {
        app.get(&format!("/bank-accounts?limit={limit}"), &app.a.key)
            .await
            .expect_error(400, "invalid_limit");
    }
    for bad in [
        "sort=name",
        "sort_order=up",
        "status=gone",
        "type=SAVINGS",
        "is_overdraftable=maybe",
        "created.gt=yesterday",
    ] {
        app.get(&format!("/bank-accounts?{bad}"), &app.a.key)
            .await
            .expect_error(400, "invalid_request");
    }
    let r = app
        .call(Method::GET, "/bank-accounts", None, None, &[])
        .await;
    r.expect_error(401, "unauthorized");
}

// ------------------------------------------------------------------------------ history

async fn history_needs_a_time_zone_and_a_window_and_sums_the_postings(app: TestApp) {
    let entity = insert_entity(&app, &app.a, "Acme", "VERIFIED").await;
    let account = id(&create_account(&app, &app.a, &entity, "Operating", json!({})).await);
    let other = id(&create_account(&app, &app.a, &entity, "Other", json!({})).await);
    let path = format!("/bank-accounts/{account}/history");
    // 404 for a foreign account comes before the time zone check.
    let b_entity = insert_entity(&app, &app.b, "Beta", "VERIFIED").await;
    let theirs = id(&create_account(&app, &app.b, &b_entity, "Theirs", json!({})).await);
    app.get(&format!("/bank-accounts/{theirs}/history"), &app.a.key)
        .await
        .expect_error(404, "bank_account_not_found");
    app.get(&path, &app.a.key)
        .await
        .expect_error(400, "reporting_time_zone_not_set");

    let zone = "Asia/Tokyo";
    app.patch(
        "/platform",
        &app.a.key,
        &json!({"reporting_time_zone": zone}),
    )
    .await
    .expect(200);
    let tz: chrono_tz::Tz = zone.parse().expect("a zone");
    let today = local_date(tz, app.state.clock.now());
    let day = |k: u64| today.checked_sub_days(Days::new(k)).expect("a date");
    let noon = |k: u64| day_start(tz, day(k)) + TimeDelta::hours(12);

    // Created today with no postings: one day, all zero.
    let h = app.get(&path, &app.a.key).await.expect(200);
    assert_eq!(h["bank_account_id"], account.as_str());
    assert_eq!(h["time_zone"], zone);
    let days = h["history"].as_array().cloned().unwrap_or_default();
    assert_eq!(days.len(), 1);
    assert_eq!(days[0]["effective_on"], today.to_string());
    assert_eq!(days[0]["available_close"], 0);
    assert_eq!(days[0]["currency_code"], "USD");

    // Backdate the account five days and give it postings.
    set_created_at(&app, &account, day_start(tz, day(5)) + TimeDelta::hours(1)).await;
    insert_posting(
        &app,
        &app.a,
        &account,
        "available",
        5,
        day_start(tz, day(5)) + TimeDelta::hours(2),
    )
    .await;
    insert_posting(&app, &app.a, &account, "available", 1000, noon(4)).await;
    insert_posting(&app, &app.a, &account, "available", -300, noon(2)).await;
    insert_posting(&app, &app.a, &account, "holding", 300, noon(2)).await;
    insert_posting(&app, &app.a, &account, "pending", 50, day_start(tz, today)).await;
    insert_posting(&app, &app.a, &other, "available", 999_999, noon(2)).await;

    let h = app
        .get(&format!("{path}?from_date={}", day(10)), &app.a.key)
        .await
        .expect(200);
    let days = h["history"].as_array().cloned().unwrap_or_default();
    let dates: Vec<String> = days
        .iter()
        .filter_map(|d| d["effective_on"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        dates,
        (0..=5).map(|k| day(k).to_string()).collect::<Vec<_>>(),
        "creation day to today, newest first"
    );
    let by = |k: u64| days[usize::try_from(k).expect("small")].clone();
    let fields = |d: &Value, kind: &str| {
        ["open", "credit", "debit", "close"]
            .map(|f| d[format!("{kind}_{f}")].as_i64().unwrap_or(i64::MIN))
    };
    assert_eq!(fields(&by(5), "available"), [0, 5, 0, 5]);
    assert_eq!(fields(&by(4), "available"), [5, 1000, 0, 1005]);
    assert_eq!(fields(&by(3), "available"), [1005, 0, 0, 1005]);
    assert_eq!(fields(&by(2), "available"), [1005, 0, 300, 705]);
    assert_eq!(fields(&by(2), "holding"), [0, 300, 0, 300]);
    assert_eq!(by(2)["transaction_count"], 2);
    assert_eq!(by(3)["transaction_count"], 0);
    assert_eq!(fields(&by(1), "holding"), [300, 0, 0, 300]);
    assert_eq!(fields(&by(0), "pending"), [0, 50, 0, 50]);
    assert_eq!(fields(&by(0), "locked"), [0, 0, 0, 0]);

    // A later from_date opens with everything before it.
    let h = app
        .get(
            &format!("{path}?from_date={}&to_date={}", day(3), day(2)),
            &app.a.key,
        )
        .await
        .expect(200);
    let days = h["history"].as_array().cloned().unwrap_or_default();
    assert_eq!(days.len(), 2);
    assert_eq!(days[1]["effective_on"], day(3).to_string());
    assert_eq!(fields(&days[1], "available"), [1005, 0, 0, 1005]);
    assert_eq!(fields(&days[0], "available"), [1005, 0, 300, 705]);

    // The window: today and the 365 days before it.
    let oldest = day(365);
    app.get(&format!("{path}?from_date={oldest}"), &app.a.key)
        .await
        .expect(200);
    for bad in [
        format!("from_date={}", day(366)),
        format!("to_date={}", today.succ_opt().expect("a date")),
        format!("from_date={}&to_date={}", day(1), day(2)),
    ] {
        let e = app
            .get(&format!("{path}?{bad}"), &app.a.key)
            .await
            .expect_error(400, "invalid_date_range");
        assert!(e["details"].is_object(), "{e}");
    }
    app.get(&format!("{path}?from_date=2025-02-30"), &app.a.key)
        .await
        .expect_error(400, "invalid_request");
    // A range before the account existed has no days.
    let h = app
        .get(
            &format!("{path}?from_date={}&to_date={}", day(9), day(8)),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(h["history"], json!([]));
}
