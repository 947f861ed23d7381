//! Conservation under contention: two thousand concurrent book transfers, holds, clears, cancels
//! and ACH credits and debits among five accounts (one of them overdraftable), then the books
//! must balance to the cent. On PostgreSQL also with two bankd processes over the same
//! database: this test's in-process server and a `bankd serve` child process.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bankd::store::{Backend, Sql};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::common::Ctx;
use crate::helpers::{Answer, TestApp, api_tests, ctx_tests, spawn_app, spawn_app_with};
use crate::transfers::{
    Acct, Bal, assert_books_balance, balances, fund, open_account, root_account,
};

api_tests!(
    concurrent_transfers_holds_clears_cancels_and_ach_conserve_money,
    concurrent_ach_credits_to_many_accounts_all_land_through_the_hot_settlement_account,
);

ctx_tests!(a_request_that_outlasts_the_request_timeout_is_503_request_timeout_and_its_key_then_runs_it_once);

mod a_request_that_finds_no_free_connection_in_time_is_503_request_timeout {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        let options = bankd::store::StoreOptions {
            postgres_max_connections: 1,
            acquire_timeout: super::Duration::from_secs(1),
            ..crate::common::test_options()
        };
        crate::common::run_on(
            super::Backend::Postgres,
            "a_request_that_finds_no_free_connection_in_time_is_503_request_timeout",
            options,
            super::no_free_connection,
        )
        .await;
    }
}

mod two_servers_on_one_postgres_database_conserve_money {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres() {
        crate::common::run_on(
            super::Backend::Postgres,
            "two_servers_on_one_postgres_database_conserve_money",
            crate::common::test_options(),
            |ctx| async move {
                let app = super::spawn_app(ctx).await;
                let run = super::two_processes_conserve_money(&app);
                tokio::time::timeout(super::TWO_PROCESS_LIMIT, run)
                    .await
                    .expect("the two-process storm finishes in time");
            },
        )
        .await;
    }
}

mod a_transfer_whose_every_attempt_conflicts_is_503_transaction_conflict_and_moves_nothing {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        crate::common::run_on(
            super::Backend::Postgres,
            "a_transfer_whose_every_attempt_conflicts_is_503_transaction_conflict_and_moves_nothing",
            crate::common::test_options(),
            |ctx| async move { super::every_attempt_conflicts(super::spawn_app(ctx).await).await },
        )
        .await;
    }
}

/// A trigger fails every insert of a book transfer with SQLSTATE 40001, so every attempt
/// conflicts: the answer is 503 `transaction_conflict` with `Retry-After`, with and without an
/// `Idempotency-Key`, no money moves, nothing is recorded, and the key stays free (the same
/// request succeeds once the conflicts stop).
async fn every_attempt_conflicts(app: TestApp) {
    let t = &app.a;
    let (from, to) = (
        open_account(&app, t, "USD", false).await,
        open_account(&app, t, "USD", false).await,
    );
    fund(&app, t, &from, 1_000).await;
    let mut conn = postgres(&app).await;
    for statement in [
        "CREATE FUNCTION always_conflict() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END $$",
        "CREATE TRIGGER always_conflict BEFORE INSERT ON book_transfers \
         FOR EACH ROW EXECUTE FUNCTION always_conflict()",
    ] {
        sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect("install the trigger");
    }
    let body = json!({
        "amount": 100,
        "sender_bank_account_id": from.id,
        "receiver_bank_account_id": to.id,
    });
    for idem in [None, Some("conflicted-1")] {
        let answer = match idem {
            Some(k) => {
                app.post_idempotent("/transfers/book", &t.key, &body, k)
                    .await
            }
            None => app.post("/transfers/book", &t.key, &body).await,
        };
        expect_unavailable(answer, "transaction_conflict", "injected");
    }
    assert_eq!(balances(&app, t, &from.id).await.available, 1_000);
    assert_eq!(balances(&app, t, &to.id).await.available, 0);
    let listed = app.get("/transfers/book", &t.key).await.expect(200);
    assert_eq!(listed["transfers"], json!([]), "{listed}");

    sqlx::query("DROP TRIGGER always_conflict ON book_transfers")
        .execute(&mut conn)
        .await
        .expect("drop the trigger");
    conn.close().await.expect("close");
    let done = app
        .post_idempotent("/transfers/book", &t.key, &body, "conflicted-1")
        .await;
    assert!(done.headers.get("idempotent-replayed").is_none());
    done.expect(200);
    assert_eq!(balances(&app, t, &to.id).await.available, 100);
    assert_books_balance(&app, &t.id).await;
}

