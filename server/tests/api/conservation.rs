//! Conservation under contention: a thousand concurrent book transfers, holds, clears and
//! cancels among five accounts (one of them overdraftable), then the books must balance to the
//! cent. On PostgreSQL also with two bankd servers over the same database.

use std::collections::{BTreeMap, BTreeSet};

use bankd::app::{self, AppState};
use bankd::store::{Backend, Db};
use poem::listener::{Acceptor, Listener, TcpListener};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::helpers::{TestApp, api_tests, spawn_app};
use crate::transfers::{
    Acct, Bal, assert_books_balance, balances, fund, open_account, root_account,
};

api_tests!(concurrent_transfers_holds_clears_and_cancels_conserve_money);

mod two_servers_on_one_postgres_database_conserve_money {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres() {
        crate::common::run_on(
            super::Backend::Postgres,
            "two_servers_on_one_postgres_database_conserve_money",
            crate::common::test_options(),
            |ctx| async move {
                let app = super::spawn_app(ctx).await;
                let (second, server) = super::spawn_second_server(&app).await;
                super::hammer(&app, &[app.base.clone(), second]).await;
                server.abort();
            },
        )
        .await;
    }
}

async fn concurrent_transfers_holds_clears_and_cancels_conserve_money(app: TestApp) {
    let base = app.base.clone();
    hammer(&app, &[base]).await;
}

/// A second bankd process in all but name: its own pool over the same database, its own port.
async fn spawn_second_server(app: &TestApp) -> (String, tokio::task::JoinHandle<()>) {
    assert_eq!(app.ctx.backend, Backend::Postgres);
    let db = Db::connect(&app.ctx.url, &crate::common::test_options())
        .await
        .expect("second pool");
    let state = AppState {
        db,
        config: app.state.config.clone(),
        clock: app.state.clock.clone(),
    };
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .expect("bind port 0");
    let addr = acceptor
        .local_addr()
        .into_iter()
        .find_map(|a| a.as_socket_addr().copied())
        .expect("a TCP address");
    let endpoint = app::build(state);
    let server = tokio::spawn(async move {
        let _ = poem::Server::new_with_acceptor(acceptor)
            .run(endpoint)
            .await;
    });
    (format!("http://{addr}"), server)
}

const ACCOUNTS: usize = 5;
const INITIAL: i64 = 10_000;
const OVERDRAFT_INITIAL: i64 = 2_000;
const RESERVE_INITIAL: i64 = 5_000;
/// Holds made before the storm, each then cleared and canceled at the same time.
const PRE_HOLDS: usize = 50;
/// Requests of the storm (creates, clears, cancels, duplicate-key retries together).
const STORM: usize = 1_000;

/// What one request of the storm did.
#[derive(Debug)]
enum Outcome {
    /// A created transfer (possibly the replay of a duplicate).
    Created(String),
    /// A clear or cancel that won.
    Acted,
    /// A refusal the rules allow: insufficient funds, not on hold, key in use.
    Refused,
}

