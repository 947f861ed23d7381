//! Idempotency-Key rows (policy lives in `crate::idempotency`).

use chrono::{DateTime, Utc};

use super::{Sql, StoreError, Tx, dialect};
use crate::model::ids::PlatformId;

/// A stored idempotency record.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyRecord {
    pub request_hash: String,
    /// `in_flight` or `completed`.
    pub state: String,
    pub response_status: Option<i64>,
    pub response_body: Option<Vec<u8>>,
    pub created_at: DateTime<Utc>,
}

pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key: &str,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    let sql = Sql::new(
        "SELECT request_hash, state, CAST(response_status AS BIGINT) AS response_status, \
         response_body, created_at \
         FROM idempotency_keys WHERE platform_id = ? AND key = ?",
    )
    .bind(platform_id.as_str())
    .bind(key);
    let Some(row) = tx.fetch_optional(sql).await? else {
        return Ok(None);
    };
    Ok(Some(IdempotencyRecord {
        request_hash: row.get("request_hash")?,
        state: row.get("state")?,
        // Selected as BIGINT: PostgreSQL's INTEGER is int4, which sqlx will not decode as i64.
        response_status: row.get("response_status")?,
        response_body: row.get("response_body")?,
        created_at: row.get("created_at")?,
    }))
}

pub async fn insert_in_flight(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key: &str,
    request_hash: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "INSERT INTO idempotency_keys (platform_id, key, request_hash, state, created_at) \
         VALUES (?, ?, ?, 'in_flight', ?)",
    )
    .bind(platform_id.as_str())
    .bind(key)
    .bind(request_hash)
    .bind(now);
    tx.execute(sql).await?;
    Ok(())
}

/// What [`claim`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Another transaction holds the key's advisory lock: a duplicate is running elsewhere.
    Busy,
    /// The key had no record; an in-flight one is now inserted.
    Inserted,
    /// The key has a record already (inserted nothing).
    Exists,
}

/// Takes the key's advisory lock without waiting (on PostgreSQL: `lock` is its 64-bit hash) and
/// inserts an in-flight record unless the key has one already. One statement, so that the common
/// case (a new key) costs one round trip: the insert reads the lock's answer and runs only when
/// the lock was taken.
pub async fn claim(
    tx: &mut Tx<'_>,
    lock: i64,
    platform_id: &PlatformId,
    key: &str,
    request_hash: &str,
    now: DateTime<Utc>,
) -> Result<Claim, StoreError> {
    let conflict = dialect::on_conflict_do_nothing("platform_id, key");
    let columns =
        "INSERT INTO idempotency_keys (platform_id, key, request_hash, state, created_at)";
    let Some(try_lock) = dialect::try_advisory_xact_lock(tx.backend()) else {
        let sql = Sql::new(format!(
            "{columns} VALUES (?, ?, ?, 'in_flight', ?){conflict}"
        ))
        .bind(platform_id.as_str())
        .bind(key)
        .bind(request_hash)
        .bind(now);
        return Ok(match tx.execute(sql).await? {
            1 => Claim::Inserted,
            _ => Claim::Exists,
        });
    };
    // The lock's item calls a volatile function, so it runs once, before the insert reads it.
    let sql = Sql::new(format!(
        "WITH advisory AS (SELECT {try_lock} AS locked), \
         inserted AS ({columns} SELECT ?, ?, ?, 'in_flight', ? FROM advisory WHERE locked\
         {conflict} RETURNING 1) \
         SELECT locked, EXISTS (SELECT 1 FROM inserted) AS inserted FROM advisory"
    ))
    .bind(lock)
    .bind(platform_id.as_str())
    .bind(key)
    .bind(request_hash)
    .bind(now);
    let row = tx.fetch_one(sql).await?;
    Ok(
        match (row.get::<bool>("locked")?, row.get::<bool>("inserted")?) {
            (false, _) => Claim::Busy,
            (true, true) => Claim::Inserted,
            (true, false) => Claim::Exists,
        },
    )
}

/// Stores the response of the key this transaction reserved. Deferred (see
/// `Tx::execute_deferred`): on PostgreSQL it goes to the database with the request's own last
/// writes, in one round trip.
pub async fn complete(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key: &str,
    status: i32,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "UPDATE idempotency_keys SET state = 'completed', response_status = ?, response_body = ?, \
         completed_at = ? WHERE platform_id = ? AND key = ? AND state = 'in_flight'",
    )
    .bind(status)
    .bind(body)
    .bind(now)
    .bind(platform_id.as_str())
    .bind(key);
    tx.execute_deferred(sql, 1, "the stored response of a reserved idempotency key")
        .await
}

pub async fn delete(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key: &str,
) -> Result<(), StoreError> {
    let sql = Sql::new("DELETE FROM idempotency_keys WHERE platform_id = ? AND key = ?")
        .bind(platform_id.as_str())
        .bind(key);
    tx.execute(sql).await?;
    Ok(())
}

/// Deletes the `limit` oldest records created before `cutoff`, all platforms (housekeeping);
/// answers how many it deleted. A bounded statement, so that a purge never holds the one
/// writer for long: see `crate::idempotency::purge_expired`.
pub async fn delete_oldest_created_before(
    tx: &mut Tx<'_>,
    cutoff: DateTime<Utc>,
    limit: u32,
) -> Result<u64, StoreError> {
    tx.execute(
        Sql::new(
            "DELETE FROM idempotency_keys WHERE (platform_id, key) IN \
             (SELECT platform_id, key FROM idempotency_keys WHERE created_at < ? \
             ORDER BY created_at LIMIT ?)",
        )
        .bind(cutoff)
        .bind(i64::from(limit)),
    )
    .await
}