/// Asserts a 503 with `code`, `Retry-After: 1` and a `server_error` body whose message does
/// not mention `internal` (a word of the cause the log gets); answers the body.
#[track_caller]
fn expect_unavailable(answer: Answer, code: &str, internal: &str) -> Value {
    assert_eq!(
        answer
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1"),
        "{:?}",
        answer.headers
    );
    let error = answer.expect_error(503, code);
    assert_eq!(error["type"], "server_error", "{error}");
    assert!(
        !error["message"].as_str().unwrap_or("").contains(internal),
        "no internals in a 5xx body: {error}"
    );
    error
}

/// Another connection holds the lock that a book transfer's insert needs, until dropped (which
/// releases it): SQLite's write lock, or PostgreSQL's table lock on `book_transfers`.
enum Blocker {
    Sqlite(rusqlite::Connection),
    Postgres(sqlx::PgConnection),
}

impl Blocker {
    async fn hold(ctx: &Ctx) -> Blocker {
        match ctx.backend {
            Backend::Sqlite => {
                let path = ctx.url.trim_start_matches("sqlite://");
                let path = path.split('?').next().expect("a path");
                let conn = rusqlite::Connection::open(path).expect("open the database file");
                conn.execute_batch("BEGIN IMMEDIATE")
                    .expect("take the write lock");
                Blocker::Sqlite(conn)
            }
            Backend::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&ctx.url)
                    .await
                    .expect("connect to the test database");
                for statement in [
                    "BEGIN",
                    "LOCK TABLE book_transfers IN ACCESS EXCLUSIVE MODE",
                ] {
                    sqlx::query(statement)
                        .execute(&mut conn)
                        .await
                        .expect("lock book_transfers");
                }
                Blocker::Postgres(conn)
            }
        }
    }

    async fn release(self) {
        match self {
            Blocker::Sqlite(conn) => conn.execute_batch("ROLLBACK").expect("release"),
            Blocker::Postgres(mut conn) => {
                sqlx::query("ROLLBACK")
                    .execute(&mut conn)
                    .await
                    .expect("release");
                conn.close().await.expect("close");
            }
        }
    }
}

