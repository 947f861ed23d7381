//! Integration tests of the HTTP-agnostic foundation: storage, tenancy, keys, idempotency,
//! pagination and the command line, each on SQLite and on PostgreSQL.
//!
//! PostgreSQL runs when `BANKD_TEST_POSTGRES_URL` names a server (CI:
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test gets a freshly created database with
//! a random name, dropped afterwards. Without the variable the PostgreSQL variants print a loud
//! warning and do nothing; they do not pretend to have run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bankd::auth::{self, AuthError, KeyMode};
use bankd::clock::{Clock, FixedClock, SystemClock};
use bankd::domain::Services;
use bankd::domain::ledger::{DebitPolicy, Journal};
use bankd::domain::platforms::{self, CreatedPlatform, PlatformError, ROOT_ACCOUNT_TYPES};
use bankd::idempotency::{
    self, IdempotencyError, IdempotencyKey, Outcome, RequestFingerprint, StoredResponse,
};
use bankd::model::documents::DocumentType;
use bankd::model::entities::{EntityRecord, EntityType, VerificationStatus};
use bankd::model::ids::{AccountNumberId, BankAccountId, EntityId, PlatformId};
use bankd::model::ledger::{AccountStatus, AccountType, LedgerAccount};
use bankd::model::page::{Bounds, Page, PageRequest, PaginationError, SortOrder};
use bankd::store::entities;
use bankd::store::keyset::ListError;
use bankd::store::{
    self as store, Backend, Db, PostgresIsolation, RetryPolicy, Sql, StoreError, StoreOptions,
    bank_accounts, ledger,
};
use chrono::{DateTime, TimeZone, Utc};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

#[macro_use]
mod common;
use common::*;

on_both_backends!(
    migrations_create_every_table_with_a_platform_id,
    creating_a_platform_makes_a_root_entity_and_three_root_accounts,
    invalid_platform_names_create_nothing,
    api_keys_authenticate_until_revoked,
    repository_lookups_never_cross_platforms,
    constraint_violations_are_classified,
    idempotent_requests_replay_and_refuse_reuse,
    failed_idempotent_requests_are_not_stored,
    idempotency_keys_expire_after_30_days,
    expired_idempotency_keys_are_purged_oldest_first_in_bounded_chunks,
    fifty_concurrent_duplicates_have_exactly_one_winner,
    pagination_walks_see_every_row_exactly_once,
    pagination_rejects_cursors_outside_the_list,
    pagination_walk_is_stable_under_concurrent_inserts,
    non_retryable_errors_are_not_retried,
    a_ledger_entry_naming_a_missing_account_fails,
    deferred_writes_keep_their_order_and_their_counts,
    a_read_transaction_is_one_snapshot,
    an_owner_filter_reads_the_same_accounts_either_way,
);

fn at(secs: i64, micros: u32) -> DateTime<Utc> {
    Utc.timestamp_opt(1_760_000_000 + secs, micros * 1_000)
        .single()
        .expect("valid time")
}

async fn new_platform(ctx: &Ctx, name: &str) -> CreatedPlatform {
    platforms::create_platform(&ctx.db, &SystemClock, &bank(), name)
        .await
        .expect("create platform")
}

async fn count(ctx: &Ctx, sql: &'static str) -> i64 {
    let mut tx = ctx.db.begin_read().await.expect("read");
    let n = tx
        .fetch_one(Sql::new(sql))
        .await
        .expect("count")
        .get::<i64>("n")
        .expect("n");
    tx.rollback().await.expect("rollback");
    n
}

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

/// Tables that belong to no platform: bookkeeping and server-wide secrets shared by every
/// bankd process on the database (the document link signing key).
const GLOBAL_TABLES: [&str; 3] = ["_sqlx_migrations", "server_secrets", "storage_probe"];

const TABLES: [&str; 20] = [
    "platforms",
    "api_keys",
    "entities",
    "associated_persons",
    "bank_accounts",
    "bank_account_owners",
    "account_numbers",
    "ach_positive_pay_rules",
    "counterparties",
    "documents",
    "book_transfers",
    "ach_transfers",
    "ledger_postings",
    "idempotency_keys",
    "events",
    "storage_probe",
    "webhook_endpoints",
    "webhook_deliveries",
    "_sqlx_migrations",
    "server_secrets",
];

async fn migrations_create_every_table_with_a_platform_id(ctx: Ctx) {
    // Running them again is a no-op.
    ctx.db.migrate().await.expect("second migrate");
    let mut tx = ctx.db.begin_read().await.expect("read");
    let tables_sql = match ctx.backend {
        Backend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence'"
        }
        Backend::Postgres => "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'",
    };
    let mut tables: Vec<String> = tx
        .fetch_all(Sql::new(tables_sql))
        .await
        .expect("tables")
        .iter()
        .map(|r| r.get("name").expect("name"))
        .collect();
    tables.sort();
    let mut expected: Vec<String> = TABLES.iter().map(|t| (*t).to_owned()).collect();
    expected.sort();
    assert_eq!(tables, expected);

    for table in TABLES.iter().filter(|t| !GLOBAL_TABLES.contains(t)) {
        let columns_sql = match ctx.backend {
            Backend::Sqlite => Sql::new("SELECT name FROM pragma_table_info(?)").bind(*table),
            Backend::Postgres => Sql::new(
                "SELECT column_name::text AS name FROM information_schema.columns WHERE table_name = ?",
            )
            .bind(*table),
        };
        let columns: Vec<String> = tx
            .fetch_all(columns_sql)
            .await
            .expect("columns")
            .iter()
            .map(|r| r.get("name").expect("name"))
            .collect();
        assert!(
            columns.iter().any(|c| c == "platform_id"),
            "{table} lacks platform_id: {columns:?}"
        );
    }
}

async fn constraint_violations_are_classified(ctx: Ctx) {
    let created = new_platform(&ctx, "Acme").await;
    let pid = created.platform.id.clone();
    let now = Utc::now();
    // A second row with the same primary key: unique violation.
    let duplicate = ctx
        .db
        .write(|tx| {
            let record = created.platform.clone();
            Box::pin(async move { bankd::store::platforms::insert(tx, &record).await })
        })
        .await
        .expect_err("duplicate platform");
    assert!(duplicate.is_unique_violation(), "{duplicate:?}");

    // Available below zero on a non-overdraftable account: the CHECK refuses it.
    let account = created.root_accounts[0].clone();
    let negative = ctx
        .db
        .write(|tx| {
            let (pid, account) = (&pid, &account);
            Box::pin(async move {
                tx.execute(
                    Sql::new("UPDATE bank_accounts SET available_amount = -1, updated_at = ? WHERE platform_id = ? AND id = ?")
                        .bind(now)
                        .bind(pid.as_str())
                        .bind(account.as_str()),
                )
                .await
            })
        })
        .await
        .expect_err("negative balance");
    assert!(negative.is_check_violation(), "{negative:?}");

    // An owner row pointing at another platform's entity: the composite foreign key refuses it.
    let other = new_platform(&ctx, "Other").await;
    let foreign = ctx
        .db
        .write(|tx| {
            let (pid, account, entity) = (&pid, &account, &other.root_entity_id);
            Box::pin(
                async move { bank_accounts::add_owner(tx, pid, account, entity, 1, now).await },
            )
        })
        .await
        .expect_err("cross-platform owner");
    assert!(foreign.is_foreign_key_violation(), "{foreign:?}");
}

// ---------------------------------------------------------------------------------------------
// Platforms and keys
// ---------------------------------------------------------------------------------------------

async fn creating_a_platform_makes_a_root_entity_and_three_root_accounts(ctx: Ctx) {
    let created = new_platform(&ctx, "  Acme Bank  ").await;
    let pid = created.platform.id.clone();
    assert!(PlatformId::parse(pid.as_str()).is_some());
    assert_eq!(created.platform.name, "Acme Bank");
    assert_eq!(created.platform.reporting_time_zone, None);
    assert_eq!(created.platform.additional_requirements, "[]");

    let mut tx = ctx.db.begin_read().await.expect("read");
    let stored = bankd::store::platforms::get(&mut tx, &pid)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        stored, created.platform,
        "what was returned is what was stored"
    );

    let root = entities::find_root(&mut tx, &pid)
        .await
        .expect("root")
        .expect("root exists");
    assert_eq!(root.id, created.root_entity_id);
    assert!(root.is_root);
    assert_eq!(root.entity_type, EntityType::Business);
    assert_eq!(root.verification_status, VerificationStatus::Verified);
    assert_eq!(root.business_name.as_deref(), Some("Acme Bank"));

    let accounts = bank_accounts::list_all(&mut tx, &pid)
        .await
        .expect("accounts");
    let mut types: Vec<&str> = accounts.iter().map(|a| a.account_type.as_str()).collect();
    types.sort_unstable();
    let mut expected: Vec<&str> = ROOT_ACCOUNT_TYPES.iter().map(|t| t.as_str()).collect();
    expected.sort_unstable();
    assert_eq!(types, expected);
    for account in &accounts {
        assert!(created.root_accounts.contains(&account.id));
        assert_eq!(account.status, AccountStatus::Open);
        assert_eq!(account.currency_code, "USD");
        assert_eq!(
            (
                account.available_amount,
                account.pending_amount,
                account.holding_amount,
                account.locked_amount
            ),
            (0, 0, 0, 0)
        );
        let owners = bank_accounts::owners(&mut tx, &pid, &account.id)
            .await
            .expect("owners");
        assert_eq!(owners, vec![root.id.clone()]);
        let number_id = account
            .default_account_number_id
            .clone()
            .expect("default account number");
        let number = bank_accounts::get_account_number(&mut tx, &pid, &number_id)
            .await
            .expect("get number")
            .expect("number exists");
        assert_eq!(number.bank_account_id, account.id);
        assert_eq!(number.routing_number, "021000021");
        assert_eq!(number.bic, "BANKUS33XXX");
        assert!((12..=17).contains(&number.account_number.len()));
        assert!(number.account_number.bytes().all(|b| b.is_ascii_digit()));
    }
    for account_type in ROOT_ACCOUNT_TYPES {
        let found = bank_accounts::find_root(&mut tx, &pid, account_type)
            .await
            .expect("find root");
        assert_eq!(found.map(|a| a.account_type), Some(account_type.to_owned()));
    }
    tx.rollback().await.expect("rollback");

    let key = created.api_key.expose_secret();
    assert!(key.starts_with("test_"));
    let principal = auth::authenticate(&ctx.db, key)
        .await
        .expect("auth")
        .expect("valid key");
    assert_eq!(principal.platform_id, pid);
    assert_eq!(principal.mode, KeyMode::Test);

    // A second platform on a non-empty database is independent; the sandbox is not created.
    assert!(
        platforms::ensure_sandbox_platform(&ctx.db, &SystemClock, &bank())
            .await
            .expect("ensure")
            .is_none()
    );
    assert_eq!(count(&ctx, "SELECT COUNT(*) AS n FROM platforms").await, 1);
}

