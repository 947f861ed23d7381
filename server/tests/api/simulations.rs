//! Simulated incoming ACH credits and debits, and the ACH transfers they record.

use bankd::auth::{self, KeyMode};
use bankd::model::ids::PlatformId;
use serde_json::{Value, json};

use crate::helpers::{Tenant, TestApp, api_tests};
use crate::transfers::{
    Acct, Bal, assert_books_balance, balances, fund, open_account, root_account,
};

api_tests!(
    simulations_refuse_live_keys_which_still_see_the_same_data,
    an_ach_credit_lands_in_available_through_the_settlement_account,
    an_ach_debit_the_account_cannot_cover_is_returned_r01_and_moves_nothing,
    an_ach_debit_obeys_the_accounts_positive_pay_rules,
    an_overdraftable_account_may_be_debited_below_zero_while_its_reserve_covers_it,
    an_ach_credit_to_an_overdrawn_account_repays_the_shortfall_first,
    simulations_check_the_body_the_account_number_the_status_and_the_currency,
    ach_transfers_are_listed_newest_first_and_only_to_their_platform,
    an_amount_that_would_overflow_a_balance_is_refused_and_moves_nothing,
);

/// The body of a simulated incoming ACH transfer to the account's default number.
pub fn ach(account: &Acct, amount: i64, company: &str) -> Value {
    json!({
        "destination_account_number_id": account.number,
        "amount": amount,
        "currency_code": "USD",
        "company_id": company,
        "company_name": "ACME UTILITIES",
        "description": "PAYROLL",
    })
}

async fn debit(app: &TestApp, t: &Tenant, account: &Acct, amount: i64, company: &str) -> Value {
    app.post(
        "/simulate/receive-ach-debit",
        &t.key,
        &ach(account, amount, company),
    )
    .await
    .expect(200)
}

fn avail(available: i64) -> Bal {
    Bal {
        available,
        ..Bal::default()
    }
}

async fn simulations_refuse_live_keys_which_still_see_the_same_data(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    let platform = PlatformId::from_trusted(app.a.id.clone());
    let live = auth::create_api_key(
        &app.ctx.db,
        app.state.clock.as_ref(),
        &platform,
        KeyMode::Live,
    )
    .await
    .expect("live key");
    let live = live.expose_secret().to_owned();
    for path in [
        "/simulate/receive-ach-credit",
        "/simulate/receive-ach-debit",
    ] {
        app.post(path, &live, &ach(&account, 100, "1234567890"))
            .await
            .expect_error(403, "sandbox_only");
    }
    assert_eq!(balances(&app, &app.a, &account.id).await, Bal::default());
    let list = app.get("/transfers/ach", &live).await.expect(200);
    assert_eq!(list["transfers"], json!([]));
    // The live key sees what the test key did.
    fund(&app, &app.a, &account, 100).await;
    let list = app.get("/transfers/ach", &live).await.expect(200);
    assert_eq!(list["transfers"].as_array().map(Vec::len), Some(1));
}

