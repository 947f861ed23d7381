//! Counterparty rows. Deleted rows keep their data with `deleted_at` set and are invisible to
//! every function here.

use chrono::{DateTime, Utc};

use super::to_json;
use super::{Row, Sql, StoreError, Tx, dialect};
use crate::model::counterparties::{CounterpartyFields, CounterpartyRecord, ListFilter, Sort};
use crate::model::ids::{CounterpartyId, PlatformId};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::store::keyset::{Keyset, ListError, SortKey, SortKind};

const COLUMNS: &str = "id, routing_number, routing_number_type, account_number, account_type, \
    name, description, email, phone, address, legal_id, legal_type, local_bank_code, \
    local_account_number, created_at, updated_at";

fn from_row(row: &Row) -> Result<CounterpartyRecord, StoreError> {
    Ok(CounterpartyRecord {
        id: CounterpartyId::from_trusted(row.get("id")?),
        fields: CounterpartyFields {
            routing_number: row.get("routing_number")?,
            routing_number_type: row.spelled("routing_number_type")?,
            account_number: row.get("account_number")?,
            account_type: row.optional_spelled("account_type")?,
            name: row.get("name")?,
            description: row.get("description")?,
            email: row.get("email")?,
            phone: row.get("phone")?,
            address: row.optional_json("address")?,
            legal_id: row.get("legal_id")?,
            legal_type: row.optional_spelled("legal_type")?,
            local_bank_code: row.get("local_bank_code")?,
            local_account_number: row.get("local_account_number")?,
        },
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub async fn insert(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    c: &CounterpartyRecord,
) -> Result<(), StoreError> {
    let f = &c.fields;
    let address = f.address.as_ref().map(to_json).transpose()?;
    let sql = Sql::new(format!(
        "INSERT INTO counterparties (platform_id, {COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(c.id.as_str())
    .bind(&f.routing_number)
    .bind(f.routing_number_type.as_str())
    .bind(&f.account_number)
    .bind(f.account_type.map(|t| t.as_str()))
    .bind(f.name.clone())
    .bind(f.description.clone())
    .bind(f.email.clone())
    .bind(f.phone.clone())
    .bind(address)
    .bind(f.legal_id.clone())
    .bind(f.legal_type.map(|t| t.as_str()))
    .bind(f.local_bank_code.clone())
    .bind(f.local_account_number.clone())
    .bind(c.created_at)
    .bind(c.updated_at);
    tx.execute(sql).await?;
    Ok(())
}

/// The live counterparty, unless absent, deleted or another platform's.
pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &CounterpartyId,
) -> Result<Option<CounterpartyRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM counterparties \
         WHERE platform_id = ? AND id = ? AND deleted_at IS NULL"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, from_row).await
}

/// Marks the live counterparty deleted at `now`; answers whether there was one to delete.
pub async fn mark_deleted(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &CounterpartyId,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE counterparties SET deleted_at = ?, updated_at = ? \
         WHERE platform_id = ? AND id = ? AND deleted_at IS NULL",
    )
    .bind(now)
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? > 0)
}

/// `description` sorts with absent descriptions as empty text: keyset comparisons need a
/// `NOT NULL` key.
const DESCRIPTION_KEY: SortKey = SortKey {
    column: "COALESCE(description, '')",
    kind: SortKind::Text,
    id_column: "id",
};

/// One page of the platform's live counterparties matching `filter`, in the requested order
/// (`desc` by default).
pub async fn page(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    filter: &ListFilter,
    request: &PageRequest,
) -> Result<Page<CounterpartyRecord>, ListError> {
    list_keyset(platform_id, filter)
        .fetch(tx, request, from_row)
        .await
}

/// The index SQLite reads a page through. Without statistics it walks whichever index gives
/// the requested order and tests each row, even when an exact number names a few rows among a
/// million, and in description order each row tested is a random read of the table. So an
/// exact number reads its own index (the matches are sorted after), and description order
/// walks its index only when nothing else filters: a substring or a creation range in
/// description order scans the list index (the range through it) and sorts what matches, a
/// cost bounded by the platform's size where the walk in description order could cost ten
/// times that (bench/log/, "Fixed so far").
fn sqlite_index(filter: &ListFilter) -> &'static str {
    let filtered = filter.description.is_some()
        || filter.query.is_some()
        || filter.created.set().next().is_some();
    if filter.account_number.is_some() {
        "counterparties_by_account_number"
    } else if filter.routing_number.is_some() {
        "counterparties_pair"
    } else if filter.sort == Sort::Description && !filtered {
        "counterparties_by_description"
    } else {
        "counterparties_list"
    }
}

/// The query of [`page`] (public for the tests of its plans).
pub fn list_keyset(platform_id: &PlatformId, filter: &ListFilter) -> Keyset {
    let key = match filter.sort {
        Sort::CreatedAt => SortKey::CREATED_AT,
        Sort::Description => DESCRIPTION_KEY,
    };
    let order = filter.order.unwrap_or(SortOrder::Desc);
    let mut keyset = Keyset::new(COLUMNS, "counterparties", key, order)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
        .filter(Sql::new("deleted_at IS NULL"))
        .through_index(sqlite_index(filter));
    if let Some(account_number) = &filter.account_number {
        keyset = keyset.filter(Sql::new("account_number = ?").bind(account_number));
    }
    if let Some(routing_number) = &filter.routing_number {
        keyset = keyset.filter(Sql::new("routing_number = ?").bind(routing_number));
    }
    keyset = keyset.created_within(&filter.created);
    if let Some(needle) = &filter.description {
        keyset = keyset.filter(
            Sql::new(dialect::contains_ci("description")).bind(dialect::contains_pattern(needle)),
        );
    }
    if let Some(query) = &filter.query {
        let pattern = dialect::contains_pattern(query);
        let sql = Sql::new(format!(
            "{} OR {} OR id = ? OR account_number = ? OR routing_number = ?",
            dialect::contains_ci("name"),
            dialect::contains_ci("description"),
        ))
        .bind(pattern.clone())
        .bind(pattern)
        .bind(query)
        .bind(query)
        .bind(query);
        keyset = keyset.filter(sql);
    }
    if filter.deduplicate {
        // A filter rather than a GROUP BY, so keyset paging (and the cursor lookup, which runs
        // through the same filters) works unchanged: a row stays only when no newer live row of
        // the platform has the same pair. "Newer" is the list's own (created_at, id) order.
        keyset = keyset.filter(Sql::new(
            "NOT EXISTS (SELECT 1 FROM counterparties AS newer \
             WHERE newer.platform_id = counterparties.platform_id \
             AND newer.routing_number = counterparties.routing_number \
             AND newer.account_number = counterparties.account_number \
             AND newer.deleted_at IS NULL \
             AND (newer.created_at, newer.id) > (counterparties.created_at, counterparties.id))",
        ));
    }
    keyset
}
