//! One typed configuration: defaults, then an optional TOML file, then `BANKD_*` environment
//! variables, then command-line flags (each later source wins).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::domain::bank_codes::{is_valid_aba_routing_number, is_valid_bic};
use crate::domain::platforms::BankSettings;
use crate::domain::webhooks::WebhookSettings;
use crate::store::{DEFAULT_SQLITE_MMAP_MIB, PostgresIsolation, SqliteSynchronous, StoreOptions};

/// Shown by `bankd --help`: every setting, its file key, variable and default.
pub const HELP: &str = "\
Configuration (defaults < --config FILE (TOML) < environment < flags):
  file key               environment variable             default
  database_url           BANKD_DATABASE_URL               sqlite://./data/bankd.db?mode=rwc
  listen                 BANKD_LISTEN                     127.0.0.1:8080
  routing_number         BANKD_ROUTING_NUMBER             021000021 (ABA, checksum verified)
  bic                    BANKD_BIC                        BANKUS33XXX (8 or 11 characters)
  max_document_bytes     BANKD_MAX_DOCUMENT_BYTES         10485760 (10 MiB)
  request_timeout_secs   BANKD_REQUEST_TIMEOUT_SECS       30
  sqlite_busy_timeout_ms BANKD_SQLITE_BUSY_TIMEOUT_MS     5000
  database_max_connections BANKD_DATABASE_MAX_CONNECTIONS 16 (PostgreSQL pool size)
  postgres_isolation     BANKD_POSTGRES_ISOLATION         database (PostgreSQL writes: `database`
                                                          sends a plain BEGIN, so the database's
                                                          default decides, read committed unless
                                                          changed; or read_committed,
                                                          repeatable_read, serializable)
  sqlite_synchronous     BANKD_SQLITE_SYNCHRONOUS         full (`normal` may lose the last
                                                          commits on power loss: benchmarks only)
  sqlite_group_commit    BANKD_SQLITE_GROUP_COMMIT        true (concurrent writes share a commit)
  sqlite_mmap_mib        BANKD_SQLITE_MMAP_MIB            0 (MiB of the file each reader maps; helps
                                                          read-only loads, costs under writes)
  sqlite_log_buffer      BANKD_SQLITE_LOG_BUFFER          true (a commit's log frames go to the file
                                                          in 124 KiB writes; with `full` only)
  event_retention_days   BANKD_EVENT_RETENTION_DAYS       30 (older events are deleted, with their
                                                          attempts; 0: kept for ever)
  webhook_attempt_retention_days BANKD_WEBHOOK_ATTEMPT_RETENTION_DAYS
                                                          30 (older finished delivery attempts are
                                                          deleted; 0: kept for ever)
  rate_limit_per_second  BANKD_RATE_LIMIT_PER_SECOND      0 (requests per second of each API key, in
                                                          this process; 0: no limit)
  rate_limit_burst       BANKD_RATE_LIMIT_BURST           0 (requests a key may send at once; unset
                                                          with a rate: twice the rate)
  console                BANKD_CONSOLE                    true (the sandbox console at /console)
  metrics                BANKD_METRICS                    true (GET /metrics, Prometheus text)
  metrics_listen         BANKD_METRICS_LISTEN             (unset: /metrics on `listen`; an address:
                                                          served there instead, alone)
  log_format             BANKD_LOG_FORMAT                 text (or json: one JSON object a line)
  shutdown_grace_secs    BANKD_SHUTDOWN_GRACE_SECS        30 (on SIGTERM or SIGINT, how long
                                                          requests in flight may finish; a second
                                                          signal exits at once)
  webhook_timeout_ms     BANKD_WEBHOOK_TIMEOUT_MS         10000 (one delivery attempt, answer read)
  webhook_retry_initial_ms BANKD_WEBHOOK_RETRY_INITIAL_MS 60000 (wait after a first failed attempt;
                                                          doubles per attempt, at most 4 hours)
  webhook_max_attempts   BANKD_WEBHOOK_MAX_ATTEMPTS       25 (attempts per event and endpoint)
  webhook_max_in_flight  BANKD_WEBHOOK_MAX_IN_FLIGHT      32 (deliveries under way at once)
  webhook_allow_private_targets BANKD_WEBHOOK_ALLOW_PRIVATE_TARGETS
                                                          (unset: true when `listen` is a loopback
                                                          address, a local sandbox; else false)