async fn an_ach_credit_lands_in_available_through_the_settlement_account(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    let t = app
        .post(
            "/simulate/receive-ach-credit",
            &app.a.key,
            &ach(&account, 2_500, "1234567890"),
        )
        .await
        .expect(200);
    let id = t["id"].as_str().expect("id");
    assert!(id.starts_with("acht_") && id.len() == 32, "{id}");
    assert_eq!(t["type"], "CREDIT");
    assert_eq!(t["is_incoming"], true);
    assert_eq!(t["status"], "COMPLETED");
    assert_eq!(t["return_code"], Value::Null);
    assert_eq!(t["bank_account_id"], account.id.as_str());
    assert_eq!(t["account_number_id"], account.number.as_str());
    assert_eq!(t["amount"], 2_500);
    assert_eq!(t["currency_code"], "USD");
    assert_eq!(t["company_id"], "1234567890");
    assert_eq!(t["company_name"], "ACME UTILITIES");
    assert!(t["created_at"].is_string());
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(2_500));
    let settlement = &app.a.root_accounts[2];
    assert_eq!(balances(&app, &app.a, settlement).await, avail(-2_500));
    let got = app
        .get(&format!("/transfers/ach/{id}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, t);
    // currency_code defaults to USD.
    let mut body = ach(&account, 500, "1234567890");
    body.as_object_mut().map(|o| o.remove("currency_code"));
    app.post("/simulate/receive-ach-credit", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(3_000));
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_ach_debit_the_account_cannot_cover_is_returned_r01_and_moves_nothing(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    fund(&app, &app.a, &account, 1_000).await;
    let t = debit(&app, &app.a, &account, 1_001, "1234567890").await;
    assert_eq!(t["type"], "DEBIT");
    assert_eq!(t["status"], "RETURNED");
    assert_eq!(t["return_code"], "R01");
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(1_000));
    // The returned debit is on record.
    let got = app
        .get(
            &format!("/transfers/ach/{}", t["id"].as_str().expect("id")),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(got, t);
    // A debit the account can cover leaves through the settlement account.
    let t = debit(&app, &app.a, &account, 1_000, "1234567890").await;
    assert_eq!(
        (t["status"].clone(), t["return_code"].clone()),
        (json!("COMPLETED"), Value::Null)
    );
    assert_eq!(balances(&app, &app.a, &account.id).await, Bal::default());
    assert_eq!(
        balances(&app, &app.a, &app.a.root_accounts[2]).await,
        Bal::default()
    );
    // Money on hold is not available to a debit either.
    fund(&app, &app.a, &account, 100).await;
    let other = open_account(&app, &app.a, "USD", false).await;
    let hold = json!({"amount": 60, "sender_bank_account_id": account.id, "receiver_bank_account_id": other.id, "hold": true});
    app.post("/transfers/book", &app.a.key, &hold)
        .await
        .expect(200);
    let t = debit(&app, &app.a, &account, 41, "1234567890").await;
    assert_eq!(t["return_code"], "R01");
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_ach_debit_obeys_the_accounts_positive_pay_rules(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    fund(&app, &app.a, &account, 10_000).await;
    // Without rules every company may debit.
    let t = debit(&app, &app.a, &account, 100, "ANYCOMPANY").await;
    assert_eq!(t["status"], "COMPLETED");
    let rule = json!({
        "bank_account_id": account.id,
        "ach_company_id": "1234567890",
        "amount_condition": "less_than_or_equal_to",
        "amount": 500,
        "description": "Utilities",
    });
    app.post("/ach-positive-pay-rules", &app.a.key, &rule)
        .await
        .expect(200);
    let t = debit(&app, &app.a, &account, 100, "ANYCOMPANY").await;
    assert_eq!(
        (t["status"].clone(), t["return_code"].clone()),
        (json!("RETURNED"), json!("R29"))
    );
    let t = debit(&app, &app.a, &account, 501, "1234567890").await;
    assert_eq!(t["return_code"], "R29");
    let t = debit(&app, &app.a, &account, 500, "1234567890").await;
    assert_eq!(t["status"], "COMPLETED");
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(9_400));
    // Authorisation comes before funds: an unauthorised debit beyond the funds is R29.
    let t = debit(&app, &app.a, &account, 1_000_000, "ANYCOMPANY").await;
    assert_eq!(t["return_code"], "R29");
    // Rules do not limit credits.
    let t = app
        .post(
            "/simulate/receive-ach-credit",
            &app.a.key,
            &ach(&account, 1, "ANYCOMPANY"),
        )
        .await
        .expect(200);
    assert_eq!(t["status"], "COMPLETED");
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_overdraftable_account_may_be_debited_below_zero_while_its_reserve_covers_it(
    app: TestApp,
) {
    let reserve = root_account(&app, &app.a, 1).await;
    fund(&app, &app.a, &reserve, 300).await;
    let account = open_account(&app, &app.a, "USD", true).await;
    fund(&app, &app.a, &account, 100).await;
    let t = debit(&app, &app.a, &account, 350, "1234567890").await;
    assert_eq!(t["status"], "COMPLETED");
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(-250));
    let rb = Bal {
        available: 50,
        locked: 250,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);
    let t = debit(&app, &app.a, &account, 51, "1234567890").await;
    assert_eq!(t["return_code"], "R01");
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_ach_credit_to_an_overdrawn_account_repays_the_shortfall_first(app: TestApp) {
    let reserve = root_account(&app, &app.a, 1).await;
    fund(&app, &app.a, &reserve, 1_000).await;
    let account = open_account(&app, &app.a, "USD", true).await;
    debit(&app, &app.a, &account, 400, "1234567890").await;
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(-400));
    fund(&app, &app.a, &account, 150).await;
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(-250));
    let rb = Bal {
        available: 750,
        locked: 250,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);
    fund(&app, &app.a, &account, 300).await;
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(50));
    assert_eq!(balances(&app, &app.a, &reserve.id).await, avail(1_000));
    assert_books_balance(&app, &app.a.id).await;
}

