//! The `bankd` command line: serve, migrate, and platform and key administration.
//!
//! Machine-readable results (new platform ids and keys) go to stdout as one JSON line; logs go
//! to stderr and never contain keys.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bankd::app::{self, AppState};
use bankd::auth::{self, KeyMode};
use bankd::clock::{Clock, SystemClock};
use bankd::config::{self, Config, LogFormat};
use bankd::domain::platforms;
use bankd::idempotency;
use bankd::metrics::Metrics;
use bankd::model::ids::PlatformId;
use bankd::store::{Backend, Db, StoreError, ledger, platforms as store_platforms};
use clap::{Parser, Subcommand, ValueEnum};

/// mimalloc for every allocation of the process. With its `override` feature it also stands in
/// for `malloc`/`free`, which is what matters: SQLite allocates and frees page buffers and
/// journal chunks for every write, and under book transfers glibc's allocator took about 16 %
/// of the server's CPU (`_int_malloc`, `_int_free`, `unlink_chunk`, `malloc_consolidate`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "bankd", version, about = "Banking-platform API server", after_long_help = config::HELP)]
struct Cli {
    /// Database URL (sqlite://PATH?mode=rwc or postgres://...).
    #[arg(
        long,
        value_name = "URL",
        env = "BANKD_DATABASE_URL",
        hide_env_values = true
    )]
    database_url: Option<String>,
    /// TOML configuration file.
    #[arg(long, value_name = "FILE", env = "BANKD_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Migrate, create a sandbox platform on an empty database, and serve HTTP.
    Serve {
        /// Listen address.
        #[arg(long, value_name = "ADDR", env = "BANKD_LISTEN")]
        listen: Option<String>,
    },
    /// Manage platforms (tenants).
    #[command(subcommand)]
    Platform(PlatformCommand),
    /// Manage API keys.
    #[command(subcommand, name = "api-key")]
    ApiKey(ApiKeyCommand),
    /// Apply pending database migrations.
    Migrate,
    /// Audit the books.
    #[command(subcommand)]
    Ledger(LedgerCommand),
}

#[derive(Debug, Subcommand)]
enum LedgerCommand {
    /// Check a platform's ledger: every balance equals the sum of its postings and the
    /// platform's balances sum to zero. Prints {"platform_id", "balance_total",
    /// "discrepancies"} and exits 1 when the books do not balance. A full scan, from a snapshot.
    Check {
        /// Platform id (plat_...).
        #[arg(long, value_name = "ID")]
        platform: String,
    },
}

