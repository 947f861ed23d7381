//! Group commit on SQLite (`store::writer`): concurrent writes share transactions and fsyncs,
//! yet each one is all-or-nothing, acknowledged only once durable, isolated from its batch
//! mates' failures, and safe to cancel at any await.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bankd::store::{Db, Retryable, SLOW_HOLD, Sql, StoreError};
use rand::Rng;
use tokio::task::JoinSet;

#[macro_use]
mod common;
use common::*;

/// A closure's error: a storage failure or a refusal of its own (a business rule).
#[derive(Debug)]
enum Probe {
    Store(StoreError),
    Refused,
}

impl From<StoreError> for Probe {
    fn from(e: StoreError) -> Self {
        Probe::Store(e)
    }
}

impl Retryable for Probe {
    fn store_error(&self) -> Option<&StoreError> {
        match self {
            Probe::Store(e) => Some(e),
            Probe::Refused => None,
        }
    }
}

async fn probe_db() -> (Ctx, Guard) {
    let (ctx, guard) = sqlite_db(&test_options()).await;
    assert!(
        ctx.db.group_commit_stats().is_some(),
        "a file database group-commits by default"
    );
    ctx.db
        .write(|tx| {
            Box::pin(async move {
                tx.execute(Sql::new(
                    "CREATE TABLE probe (n INTEGER PRIMARY KEY, part INTEGER NOT NULL)",
                ))
                .await
            })
        })
        .await
        .expect("create probe table");
    (ctx, guard)
}

/// Writes rows `n` and `n + 100000` in one transaction, pausing between them so that other
/// writers queue up behind this one.
async fn write_pair(db: &Db, n: i64) -> Result<(), Probe> {
    db.write(|tx| {
        Box::pin(async move {
            insert(tx, n, 0).await?;
            tokio::task::yield_now().await;
            insert(tx, n + 100_000, 1).await?;
            Ok(())
        })
    })
    .await
}

async fn insert(tx: &mut bankd::store::Tx<'_>, n: i64, part: i64) -> Result<u64, StoreError> {
    tx.execute(
        Sql::new("INSERT INTO probe (n, part) VALUES (?, ?)")
            .bind(n)
            .bind(part),
    )
    .await
}

/// Runs `write(db, n)` for every `n` in `0..count`, each in a task of its own, all at once;
/// answers every `n` with its outcome, in the order they finished (a panic in a task fails the
/// test).
async fn concurrently<T, F, Fut>(db: &Db, count: i64, write: F) -> Vec<(i64, T)>
where
    F: Fn(Db, i64) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut tasks = JoinSet::new();
    for n in 0..count {
        let outcome = write(db.clone(), n);
        tasks.spawn(async move { (n, outcome.await) });
    }
    let mut outcomes = Vec::new();
    while let Some(done) = tasks.join_next().await {
        outcomes.push(done.expect("task"));
    }
    outcomes
}