The config file is also read from BANKD_CONFIG. Logs go to stderr, filtered by BANKD_LOG
(e.g. `info`, `bankd=debug`).";

/// Server configuration.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `sqlite://PATH?mode=rwc` or `postgres://USER:PASSWORD@HOST/DB`.
    pub database_url: String,
    /// Address `serve` listens on.
    pub listen: SocketAddr,
    /// ABA routing number that new account numbers carry.
    pub routing_number: String,
    /// BIC that new account numbers carry.
    pub bic: String,
    /// Largest accepted document upload.
    pub max_document_bytes: u64,
    /// Time limit of one request.
    pub request_timeout_secs: u64,
    /// How long SQLite waits for the file lock.
    pub sqlite_busy_timeout_ms: u64,
    /// PostgreSQL pool size.
    pub database_max_connections: u32,
    /// The isolation level of PostgreSQL write transactions.
    pub postgres_isolation: PostgresIsolationSetting,
    /// SQLite's `synchronous`: `full` (durable on acknowledgement) or `normal`.
    pub sqlite_synchronous: SqliteSync,
    /// Whether concurrent SQLite writes share one transaction and one fsync.
    pub sqlite_group_commit: bool,
    /// How much of the SQLite file each reader maps into memory, in MiB (0: read with `pread`).
    pub sqlite_mmap_mib: u64,
    /// Whether SQLite's log frames reach the file in large writes (`sqlite-walbuf`); applies
    /// with `sqlite_synchronous = full` only.
    pub sqlite_log_buffer: bool,
    /// Days events are kept (0: for ever).
    pub event_retention_days: u32,
    /// Days finished webhook delivery attempts are kept (0: for ever).
    pub webhook_attempt_retention_days: u32,
    /// Requests per second of each API key in this process (0: no limit).
    pub rate_limit_per_second: u32,
    /// Requests a key may send at once (0 with a rate: twice the rate).
    pub rate_limit_burst: u32,
    /// Whether the sandbox console is served at `/console`.
    pub console: bool,
    /// Whether `GET /metrics` is served.
    pub metrics: bool,
    /// Where `/metrics` is served instead of on `listen`.
    pub metrics_listen: Option<SocketAddr>,
    /// How log lines are written.
    pub log_format: LogFormat,
    /// How long requests in flight may finish after SIGTERM or SIGINT.
    pub shutdown_grace_secs: u64,
    /// How long one webhook delivery attempt may take.
    pub webhook_timeout_ms: u64,
    /// The wait after a first failed delivery attempt (doubling after each later one).
    pub webhook_retry_initial_ms: u64,
    /// Delivery attempts per event and endpoint.
    pub webhook_max_attempts: u32,
    /// Delivery attempts under way at once, in this process.
    pub webhook_max_in_flight: usize,
    /// Whether webhooks may target loopback, private and link-local addresses; unset, whether
    /// `listen` is a loopback address.
    pub webhook_allow_private_targets: Option<bool>,
}

/// The log line formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line, for log pipelines.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err("must be text or json".to_owned()),
        }
    }
}

/// [`PostgresIsolation`] as the configuration file spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PostgresIsolationSetting(pub PostgresIsolation);

impl<'de> Deserialize<'de> for PostgresIsolationSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map(PostgresIsolationSetting)
            .map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for PostgresIsolationSetting {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse().map(PostgresIsolationSetting)
    }
}

/// SQLite's `synchronous` settings that bankd accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteSync {
    /// Every commit is on disk before it is acknowledged.
    Full,
    /// WAL fsyncs at checkpoints only: a power loss may lose the latest commits. For comparing
    /// against in benchmarks, never for real money.
    Normal,
}

