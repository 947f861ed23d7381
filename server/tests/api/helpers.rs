//! `spawn_app()` and request helpers.

use std::sync::Arc;

use bankd::app::{self, AppState};
use bankd::clock::{Clock, SystemClock};
use bankd::config::Config;
use bankd::domain::platforms::{self, CreatedPlatform};
use poem::listener::{Acceptor, Listener, TcpListener};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::common::{Ctx, bank};

/// A seeded platform: its id, a `test_` key and its root objects.
pub struct Tenant {
    pub id: String,
    pub key: String,
    pub root_entity_id: String,
    /// PROGRAM_RESERVE, OVERDRAFT_RESERVE, NETWORK_SETTLEMENT_ACCOUNT.
    pub root_accounts: Vec<String>,
}

/// A running bankd with two platforms.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub a: Tenant,
    pub b: Tenant,
    pub ctx: Ctx,
    pub state: AppState,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// An answer: status, headers and the body parsed as JSON (`Null` when empty or not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub bytes: Vec<u8>,
    pub json: Value,
}

impl Answer {
    /// Asserts the status and answers the JSON body.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.json
        );
        self.json
    }

    /// Asserts an error status and `code`, and the error body's shape.
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str) -> Value {
        let body = self.expect(status);
        assert_eq!(body["code"], code, "unexpected code in {body}");
        for field in ["type", "code", "message", "documentation_url"] {
            assert!(
                body[field].is_string(),
                "error body lacks `{field}`: {body}"
            );
        }
        assert!(
            body.get("details").is_some(),
            "error body lacks `details`: {body}"
        );
        body
    }
}

async fn seed(state: &AppState, name: &str) -> Tenant {
    let CreatedPlatform {
        platform,
        root_entity_id,
        root_accounts,
        api_key,
    } = platforms::create_platform(&state.db, state.clock.as_ref(), &bank(), name)
        .await
        .expect("seed platform");
    Tenant {
        id: platform.id.as_str().to_owned(),
        key: api_key.expose_secret().to_owned(),
        root_entity_id: root_entity_id.as_str().to_owned(),
        root_accounts: root_accounts
            .iter()
            .map(|a| a.as_str().to_owned())
            .collect(),
    }
}

/// Starts bankd over `ctx` with the system clock.
pub async fn spawn_app(ctx: Ctx) -> TestApp {
    spawn_app_with(ctx, Arc::new(SystemClock), Config::default()).await
}

/// Sends the server's log lines (warnings and errors unless `BANKD_LOG` says otherwise) to the
/// test's captured output, so a failing test shows what the server said about an answer it
/// did not expect (an internal error's cause, under the request id its body names).
fn install_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_env("BANKD_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        // Another harness may have installed one first; theirs is kept.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .with_ansi(false)
            .try_init();
    });
}

/// Starts bankd over `ctx` with an injected clock and configuration.
pub async fn spawn_app_with(ctx: Ctx, clock: Arc<dyn Clock>, config: Config) -> TestApp {
    install_log();
    let state = AppState {
        services: bankd::domain::Services::new(
            ctx.db.clone(),
            clock.clone(),
            config.bank_settings(),
        )
        .with_rate_limit(config.rate_limit()),
        db: ctx.db.clone(),
        config: Arc::new(config),
        clock,
        metrics: None,
    };
    let a = seed(&state, "Platform A").await;
    let b = seed(&state, "Platform B").await;
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .expect("bind port 0");
    let addr = acceptor
        .local_addr()
        .into_iter()
        .find_map(|a| a.as_socket_addr().copied())
        .expect("a TCP address");
    let endpoint = app::build(state.clone());
    let server = tokio::spawn(async move {
        let _ = poem::Server::new_with_acceptor(acceptor)
            .run(endpoint)
            .await;
    });
    TestApp {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        a,
        b,
        ctx,
        state,
        server,
    }
}

