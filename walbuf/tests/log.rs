//! The VFS against SQLite itself: what a commit leaves on disk, what other connections see,
//! and transactions that spill, roll back and restart the log.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

fn open_buffered(path: &Path) -> Connection {
    let name = sqlite_walbuf::register().expect("register");
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = Connection::open_with_flags_and_vfs(path, flags, name).expect("open");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("full");
    // Frames stay in the log, so the tests see what the log file holds.
    conn.pragma_update(None, "wal_autocheckpoint", 0)
        .expect("no autocheckpoint");
    conn
}

/// A new database with the table `t`, opened through the VFS.
fn with_table() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("dir");
    let conn = open_buffered(&dir.path().join("db"));
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        .expect("create");
    (dir, conn)
}

fn count(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .expect("count")
}

/// What a crash right now would leave: the database and its log copied elsewhere (not the
/// shared-memory index, which SQLite rebuilds from the log), opened without this VFS.
fn as_after_a_crash(dir: &Path) -> (tempfile::TempDir, Connection) {
    let copy = tempfile::tempdir().expect("dir");
    std::fs::copy(dir.join("db"), copy.path().join("db")).expect("copy db");
    std::fs::copy(dir.join("db-wal"), copy.path().join("db-wal")).expect("copy log");
    let conn = Connection::open(copy.path().join("db")).expect("open copy");
    (copy, conn)
}

fn insert(conn: &Connection, from: i64, to: i64) {
    let tx = conn.unchecked_transaction().expect("begin");
    for i in from..to {
        tx.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            params![i, vec![(i % 251) as u8; 700]],
        )
        .expect("insert");
    }
    tx.commit().expect("commit");
}

#[test]
fn a_commit_is_in_the_log_file_when_it_returns() {
    let (dir, conn) = with_table();
    for round in 0..5 {
        insert(&conn, round * 300, round * 300 + 300);
        let (_copy_dir, copy) = as_after_a_crash(dir.path());
        assert_eq!(count(&copy), round * 300 + 300, "after commit {round}");
        let other = Connection::open(dir.path().join("db")).expect("another connection");
        assert_eq!(count(&other), round * 300 + 300);
    }
    let log = std::fs::metadata(dir.path().join("db-wal"))
        .expect("log")
        .len();
    assert!(log > 1_000_000, "the commits went to the log ({log} bytes)");
}

#[test]
fn a_transaction_larger_than_the_cache_reads_its_spilled_frames_back() {
    let dir = tempfile::tempdir().expect("dir");
    let conn = open_buffered(&dir.path().join("db"));
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
         PRAGMA cache_size = 20;",
    )
    .expect("create");
    insert(&conn, 0, 1_000);

    // About 4 MB of changes through a 20-page cache: pages spill to the log mid-transaction,
    // are read back, changed again (SQLite then rewrites frames in place), partly undone.
    let tx = conn.unchecked_transaction().expect("begin");
    for i in 1_000..6_000 {
        tx.execute("INSERT INTO t (id, body) VALUES (?1, zeroblob(700))", [i])
            .expect("insert");
    }
    tx.execute("UPDATE t SET body = randomblob(700) WHERE id % 3 = 0", [])
        .expect("update");
    tx.execute_batch("SAVEPOINT s; DELETE FROM t WHERE id >= 3000; ROLLBACK TO s; RELEASE s;")
        .expect("savepoint");
    tx.execute("DELETE FROM t WHERE id >= 5000", [])
        .expect("delete");
    assert_eq!(count(&tx), 5_000);
    tx.commit().expect("commit");

    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("check");
    assert_eq!(check, "ok");
    let (_copy_dir, copy) = as_after_a_crash(dir.path());
    assert_eq!(count(&copy), 5_000);
    let mut rows = copy
        .prepare("SELECT id, body FROM t ORDER BY id")
        .expect("prepare");
    let rows = rows
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))
        .expect("rows")
        .collect::<Result<Vec<_>, _>>()
        .expect("read");
    for (id, body) in rows {
        let inserted = if id < 1_000 {
            vec![(id % 251) as u8; 700]
        } else {
            vec![0; 700]
        };
        // Rows with ids divisible by 3 got random bodies; the others kept what was inserted.
        assert_eq!(body == inserted, id % 3 != 0, "body of row {id}");
    }
}

#[test]
fn the_log_restarts_and_is_truncated_through_the_vfs() {
    let (dir, conn) = with_table();
    insert(&conn, 0, 2_000);
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get(0))
        .expect("restart");
    assert_eq!(busy, 0);
    // The next commit writes a new log header at the start of the file, then frames.
    insert(&conn, 2_000, 2_500);
    assert_eq!(count(&as_after_a_crash(dir.path()).1), 2_500);
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        r.get::<_, i64>(0)
    })
    .expect("truncate");
    assert_eq!(
        std::fs::metadata(dir.path().join("db-wal"))
            .expect("log")
            .len(),
        0
    );
    insert(&conn, 2_500, 2_600);
    assert_eq!(count(&as_after_a_crash(dir.path()).1), 2_600);
    drop(conn);
    let reopened = open_buffered(&dir.path().join("db"));
    assert_eq!(count(&reopened), 2_600);
}

#[test]
fn registering_twice_answers_the_same_name() {
    assert_eq!(sqlite_walbuf::register(), Ok(sqlite_walbuf::NAME));
    assert_eq!(sqlite_walbuf::register(), Ok(sqlite_walbuf::NAME));
}

#[test]
fn a_file_that_cannot_be_opened_is_an_error_not_a_crash() {
    let name = sqlite_walbuf::register().expect("register");
    let missing = Path::new("/nonexistent-dir/for-walbuf/db");
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    assert!(Connection::open_with_flags_and_vfs(missing, flags, name).is_err());
}

#[test]
fn pages_spilled_to_the_log_are_read_back_inside_their_transaction() {
    let (dir, conn) = with_table();
    insert(&conn, 0, 1_000);
    conn.pragma_update(None, "cache_size", 10)
        .expect("small cache");
    // Each round rewrites every row (about 200 pages through a 10-page cache, so most of them
    // leave the cache through the log) and at once reads every row back from wherever it is.
    let tx = conn.unchecked_transaction().expect("begin");
    for round in 1..=6 {
        tx.execute(
            "UPDATE t SET body = CAST(printf('%0700d', id * ?1) AS BLOB)",
            [round],
        )
        .expect("update");
        let wrong: i64 = tx
            .query_row(
                "SELECT count(*) FROM t WHERE body <> CAST(printf('%0700d', id * ?1) AS BLOB)",
                [round],
                |r| r.get(0),
            )
            .expect("read back");
        assert_eq!(wrong, 0, "round {round}");
    }
    tx.commit().expect("commit");
    let (_copy_dir, copy) = as_after_a_crash(dir.path());
    let wrong: i64 = copy
        .query_row(
            "SELECT count(*) FROM t WHERE body <> CAST(printf('%0700d', id * 6) AS BLOB)",
            [],
            |r| r.get(0),
        )
        .expect("after commit");
    assert_eq!(wrong, 0);
}
