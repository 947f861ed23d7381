//! ACH positive pay rules: create, get, delete, list per bank account.

use serde_json::{Value, json};

use crate::helpers::{TestApp, api_tests};

api_tests!(
    a_created_rule_is_answered_and_can_be_read_back,
    amount_is_required_unless_any_amount_where_it_must_be_absent,
    malformed_fields_are_refused_with_a_detail_for_each,
    a_rule_needs_a_bank_account_of_the_callers_platform,
    an_account_has_at_most_one_rule_per_ach_company,
    a_deleted_rule_answers_200_without_a_body_and_is_gone_afterwards,
    rules_are_listed_per_account_newest_first_and_paginate_both_ways,
    other_platforms_never_see_a_rule_nor_use_it_as_a_cursor,
);

fn rule(account: &str, company: &str, condition: &str, amount: Option<i64>) -> Value {
    let mut body = json!({
        "bank_account_id": account,
        "ach_company_id": company,
        "amount_condition": condition,
        "description": format!("Rule for {company}"),
    });
    if let Some(amount) = amount {
        body["amount"] = json!(amount);
    }
    body
}

async fn create(app: &TestApp, key: &str, body: &Value) -> Value {
    app.post("/ach-positive-pay-rules", key, body)
        .await
        .expect(200)
}

fn ids(list: &Value) -> Vec<String> {
    list["ach_positive_pay_rules"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("an id").to_owned())
        .collect()
}