async fn invalid_platform_names_create_nothing(ctx: Ctx) {
    for bad in ["", "   ", "tab\there"] {
        let err = platforms::create_platform(&ctx.db, &SystemClock, &bank(), bad)
            .await
            .expect_err(bad);
        assert!(matches!(err, PlatformError::InvalidName), "{err:?}");
    }
    assert_eq!(count(&ctx, "SELECT COUNT(*) AS n FROM platforms").await, 0);
    // On an empty database the first start makes exactly one sandbox platform.
    let sandbox = platforms::ensure_sandbox_platform(&ctx.db, &SystemClock, &bank())
        .await
        .expect("ensure")
        .expect("created on empty database");
    assert_eq!(sandbox.platform.name, "Sandbox");
    assert!(sandbox.api_key.expose_secret().starts_with("test_"));
    assert!(
        platforms::ensure_sandbox_platform(&ctx.db, &SystemClock, &bank())
            .await
            .expect("ensure")
            .is_none()
    );
    assert_eq!(count(&ctx, "SELECT COUNT(*) AS n FROM entities").await, 1);
    assert_eq!(
        count(&ctx, "SELECT COUNT(*) AS n FROM bank_accounts").await,
        3
    );
    assert_eq!(
        count(&ctx, "SELECT COUNT(*) AS n FROM account_numbers").await,
        3
    );
}

async fn api_keys_authenticate_until_revoked(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let b = new_platform(&ctx, "B").await;
    let clock = SystemClock;

    let live = auth::create_api_key(&ctx.db, &clock, &a.platform.id, KeyMode::Live)
        .await
        .expect("create");
    assert!(live.expose_secret().starts_with("live_"));
    let principal = auth::authenticate(&ctx.db, live.expose_secret())
        .await
        .expect("auth")
        .expect("valid");
    assert_eq!(principal.platform_id, a.platform.id);
    assert_eq!(principal.mode, KeyMode::Live);
    assert!(!principal.is_sandbox());

    // Keys of B authenticate as B, never as A.
    let pb = auth::authenticate(&ctx.db, b.api_key.expose_secret())
        .await
        .expect("auth")
        .expect("valid");
    assert_eq!(pb.platform_id, b.platform.id);

    // Revocation is effective on the very next check; revoking twice is fine.
    auth::revoke_api_key(&ctx.db, &clock, live.expose_secret())
        .await
        .expect("revoke");
    assert!(
        auth::authenticate(&ctx.db, live.expose_secret())
            .await
            .expect("auth")
            .is_none()
    );
    auth::revoke_api_key(&ctx.db, &clock, live.expose_secret())
        .await
        .expect("revoke again");
    // The platform's other key still works.
    assert!(
        auth::authenticate(&ctx.db, a.api_key.expose_secret())
            .await
            .expect("auth")
            .is_some()
    );

    // Unknown, malformed and tampered keys are simply not authenticated.
    let unknown = auth::ApiKey::generate(KeyMode::Test);
    assert!(
        auth::authenticate(&ctx.db, unknown.expose_secret())
            .await
            .expect("auth")
            .is_none()
    );
    assert!(
        auth::authenticate(&ctx.db, "test_short")
            .await
            .expect("auth")
            .is_none()
    );
    assert!(
        auth::authenticate(&ctx.db, "")
            .await
            .expect("auth")
            .is_none()
    );
    let swapped_mode = a.api_key.expose_secret().replacen("test_", "live_", 1);
    assert!(
        auth::authenticate(&ctx.db, &swapped_mode)
            .await
            .expect("auth")
            .is_none()
    );

    assert!(matches!(
        auth::revoke_api_key(&ctx.db, &clock, unknown.expose_secret()).await,
        Err(AuthError::KeyNotFound)
    ));
    let missing = PlatformId::generate(Utc::now());
    assert!(matches!(
        auth::create_api_key(&ctx.db, &clock, &missing, KeyMode::Test).await,
        Err(AuthError::PlatformNotFound)
    ));

    // Only hashes are stored.
    let mut tx = ctx.db.begin_read().await.expect("read");
    let rows = tx
        .fetch_all(Sql::new("SELECT key_hash FROM api_keys"))
        .await
        .expect("keys");
    for row in rows {
        let hash: String = row.get("key_hash").expect("hash");
        assert_eq!(hash.len(), 64);
        assert!(!hash.contains("test_") && !hash.contains("live_"));
    }
    tx.rollback().await.expect("rollback");
}

async fn repository_lookups_never_cross_platforms(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let b = new_platform(&ctx, "B").await;
    let (pa, pb) = (&a.platform.id, &b.platform.id);
    // A write transaction: `get_for_update` below locks, which a read-only one refuses.
    let mut tx = ctx.db.begin_write().await.expect("write");

    assert!(
        entities::get(&mut tx, pa, &a.root_entity_id)
            .await
            .expect("get")
            .is_some()
    );
    assert!(
        entities::get(&mut tx, pb, &a.root_entity_id)
            .await
            .expect("get")
            .is_none()
    );

    for account in &a.root_accounts {
        let own = bank_accounts::get(&mut tx, pa, account)
            .await
            .expect("get")
            .expect("own account");
        assert!(
            bank_accounts::get(&mut tx, pb, account)
                .await
                .expect("get")
                .is_none()
        );
        assert!(
            bank_accounts::get_for_update(&mut tx, pb, account)
                .await
                .expect("get")
                .is_none()
        );
        assert!(
            bank_accounts::owners(&mut tx, pb, account)
                .await
                .expect("owners")
                .is_empty()
        );
        let number = own.default_account_number_id.expect("number");
        assert!(
            bank_accounts::get_account_number(&mut tx, pa, &number)
                .await
                .expect("get")
                .is_some()
        );
        assert!(
            bank_accounts::get_account_number(&mut tx, pb, &number)
                .await
                .expect("get")
                .is_none()
        );
    }

    let listed = entities::list(&mut tx, pb, SortOrder::Desc, &PageRequest::first())
        .await
        .expect("list");
    assert_eq!(
        listed.items.iter().map(|e| &e.id).collect::<Vec<_>>(),
        vec![&b.root_entity_id]
    );
    let accounts = bank_accounts::list_all(&mut tx, pb).await.expect("list");
    assert!(
        accounts
            .iter()
            .all(|acc| &acc.platform_id == pb && !a.root_accounts.contains(&acc.id))
    );

    // Ids of the wrong type or shape are not found either (never an error).
    assert!(EntityId::parse(a.root_accounts[0].as_str()).is_none());
    assert!(BankAccountId::parse("bacc_nope").is_none());
    assert!(AccountNumberId::parse("").is_none());
    tx.rollback().await.expect("rollback");
}

// ---------------------------------------------------------------------------------------------
// Idempotency
// ---------------------------------------------------------------------------------------------

fn entity_record(platform_id: &PlatformId, name: &str, now: DateTime<Utc>) -> EntityRecord {
    EntityRecord {
        id: EntityId::generate(now),
        platform_id: platform_id.clone(),
        entity_type: EntityType::Business,
        name: name.into(),
        is_root: false,
        requires_screening: false,
        verification_status: VerificationStatus::Verified,
        first_name: None,
        last_name: None,
        business_name: Some(name.into()),
        created_at: now,
        updated_at: now,
    }
}

/// Creates a business entity under an idempotency key; answers the outcome with the id as body.
async fn create_entity_idempotently(
    db: &Db,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    key: &str,
    body: &str,
    runs: &AtomicUsize,
    hold: Duration,
) -> Result<Outcome<EntityId>, IdempotencyError> {
    let key = IdempotencyKey::parse(key)?;
    let fingerprint = RequestFingerprint::new("POST", "/entities/business", body.as_bytes());
    let now = clock.now();
    idempotency::execute(db, clock, platform_id, &key, &fingerprint, |tx| {
        Box::pin(async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let record = entity_record(platform_id, body, now);
            entities::insert(tx, &record).await?;
            if !hold.is_zero() {
                tokio::time::sleep(hold).await;
            }
            let response = StoredResponse {
                status: 200,
                body: record.id.as_str().as_bytes().to_vec(),
            };
            Ok((record.id, response))
        })
    })
    .await
}

