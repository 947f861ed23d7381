//! Book transfers: create (holds, overdraft, idempotency), get, list, clear, cancel; and the
//! money helpers the simulation and conservation tests share.

use bankd::model::ids::PlatformId;
use bankd::store::ledger;
use serde_json::{Value, json};

use crate::bank_accounts::set_status;
use crate::common::Ctx;
use crate::helpers::{Answer, Tenant, TestApp, api_tests, ctx_tests, spawn_app_with, walk};
use crate::simulations::ach;

ctx_tests!(holds_are_cleared_once_whatever_the_clock_does);

api_tests!(
    a_book_transfer_moves_available_money_and_can_be_read_back,
    parties_may_be_named_by_account_number,
    each_party_must_be_named_exactly_once_and_fields_are_checked,
    unknown_malformed_and_foreign_accounts_are_404,
    refused_transfers_change_no_balance_and_record_nothing,
    frozen_accounts_take_no_money_in_or_out_and_their_holds_wait,
    a_hold_moves_money_to_holding_until_it_is_cleared_or_canceled,
    only_a_transfer_on_hold_can_be_cleared_or_canceled,
    an_overdraft_locks_the_shortfall_on_the_reserve_until_money_comes_back,
    an_overdraft_the_reserve_cannot_cover_is_insufficient_funds,
    the_idempotency_key_is_echoed_and_a_retry_replays_without_moving_money_twice,
    an_unknown_account_is_404_even_when_the_idempotency_key_was_used_for_another_body,
    lists_filter_by_account_status_and_creation_time_and_paginate,
    other_platforms_never_see_a_transfer,
);

// ------------------------------------------------------------------------------ shared helpers

/// A bank account made for a test: its id and its default account number id.
#[derive(Debug, Clone)]
pub struct Acct {
    pub id: String,
    pub number: String,
}

/// The four balances of an account, as `GET /bank-accounts/{id}` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bal {
    pub available: i64,
    pub pending: i64,
    pub holding: i64,
    pub locked: i64,
}

/// Opens a CHECKING account owned by the tenant's root entity.
pub async fn open_account(app: &TestApp, t: &Tenant, currency: &str, overdraftable: bool) -> Acct {
    let mut body = json!({
        "entity_id": t.root_entity_id,
        "description": "Test account",
        "currency_code": currency,
    });
    if overdraftable {
        body["is_overdraftable"] = json!(true);
        body["overdraft_reserve_account_id"] = json!(t.root_accounts[1]);
    }
    let a = app.post("/bank-accounts", &t.key, &body).await.expect(200);
    Acct {
        id: a["id"].as_str().expect("id").to_owned(),
        number: a["default_account_number_id"]
            .as_str()
            .expect("account number")
            .to_owned(),
    }
}

/// A root account (0 program reserve, 1 overdraft reserve, 2 settlement) with its number.
pub async fn root_account(app: &TestApp, t: &Tenant, index: usize) -> Acct {
    let id = &t.root_accounts[index];
    let a = app
        .get(&format!("/bank-accounts/{id}"), &t.key)
        .await
        .expect(200);
    Acct {
        id: id.clone(),
        number: a["default_account_number_id"]
            .as_str()
            .expect("account number")
            .to_owned(),
    }
}

/// Brings `amount` into the account from outside (a simulated ACH credit).
pub async fn fund(app: &TestApp, t: &Tenant, account: &Acct, amount: i64) {
    let body = json!({
        "destination_account_number_id": account.number,
        "amount": amount,
        "currency_code": "USD",
        "company_id": "FUNDING001",
        "company_name": "Funding",
    });
    let r = app
        .post("/simulate/receive-ach-credit", &t.key, &body)
        .await
        .expect(200);
    assert_eq!(r["status"], "COMPLETED", "{r}");
}

pub async fn balances(app: &TestApp, t: &Tenant, id: &str) -> Bal {
    let a = app
        .get(&format!("/bank-accounts/{id}"), &t.key)
        .await
        .expect(200);
    let b = &a["balances"];
    let get = |k: &str| b[k].as_i64().unwrap_or_else(|| panic!("{k} in {a}"));
    Bal {
        available: get("available_amount"),
        pending: get("pending_amount"),
        holding: get("holding_amount"),
        locked: get("locked_amount"),
    }
}