impl std::str::FromStr for SqliteSync {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "full" => Ok(SqliteSync::Full),
            "normal" => Ok(SqliteSync::Normal),
            _ => Err("must be full or normal".to_owned()),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database_url: "sqlite://./data/bankd.db?mode=rwc".to_owned(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            routing_number: "021000021".to_owned(),
            bic: "BANKUS33XXX".to_owned(),
            max_document_bytes: 10 * 1024 * 1024,
            request_timeout_secs: 30,
            sqlite_busy_timeout_ms: 5_000,
            database_max_connections: 16,
            postgres_isolation: PostgresIsolationSetting::default(),
            sqlite_synchronous: SqliteSync::Full,
            sqlite_group_commit: true,
            sqlite_mmap_mib: DEFAULT_SQLITE_MMAP_MIB,
            sqlite_log_buffer: true,
            event_retention_days: 30,
            webhook_attempt_retention_days: 30,
            rate_limit_per_second: 0,
            rate_limit_burst: 0,
            console: true,
            metrics: true,
            metrics_listen: None,
            log_format: LogFormat::Text,
            shutdown_grace_secs: 30,
            webhook_timeout_ms: 10_000,
            webhook_retry_initial_ms: 60_000,
            webhook_max_attempts: 25,
            webhook_max_in_flight: 32,
            webhook_allow_private_targets: None,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &redact_url(&self.database_url))
            .field("listen", &self.listen)
            .field("routing_number", &self.routing_number)
            .field("bic", &self.bic)
            .field("max_document_bytes", &self.max_document_bytes)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("sqlite_busy_timeout_ms", &self.sqlite_busy_timeout_ms)
            .field("database_max_connections", &self.database_max_connections)
            .field("postgres_isolation", &self.postgres_isolation.0)
            .field("sqlite_synchronous", &self.sqlite_synchronous)
            .field("sqlite_group_commit", &self.sqlite_group_commit)
            .field("sqlite_mmap_mib", &self.sqlite_mmap_mib)
            .field("sqlite_log_buffer", &self.sqlite_log_buffer)
            .field("event_retention_days", &self.event_retention_days)
            .field(
                "webhook_attempt_retention_days",
                &self.webhook_attempt_retention_days,
            )
            .field("rate_limit_per_second", &self.rate_limit_per_second)
            .field("rate_limit_burst", &self.rate_limit_burst)
            .field("console", &self.console)
            .field("metrics", &self.metrics)
            .field("metrics_listen", &self.metrics_listen)
            .field("log_format", &self.log_format)
            .field("shutdown_grace_secs", &self.shutdown_grace_secs)
            .field("webhook_timeout_ms", &self.webhook_timeout_ms)
            .field("webhook_retry_initial_ms", &self.webhook_retry_initial_ms)
            .field("webhook_max_attempts", &self.webhook_max_attempts)
            .field("webhook_max_in_flight", &self.webhook_max_in_flight)
            .field(
                "webhook_allow_private_targets",
                &self.webhook_allow_private_targets,
            )
            .finish()
    }
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("invalid value for {name}: {message}")]
    Invalid { name: &'static str, message: String },
}

/// The URL with any password replaced by `***`, for logs and `Debug`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

fn invalid(name: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        name,
        message: message.into(),
    }
}

fn parse_env<T: std::str::FromStr>(name: &'static str, value: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value
        .trim()
        .parse()
        .map_err(|e: T::Err| invalid(name, e.to_string()))
}

/// Sets each field whose variable is present: `"VAR" => field` parses the value as the field's
/// type (a clear error naming the variable otherwise), `as text` takes it as it is.
macro_rules! overrides {
    ($config:ident, $env:ident; $($var:literal => $field:ident $(as $text:ident)?),* $(,)?) => {
        $(
            if let Some(v) = $env($var) {
                $config.$field = overrides!(@value $var, v $(, $text)?);
            }
        )*
    };
    (@value $var:literal, $v:ident) => {
        parse_env($var, &$v)?
    };
    (@value $var:literal, $v:ident, text) => {
        $v
    };
}