#[derive(Debug, Subcommand)]
enum PlatformCommand {
    /// Create a platform with its root entity, root accounts and a first test_ key;
    /// prints {"platform_id", "api_key"}.
    Create {
        #[arg(long)]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum ApiKeyCommand {
    /// Create a key for a platform; prints {"api_key"}.
    Create {
        /// Platform id (plat_...).
        #[arg(long, value_name = "ID")]
        platform: String,
        #[arg(long, value_enum)]
        mode: Mode,
    },
    /// Revoke a key; effective immediately.
    Revoke {
        #[arg(long, value_name = "KEY")]
        key: String,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Test,
    Live,
}

impl From<Mode> for KeyMode {
    fn from(mode: Mode) -> KeyMode {
        match mode {
            Mode::Test => KeyMode::Test,
            Mode::Live => KeyMode::Live,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match load_config(&cli) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("bankd: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let _log = init_logging(config.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bankd: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bankd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr (stdout carries only the JSON results that scripts parse), filtered by
/// `BANKD_LOG`, as text or one JSON object a line (time, level, target, message and the
/// event's fields: the request line's `request_id`, `operation`, `status`, `latency_us`,
/// `platform_id`). No log line carries a key, a secret, a body or a personal field: requests
/// log their path template and operation, never their values (`tests/tests/request_log.rs`).
///
/// Lines go to stderr from a thread of their own through a queue of [`LOG_QUEUE_LINES`]: a
/// request formats its line and moves on, never waiting for the terminal or the pipe. When the
/// queue is full the line is dropped and counted (`bankd_log_lines_dropped_total`). Colours
/// only when stderr is a terminal. The returned guard writes out the queue when dropped.
fn init_logging(format: LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("BANKD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .thread_name("bankd-log")
        .finish(std::io::stderr());
    bankd::metrics::count_dropped_log_lines(writer.error_counter());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
    guard
}

/// Log lines waiting for the log thread at most; beyond, lines are dropped and counted.
const LOG_QUEUE_LINES: usize = 64 * 1024;

/// The configuration: defaults, file, environment, then the flags given.
fn load_config(cli: &Cli) -> anyhow::Result<Config> {
    let mut config = Config::from_env(cli.config.as_deref())?;
    if let Some(url) = &cli.database_url {
        config.database_url = url.clone();
    }
    if let Command::Serve {
        listen: Some(listen),
    } = &cli.command
    {
        config.listen = listen
            .parse()
            .with_context(|| format!("invalid --listen {listen:?}"))?;
    }
    config.validate()?;
    Ok(config)
}

async fn run(cli: Cli, config: Config) -> anyhow::Result<()> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);

    let db = Db::connect(&config.database_url, &config.store_options())
        .await
        .with_context(|| format!("cannot open {}", config::redact_url(&config.database_url)))?;
    db.migrate().await.context("migrations failed")?;

    let result = match cli.command {
        Command::Migrate => {
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Platform(PlatformCommand::Create { name }) => {
            let created =
                platforms::create_platform(&db, clock.as_ref(), &config.bank_settings(), &name)
                    .await?;
            print_json(&serde_json::json!({
                "platform_id": created.platform.id.as_str(),
                "api_key": created.api_key.expose_secret(),
            }));
            Ok(())
        }
        Command::ApiKey(ApiKeyCommand::Create { platform, mode }) => {
            // A malformed id is simply a platform that does not exist.
            let platform_id = PlatformId::parse(&platform)
                .ok_or_else(|| anyhow::anyhow!("platform not found: {platform}"))?;
            let key = auth::create_api_key(&db, clock.as_ref(), &platform_id, mode.into()).await?;
            print_json(&serde_json::json!({ "api_key": key.expose_secret() }));
            Ok(())
        }
        Command::ApiKey(ApiKeyCommand::Revoke { key }) => {
            auth::revoke_api_key(&db, clock.as_ref(), &key).await?;
            tracing::info!("API key revoked");
            Ok(())
        }
        Command::Ledger(LedgerCommand::Check { platform }) => check_ledger(&db, &platform).await,
        Command::Serve { .. } => serve(db.clone(), config, clock).await,
    };
    db.close().await;
    result
}

fn print_json(value: &serde_json::Value) {
    println!("{value}");
}

/// `bankd ledger check`: the audit of [`ledger::reconcile`] and [`ledger::platform_balance_total`]
/// in one read snapshot.
async fn check_ledger(db: &Db, platform: &str) -> anyhow::Result<()> {
    let platform_id = PlatformId::parse(platform)
        .ok_or_else(|| anyhow::anyhow!("platform not found: {platform}"))?;
    let id = &platform_id;
    let audit = db
        .read(|tx| {
            Box::pin(async move {
                if store_platforms::get(tx, id).await?.is_none() {
                    return Ok::<_, StoreError>(None);
                }
                let total = ledger::platform_balance_total(tx, id).await?;
                let off = ledger::reconcile(tx, id).await?;
                Ok(Some((total, off)))
            })
        })
        .await?;
    let (total, discrepancies) =
        audit.ok_or_else(|| anyhow::anyhow!("platform not found: {platform}"))?;
    let listed: Vec<serde_json::Value> = discrepancies
        .iter()
        .map(|d| {
            serde_json::json!({
                "bank_account_id": d.bank_account_id.as_str(),
                "balance": d.balance.as_str(),
                "stored": d.stored,
                "posted": d.posted,
            })
        })
        .collect();
    print_json(&serde_json::json!({
        "platform_id": platform_id.as_str(),
        "balance_total": total,
        "discrepancies": listed,
    }));
    anyhow::ensure!(
        total == 0 && discrepancies.is_empty(),
        "the books of {platform} do not balance"
    );
    Ok(())
}

async fn serve(db: Db, config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<()> {
    announce_sandbox_platform(&db, clock.as_ref(), &config).await?;
    let purge = tokio::spawn(purge_idempotency_keys(db.clone(), clock.clone()));
    let (listen, grace, metrics_listen) = (
        config.listen,
        config.shutdown_grace(),
        config.metrics_listen,
    );
    let sender = webhook_sender(&config)?;
    let slots = config.webhook_max_in_flight;
    let state = app_state(db.clone(), config, clock);
    let stopped = stop_on_signals();
    let purge_endpoints = tokio::spawn(purge_deleted_webhook_endpoints(state.services.clone()));
    let retention = tokio::spawn(purge_past_retention(
        state.services.clone(),
        state.config.retention(),
    ));
    let worker = tokio::spawn(bankd::webhook_worker::run(
        state.services.clone(),
        Arc::new(app::handlers(state.services.clone())),
        sender,
        slots,
        stopped.clone(),
    ));
    let signalled = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|s| *s).await;
    };
    let metrics_server = match (metrics_listen, &state.metrics) {
        (Some(addr), Some(_)) => {
            tracing::info!(%addr, "serving /metrics");
            let server = poem::Server::new(poem::listener::TcpListener::bind(addr))
                .run_with_graceful_shutdown(
                    app::metrics_only(state.clone()),
                    signalled(stopped.clone()),
                    Some(grace),
                );
            Some(tokio::spawn(server))
        }
        _ => None,
    };
    tracing::info!(%listen, "listening");
    let served = poem::Server::new(poem::listener::TcpListener::bind(listen))
        .run_with_graceful_shutdown(app::build(state), signalled(stopped), Some(grace))
        .await;
    for task in [purge, purge_endpoints, retention] {
        task.abort();
        let _ = task.await;
    }
    // Stopped by the same signal: it has finished the attempts it had under way.
    if let Err(e) = worker.await {
        tracing::warn!(error = %e, "the webhook worker failed");
    }
    if let Some(server) = metrics_server {
        match server.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "the metrics listener failed"),
            Err(e) => tracing::warn!(error = %e, "the metrics listener failed"),
            Ok(Ok(())) => {}
        }
    }
    report_at_shutdown(&db);
    // The writer's open batch commits (or fails, and its members have answered so) before the
    // connections close.
    db.close().await;
    tracing::info!("stopped");
    served.with_context(|| format!("cannot serve on {listen}"))
}

/// Creates the sandbox platform on the first start and prints its key: the only time this key
/// is ever shown.
async fn announce_sandbox_platform(
    db: &Db,
    clock: &dyn Clock,
    config: &Config,
) -> anyhow::Result<()> {
    let bank = config.bank_settings();
    if let Some(created) = platforms::ensure_sandbox_platform(db, clock, &bank).await? {
        print_json(&serde_json::json!({
            "platform_id": created.platform.id.as_str(),
            "api_key": created.api_key.expose_secret(),
        }));
    }
    Ok(())
}

/// The process's webhook client, from the configuration.
fn webhook_sender(config: &Config) -> anyhow::Result<bankd::webhook_sender::WebhookSender> {
    let settings = config.webhook_settings();
    let sender =
        bankd::webhook_sender::WebhookSender::new(bankd::webhook_sender::SenderSettings {
            timeout: settings.timeout,
            allow_private_targets: settings.allow_private_targets,
            max_in_flight: config.webhook_max_in_flight,
            user_agent: format!("bankd/{}", env!("CARGO_PKG_VERSION")),
        })?;
    Ok(sender)
}

/// The shared state of both listeners, with the metrics recorder when metrics are on.
fn app_state(db: Db, config: Config, clock: Arc<dyn Clock>) -> AppState {
    let metrics = if config.metrics {
        let backend = match db.backend() {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        };
        Metrics::install(backend)
    } else {
        None
    };
    AppState {
        services: bankd::domain::Services::new(db.clone(), clock.clone(), config.bank_settings())
            .with_webhooks(config.webhook_settings())
            .with_rate_limit(config.rate_limit()),
        db,
        config: Arc::new(config),
        clock,
        metrics,
    }
}

/// One stop signal for both listeners, set by the first SIGINT/SIGTERM; a second one ends the
/// process at once.
fn stop_on_signals() -> tokio::sync::watch::Receiver<bool> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop.send(true);
        shutdown_signal().await;
        eprintln!("bankd: a second signal: exiting without waiting");
        std::process::exit(1);
    });
    stopped
}

