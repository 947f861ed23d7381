//! API key rows: only SHA-256 hashes are stored.

use chrono::{DateTime, Utc};

use super::{Sql, StoreError, Tx};
use crate::model::ids::PlatformId;

/// A stored key, without the secret (which is never stored).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeyRecord {
    pub key_hash: String,
    pub platform_id: PlatformId,
    /// `test` or `live`.
    pub mode: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

pub async fn insert(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    key_hash: &str,
    mode: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = Sql::new(
        "INSERT INTO api_keys (key_hash, platform_id, mode, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(key_hash)
    .bind(platform_id.as_str())
    .bind(mode)
    .bind(now);
    tx.execute(sql).await?;
    Ok(())
}

/// The key with this hash, revoked or not.
///
/// The one lookup that does not take a platform id: it is how a request finds its platform.
pub async fn find_by_hash(
    tx: &mut Tx<'_>,
    key_hash: &str,
) -> Result<Option<ApiKeyRecord>, StoreError> {
    let sql = Sql::new(
        "SELECT key_hash, platform_id, mode, created_at, revoked_at FROM api_keys \
         WHERE key_hash = ?",
    )
    .bind(key_hash);
    let Some(row) = tx.fetch_optional(sql).await? else {
        return Ok(None);
    };
    Ok(Some(ApiKeyRecord {
        key_hash: row.get("key_hash")?,
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        mode: row.get("mode")?,
        created_at: row.get("created_at")?,
        revoked_at: row.get("revoked_at")?,
    }))
}

/// Marks the key revoked; answers whether a not-yet-revoked key was changed.
pub async fn revoke(
    tx: &mut Tx<'_>,
    key_hash: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql =
        Sql::new("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ? AND revoked_at IS NULL")
            .bind(now)
            .bind(key_hash);
    Ok(tx.execute(sql).await? == 1)
}

/// Number of keys of a platform that are not revoked.
pub async fn count_active(tx: &mut Tx<'_>, platform_id: &PlatformId) -> Result<i64, StoreError> {
    let sql =
        Sql::new("SELECT COUNT(*) AS n FROM api_keys WHERE platform_id = ? AND revoked_at IS NULL")
            .bind(platform_id.as_str());
    tx.fetch_one(sql).await?.get("n")
}
