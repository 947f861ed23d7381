//! Group commit for SQLite's one writer connection.
//!
//! With `synchronous=FULL` every commit waits for an fsync of the write-ahead log, a couple of
//! milliseconds on this hardware, and one writer connection commits one transaction at a time:
//! one transaction per request caps durable writes near 1 / fsync. Group commit lets the
//! requests that are queued for the writer share one transaction and therefore one fsync.
//!
//! How a write runs ([`GroupWriter::attempt`]):
//! 1. **Work.** Count the request among the *working* ones, then take the writer (a FIFO
//!    mutex). If no batch transaction is open, open one (`BEGIN IMMEDIATE`). Run the request's
//!    closure inside its own `SAVEPOINT`; release the savepoint when the closure succeeds, roll
//!    back to it when the closure fails, so a failed request leaves nothing behind.
//! 2. **Leave.** Still holding the writer, stop counting the request as working. If it was the
//!    last working request (nobody else is queued for the writer or inside it), or the batch is
//!    full ([`MAX_BATCH_MEMBERS`], [`MAX_BATCH_AGE`]), commit the batch: one fsync for all its
//!    members, waited for on a blocking thread so that the async workers go on serving HTTP.
//!    Otherwise give the writer back: a request still working will commit it.
//! 3. **Wait** for the batch to end, and read its outcome.
//!
//! Each request takes the writer once. (An earlier design took it a second time to commit; on a
//! busy two-core machine every hand-over of the writer waits for the next holder's task to be
//! scheduled, and the second round doubled those waits.)
//!
//! No request is answered before its batch is durable: a member returns only after step 3 saw
//! the batch committed, whether its own closure succeeded or failed (a failure may have been
//! decided on the uncommitted work of an earlier member, so it waits too). When the batch could
//! not commit, or a member's savepoint could not be closed (SQLite had rolled the whole
//! transaction back), the batch is rolled back and every member re-runs its closure
//! ([`StoreError::BatchAborted`] is retryable). Isolation is unchanged: members run one after
//! the other on one connection, exactly as they would with one transaction each; readers on
//! other connections see a batch only once it is committed.
//!
//! Cancellation. A request future may be dropped at any await (client gone, timeout). If that
//! happens while it holds the writer, [`Writer::debris`] records what it left open and the next
//! holder undoes it before anything else. If it happens before step 2, a guard spawns step 2,
//! so that the batch is committed even when the request that should have committed it is gone.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::{Mutex, Notify, OwnedMutexGuard};

use super::{BoxFuture, Retryable, StoreError, Tx, sqlite};

/// A batch commits once it has this many members, even while more requests are working: under
/// an open-ended stream of writes, the first members must not wait for ever.
pub const MAX_BATCH_MEMBERS: u32 = 256;
/// A batch commits once it has been open this long, even while more requests are working.
pub const MAX_BATCH_AGE: Duration = Duration::from_millis(20);

/// One step that keeps the writer at least this long is counted and logged as a warning: every
/// write of the process waited behind it. A commit takes a few milliseconds on this machine's
/// disk and a request's statements well under one, so this marks a sick disk, a log restart
/// that had much to copy, or a request (or housekeeping) doing too much in one transaction.
pub const SLOW_HOLD: Duration = Duration::from_millis(100);

/// How a batch transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Committed,
    /// Rolled back: its members run again.
    Aborted,
    /// Its COMMIT could not write: the storage is full. Its members answer so, instead of
    /// running again into the same full disk until their attempts run out.
    Full,
}

/// The outcome of one batch transaction, set once when it ends.
#[derive(Default)]
struct Batch {
    ended_as: OnceLock<Ended>,
    ended: Notify,
}

impl Batch {
    /// Records the outcome and wakes the members waiting for it.
    fn end(&self, outcome: Ended) {
        let _ = self.ended_as.set(outcome);
        self.ended.notify_waiters();
    }