/// Logs what an operator asks first about a run: how well concurrent SQLite writes shared their
/// commits, and how many transactions conflicted and ran again (SERIALIZABLE, deadlocks, a busy
/// SQLite file), and whether any request got 503 for it.
fn report_at_shutdown(db: &Db) {
    if let Some(stats) = db.group_commit_stats() {
        tracing::info!(
            members = stats.members,
            commits = stats.commits,
            aborts = stats.aborts,
            open_ms = stats.open_time.as_millis() as u64,
            commit_ms = stats.commit_time.as_millis() as u64,
            upkeep_ms = stats.upkeep_time.as_millis() as u64,
            slow_holds = stats.slow_holds,
            "group commit totals at shutdown"
        );
    }
    let retries = db.retry_counts();
    tracing::info!(
        target: "bankd::retries",
        serialization = retries.serialization,
        deadlock = retries.deadlock,
        busy = retries.busy,
        batch_aborted = retries.batch_aborted,
        disconnected = retries.disconnected,
        exhausted = retries.exhausted,
        "transaction retries at shutdown"
    );
}

/// Runs `purge` every `period` (the first time at once), logging what it removed, as
/// `what`, and its failures; a failed purge is tried again at the next tick.
async fn purge_every<F, Fut>(period: Duration, what: &'static str, mut purge: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, bankd::store::StoreError>>,
{
    let mut interval = tokio::time::interval(period);
    loop {
        interval.tick().await;
        let started = std::time::Instant::now();
        match purge().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                what,
                deleted = n,
                seconds = started.elapsed().as_secs_f64(),
                "purged"
            ),
            Err(e) => tracing::warn!(what, error = %e, "purge failed"),
        }
    }
}

