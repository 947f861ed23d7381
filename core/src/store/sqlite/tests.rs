//! The tests of [`super`]: values and rows in sqlx's encoding, the writer's and readers'
//! settings, the checkpointer, and databases on SQLite as [`crate::store::Db`] runs them.

use super::*;
use crate::store::{BoxFuture, Db, Sql, StoreOptions, Tx};

fn memory() -> Connection {
    Settings {
        path: None,
        synchronous: "FULL",
        busy_timeout: Duration::from_secs(1),
        wal_restart_frames: WAL_RESTART_FRAMES,
        reader_mmap_bytes: 0,
        log_buffer: true,
    }
    .open_writer()
    .expect("open")
}

#[test]
fn values_round_trip_in_sqlx_encoding() {
    let conn = memory();
    control(
        &conn,
        "CREATE TABLE t (s TEXT, n INTEGER, b BOOLEAN, t TEXT, d TEXT, x BLOB)",
    )
    .expect("create");
    let time = DateTime::parse_from_rfc3339("2026-11-23T09:43:35.056022Z")
        .expect("time")
        .with_timezone(&Utc);
    let date = NaiveDate::from_ymd_opt(2026, 2, 28).expect("date");
    let changed = execute(
        &conn,
        "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)",
        &[
            Value::Text(Some("a\0b".into())),
            Value::I64(Some(-7)),
            Value::Bool(Some(true)),
            Value::Time(Some(time)),
            Value::Date(Some(date)),
            Value::Bytes(None),
        ],
    )
    .expect("insert");
    assert_eq!(changed, 1);
    let rows = fetch(&conn, "SELECT * FROM t", &[], false).expect("select");
    let row = &rows[0];
    assert_eq!(row.get::<String>("s").expect("s"), "a\0b");
    assert_eq!(row.get::<i64>("n").expect("n"), -7);
    assert!(row.get::<bool>("b").expect("b"));
    assert_eq!(row.get::<DateTime<Utc>>("t").expect("t"), time);
    assert_eq!(row.get::<NaiveDate>("d").expect("d"), date);
    assert_eq!(row.get::<Option<Vec<u8>>>("x").expect("x"), None);
    // The stored text is sqlx's: databases written by sqlx read back, and the other way.
    let raw = fetch(&conn, "SELECT t, d FROM t", &[], true).expect("raw");
    assert_eq!(
        raw[0].get::<String>("t").expect("t"),
        "2026-11-23T09:43:35.056022+00:00"
    );
    assert_eq!(raw[0].get::<String>("d").expect("d"), "2026-02-28");
    // Wrong types and unknown columns are errors, not panics.
    assert!(row.get::<i64>("s").is_err());
    assert!(row.get::<String>("missing").is_err());
}

#[test]
fn columns_are_found_by_name_in_any_order() {
    let conn = memory();
    let rows = fetch(
        &conn,
        "SELECT 1 AS a, 2 AS b, 3 AS n_a, 4 AS ab, 5 AS c",
        &[],
        true,
    )
    .expect("select");
    let row = &rows[0];
    let get = |prefix: &str, name: &str| row.get_prefixed::<i64>(prefix, name).ok();
    // In the statement's order, backwards, skipping, and again after a miss.
    assert_eq!(get("", "a"), Some(1));
    assert_eq!(get("", "b"), Some(2));
    assert_eq!(get("", "c"), Some(5));
    assert_eq!(get("", "ab"), Some(4));
    assert_eq!(get("", "a"), Some(1));
    assert_eq!(get("", "missing"), None);
    assert_eq!(get("", "b"), Some(2));
    // A prefixed name is the whole name, not a name that merely ends the same.
    assert_eq!(get("n_", "a"), Some(3));
    assert_eq!(get("n_", "b"), None);
    assert_eq!(get("a", "b"), Some(4));
    assert_eq!(get("", "n_a"), Some(3));
}

#[test]
fn sqlite_own_timestamps_decode_as_utc() {
    let t = parse_time("2026-11-23 09:43:35").expect("parse");
    assert_eq!(t.to_rfc3339(), "2026-11-23T09:43:35+00:00");
}

#[test]
fn execute_counts_changed_rows_and_reads_count_none() {
    let conn = memory();
    control(&conn, "CREATE TABLE t (n INTEGER)").expect("create");
    let args = [
        Value::I64(Some(1)),
        Value::I64(Some(2)),
        Value::I64(Some(3)),
    ];
    assert_eq!(
        execute(&conn, "INSERT INTO t VALUES (?), (?), (?)", &args).expect("insert"),
        3
    );
    assert_eq!(execute(&conn, "SELECT n FROM t", &[]).expect("select"), 0);
    assert_eq!(
        execute(&conn, "CREATE INDEX t_n ON t (n)", &[]).expect("ddl"),
        0
    );
    assert_eq!(
        execute(
            &conn,
            "UPDATE t SET n = n + 1 WHERE n > ?",
            &[Value::I64(Some(1))]
        )
        .expect("update"),
        2
    );
}

