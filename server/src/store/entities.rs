//! Entity rows (the columns platform creation and listing need so far).

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx};
use crate::domain::ids::{EntityId, PlatformId};
use crate::pagination::{Keyset, Page, PageRequest, PaginationError, SortKey, SortOrder};

/// A stored entity's core fields.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityRecord {
    pub id: EntityId,
    pub platform_id: PlatformId,
    /// `PERSON` or `BUSINESS`.
    pub entity_type: String,
    pub name: String,
    pub is_root: bool,
    pub requires_screening: bool,
    /// `UNVERIFIED`, `PENDING`, `MANUAL_REVIEW`, `VERIFIED` or `DENIED`.
    pub verification_status: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub business_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, platform_id, type, name, is_root, requires_screening, \
    verification_status, first_name, last_name, business_name, created_at, updated_at";

fn from_row(row: &Row) -> Result<EntityRecord, StoreError> {
    Ok(EntityRecord {
        id: EntityId::from_trusted(row.get("id")?),
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        entity_type: row.get("type")?,
        name: row.get("name")?,
        is_root: row.get("is_root")?,
        requires_screening: row.get("requires_screening")?,
        verification_status: row.get("verification_status")?,
        first_name: row.get("first_name")?,
        last_name: row.get("last_name")?,
        business_name: row.get("business_name")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub async fn insert(tx: &mut Tx<'_>, entity: &EntityRecord) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO entities ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(entity.id.as_str())
    .bind(entity.platform_id.as_str())
    .bind(&entity.entity_type)
    .bind(&entity.name)
    .bind(entity.is_root)
    .bind(entity.requires_screening)
    .bind(&entity.verification_status)
    .bind(entity.first_name.clone())
    .bind(entity.last_name.clone())
    .bind(entity.business_name.clone())
    .bind(entity.created_at)
    .bind(entity.updated_at);
    tx.execute(sql).await?;
    Ok(())
}

/// The entity, unless absent, deleted or another platform's.
pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EntityId,
) -> Result<Option<EntityRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM entities WHERE platform_id = ? AND id = ? AND deleted_at IS NULL"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional(sql)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// The platform's root BUSINESS entity.
pub async fn find_root(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<Option<EntityRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM entities WHERE platform_id = ? AND is_root"
    ))
    .bind(platform_id.as_str());
    tx.fetch_optional(sql)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// One page of the platform's entities by creation time.
pub async fn list(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    order: SortOrder,
    request: &PageRequest,
) -> Result<Page<EntityRecord>, PaginationError> {
    Keyset::new(COLUMNS, "entities", SortKey::CREATED_AT, order)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
        .filter(Sql::new("deleted_at IS NULL"))
        .fetch(tx, request, from_row)
        .await
}
