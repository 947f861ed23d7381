//! Document rows (metadata and content) and the server-wide link-signing secret.
//!
//! Metadata queries never select `content`: lists and entity records carry many documents, and
//! only the signed download reads the bytes ([`get_content`]).

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx, dialect};
use crate::model::documents::{DocumentFilter, DocumentRecord};
use crate::model::ids::{DocumentId, EntityId, PlatformId};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::store::keyset::{Keyset, ListError, SortKey};

const COLUMNS: &str = "id, platform_id, entity_id, type, tag, description, file_name, \
    content_type, size, checksum, created_at, updated_at";

fn from_row(row: &Row) -> Result<DocumentRecord, StoreError> {
    Ok(DocumentRecord {
        id: DocumentId::from_trusted(row.get("id")?),
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        entity_id: row
            .get::<Option<String>>("entity_id")?
            .map(EntityId::from_trusted),
        document_type: row.spelled("type")?,
        tag: row.get("tag")?,
        description: row.get("description")?,
        file_name: row.get("file_name")?,
        content_type: row.get("content_type")?,
        size: row.get("size")?,
        checksum: row.get("checksum")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

/// Inserts the record with its content (`size` must be the content's length: a CHECK says so).
pub async fn insert(
    tx: &mut Tx<'_>,
    record: &DocumentRecord,
    content: &[u8],
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO documents ({COLUMNS}, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(record.id.as_str())
    .bind(record.platform_id.as_str())
    .bind(record.entity_id.as_ref().map(|id| id.as_str()))
    .bind(record.document_type.as_str())
    .bind(record.tag.clone())
    .bind(record.description.clone())
    .bind(&record.file_name)
    .bind(&record.content_type)
    .bind(record.size)
    .bind(&record.checksum)
    .bind(record.created_at)
    .bind(record.updated_at)
    .bind(content);
    tx.execute(sql).await?;
    Ok(())
}

/// The document's metadata, unless absent or another platform's.
pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &DocumentId,
) -> Result<Option<DocumentRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM documents WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, from_row).await
}

/// The metadata and bytes of a document by id alone. Only for the signed download, whose
/// signature names the document id and so stands in for the platform's credentials.
pub async fn get_content(
    tx: &mut Tx<'_>,
    id: &DocumentId,
) -> Result<Option<(DocumentRecord, Vec<u8>)>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS}, content FROM documents WHERE id = ?"
    ))
    .bind(id.as_str());
    match tx.fetch_optional(sql).await? {
        None => Ok(None),
        Some(row) => Ok(Some((from_row(&row)?, row.get("content")?))),
    }
}

/// The documents attached to any of `entity_ids`, newest first (per entity, the order of the
/// entity record's `documents`).
pub async fn list_for_entities(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    entity_ids: &[&EntityId],
) -> Result<Vec<DocumentRecord>, StoreError> {
    if entity_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM documents WHERE platform_id = ? AND entity_id IN ("
    ))
    .bind(platform_id.as_str());
    for (i, id) in entity_ids.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push_bind(id.as_str());
    }
    sql.push(") ORDER BY created_at DESC, id DESC");
    tx.fetch_all_as(sql, from_row).await
}

/// One page of the platform's documents, newest first.
pub async fn list(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    filter: &DocumentFilter,
    request: &PageRequest,
) -> Result<Page<DocumentRecord>, ListError> {
    list_keyset(platform_id, filter)
        .fetch(tx, request, from_row)
        .await
}

/// The list query of [`list`]. An exact file name, tag or type reads the index that starts
/// with it (`documents_by_file_name`, `documents_by_tag`, `documents_by_type`, all in list
/// order after it): SQLite takes the one with the most equalities, which a test checks.
pub fn list_keyset(platform_id: &PlatformId, filter: &DocumentFilter) -> Keyset {
    let mut keyset = Keyset::new(COLUMNS, "documents", SortKey::CREATED_AT, SortOrder::Desc)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()));
    keyset = keyset.created_within(&filter.created);
    if let Some(d) = &filter.description {
        keyset = keyset.filter(
            Sql::new(dialect::contains_ci("description")).bind(dialect::contains_pattern(d)),
        );
    }
    if let Some(f) = &filter.file_name {
        keyset = keyset.filter(Sql::new("file_name = ?").bind(f));
    }
    if let Some(t) = &filter.tag {
        keyset = keyset.filter(Sql::new("tag = ?").bind(t));
    }
    if let Some(t) = filter.document_type {
        keyset = keyset.filter(Sql::new("type = ?").bind(t.as_str()));
    }
    keyset
}

/// The name of the link-signing secret in `server_secrets`.
const SIGNING_SECRET: &str = "document_url_signing";

/// The link-signing secret, if one was created.
pub async fn signing_secret(tx: &mut Tx<'_>) -> Result<Option<Vec<u8>>, StoreError> {
    let sql = Sql::new("SELECT secret FROM server_secrets WHERE name = ?").bind(SIGNING_SECRET);
    match tx.fetch_optional(sql).await? {
        None => Ok(None),
        Some(row) => Ok(Some(row.get("secret")?)),
    }
}

/// Stores `candidate` as the link-signing secret unless one exists, and answers the stored one.
/// Two processes racing here agree: the loser's insert does nothing and it reads the winner's.
pub async fn ensure_signing_secret(
    tx: &mut Tx<'_>,
    candidate: &[u8],
    now: DateTime<Utc>,
) -> Result<Vec<u8>, StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO server_secrets (name, secret, created_at) VALUES (?, ?, ?){}",
        dialect::on_conflict_do_nothing("name")
    ))
    .bind(SIGNING_SECRET)
    .bind(candidate)
    .bind(now);
    tx.execute(sql).await?;
    signing_secret(tx)
        .await?
        .ok_or_else(|| StoreError::Corrupt("the signing secret vanished after its insert".into()))
}