async fn post(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    path: &str,
    body: &Value,
    idem: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = client
        .post(format!("{base}{path}"))
        .basic_auth("", Some(key))
        .json(body);
    if let Some(idem) = idem {
        req = req.header("Idempotency-Key", idem);
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

/// Classifies an answer; anything but success or an allowed refusal fails the test.
fn classify(status: StatusCode, body: &Value, created: bool) -> Outcome {
    match (status.as_u16(), body["code"].as_str()) {
        (200, _) if created => Outcome::Created(body["id"].as_str().expect("id").to_owned()),
        (200, _) => Outcome::Acted,
        (400, Some("insufficient_funds" | "transfer_not_on_hold"))
        | (409, Some("idempotency_key_in_use")) => Outcome::Refused,
        other => panic!("unexpected answer {other:?}: {body}"),
    }
}

async fn hammer(app: &TestApp, bases: &[String]) {
    let t = &app.a;
    let reserve = root_account(app, t, 1).await;
    fund(app, t, &reserve, RESERVE_INITIAL).await;
    let mut accounts: Vec<Acct> = Vec::new();
    for i in 0..ACCOUNTS {
        let overdraftable = i == ACCOUNTS - 1;
        let a = open_account(app, t, "USD", overdraftable).await;
        fund(
            app,
            t,
            &a,
            if overdraftable {
                OVERDRAFT_INITIAL
            } else {
                INITIAL
            },
        )
        .await;
        accounts.push(a);
    }
    let od = accounts[ACCOUNTS - 1].id.clone();
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let pick_pair = |rng: &mut StdRng| {
        let s = rng.gen_range(0..ACCOUNTS);
        let r = (s + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
        (s, r)
    };
    let body = |s: usize, r: usize, amount: i64, hold: bool, overdraft: bool| {
        json!({
            "amount": amount,
            "sender_bank_account_id": accounts[s].id,
            "receiver_bank_account_id": accounts[r].id,
            "hold": hold,
            "allow_overdraft": overdraft,
        })
    };

    // Holds made up front, to be cleared and canceled concurrently during the storm.
    let mut pre_holds = Vec::new();
    for _ in 0..PRE_HOLDS {
        let (s, r) = pick_pair(&mut rng);
        let (status, b) = post(
            &app.client,
            &bases[0],
            &t.key,
            "/transfers/book",
            &body(s, r, rng.gen_range(1..=100), true, false),
            None,
        )
        .await;
        assert_eq!(status, 200, "{b}");
        pre_holds.push((
            b["id"].as_str().expect("id").to_owned(),
            b["amount"].as_i64().expect("amount"),
        ));
    }

    // The overdraftable account starts the storm overdrawn, so repayments race with new
    // overdrafts on the reserve.
    let (s, r) = (ACCOUNTS - 1, 0);
    let (status, b) = post(
        &app.client,
        &bases[0],
        &t.key,
        "/transfers/book",
        &body(s, r, OVERDRAFT_INITIAL + 500, false, true),
        None,
    )
    .await;
    assert_eq!(status, 200, "{b}");
    let overdraft_id = b["id"].as_str().expect("id").to_owned();

    // The storm: every request spawned at once, spread over the servers.
    let mut tasks: JoinSet<Outcome> = JoinSet::new();
    let mut spawn = |path: String, body: Value, idem: Option<String>, created: bool| {
        let base = bases[tasks.len() % bases.len()].clone();
        let (client, key) = (app.client.clone(), t.key.clone());
        tasks.spawn(async move {
            let (status, answer) = post(&client, &base, &key, &path, &body, idem.as_deref()).await;
            classify(status, &answer, created)
        });
        tasks.len()
    };
    let mut n = 0;
    for (i, (id, amount)) in pre_holds.iter().enumerate() {
        // A clear (sometimes partial) and a cancel race for each hold: exactly one may win.
        let clear = if i % 3 == 0 {
            json!({"amount": (amount / 2).max(1)})
        } else {
            json!({})
        };
        spawn(format!("/transfers/book/{id}/clear"), clear, None, false);
        n = spawn(
            format!("/transfers/book/{id}/cancel"),
            json!({}),
            None,
            false,
        );
    }
    let mut duplicates = 0;
    while n < STORM {
        let (s, r) = pick_pair(&mut rng);
        // Mostly affordable amounts, some far beyond any balance.
        // Holds are small (they keep money out of circulation until the end).
        let hold = rng.gen_bool(0.15);
        let amount = if rng.gen_bool(0.1) {
            rng.gen_range(20_000..=50_000)
        } else if hold {
            rng.gen_range(1..=100)
        } else {
            rng.gen_range(1..=1_000)
        };
        let overdraft = accounts[s].id == od && rng.gen_bool(0.7);
        let b = body(s, r, amount, hold, overdraft);
        if rng.gen_bool(0.05) && n + 2 <= STORM {
            // The same request twice with one key: at most one transfer may come of it.
            let key = format!("dup-{duplicates}");
            duplicates += 1;
            spawn("/transfers/book".into(), b.clone(), Some(key.clone()), true);
            n = spawn("/transfers/book".into(), b, Some(key), true);
        } else {
            n = spawn("/transfers/book".into(), b, None, true);
        }
    }
    let mut created = BTreeSet::new();
    let mut acted = 0;
    let mut refused = 0;
    while let Some(outcome) = tasks.join_next().await {
        match outcome.expect("request task") {
            Outcome::Created(id) => {
                created.insert(id);
            }
            Outcome::Acted => acted += 1,
            Outcome::Refused => refused += 1,
        }
    }
    assert_eq!(
        acted, PRE_HOLDS,
        "exactly one of each clear/cancel pair wins"
    );
    assert!(refused >= PRE_HOLDS, "the losers of the races are refused");

    // Every transfer ever accepted, as the server now has it.
    let mut listed: BTreeMap<String, Value> = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/transfers/book?limit=100&starting_after={c}"),
            None => "/transfers/book?limit=100".to_owned(),
        };
        let page = app.get(&path, &t.key).await.expect(200);
        let items = page["transfers"].as_array().expect("list").clone();
        for item in &items {
            let id = item["id"].as_str().expect("id").to_owned();
            assert!(
                listed.insert(id, item.clone()).is_none(),
                "a transfer listed twice"
            );
        }
        if page["has_more"] == false {
            break;
        }
        cursor = items
            .last()
            .and_then(|i| i["id"].as_str())
            .map(str::to_owned);
    }
    let mut pre: BTreeSet<String> = pre_holds.iter().map(|(id, _)| id.clone()).collect();
    pre.insert(overdraft_id);
    let listed_ids: BTreeSet<String> = listed.keys().cloned().collect();
    let accepted: BTreeSet<String> = created.union(&pre).cloned().collect();
    assert_eq!(
        listed_ids, accepted,
        "every accepted transfer, and nothing else, is recorded once"
    );

    // Balances from the transfers alone must be what the accounts hold.
    let index: BTreeMap<&str, usize> = accounts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.id.as_str(), i))
        .collect();
    let mut expected: Vec<Bal> = accounts
        .iter()
        .map(|a| Bal {
            available: if a.id == od {
                OVERDRAFT_INITIAL
            } else {
                INITIAL
            },
            ..Bal::default()
        })
        .collect();
    for tr in listed.values() {
        let s = index[tr["sender_bank_account_id"].as_str().expect("sender")];
        let r = index[tr["receiver_bank_account_id"].as_str().expect("receiver")];
        let amount = tr["amount"].as_i64().expect("amount");
        match tr["status"].as_str().expect("status") {
            "COMPLETED" => {
                expected[s].available -= amount;
                expected[r].available += amount;
            }
            "HOLD" => {
                expected[s].available -= amount;
                expected[s].holding += amount;
            }
            "CANCELED" => {}
            other => panic!("unexpected status {other}"),
        }
    }
    for (i, a) in accounts.iter().enumerate() {
        let actual = balances(app, t, &a.id).await;
        assert_eq!(actual, expected[i], "account {i} ({})", a.id);
        if a.id != od {
            assert!(
                actual.available >= 0,
                "account {i} went negative: {actual:?}"
            );
        }
    }
    let shortfall = (-expected[ACCOUNTS - 1].available).max(0);
    let rb = balances(app, t, &reserve.id).await;
    assert_eq!(
        rb.locked, shortfall,
        "the reserve locks exactly the overdraft"
    );
    assert_eq!(rb.available + rb.locked, RESERVE_INITIAL);
    assert!(rb.available >= 0);
    assert_books_balance(app, &t.id).await;
    // Not a vacuous storm: most requests moved money, some were refused for want of it.
    assert!(
        created.len() > STORM / 2,
        "most transfers go through ({} did)",
        created.len()
    );
    assert!(
        refused > PRE_HOLDS,
        "some transfers are refused for insufficient funds"
    );
}