    /// Waits until the batch has ended; answers how.
    async fn outcome(&self) -> Ended {
        loop {
            let notified = self.ended.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so that an `end` between the two is not missed.
            notified.as_mut().enable();
            if let Some(outcome) = self.ended_as.get() {
                return *outcome;
            }
            notified.await;
        }
    }
}

/// What a holder of the writer may leave half-done if its future is dropped at an await; set
/// before each control statement, cleared after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Debris {
    None,
    /// A member's savepoint inside the open batch: roll back to it (or, failing that, abort the
    /// batch).
    Savepoint,
    /// A transaction being opened, aborted, or held alone: roll it back.
    Rollback,
    /// A `COMMIT` of the open batch whose answer was never seen.
    Committing,
}

/// The writer connection and the batch open on it.
pub(super) struct Writer {
    pub(super) conn: Connection,
    /// How long `BEGIN IMMEDIATE` waits for another process's write lock.
    busy_timeout: Duration,
    /// Told after each commit, so that the log is checkpointed off the writer.
    checkpoint: Option<sqlite::CheckpointSignal>,
    open: Option<Arc<Batch>>,
    /// When the open batch began, and how many members have done their work in it.
    opened_at: Instant,
    open_members: u32,
    debris: Debris,
    counters: Arc<Counters>,
}

/// What a transaction on the writer is: one member of a batch, a transaction of its own, or
/// statements outside any transaction (reads of an in-memory database, which has no readers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Member,
    Exclusive,
    Alone,
}

impl Writer {
    fn run(&mut self, statement: &str) -> Result<(), StoreError> {
        sqlite::control(&self.conn, statement)
    }