#[test]
fn a_substring_test_stays_prepared_where_like_on_a_column_is_compiled_again() {
    let conn = memory();
    control(&conn, "CREATE TABLE t (s TEXT NOT NULL)").expect("create");
    let contains = format!(
        "SELECT count(*) AS n FROM t WHERE {}",
        crate::store::dialect::contains(crate::store::dialect::Backend::Sqlite, "s")
    );
    let like = "SELECT count(*) AS n FROM t WHERE s LIKE ?";
    for (text, compiled_again) in [(contains.as_str(), false), (like, true)] {
        for needle in [",a,", ",b,", ",a,"] {
            fetch(&conn, text, &[Value::Text(Some(needle.into()))], false).expect("run");
        }
        let stmt = conn.prepare_cached(text).expect("cached");
        let reprepared = stmt.get_status(rusqlite::StatementStatus::RePrepare);
        assert_eq!(reprepared > 0, compiled_again, "{text}: {reprepared}");
    }
}

#[test]
fn constraint_errors_keep_their_extended_codes() {
    let conn = memory();
    control(
        &conn,
        "CREATE TABLE t (n INTEGER PRIMARY KEY, m INTEGER UNIQUE CHECK (m > 0))",
    )
    .expect("create");
    control(&conn, "INSERT INTO t VALUES (1, 1)").expect("insert");
    let code = |sql: &str| match control(&conn, sql) {
        Err(StoreError::Sqlite(e)) => extended_code(&e),
        other => panic!("{other:?}"),
    };
    assert_eq!(code("INSERT INTO t VALUES (2, 1)"), Some(2067));
    assert_eq!(code("INSERT INTO t VALUES (1, 2)"), Some(1555));
    assert_eq!(code("INSERT INTO t VALUES (3, -1)"), Some(275));
}

/// A database file in `dir` with its checkpointer and writer, and a table `t (s TEXT)`.
fn logged_db(
    dir: &tempfile::TempDir,
    synchronous: &'static str,
    wal_restart_frames: i64,
) -> (Settings, PathBuf, Checkpointer, Connection) {
    let path = dir.path().join("log.db");
    let settings = Settings {
        path: Some(path.clone()),
        synchronous,
        busy_timeout: Duration::from_secs(1),
        wal_restart_frames,
        reader_mmap_bytes: 0,
        log_buffer: true,
    };
    let checkpointer = Checkpointer::start(&settings)
        .expect("start")
        .expect("a file");
    let writer = settings.open_writer().expect("writer");
    control(&writer, "CREATE TABLE t (s TEXT)").expect("create");
    (settings, path, checkpointer, writer)
}

/// One transaction of `n` rows of 200 bytes into `t`.
fn commit_rows(writer: &Connection, n: usize) {
    control(writer, "BEGIN IMMEDIATE").expect("begin");
    for _ in 0..n {
        let row = [Value::Text(Some("x".repeat(200)))];
        execute(writer, "INSERT INTO t VALUES (?)", &row).expect("insert");
    }
    control(writer, "COMMIT").expect("commit");
}

#[test]
fn only_full_durability_writes_the_log_through_the_buffer() {
    let settings = |synchronous, log_buffer| Settings {
        path: Some(PathBuf::from("unused.db")),
        synchronous,
        busy_timeout: Duration::from_secs(1),
        wal_restart_frames: WAL_RESTART_FRAMES,
        reader_mmap_bytes: 0,
        log_buffer,
    };
    assert!(settings("FULL", true).buffers_log());
    assert!(!settings("FULL", false).buffers_log());
    // NORMAL publishes a commit's frames without the sync that empties the buffer.
    assert!(!settings("NORMAL", true).buffers_log());
    assert!(!settings("OFF", true).buffers_log());
}

#[test]
fn the_writer_keeps_undo_pages_and_a_large_cache_in_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, _, checkpointer, writer) = logged_db(&dir, "FULL", WAL_RESTART_FRAMES);
    let pragma = |name: &str| -> i64 {
        writer
            .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .expect(name)
    };
    // 2 = MEMORY: savepoint sub-journals never go to a temporary file.
    assert_eq!(pragma("temp_store"), 2);
    assert_eq!(pragma("cache_size"), -WRITER_CACHE_KIB);
    checkpointer.stop();
}