/// Asserts the ledger's invariants for a platform: all balances sum to zero, and every balance
/// equals the sum of its postings.
pub async fn assert_books_balance(app: &TestApp, platform_id: &str) {
    let platform = PlatformId::from_trusted(platform_id.to_owned());
    let mut tx = app.ctx.db.begin_read().await.expect("read");
    let total = ledger::platform_balance_total(&mut tx, &platform)
        .await
        .expect("total");
    assert_eq!(total, 0, "the platform's balances must sum to zero");
    let off = ledger::reconcile(&mut tx, &platform)
        .await
        .expect("reconcile");
    assert!(
        off.is_empty(),
        "balances differ from their postings: {off:?}"
    );
    tx.rollback().await.expect("rollback");
}

pub fn book(from: &Acct, to: &Acct, amount: i64) -> Value {
    json!({
        "amount": amount,
        "currency_code": "USD",
        "sender_bank_account_id": from.id,
        "receiver_bank_account_id": to.id,
        "description": "Payout",
    })
}

/// Platform A's overdraft reserve funded with `reserve_funds`, an overdraftable account it
/// covers, funded with `funds`, and an empty plain account: (reserve, overdraftable, plain).
pub async fn overdraft_accounts(
    app: &TestApp,
    reserve_funds: i64,
    funds: i64,
) -> (Acct, Acct, Acct) {
    let reserve = root_account(app, &app.a, 1).await;
    fund(app, &app.a, &reserve, reserve_funds).await;
    let s = open_account(app, &app.a, "USD", true).await;
    let r = open_account(app, &app.a, "USD", false).await;
    fund(app, &app.a, &s, funds).await;
    (reserve, s, r)
}

/// A book transfer that may overdraw an overdraftable sender.
pub fn book_overdraft(from: &Acct, to: &Acct, amount: i64) -> Value {
    let mut body = book(from, to, amount);
    body["allow_overdraft"] = json!(true);
    body
}

/// Puts `amount` of platform A's `from` on hold for `to`; answers the transfer.
async fn hold(app: &TestApp, from: &Acct, to: &Acct, amount: i64) -> Value {
    let mut body = book(from, to, amount);
    body["hold"] = json!(true);
    let held = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(held["status"], "HOLD", "{held}");
    held
}

/// `POST /transfers/book/{id}/{action}` (`clear` or `cancel`) as platform A.
async fn act(app: &TestApp, id: &str, action: &str, body: &Value) -> Answer {
    let path = format!("/transfers/book/{id}/{action}");
    app.post(&path, &app.a.key, body).await
}

/// The balances of platform A's `accounts`, in order.
async fn all_balances(app: &TestApp, accounts: &[&Acct]) -> Vec<Bal> {
    let mut out = Vec::new();
    for a in accounts {
        out.push(balances(app, &app.a, &a.id).await);
    }
    out
}

/// Two funded accounts of platform A: (sender with `funds`, empty receiver).
async fn pair(app: &TestApp, funds: i64) -> (Acct, Acct) {
    let s = open_account(app, &app.a, "USD", false).await;
    let r = open_account(app, &app.a, "USD", false).await;
    if funds > 0 {
        fund(app, &app.a, &s, funds).await;
    }
    (s, r)
}

fn avail(available: i64) -> Bal {
    Bal {
        available,
        ..Bal::default()
    }
}

fn ids(list: &Value) -> Vec<String> {
    list["transfers"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["id"].as_str().expect("id").to_owned())
        .collect()
}

// ------------------------------------------------------------------------------------- tests

async fn a_book_transfer_moves_available_money_and_can_be_read_back(app: TestApp) {
    let (s, r) = pair(&app, 10_000).await;
    let t = app
        .post("/transfers/book", &app.a.key, &book(&s, &r, 2_500))
        .await
        .expect(200);
    let id = t["id"].as_str().expect("id");
    assert!(id.starts_with("book_") && id.len() == 32, "{id}");
    assert_eq!(t["amount"], 2_500);
    assert_eq!(t["currency_code"], "USD");
    assert_eq!(t["sender_bank_account_id"], s.id.as_str());
    assert_eq!(t["receiver_bank_account_id"], r.id.as_str());
    assert_eq!(t["sender_account_number_id"], Value::Null);
    assert_eq!(t["receiver_account_number_id"], Value::Null);
    assert_eq!(t["description"], "Payout");
    assert_eq!(t["allow_overdraft"], false);
    assert_eq!(t["status"], "COMPLETED");
    assert_eq!(t["idempotency_key"], Value::Null);
    assert_eq!(t["created_at"], t["updated_at"]);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(7_500));
    assert_eq!(balances(&app, &app.a, &r.id).await, avail(2_500));
    let got = app
        .get(&format!("/transfers/book/{id}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, t);
    // Currency defaults to USD; description may be omitted (null).
    let body =
        json!({"amount": 1, "sender_bank_account_id": s.id, "receiver_bank_account_id": r.id});
    let t = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(
        (t["currency_code"].clone(), t["description"].clone()),
        (json!("USD"), Value::Null)
    );
    assert_books_balance(&app, &app.a.id).await;
}

async fn parties_may_be_named_by_account_number(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    let body = json!({
        "amount": 400,
        "sender_account_number_id": s.number,
        "receiver_account_number_id": r.number,
    });
    let t = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(t["sender_bank_account_id"], s.id.as_str());
    assert_eq!(t["sender_account_number_id"], s.number.as_str());
    assert_eq!(t["receiver_bank_account_id"], r.id.as_str());
    assert_eq!(t["receiver_account_number_id"], r.number.as_str());
    let mixed = json!({"amount": 100, "sender_bank_account_id": r.id, "receiver_account_number_id": s.number});
    app.post("/transfers/book", &app.a.key, &mixed)
        .await
        .expect(200);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(700));
    assert_eq!(balances(&app, &app.a, &r.id).await, avail(300));
    // An account number of the sender's own account on the other side is the same account.
    let same = json!({"amount": 1, "sender_bank_account_id": s.id, "receiver_account_number_id": s.number});
    let e = app
        .post("/transfers/book", &app.a.key, &same)
        .await
        .expect_error(400, "invalid_request");
    assert!(
        e["details"]["receiver_account_number_id"].is_string(),
        "{e}"
    );
}

