//! Test databases shared by the integration binaries: a temporary SQLite file, or a randomly
//! named database on `BANKD_TEST_POSTGRES_URL` (dropped afterwards). Without that variable the
//! PostgreSQL variants say loudly that they did not run.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use bankd::domain::platforms::BankSettings;
use bankd::store::{Backend, Db, StoreOptions};
use rand::Rng;

// The skip warning is shared with the black-box crate `contract-tests` (std only, so by path).
#[path = "../../../tests/src/postgres_skip.rs"]
mod postgres_skip;
pub use postgres_skip::{POSTGRES_ENV, warn_postgres_skipped};

/// A fresh, migrated database and what a test needs around it.
#[derive(Clone)]
pub struct Ctx {
    pub db: Db,
    pub url: String,
    pub backend: Backend,
}

/// Owns the database's storage; cleans up on drop, also when the test panicked.
pub enum Guard {
    Sqlite(
        #[expect(dead_code, reason = "held only to delete the directory on drop")]
        tempfile::TempDir,
    ),
    Postgres {
        admin_url: String,
        name: String,
    },
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Guard::Postgres { admin_url, name } = self {
            let shown = name.clone();
            let (admin_url, name) = (admin_url.clone(), name.clone());
            // Drop runs outside async context (possibly while unwinding), so use a private
            // runtime on a plain thread. WITH (FORCE) ends connections a panicking test left.
            let joined = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async {
                    use sqlx::Connection;
                    let mut conn = sqlx::PgConnection::connect(&admin_url).await?;
                    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await?;
                    conn.close().await
                })
                .map_err(std::io::Error::other)
            })
            .join();
            if !matches!(joined, Ok(Ok(()))) {
                eprintln!("warning: could not drop test database {shown}: {joined:?}");
            }
        }
    }
}

/// The environment variable that makes the tests' PostgreSQL writes ask for an isolation
/// level (CI's SERIALIZABLE pass), as it does for `bankd serve`.
pub const ISOLATION_ENV: &str = "BANKD_POSTGRES_ISOLATION";

pub fn test_options() -> StoreOptions {
    StoreOptions {
        sqlite_busy_timeout: Duration::from_secs(5),
        postgres_isolation: std::env::var(ISOLATION_ENV)
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|e| panic!("{ISOLATION_ENV}={v}: {e}"))
            })
            .unwrap_or_default(),
        ..StoreOptions::default()
    }
}

pub fn bank() -> BankSettings {
    BankSettings {
        routing_number: "021000021".into(),
        bic: "BANKUS33XXX".into(),
    }
}

pub async fn sqlite_db(options: &StoreOptions) -> (Ctx, Guard) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/bankd.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, options).await.expect("connect sqlite");
    db.migrate().await.expect("migrate sqlite");
    (
        Ctx {
            db,
            url,
            backend: Backend::Sqlite,
        },
        Guard::Sqlite(dir),
    )
}

/// The admin URL with its database name replaced.
pub fn with_database(admin_url: &str, name: &str) -> String {
    let (before_query, query) = match admin_url.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (admin_url, None),
    };
    let authority_start = before_query.find("://").map_or(0, |i| i + 3);
    let base = match before_query[authority_start..].find('/') {
        Some(slash) => &before_query[..authority_start + slash],
        None => before_query,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

pub async fn postgres_db(test: &str, options: &StoreOptions) -> Option<(Ctx, Guard)> {
    let Ok(admin_url) = std::env::var(POSTGRES_ENV) else {
        warn_postgres_skipped(test);
        return None;
    };
    let suffix: String = (0..12)
        .map(|_| char::from(b'a' + rand::thread_rng().gen_range(0..26u8)))
        .collect();
    let name = format!("bankd_test_{suffix}");
    {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("connect to BANKD_TEST_POSTGRES_URL");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        conn.close().await.expect("close admin connection");
    }
    let guard = Guard::Postgres {
        admin_url: admin_url.clone(),
        name: name.clone(),
    };
    let url = with_database(&admin_url, &name);
    let db = Db::connect(&url, options).await.expect("connect postgres");
    db.migrate().await.expect("migrate postgres");
    Some((
        Ctx {
            db,
            url,
            backend: Backend::Postgres,
        },
        guard,
    ))
}

pub async fn run_on<F, Fut>(backend: Backend, test: &str, options: StoreOptions, body: F)
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = ()>,
{
    let made = match backend {
        Backend::Sqlite => Some(sqlite_db(&options).await),
        Backend::Postgres => postgres_db(test, &options).await,
    };
    let Some((ctx, guard)) = made else { return };
    let db = ctx.db.clone();
    body(ctx).await;
    db.close().await;
    drop(guard);
}

/// Declares `mod name { sqlite, postgres }` tests running `async fn name(ctx: Ctx)`.
#[allow(unused_macros)]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::run_on(super::Backend::Sqlite, stringify!($name), super::test_options(), super::$name).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::run_on(super::Backend::Postgres, stringify!($name), super::test_options(), super::$name).await;
            }
        }
    )*};
}
