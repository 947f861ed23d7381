//! Account numbers: create (with `Idempotency-Key`), get, update and the list per bank account.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::bank_accounts::{create_account, insert_entity, set_status};
use crate::helpers::{TestApp, api_tests};

api_tests!(
    account_numbers_are_created_read_and_updated_with_the_configured_bank_codes,
    account_number_bodies_are_checked_field_by_field,
    closed_and_frozen_accounts_take_no_new_account_numbers,
    account_number_creation_with_an_idempotency_key_replays_and_refuses_reuse,
    account_numbers_of_other_platforms_and_malformed_ids_are_404,
    account_numbers_list_newest_first_and_page_both_ways,
);

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_owned()
}

async fn account(app: &TestApp) -> Value {
    let entity = insert_entity(app, &app.a, "Acme", "VERIFIED").await;
    create_account(app, &app.a, &entity, "Operating", json!({})).await
}

async fn account_numbers_are_created_read_and_updated_with_the_configured_bank_codes(app: TestApp) {
    let acct = account(&app).await;
    let path = format!("/bank-accounts/{}/account-numbers", id(&acct));
    let plain = app.post(&path, &app.a.key, &json!({})).await.expect(200);
    assert!(
        plain["id"].as_str().is_some_and(|s| s.starts_with("acno_")),
        "{plain}"
    );
    assert_eq!(plain["bank_account_id"], acct["id"]);
    assert_eq!(plain["description"], "");
    assert_eq!(plain["check_issuing_positive_pay_required"], false);
    assert_eq!(
        plain["routing_number"],
        app.state.config.routing_number.as_str()
    );
    assert_eq!(plain["bic"], app.state.config.bic.as_str());
    let body =
        json!({"description": "Payroll deposits", "check_issuing_positive_pay_required": true});
    let flagged = app.post(&path, &app.a.key, &body).await.expect(200);
    assert_eq!(flagged["description"], "Payroll deposits");
    assert_eq!(flagged["check_issuing_positive_pay_required"], true);
    let numbers: HashSet<&str> = [&plain, &flagged, &acct]
        .iter()
        .filter_map(|v| {
            v["account_number"]
                .as_str()
                .or(v["default_account_number"].as_str())
        })
        .collect();
    assert_eq!(numbers.len(), 3, "account numbers are unique");
    for n in &numbers {
        assert!(
            (12..=17).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit()),
            "{n}"
        );
    }
    let got = app
        .get(&format!("/account-numbers/{}", id(&flagged)), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, flagged);

    let target = format!("/account-numbers/{}", id(&flagged));
    let updated = app
        .patch(&target, &app.a.key, &json!({"description": "Renamed"}))
        .await
        .expect(200);
    assert_eq!(updated["description"], "Renamed");
    assert_eq!(
        updated["check_issuing_positive_pay_required"], true,
        "absent fields keep their values"
    );
    assert_eq!(updated["account_number"], flagged["account_number"]);
    let updated = app
        .patch(
            &target,
            &app.a.key,
            &json!({"check_issuing_positive_pay_required": false, "description": ""}),
        )
        .await
        .expect(200);
    assert_eq!(updated["description"], "");
    assert_eq!(updated["check_issuing_positive_pay_required"], false);
    assert_eq!(app.get(&target, &app.a.key).await.expect(200), updated);
}

async fn account_number_bodies_are_checked_field_by_field(app: TestApp) {
    let acct = account(&app).await;
    let path = format!("/bank-accounts/{}/account-numbers", id(&acct));
    let target = format!(
        "/account-numbers/{}",
        acct["default_account_number_id"].as_str().expect("an id")
    );
    for body in [
        json!({"description": "x".repeat(256)}),
        json!({"check_issuing_positive_pay_required": "yes"}),
        json!({"account_number": "123456789012"}),
        json!({"routing_number": "021000021"}),
    ] {
        let e = app
            .post(&path, &app.a.key, &body)
            .await
            .expect_error(400, "invalid_request");
        assert!(e["details"].is_object(), "{e}");
        app.patch(&target, &app.a.key, &body)
            .await
            .expect_error(400, "invalid_request");
    }
    // 255 characters are fine, and count characters rather than bytes.
    app.post(&path, &app.a.key, &json!({"description": "é".repeat(255)}))
        .await
        .expect(200);
    // Shape before 404: an invalid body on an unknown account is a 400.
    app.post(
        "/bank-accounts/bacc_nope/account-numbers",
        &app.a.key,
        &json!({"bogus": 1}),
    )
    .await
    .expect_error(400, "invalid_request");
}

async fn closed_and_frozen_accounts_take_no_new_account_numbers(app: TestApp) {
    let acct = account(&app).await;
    let path = format!("/bank-accounts/{}/account-numbers", id(&acct));
    set_status(&app, &id(&acct), "frozen").await;
    let e = app
        .post(&path, &app.a.key, &json!({}))
        .await
        .expect_error(400, "bank_account_not_open");
    assert_eq!(e["type"], "bank_account_error");
    app.post_idempotent(&path, &app.a.key, &json!({}), "frozen-1")
        .await
        .expect_error(400, "bank_account_not_open");
    set_status(&app, &id(&acct), "open").await;
    // The refused request stored nothing under its key.
    app.post_idempotent(&path, &app.a.key, &json!({}), "frozen-1")
        .await
        .expect(200);
    app.delete(&format!("/bank-accounts/{}", id(&acct)), &app.a.key)
        .await
        .expect(200);
    app.post(&path, &app.a.key, &json!({}))
        .await
        .expect_error(400, "bank_account_not_open");
    // Existing numbers of a closed account stay readable and listed.
    let listed = app.get(&path, &app.a.key).await.expect(200);
    assert_eq!(listed["account_numbers"].as_array().map(Vec::len), Some(2));
}