async fn each_party_must_be_named_exactly_once_and_fields_are_checked(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    let both = json!({
        "amount": 1,
        "sender_bank_account_id": s.id,
        "sender_account_number_id": s.number,
        "receiver_bank_account_id": r.id,
    });
    let e = app
        .post("/transfers/book", &app.a.key, &both)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["sender_bank_account_id"].is_string(), "{e}");
    assert!(e["details"]["sender_account_number_id"].is_string(), "{e}");
    let neither = json!({"amount": 1, "sender_bank_account_id": s.id});
    let e = app
        .post("/transfers/book", &app.a.key, &neither)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["receiver_bank_account_id"].is_string(), "{e}");
    let same = book(&s, &s, 1);
    let e = app
        .post("/transfers/book", &app.a.key, &same)
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["receiver_bank_account_id"].is_string(), "{e}");
    for amount in [
        json!(0),
        json!(-5),
        json!("10"),
        json!(1.5),
        json!(9_223_372_036_854_775_808u64),
    ] {
        let mut body = book(&s, &r, 1);
        body["amount"] = amount;
        let e = app
            .post("/transfers/book", &app.a.key, &body)
            .await
            .expect_error(400, "invalid_request");
        assert!(e["details"]["amount"].is_string(), "{e}");
    }
    let mut body = book(&s, &r, 1);
    body["currency_code"] = json!("XXX");
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "unsupported_currency");
    body["currency_code"] = json!("usd");
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    let mut body = book(&s, &r, 1);
    body["status"] = json!("COMPLETED");
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    let mut body = book(&s, &r, 1);
    body["description"] = json!("x".repeat(256));
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "invalid_request");
    // Nothing moved.
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(1_000));
    let list = app.get("/transfers/book", &app.a.key).await.expect(200);
    assert!(ids(&list).is_empty(), "{list}");
}

async fn unknown_malformed_and_foreign_accounts_are_404(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    let foreign = open_account(&app, &app.b, "USD", false).await;
    fund(&app, &app.b, &foreign, 1_000).await;
    let unknown = Acct {
        id: "bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIM".into(),
        number: "acno_2Ks1MnvPLKTGvSG9QWJrCQPYqIM".into(),
    };
    let malformed = Acct {
        id: "not-an-id".into(),
        number: "acno_".into(),
    };
    for other in [&foreign, &unknown, &malformed] {
        for body in [book(&s, other, 1), book(other, &r, 1)] {
            app.post("/transfers/book", &app.a.key, &body)
                .await
                .expect_error(404, "bank_account_not_found");
        }
        let by_number = json!({"amount": 1, "sender_bank_account_id": s.id, "receiver_account_number_id": other.number});
        app.post("/transfers/book", &app.a.key, &by_number)
            .await
            .expect_error(404, "account_number_not_found");
    }
    // 404 comes before business rules: an unknown receiver with an amount beyond the funds.
    app.post(
        "/transfers/book",
        &app.a.key,
        &book(&s, &unknown, 1_000_000),
    )
    .await
    .expect_error(404, "bank_account_not_found");
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(1_000));
    assert_eq!(balances(&app, &app.b, &foreign.id).await, avail(1_000));
}