    /// `BEGIN IMMEDIATE` (or `BEGIN` for a read), waiting for another process's write lock with
    /// async sleeps, up to the busy timeout, instead of blocking a worker thread inside SQLite.
    /// Past the timeout the `SQLITE_BUSY` error is returned, which [`super::Db::write`] retries.
    async fn begin(&mut self, statement: &str) -> Result<(), StoreError> {
        let deadline = Instant::now() + self.busy_timeout;
        let mut pause = Duration::from_micros(500);
        loop {
            match self.run(statement) {
                Err(StoreError::Sqlite(e))
                    if sqlite::is_busy(&e) && Instant::now() + pause < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    /// Undoes what a dropped holder left half-done. The connection runs statements in order,
    /// even those whose caller is gone, so whatever was sent has finished before this runs.
    fn clear_debris(&mut self) {
        match std::mem::replace(&mut self.debris, Debris::None) {
            Debris::None => {}
            Debris::Savepoint => {
                if self.run("ROLLBACK TO member").is_err() || self.run("RELEASE member").is_err() {
                    self.abort();
                }
            }
            Debris::Rollback => self.abort(),
            Debris::Committing => {
                // If the COMMIT went through there is no transaction left to roll back.
                let outcome = if self.run("ROLLBACK").is_err() {
                    Ended::Committed
                } else {
                    Ended::Aborted
                };
                self.end_batch(outcome);
            }
        }
    }

    /// The open batch, opening one if needed.
    async fn batch(&mut self) -> Result<Arc<Batch>, StoreError> {
        if let Some(batch) = &self.open {
            return Ok(batch.clone());
        }
        self.debris = Debris::Rollback;
        self.begin("BEGIN IMMEDIATE").await?;
        self.debris = Debris::None;
        let batch = Arc::new(Batch::default());
        self.open = Some(batch.clone());
        self.opened_at = Instant::now();
        self.open_members = 0;
        Ok(batch)
    }

    /// Whether the open batch should commit even though requests are still working.
    fn batch_is_full(&self) -> bool {
        self.open_members >= MAX_BATCH_MEMBERS || self.opened_at.elapsed() >= MAX_BATCH_AGE
    }

    /// Commits the open batch, if any; answers whether it is durable.
    fn commit(&mut self) -> bool {
        if self.open.is_none() {
            return true;
        }
        self.debris = Debris::Committing;
        let started = Instant::now();
        let result = self.run("COMMIT");
        self.counters
            .add_times(started - self.opened_at, started.elapsed());
        metrics::histogram!(super::metric_names::COMMIT_DURATION)
            .record(started.elapsed().as_secs_f64());
        metrics::histogram!(super::metric_names::BATCH_SIZE).record(f64::from(self.open_members));
        self.counters
            .held("COMMIT (the log written and synced)", started.elapsed());
        let outcome = match result {
            Ok(()) => {
                self.committed();
                Ended::Committed
            }
            Err(e) => {
                let outcome = if e.is_storage_full() {
                    tracing::warn!(error = %e, "group commit failed: storage is full");
                    Ended::Full
                } else {
                    tracing::warn!(error = %e, "group commit failed; its members re-run");
                    Ended::Aborted
                };
                // A failed COMMIT may leave the transaction open; end it.
                let _ = self.run("ROLLBACK");
                outcome
            }
        };
        self.debris = Debris::None;
        self.end_batch(outcome);
        outcome == Ended::Committed
    }

    fn committed(&self) {
        if let Some(signal) = &self.checkpoint {
            let started = Instant::now();
            signal.after_commit(&self.conn);
            let took = started.elapsed();
            // Nanoseconds: without a restart this is a wake-up of the checkpointer, under 1 µs.
            self.counters.upkeep_nanos.fetch_add(
                u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
            self.counters
                .held("the log's upkeep after a commit (restarting it)", took);
        }
    }

    /// Rolls back whatever transaction is open; the open batch's members re-run.
    fn abort(&mut self) {
        self.debris = Debris::Rollback;
        // Fails harmlessly when SQLite already ended the transaction.
        let _ = self.run("ROLLBACK");
        self.debris = Debris::None;
        self.end_batch(Ended::Aborted);
    }

    /// Records how the open batch ended and closes it.
    fn end_batch(&mut self, outcome: Ended) {
        if let Some(batch) = self.open.take() {
            let counter = if outcome == Ended::Committed {
                &self.counters.commits
            } else {
                &self.counters.aborts
            };
            counter.fetch_add(1, Ordering::Relaxed);
            batch.end(outcome);
        }
    }
}

/// Counts of the group-committing writer since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Member transactions whose batch committed.
    pub members: u64,
    /// Batches committed (each one fsync).
    pub commits: u64,
    /// Batches rolled back (their members re-ran).
    pub aborts: u64,
    /// Time from each batch's `BEGIN` to its `COMMIT`: its members' work, and the moments
    /// between them when the writer waited for the next one.
    pub open_time: Duration,
    /// Time spent in `COMMIT` statements of batches (writing the log, its fsync), during which
    /// the writer serves nobody else.
    pub commit_time: Duration,
    /// Time the writer spent on the log after commits (restarting it once it passed its size
    /// limit), also serving nobody else.
    pub upkeep_time: Duration,
    /// Steps that held the writer for [`SLOW_HOLD`] or longer (a write's statements, a
    /// `COMMIT`, the log's upkeep); each one is also logged as a warning.
    pub slow_holds: u64,
}

#[derive(Default)]
struct Counters {
    members: AtomicU64,
    commits: AtomicU64,
    aborts: AtomicU64,
    open_micros: AtomicU64,
    commit_micros: AtomicU64,
    upkeep_nanos: AtomicU64,
    slow_holds: AtomicU64,
}

impl Counters {
    fn add_times(&self, open: Duration, commit: Duration) {
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.open_micros.fetch_add(micros(open), Ordering::Relaxed);
        self.commit_micros
            .fetch_add(micros(commit), Ordering::Relaxed);
    }

    /// Counts and logs `step` if it held the writer for [`SLOW_HOLD`] or longer.
    fn held(&self, step: &'static str, took: Duration) {
        if took >= SLOW_HOLD {
            self.slow_holds.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                step,
                ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                "one step held the SQLite writer long; every write waited for it"
            );
        }
    }
}

/// SQLite's one writer connection with group commit.
#[derive(Clone)]
pub(super) struct GroupWriter {
    writer: Arc<Mutex<Writer>>,
    counters: Arc<Counters>,
    /// Requests in step 1: queued for the writer or holding it for their work.
    working: Arc<AtomicUsize>,
}

impl GroupWriter {
    pub(super) fn new(
        conn: Connection,
        busy_timeout: Duration,
        checkpoint: Option<sqlite::CheckpointSignal>,
    ) -> GroupWriter {
        let counters = Arc::new(Counters::default());
        GroupWriter {
            writer: Arc::new(Mutex::new(Writer {
                conn,
                busy_timeout,
                checkpoint,
                open: None,
                opened_at: Instant::now(),
                open_members: 0,
                debris: Debris::None,
                counters: counters.clone(),
            })),
            counters,
            working: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Writes queued for the writer or working in its open batch.
    pub(super) fn queue_depth(&self) -> usize {
        self.working.load(Ordering::Relaxed)
    }

    pub(super) fn stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            members: self.counters.members.load(Ordering::Relaxed),
            commits: self.counters.commits.load(Ordering::Relaxed),
            aborts: self.counters.aborts.load(Ordering::Relaxed),
            open_time: Duration::from_micros(self.counters.open_micros.load(Ordering::Relaxed)),
            commit_time: Duration::from_micros(self.counters.commit_micros.load(Ordering::Relaxed)),
            upkeep_time: Duration::from_nanos(self.counters.upkeep_nanos.load(Ordering::Relaxed)),
            slow_holds: self.counters.slow_holds.load(Ordering::Relaxed),
        }
    }

    /// Takes the writer, undoing what a dropped holder left.
    async fn take(&self) -> OwnedMutexGuard<Writer> {
        let mut writer = self.writer.clone().lock_owned().await;
        writer.clear_debris();
        writer
    }

    /// One attempt of a write: steps 1 to 3 of the module documentation.
    pub(super) async fn attempt<'s, C, T, E, F>(&self, ctx: &mut C, f: &mut F) -> Result<T, E>
    where
        F: for<'t> FnMut(&'t mut Tx<'s>, &'t mut C) -> BoxFuture<'t, Result<T, E>>,
        E: From<StoreError> + Retryable,
    {
        self.working.fetch_add(1, Ordering::AcqRel);
        // Armed until step 2: whatever await this future is dropped at, a task of its own then
        // cleans up and does step 2 in its place.
        let mut pending = Pending {
            writer: self.clone(),
            armed: true,
        };
        let mut writer = self.take().await;
        let batch = match writer.batch().await {
            Ok(batch) => batch,
            Err(e) => {
                pending.armed = false;
                self.leave(writer);
                return Err(e.into());
            }
        };
        writer.debris = Debris::Savepoint;
        let started = Instant::now();
        if let Err(e) = writer.run("SAVEPOINT member") {
            writer.abort();
            pending.armed = false;
            self.leave(writer);
            return Err(e.into());
        }
        let mut tx = Tx::writer(writer, Role::Member);
        let result = f(&mut tx, ctx).await;
        let Some(mut writer) = tx.into_writer() else {
            unreachable!("a member's transaction is on the writer");
        };
        let closed = match &result {
            Ok(_) => writer.run("RELEASE member"),
            Err(_) => match writer.run("ROLLBACK TO member") {
                Ok(()) => writer.run("RELEASE member"),
                Err(e) => Err(e),
            },
        };
        writer.debris = Debris::None;
        self.counters
            .held("a write's statements", started.elapsed());
        if closed.is_err() {
            // SQLite ended the transaction under us (an I/O error, a full disk): nothing of
            // this batch is kept.
            writer.abort();
        }
        writer.open_members += 1;
        pending.armed = false;
        self.leave(writer);
        match batch.outcome().await {
            Ended::Committed => {
                self.counters.members.fetch_add(1, Ordering::Relaxed);
                result
            }
            // This member's own statements found the storage full: that is its answer (the
            // other members of the aborted batch run again, and may fit).
            Ended::Aborted if result.as_ref().is_err_and(|e| e.is_storage_full()) => result,
            Ended::Aborted => Err(StoreError::BatchAborted.into()),
            Ended::Full => Err(StoreError::StorageFull.into()),
        }
    }

    /// Step 2: the request stops working; the last working one, or the one that fills the
    /// batch, commits it. Synchronous up to the hand-off of the commit, so that no cancellation
    /// can come between the count and the decision.
    fn leave(&self, mut writer: OwnedMutexGuard<Writer>) {
        let last = self.working.fetch_sub(1, Ordering::AcqRel) == 1;
        if writer.open.is_none() || !(last || writer.batch_is_full()) {
            return;
        }
        // The commit's fsync takes milliseconds; a blocking thread waits for it, holding the
        // writer, while the async workers go on serving. The members learn the outcome from
        // the batch, so nobody needs to await this task, and a caller's cancellation cannot
        // stop it.
        let mut commit = move || {
            writer.commit();
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(commit)),
            Err(_) => commit(),
        }
    }