async fn simulations_check_the_body_the_account_number_the_status_and_the_currency(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    fund(&app, &app.a, &account, 100).await;
    for path in [
        "/simulate/receive-ach-credit",
        "/simulate/receive-ach-debit",
    ] {
        for (field, value) in [
            ("amount", json!(0)),
            ("amount", json!(-1)),
            ("company_id", json!("SHORT")),
            ("company_id", json!("ABCDE-1234")),
            ("company_name", json!("")),
            ("currency_code", json!("usd")),
        ] {
            let mut body = ach(&account, 1, "1234567890");
            body[field] = value;
            let e = app
                .post(path, &app.a.key, &body)
                .await
                .expect_error(400, "invalid_request");
            assert!(e["details"][field].is_string(), "{field}: {e}");
        }
        let mut body = ach(&account, 1, "1234567890");
        body.as_object_mut().map(|o| o.remove("company_name"));
        app.post(path, &app.a.key, &body)
            .await
            .expect_error(400, "invalid_request");
        let mut body = ach(&account, 1, "1234567890");
        body["bank_account_id"] = json!(account.id);
        app.post(path, &app.a.key, &body)
            .await
            .expect_error(400, "invalid_request");
        let mut body = ach(&account, 1, "1234567890");
        body["currency_code"] = json!("XXX");
        app.post(path, &app.a.key, &body)
            .await
            .expect_error(400, "unsupported_currency");
        body["currency_code"] = json!("EUR");
        app.post(path, &app.a.key, &body)
            .await
            .expect_error(400, "currency_mismatch");

        let foreign = open_account(&app, &app.b, "USD", false).await;
        for number in [
            foreign.number.as_str(),
            "acno_2Ks1MnvPLKTGvSG9QWJrCQPYqIM",
            "nope",
            account.id.as_str(),
        ] {
            let mut body = ach(&account, 1, "1234567890");
            body["destination_account_number_id"] = json!(number);
            app.post(path, &app.a.key, &body)
                .await
                .expect_error(404, "account_number_not_found");
        }
        let closed = open_account(&app, &app.a, "USD", false).await;
        app.delete(&format!("/bank-accounts/{}", closed.id), &app.a.key)
            .await
            .expect(200);
        app.post(path, &app.a.key, &ach(&closed, 1, "1234567890"))
            .await
            .expect_error(400, "bank_account_not_open");
    }
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(100));
    let list = app
        .get("/transfers/ach?limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(
        list["transfers"].as_array().map(Vec::len),
        Some(1),
        "refusals are not recorded"
    );
    assert_books_balance(&app, &app.a.id).await;
}