async fn refused_transfers_change_no_balance_and_record_nothing(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    app.post("/transfers/book", &app.a.key, &book(&s, &r, 1_001))
        .await
        .expect_error(400, "insufficient_funds");
    // A hold needs the funds as much as a transfer does.
    let mut hold = book(&s, &r, 1_001);
    hold["hold"] = json!(true);
    app.post("/transfers/book", &app.a.key, &hold)
        .await
        .expect_error(400, "insufficient_funds");
    // allow_overdraft means nothing for an account that is not overdraftable.
    let body = book_overdraft(&s, &r, 1_001);
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "insufficient_funds");

    let euro = open_account(&app, &app.a, "EUR", false).await;
    let e = app
        .post("/transfers/book", &app.a.key, &book(&s, &euro, 1))
        .await;
    e.expect_error(400, "currency_mismatch");
    let mut body = book(&s, &r, 1);
    body["currency_code"] = json!("EUR");
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "currency_mismatch");

    let closed = open_account(&app, &app.a, "USD", false).await;
    app.delete(&format!("/bank-accounts/{}", closed.id), &app.a.key)
        .await
        .expect(200);
    app.post("/transfers/book", &app.a.key, &book(&s, &closed, 1))
        .await
        .expect_error(400, "bank_account_not_open");
    app.post("/transfers/book", &app.a.key, &book(&closed, &s, 1))
        .await
        .expect_error(400, "bank_account_not_open");

    // The settlement account stands for the outside world: it cannot pay out by book transfer.
    let settlement = root_account(&app, &app.a, 2).await;
    app.post("/transfers/book", &app.a.key, &book(&settlement, &r, 1))
        .await
        .expect_error(400, "insufficient_funds");

    assert_eq!(balances(&app, &app.a, &s.id).await, avail(1_000));
    assert_eq!(balances(&app, &app.a, &r.id).await, Bal::default());
    let list = app.get("/transfers/book", &app.a.key).await.expect(200);
    assert!(
        ids(&list).is_empty(),
        "refused transfers are not recorded: {list}"
    );
    // Exactly the balance is fine.
    app.post("/transfers/book", &app.a.key, &book(&s, &r, 1_000))
        .await
        .expect(200);
    assert_eq!(balances(&app, &app.a, &s.id).await, Bal::default());
    assert_books_balance(&app, &app.a.id).await;
}

