//! A real `bankd` process on a fresh database, for black-box tests.
//!
//! The binary is the one cargo built for this workspace (built on demand when a test runs
//! alone). Databases: a temporary SQLite file, or a randomly named database on the server of
//! `BANKD_TEST_POSTGRES_URL`, dropped afterwards.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the tests put their databases.
pub enum Backend {
    Sqlite,
    Postgres,
}

pub use crate::postgres_skip::POSTGRES_ENV;
use crate::postgres_skip::warn_postgres_skipped;

/// The `bankd` binary of this workspace, built if missing or stale.
pub fn bankd_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "bankd", "--bin", "bankd"])
                .current_dir(&root)
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building bankd failed");
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target"));
            target.join("debug").join("bankd")
        })
        .clone()
}

/// A database for one test; dropped (PostgreSQL) or deleted (SQLite) afterwards.
pub struct TestDatabase {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    postgres: Option<(String, String)>,
}

impl TestDatabase {
    /// `None` (after a loud warning) when PostgreSQL is asked for but not configured.
    pub fn create(backend: Backend, test: &str) -> Option<TestDatabase> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}/bankd.db?mode=rwc", dir.path().display());
                Some(TestDatabase {
                    url,
                    _dir: Some(dir),
                    postgres: None,
                })
            }
            Backend::Postgres => {
                let Ok(admin) = std::env::var(POSTGRES_ENV) else {
                    warn_postgres_skipped(test);
                    return None;
                };
                let name = format!("bankd_ct_{}", random_suffix());
                psql(&admin, &format!("CREATE DATABASE {name}"));
                let url = with_database(&admin, &name);
                Some(TestDatabase {
                    url,
                    _dir: None,
                    postgres: Some((admin, name)),
                })
            }
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.postgres {
            psql(
                admin,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            );
        }
    }
}

fn psql(url: &str, sql: &str) {
    // On its own thread: callers may already be inside a tokio runtime.
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url)
                .await
                .expect("connect to the test PostgreSQL");
            sqlx::raw_sql(&sql)
                .execute(&mut conn)
                .await
                .expect("admin statement");
            conn.close().await.expect("close");
        });
    })
    .join()
    .expect("admin thread");
}

fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

fn with_database(admin: &str, name: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin, None),
    };
    let start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[start..].find('/') {
        Some(i) => &base[..start + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// A running `bankd serve`.
pub struct BankdProcess {
    pub base: String,
    /// The sandbox platform's `test_` key printed at first start.
    pub key: String,
    pub platform_id: String,
    pub database_url: String,
    child: Child,
    pub stderr_log: PathBuf,
}

impl BankdProcess {
    /// Starts `bankd serve` on a free port over `database_url` and waits until `/healthz`.
    pub fn start(database_url: &str) -> BankdProcess {
        Self::start_with_env(database_url, &[])
    }

    /// [`BankdProcess::start`] with more environment variables for the server (they win over
    /// the defaults, e.g. `("BANKD_LOG", "debug")`).
    pub fn start_with_env(database_url: &str, env: &[(&str, &str)]) -> BankdProcess {
        let port = free_port();
        let log = std::env::temp_dir().join(format!("bankd-{}.log", random_suffix()));
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut child = Command::new(bankd_binary())
            .args([
                "--database-url",
                database_url,
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("BANKD_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("bankd starts");
        let stdout = child.stdout.take().expect("stdout");
        let first = BufReader::new(stdout)
            .lines()
            .next()
            .and_then(Result::ok)
            .unwrap_or_default();
        let created: serde_json::Value = serde_json::from_str(&first)
            .unwrap_or_else(|_| panic!("first line is the sandbox key: {first:?}"));
        let base = format!("http://127.0.0.1:{port}");
        wait_healthy(&base);
        BankdProcess {
            base,
            key: created["api_key"].as_str().unwrap_or_default().to_owned(),
            platform_id: created["platform_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            database_url: database_url.to_owned(),
            child,
            stderr_log: log,
        }
    }

    /// Runs a `bankd` CLI command against the same database and answers its stdout JSON.
    pub fn cli(&self, args: &[&str]) -> serde_json::Value {
        let out = Command::new(bankd_binary())
            .args(["--database-url", &self.database_url])
            .args(args)
            .output()
            .expect("bankd runs");
        assert!(
            out.status.success(),
            "bankd {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// `bankd ledger check` of the sandbox platform: its JSON report, whether the books
    /// balance or not (the command then exits 1, which is the caller's to judge).
    pub fn ledger_check(&self) -> serde_json::Value {
        let out = Command::new(bankd_binary())
            .args(["--database-url", &self.database_url])
            .args(["ledger", "check", "--platform", &self.platform_id])
            .output()
            .expect("bankd runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "bankd ledger check printed no report: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// The operating-system id of the running server process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the server process is still running (it has not exited or been killed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process with SIGKILL and starts `bankd serve` again over the same database on
    /// the same address, appending to the same log. The key and platform id of the first start
    /// are kept: a database that already has its sandbox platform prints nothing on start.
    pub fn restart(&mut self) {
        self.kill();
        let port = self.base.rsplit(':').next().unwrap_or_default().to_owned();
        let stderr = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.stderr_log)
            .expect("log file");
        self.child = Command::new(bankd_binary())
            .args([
                "--database-url",
                &self.database_url,
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("BANKD_LOG", "info")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("bankd starts again");
        wait_healthy(&self.base);
    }

    /// Starts another `bankd serve` on the same database (a second process of a scale-out
    /// deployment), on a free port; it shares the first one's platform and key.
    pub fn start_another(&self, env: &[(&str, &str)]) -> BankdProcess {
        let port = free_port();
        let log = std::env::temp_dir().join(format!("bankd-{}.log", random_suffix()));
        let stderr = std::fs::File::create(&log).expect("log file");
        let child = Command::new(bankd_binary())
            .args([
                "--database-url",
                &self.database_url,
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("BANKD_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("bankd starts");
        let base = format!("http://127.0.0.1:{port}");
        wait_healthy(&base);
        BankdProcess {
            base,
            key: self.key.clone(),
            platform_id: self.platform_id.clone(),
            database_url: self.database_url.clone(),
            child,
            stderr_log: log,
        }
    }

    /// Sends the process a signal by name (`TERM`, `INT`), as an operator's `kill` does.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Waits up to `limit` for the process to exit; its status, or `None` if it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the server wrote to stderr (its log) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    /// The log once `arrived` holds for it, or as it is after 10 s. bankd writes its log from
    /// a thread of its own, so a request's line may follow its answer by a moment.
    pub fn log_when(&self, arrived: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let log = self.log();
            if arrived(&log) || std::time::Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Kills the process at once (no graceful shutdown).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BankdProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_healthy(base: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(base.trim_start_matches("http://")) {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            if buf.starts_with("HTTP/1.1 200") {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("bankd did not become healthy at {base}");
}