async fn idempotent_requests_replay_and_refuse_reuse(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let b = new_platform(&ctx, "B").await;
    let runs = AtomicUsize::new(0);
    let clock = SystemClock;
    let pa = &a.platform.id;

    let first = create_entity_idempotently(
        &ctx.db,
        &clock,
        pa,
        "key-1",
        "Widgets",
        &runs,
        Duration::ZERO,
    )
    .await
    .expect("first");
    let Outcome::Fresh {
        value: id,
        response,
    } = first
    else {
        panic!("expected a fresh run: {first:?}")
    };
    assert_eq!(response.body, id.as_str().as_bytes());

    // Same key, same request: the stored response, byte for byte, and no second effect.
    let again = create_entity_idempotently(
        &ctx.db,
        &clock,
        pa,
        "key-1",
        "Widgets",
        &runs,
        Duration::ZERO,
    )
    .await
    .expect("replay");
    assert_eq!(again, Outcome::Replayed(response.clone()));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Same key, different body: reused.
    let reused = create_entity_idempotently(
        &ctx.db,
        &clock,
        pa,
        "key-1",
        "Gadgets",
        &runs,
        Duration::ZERO,
    )
    .await;
    assert!(
        matches!(reused, Err(IdempotencyError::Reused)),
        "{reused:?}"
    );

    // Keys are case sensitive and scoped per platform.
    let other_case = create_entity_idempotently(
        &ctx.db,
        &clock,
        pa,
        "KEY-1",
        "Widgets",
        &runs,
        Duration::ZERO,
    )
    .await
    .expect("other key");
    assert!(matches!(other_case, Outcome::Fresh { .. }));
    let other_platform = create_entity_idempotently(
        &ctx.db,
        &clock,
        &b.platform.id,
        "key-1",
        "Widgets",
        &runs,
        Duration::ZERO,
    )
    .await
    .expect("other platform");
    assert!(matches!(other_platform, Outcome::Fresh { .. }));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(
        count(
            &ctx,
            "SELECT COUNT(*) AS n FROM entities WHERE is_root = FALSE"
        )
        .await,
        3
    );

    // Invalid keys are refused before anything runs.
    for bad in ["", "tab\tkey"] {
        let r =
            create_entity_idempotently(&ctx.db, &clock, pa, bad, "Widgets", &runs, Duration::ZERO)
                .await;
        assert!(matches!(r, Err(IdempotencyError::InvalidKey)), "{r:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(
        count(
            &ctx,
            "SELECT COUNT(*) AS n FROM idempotency_keys WHERE state = 'completed'"
        )
        .await,
        3
    );
}

async fn failed_idempotent_requests_are_not_stored(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let pa = &a.platform.id;
    let clock = SystemClock;
    let key = IdempotencyKey::parse("retry-me").expect("key");
    let fingerprint = RequestFingerprint::new("POST", "/entities/business", b"{}");

    let failed: Result<Outcome<()>, IdempotencyError> =
        idempotency::execute(&ctx.db, &clock, pa, &key, &fingerprint, |tx| {
            Box::pin(async move {
                entities::insert(tx, &entity_record(pa, "Half done", Utc::now())).await?;
                Err(IdempotencyError::Store(StoreError::Corrupt(
                    "business rule refused".into(),
                )))
            })
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(
        count(&ctx, "SELECT COUNT(*) AS n FROM idempotency_keys").await,
        0
    );
    assert_eq!(
        count(
            &ctx,
            "SELECT COUNT(*) AS n FROM entities WHERE is_root = FALSE"
        )
        .await,
        0
    );

    // The corrected retry with the same key runs.
    let runs = AtomicUsize::new(0);
    let ok =
        create_entity_idempotently(&ctx.db, &clock, pa, "retry-me", "{}", &runs, Duration::ZERO)
            .await
            .expect("retry");
    assert!(matches!(ok, Outcome::Fresh { .. }));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

async fn idempotency_keys_expire_after_30_days(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let pa = &a.platform.id;
    let clock = FixedClock::new(Utc::now());
    let runs = AtomicUsize::new(0);
    create_entity_idempotently(&ctx.db, &clock, pa, "k", "One", &runs, Duration::ZERO)
        .await
        .expect("first");

    clock.advance(chrono::Duration::days(29));
    let reused =
        create_entity_idempotently(&ctx.db, &clock, pa, "k", "Two", &runs, Duration::ZERO).await;
    assert!(
        matches!(reused, Err(IdempotencyError::Reused)),
        "still remembered at 29 days: {reused:?}"
    );

    clock.advance(chrono::Duration::days(1));
    let fresh = create_entity_idempotently(&ctx.db, &clock, pa, "k", "Two", &runs, Duration::ZERO)
        .await
        .expect("expired key is free again");
    assert!(matches!(fresh, Outcome::Fresh { .. }));
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Housekeeping deletes what is older than 30 days and keeps the rest.
    let clock_later =
        FixedClock::new(clock.now() + chrono::Duration::days(30) + chrono::Duration::seconds(1));
    assert_eq!(
        idempotency::purge_expired(&ctx.db, &clock)
            .await
            .expect("purge"),
        0
    );
    assert_eq!(
        idempotency::purge_expired(&ctx.db, &clock_later)
            .await
            .expect("purge"),
        1
    );
    assert_eq!(
        count(&ctx, "SELECT COUNT(*) AS n FROM idempotency_keys").await,
        0
    );
}

async fn expired_idempotency_keys_are_purged_oldest_first_in_bounded_chunks(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let b = new_platform(&ctx, "B").await;
    let start = Utc::now();
    let clock = FixedClock::new(start);
    let runs = AtomicUsize::new(0);
    // Seven keys a minute apart over two platforms, then two a day later.
    for n in 0..9 {
        let platform = if n % 2 == 0 {
            &a.platform.id
        } else {
            &b.platform.id
        };
        let key = format!("k{n}");
        create_entity_idempotently(&ctx.db, &clock, platform, &key, "E", &runs, Duration::ZERO)
            .await
            .expect("create");
        let step = if n == 6 {
            chrono::Duration::days(1)
        } else {
            chrono::Duration::minutes(1)
        };
        clock.advance(step);
    }
    let keys = |ctx: &Ctx| {
        let db = ctx.db.clone();
        async move {
            let mut tx = db.begin_read().await.expect("read");
            let rows = tx
                .fetch_all(Sql::new(
                    "SELECT key FROM idempotency_keys ORDER BY created_at",
                ))
                .await
                .expect("keys");
            rows.iter()
                .map(|r| r.get::<String>("key").expect("key"))
                .collect::<Vec<_>>()
        }
    };
    // 30 days after the seventh key: the first seven have expired, the last two have not.
    let later = FixedClock::new(
        start + chrono::Duration::minutes(6) + idempotency::KEY_TTL + chrono::Duration::seconds(1),
    );
    let cutoff = later.now() - idempotency::KEY_TTL;

    // One chunk deletes at most its limit, the oldest first.
    let mut tx = ctx.db.begin_write().await.expect("begin");
    let deleted = store::idempotency::delete_oldest_created_before(&mut tx, cutoff, 3)
        .await
        .expect("chunk");
    tx.commit().await.expect("commit");
    assert_eq!(deleted, 3);
    assert_eq!(keys(&ctx).await, ["k3", "k4", "k5", "k6", "k7", "k8"]);

    // The purge runs chunks until one comes back short: four left, chunks of 2 (2, 2, then 0).
    let purged = idempotency::purge_expired_in_chunks(&ctx.db, &later, 2)
        .await
        .expect("purge");
    assert_eq!(purged, 4);
    assert_eq!(keys(&ctx).await, ["k7", "k8"]);
}

async fn fifty_concurrent_duplicates_have_exactly_one_winner(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let runs = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (db, pid, runs, barrier) = (
            ctx.db.clone(),
            a.platform.id.clone(),
            runs.clone(),
            barrier.clone(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            // The winner holds its transaction open long enough for every duplicate to arrive.
            create_entity_idempotently(
                &db,
                &SystemClock,
                &pid,
                "same-key",
                "Body",
                &runs,
                Duration::from_millis(300),
            )
            .await
        }));
    }
    let mut fresh = Vec::new();
    let (mut in_use, mut replayed) = (0, Vec::new());
    for task in tasks {
        match task.await.expect("task") {
            Ok(Outcome::Fresh { response, .. }) => fresh.push(response),
            Ok(Outcome::Replayed(response)) => replayed.push(response),
            Err(IdempotencyError::InUse) => in_use += 1,
            Err(other) => panic!("unexpected error: {other:?}"),
        }
    }
    assert_eq!(fresh.len(), 1, "exactly one winner");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the effects ran once");
    assert_eq!(in_use + replayed.len(), 49);
    assert!(
        in_use > 0,
        "concurrent duplicates are told the key is in use"
    );
    assert!(replayed.iter().all(|r| r == &fresh[0]));
    assert_eq!(
        count(
            &ctx,
            "SELECT COUNT(*) AS n FROM entities WHERE is_root = FALSE"
        )
        .await,
        1
    );

    // After the winner committed, a duplicate replays.
    let after = create_entity_idempotently(
        &ctx.db,
        &SystemClock,
        &a.platform.id,
        "same-key",
        "Body",
        &runs,
        Duration::ZERO,
    )
    .await
    .expect("replay");
    assert_eq!(after, Outcome::Replayed(fresh[0].clone()));
}

/// Across processes (no shared in-process claim), PostgreSQL's advisory lock answers "in use"
/// to a duplicate while the first transaction is open, and replays after it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn duplicates_in_another_transaction_are_in_use_on_postgres() {
    run_on(
        Backend::Postgres,
        "duplicates_in_another_transaction_are_in_use_on_postgres",
        test_options(),
        |ctx| async move {
            let a = new_platform(&ctx, "A").await;
            let pid = &a.platform.id;
            let key = IdempotencyKey::parse("cross-process").expect("key");
            let fp = RequestFingerprint::new("POST", "/x", b"1");
            let now = Utc::now();
            let mut first = ctx.db.begin_write().await.expect("tx1");
            let reserved = idempotency::reserve(&mut first, pid, &key, &fp, now)
                .await
                .expect("reserve");
            assert_eq!(reserved, idempotency::Reservation::Fresh);

            let mut second = ctx.db.begin_write().await.expect("tx2");
            let blocked = idempotency::reserve(&mut second, pid, &key, &fp, now).await;
            assert!(
                matches!(blocked, Err(IdempotencyError::InUse)),
                "{blocked:?}"
            );
            second.rollback().await.expect("rollback");

            let response = StoredResponse {
                status: 200,
                body: b"{\"ok\":true}".to_vec(),
            };
            idempotency::complete(&mut first, pid, &key, &response, now)
                .await
                .expect("complete");
            first.commit().await.expect("commit");

            let mut third = ctx.db.begin_write().await.expect("tx3");
            let replay = idempotency::reserve(&mut third, pid, &key, &fp, now)
                .await
                .expect("reserve");
            assert_eq!(replay, idempotency::Reservation::Replay(response));
            third.rollback().await.expect("rollback");
        },
    )
    .await;
}

/// A commit that fails in the writes it still had queued (here a count check; under load a
/// deadlock or serialization failure, which the service retries at once) has ended its
/// transaction when it returns, so the key's advisory lock is free for the retry. A rollback
/// left to a spawned task kept the lock a moment longer, and the retry answered 409
/// `idempotency_key_in_use` to the request's only sender (seen once in the crash test on
/// PostgreSQL). The runtime has one thread, and the locks are counted from another thread while
/// it waits, so a rollback still queued on this runtime cannot have run.
#[tokio::test]
async fn a_failed_commit_releases_its_idempotency_key_before_it_returns_on_postgres() {
    run_on(
        Backend::Postgres,
        "a_failed_commit_releases_its_idempotency_key_before_it_returns_on_postgres",
        test_options(),
        |ctx| async move {
            let a = new_platform(&ctx, "A").await;
            let pid = &a.platform.id;
            let key = IdempotencyKey::parse("failed-commit").expect("key");
            let fp = RequestFingerprint::new("POST", "/x", b"1");
            let mut first = ctx.db.begin_write().await.expect("tx1");
            let reserved = idempotency::reserve(&mut first, pid, &key, &fp, Utc::now())
                .await
                .expect("reserve");
            assert_eq!(reserved, idempotency::Reservation::Fresh);
            let missing = Sql::new("UPDATE platforms SET name = name WHERE platform_id = ?")
                .bind("plat_missing");
            first
                .execute_deferred(missing, 1, "a missing platform")
                .await
                .expect("queued");
            let failed = first.commit().await;
            assert!(matches!(failed, Err(StoreError::Corrupt(_))), "{failed:?}");
            assert_eq!(advisory_locks_held(&ctx.url), 0);
        },
    )
    .await;
}

/// A write abandoned while it waits for the gate of the serializable level (its request timed
/// out) leaves no session lock behind. The server grants the lock after the client is gone; had
/// the connection gone back to the pool, it would hold the lock for good (an exclusive one
/// stops every later write of every process). The next write on the pool's only connection gets
/// through, and once it has, no advisory lock is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_abandoned_at_the_gate_leaves_no_lock_behind_on_postgres() {
    let options = StoreOptions {
        postgres_max_connections: 1,
        postgres_isolation: PostgresIsolation::Serializable,
        ..test_options()
    };
    run_on(
        Backend::Postgres,
        "a_write_abandoned_at_the_gate_leaves_no_lock_behind_on_postgres",
        options,
        |ctx| async move {
            use sqlx::Connection;
            let created = new_platform(&ctx, "Gate").await;
            let platform_id = created.platform.id.as_str();
            let rename = |name: &'static str| {
                ctx.db.write(move |tx| {
                    Box::pin(async move {
                        let sql = Sql::new("UPDATE platforms SET name = ? WHERE platform_id = ?")
                            .bind(name)
                            .bind(platform_id);
                        tx.execute(sql).await
                    })
                })
            };
            let mut other = sqlx::PgConnection::connect(&ctx.url)
                .await
                .expect("connect");
            let gate =
                |statement: &'static str| sqlx::query(statement).bind(store::POSTGRES_GATE_KEY);
            gate("SELECT pg_advisory_lock($1)")
                .execute(&mut other)
                .await
                .expect("hold the gate");
            let abandoned = tokio::time::timeout(Duration::from_millis(500), rename("first")).await;
            assert!(abandoned.is_err(), "the write waits for the gate");
            gate("SELECT pg_advisory_unlock($1)")
                .execute(&mut other)
                .await
                .expect("open the gate");
            other.close().await.expect("close");

            let next = tokio::time::timeout(Duration::from_secs(10), rename("second")).await;
            assert_eq!(
                next.expect("the next write is not stuck").expect("write"),
                1
            );
            assert_eq!(platform_name(&ctx.db, platform_id).await, "second");
            let mut held = advisory_locks_held(&ctx.url);
            for _ in 0..50 {
                if held == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                held = advisory_locks_held(&ctx.url);
            }
            assert_eq!(held, 0, "advisory locks still held after the writes ended");
        },
    )
    .await;
}