impl TestApp {
    /// Any request; `key` is sent as the Basic password with an empty username.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.basic_auth("", Some(key));
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("request sent");
        answer(resp).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Answer {
        self.call(Method::GET, path, Some(key), None, &[]).await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Answer {
        self.call(Method::POST, path, Some(key), Some(body), &[])
            .await
    }

    pub async fn post_idempotent(&self, path: &str, key: &str, body: &Value, idem: &str) -> Answer {
        self.call(
            Method::POST,
            path,
            Some(key),
            Some(body),
            &[("Idempotency-Key", idem)],
        )
        .await
    }

    pub async fn patch(&self, path: &str, key: &str, body: &Value) -> Answer {
        self.call(Method::PATCH, path, Some(key), Some(body), &[])
            .await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Answer {
        self.call(Method::DELETE, path, Some(key), None, &[]).await
    }
}

pub async fn answer(resp: reqwest::Response) -> Answer {
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.expect("body").to_vec();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        bytes,
        json,
    }
}

/// Declares tests that run against a spawned app on SQLite and on PostgreSQL.
macro_rules! api_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                crate::common::run_on(bankd::store::Backend::Sqlite, stringify!($name), crate::common::test_options(), |ctx| async move {
                    super::$name(crate::helpers::spawn_app(ctx).await).await
                }).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                crate::common::run_on(bankd::store::Backend::Postgres, stringify!($name), crate::common::test_options(), |ctx| async move {
                    super::$name(crate::helpers::spawn_app(ctx).await).await
                }).await;
            }
        }
    )*};
}
pub(crate) use api_tests;

/// Declares tests that build their own app (clock, configuration) from a fresh database, on
/// SQLite and on PostgreSQL: `async fn name(ctx: Ctx)`.
macro_rules! ctx_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                crate::common::run_on(bankd::store::Backend::Sqlite, stringify!($name), crate::common::test_options(), super::$name).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                crate::common::run_on(bankd::store::Backend::Postgres, stringify!($name), crate::common::test_options(), super::$name).await;
            }
        }
    )*};
}
pub(crate) use ctx_tests;

/// Walks the list at `path` (with its query string) in pages of `limit`, with `starting_after`
/// from the start, then with `ending_before` from the end, answering both sequences of ids
/// (`ids` reads a page's).
pub async fn walk(
    app: &TestApp,
    path: &str,
    limit: usize,
    ids: fn(&Value) -> Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let mut forward = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let after = cursor
            .as_ref()
            .map(|c| format!("&starting_after={c}"))
            .unwrap_or_default();
        let page = app
            .get(&format!("{path}&limit={limit}{after}"), &app.a.key)
            .await
            .expect(200);
        let page_ids = ids(&page);
        assert!(page_ids.len() <= limit);
        forward.extend(page_ids.iter().cloned());
        if page["has_more"] != true {
            break;
        }
        cursor = page_ids.last().cloned();
        assert!(forward.len() < 500, "the walk must end");
    }
    let mut backward: Vec<String> = Vec::new();
    let mut cursor = forward.last().cloned();
    // The last object itself is the first cursor, so it is added by hand.
    backward.extend(cursor.clone());
    while let Some(before) = cursor.clone() {
        let page = app
            .get(
                &format!("{path}&limit={limit}&ending_before={before}"),
                &app.a.key,
            )
            .await
            .expect(200);
        let page_ids = ids(&page);
        // A page is still in list order; prepend it.
        backward.splice(0..0, page_ids.iter().cloned());
        if page["has_more"] != true {
            break;
        }
        cursor = page_ids.first().cloned();
        assert!(backward.len() < 500, "the walk must end");
    }
    (forward, backward)
}

/// Runs one statement in a write transaction of its own (fixtures the API cannot make).
pub async fn exec(app: &TestApp, sql: bankd::store::Sql) {
    app.ctx
        .db
        .write(|tx| {
            let sql = sql.clone();
            Box::pin(async move { tx.execute(sql).await })
        })
        .await
        .map(|_: u64| ())
        .unwrap_or_else(|e: bankd::store::StoreError| panic!("fixture statement failed: {e}"));
}