/// `.cargo/config.toml` builds the bundled SQLite without the shared page-cache pool and
/// without allocation statistics, both of which take a process-wide mutex on every page
/// fetch or allocation (bench/log/, "Fixed so far"). A build without that file (or with
/// `LIBSQLITE3_FLAGS` set otherwise) would still work, only slower: this says so.
#[test]
fn the_bundled_sqlite_has_no_process_wide_cache_or_allocation_mutex() {
    let conn = Connection::open_in_memory().expect("open");
    let mut stmt = conn.prepare("PRAGMA compile_options").expect("prepare");
    let options: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(options.iter().any(|o| o == "THREADSAFE=1"), "{options:?}");
    assert!(
        !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
        "{options:?}"
    );
    assert!(
        options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
        "{options:?}"
    );
}

#[test]
fn readers_map_the_file_as_configured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut settings, _, checkpointer, writer) = logged_db(&dir, "FULL", WAL_RESTART_FRAMES);
    commit_rows(&writer, 100);
    settings.reader_mmap_bytes = 1 << 20;
    let mmap_size = |settings: &Settings| -> i64 {
        let reader = settings.open_reader().expect("reader");
        let rows: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("read");
        assert_eq!(rows, 100);
        reader
            .query_row("PRAGMA mmap_size", [], |r| r.get(0))
            .expect("mmap_size")
    };
    assert_eq!(mmap_size(&settings), 1 << 20);
    settings.reader_mmap_bytes = 0;
    assert_eq!(mmap_size(&settings), 0);
    // The writer reads through its own large cache and is not mapped.
    let writer_mmap: i64 = writer
        .query_row("PRAGMA mmap_size", [], |r| r.get(0))
        .expect("mmap_size");
    assert_eq!(writer_mmap, 0);
    checkpointer.stop();
}

#[test]
fn a_log_due_for_a_restart_is_caught_up_first_within_a_bound() {
    let long = RESTART_LAG * 4;
    assert_eq!(after_pass(10, 100, long, 0), AfterPass::Pause);
    assert_eq!(after_pass(100, 100, RESTART_LAG, 0), AfterPass::Restart);
    assert_eq!(after_pass(100, 100, long, 0), AfterPass::CatchUp);
    assert_eq!(
        after_pass(100, 100, long, MAX_CATCH_UP_PASSES - 1),
        AfterPass::CatchUp
    );
    // However slowly the passes shrink, the log is restarted.
    assert_eq!(
        after_pass(100, 100, long, MAX_CATCH_UP_PASSES),
        AfterPass::Restart
    );
}

#[test]
fn the_checkpointer_copies_the_log_into_the_database_after_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, path, checkpointer, writer) = logged_db(&dir, "FULL", WAL_RESTART_FRAMES);
    let commit_rows = |n: usize| commit_rows(&writer, n);
    let file_len = || std::fs::metadata(&path).expect("stat").len();
    // The writer never checkpoints by itself: the rows stay in the log.
    commit_rows(1_000);
    std::thread::sleep(CHECKPOINT_PAUSE * 4);
    assert!(file_len() < 100_000, "{} bytes", file_len());
    // Told about a commit, the checkpointer copies them.
    commit_rows(1_000);
    checkpointer.signal().after_commit(&writer);
    let deadline = Instant::now() + Duration::from_secs(5);
    while file_len() < 400_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(file_len() >= 400_000, "{} bytes", file_len());
    checkpointer.stop();
}

#[test]
fn the_log_is_rewound_under_steady_reads_and_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (settings, path, checkpointer, writer) = logged_db(&dir, "NORMAL", 64);
    // Two readers taking turns, so that one is always inside the log: without a restart,
    // SQLite never finds the moment to rewind it.
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|i| {
            let (settings, stop) = (settings.clone(), stop.clone());
            std::thread::spawn(move || {
                let reader = settings.open_reader().expect("reader");
                std::thread::sleep(Duration::from_millis(i));
                while !stop.load(Ordering::Acquire) {
                    control(&reader, "BEGIN").expect("begin");
                    fetch(&reader, "SELECT count(*) AS n FROM t", &[], false).expect("read");
                    std::thread::sleep(Duration::from_millis(2));
                    control(&reader, "COMMIT").expect("end");
                }
            })
        })
        .collect();
    let signal = checkpointer.signal();
    let wal = path.with_extension("db-wal");
    let mut largest = 0;
    for _ in 0..400 {
        commit_rows(&writer, 20);
        signal.after_commit(&writer);
        largest = largest.max(std::fs::metadata(&wal).expect("stat").len());
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Release);
    for reader in readers {
        reader.join().expect("reader");
    }
    checkpointer.stop();
    // Never rewound, the log reaches about 6.6 MB here (400 commits, each rewriting a few
    // pages); rewound once the checkpointer has seen 64 frames, about 1.2 MB. The bound
    // leaves room for a checkpointer thread that runs late on busy cores: 3.4 MB was seen
    // once with the whole workspace's tests running on two.
    assert!(largest < 4_500_000, "the log reached {largest} bytes");
}