async fn frozen_accounts_take_no_money_in_or_out_and_their_holds_wait(app: TestApp) {
    let (s, frozen) = pair(&app, 1_000).await;
    fund(&app, &app.a, &frozen, 500).await;
    let receiver = open_account(&app, &app.a, "USD", false).await;
    let held = hold(&app, &s, &receiver, 100).await;
    let held_id = held["id"].as_str().expect("id");
    set_status(&app, &frozen.id, "frozen").await;
    set_status(&app, &receiver.id, "frozen").await;
    let settlement = root_account(&app, &app.a, 2).await;
    let parties = [&s, &frozen, &receiver, &settlement];
    let before = all_balances(&app, &parties).await;
    assert_eq!(
        before[..3],
        [
            Bal {
                available: 900,
                holding: 100,
                ..Bal::default()
            },
            avail(500),
            Bal::default()
        ]
    );

    // Book transfers from and to a frozen account, by bank account and by account number.
    let by_number = json!({"amount": 1, "sender_bank_account_id": s.id,
                           "receiver_account_number_id": frozen.number});
    for body in [book(&s, &frozen, 1), book(&frozen, &s, 1), by_number] {
        app.post("/transfers/book", &app.a.key, &body)
            .await
            .expect_error(400, "bank_account_not_open");
    }
    // Incoming ACH in either direction: refused, not returned, and not recorded.
    for direction in ["credit", "debit"] {
        app.post(
            &format!("/simulate/receive-ach-{direction}"),
            &app.a.key,
            &ach(&frozen, 1, "FROZEN0001"),
        )
        .await
        .expect_error(400, "bank_account_not_open");
    }
    // A hold whose receiver froze meanwhile cannot be cleared, in full or in part.
    for body in [json!({}), json!({"amount": 50})] {
        act(&app, held_id, "clear", &body)
            .await
            .expect_error(400, "bank_account_not_open");
    }

    assert_eq!(
        all_balances(&app, &parties).await,
        before,
        "refusals move no money"
    );
    let got = app
        .get(&format!("/transfers/book/{held_id}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, held, "the hold is untouched");
    let books = app.get("/transfers/book", &app.a.key).await.expect(200);
    assert_eq!(ids(&books), vec![held_id.to_owned()]);
    let achs = app
        .get("/transfers/ach?limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(ids(&achs).len(), 2, "only the two fundings: {achs}");
    assert_books_balance(&app, &app.a.id).await;

    // Open again, the hold clears: the refusal was the status, nothing else.
    set_status(&app, &receiver.id, "open").await;
    act(&app, held_id, "clear", &json!({})).await.expect(200);
    assert_eq!(balances(&app, &app.a, &receiver.id).await, avail(100));
    assert_books_balance(&app, &app.a.id).await;
}

async fn a_hold_moves_money_to_holding_until_it_is_cleared_or_canceled(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    let mut body = book(&s, &r, 600);
    body["hold"] = json!(true);
    let held = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(held["status"], "HOLD");
    let sb = Bal {
        available: 400,
        holding: 600,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &s.id).await, sb);
    assert_eq!(balances(&app, &app.a, &r.id).await, Bal::default());
    // The held money is not available for another transfer.
    app.post("/transfers/book", &app.a.key, &book(&s, &r, 401))
        .await
        .expect_error(400, "insufficient_funds");
    assert_books_balance(&app, &app.a.id).await;

    // A partial clear: 250 to the receiver, 350 back to the sender's available.
    let id = held["id"].as_str().expect("id");
    let e = app
        .post(
            &format!("/transfers/book/{id}/clear"),
            &app.a.key,
            &json!({"amount": 601}),
        )
        .await
        .expect_error(400, "invalid_request");
    assert!(e["details"]["amount"].is_string(), "{e}");
    let cleared = app
        .post(
            &format!("/transfers/book/{id}/clear"),
            &app.a.key,
            &json!({"amount": 250}),
        )
        .await
        .expect(200);
    assert_eq!(cleared["status"], "COMPLETED");
    assert_eq!(cleared["amount"], 250);
    assert_eq!(cleared["created_at"], held["created_at"]);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(750));
    assert_eq!(balances(&app, &app.a, &r.id).await, avail(250));
    let got = app
        .get(&format!("/transfers/book/{id}"), &app.a.key)
        .await
        .expect(200);
    assert_eq!(got, cleared);

    // A full clear without a body, and a cancel.
    body["amount"] = json!(100);
    let full = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    let full_id = full["id"].as_str().expect("id");
    let done = app
        .call(
            reqwest::Method::POST,
            &format!("/transfers/book/{full_id}/clear"),
            Some(&app.a.key),
            None,
            &[],
        )
        .await
        .expect(200);
    assert_eq!(
        (done["status"].clone(), done["amount"].clone()),
        (json!("COMPLETED"), json!(100))
    );
    body["amount"] = json!(650);
    let to_cancel = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(balances(&app, &app.a, &s.id).await.holding, 650);
    let cancel_id = to_cancel["id"].as_str().expect("id");
    let canceled = app
        .post(
            &format!("/transfers/book/{cancel_id}/cancel"),
            &app.a.key,
            &json!({}),
        )
        .await
        .expect(200);
    assert_eq!(
        (canceled["status"].clone(), canceled["amount"].clone()),
        (json!("CANCELED"), json!(650))
    );
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(650));
    assert_eq!(balances(&app, &app.a, &r.id).await, avail(350));
    assert_books_balance(&app, &app.a.id).await;
}