/// The rows now visible to a reader connection (that is: committed).
async fn committed_rows(db: &Db) -> BTreeSet<i64> {
    db.read(|tx| {
        Box::pin(async move {
            let rows = tx.fetch_all(Sql::new("SELECT n FROM probe")).await?;
            rows.iter()
                .map(|r| r.get::<i64>("n"))
                .collect::<Result<BTreeSet<i64>, StoreError>>()
        })
    })
    .await
    .expect("read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_share_commits_and_are_visible_when_acknowledged() {
    let (ctx, _guard) = probe_db().await;
    let before = ctx.db.group_commit_stats().expect("stats");
    concurrently(&ctx.db, 200, |db, n| async move {
        write_pair(&db, n).await.expect("write");
        // Acknowledged means committed: a reader on another connection sees it at once.
        let seen = committed_rows(&db).await;
        assert!(seen.contains(&n) && seen.contains(&(n + 100_000)), "{n}");
    })
    .await;
    let after = ctx.db.group_commit_stats().expect("stats");
    let members = after.members - before.members;
    let commits = after.commits - before.commits;
    assert_eq!(members, 200);
    assert!(
        commits < members,
        "200 concurrent writes took {commits} commits: no grouping"
    );
    assert_eq!(after.aborts, 0);
    // Every commit of a file database writes and syncs the log: its time is counted.
    assert!(
        after.commit_time > before.commit_time && after.open_time > before.open_time,
        "{before:?} -> {after:?}"
    );
    // And the writer's turn at the log after each commit (telling the checkpointer, restarting
    // the log when it is too long).
    assert!(
        after.upkeep_time > before.upkeep_time,
        "{before:?} -> {after:?}"
    );
    assert_eq!(committed_rows(&ctx.db).await.len(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_write_leaves_nothing_and_spares_its_batch_mates() {
    let (ctx, _guard) = probe_db().await;
    let outcomes = concurrently(&ctx.db, 150, |db, n| async move {
        db.write(|tx| {
            Box::pin(async move {
                insert(tx, n, 0).await?;
                tokio::task::yield_now().await;
                match n % 3 {
                    // A business rule refuses after a write.
                    0 => Err(Probe::Refused),
                    // A constraint violation after a write.
                    1 => insert(tx, n, 1).await.map(|_| ()).map_err(Probe::from),
                    _ => Ok(()),
                }
            })
        })
        .await
    })
    .await;
    for (n, result) in outcomes {
        match n % 3 {
            0 => assert!(matches!(result, Err(Probe::Refused)), "{n}: {result:?}"),
            1 => match result {
                Err(Probe::Store(e)) => assert!(e.is_unique_violation(), "{n}: {e:?}"),
                other => panic!("{n}: expected a unique violation, got {other:?}"),
            },
            _ => assert!(result.is_ok(), "{n}: {result:?}"),
        }
    }
    let expected: BTreeSet<i64> = (0..150).filter(|n| n % 3 == 2).collect();
    assert_eq!(committed_rows(&ctx.db).await, expected);
    // Each failure is undone inside its batch: no batch was rolled back.
    let stats = ctx.db.group_commit_stats().expect("stats");
    assert_eq!(stats.aborts, 0, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_refused_before_it_changes_anything_costs_its_batch_nothing() {
    let (ctx, _guard) = probe_db().await;
    let outcomes = concurrently(&ctx.db, 150, |db, n| async move {
        if n % 3 == 0 {
            db.write(|tx| {
                Box::pin(async move {
                    // A read, then a refusal: nothing to undo.
                    tx.fetch_all(Sql::new("SELECT n FROM probe")).await?;
                    tokio::task::yield_now().await;
                    Err(Probe::Refused)
                })
            })
            .await
        } else {
            write_pair(&db, n).await
        }
    })
    .await;
    for (n, result) in outcomes {
        if n % 3 == 0 {
            assert!(matches!(result, Err(Probe::Refused)), "{n}: {result:?}");
        } else {
            assert!(result.is_ok(), "{n}: {result:?}");
        }
    }
    let expected: BTreeSet<i64> = (0..150)
        .filter(|n| n % 3 != 0)
        .flat_map(|n| [n, n + 100_000])
        .collect();
    assert_eq!(committed_rows(&ctx.db).await, expected);
    let stats = ctx.db.group_commit_stats().expect("stats");
    assert_eq!(
        stats.aborts, 0,
        "a refusal without changes aborted a batch: {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_that_breaks_the_shared_transaction_makes_its_batch_run_again() {
    let (ctx, _guard) = probe_db().await;
    let sabotaged = Arc::new(AtomicBool::new(false));
    let outcomes = concurrently(&ctx.db, 60, |db, n| {
        let sabotaged = sabotaged.clone();
        async move {
            if n == 30 {
                // Ends the batch transaction under everyone's feet, once: what SQLite does by
                // itself on an I/O error or a full disk.
                db.write(|tx| {
                    let sabotaged = sabotaged.clone();
                    Box::pin(async move {
                        insert(tx, n, 0).await?;
                        if !sabotaged.swap(true, Ordering::SeqCst) {
                            tx.execute(Sql::new("ROLLBACK")).await?;
                        }
                        Ok::<_, Probe>(())
                    })
                })
                .await
            } else {
                write_pair(&db, n).await
            }
        }
    })
    .await;
    for (n, result) in outcomes {
        result.unwrap_or_else(|e| panic!("{n}: every write lands in the end, not {e:?}"));
    }
    assert!(sabotaged.load(Ordering::SeqCst));
    let stats = ctx.db.group_commit_stats().expect("stats");
    assert!(stats.aborts >= 1, "{stats:?}");
    let mut expected: BTreeSet<i64> = (0..60).chain((0..60).map(|n| n + 100_000)).collect();
    expected.remove(&100_030);
    assert_eq!(committed_rows(&ctx.db).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_writes_are_all_or_nothing_and_never_keep_the_file_locked() {
    let (ctx, _guard) = probe_db().await;
    let outcomes = concurrently(&ctx.db, 300, |db, n| {
        let budget = Duration::from_micros(rand::thread_rng().gen_range(0..3_000));
        async move {
            let done = tokio::time::timeout(budget, write_pair(&db, n)).await;
            matches!(done, Ok(Ok(())))
        }
    })
    .await;
    let acknowledged: BTreeSet<i64> = outcomes
        .into_iter()
        .filter_map(|(n, ok)| ok.then_some(n))
        .collect();
    // The batches of cancelled members are finished by tasks of their own.
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Another connection can take the write lock: no transaction was left open.
    let path = ctx
        .url
        .trim_start_matches("sqlite://")
        .trim_end_matches("?mode=rwc");
    let other = rusqlite::Connection::open(path).expect("second connection");
    other
        .busy_timeout(Duration::from_millis(2000))
        .expect("busy timeout");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock is free");
    other.execute_batch("ROLLBACK").expect("rollback");
    drop(other);

    let rows = committed_rows(&ctx.db).await;
    for n in 0..300 {
        assert_eq!(
            rows.contains(&n),
            rows.contains(&(n + 100_000)),
            "write {n} is half there"
        );
    }
    for n in &acknowledged {
        assert!(rows.contains(n), "acknowledged write {n} is missing");
    }
    // The writer still works.
    write_pair(&ctx.db, 1_000).await.expect("write after");
    assert!(committed_rows(&ctx.db).await.contains(&1_000));
}

#[tokio::test]
async fn one_transaction_per_write_when_group_commit_is_off() {
    let options = bankd::store::StoreOptions {
        sqlite_group_commit: false,
        ..test_options()
    };
    let (ctx, _guard) = sqlite_db(&options).await;
    assert_eq!(ctx.db.group_commit_stats(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_step_that_holds_the_writer_long_is_counted() {
    let (ctx, _guard) = probe_db().await;
    let before = ctx.db.group_commit_stats().expect("stats");
    // A quick write: its statements and its commit each take milliseconds at most.
    write_pair(&ctx.db, 1).await.expect("write");
    let quick = ctx.db.group_commit_stats().expect("stats");
    assert_eq!(quick.slow_holds, before.slow_holds, "{quick:?}");

    ctx.db
        .write(|tx| {
            Box::pin(async move {
                insert(tx, 2, 0).await?;
                tokio::time::sleep(SLOW_HOLD + Duration::from_millis(20)).await;
                Ok::<_, StoreError>(())
            })
        })
        .await
        .expect("slow write");
    let slow = ctx.db.group_commit_stats().expect("stats");
    // The statements (its commit too, should the disk be that slow).
    assert!(slow.slow_holds > quick.slow_holds, "{slow:?}");
}