/// The advisory locks granted in `url`'s database, counted on a connection and a thread of
/// their own while the caller's thread waits.
fn advisory_locks_held(url: &str) -> i64 {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            )
            .fetch_one(&mut conn)
            .await
            .expect("count locks")
        })
    })
    .join()
    .expect("lock counter")
}

// ---------------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------------

/// Inserts `n` entities with creation times that tie in threes and vary in sub-second digits
/// (SQLite compares timestamps as text: this catches format-dependent ordering).
async fn seed_entities(
    ctx: &Ctx,
    platform_id: &PlatformId,
    n: usize,
) -> Vec<(DateTime<Utc>, EntityId)> {
    let micros = [0u32, 500_000, 123_456, 120_000, 999_999, 7];
    let mut rows = Vec::new();
    for i in 0..n {
        let created = at((i / 3) as i64, micros[(i / 3) % micros.len()]);
        rows.push(entity_record(platform_id, &format!("E{i}"), created));
    }
    ctx.db
        .write(|tx| {
            let rows = &rows;
            Box::pin(async move {
                for row in rows {
                    entities::insert(tx, row).await?;
                }
                Ok::<_, StoreError>(())
            })
        })
        .await
        .expect("seed");
    rows.into_iter().map(|r| (r.created_at, r.id)).collect()
}

async fn page(
    ctx: &Ctx,
    pid: &PlatformId,
    order: SortOrder,
    limit: i64,
    after: Option<&EntityId>,
    before: Option<&EntityId>,
) -> Result<Page<EntityRecord>, ListError> {
    let request = PageRequest::parse(
        Some(limit),
        after.map(|id| id.as_str().to_owned()),
        before.map(|id| id.as_str().to_owned()),
    )?;
    let mut tx = ctx.db.begin_read().await?;
    let result = entities::list(&mut tx, pid, order, &request).await;
    tx.rollback().await?;
    result
}

fn ids(page: &Page<EntityRecord>) -> Vec<EntityId> {
    page.items.iter().map(|e| e.id.clone()).collect()
}

async fn pagination_walks_see_every_row_exactly_once(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let pid = &a.platform.id;
    let mut expected = seed_entities(&ctx, pid, 23).await;
    // Plus the root entity, created now (after all seeded times).
    let root = entities::find_root(&mut ctx.db.begin_read().await.expect("read"), pid)
        .await
        .expect("root")
        .expect("exists");
    expected.push((root.created_at, root.id));
    expected.sort();

    for order in [SortOrder::Asc, SortOrder::Desc] {
        let list: Vec<EntityId> = match order {
            SortOrder::Asc => expected.iter().map(|(_, id)| id.clone()).collect(),
            SortOrder::Desc => expected.iter().rev().map(|(_, id)| id.clone()).collect(),
        };
        for limit in [1, 4, 7, 24, 100] {
            // Forward.
            let mut seen = Vec::new();
            let mut cursor: Option<EntityId> = None;
            loop {
                let p = page(&ctx, pid, order, limit, cursor.as_ref(), None)
                    .await
                    .expect("page");
                assert!(p.items.len() <= limit as usize);
                seen.extend(ids(&p));
                if !p.has_more {
                    break;
                }
                cursor = seen.last().cloned();
            }
            assert_eq!(seen, list, "forward walk, {order:?}, limit {limit}");

            // Backward from the last object: each page is in list order and ends just before
            // the cursor.
            let last = list.last().expect("non-empty").clone();
            let mut seen_back = vec![last.clone()];
            let mut cursor = last;
            loop {
                let p = page(&ctx, pid, order, limit, None, Some(&cursor))
                    .await
                    .expect("page");
                let page_ids = ids(&p);
                let position = list
                    .iter()
                    .position(|id| id == &cursor)
                    .expect("cursor in list");
                let start = position.saturating_sub(limit as usize);
                assert_eq!(
                    page_ids,
                    list[start..position].to_vec(),
                    "backward page, {order:?}, limit {limit}"
                );
                let mut combined = page_ids.clone();
                combined.extend(seen_back);
                seen_back = combined;
                if !p.has_more {
                    break;
                }
                cursor = page_ids
                    .first()
                    .expect("page not empty when has_more")
                    .clone();
            }
            assert_eq!(seen_back, list, "backward walk, {order:?}, limit {limit}");
        }
    }
}

async fn pagination_rejects_cursors_outside_the_list(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let b = new_platform(&ctx, "B").await;
    seed_entities(&ctx, &a.platform.id, 3).await;
    let pa = &a.platform.id;
    let foreign = &b.root_entity_id;
    for (after, before) in [(Some(foreign), None), (None, Some(foreign))] {
        let r = page(&ctx, pa, SortOrder::Desc, 10, after, before).await;
        assert!(
            matches!(r, Err(ListError::Page(PaginationError::InvalidCursor))),
            "{r:?}"
        );
    }
    // Unknown and malformed ids are not in the list either.
    let unknown = EntityId::generate(Utc::now());
    assert!(matches!(
        page(&ctx, pa, SortOrder::Asc, 10, Some(&unknown), None).await,
        Err(ListError::Page(PaginationError::InvalidCursor))
    ));
    let request =
        PageRequest::parse(None, Some("not an id' OR 1=1 --".into()), None).expect("shape ok");
    let mut tx = ctx.db.begin_read().await.expect("read");
    assert!(matches!(
        entities::list(&mut tx, pa, SortOrder::Asc, &request).await,
        Err(ListError::Page(PaginationError::InvalidCursor))
    ));
    tx.rollback().await.expect("rollback");
    // Limits and conflicting cursors fail before any query.
    assert!(matches!(
        page(&ctx, pa, SortOrder::Asc, 0, None, None).await,
        Err(ListError::Page(PaginationError::InvalidLimit))
    ));
    assert!(matches!(
        page(&ctx, pa, SortOrder::Asc, 101, None, None).await,
        Err(ListError::Page(PaginationError::InvalidLimit))
    ));
    assert!(matches!(
        page(&ctx, pa, SortOrder::Asc, 10, Some(&unknown), Some(&unknown)).await,
        Err(ListError::Page(PaginationError::ConflictingCursors))
    ));
}

async fn pagination_walk_is_stable_under_concurrent_inserts(ctx: Ctx) {
    let a = new_platform(&ctx, "A").await;
    let pid = &a.platform.id;
    let seeded = seed_entities(&ctx, pid, 12).await;
    let root_id = a.root_entity_id.clone();
    let mut original: Vec<EntityId> = seeded.into_iter().map(|(_, id)| id).collect();
    original.push(root_id);

    for order in [SortOrder::Desc, SortOrder::Asc] {
        let mut seen: Vec<EntityId> = Vec::new();
        let mut cursor: Option<EntityId> = None;
        loop {
            let p = page(&ctx, pid, order, 3, cursor.as_ref(), None)
                .await
                .expect("page");
            seen.extend(ids(&p));
            // Someone creates an entity between two pages.
            let now = Utc::now();
            ctx.db
                .write(|tx| {
                    let record = entity_record(pid, "Newcomer", now);
                    Box::pin(async move { entities::insert(tx, &record).await })
                })
                .await
                .expect("insert");
            if !p.has_more {
                break;
            }
            cursor = seen.last().cloned();
        }
        for id in &original {
            assert_eq!(
                seen.iter().filter(|s| *s == id).count(),
                1,
                "{id} seen exactly once ({order:?})"
            );
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "no object twice ({order:?})");
    }
}

// ---------------------------------------------------------------------------------------------
// Transactions and retry
// ---------------------------------------------------------------------------------------------

async fn non_retryable_errors_are_not_retried(ctx: Ctx) {
    let attempts = AtomicUsize::new(0);
    let attempts_ref = &attempts;
    let result: Result<(), StoreError> = ctx
        .db
        .write(|tx| {
            Box::pin(async move {
                attempts_ref.fetch_add(1, Ordering::SeqCst);
                tx.execute(Sql::new("INSERT INTO no_such_table VALUES (1)"))
                    .await?;
                Ok(())
            })
        })
        .await;
    assert!(result.is_err());
    assert_eq!(attempts.load(Ordering::SeqCst), 1);

    // A bind count mismatch is an error, not a panic.
    let mut tx = ctx.db.begin_write().await.expect("tx");
    let mismatch = tx.execute(Sql::new("SELECT ?, ?").bind(1i64)).await;
    assert!(
        matches!(
            mismatch,
            Err(StoreError::BindCount {
                placeholders: 2,
                binds: 1
            })
        ),
        "{mismatch:?}"
    );
    tx.rollback().await.expect("rollback");
}

/// `Db::begin_read` (and so `Db::read`) is one snapshot on both backends: a write committed
/// after its first statement stays out of its later ones. (PostgreSQL's default, `READ
/// COMMITTED`, would show it; `bankd ledger check` reads its totals and its details in two
/// statements and would then report a transfer committed in between as a discrepancy.)
async fn a_read_transaction_is_one_snapshot(ctx: Ctx) {
    let created = new_platform(&ctx, "Snapshot").await;
    let platform_id = created.platform.id.as_str();
    let name = || Sql::new("SELECT name FROM platforms WHERE platform_id = ?").bind(platform_id);
    let mut read = ctx.db.begin_read().await.expect("read");
    let before = read.fetch_one(name()).await.expect("name");
    assert_eq!(before.get::<String>("name").expect("name"), "Snapshot");
    ctx.db
        .write(|tx| {
            Box::pin(async move {
                let sql = Sql::new("UPDATE platforms SET name = 'Renamed' WHERE platform_id = ?")
                    .bind(platform_id);
                tx.execute(sql).await
            })
        })
        .await
        .expect("rename");
    let again = read.fetch_one(name()).await.expect("name");
    assert_eq!(
        again.get::<String>("name").expect("name"),
        "Snapshot",
        "the read transaction saw a write committed after its first statement"
    );
    read.rollback().await.expect("rollback");
    let mut read = ctx.db.begin_read().await.expect("read");
    let after = read.fetch_one(name()).await.expect("name");
    assert_eq!(after.get::<String>("name").expect("name"), "Renamed");
    read.rollback().await.expect("rollback");
}