async fn ach_transfers_are_listed_newest_first_and_only_to_their_platform(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    let mut made = Vec::new();
    for amount in 1..=5 {
        let t = app
            .post(
                "/simulate/receive-ach-credit",
                &app.a.key,
                &ach(&account, amount, "1234567890"),
            )
            .await
            .expect(200);
        made.push(t["id"].as_str().expect("id").to_owned());
    }
    made.push(
        debit(&app, &app.a, &account, 1_000, "1234567890").await["id"]
            .as_str()
            .expect("id")
            .to_owned(),
    );
    made.reverse();
    let ids = |v: &Value| -> Vec<String> {
        v["transfers"]
            .as_array()
            .expect("list")
            .iter()
            .map(|t| t["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let all = app
        .get("/transfers/ach?limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(ids(&all), made);
    let first = app
        .get("/transfers/ach?limit=4", &app.a.key)
        .await
        .expect(200);
    assert_eq!(
        (ids(&first), first["has_more"].clone()),
        (made[..4].to_vec(), json!(true))
    );
    let next = app
        .get(
            &format!("/transfers/ach?limit=4&starting_after={}", made[3]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(
        (ids(&next), next["has_more"].clone()),
        (made[4..].to_vec(), json!(false))
    );
    let back = app
        .get(
            &format!("/transfers/ach?limit=2&ending_before={}", made[4]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&back), made[2..4].to_vec());

    let b = app.get("/transfers/ach", &app.b.key).await.expect(200);
    assert!(ids(&b).is_empty());
    app.get(&format!("/transfers/ach/{}", made[0]), &app.b.key)
        .await
        .expect_error(404, "ach_transfer_not_found");
    app.get(
        &format!("/transfers/ach?starting_after={}", made[0]),
        &app.b.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    for bad in ["acht_2Ks1MnvPLKTGvSG9QWJrCQPYqIM", "nope"] {
        app.get(&format!("/transfers/ach/{bad}"), &app.a.key)
            .await
            .expect_error(404, "ach_transfer_not_found");
    }
    app.get("/transfers/ach?limit=101", &app.a.key)
        .await
        .expect_error(400, "invalid_limit");
}

async fn an_amount_that_would_overflow_a_balance_is_refused_and_moves_nothing(app: TestApp) {
    let account = open_account(&app, &app.a, "USD", false).await;
    let other = open_account(&app, &app.a, "USD", false).await;
    fund(&app, &app.a, &account, i64::MAX).await;
    assert_eq!(balances(&app, &app.a, &account.id).await, avail(i64::MAX));
    for path in [
        "/simulate/receive-ach-credit",
        "/simulate/receive-ach-debit",
    ] {
        let e = app
            .post(path, &app.a.key, &ach(&account, 1, "1234567890"))
            .await;
        if path.ends_with("credit") {
            let e = e.expect_error(400, "invalid_request");
            assert!(e["details"]["amount"].is_string(), "{e}");
        } else {
            // A debit of 1 is fine; it brings the settlement account back from its extreme.
            assert_eq!(e.expect(200)["status"], "COMPLETED");
        }
    }
    fund(&app, &app.a, &other, 1).await;
    // The settlement account is now at -(i64::MAX): one more unit would leave the range.
    let settlement = &app.a.root_accounts[2];
    assert_eq!(balances(&app, &app.a, settlement).await, avail(-i64::MAX));
    let e = app
        .post(
            "/simulate/receive-ach-credit",
            &app.a.key,
            &ach(&other, 2, "1234567890"),
        )
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["amount"].is_string(), "{e}");
    assert_eq!(balances(&app, &app.a, &other.id).await, avail(1));
    assert_eq!(
        balances(&app, &app.a, &account.id).await,
        avail(i64::MAX - 1)
    );
    let book = json!({"amount": 1, "sender_bank_account_id": other.id, "receiver_bank_account_id": account.id});
    app.post("/transfers/book", &app.a.key, &book)
        .await
        .expect(200);
    let e = app
        .post("/transfers/book", &app.a.key, &json!({"amount": i64::MAX, "sender_bank_account_id": account.id, "receiver_bank_account_id": other.id}))
        .await;
    e.expect(200);
    assert_eq!(balances(&app, &app.a, &other.id).await, avail(i64::MAX));
    assert_books_balance(&app, &app.a.id).await;
}