async fn only_a_transfer_on_hold_can_be_cleared_or_canceled(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    let done = app
        .post("/transfers/book", &app.a.key, &book(&s, &r, 10))
        .await
        .expect(200);
    let id = done["id"].as_str().expect("id");
    for action in ["clear", "cancel"] {
        app.post(
            &format!("/transfers/book/{id}/{action}"),
            &app.a.key,
            &json!({}),
        )
        .await
        .expect_error(400, "transfer_not_on_hold");
    }
    let mut body = book(&s, &r, 10);
    body["hold"] = json!(true);
    let held = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    let hid = held["id"].as_str().expect("id");
    app.post(
        &format!("/transfers/book/{hid}/cancel"),
        &app.a.key,
        &json!({}),
    )
    .await
    .expect(200);
    for action in ["clear", "cancel"] {
        app.post(
            &format!("/transfers/book/{hid}/{action}"),
            &app.a.key,
            &json!({}),
        )
        .await
        .expect_error(400, "transfer_not_on_hold");
    }
    for bad in [
        "book_2Ks1MnvPLKTGvSG9QWJrCQPYqIM",
        "nope",
        "bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIM",
    ] {
        for action in ["clear", "cancel"] {
            app.post(
                &format!("/transfers/book/{bad}/{action}"),
                &app.a.key,
                &json!({}),
            )
            .await
            .expect_error(404, "book_transfer_not_found");
        }
        app.get(&format!("/transfers/book/{bad}"), &app.a.key)
            .await
            .expect_error(404, "book_transfer_not_found");
    }
    // Another platform can neither see nor act on it.
    let held = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    let hid = held["id"].as_str().expect("id");
    for action in ["clear", "cancel"] {
        app.post(
            &format!("/transfers/book/{hid}/{action}"),
            &app.b.key,
            &json!({}),
        )
        .await
        .expect_error(404, "book_transfer_not_found");
    }
    let e = app
        .post(
            &format!("/transfers/book/{hid}/clear"),
            &app.a.key,
            &json!({"amount": 0}),
        )
        .await;
    e.expect_error(400, "invalid_request");
    let e = app
        .post(
            &format!("/transfers/book/{hid}/clear"),
            &app.a.key,
            &json!({"amount": 5, "x": 1}),
        )
        .await;
    e.expect_error(400, "invalid_request");
    assert_eq!(balances(&app, &app.a, &s.id).await.holding, 10);
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_overdraft_locks_the_shortfall_on_the_reserve_until_money_comes_back(app: TestApp) {
    let (reserve, s, r) = overdraft_accounts(&app, 10_000, 300).await;

    // Without allow_overdraft an overdraftable account is held to its available amount.
    app.post("/transfers/book", &app.a.key, &book(&s, &r, 1_000))
        .await
        .expect_error(400, "insufficient_funds");
    let mut body = book_overdraft(&s, &r, 1_000);
    let t = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    assert_eq!(t["allow_overdraft"], true);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(-700));
    assert_eq!(balances(&app, &app.a, &r.id).await, avail(1_000));
    let rb = Bal {
        available: 9_300,
        locked: 700,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);
    assert_books_balance(&app, &app.a.id).await;

    // A hold may overdraw too; canceling it gives the shortfall back.
    body["hold"] = json!(true);
    body["amount"] = json!(100);
    let held = app
        .post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    let sb = Bal {
        available: -800,
        holding: 100,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &s.id).await, sb);
    assert_eq!(balances(&app, &app.a, &reserve.id).await.locked, 800);
    let hid = held["id"].as_str().expect("id");
    app.post(
        &format!("/transfers/book/{hid}/cancel"),
        &app.a.key,
        &json!({}),
    )
    .await
    .expect(200);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(-700));
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);

    // Incoming money repays the shortfall first: 500 of 700, then 200 and 300 above zero.
    app.post("/transfers/book", &app.a.key, &book(&r, &s, 500))
        .await
        .expect(200);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(-200));
    let rb = Bal {
        available: 9_800,
        locked: 200,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);
    fund(&app, &app.a, &s, 500).await;
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(300));
    assert_eq!(balances(&app, &app.a, &reserve.id).await, avail(10_000));
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_overdraft_the_reserve_cannot_cover_is_insufficient_funds(app: TestApp) {
    let (reserve, s, r) = overdraft_accounts(&app, 500, 100).await;
    let mut body = book_overdraft(&s, &r, 601);
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect_error(400, "insufficient_funds");
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(100));
    assert_eq!(balances(&app, &app.a, &reserve.id).await, avail(500));
    // Exactly what the reserve can cover.
    body["amount"] = json!(600);
    app.post("/transfers/book", &app.a.key, &body)
        .await
        .expect(200);
    let rb = Bal {
        available: 0,
        locked: 500,
        ..Bal::default()
    };
    assert_eq!(balances(&app, &app.a, &reserve.id).await, rb);
    // The reserve's locked money cannot be paid out.
    app.post("/transfers/book", &app.a.key, &book(&reserve, &r, 1))
        .await
        .expect_error(400, "insufficient_funds");
    assert_books_balance(&app, &app.a.id).await;
}

async fn the_idempotency_key_is_echoed_and_a_retry_replays_without_moving_money_twice(
    app: TestApp,
) {
    let (s, r) = pair(&app, 1_000).await;
    let body = book(&s, &r, 100);
    let first = app
        .post_idempotent("/transfers/book", &app.a.key, &body, "pay-1")
        .await;
    assert!(first.headers.get("idempotent-replayed").is_none());
    let first_bytes = first.bytes.clone();
    let t = first.expect(200);
    assert_eq!(t["idempotency_key"], "pay-1");
    let again = app
        .post_idempotent("/transfers/book", &app.a.key, &body, "pay-1")
        .await;
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.bytes, first_bytes);
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(900));
    // Another body with the same key is refused; the same key on another platform is its own.
    app.post_idempotent("/transfers/book", &app.a.key, &book(&s, &r, 101), "pay-1")
        .await
        .expect_error(422, "idempotency_key_reused");
    // A failed request is not stored: a corrected retry with the same key runs.
    app.post_idempotent("/transfers/book", &app.a.key, &book(&s, &r, 5_000), "pay-2")
        .await
        .expect_error(400, "insufficient_funds");
    app.post_idempotent("/transfers/book", &app.a.key, &book(&s, &r, 50), "pay-2")
        .await
        .expect(200);
    app.post_idempotent("/transfers/book", &app.a.key, &body, "")
        .await
        .expect_error(400, "invalid_request");
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(850));
    assert_books_balance(&app, &app.a.id).await;
}