    /// A transaction of its own on the writer (commits any open batch first): for callers that
    /// drive a transaction by hand.
    pub(super) async fn begin_exclusive(&self) -> Result<OwnedMutexGuard<Writer>, StoreError> {
        let mut writer = self.take().await;
        writer.commit();
        writer.debris = Debris::Rollback;
        writer.begin("BEGIN IMMEDIATE").await?;
        Ok(writer)
    }

    /// The writer for statements outside any transaction, or for a read transaction when
    /// `begin` is given (an in-memory database has no readers).
    pub(super) async fn read(
        &self,
        begin: bool,
    ) -> Result<(OwnedMutexGuard<Writer>, Role), StoreError> {
        let mut writer = self.take().await;
        writer.commit();
        if !begin {
            return Ok((writer, Role::Alone));
        }
        writer.debris = Debris::Rollback;
        writer.begin("BEGIN").await?;
        Ok((writer, Role::Exclusive))
    }

    /// Runs the migrations on the writer connection.
    pub(super) async fn migrate(&self) -> Result<(), StoreError> {
        let mut writer = self.take().await;
        writer.commit();
        sqlite::migrate(&writer.conn, writer.busy_timeout)
    }

    /// Commits any open batch and closes the connection's statements.
    pub(super) async fn close(&self) {
        let mut writer = self.take().await;
        writer.commit();
    }
}