/// A transfer stuck behind another connection's lock for longer than `request_timeout_secs` is
/// abandoned: 503 `request_timeout` with `Retry-After` and the request id, nothing of the
/// server's internals. It was caught before its commit, so nothing moved, and the same request
/// with the same `Idempotency-Key` runs it (once) when the lock is gone.
async fn a_request_that_outlasts_the_request_timeout_is_503_request_timeout_and_its_key_then_runs_it_once(
    ctx: Ctx,
) {
    let config = bankd::config::Config {
        request_timeout_secs: 1,
        ..Default::default()
    };
    let app = spawn_app_with(ctx, Arc::new(bankd::clock::SystemClock), config).await;
    let t = &app.a;
    let (from, to) = (
        open_account(&app, t, "USD", false).await,
        open_account(&app, t, "USD", false).await,
    );
    fund(&app, t, &from, 1_000).await;
    let body = json!({
        "amount": 100,
        "sender_bank_account_id": from.id,
        "receiver_bank_account_id": to.id,
    });

    let blocker = Blocker::hold(&app.ctx).await;
    let started = std::time::Instant::now();
    let answer = app
        .post_idempotent("/transfers/book", &t.key, &body, "slow-1")
        .await;
    let waited = started.elapsed();
    assert!(
        (Duration::from_secs(1)..Duration::from_secs(10)).contains(&waited),
        "answered after {waited:?}"
    );
    let request_id = answer
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("a request id")
        .to_owned();
    let error = expect_unavailable(answer, "request_timeout", "lock");
    let message = error["message"].as_str().expect("a message");
    assert!(
        message.contains(&request_id) && message.contains("Idempotency-Key"),
        "{error}"
    );
    blocker.release().await;

    assert_eq!(balances(&app, t, &from.id).await.available, 1_000);
    let done = app
        .post_idempotent("/transfers/book", &t.key, &body, "slow-1")
        .await;
    assert!(done.headers.get("idempotent-replayed").is_none());
    done.expect(200);
    let listed = app.get("/transfers/book", &t.key).await.expect(200);
    assert_eq!(
        listed["transfers"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    assert_eq!(balances(&app, t, &from.id).await.available, 900);
    assert_eq!(balances(&app, t, &to.id).await.available, 100);
    assert_books_balance(&app, &t.id).await;
}

/// The pool's only connection is held by a long transaction: requests waiting for one (here
/// authentication's read, the first a request makes) give up after the acquire timeout with 503
/// `request_timeout` and `Retry-After`, not a 500, and are served again once it is free. (A
/// handler's wait maps the same way: `api::errors`' unit tests.)
async fn no_free_connection(ctx: Ctx) {
    let app = spawn_app(ctx).await;
    app.get("/counterparties", &app.a.key).await.expect(200);
    // The holder signals once it has the connection, and keeps it until told to let go.
    let (inside, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let holder = {
        let (db, inside, release) = (app.ctx.db.clone(), inside.clone(), release.clone());
        tokio::spawn(async move {
            db.write(|_tx| {
                let (inside, release) = (inside.clone(), release.clone());
                Box::pin(async move {
                    inside.notify_one();
                    release.notified().await;
                    Ok::<_, bankd::store::StoreError>(())
                })
            })
            .await
            .expect("the holding transaction");
        })
    };
    inside.notified().await;
    for key in [app.a.key.as_str(), app.b.key.as_str()] {
        let answer = app.get("/counterparties", key).await;
        expect_unavailable(answer, "request_timeout", "pool");
    }
    release.notify_one();
    holder.await.expect("holder");
    app.get("/counterparties", &app.b.key).await.expect(200);
}

/// The whole two-process test, startup and checks included, ends within this.
const TWO_PROCESS_LIMIT: Duration = Duration::from_secs(300);

async fn two_processes_conserve_money(app: &TestApp) {
    let before = deadlocks(app).await;
    let second = BankdProcess::start(&app.ctx.url).await;
    hammer(app, &[app.base.clone(), second.base.clone()]).await;
    // Both processes serve the same books.
    assert_eq!(
        newest_transfers(app, &second.base).await,
        newest_transfers(app, &app.base).await
    );
    // Its connections must be gone before the deadlock count can be trusted.
    second.stop().await;
    assert_no_deadlocks(app, before).await;
}

async fn concurrent_transfers_holds_clears_cancels_and_ach_conserve_money(app: TestApp) {
    let before = deadlocks(&app).await;
    let base = app.base.clone();
    hammer(&app, &[base]).await;
    assert_no_deadlocks(&app, before).await;
}

async fn concurrent_ach_credits_to_many_accounts_all_land_through_the_hot_settlement_account(
    app: TestApp,
) {
    const N: usize = 60;
    with_realistic_statistics(&app).await;
    let before = deadlocks(&app).await;
    let mut accounts = Vec::new();
    for _ in 0..N {
        accounts.push(open_account(&app, &app.a, "USD", false).await);
    }
    // Every credit locks the settlement account, which every other one is updating: a waiter
    // must lock the row's new version, never lose it.
    let mut tasks = JoinSet::new();
    for (i, a) in accounts.iter().enumerate() {
        let (client, base, key) = (app.client.clone(), app.base.clone(), app.a.key.clone());
        let body = json!({
            "destination_account_number_id": a.number,
            "amount": 100 + i64::try_from(i).expect("small"),
            "company_id": "HOTROW0001",
            "company_name": "Hot row",
        });
        tasks.spawn(async move {
            let path = "/simulate/receive-ach-credit";
            let send = || post(&client, &base, &key, path, &body, None);
            settle(send, false, Kind::Ach).await
        });
    }
    while let Some(done) = tasks.join_next().await {
        // A conflict past its retries is sent again; a timeout leaves the count unknown and
        // fails here, as every credit must be known to land.
        let outcome = done.expect("task");
        assert!(matches!(outcome, Outcome::Ach), "{outcome:?}");
    }
    let mut total = 0;
    for (i, a) in accounts.iter().enumerate() {
        let expected = 100 + i64::try_from(i).expect("small");
        assert_eq!(balances(&app, &app.a, &a.id).await.available, expected);
        total += expected;
    }
    let settlement = &app.a.root_accounts[2];
    assert_eq!(balances(&app, &app.a, settlement).await.available, -total);
    assert_books_balance(&app, &app.a.id).await;
    assert_no_deadlocks(&app, before).await;
}

/// Gives platform A thousands of (empty) accounts and PostgreSQL fresh statistics, so the planner picks
/// the plans it would in production (with a handful of rows it scans, and a locking statement
/// that only works for small tables would pass).
async fn with_realistic_statistics(app: &TestApp) {
    if app.ctx.backend != Backend::Postgres {
        return;
    }
    let mut tx = app.ctx.db.begin_write().await.expect("begin");
    let insert = Sql::new(
        "INSERT INTO bank_accounts (id, platform_id, type, description, currency_code, \
         created_at, updated_at) \
         SELECT 'bacc_filler' || g, ?, 'CHECKING', 'Filler', 'USD', now(), now() \
         FROM generate_series(1, 5000) AS g",
    )
    .bind(app.a.id.as_str());
    tx.execute(insert).await.expect("filler accounts");
    tx.commit().await.expect("commit");
    let mut tx = app.ctx.db.begin_write().await.expect("begin");
    tx.execute(Sql::new("ANALYZE")).await.expect("analyze");
    tx.commit().await.expect("commit");
}

/// The first page of platform A's book transfers, as the server at `base` answers it.
async fn newest_transfers(app: &TestApp, base: &str) -> Value {
    let resp = app
        .client
        .get(format!("{base}/transfers/book?limit=100"))
        .basic_auth("", Some(&app.a.key))
        .send()
        .await
        .expect("request sent");
    assert_eq!(resp.status(), StatusCode::OK);
    let page: Value = resp.json().await.expect("a JSON page");
    assert_eq!(page["transfers"].as_array().map(Vec::len), Some(100));
    page
}

/// A `bankd serve` child process over a test database, on a port of its own; killed when
/// dropped, so a failing test leaves no server behind.
struct BankdProcess {
    child: tokio::process::Child,
    base: String,
    /// The child's stderr, shown when it fails to start.
    log: tempfile::NamedTempFile,
}

impl BankdProcess {
    /// How long a start may take until `/healthz` answers.
    const STARTUP: Duration = Duration::from_secs(30);

    /// Starts `bankd --database-url URL serve --listen 127.0.0.1:PORT` with the default
    /// configuration (no `BANKD_*` variable of this environment leaks in), and waits for its
    /// `/healthz`. The free port is found by binding port 0 and letting go of it, so another
    /// process may take it in between: a start whose child exits early is tried again.
    async fn start(url: &str) -> BankdProcess {
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let log = tempfile::NamedTempFile::new().expect("log file");
            let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_bankd"));
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("BANKD_") {
                    command.env_remove(name);
                }
            }
            // The isolation level of CI's SERIALIZABLE pass applies to both servers.
            if let Ok(level) = std::env::var(crate::common::ISOLATION_ENV) {
                command.env(crate::common::ISOLATION_ENV, level);
            }
            let child = command
                .args(["--database-url", url, "serve", "--listen"])
                .arg(format!("127.0.0.1:{port}"))
                .env("BANKD_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log.reopen().expect("log file"))
                .kill_on_drop(true)
                .spawn()
                .expect("spawn bankd serve");
            let mut process = BankdProcess {
                child,
                base: format!("http://127.0.0.1:{port}"),
                log,
            };
            if process.healthy().await {
                return process;
            }
        }
        panic!("bankd serve did not start in three attempts");
    }

    /// Waits for `/healthz`; `false` when the child exited first (its port was taken).
    async fn healthy(&mut self) -> bool {
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Self::STARTUP;
        loop {
            if let Some(status) = self.child.try_wait().expect("child status") {
                eprintln!("bankd serve exited ({status}): {}", self.stderr());
                return false;
            }
            let probe = client
                .get(format!("{}/healthz", self.base))
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            if probe.is_ok_and(|r| r.status().is_success()) {
                return true;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "bankd serve did not answer /healthz within {:?}: {}",
                Self::STARTUP,
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Kills the process and waits until it is gone.
    async fn stop(mut self) {
        self.child.kill().await.expect("kill bankd serve");
    }
}

/// PostgreSQL's count of deadlocks it detected in the test database; `None` on SQLite.
async fn deadlocks(app: &TestApp) -> Option<i64> {
    if app.ctx.backend != Backend::Postgres {
        return None;
    }
    let mut conn = postgres(app).await;
    let count = sqlx::query_scalar(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut conn)
    .await
    .expect("read pg_stat_database");
    conn.close().await.expect("close");
    Some(count)
}

/// A fresh connection to the test database, outside every pool.
async fn postgres(app: &TestApp) -> sqlx::PgConnection {
    sqlx::PgConnection::connect(&app.ctx.url)
        .await
        .expect("connect to the test database")
}

/// Asserts that PostgreSQL detected no deadlock in the test database since `before` was read.
///
/// Why: a deadlock aborts one transaction with 40P01, which `Db::write` retries, so the storm
/// would still conserve money with a wrong lock order; only this counter gives it away. A
/// backend flushes its statistics lazily (up to ten seconds after it goes idle) but always as
/// it exits, so every client connection to the database must be gone first. Other servers are
/// stopped by the caller; this app's pool is closed here, and since
/// `Pool::close` may return with a connection still open (sqlx issue 3217), whatever remains is
/// ended with `pg_terminate_backend`, which exits through the same flush. Bounded: 30 seconds.
async fn assert_no_deadlocks(app: &TestApp, before: Option<i64>) {
    let Some(before) = before else { return };
    app.ctx.db.close().await;
    let mut conn = postgres(app).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let others: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        )
        .fetch_all(&mut conn)
        .await
        .expect("read pg_stat_activity");
        if others.is_empty() {
            break;
        }
        for pid in &others {
            sqlx::query("SELECT pg_terminate_backend($1)")
                .bind(pid)
                .execute(&mut conn)
                .await
                .expect("terminate a backend");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "backends {others:?} of the test database do not end"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    conn.close().await.expect("close");
    assert_eq!(
        deadlocks(app).await,
        Some(before),
        "PostgreSQL detected deadlocks: some movement locks accounts out of the global order"
    );
}

const ACCOUNTS: usize = 5;
/// The last account is overdraftable.
const OD: usize = ACCOUNTS - 1;
const INITIAL: i64 = 10_000;
const OVERDRAFT_INITIAL: i64 = 2_000;
const RESERVE_INITIAL: i64 = 5_000;
/// Holds made before the storm, each then cleared and canceled at the same time.
const PRE_HOLDS: usize = 50;
/// Requests of the storm (creates, clears, cancels, duplicate-key retries, ACH together).
const STORM: usize = 2_000;

/// What one request of the storm did.
#[derive(Debug)]
enum Outcome {
    /// A created book transfer (possibly the replay of a duplicate).
    Created(String),
    /// A clear or cancel that won.
    Acted,
    /// A recorded incoming ACH transfer (completed or returned).
    Ach,
    /// A refusal the rules allow: insufficient funds, not on hold, key in use.
    Refused,
    /// 503 `request_timeout` for a request without an `Idempotency-Key`: it may or may not
    /// have been applied, and no answer can tell.
    Uncertain(Kind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Create,
    HoldAction,
    Ach,
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

/// Sends a request until its answer is definite, as the contract tells a client to: a 503 again
/// after its `Retry-After` (one second), with the same `Idempotency-Key`. After one of its own
/// timeouts, a keyed request's 409 `idempotency_key_in_use` is its abandoned attempt still
/// running, so it asks again too. A request without a key that timed out may or may not have
/// been applied: uncertain.
async fn settle<F, Fut>(send: F, keyed: bool, kind: Kind) -> Outcome
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = (StatusCode, Value)>,
{
    let mut timed_out = false;
    loop {
        let (status, answer) = send().await;
        match (status.as_u16(), answer["code"].as_str()) {
            (503, Some("transaction_conflict")) => {}
            (503, Some("request_timeout")) if keyed => timed_out = true,
            (503, Some("request_timeout")) => return Outcome::Uncertain(kind),
            (409, Some("idempotency_key_in_use")) if timed_out => {}
            _ => return classify(status, &answer, kind),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Classifies an answer; anything but success or an allowed refusal fails the test.
fn classify(status: StatusCode, body: &Value, kind: Kind) -> Outcome {
    match (status.as_u16(), body["code"].as_str(), kind) {
        (200, _, Kind::Create) => Outcome::Created(body["id"].as_str().expect("id").to_owned()),
        (200, _, Kind::HoldAction) => Outcome::Acted,
        (200, _, Kind::Ach) => Outcome::Ach,
        (400, Some("insufficient_funds"), Kind::Create)
        | (400, Some("transfer_not_on_hold"), Kind::HoldAction)
        | (409, Some("idempotency_key_in_use"), Kind::Create) => Outcome::Refused,
        other => panic!("unexpected answer {other:?}: {body}"),
    }
}

/// Every object of a list endpoint, walking its pages.
async fn list_all(app: &TestApp, path: &str) -> BTreeMap<String, Value> {
    let mut listed = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}?limit=100&starting_after={c}"),
            None => format!("{path}?limit=100"),
        };
        let page = app.get(&url, &app.a.key).await.expect(200);
        let items = page["transfers"].as_array().expect("list").clone();
        for item in &items {
            let id = item["id"].as_str().expect("id").to_owned();
            assert!(
                listed.insert(id, item.clone()).is_none(),
                "listed twice: {item}"
            );
        }
        if page["has_more"] == false {
            return listed;
        }
        cursor = items
            .last()
            .and_then(|i| i["id"].as_str())
            .map(str::to_owned);
    }
}

async fn hammer(app: &TestApp, bases: &[String]) {
    with_realistic_statistics(app).await;
    let t = &app.a;
    let reserve = root_account(app, t, 1).await;
    let settlement = root_account(app, t, 2).await;
    fund(app, t, &reserve, RESERVE_INITIAL).await;
    let mut accounts: Vec<Acct> = Vec::new();
    for i in 0..ACCOUNTS {
        let a = open_account(app, t, "USD", i == OD).await;
        fund(
            app,
            t,
            &a,
            if i == OD { OVERDRAFT_INITIAL } else { INITIAL },
        )
        .await;
        accounts.push(a);
    }
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let pick_pair = |rng: &mut StdRng| {
        let s = rng.gen_range(0..ACCOUNTS);
        let r = (s + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
        (s, r)
    };
    let book = |s: usize, r: usize, amount: i64, hold: bool, overdraft: bool| {
        json!({
            "amount": amount,
            "sender_bank_account_id": accounts[s].id,
            "receiver_bank_account_id": accounts[r].id,
            "hold": hold,
            "allow_overdraft": overdraft,
        })
    };
    let must = |answer: (StatusCode, Value)| {
        assert_eq!(answer.0, 200, "{}", answer.1);
        answer.1["id"].as_str().expect("id").to_owned()
    };

    // Holds made up front, to be cleared and canceled concurrently during the storm.
    let mut pre_holds = Vec::new();
    for _ in 0..PRE_HOLDS {
        let (s, r) = pick_pair(&mut rng);
        let amount = rng.gen_range(1..=100);
        let body = book(s, r, amount, true, false);
        let id = must(
            post(
                &app.client,
                &bases[0],
                &t.key,
                "/transfers/book",
                &body,
                None,
            )
            .await,
        );
        pre_holds.push((id, amount));
    }
    // The overdraftable account starts the storm overdrawn, so repayments race with new
    // overdrafts on the reserve.
    let body = book(OD, 0, OVERDRAFT_INITIAL + 500, false, true);
    let overdraft_id = must(
        post(
            &app.client,
            &bases[0],
            &t.key,
            "/transfers/book",
            &body,
            None,
        )
        .await,
    );

    // The storm: every request spawned at once, spread over the servers.
    let mut tasks: JoinSet<Outcome> = JoinSet::new();
    let mut spawn = |path: String, body: Value, idem: Option<String>, kind: Kind| {
        let base = bases[tasks.len() % bases.len()].clone();
        let (client, key) = (app.client.clone(), t.key.clone());
        tasks.spawn(async move {
            let send = || post(&client, &base, &key, &path, &body, idem.as_deref());
            settle(send, idem.is_some(), kind).await
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
        spawn(
            format!("/transfers/book/{id}/clear"),
            clear,
            None,
            Kind::HoldAction,
        );
        n = spawn(
            format!("/transfers/book/{id}/cancel"),
            json!({}),
            None,
            Kind::HoldAction,
        );
    }
    let mut duplicates = 0;
    while n < STORM {
        let (s, r) = pick_pair(&mut rng);
        if rng.gen_bool(0.1) {
            // Incoming ACH: every one contends for the settlement account; debits may return.
            let direction = if rng.gen_bool(0.5) { "credit" } else { "debit" };
            let body = json!({
                "destination_account_number_id": accounts[s].number,
                "amount": rng.gen_range(1..=1_500),
                "company_id": "STORM00001",
                "company_name": "Storm",
            });
            n = spawn(
                format!("/simulate/receive-ach-{direction}"),
                body,
                None,
                Kind::Ach,
            );
            continue;
        }
        // Mostly affordable amounts, some far beyond any balance; holds are small (they keep
        // money out of circulation until the end).
        let hold = rng.gen_bool(0.15);
        let amount = if rng.gen_bool(0.1) {
            rng.gen_range(20_000..=50_000)
        } else if hold {
            rng.gen_range(1..=100)
        } else {
            rng.gen_range(1..=1_000)
        };
        let body = book(s, r, amount, hold, s == OD && rng.gen_bool(0.7));
        if rng.gen_bool(0.05) && n + 2 <= STORM {
            // The same request twice with one key: at most one transfer may come of it.
            let key = format!("dup-{duplicates}");
            duplicates += 1;
            spawn(
                "/transfers/book".into(),
                body.clone(),
                Some(key.clone()),
                Kind::Create,
            );
            n = spawn("/transfers/book".into(), body, Some(key), Kind::Create);
        } else {
            // Half with a key of their own: those are certain even after a timeout.
            let idem = rng.gen_bool(0.5).then(|| format!("storm-{n}"));
            n = spawn("/transfers/book".into(), body, idem, Kind::Create);
        }
    }
    let (mut created, mut acted, mut ach, mut refused) = (BTreeSet::new(), 0, 0, 0);
    let mut uncertain: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(outcome) = tasks.join_next().await {
        match outcome.expect("request task") {
            Outcome::Created(id) => {
                created.insert(id);
            }
            Outcome::Acted => acted += 1,
            Outcome::Ach => ach += 1,
            Outcome::Refused => refused += 1,
            Outcome::Uncertain(kind) => *uncertain.entry(format!("{kind:?}")).or_default() += 1,
        }
    }
    // Requests the server gave up on (503 `request_timeout`, a loaded machine) without a key to
    // learn their outcome by: each may or may not have been applied, which bounds each count
    // below instead of fixing it.
    if !uncertain.is_empty() {
        eprintln!("timed out without a key, outcome unknown: {uncertain:?}");
    }
    let unknown = |kind: Kind| uncertain.get(&format!("{kind:?}")).copied().unwrap_or(0);
    assert!(
        (acted..=acted + unknown(Kind::HoldAction)).contains(&PRE_HOLDS),
        "exactly one of each clear/cancel pair wins: {acted} won, {} unknown",
        unknown(Kind::HoldAction)
    );

    // Every book transfer ever accepted is recorded once, and nothing else but (at most) the
    // unknown ones.
    let books = list_all(app, "/transfers/book").await;
    let mut accepted: BTreeSet<String> = pre_holds.iter().map(|(id, _)| id.clone()).collect();
    accepted.insert(overdraft_id);
    accepted.extend(created.iter().cloned());
    let recorded: BTreeSet<String> = books.keys().cloned().collect();
    assert!(
        recorded.is_superset(&accepted),
        "accepted but not recorded: {:?}",
        accepted.difference(&recorded).collect::<Vec<_>>()
    );
    assert!(
        recorded.len() - accepted.len() <= unknown(Kind::Create),
        "recorded but never accepted: {:?}",
        recorded.difference(&accepted).collect::<Vec<_>>()
    );
    // Every ACH transfer: the fundings and the storm's.
    let achs = list_all(app, "/transfers/ach").await;
    let storm_achs = achs.len() - (1 + ACCOUNTS);
    assert!(
        (ach..=ach + unknown(Kind::Ach)).contains(&storm_achs),
        "{storm_achs} storm ACH transfers recorded, {ach} answered, {} unknown",
        unknown(Kind::Ach)
    );

    // The balances must be exactly what the recorded transfers say, from zero.
    let mut expected: BTreeMap<String, Bal> = BTreeMap::new();
    for tr in achs.values() {
        if tr["status"] != "COMPLETED" {
            assert_eq!(tr["type"], "DEBIT", "only debits return: {tr}");
            continue;
        }
        let amount = tr["amount"].as_i64().expect("amount");
        let signed = if tr["type"] == "CREDIT" {
            amount
        } else {
            -amount
        };
        let account = tr["bank_account_id"].as_str().expect("account").to_owned();
        expected.entry(account).or_default().available += signed;
        expected.entry(settlement.id.clone()).or_default().available -= signed;
    }
    for tr in books.values() {
        let s = tr["sender_bank_account_id"]
            .as_str()
            .expect("sender")
            .to_owned();
        let r = tr["receiver_bank_account_id"]
            .as_str()
            .expect("receiver")
            .to_owned();
        let amount = tr["amount"].as_i64().expect("amount");
        match tr["status"].as_str().expect("status") {
            "COMPLETED" => {
                expected.entry(s).or_default().available -= amount;
                expected.entry(r).or_default().available += amount;
            }
            "HOLD" => {
                let e = expected.entry(s).or_default();
                e.available -= amount;
                e.holding += amount;
            }
            "CANCELED" => {}
            other => panic!("unexpected status {other}"),
        }
    }
    for (i, a) in accounts.iter().enumerate() {
        let actual = balances(app, t, &a.id).await;
        assert_eq!(
            actual,
            expected.get(&a.id).copied().unwrap_or_default(),
            "account {i} ({})",
            a.id
        );
        if i != OD {
            assert!(
                actual.available >= 0,
                "account {i} went negative: {actual:?}"
            );
        }
    }
    assert_eq!(
        balances(app, t, &settlement.id).await,
        expected[&settlement.id]
    );
    // The reserve is touched only by overdrafts: it locks exactly the shortfall.
    let shortfall = (-expected[&accounts[OD].id].available).max(0);
    let rb = balances(app, t, &reserve.id).await;
    assert_eq!(
        (rb.available, rb.locked),
        (RESERVE_INITIAL - shortfall, shortfall)
    );
    assert_books_balance(app, &t.id).await;
    // Not a vacuous storm: most requests moved money, some were refused for want of it.
    assert!(
        recorded.len() > STORM / 2,
        "most transfers go through ({} did)",
        recorded.len()
    );
    assert!(
        refused > PRE_HOLDS,
        "some transfers are refused for insufficient funds"
    );
    assert!(ach > 0);
}
