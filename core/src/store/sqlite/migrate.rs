//! SQLite's schema migrations: the files of `core/migrations/sqlite/`, embedded in the binary,
//! and the runner that applies them on the writer connection.
//!
//! Design note. bankd used to embed these files with sqlx's `migrate!` and run them with sqlx's
//! migrator, which bookkeeps each applied migration in the table `_sqlx_migrations` with a
//! SHA-384 checksum of its text. SQLite now runs on rusqlite alone, so the files are embedded
//! with `include_str!` ([`FILES`]) and read the way sqlx reads them: the version and the
//! description come from the file name (`<version>_<description>.sql`, underscores of the
//! description read as spaces), the checksum is the SHA-384 of the text as it is, and a file
//! that starts with `-- no-transaction` runs outside a transaction. The table and its rows keep
//! sqlx's format, so databases that sqlx migrated open unchanged, and a migration whose text
//! changed after it ran is refused as sqlx refuses it. The list is written out by hand (no build
//! script); a test fails when it and the directory differ.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use sha2::{Digest, Sha384};
use sqlx::migrate::MigrateError;

use crate::store::StoreError;

/// Each migration file's name and text, oldest first.
macro_rules! files {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../migrations/sqlite/", $name)))),*]
    };
}

const FILES: &[(&str, &str)] = files![
    "20250101000000_initial.sql",
    "20260101000100_bank_accounts.sql",
    "20260101000370_counterparties.sql",
    "20260101000400_ledger.sql",
    "20260101000731_documents_signing_secret.sql",
    "20261123000000_owners_by_account.sql",
    "20261124070000_owners_covering.sql",
    "20261124153339_book_transfers_not_completed.sql",
    "20261124163500_bank_accounts_rare_filters.sql",
    "20261124213000_counterparties_sort_and_account_number.sql",
    "20261124220000_entities_not_verified.sql",
    "20261124234500_documents_filters.sql",
    "20261125000000_entities_by_type.sql",
    "20261126000000_events_and_webhooks.sql",
    "20261127000000_deliveries_by_event.sql",
    "20261127000100_webhook_endpoints_deleted.sql",
    "20261128000000_retention_and_storage_probe.sql",
];

/// One embedded migration, as sqlx would have read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    pub version: i64,
    pub description: String,
    pub sql: &'static str,
    /// SHA-384 of `sql`.
    pub checksum: Vec<u8>,
    /// The file starts with `-- no-transaction`.
    pub no_tx: bool,
}

impl Migration {
    /// Reads `<version>_<description>.sql` and its text.
    fn parse(file_name: &str, sql: &'static str) -> Migration {
        let (version, rest) = file_name
            .split_once('_')
            .expect("a migration file is named <version>_<description>.sql");
        Migration {
            version: version
                .parse()
                .expect("a migration file's name starts with an integer version"),
            description: rest.trim_end_matches(".sql").replace('_', " "),
            sql,
            checksum: Sha384::digest(sql.as_bytes()).to_vec(),
            no_tx: sql.starts_with("-- no-transaction"),
        }
    }
}

/// The embedded migrations, by version.
pub fn migrations() -> &'static [Migration] {
    static MIGRATIONS: LazyLock<Vec<Migration>> = LazyLock::new(|| {
        let mut all: Vec<Migration> = FILES
            .iter()
            .map(|(name, sql)| Migration::parse(name, sql))
            .collect();
        all.sort_by_key(|m| m.version);
        all
    });
    &MIGRATIONS
}

/// sqlx's bookkeeping table, as sqlx's SQLite migrator creates it.
const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
);";

/// Applies the embedded migrations that have not run, bookkept in sqlx's `_sqlx_migrations`
/// table exactly as `sqlx::migrate` does, so databases migrated by either agree. Each migration
/// runs in its own transaction; a changed or unknown applied migration is refused.
pub fn migrate(conn: &Connection, busy_timeout: Duration) -> Result<(), StoreError> {
    // Another process may be migrating the same file: wait for its lock like any reader would.
    conn.busy_timeout(busy_timeout)?;
    let result = migrate_waiting(conn, migrations());
    conn.busy_timeout(Duration::ZERO)?;
    result
}