/// Ends an exclusive transaction or lets a member go; called by [`Tx::commit`]/[`Tx::rollback`].
pub(super) async fn end(
    mut writer: OwnedMutexGuard<Writer>,
    role: Role,
    commit: bool,
) -> Result<(), StoreError> {
    if role == Role::Alone {
        return Ok(());
    }
    if role == Role::Member {
        // A member's `Tx` is only ever lent to its closure by reference, so it cannot be
        // committed or rolled back by value; should it be, leave the savepoint to the debris
        // clean-up of the next holder.
        return Err(StoreError::Corrupt(
            "a batch member's transaction ends with its batch".into(),
        ));
    }
    // Until the statement answers, `Debris::Rollback` stands: should this future be dropped,
    // the next holder's ROLLBACK undoes an unfinished transaction and fails harmlessly after a
    // finished COMMIT.
    let result = writer.run(if commit { "COMMIT" } else { "ROLLBACK" });
    if result.is_ok() {
        writer.debris = Debris::None;
        if commit {
            writer.committed();
        }
    }
    result
}

/// Armed while a member is in step 1: if its future is dropped there, a spawned task takes the
/// writer (undoing any [`Debris`]) and does the member's step 2, so that neither a half-done
/// statement nor an open batch outlives a cancelled request.
struct Pending {
    writer: GroupWriter,
    armed: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let writer = self.writer.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let held = writer.take().await;
                    writer.leave(held);
                });
            }
            // No runtime left to run a task: stop counting the request, so that the next
            // write's step 2 commits what is open.
            Err(_) => {
                writer.working.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}