impl Config {
    /// Loads defaults, then `file` if given, then variables from `env` (a lookup function so
    /// tests need not touch the process environment), and validates the result.
    pub fn load(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut config = match file {
            None => Config::default(),
            Some(path) => {
                let shown = path.display().to_string();
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: shown.clone(),
                    source,
                })?;
                toml::from_str(&text).map_err(|e| ConfigError::Parse {
                    path: shown,
                    message: e.to_string(),
                })?
            }
        };
        overrides!(config, env;
            "BANKD_DATABASE_URL" => database_url as text,
            "BANKD_LISTEN" => listen,
            "BANKD_ROUTING_NUMBER" => routing_number as text,
            "BANKD_BIC" => bic as text,
            "BANKD_MAX_DOCUMENT_BYTES" => max_document_bytes,
            "BANKD_REQUEST_TIMEOUT_SECS" => request_timeout_secs,
            "BANKD_SQLITE_BUSY_TIMEOUT_MS" => sqlite_busy_timeout_ms,
            "BANKD_DATABASE_MAX_CONNECTIONS" => database_max_connections,
            "BANKD_POSTGRES_ISOLATION" => postgres_isolation,
            "BANKD_SQLITE_SYNCHRONOUS" => sqlite_synchronous,
            "BANKD_SQLITE_GROUP_COMMIT" => sqlite_group_commit,
            "BANKD_SQLITE_MMAP_MIB" => sqlite_mmap_mib,
            "BANKD_SQLITE_LOG_BUFFER" => sqlite_log_buffer,
            "BANKD_EVENT_RETENTION_DAYS" => event_retention_days,
            "BANKD_WEBHOOK_ATTEMPT_RETENTION_DAYS" => webhook_attempt_retention_days,
            "BANKD_RATE_LIMIT_PER_SECOND" => rate_limit_per_second,
            "BANKD_RATE_LIMIT_BURST" => rate_limit_burst,
            "BANKD_CONSOLE" => console,
            "BANKD_METRICS" => metrics,
            "BANKD_LOG_FORMAT" => log_format,
            "BANKD_SHUTDOWN_GRACE_SECS" => shutdown_grace_secs,
            "BANKD_WEBHOOK_TIMEOUT_MS" => webhook_timeout_ms,
            "BANKD_WEBHOOK_RETRY_INITIAL_MS" => webhook_retry_initial_ms,
            "BANKD_WEBHOOK_MAX_ATTEMPTS" => webhook_max_attempts,
            "BANKD_WEBHOOK_MAX_IN_FLIGHT" => webhook_max_in_flight,
        );
        if let Some(v) = env("BANKD_WEBHOOK_ALLOW_PRIVATE_TARGETS") {
            config.webhook_allow_private_targets = match v.trim() {
                "" => None,
                v => Some(parse_env("BANKD_WEBHOOK_ALLOW_PRIVATE_TARGETS", v)?),
            };
        }
        if let Some(v) = env("BANKD_METRICS_LISTEN") {
            config.metrics_listen = match v.trim() {
                "" => None,
                addr => Some(parse_env("BANKD_METRICS_LISTEN", addr)?),
            };
        }
        config.validate()?;
        Ok(config)
    }

    /// Loads with the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load(file, |name| std::env::var(name).ok())
    }

    /// Checks every value that could otherwise fail late (or never).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.database_url.starts_with("sqlite:")
            || self.database_url.starts_with("postgres:")
            || self.database_url.starts_with("postgresql:"))
        {
            return Err(invalid(
                "database_url",
                "must start with sqlite: or postgres:",
            ));
        }
        if !is_valid_aba_routing_number(&self.routing_number) {
            return Err(invalid(
                "routing_number",
                "must be 9 digits with a valid ABA checksum",
            ));
        }
        if !is_valid_bic(&self.bic) {
            return Err(invalid("bic", "must be an 8 or 11 character BIC"));
        }
        if self.max_document_bytes == 0 {
            return Err(invalid("max_document_bytes", "must be positive"));
        }
        if self.request_timeout_secs == 0 {
            return Err(invalid("request_timeout_secs", "must be positive"));
        }
        if self.database_max_connections == 0 {
            return Err(invalid("database_max_connections", "must be positive"));
        }
        let positive = [
            ("webhook_timeout_ms", self.webhook_timeout_ms == 0),
            (
                "webhook_retry_initial_ms",
                self.webhook_retry_initial_ms == 0,
            ),
            ("webhook_max_attempts", self.webhook_max_attempts == 0),
            ("webhook_max_in_flight", self.webhook_max_in_flight == 0),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, zero)| *zero) {
            return Err(invalid(name, "must be positive"));
        }
        Ok(())
    }

    /// How long events and delivery attempts are kept.
    pub fn retention(&self) -> crate::domain::webhooks::Retention {
        let days = |n: u32| (n > 0).then(|| Duration::from_secs(u64::from(n) * 86_400));
        crate::domain::webhooks::Retention {
            events: days(self.event_retention_days),
            attempts: days(self.webhook_attempt_retention_days),
        }
    }

    /// The limit on each API key's requests.
    pub fn rate_limit(&self) -> crate::domain::rate_limit::RateLimit {
        let per_second = self.rate_limit_per_second;
        let burst = match self.rate_limit_burst {
            0 => per_second.saturating_mul(2),
            burst => burst,
        };
        crate::domain::rate_limit::RateLimit { per_second, burst }
    }

    /// The bank identifiers of new account numbers.
    pub fn bank_settings(&self) -> BankSettings {
        BankSettings {
            routing_number: self.routing_number.clone(),
            bic: self.bic.clone(),
        }
    }

    /// Pool tuning for [`crate::store::Db::connect`].
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions {
            sqlite_busy_timeout: Duration::from_millis(self.sqlite_busy_timeout_ms),
            postgres_max_connections: self.database_max_connections,
            postgres_isolation: self.postgres_isolation.0,
            sqlite_synchronous: match self.sqlite_synchronous {
                SqliteSync::Full => SqliteSynchronous::Full,
                SqliteSync::Normal => SqliteSynchronous::Normal,
            },
            sqlite_group_commit: self.sqlite_group_commit,
            sqlite_reader_mmap_bytes: self.sqlite_mmap_mib.saturating_mul(1 << 20),
            sqlite_log_buffer: self.sqlite_log_buffer,
            ..StoreOptions::default()
        }
    }

    /// The webhook delivery rules.
    pub fn webhook_settings(&self) -> WebhookSettings {
        WebhookSettings {
            allow_private_targets: self
                .webhook_allow_private_targets
                .unwrap_or_else(|| self.listen.ip().is_loopback()),
            max_attempts: self.webhook_max_attempts,
            retry_initial: Duration::from_millis(self.webhook_retry_initial_ms),
            timeout: Duration::from_millis(self.webhook_timeout_ms),
        }
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io::Write;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn defaults_are_valid() {
        let config = Config::load(None, env_of(&[])).expect("defaults load");
        assert_eq!(config, Config::default());
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert!(is_valid_aba_routing_number(&config.routing_number));
        assert_eq!(config.bic.len(), 11);
        assert_eq!(config.max_document_bytes, 10 * 1024 * 1024);
    }

    #[test]
    fn file_then_environment_override_defaults() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        writeln!(
            file,
            "listen = \"0.0.0.0:9000\"\nbic = \"DEUTDEFF\"\nmax_document_bytes = 5"
        )
        .expect("write");
        let config = Config::load(
            Some(file.path()),
            env_of(&[
                ("BANKD_BIC", "DEUTDEFF500"),
                ("BANKD_REQUEST_TIMEOUT_SECS", "7"),
            ]),
        )
        .expect("loads");
        assert_eq!(config.listen.to_string(), "0.0.0.0:9000");
        assert_eq!(config.bic, "DEUTDEFF500");
        assert_eq!(config.max_document_bytes, 5);
        assert_eq!(config.request_timeout_secs, 7);
        assert_eq!(config.sqlite_synchronous, SqliteSync::Full);
        assert!(config.sqlite_group_commit);
    }

    #[test]
    fn the_durability_settings_are_read_and_reach_the_store() {
        let config = Config::load(
            None,
            env_of(&[
                ("BANKD_SQLITE_SYNCHRONOUS", "NORMAL"),
                ("BANKD_SQLITE_GROUP_COMMIT", "false"),
            ]),
        )
        .expect("loads");
        assert_eq!(config.sqlite_synchronous, SqliteSync::Normal);
        assert!(!config.sqlite_group_commit);
        let options = config.store_options();
        assert!(matches!(
            options.sqlite_synchronous,
            SqliteSynchronous::Normal
        ));
        assert!(!options.sqlite_group_commit);
    }

    #[test]
    fn the_postgres_isolation_defaults_to_the_databases_and_is_read_from_file_and_environment() {
        let default = Config::load(None, env_of(&[])).expect("loads");
        assert_eq!(
            default.store_options().postgres_isolation,
            PostgresIsolation::Database
        );
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        writeln!(file, "postgres_isolation = \"repeatable_read\"").expect("write");
        let from_file = Config::load(Some(file.path()), env_of(&[])).expect("loads");
        assert_eq!(
            from_file.store_options().postgres_isolation,
            PostgresIsolation::RepeatableRead
        );
        let from_env = Config::load(
            Some(file.path()),
            env_of(&[("BANKD_POSTGRES_ISOLATION", "serializable")]),
        )
        .expect("loads");
        assert_eq!(
            from_env.store_options().postgres_isolation,
            PostgresIsolation::Serializable
        );
        let mut bad = tempfile::NamedTempFile::new().expect("temp file");
        writeln!(bad, "postgres_isolation = \"snapshot\"").expect("write");
        match Config::load(Some(bad.path()), env_of(&[])) {
            Err(ConfigError::Parse { message, .. }) => {
                assert!(message.contains("serializable"), "{message}")
            }
            other => panic!("expected a parse error naming the levels, got {other:?}"),
        }
    }

    #[test]
    fn operations_settings_have_defaults_and_are_read_from_the_environment() {
        let default = Config::load(None, env_of(&[])).expect("loads");
        assert!(default.metrics);
        assert_eq!(default.metrics_listen, None);
        assert_eq!(default.log_format, LogFormat::Text);
        assert_eq!(default.shutdown_grace(), Duration::from_secs(30));
        let set = Config::load(
            None,
            env_of(&[
                ("BANKD_METRICS", "false"),
                ("BANKD_METRICS_LISTEN", "127.0.0.1:9100"),
                ("BANKD_LOG_FORMAT", "JSON"),
                ("BANKD_SHUTDOWN_GRACE_SECS", "5"),
            ]),
        )
        .expect("loads");
        assert!(!set.metrics);
        assert_eq!(
            set.metrics_listen,
            Some(SocketAddr::from(([127, 0, 0, 1], 9100)))
        );
        assert_eq!(set.log_format, LogFormat::Json);
        assert_eq!(set.shutdown_grace(), Duration::from_secs(5));
        for (var, value) in [
            ("BANKD_LOG_FORMAT", "xml"),
            ("BANKD_METRICS_LISTEN", "here"),
        ] {
            assert!(
                Config::load(None, env_of(&[(var, value)])).is_err(),
                "{var}={value}"
            );
        }
    }

    #[test]
    fn the_log_buffer_is_on_by_default_and_can_be_turned_off() {
        let default = Config::load(None, env_of(&[])).expect("loads");
        assert!(default.store_options().sqlite_log_buffer);
        let off =
            Config::load(None, env_of(&[("BANKD_SQLITE_LOG_BUFFER", "false")])).expect("loads");
        assert!(!off.store_options().sqlite_log_buffer);
        assert!(Config::load(None, env_of(&[("BANKD_SQLITE_LOG_BUFFER", "maybe")])).is_err());
    }

    #[test]
    fn the_reader_mapping_is_off_by_default_and_can_be_turned_on() {
        let default = Config::load(None, env_of(&[])).expect("loads");
        assert_eq!(default.store_options().sqlite_reader_mmap_bytes, 0);
        let on = Config::load(None, env_of(&[("BANKD_SQLITE_MMAP_MIB", "2048")])).expect("loads");
        assert_eq!(on.store_options().sqlite_reader_mmap_bytes, 2048 << 20);
        let small = Config::load(None, env_of(&[("BANKD_SQLITE_MMAP_MIB", "16")])).expect("loads");
        assert_eq!(small.store_options().sqlite_reader_mmap_bytes, 16 << 20);
    }

    #[test]
    fn invalid_values_are_refused_with_their_name() {
        let cases = [
            ("BANKD_ROUTING_NUMBER", "021000022", "routing_number"),
            ("BANKD_BIC", "BANK", "bic"),
            ("BANKD_LISTEN", "nowhere", "BANKD_LISTEN"),
            ("BANKD_MAX_DOCUMENT_BYTES", "0", "max_document_bytes"),
            ("BANKD_DATABASE_URL", "mysql://x", "database_url"),
            (
                "BANKD_SQLITE_SYNCHRONOUS",
                "off",
                "BANKD_SQLITE_SYNCHRONOUS",
            ),
            (
                "BANKD_SQLITE_GROUP_COMMIT",
                "maybe",
                "BANKD_SQLITE_GROUP_COMMIT",
            ),
            (
                "BANKD_POSTGRES_ISOLATION",
                "snapshot",
                "BANKD_POSTGRES_ISOLATION",
            ),
        ];
        for (var, value, name) in cases {
            match Config::load(None, env_of(&[(var, value)])) {
                Err(ConfigError::Invalid { name: got, .. }) => assert_eq!(got, name),
                other => panic!("{var}={value}: expected invalid {name}, got {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_file_keys_are_refused() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        writeln!(file, "listne = \"0.0.0.0:9000\"").expect("write");
        assert!(matches!(
            Config::load(Some(file.path()), env_of(&[])),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn debug_hides_the_database_password() {
        let config = Config {
            database_url: "postgres://bank:s3cret@db:5432/bankd".into(),
            ..Config::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("s3cret"));
        assert!(shown.contains("postgres://bank:***@db:5432/bankd"));
        assert_eq!(
            redact_url("sqlite://./data/bankd.db?mode=rwc"),
            "sqlite://./data/bankd.db?mode=rwc"
        );
    }
}