async fn an_unknown_account_is_404_even_when_the_idempotency_key_was_used_for_another_body(
    app: TestApp,
) {
    let (s, r) = pair(&app, 1_000).await;
    app.post_idempotent("/transfers/book", &app.a.key, &book(&s, &r, 1), "k")
        .await
        .expect(200);
    let unknown = Acct {
        id: "bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIM".into(),
        number: String::new(),
    };
    app.post_idempotent("/transfers/book", &app.a.key, &book(&s, &unknown, 1), "k")
        .await
        .expect_error(404, "bank_account_not_found");
}

async fn lists_filter_by_account_status_and_creation_time_and_paginate(app: TestApp) {
    let (s, r) = pair(&app, 10_000).await;
    let other = open_account(&app, &app.a, "USD", false).await;
    let mut made = Vec::new();
    for i in 0..5 {
        let mut body = book(&s, &r, 10 + i);
        body["hold"] = json!(i % 2 == 0);
        made.push(
            app.post("/transfers/book", &app.a.key, &body)
                .await
                .expect(200),
        );
    }
    made.push(
        app.post("/transfers/book", &app.a.key, &book(&r, &other, 1))
            .await
            .expect(200),
    );
    let all: Vec<String> = made
        .iter()
        .rev()
        .map(|t| t["id"].as_str().expect("id").to_owned())
        .collect();

    let list = app
        .get("/transfers/book?limit=100", &app.a.key)
        .await
        .expect(200);
    assert_eq!(ids(&list), all, "newest first");
    assert_eq!(list["has_more"], false);
    let list = app
        .get(
            &format!("/transfers/book?bank_account_id={}", other.id),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&list), all[..1].to_vec());
    let list = app
        .get(
            &format!("/transfers/book?bank_account_id={}&limit=100", r.id),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&list), all);
    let list = app
        .get(
            &format!("/transfers/book?bank_account_id={}", s.id),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&list), all[1..].to_vec());
    let list = app
        .get("/transfers/book?status=HOLD", &app.a.key)
        .await
        .expect(200);
    let holds: Vec<String> = all
        .iter()
        .filter(|id| {
            made.iter()
                .any(|t| t["id"] == id.as_str() && t["status"] == "HOLD")
        })
        .cloned()
        .collect();
    assert_eq!(ids(&list), holds);
    assert_eq!(holds.len(), 3);
    app.get("/transfers/book?status=held", &app.a.key)
        .await
        .expect_error(400, "invalid_request");
    let unknown = app
        .get(
            "/transfers/book?bank_account_id=bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIM",
            &app.a.key,
        )
        .await
        .expect(200);
    assert!(ids(&unknown).is_empty());

    // created.* bounds: the third-oldest transfer's time splits the list.
    let pivot = made[2]["created_at"].as_str().expect("time").to_owned();
    let enc = pivot.replace(':', "%3A").replace('+', "%2B");
    let gte = app
        .get(
            &format!("/transfers/book?created.gte={enc}&limit=100"),
            &app.a.key,
        )
        .await
        .expect(200);
    let lt = app
        .get(
            &format!("/transfers/book?created.lt={enc}&limit=100"),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&gte).len() + ids(&lt).len(), all.len());
    assert!(ids(&gte).contains(&all[3]) && ids(&lt).contains(&all[5]));
    let gt = app
        .get(
            &format!("/transfers/book?created.gt={enc}&limit=100"),
            &app.a.key,
        )
        .await
        .expect(200);
    let lte = app
        .get(
            &format!("/transfers/book?created.lte={enc}&limit=100"),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&gt).len() + ids(&lte).len(), all.len());
    assert!(ids(&lte).contains(&all[3]) && !ids(&gt).contains(&all[3]));

    // A walk of pages of 2, forwards then backwards.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/transfers/book?limit=2&starting_after={c}"),
            None => "/transfers/book?limit=2".to_owned(),
        };
        let page = app.get(&path, &app.a.key).await.expect(200);
        let page_ids = ids(&page);
        seen.extend(page_ids.clone());
        if page["has_more"] == false {
            break;
        }
        cursor = page_ids.last().cloned();
    }
    assert_eq!(seen, all);
    // Filtered by an account that sent one and received five: every page merges a read of its
    // transfers as sender and one as receiver, both ways and with another filter.
    let by_r = format!("/transfers/book?bank_account_id={}", r.id);
    for limit in [1, 2, 4, 6] {
        let (forward, backward) = walk(&app, &by_r, limit, ids).await;
        assert_eq!(forward, all, "forward, limit {limit}");
        assert_eq!(backward, all, "backward, limit {limit}");
    }
    let (forward, backward) = walk(&app, &format!("{by_r}&status=HOLD"), 2, ids).await;
    assert_eq!((&forward, &backward), (&holds, &holds));
    let back = app
        .get(
            &format!("/transfers/book?limit=2&ending_before={}", all[4]),
            &app.a.key,
        )
        .await
        .expect(200);
    assert_eq!(ids(&back), all[2..4].to_vec());
    assert_eq!(back["has_more"], true);
    // Cursors must be in the (filtered) list.
    app.get(
        &format!("/transfers/book?starting_after={}", all[0]),
        &app.b.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    app.get(
        &format!(
            "/transfers/book?bank_account_id={}&starting_after={}",
            other.id, all[1]
        ),
        &app.a.key,
    )
    .await
    .expect_error(400, "invalid_pagination_cursor");
    app.get(
        &format!(
            "/transfers/book?starting_after={}&ending_before={}",
            all[0], all[1]
        ),
        &app.a.key,
    )
    .await
    .expect_error(400, "conflicting_pagination_cursors");
    app.get("/transfers/book?limit=0", &app.a.key)
        .await
        .expect_error(400, "invalid_limit");
    app.get("/transfers/book?limit=101", &app.a.key)
        .await
        .expect_error(400, "invalid_limit");
}