/// A file database with one table `t (n)` holding the row `1`.
async fn counted_db(dir: &tempfile::TempDir, name: &str) -> Db {
    let url = format!("sqlite://{}/{name}.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, &StoreOptions::default())
        .await
        .expect("connect");
    db.write(|tx| {
        Box::pin(async move {
            tx.execute(Sql::new("CREATE TABLE t (n INTEGER NOT NULL)"))
                .await?;
            tx.execute(Sql::new("INSERT INTO t VALUES (1)")).await
        })
    })
    .await
    .expect("setup");
    db
}

fn count_rows<'t>(tx: &'t mut Tx<'_>) -> BoxFuture<'t, Result<i64, StoreError>> {
    Box::pin(async move {
        tx.fetch_one(Sql::new("SELECT COUNT(*) AS n FROM t"))
            .await?
            .get::<i64>("n")
    })
}

async fn count(db: &Db, kept: bool) -> i64 {
    if kept {
        db.read_single_kept(count_rows).await.expect("kept read")
    } else {
        db.read_single(count_rows).await.expect("read")
    }
}

async fn add_row(db: &Db) {
    db.write(|tx| Box::pin(async move { tx.execute(Sql::new("INSERT INTO t VALUES (2)")).await }))
        .await
        .expect("insert");
}

/// Inside `request_snapshot`, the key check's read transaction stays open for the request's
/// next read: a row committed in between (by another process, say) is not seen by it, and
/// the read after that runs on a fresh snapshot again. Outside the scope, every read is its
/// own snapshot.
#[tokio::test]
async fn a_requests_key_check_and_first_read_share_one_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = counted_db(&dir, "snap").await;
    let other = counted_db(&dir, "other").await;
    // Another connection commits between the two reads, from a task outside the request
    // as another process would (a write of this request would give its snapshot back
    // first: see the last block).
    let url = format!("sqlite://{}/snap.db?mode=rwc", dir.path().display());
    let outside = Db::connect(&url, &StoreOptions::default())
        .await
        .expect("connect");
    let elsewhere = outside.clone();
    let seen = request_snapshot(async {
        assert_eq!(count(&db, true).await, 1);
        tokio::spawn(async move { add_row(&elsewhere).await })
            .await
            .expect("task");
        let first = count(&db, false).await;
        let second = count(&db, false).await;
        (first, second)
    })
    .await;
    assert_eq!(
        seen,
        (1, 2),
        "the first read shares the key check's snapshot"
    );

    // Outside a request scope the kept read is a plain one.
    assert_eq!(count(&db, true).await, 2);
    add_row(&outside).await;
    assert_eq!(count(&db, false).await, 3);

    // A write of the request ends its snapshot before waiting for the writer, and a
    // snapshot is never used for another database.
    let seen = request_snapshot(async {
        assert_eq!(count(&db, true).await, 3);
        add_row(&db).await;
        let after_write = count(&db, false).await;
        assert_eq!(count(&db, true).await, 4);
        let elsewhere = count(&other, false).await;
        (after_write, elsewhere)
    })
    .await;
    assert_eq!(seen, (4, 1));
    outside.close().await;
    other.close().await;
    db.close().await;
}

/// `sqlite::memory:` has no readers (each connection would see its own empty database):
/// reads, in a transaction or not, and writes all go to the one connection.
#[tokio::test]
async fn an_in_memory_sqlite_database_reads_what_it_wrote() {
    let db = Db::connect("sqlite::memory:", &StoreOptions::default())
        .await
        .expect("connect");
    db.migrate().await.expect("migrate");
    assert_eq!(db.group_commit_stats(), None);
    db.write(|tx| {
        Box::pin(async move {
            let sql = Sql::new("CREATE TABLE t (n INTEGER)");
            tx.execute(sql).await?;
            tx.execute(Sql::new("INSERT INTO t VALUES (?)").bind(7i64))
                .await
        })
    })
    .await
    .expect("write");
    let in_tx: i64 = db
        .read(|tx| {
            Box::pin(async move { tx.fetch_one(Sql::new("SELECT n FROM t")).await?.get("n") })
        })
        .await
        .expect("read");
    let single: i64 = db
        .read_single(|tx| {
            Box::pin(async move { tx.fetch_one(Sql::new("SELECT n FROM t")).await?.get("n") })
        })
        .await
        .expect("read_single");
    assert_eq!((in_tx, single), (7, 7));
    // A read left no transaction open: the next write goes through.
    db.write(|tx| Box::pin(async move { tx.execute(Sql::new("DELETE FROM t")).await }))
        .await
        .expect("write after reads");
    db.close().await;
    assert!(
        db.begin_read().await.is_err(),
        "a closed database refuses work"
    );
}