async fn account_number_creation_with_an_idempotency_key_replays_and_refuses_reuse(app: TestApp) {
    let acct = account(&app).await;
    let path = format!("/bank-accounts/{}/account-numbers", id(&acct));
    let body = json!({"description": "Once"});
    let first = app
        .post_idempotent(&path, &app.a.key, &body, "acno-key")
        .await;
    assert_eq!(first.status.as_u16(), 200);
    let again = app
        .post_idempotent(&path, &app.a.key, &body, "acno-key")
        .await;
    assert_eq!(again.status.as_u16(), 200);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.bytes, first.bytes);
    app.post_idempotent(
        &path,
        &app.a.key,
        &json!({"description": "Twice"}),
        "acno-key",
    )
    .await
    .expect_error(422, "idempotency_key_reused");
    // The same key on another account's path is another request: 422 too.
    let other = account(&app).await;
    let other_path = format!("/bank-accounts/{}/account-numbers", id(&other));
    app.post_idempotent(&other_path, &app.a.key, &body, "acno-key")
        .await
        .expect_error(422, "idempotency_key_reused");
    // 404 for the addressed account comes before the key's 422.
    app.post_idempotent(
        "/bank-accounts/bacc_nope/account-numbers",
        &app.a.key,
        &body,
        "acno-key",
    )
    .await
    .expect_error(404, "bank_account_not_found");
    let listed = app.get(&path, &app.a.key).await.expect(200);
    assert_eq!(
        listed["account_numbers"].as_array().map(Vec::len),
        Some(2),
        "the default and one more"
    );
}

async fn account_numbers_of_other_platforms_and_malformed_ids_are_404(app: TestApp) {
    let mine = account(&app).await;
    let b_entity = insert_entity(&app, &app.b, "Beta", "VERIFIED").await;
    let theirs = create_account(&app, &app.b, &b_entity, "Theirs", json!({})).await;
    let their_number = theirs["default_account_number_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    for target in [their_number.as_str(), "acno_nope", id(&mine).as_str()] {
        let path = format!("/account-numbers/{target}");
        app.get(&path, &app.a.key)
            .await
            .expect_error(404, "account_number_not_found");
        app.patch(&path, &app.a.key, &json!({"description": "x"}))
            .await
            .expect_error(404, "account_number_not_found");
    }
    for account in [id(&theirs).as_str(), "bacc_nope"] {
        let path = format!("/bank-accounts/{account}/account-numbers");
        app.get(&path, &app.a.key)
            .await
            .expect_error(404, "bank_account_not_found");
        app.post(&path, &app.a.key, &json!({}))
            .await
            .expect_error(404, "bank_account_not_found");
    }
    // B's number is unchanged.
    let still = app
        .get(&format!("/account-numbers/{their_number}"), &app.b.key)
        .await
        .expect(200);
    assert_eq!(still["description"], "");
}

async fn account_numbers_list_newest_first_and_page_both_ways(app: TestApp) {
    let acct = account(&app).await;
    let other = account(&app).await;
    let path = format!("/bank-accounts/{}/account-numbers", id(&acct));
    let mut made = vec![
        acct["default_account_number_id"]
            .as_str()
            .expect("an id")
            .to_owned(),
    ];
    for i in 0..6 {
        made.push(id(&app
            .post(&path, &app.a.key, &json!({"description": format!("n{i}")}))
            .await
            .expect(200)));
    }
    made.reverse();
    let ids = |v: &Value| -> Vec<String> {
        v["account_numbers"]
            .as_array()
            .map(|a| a.iter().map(id).collect())
            .unwrap_or_default()
    };
    let all = app
        .get(&format!("{path}?limit=100"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(ids(&all), made, "newest first, only this account's numbers");
    assert_eq!(all["has_more"], false);

    let p1 = app
        .get(&format!("{path}?limit=3"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(ids(&p1), made[0..3]);
    assert_eq!(p1["has_more"], true);
    let p2 = app
        .get(
            &format!("{path}?limit=3&starting_after={}", made[2]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&p2), made[3..6]);
    assert_eq!(p2["has_more"], true);
    let p3 = app
        .get(
            &format!("{path}?limit=3&starting_after={}", made[5]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&p3), made[6..7]);
    assert_eq!(p3["has_more"], false);
    let back = app
        .get(
            &format!("{path}?limit=3&ending_before={}", made[6]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&back), made[3..6]);
    assert_eq!(back["has_more"], true);
    let back = app
        .get(
            &format!("{path}?limit=3&ending_before={}", made[2]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&back), made[0..2]);
    assert_eq!(back["has_more"], false);

    // Another account's number is not a cursor of this list.
    let foreign_cursor = other["default_account_number_id"].as_str().expect("an id");
    app.get(
        &format!("{path}?starting_after={foreign_cursor}"),
        &app.a.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    app.get(
        &format!("{path}?starting_after=a&ending_before=b"),
        &app.a.key,
    )
    .await
    .expect_error(400, "conflicting_pagination_cursors");
    app.get(&format!("{path}?limit=101"), &app.a.key)
        .await
        .expect_error(400, "invalid_limit");
}