async fn other_platforms_never_see_a_transfer(app: TestApp) {
    let (s, r) = pair(&app, 1_000).await;
    let t = app
        .post("/transfers/book", &app.a.key, &book(&s, &r, 1))
        .await
        .expect(200);
    let id = t["id"].as_str().expect("id");
    app.get(&format!("/transfers/book/{id}"), &app.b.key)
        .await
        .expect_error(404, "book_transfer_not_found");
    let list = app.get("/transfers/book", &app.b.key).await.expect(200);
    assert!(ids(&list).is_empty());
    let list = app
        .get(
            &format!("/transfers/book?bank_account_id={}", s.id),
            &app.b.key,
        )
        .await
        .expect(200);
    assert!(ids(&list).is_empty());
    // Platform B cannot move A's money, with ids or account numbers.
    let b_acct = open_account(&app, &app.b, "USD", false).await;
    app.post("/transfers/book", &app.b.key, &book(&s, &b_acct, 1))
        .await
        .expect_error(404, "bank_account_not_found");
    let by_number = json!({"amount": 1, "sender_account_number_id": s.number, "receiver_bank_account_id": b_acct.id});
    app.post("/transfers/book", &app.b.key, &by_number)
        .await
        .expect_error(404, "account_number_not_found");
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(999));
    assert_books_balance(&app, &app.a.id).await;
    assert_books_balance(&app, &app.b.id).await;
}

/// The clock jumps hours back and forth around a hold's clear: the hold moves money once, and
/// neither a clear nor a cancel afterwards, at any time, moves it again.
async fn holds_are_cleared_once_whatever_the_clock_does(ctx: Ctx) {
    let clock = std::sync::Arc::new(bankd::clock::FixedClock::new(chrono::Utc::now()));
    let app = spawn_app_with(ctx, clock.clone(), bankd::config::Config::default()).await;
    let (s, r) = pair(&app, 1_000).await;
    let held = hold(&app, &s, &r, 300).await;
    let id = held["id"].as_str().expect("id");
    clock.advance(chrono::Duration::hours(-3));
    let cleared = act(&app, id, "clear", &json!({})).await.expect(200);
    assert_eq!(cleared["status"], "COMPLETED", "{cleared}");
    for (jump, action) in [(-2, "clear"), (6, "clear"), (0, "cancel"), (-12, "cancel")] {
        clock.advance(chrono::Duration::hours(jump));
        act(&app, id, action, &json!({}))
            .await
            .expect_error(400, "transfer_not_on_hold");
    }
    assert_eq!(balances(&app, &app.a, &s.id).await, avail(700));
    assert_eq!(balances(&app, &app.a, &r.id).await, avail(300));
    assert_books_balance(&app, &app.a.id).await;
}