/// Deletes expired idempotency records hourly.
async fn purge_idempotency_keys(db: Db, clock: Arc<dyn Clock>) {
    let hourly = Duration::from_secs(3600);
    purge_every(hourly, "expired idempotency keys", || {
        idempotency::purge_expired(&db, clock.as_ref())
    })
    .await;
}

/// Removes the attempts of deleted webhook endpoints, a few seconds after each deletion (and
/// what a crash left half-done, after a restart).
async fn purge_deleted_webhook_endpoints(services: bankd::domain::Services) {
    const CHUNK: u32 = 1_000;
    let what = "attempts of deleted webhook endpoints";
    purge_every(Duration::from_secs(5), what, || async {
        services.outbox().purge_deleted(CHUNK).await
    })
    .await;
}

/// Deletes events and delivery attempts older than their retention, hourly.
async fn purge_past_retention(
    services: bankd::domain::Services,
    retention: bankd::domain::webhooks::Retention,
) {
    if retention == Default::default() {
        return;
    }
    let what = "events and delivery attempts past their retention";
    purge_every(Duration::from_secs(3600), what, || async {
        let (attempts, events) = services
            .outbox()
            .purge_expired(&retention, bankd::idempotency::PURGE_CHUNK)
            .await?;
        Ok(attempts + events)
    })
    .await;
}

/// Resolves on ctrl-c or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: no new connections; requests in flight finish");
}