/// Inside `store::request_connection`, a request's key check, its reads and its write use one
/// PostgreSQL connection (one backend process), and it goes back to the pool when the request
/// ends. The pool has two connections, both idle before each request, so that a statement
/// taking a connection from the pool would get the other one.
#[tokio::test]
async fn postgres_requests_keep_one_connection_for_their_statements() {
    let options = StoreOptions {
        postgres_max_connections: 2,
        ..test_options()
    };
    run_on(
        Backend::Postgres,
        "postgres_requests_keep_one_connection_for_their_statements",
        options,
        |ctx| async move {
            let db = &ctx.db;
            // Both of the pool's connections at once, then back: they come back only if the
            // last request gave its connection back.
            let both_idle = || async {
                let first = db.begin_write().await.expect("a first connection");
                let second = tokio::time::timeout(Duration::from_secs(10), db.begin_write())
                    .await
                    .expect("the pool's second connection came back")
                    .expect("a second connection");
                first.rollback().await.expect("rollback");
                second.rollback().await.expect("rollback");
                // The pool checks each connection on its way back before it is idle again.
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            let pid = || Sql::new("SELECT pg_backend_pid() AS pid");
            for _ in 0..3 {
                both_idle().await;
                let (key, read, written) = store::request_connection(async {
                    let key = db
                        .read_single_kept(|tx| {
                            Box::pin(async move { tx.fetch_one(pid()).await?.get::<i32>("pid") })
                        })
                        .await
                        .expect("key check");
                    let read = db
                        .read_single(|tx| {
                            Box::pin(async move { tx.fetch_one(pid()).await?.get::<i32>("pid") })
                        })
                        .await
                        .expect("read");
                    let written = db
                        .write(|tx| {
                            Box::pin(async move { tx.fetch_one(pid()).await?.get::<i32>("pid") })
                        })
                        .await
                        .expect("write");
                    (key, read, written)
                })
                .await;
                assert_eq!((read, written), (key, key), "one backend for the request");
            }
            both_idle().await;
        },
    )
    .await;
}

/// The platform's name, read in a transaction of two statements (`Db::read`).
async fn platform_name(db: &Db, platform_id: &str) -> String {
    db.read(|tx| {
        Box::pin(async move {
            let sql =
                Sql::new("SELECT name FROM platforms WHERE platform_id = ?").bind(platform_id);
            let name: String = tx.fetch_one(sql).await?.get("name")?;
            tx.fetch_one(Sql::new("SELECT 1 AS one")).await?;
            Ok::<_, StoreError>(name)
        })
    })
    .await
    .expect("read")
}

/// A PostgreSQL read ends without waiting for its `ROLLBACK` (queued on the connection, sent
/// when the pool takes the connection back); the next user of that connection, here the only
/// one of the pool, still starts clean: a write after reads commits, and a later read sees it.
#[tokio::test]
async fn postgres_reads_end_without_leaving_their_transaction_open() {
    let options = StoreOptions {
        postgres_max_connections: 1,
        ..test_options()
    };
    run_on(
        Backend::Postgres,
        "postgres_reads_end_without_leaving_their_transaction_open",
        options,
        |ctx| async move {
            let created = new_platform(&ctx, "Reads").await;
            let platform_id = created.platform.id.as_str();
            for round in 0..3 {
                let before = platform_name(&ctx.db, platform_id).await;
                let renamed = format!("Reads {round}");
                let renamed_ref = renamed.as_str();
                ctx.db
                    .write(|tx| {
                        Box::pin(async move {
                            let sql =
                                Sql::new("UPDATE platforms SET name = ? WHERE platform_id = ?")
                                    .bind(renamed_ref)
                                    .bind(platform_id);
                            tx.execute(sql).await
                        })
                    })
                    .await
                    .expect("a write on the connection the read used");
                let after = platform_name(&ctx.db, platform_id).await;
                assert_ne!(before, after);
                assert_eq!(after, renamed);
            }
        },
    )
    .await;
}

/// `Tx::execute_deferred`: a second write to a table already queued does not lose the first (one
/// statement could change a row only once), a read sees every queued write, and a write that
/// changed another number of rows than meant fails the transaction, by the commit at the
/// latest, taking the other queued writes with it.
async fn deferred_writes_keep_their_order_and_their_counts(ctx: Ctx) {
    let created = new_platform(&ctx, "Deferred").await;
    let platform_id = created.platform.id.as_str();
    let rename = |suffix: &str, platform: &str| {
        Sql::new("UPDATE platforms SET name = name || ? WHERE platform_id = ?")
            .bind(suffix)
            .bind(platform)
    };
    let touch_accounts = |platform: &str| {
        Sql::new("UPDATE bank_accounts SET updated_at = updated_at WHERE platform_id = ?")
            .bind(platform)
    };
    let name = |platform: &str| {
        Sql::new("SELECT name FROM platforms WHERE platform_id = ?").bind(platform)
    };

    let mut tx = ctx.db.begin_write().await.expect("tx");
    tx.execute_deferred(rename("a", platform_id), 1, "first")
        .await
        .expect("first");
    tx.execute_deferred(rename("b", platform_id), 1, "second")
        .await
        .expect("second");
    let roots = ROOT_ACCOUNT_TYPES.len() as u64;
    tx.execute_deferred(touch_accounts(platform_id), roots, "the root accounts")
        .await
        .expect("root accounts");
    let read = tx.fetch_one(name(platform_id)).await.expect("read");
    assert_eq!(read.get::<String>("name").expect("name"), "Deferredab");
    tx.execute_deferred(rename("c", platform_id), 1, "third")
        .await
        .expect("third");
    tx.commit().await.expect("commit");
    let mut tx = ctx.db.begin_write().await.expect("tx");
    let read = tx.fetch_one(name(platform_id)).await.expect("read");
    assert_eq!(read.get::<String>("name").expect("name"), "Deferredabc");

    let failed = async {
        tx.execute_deferred(rename("d", platform_id), 1, "fourth")
            .await?;
        tx.execute_deferred(
            touch_accounts("plat_missing"),
            1,
            "a missing platform's account",
        )
        .await?;
        tx.commit().await
    }
    .await;
    assert!(
        matches!(&failed, Err(StoreError::Corrupt(m)) if m.contains("a missing platform's account: 0 rows changed where 1 were meant")),
        "{failed:?}"
    );
    let mut tx = ctx.db.begin_write().await.expect("tx");
    let read = tx.fetch_one(name(platform_id)).await.expect("read");
    assert_eq!(read.get::<String>("name").expect("name"), "Deferredabc");
    tx.rollback().await.expect("rollback");
}

/// `ledger::write_entry` refuses an entry whose accounts are not all there: an error, by the
/// commit at the latest, never a half-applied movement (both backends answer the postings'
/// foreign-key violation).
async fn a_ledger_entry_naming_a_missing_account_fails(ctx: Ctx) {
    let created = new_platform(&ctx, "Ledger").await;
    let platform_id = &created.platform.id;
    let now = Utc::now();
    let mut tx = ctx.db.begin_write().await.expect("tx");
    let locked = ledger::lock_accounts(&mut tx, platform_id, &[], true)
        .await
        .expect("lock");
    let settlement = locked.first().expect("the settlement account").clone();
    let missing = LedgerAccount {
        id: BankAccountId::generate(now),
        account_type: AccountType::Checking,
        ..settlement.clone()
    };
    let mut journal = Journal::new([settlement.clone(), missing.clone()]);
    journal
        .transfer(&settlement.id, &missing.id, 5, DebitPolicy::Unbounded)
        .expect("journal");
    let entry = journal.finish().expect("balanced");
    let source = ledger::Source {
        source_type: "book_transfer",
        source_id: "book_test",
        event: "create",
        currency_code: "USD",
    };
    // On PostgreSQL the entry's writes are deferred: the error may come with the commit.
    let written = match ledger::write_entry(&mut tx, platform_id, &entry, source, now).await {
        Ok(()) => tx.commit().await,
        Err(e) => {
            tx.rollback().await.expect("rollback");
            Err(e)
        }
    };
    assert!(written.is_err(), "{written:?}");
    let mut tx = ctx.db.begin_write().await.expect("tx");
    let after = ledger::lock_accounts(&mut tx, platform_id, &[], true)
        .await
        .expect("lock");
    tx.rollback().await.expect("rollback");
    assert_eq!(
        after.first().map(|a| &a.balances),
        Some(&settlement.balances),
        "the settlement account's half of the entry stayed"
    );
}

/// SQLite plans the lists of book transfers by status and by account on their own indexes, not
/// by walking the platform's whole list (bench/README.md has what that walk cost).
#[tokio::test]
async fn sqlite_lists_rare_transfers_from_their_own_indexes() {
    use bankd::model::transfers::BookTransferFilter;
    use bankd::model::transfers::BookTransferStatus;
    use bankd::store::transfers::book_transfers_keyset;

    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let platform = PlatformId::from_trusted("plat_x".to_owned());
    let plan = |filter: BookTransferFilter| {
        sqlite_plan(&ctx.db, book_transfers_keyset(&platform, &filter), None)
    };
    let status = |status| BookTransferFilter {
        status: Some(status),
        ..BookTransferFilter::default()
    };
    for rare in [
        BookTransferStatus::Hold,
        BookTransferStatus::Canceled,
        BookTransferStatus::Rejected,
    ] {
        let plan = plan(status(rare)).await;
        assert!(
            plan.contains("book_transfers_not_completed (platform_id=? AND status=?)"),
            "{rare:?}: {plan}"
        );
    }
    let plan_completed = plan(status(BookTransferStatus::Completed)).await;
    assert!(
        plan_completed.contains("book_transfers_list"),
        "{plan_completed}"
    );
    let by_account = plan(BookTransferFilter {
        bank_account_id: Some("bacc_x".to_owned()),
        ..BookTransferFilter::default()
    })
    .await;
    assert!(
        by_account.contains("book_transfers_by_sender")
            && by_account.contains("book_transfers_by_receiver")
            && !by_account.contains("book_transfers_list"),
        "{by_account}"
    );
}

/// SQLite's plan of a list page (`after`: a cursor's sort value and id), one line per step.
async fn sqlite_plan(
    db: &Db,
    keyset: bankd::store::keyset::Keyset,
    after: Option<(store::Value, &str)>,
) -> String {
    let request = PageRequest::parse(Some(100), None, None).expect("page");
    let mut sql = Sql::new("EXPLAIN QUERY PLAN ");
    sql.append(keyset.page_query(Backend::Sqlite, &request, after));
    let mut tx = db.begin_read().await.expect("read");
    let rows = tx.fetch_all(sql).await.expect("plan");
    rows.iter()
        .map(|r| r.get::<String>("detail").expect("detail"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that a list in creation order reads its page through `index`, in order (no sort),
/// both from its start and after a cursor (`cursor_id`, at the current time).
async fn assert_newest_first_through(
    db: &Db,
    keyset: bankd::store::keyset::Keyset,
    cursor_id: &str,
    index: &str,
    what: &dyn std::fmt::Debug,
) {
    for after in [None, Some((store::Value::from(Utc::now()), cursor_id))] {
        let plan = sqlite_plan(db, keyset.clone(), after).await;
        assert!(
            plan.contains(index) && !plan.contains("TEMP B-TREE"),
            "{what:?}: {plan}"
        );
    }
}

/// The two ways of reading a page filtered by an owner (from the owner's rows when it owns
/// few accounts, along the list otherwise) answer the same accounts in the same order, in
/// every sort and both orders, from the start and after a cursor.
async fn an_owner_filter_reads_the_same_accounts_either_way(ctx: Ctx) {
    use bank_accounts::{AccountFilter, AccountSort, Owned, list_keyset_owned};

    let created = new_platform(&ctx, "Owners").await;
    let other = new_platform(&ctx, "Others").await;
    let pid = created.platform.id.clone();
    let filter = AccountFilter {
        entity_id: Some(created.root_entity_id.as_str().to_owned()),
        ..AccountFilter::default()
    };
    let backend = ctx.db.backend();
    let read = |owned: Owned, sort: AccountSort, order: SortOrder, request: PageRequest| {
        let (db, pid, filter) = (&ctx.db, &pid, &filter);
        async move {
            let mut tx = db.begin_read().await.expect("read");
            let page = list_keyset_owned(pid, filter, sort, order, owned)
                .fetch(&mut tx, &request, |row| row.get::<String>("id"))
                .await
                .expect("page");
            tx.rollback().await.expect("rollback");
            page
        }
    };
    for sort in [
        AccountSort::CreatedAt,
        AccountSort::Balance,
        AccountSort::Description,
    ] {
        for order in [SortOrder::Desc, SortOrder::Asc] {
            let first = PageRequest::parse(Some(2), None, None).expect("page");
            let walked = read(Owned::Many, sort, order, first.clone()).await;
            let looked_up = read(Owned::Few(backend), sort, order, first).await;
            assert_eq!(walked, looked_up, "{sort:?} {order:?}");
            assert_eq!(walked.items.len(), 2, "the root owns three accounts");
            assert!(walked.has_more);
            let after = walked.items[1].clone();
            let next = PageRequest::parse(Some(2), Some(after), None).expect("page");
            let walked = read(Owned::Many, sort, order, next.clone()).await;
            let looked_up = read(Owned::Few(backend), sort, order, next).await;
            assert_eq!(walked, looked_up, "{sort:?} {order:?} after a cursor");
            assert_eq!(walked.items.len(), 1);
            assert!(
                !walked
                    .items
                    .iter()
                    .any(|id| other.root_accounts.iter().any(|o| o.as_str() == id))
            );
        }
    }
}

/// PostgreSQL plans the walk for an owner of many accounts with the owner's value on every run
/// (an unnamed statement), and keeps preparing the read for an owner of few: the connection's
/// prepared statements hold the one and not the other. A generic plan, made for the typical
/// owner of a few, took 0.44 s a page for an owner of 200 000 accounts (bench/README.md).
#[tokio::test]
async fn postgres_plans_the_walk_for_an_owner_of_many_on_every_run() {
    use bank_accounts::{AccountFilter, AccountSort, Owned, list_keyset_owned};

    run_on(
        Backend::Postgres,
        "postgres_plans_the_walk_for_an_owner_of_many_on_every_run",
        test_options(),
        |ctx| async move {
            let created = new_platform(&ctx, "Owners").await;
            let filter = AccountFilter {
                entity_id: Some(created.root_entity_id.as_str().to_owned()),
                ..AccountFilter::default()
            };
            let mut tx = ctx.db.begin_read().await.expect("read");
            for owned in [Owned::Many, Owned::Few(Backend::Postgres)] {
                for _ in 0..2 {
                    let page = list_keyset_owned(
                        &created.platform.id,
                        &filter,
                        AccountSort::Balance,
                        SortOrder::Desc,
                        owned,
                    )
                    .fetch(&mut tx, &PageRequest::first(), |row| {
                        row.get::<String>("id")
                    })
                    .await
                    .expect("page");
                    assert_eq!(
                        page.items.len(),
                        3,
                        "{owned:?}: the root owns three accounts"
                    );
                }
            }
            let mut prepared = async |fragment: &str| {
                let sql = Sql::new(
                    "SELECT COUNT(*) AS n FROM pg_prepared_statements \
                     WHERE strpos(statement, ?) > 0",
                )
                .bind(fragment);
                let row = tx.fetch_one(sql).await.expect("prepared statements");
                row.get::<i64>("n").expect("n")
            };
            let walk = prepared("EXISTS (SELECT 1 FROM bank_account_owners o").await;
            let few = prepared("id IN (SELECT bank_account_id FROM bank_account_owners").await;
            assert_eq!(
                (walk, few),
                (0, 1),
                "(the walk, the read of a few) prepared"
            );
            tx.rollback().await.expect("rollback");
        },
    )
    .await;
}

/// SQLite reads a page filtered by an owner of few accounts from the owner's rows (its index by
/// entity, then each account by id), in every sort; an owner of many walks the sort's index.
#[tokio::test]
async fn sqlite_reads_the_accounts_of_an_owner_of_few_by_id() {
    use bank_accounts::{AccountFilter, AccountSort, Owned, list_keyset_owned};

    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let platform = PlatformId::from_trusted("plat_x".to_owned());
    let filter = AccountFilter {
        entity_id: Some("enti_x".to_owned()),
        currency_code: Some("EUR".to_owned()),
        ..AccountFilter::default()
    };
    for sort in [
        AccountSort::CreatedAt,
        AccountSort::Balance,
        AccountSort::Description,
    ] {
        for (owned, expected) in [
            (
                Owned::Few(Backend::Sqlite),
                [
                    "sqlite_autoindex_bank_accounts_1 (id=?)",
                    "bank_account_owners_entity (platform_id=? AND entity_id=?)",
                ],
            ),
            (
                Owned::Many,
                ["bank_accounts_not_usd", "bank_account_owners"],
            ),
        ] {
            for after in [None, Some((store::Value::from(Utc::now()), "bacc_c"))] {
                let keyset = list_keyset_owned(&platform, &filter, sort, SortOrder::Desc, owned);
                let plan = sqlite_plan(&ctx.db, keyset, after).await;
                assert!(
                    expected.iter().all(|part| plan.contains(part)),
                    "{sort:?} {owned:?}: {plan}"
                );
            }
        }
    }
}

/// SQLite reads bank accounts filtered by a rare value (a root type, a reserve account,
/// overdrafts, a status other than open, a currency other than USD) from the partial index that
/// holds only those, under every sort and past a cursor; the common values stay on the sort's
/// own index. Without it each page walked the platform's whole list (bench/README.md).
#[tokio::test]
async fn sqlite_lists_rare_bank_accounts_from_their_own_indexes() {
    use bank_accounts::{AccountFilter, AccountSort, list_keyset};

    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let platform = PlatformId::from_trusted("plat_x".to_owned());
    let rare: [(AccountFilter, &str); 6] = [
        (
            AccountFilter {
                account_type: Some(AccountType::OverdraftReserve),
                ..AccountFilter::default()
            },
            "bank_accounts_one_root_per_type (platform_id=? AND type=?)",
        ),
        (
            AccountFilter {
                overdraft_reserve_account_id: Some("bacc_r".to_owned()),
                ..AccountFilter::default()
            },
            "bank_accounts_by_reserve (platform_id=? AND overdraft_reserve_account_id=?",
        ),
        (
            AccountFilter {
                is_overdraftable: Some(true),
                ..AccountFilter::default()
            },
            "bank_accounts_overdraftable (platform_id=?",
        ),
        (
            AccountFilter {
                status: Some(AccountStatus::Closed),
                ..AccountFilter::default()
            },
            "bank_accounts_not_open (platform_id=? AND status=?",
        ),
        (
            AccountFilter {
                currency_code: Some("EUR".to_owned()),
                ..AccountFilter::default()
            },
            "bank_accounts_not_usd (platform_id=? AND currency_code=?",
        ),
        // Several rare filters: the most selective one's index serves, the others filter.
        (
            AccountFilter {
                currency_code: Some("EUR".to_owned()),
                status: Some(AccountStatus::Frozen),
                is_overdraftable: Some(true),
                ..AccountFilter::default()
            },
            "bank_accounts_overdraftable (platform_id=?",
        ),
    ];
    let sorts = [
        (AccountSort::CreatedAt, store::Value::from(Utc::now())),
        (AccountSort::Balance, store::Value::from(5i64)),
        (AccountSort::Description, store::Value::from("m")),
    ];
    for (filter, index) in &rare {
        for (sort, value) in &sorts {
            for order in [SortOrder::Desc, SortOrder::Asc] {
                for after in [None, Some((value.clone(), "bacc_c"))] {
                    let keyset = list_keyset(&platform, filter, *sort, order);
                    let plan = sqlite_plan(&ctx.db, keyset, after).await;
                    assert!(
                        plan.lines().count() <= 2 && plan.contains(index),
                        "{filter:?} {sort:?} {order:?}: {plan}"
                    );
                }
            }
        }
    }
    // The common values: the sort's own index, in order, no sorting.
    let common = AccountFilter {
        account_type: Some(AccountType::Checking),
        currency_code: Some("USD".to_owned()),
        status: Some(AccountStatus::Open),
        is_overdraftable: Some(false),
        ..AccountFilter::default()
    };
    for (sort, index) in [
        (AccountSort::CreatedAt, "bank_accounts_list"),
        (AccountSort::Balance, "bank_accounts_by_balance"),
        (AccountSort::Description, "bank_accounts_by_description"),
    ] {
        let plan = sqlite_plan(
            &ctx.db,
            list_keyset(&platform, &common, sort, SortOrder::Desc),
            None,
        )
        .await;
        assert!(
            plan.contains(index) && !plan.contains("TEMP B-TREE"),
            "{sort:?}: {plan}"
        );
    }
}

/// SQLite reads counterparties through the index each filter calls for: in description order
/// from an index (no sort of the platform's counterparties per page), an exact number from its
/// own index under either sort (the few matches sorted after), a substring or a creation range
/// in description order through the list index and a sort (bounded, where walking the
/// description index and testing each row could read every row at random).
#[tokio::test]
async fn sqlite_lists_counterparties_through_the_index_each_filter_calls_for() {
    use bankd::model::counterparties::{ListFilter, Sort};
    use bankd::store::counterparties::list_keyset;

    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let platform = PlatformId::from_trusted("plat_x".to_owned());
    let by_description = |filter: ListFilter| ListFilter {
        sort: Sort::Description,
        ..filter
    };
    let account = ListFilter {
        account_number: Some("0001".to_owned()),
        ..ListFilter::default()
    };
    let routing = ListFilter {
        routing_number: Some("021000021".to_owned()),
        ..ListFilter::default()
    };
    let both = ListFilter {
        routing_number: Some("021000021".to_owned()),
        ..account.clone()
    };
    let substring = ListFilter {
        description: Some("acme".to_owned()),
        ..ListFilter::default()
    };
    let recent = ListFilter {
        created: Bounds {
            gte: Some(Utc::now()),
            ..Bounds::default()
        },
        ..ListFilter::default()
    };
    let account_index = "counterparties_by_account_number (platform_id=? AND account_number=?";
    let pair_index = "counterparties_pair (platform_id=? AND routing_number=?";
    // (filter, the index its plan names, whether the plan may sort)
    let cases = [
        (ListFilter::default(), "counterparties_list", false),
        (
            by_description(ListFilter::default()),
            "counterparties_by_description",
            false,
        ),
        (account.clone(), account_index, false),
        (by_description(account), account_index, true),
        (routing.clone(), pair_index, true),
        (by_description(routing), pair_index, true),
        (by_description(both), account_index, true),
        (substring.clone(), "counterparties_list", false),
        (by_description(substring), "counterparties_list", true),
        (
            by_description(recent),
            "counterparties_list (platform_id=? AND created_at>?)",
            true,
        ),
    ];
    for (filter, index, may_sort) in cases {
        let value = match filter.sort {
            Sort::CreatedAt => store::Value::from(Utc::now()),
            Sort::Description => store::Value::from("m"),
        };
        for order in [SortOrder::Desc, SortOrder::Asc] {
            for after in [None, Some((value.clone(), "cpty_c"))] {
                let filter = ListFilter {
                    order: Some(order),
                    ..filter.clone()
                };
                let plan = sqlite_plan(&ctx.db, list_keyset(&platform, &filter), after).await;
                assert!(
                    plan.contains(index) && (may_sort || !plan.contains("TEMP B-TREE")),
                    "{filter:?}: {plan}"
                );
            }
        }
    }
}

/// SQLite reads documents filtered by an exact file name, tag or type from the index that
/// starts with that value, in list order (no sort), with or without a cursor and a creation
/// range; unfiltered and substring lists stay on the list index. Without them each page walked
/// the platform's documents, a table page each (bench/README.md).
#[tokio::test]
async fn sqlite_lists_documents_through_the_index_of_their_exact_filter() {
    use bankd::model::documents::DocumentFilter;
    use bankd::store::documents::list_keyset;

    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let platform = PlatformId::from_trusted("plat_x".to_owned());
    let name = DocumentFilter {
        file_name: Some("passport.pdf".to_owned()),
        ..DocumentFilter::default()
    };
    let tag = DocumentFilter {
        tag: Some("kyc-2026".to_owned()),
        ..DocumentFilter::default()
    };
    let kind = DocumentFilter {
        document_type: Some(DocumentType::IrsLetter),
        ..DocumentFilter::default()
    };
    let recent = |filter: DocumentFilter| DocumentFilter {
        created: Bounds {
            gte: Some(Utc::now()),
            ..Bounds::default()
        },
        ..filter
    };
    let substring = DocumentFilter {
        description: Some("lease".to_owned()),
        ..DocumentFilter::default()
    };
    let cases = [
        (DocumentFilter::default(), "documents_list (platform_id=?"),
        (substring, "documents_list (platform_id=?"),
        (
            name.clone(),
            "documents_by_file_name (platform_id=? AND file_name=?",
        ),
        (
            recent(name),
            "documents_by_file_name (platform_id=? AND file_name=? AND created_at>?",
        ),
        (tag.clone(), "documents_by_tag (platform_id=? AND tag=?"),
        (
            recent(tag),
            "documents_by_tag (platform_id=? AND tag=? AND created_at>?",
        ),
        (kind.clone(), "documents_by_type (platform_id=? AND type=?"),
        (
            recent(kind),
            "documents_by_type (platform_id=? AND type=? AND created_at>?",
        ),
    ];
    for (filter, index) in cases {
        let keyset = list_keyset(&platform, &filter);
        assert_newest_first_through(&ctx.db, keyset, "docu_c", index, &filter).await;
    }
}

/// SQLite finds the root entity (`is_root=true`) through its one-row partial index, the
/// entities not verified through theirs, and a type through `entities_by_type`, with or without
/// a cursor; the common values (`is_root=false`, `VERIFIED`) stay on the list index.
#[tokio::test]
async fn sqlite_finds_rare_entities_through_their_own_indexes() {
    use bankd::model::entities::EntityFilter;
    use entities::list_keyset;

    let (ctx, _guard) = sqlite_db(&test_options()).await;
    let platform = PlatformId::from_trusted("plat_x".to_owned());
    let filter = |is_root: Option<bool>, status: Option<&str>| EntityFilter {
        is_root,
        verification_status: status.map(|s| s.parse().expect("a status")),
        ..EntityFilter::default()
    };
    let business = |filter: EntityFilter| EntityFilter {
        entity_type: Some(EntityType::Business),
        ..filter
    };
    let root = "USING INDEX entities_one_root (platform_id=?)";
    let not_verified = "entities_not_verified (platform_id=? AND verification_status=?";
    let by_type = "entities_by_type (platform_id=? AND type=?";
    let cases = [
        (filter(Some(true), None), root),
        (filter(None, Some("MANUAL_REVIEW")), not_verified),
        (filter(Some(false), Some("DENIED")), not_verified),
        (filter(Some(true), Some("MANUAL_REVIEW")), root),
        (filter(Some(false), None), "entities_list"),
        (filter(None, Some("VERIFIED")), "entities_list"),
        (business(filter(None, None)), by_type),
        (business(filter(Some(false), Some("VERIFIED"))), by_type),
        (business(filter(None, Some("MANUAL_REVIEW"))), not_verified),
        (business(filter(Some(true), None)), root),
    ];
    for (filter, index) in cases {
        let keyset = list_keyset(&platform, &filter);
        assert_newest_first_through(&ctx.db, keyset, "enti_c", index, &filter).await;
    }
}

/// SQLite: another connection (think: another process) holds the write lock longer than the
/// busy timeout; the transaction fails with SQLITE_BUSY, is retried with back-off, and succeeds.
/// With a single attempt allowed, the same situation fails: the retry is what made it work.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_transactions_retry_when_the_database_is_busy() {
    for (max_attempts, should_succeed) in [(1, false), (60, true)] {
        let options = StoreOptions {
            sqlite_busy_timeout: Duration::from_millis(20),
            retry: RetryPolicy {
                max_attempts,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(40),
            },
            ..StoreOptions::default()
        };
        let (ctx, guard) = sqlite_db(&options).await;
        let file = ctx
            .url
            .trim_start_matches("sqlite://")
            .trim_end_matches("?mode=rwc");
        let blocker = rusqlite::Connection::open(file).expect("blocker");
        blocker
            .execute_batch("BEGIN IMMEDIATE")
            .expect("take write lock");
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            blocker.execute_batch("COMMIT").expect("release");
            drop(blocker);
        });
        let result = platforms::create_platform(&ctx.db, &SystemClock, &bank(), "Busy").await;
        if should_succeed {
            result.expect("succeeds after retrying");
            assert_eq!(count(&ctx, "SELECT COUNT(*) AS n FROM platforms").await, 1);
        } else {
            let err = result.expect_err("no retry, busy");
            assert!(
                matches!(&err, PlatformError::Store(e) if bankd::store::Retryable::is_retryable(e)),
                "{err:?}"
            );
        }
        release.await.expect("release task");
        ctx.db.close().await;
        drop(guard);
    }
}

/// PostgreSQL: a REPEATABLE READ transaction whose row is updated by someone else fails with
/// SQLSTATE 40001; the whole transaction is run again and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_transactions_retry_on_serialization_failure() {
    run_on(
        Backend::Postgres,
        "postgres_transactions_retry_on_serialization_failure",
        test_options(),
        |ctx| async move {
            use sqlx::Connection;
            let created = new_platform(&ctx, "Original").await;
            let pid = &created.platform.id;
            let outsider = tokio::sync::Mutex::new(
                sqlx::PgConnection::connect(&ctx.url)
                    .await
                    .expect("outsider"),
            );
            let outsider = &outsider;
            let attempts = AtomicUsize::new(0);
            let attempts_ref = &attempts;
            ctx.db
                .write(|tx| {
                    Box::pin(async move {
                        let attempt = attempts_ref.fetch_add(1, Ordering::SeqCst) + 1;
                        if attempt == 1 {
                            tx.execute(Sql::new("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
                                .await?;
                            tx.fetch_one(
                                Sql::new("SELECT name FROM platforms WHERE platform_id = ?")
                                    .bind(pid.as_str()),
                            )
                            .await?;
                            let mut conn = outsider.lock().await;
                            sqlx::query(
                                "UPDATE platforms SET name = 'Outsider' WHERE platform_id = $1",
                            )
                            .bind(pid.as_str())
                            .execute(&mut *conn)
                            .await?;
                        }
                        tx.execute(
                            Sql::new("UPDATE platforms SET name = 'Mine' WHERE platform_id = ?")
                                .bind(pid.as_str()),
                        )
                        .await?;
                        Ok::<_, StoreError>(())
                    })
                })
                .await
                .expect("succeeds on the second attempt");
            assert_eq!(attempts.load(Ordering::SeqCst), 2);
            let stored = Services::new(ctx.db.clone(), Arc::new(SystemClock), bank())
                .platforms()
                .get_platform(pid)
                .await
                .expect("get");
            assert_eq!(stored.name, "Mine");
        },
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

fn bankd(database_url: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_bankd"))
        .arg("--database-url")
        .arg(database_url)
        .args(args)
        .env_remove("BANKD_CONFIG")
        .env_remove("BANKD_DATABASE_URL")
        .env("BANKD_LOG", "warn")
        .output()
        .expect("run bankd")
}

fn single_json_line(output: &std::process::Output) -> serde_json::Map<String, serde_json::Value> {
    assert!(
        output.status.success(),
        "bankd failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout.clone()).expect("utf-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line on stdout: {stdout:?}");
    match serde_json::from_str(lines[0]).expect("JSON") {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn check_cli(database_url: &str) {
    let created = single_json_line(&bankd(
        database_url,
        &["platform", "create", "--name", "Cli Co"],
    ));
    assert_eq!(
        created.keys().collect::<Vec<_>>(),
        ["platform_id", "api_key"]
    );
    let platform_id = created["platform_id"].as_str().expect("string");
    let api_key = created["api_key"].as_str().expect("string");
    assert!(PlatformId::parse(platform_id).is_some(), "{platform_id}");
    assert!(auth::ApiKey::parse(api_key).is_some_and(|k| k.mode() == KeyMode::Test));

    let live = single_json_line(&bankd(
        database_url,
        &[
            "api-key",
            "create",
            "--platform",
            platform_id,
            "--mode",
            "live",
        ],
    ));
    assert_eq!(live.keys().collect::<Vec<_>>(), ["api_key"]);
    let live_key = live["api_key"].as_str().expect("string").to_owned();
    assert!(live_key.starts_with("live_"));

    let db = Db::connect(database_url, &StoreOptions::default())
        .await
        .expect("connect");
    let principal = auth::authenticate(&db, api_key)
        .await
        .expect("auth")
        .expect("valid");
    assert_eq!(principal.platform_id.as_str(), platform_id);
    assert!(
        auth::authenticate(&db, &live_key)
            .await
            .expect("auth")
            .is_some()
    );

    let revoked = bankd(database_url, &["api-key", "revoke", "--key", &live_key]);
    assert!(
        revoked.status.success(),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    assert!(revoked.stdout.is_empty());
    assert!(
        auth::authenticate(&db, &live_key)
            .await
            .expect("auth")
            .is_none()
    );
    // Logs never show keys.
    assert!(!String::from_utf8_lossy(&revoked.stderr).contains(&live_key[5..]));

    let unknown = bankd(
        database_url,
        &[
            "api-key",
            "create",
            "--platform",
            "plat_nope",
            "--mode",
            "test",
        ],
    );
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("platform not found"));
    assert!(bankd(database_url, &["migrate"]).status.success());

    // The ledger audit: balanced books pass; a balance changed behind the ledger's back is
    // named, and the command fails.
    let audit = single_json_line(&bankd(
        database_url,
        &["ledger", "check", "--platform", platform_id],
    ));
    assert_eq!(audit["balance_total"], 0, "{audit:?}");
    assert_eq!(audit["discrepancies"], serde_json::json!([]), "{audit:?}");
    let reserve: String = db
        .write(|tx| {
            Box::pin(async move {
                let row = tx
                    .fetch_one(
                        Sql::new(
                            "SELECT id FROM bank_accounts WHERE platform_id = ? \
                             AND type = 'PROGRAM_RESERVE'",
                        )
                        .bind(platform_id),
                    )
                    .await?;
                let id: String = row.get("id")?;
                tx.execute(
                    Sql::new(
                        "UPDATE bank_accounts SET available_amount = available_amount + 7 \
                         WHERE platform_id = ? AND id = ?",
                    )
                    .bind(platform_id)
                    .bind(id.as_str()),
                )
                .await?;
                Ok::<_, StoreError>(id)
            })
        })
        .await
        .expect("tamper");
    let tampered = bankd(
        database_url,
        &["ledger", "check", "--platform", platform_id],
    );
    assert!(
        !tampered.status.success(),
        "a tampered ledger passed the check"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&tampered.stdout).expect("a JSON report");
    assert_eq!(report["balance_total"], 7, "{report}");
    assert_eq!(
        report["discrepancies"],
        serde_json::json!([{
            "bank_account_id": reserve,
            "balance": "available",
            "stored": 7,
            "posted": 0,
        }]),
        "{report}"
    );
    assert!(String::from_utf8_lossy(&tampered.stderr).contains("do not balance"));
    let nobody = bankd(
        database_url,
        &["ledger", "check", "--platform", "plat_nope"],
    );
    assert!(!nobody.status.success());
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("platform not found"));
    db.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_platform_create_prints_one_json_line_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A directory that does not exist yet, as `./data` on a fresh machine.
    let url = format!(
        "sqlite://{}/data/nested/bankd.db?mode=rwc",
        dir.path().display()
    );
    check_cli(&url).await;
    assert!(dir.path().join("data/nested/bankd.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_platform_create_prints_one_json_line_on_postgres() {
    run_on(
        Backend::Postgres,
        "cli_platform_create_prints_one_json_line_on_postgres",
        test_options(),
        |ctx| async move {
            check_cli(&ctx.url).await;
        },
    )
    .await;
}

#[test]
fn cli_help_documents_the_configuration() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_bankd"))
        .arg("--help")
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "--database-url",
        "--config",
        "serve",
        "platform",
        "api-key",
        "migrate",
        "BANKD_ROUTING_NUMBER",
        "BANKD_LISTEN",
        "max_document_bytes",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
}

#[test]
fn postgres_urls_get_the_test_database_name() {
    assert_eq!(
        with_database("postgres://u@h:5432/postgres", "t1"),
        "postgres://u@h:5432/t1"
    );
    assert_eq!(
        with_database("postgres://u:p@h/db?sslmode=disable", "t1"),
        "postgres://u:p@h/t1?sslmode=disable"
    );
    assert_eq!(with_database("postgres://u@h", "t1"), "postgres://u@h/t1");
}

/// `serve` on a fresh database: migrates, prints the sandbox platform's key once, answers
/// `/healthz`, and exits cleanly on SIGTERM; a second start on the same database prints nothing.
#[cfg(unix)]
#[test]
fn serve_prints_the_sandbox_key_once_and_stops_on_sigterm() {
    use std::io::{BufRead, BufReader, Read, Write};

    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/data/bankd.db?mode=rwc", dir.path().display());
    let start = |url: &str| {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_bankd"))
            .args([
                "--database-url",
                url,
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env_remove("BANKD_CONFIG")
            .env("BANKD_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn serve");
        (child, port)
    };
    let healthz = |port: u16| -> Option<String> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        Some(response)
    };
    let wait_healthy = |port: u16| {
        for _ in 0..200 {
            if let Some(response) = healthz(port) {
                return response;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("serve never answered on port {port}");
    };
    let terminate = |child: &mut std::process::Child| {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = child.wait().expect("wait");
        assert!(exit.success(), "graceful shutdown exits 0: {exit:?}");
    };

    let (mut first, port) = start(&url);
    let response = wait_healthy(port);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with(r#"{"status":"ok"}"#), "{response}");
    let mut stdout = BufReader::new(first.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read line");
    let printed: serde_json::Value = serde_json::from_str(&line).expect("JSON line");
    assert!(
        printed["api_key"]
            .as_str()
            .is_some_and(|k| k.starts_with("test_")),
        "{line}"
    );
    assert!(
        printed["platform_id"]
            .as_str()
            .is_some_and(|p| PlatformId::parse(p).is_some())
    );
    terminate(&mut first);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read rest");
    assert_eq!(rest, "", "the key is printed once");

    // Second start: the database has a platform, so nothing is printed.
    let (mut second, port) = start(&url);
    wait_healthy(port);
    terminate(&mut second);
    let mut out = String::new();
    second
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    assert_eq!(out, "");
}

/// A PostgreSQL test database whose table `probe` fails the first `failures` commits that
/// inserted into it with SQLSTATE 40001, from a deferred constraint trigger: the failure
/// surfaces at `COMMIT`, as SERIALIZABLE's own conflicts mostly do. `failures` of `None`
/// fails every commit. The pool has one connection, so a `ROLLBACK` queued on it after an
/// ended transaction would be sent before the next statement.
async fn postgres_failing_commits(test: &str, failures: Option<u32>) -> Option<(Ctx, Guard)> {
    use sqlx::Connection;
    let options = StoreOptions {
        postgres_max_connections: 1,
        retry: RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        },
        ..test_options()
    };
    let (ctx, guard) = postgres_db(test, &options).await?;
    let limit = failures.map_or_else(
        || "TRUE".to_owned(),
        |n| format!("nextval('probe_failures') <= {n}"),
    );
    let mut conn = sqlx::PgConnection::connect(&ctx.url)
        .await
        .expect("connect");
    for statement in [
        "CREATE TABLE probe (id INT PRIMARY KEY)".to_owned(),
        "CREATE SEQUENCE probe_failures".to_owned(),
        format!(
            "CREATE FUNCTION probe_conflict() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF {limit} THEN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END IF; \
             RETURN NULL; END $$"
        ),
        "CREATE CONSTRAINT TRIGGER probe_conflict AFTER INSERT ON probe \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION probe_conflict()"
            .to_owned(),
    ] {
        sqlx::query(&statement)
            .execute(&mut conn)
            .await
            .expect("set up probe");
    }
    conn.close().await.expect("close");
    Some((ctx, guard))
}

async fn insert_probe(db: &Db) -> Result<(), StoreError> {
    db.write(|tx| {
        Box::pin(async move {
            tx.execute(Sql::new("INSERT INTO probe (id) VALUES (1)"))
                .await?;
            Ok::<_, StoreError>(())
        })
    })
    .await
}

/// Everything the test's tracing subscriber was given, as text.
#[derive(Clone, Default)]
struct LogSink(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogSink {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log lock")).into_owned()
    }
}

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogSink {
    type Writer = LogSink;
    fn make_writer(&'a self) -> LogSink {
        self.clone()
    }
}

/// A conflict at `COMMIT` runs the whole transaction again, and, the transaction being over
/// once its `COMMIT` was answered, no `ROLLBACK` follows (PostgreSQL would warn "there is no
/// transaction in progress", which sqlx logs as a notice). Current-thread runtime: every task,
/// the pool's own included, logs to this test's subscriber.
#[tokio::test]
async fn postgres_conflicts_at_commit_are_retried_and_no_rollback_follows_an_ended_transaction() {
    let Some((ctx, _guard)) = postgres_failing_commits(
        "postgres_conflicts_at_commit_are_retried_and_no_rollback_follows_an_ended_transaction",
        Some(2),
    )
    .await
    else {
        return;
    };
    let log = LogSink::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    insert_probe(&ctx.db)
        .await
        .expect("the third attempt commits");
    // The pool's one connection, used again: anything queued on it is sent now.
    assert_eq!(count(&ctx, "SELECT COUNT(*) AS n FROM probe").await, 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        count(&ctx, "SELECT COUNT(*) AS n FROM probe").await,
        1,
        "applied once"
    );

    let counts = ctx.db.retry_counts();
    assert_eq!(
        (counts.serialization, counts.exhausted),
        (2, 0),
        "{counts:?}"
    );
    let text = log.text();
    assert!(
        text.matches("running a transaction again").count() == 2,
        "the subscriber saw the run:\n{text}"
    );
    assert!(
        !text.contains("no transaction in progress"),
        "a ROLLBACK followed an ended transaction:\n{text}"
    );
    ctx.db.close().await;
}

/// When every attempt conflicts, the error stays retryable (the API answers it 503
/// `transaction_conflict`), nothing is applied, and the exhaustion is counted.
#[tokio::test]
async fn postgres_conflicts_that_outlast_every_attempt_stay_retryable_and_apply_nothing() {
    let Some((ctx, _guard)) = postgres_failing_commits(
        "postgres_conflicts_that_outlast_every_attempt_stay_retryable_and_apply_nothing",
        None,
    )
    .await
    else {
        return;
    };
    let err = insert_probe(&ctx.db).await.expect_err("every commit fails");
    assert_eq!(
        bankd::store::Retryable::conflict(&err),
        Some(bankd::store::Conflict::Serialization),
        "{err:?}"
    );
    assert_eq!(count(&ctx, "SELECT COUNT(*) AS n FROM probe").await, 0);
    let counts = ctx.db.retry_counts();
    assert_eq!(
        (counts.serialization, counts.exhausted),
        (4, 1),
        "{counts:?}"
    );
    ctx.db.close().await;
}

/// The isolation level of the transaction `tx`.
fn isolation_level<'t>(
    tx: &'t mut store::Tx<'_>,
) -> store::BoxFuture<'t, Result<String, StoreError>> {
    Box::pin(async move {
        let row = tx
            .fetch_one(Sql::new(
                "SELECT current_setting('transaction_isolation') AS l",
            ))
            .await?;
        row.get::<String>("l")
    })
}

/// `postgres_isolation` is the level of every write transaction; `database` leaves it to the
/// database's default (here the server's, read committed). Row-locked writes run at read
/// committed whatever it says.
#[tokio::test]
async fn postgres_write_transactions_run_at_the_configured_isolation_level() {
    for (isolation, expected) in [
        (PostgresIsolation::Database, "read committed"),
        (PostgresIsolation::ReadCommitted, "read committed"),
        (PostgresIsolation::RepeatableRead, "repeatable read"),
        (PostgresIsolation::Serializable, "serializable"),
    ] {
        let options = StoreOptions {
            postgres_isolation: isolation,
            ..test_options()
        };
        let test = "postgres_write_transactions_run_at_the_configured_isolation_level";
        let Some((ctx, _guard)) = postgres_db(test, &options).await else {
            return;
        };
        let default: String = {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&ctx.url)
                .await
                .expect("connect");
            sqlx::query_scalar("SHOW default_transaction_isolation")
                .fetch_one(&mut conn)
                .await
                .expect("default")
        };
        let level = ctx.db.write(isolation_level).await.expect("write");
        // Under a role or database whose default is not read committed (CI's second pass),
        // `database` follows that default.
        let expected = match isolation {
            PostgresIsolation::Database => default.as_str(),
            _ => expected,
        };
        assert_eq!(level, expected, "{isolation:?}");
        // Writes that rest on row locks alone (the webhook outbox) run at read committed at
        // every configured level.
        let row_locked = ctx
            .db
            .write_row_locked(isolation_level)
            .await
            .expect("row-locked write");
        assert_eq!(row_locked, "read committed", "{isolation:?}");
        ctx.db.close().await;
    }
}