async fn a_created_rule_is_answered_and_can_be_read_back(app: TestApp) {
    let account = &app.a.root_accounts[0];
    let r = create(
        &app,
        &app.a.key,
        &rule(account, "1234567890", "equal", Some(5000)),
    )
    .await;
    let id = r["id"].as_str().expect("id");
    assert!(id.starts_with("appr_") && id.len() == 32, "{id}");
    assert_eq!(r["bank_account_id"], account.as_str());
    assert_eq!(r["ach_company_id"], "1234567890");
    assert_eq!(r["amount_condition"], "equal");
    assert_eq!(r["amount"], 5000);
    assert_eq!(r["description"], "Rule for 1234567890");
    assert!(
        r["created_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{r}"
    );
    let got = app
        .get(&format!("/ach-positive-pay-rules/{id}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, r);

    let any = create(
        &app,
        &app.a.key,
        &rule(account, "ABCDEFGHIJ", "any_amount", None),
    )
    .await;
    assert_eq!(any["amount_condition"], "any_amount");
    // `amount` is present and null for any_amount.
    assert_eq!(any.get("amount"), Some(&Value::Null));
    let lte = create(
        &app,
        &app.a.key,
        &rule(account, "abcde12345", "less_than_or_equal_to", Some(1)),
    )
    .await;
    assert_eq!(lte["amount"], 1);
}

async fn amount_is_required_unless_any_amount_where_it_must_be_absent(app: TestApp) {
    let account = &app.a.root_accounts[0];
    for (condition, amount) in [
        ("equal", None),
        ("less_than_or_equal_to", None),
        ("any_amount", Some(100)),
        ("equal", Some(0)),
        ("equal", Some(-5)),
    ] {
        let e = app
            .post(
                "/ach-positive-pay-rules",
                &app.a.key,
                &rule(account, "1234567890", condition, amount),
            )
            .await
            .expect_error(400, "invalid_request");
        assert!(
            e["details"]["amount"].is_string(),
            "{condition} {amount:?}: {e}"
        );
    }
    // Nothing was created by the refused requests.
    let list = app
        .get(
            &format!("/bank-accounts/{account}/ach-positive-pay-rules"),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(list["ach_positive_pay_rules"], json!([]));
    assert_eq!(list["has_more"], false);
}

async fn malformed_fields_are_refused_with_a_detail_for_each(app: TestApp) {
    let account = &app.a.root_accounts[0];
    for company in ["123456789", "12345678901", "12345-7890", ""] {
        let e = app
            .post(
                "/ach-positive-pay-rules",
                &app.a.key,
                &rule(account, company, "any_amount", None),
            )
            .await
            .expect_error(400, "invalid_request");
        assert!(e["details"]["ach_company_id"].is_string(), "{company}: {e}");
    }
    let mut body = rule(account, "1234567890", "any_amount", None);
    body["description"] = json!("");
    let e = app
        .post("/ach-positive-pay-rules", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["description"].is_string(), "{e}");
    body["description"] = json!("x".repeat(256));
    let e = app
        .post("/ach-positive-pay-rules", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["description"].is_string(), "{e}");

    let mut body = rule(account, "1234567890", "sometimes", None);
    body["id"] = json!("appr_mine");
    let e = app
        .post("/ach-positive-pay-rules", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["amount_condition"].is_string(), "{e}");
    assert!(
        e["details"]["id"].is_string(),
        "unknown fields are refused: {e}"
    );
    let e = app
        .post(
            "/ach-positive-pay-rules",
            &app.a.key,
            &json!({"bank_account_id": account}),
        )
        .await
        .expect_error(400, "invalid_request");
    for field in ["ach_company_id", "amount_condition", "description"] {
        assert!(e["details"][field].is_string(), "{field}: {e}");
    }
}

async fn a_rule_needs_a_bank_account_of_the_callers_platform(app: TestApp) {
    let foreign = &app.b.root_accounts[0];
    for account in [
        foreign.as_str(),
        "bacc_0000000000000000000000000000",
        "bacc_x",
        "enti_x",
    ] {
        let e = app
            .post(
                "/ach-positive-pay-rules",
                &app.a.key,
                &rule(account, "1234567890", "any_amount", None),
            )
            .await
            .expect_error(404, "bank_account_not_found");
        assert_eq!(e["type"], "bank_account_error");
    }
    // A bad request shape is answered before the missing account.
    app.post(
        "/ach-positive-pay-rules",
        &app.a.key,
        &rule(foreign, "1234567890", "equal", None),
    )
    .await
    .expect_error(400, "invalid_request");
    // B's account has no rule from A's attempt.
    let list = app
        .get(
            &format!("/bank-accounts/{foreign}/ach-positive-pay-rules"),
            &app.b.key,
        )
        .await
        .expect(200);
    assert_eq!(list["ach_positive_pay_rules"], json!([]));
}

async fn an_account_has_at_most_one_rule_per_ach_company(app: TestApp) {
    let (first, second) = (&app.a.root_accounts[0], &app.a.root_accounts[1]);
    let original = create(
        &app,
        &app.a.key,
        &rule(first, "1234567890", "equal", Some(10)),
    )
    .await;
    let e = app
        .post(
            "/ach-positive-pay-rules",
            &app.a.key,
            &rule(first, "1234567890", "any_amount", None),
        )
        .await
        .expect_error(400, "duplicate_ach_positive_pay_rule");
    assert_eq!(e["type"], "positive_pay_error");
    // The same company on another account, and another company on the same account, are fine.
    create(
        &app,
        &app.a.key,
        &rule(second, "1234567890", "any_amount", None),
    )
    .await;
    create(
        &app,
        &app.a.key,
        &rule(first, "0987654321", "any_amount", None),
    )
    .await;
    // Company ids compare exactly: case matters.
    create(
        &app,
        &app.a.key,
        &rule(first, "ABCDEFGHIJ", "any_amount", None),
    )
    .await;
    create(
        &app,
        &app.a.key,
        &rule(first, "abcdefghij", "any_amount", None),
    )
    .await;
    // Another platform's account may have a rule for the same company.
    create(
        &app,
        &app.b.key,
        &rule(&app.b.root_accounts[0], "1234567890", "any_amount", None),
    )
    .await;
    // Once the rule is deleted, the company may get a new one.
    let id = original["id"].as_str().expect("id");
    app.delete(&format!("/ach-positive-pay-rules/{id}"), &app.a.key)
        .await
        .expect(200);
    let again = create(
        &app,
        &app.a.key,
        &rule(first, "1234567890", "less_than_or_equal_to", Some(7)),
    )
    .await;
    assert_ne!(again["id"], original["id"]);
}

async fn a_deleted_rule_answers_200_without_a_body_and_is_gone_afterwards(app: TestApp) {
    let account = &app.a.root_accounts[0];
    let r = create(
        &app,
        &app.a.key,
        &rule(account, "1234567890", "any_amount", None),
    )
    .await;
    let path = format!("/ach-positive-pay-rules/{}", r["id"].as_str().expect("id"));
    let deleted = app.delete(&path, &app.a.key).await;
    assert_eq!(deleted.status.as_u16(), 200);
    assert!(deleted.bytes.is_empty(), "no body: {:?}", deleted.bytes);
    let e = app
        .get(&path, &app.a.key)
        .await
        .expect_error(404, "ach_positive_pay_rule_not_found");
    assert_eq!(e["type"], "positive_pay_error");
    app.delete(&path, &app.a.key)
        .await
        .expect_error(404, "ach_positive_pay_rule_not_found");
    for bad in ["appr_x", "bacc_0000000000000000000000000000", "nothing"] {
        app.get(&format!("/ach-positive-pay-rules/{bad}"), &app.a.key)
            .await
            .expect_error(404, "ach_positive_pay_rule_not_found");
        app.delete(&format!("/ach-positive-pay-rules/{bad}"), &app.a.key)
            .await
            .expect_error(404, "ach_positive_pay_rule_not_found");
    }
    let list = app
        .get(
            &format!("/bank-accounts/{account}/ach-positive-pay-rules"),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(list["ach_positive_pay_rules"], json!([]));
}

async fn rules_are_listed_per_account_newest_first_and_paginate_both_ways(app: TestApp) {
    let (account, other) = (&app.a.root_accounts[0], &app.a.root_accounts[1]);
    let mut created = Vec::new();
    for i in 0..5 {
        let r = create(
            &app,
            &app.a.key,
            &rule(account, &format!("COMPANY{i:03}"), "equal", Some(100 + i)),
        )
        .await;
        created.push(r["id"].as_str().expect("id").to_owned());
    }
    let elsewhere = create(
        &app,
        &app.a.key,
        &rule(other, "COMPANY000", "any_amount", None),
    )
    .await;
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();
    let base = format!("/bank-accounts/{account}/ach-positive-pay-rules");

    let all = app.get(&base, &app.a.key).await.expect(200);
    assert_eq!(ids(&all), newest_first);
    assert_eq!(all["has_more"], false);
    assert_eq!(all["ach_positive_pay_rules"][0]["amount"], 104);

    // Forward walk, two at a time.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("{base}?limit=2&starting_after={c}"),
            None => format!("{base}?limit=2"),
        };
        let page = app.get(&path, &app.a.key).await.expect(200);
        let page_ids = ids(&page);
        assert!(page_ids.len() <= 2);
        seen.extend(page_ids.iter().cloned());
        if page["has_more"] == false {
            break;
        }
        cursor = page_ids.last().cloned();
    }
    assert_eq!(seen, newest_first);

    // Backward: the page just before the oldest, still in list order.
    let page = app
        .get(
            &format!("{base}?limit=2&ending_before={}", newest_first[4]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&page), newest_first[2..4]);
    assert_eq!(page["has_more"], true);
    let page = app
        .get(
            &format!("{base}?limit=2&ending_before={}", newest_first[2]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&page), newest_first[0..2]);
    assert_eq!(page["has_more"], false);

    // The other account lists only its own rule; a rule of another account is not a cursor here.
    let other_list = app
        .get(
            &format!("/bank-accounts/{other}/ach-positive-pay-rules"),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&other_list), [elsewhere["id"].as_str().expect("id")]);
    app.get(
        &format!(
            "/bank-accounts/{other}/ach-positive-pay-rules?starting_after={}",
            created[0]
        ),
        &app.a.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");

    // Paging parameters.
    for limit in ["0", "101", "-1"] {
        app.get(&format!("{base}?limit={limit}"), &app.a.key)
            .await
            .expect_error(400, "invalid_limit");
    }
    app.get(
        &format!(
            "{base}?starting_after={}&ending_before={}",
            created[0], created[1]
        ),
        &app.a.key,
    )
    .await
    .expect_error(400, "conflicting_pagination_cursors");
    app.get(&format!("{base}?starting_after=appr_unknown"), &app.a.key)
        .await
        .expect_error(400, "invalid_pagination_cursor");
    // An unknown account is 404 even with a bad cursor.
    app.get(
        "/bank-accounts/bacc_x/ach-positive-pay-rules?starting_after=appr_unknown",
        &app.a.key,
    )
    .await
    .expect_error(404, "bank_account_not_found");
}

async fn other_platforms_never_see_a_rule_nor_use_it_as_a_cursor(app: TestApp) {
    let account = &app.a.root_accounts[0];
    let r = create(
        &app,
        &app.a.key,
        &rule(account, "1234567890", "any_amount", None),
    )
    .await;
    let id = r["id"].as_str().expect("id");
    let path = format!("/ach-positive-pay-rules/{id}");
    app.get(&path, &app.b.key)
        .await
        .expect_error(404, "ach_positive_pay_rule_not_found");
    app.delete(&path, &app.b.key)
        .await
        .expect_error(404, "ach_positive_pay_rule_not_found");
    app.get(
        &format!("/bank-accounts/{account}/ach-positive-pay-rules"),
        &app.b.key,
    )
    .await
    .expect_error(404, "bank_account_not_found");
    // B's own account, with A's rule as a cursor.
    let b_account = &app.b.root_accounts[0];
    create(
        &app,
        &app.b.key,
        &rule(b_account, "1234567890", "any_amount", None),
    )
    .await;
    for param in ["starting_after", "ending_before"] {
        app.get(
            &format!("/bank-accounts/{b_account}/ach-positive-pay-rules?{param}={id}"),
            &app.b.key,
        )
        .await
        .expect_error(400, "invalid_pagination_cursor");
    }
    // B's failed delete left A's rule in place.
    app.get(&path, &app.a.key).await.expect(200);
}