fn migrate_waiting(conn: &Connection, migrations: &[Migration]) -> Result<(), StoreError> {
    conn.execute_batch(BOOKKEEPING)?;
    let dirty = super::fetch(
        conn,
        "SELECT version FROM _sqlx_migrations WHERE success = false ORDER BY version LIMIT 1",
        &[],
        true,
    )?;
    if let Some(row) = dirty.first() {
        return Err(MigrateError::Dirty(row.get("version")?).into());
    }
    let applied = super::fetch(
        conn,
        "SELECT version, checksum FROM _sqlx_migrations ORDER BY version",
        &[],
        false,
    )?;
    let mut done = std::collections::HashMap::new();
    for row in &applied {
        done.insert(row.get::<i64>("version")?, row.get::<Vec<u8>>("checksum")?);
    }
    if let Some(version) = done
        .keys()
        .find(|v| !migrations.iter().any(|m| m.version == **v))
    {
        return Err(MigrateError::VersionMissing(*version).into());
    }
    for migration in migrations {
        match done.get(&migration.version) {
            Some(checksum) if *checksum == migration.checksum => continue,
            Some(_) => return Err(MigrateError::VersionMismatch(migration.version).into()),
            None => {}
        }
        let started = Instant::now();
        let in_tx = !migration.no_tx;
        if in_tx {
            conn.execute_batch("BEGIN IMMEDIATE")?;
        }
        let applied = conn.execute_batch(migration.sql).and_then(|()| {
            conn.execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
                 execution_time) VALUES (?1, ?2, TRUE, ?3, -1)",
                rusqlite::params![migration.version, migration.description, migration.checksum],
            )
        });
        if let Err(e) = applied {
            if in_tx {
                let _ = conn.execute_batch("ROLLBACK");
            }
            return Err(e.into());
        }
        if in_tx {
            conn.execute_batch("COMMIT")?;
        }
        let elapsed = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
        conn.execute(
            "UPDATE _sqlx_migrations SET execution_time = ?1 WHERE version = ?2",
            rusqlite::params![elapsed, migration.version],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksums that sqlx 0.8's `migrate!` computed for these files, as stored in the
    /// `_sqlx_migrations` rows of every database an earlier bankd migrated (read from
    /// `sqlx::migrate!("./migrations/sqlite")` while bankd still linked it). A migration whose
    /// text changes no longer matches its row: such databases would refuse to open.
    const SQLX_CHECKSUMS: &[(i64, &str, &str)] = &[
        (
            20250101000000,
            "initial",
            "aa3b4db633a2dff1e762f0db3ae431472970cdc13e302e65a7b5118a0a35ff918dd0939c4bc3a43e05ea0e0a27fcf8c9",
        ),
        (
            20260101000100,
            "bank accounts",
            "858ffdb025914d3bc480e5ee1107767e30c0e8513df33914dcb5699bb13efc5fec6e3e2120857d3688cf5d4cb1a05b3d",
        ),
        (
            20260101000370,
            "counterparties",
            "70c6200e5302dc1adbed995b94957e07cb451d11c0a1fd3ba5ccbba9f8fc0f3862788fdfd5570d5fbbe5971540068952",
        ),
        (
            20260101000400,
            "ledger",
            "68654eb3c3abe716a5a7757ce2e018cd99a2c12de51846b28d62cf696a0804f4d629f4618279da3991fccaf3bb07a904",
        ),
        (
            20260101000731,
            "documents signing secret",
            "ed9d52b7154489a558add3b311b230c5aa5274c49911e278a51d9ec0b324a5e6fab45193728aba4a107e34c81ce0c841",
        ),
        (
            20261123000000,
            "owners by account",
            "454d14e057cfa29d7826046f99c9178166bde352ca6dde598f56f967853d3a2919a628ee77eb1f95b5797b9549d7c970",
        ),
        (
            20261124070000,
            "owners covering",
            "50a62de4bd513c89e55ebc43058221f2e7038b2ceea495362b0d17611085012a3b47f94631a215d93f43ae05904f987b",
        ),
        (
            20261124153339,
            "book transfers not completed",
            "5abb966d9646f22a52538bf1ebe7c15462ec0179ebc4ade0c27be19ab682985b25852f07f8995e9cd9deffcec75c05c2",
        ),
        (
            20261124163500,
            "bank accounts rare filters",
            "31a5dba089cc62ba3d9babcf847007f8184ba8e08a706b384334878302c8d2a56d5ef48d06c85ca966788699072fb5d9",
        ),
        (
            20261124213000,
            "counterparties sort and account number",
            "4dcaa50ab6daeff03992cd6e8d4629d4f0498e843d49fb6718efa24b13f95d5b6fe49f6650ac510fe9774b0ad3d19afd",
        ),
        (
            20261124220000,
            "entities not verified",
            "54981cdae3d6d93a0f9f5ccae9c1253d90c73295cadc8d33a0577c95df73ae6e545ac377f6dd40220553020e54cd5308",
        ),
        (
            20261124234500,
            "documents filters",
            "cc939049a277da5e01e0fde590a3f9fcd496d5a5cdaae2f2152598447dce32affe6a21300929991aba68cfefbd5f8e09",
        ),
        (
            20261125000000,
            "entities by type",
            "cbd05550fa8d0df12fdade9c83f6bfebe9a129849b613fe10f6a21e7e38d03bb7c0e7ab1c305ffe61923e76c799acff3",
        ),
        // Migrations added since are not sqlx's to judge; each pins the SHA-384 of its text,
        // the rule sqlx applied to the ones above (`sha384sum FILE`).
        (
            20261126000000,
            "events and webhooks",
            "ad068caa4bf857986db1c1953e6fb04267b6bb1b0c13f64454a31cbf94bc9fc22eba4d0a19ad3038ca0659741903e34d",
        ),
        (
            20261127000000,
            "deliveries by event",
            "6fab0c7daa45c4f9a988247be02ee5b975b4a7871707944a900ed02d40007075f99d2212959995043cc33ff764bd95a8",
        ),
        (
            20261127000100,
            "webhook endpoints deleted",
            "40ddbce4dc55cc8fdcd088297c65b8b5ff1d6c06b729ea228a6f948e14b0898dbead5aa7baa34d90ccf7b4cd3935bddc",
        ),
        (
            20261128000000,
            "retention and storage probe",
            "4f8e7029c214ffea5d141242618050efc84cde6982621de830df806c893bb1382e82c26adb3e02a45e59f820e4578a3e",
        ),
    ];

    #[test]
    fn embedded_migrations_carry_the_versions_descriptions_and_checksums_sqlx_gave_them() {
        let ours: Vec<(i64, String, String)> = migrations()
            .iter()
            .map(|m| (m.version, m.description.clone(), hex::encode(&m.checksum)))
            .collect();
        let sqlx: Vec<(i64, String, String)> = SQLX_CHECKSUMS
            .iter()
            .map(|(v, d, c)| (*v, (*d).to_owned(), (*c).to_owned()))
            .collect();
        assert_eq!(ours, sqlx);
        assert!(migrations().iter().all(|m| !m.no_tx));
    }

    /// A database as sqlx's migrator left it (every bankd before SQLite ran on rusqlite alone):
    /// sqlx's bookkeeping table, the schema, and one row per migration with sqlx's checksum.
    fn migrated_by_sqlx(path: &std::path::Path) {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(BOOKKEEPING).expect("bookkeeping");
        for ((version, description, checksum), (_, sql)) in SQLX_CHECKSUMS.iter().zip(FILES) {
            conn.execute_batch(sql).expect("schema");
            conn.execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
                 execution_time) VALUES (?1, ?2, TRUE, ?3, 1000)",
                rusqlite::params![version, description, hex::decode(checksum).expect("hex")],
            )
            .expect("row");
        }
    }

    /// Databases that an earlier bankd migrated open with nothing left to apply; a migration
    /// whose text changed after it ran is refused, as sqlx refuses it.
    #[tokio::test]
    async fn databases_migrated_by_sqlx_open_and_changed_migrations_are_refused() {
        use crate::store::{Db, Sql, StoreOptions};
        let dir = tempfile::tempdir().expect("tempdir");
        migrated_by_sqlx(&dir.path().join("old.db"));
        let url = format!("sqlite://{}/old.db?mode=rwc", dir.path().display());
        let db = Db::connect(&url, &StoreOptions::default())
            .await
            .expect("connect");
        db.migrate().await.expect("nothing left to apply");
        assert_eq!(db.pending_migrations().await.expect("pending"), 0);
        let applied: i64 = db
            .read(|tx| {
                Box::pin(async move {
                    let sql = Sql::new("SELECT COUNT(*) AS n FROM _sqlx_migrations");
                    tx.fetch_one(sql).await?.get::<i64>("n")
                })
            })
            .await
            .expect("count");
        assert_eq!(applied, FILES.len() as i64);
        db.write(|tx| {
            Box::pin(async move {
                let sql =
                    Sql::new("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = ?")
                        .bind(SQLX_CHECKSUMS[0].0);
                tx.execute(sql).await
            })
        })
        .await
        .expect("tamper");
        let err = db.migrate().await.expect_err("a changed migration");
        assert!(
            matches!(err, StoreError::Migrate(MigrateError::VersionMismatch(_))),
            "{err:?}"
        );
        db.close().await;
    }

    #[test]
    fn every_file_of_the_migrations_directory_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("migrations directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
        assert_eq!(embedded, on_disk, "add the new file to `FILES`");
    }

    #[test]
    fn file_names_read_as_sqlx_reads_them() {
        let m = Migration::parse("0042_add_the_thing.sql", "-- no-transaction\nVACUUM;");
        assert_eq!((m.version, m.description.as_str()), (42, "add the thing"));
        assert!(m.no_tx);
        assert_eq!(m.checksum.len(), 48);
    }
}
