//! Entity rows, associated persons, and an entity's bank-account ownership check.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx, dialect, to_json};
use crate::model::entities::{
    AssociationRecord, EntityDetails, EntityFilter, EntityRecord, EntityRow, RequirementValue,
    VerificationStatus,
};
use crate::model::ids::{EntityId, PlatformId};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::store::keyset::{Keyset, ListError, SortKey, SortKind};

const COLUMNS: &str = "id, platform_id, type, name, is_root, requires_screening, \
    verification_status, first_name, last_name, business_name, created_at, updated_at";

fn from_row(row: &Row) -> Result<EntityRecord, StoreError> {
    Ok(EntityRecord {
        id: EntityId::from_trusted(row.get("id")?),
        platform_id: PlatformId::from_trusted(row.get("platform_id")?),
        entity_type: row.spelled("type")?,
        name: row.get("name")?,
        is_root: row.get("is_root")?,
        requires_screening: row.get("requires_screening")?,
        verification_status: row.spelled("verification_status")?,
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
    ));
    tx.execute(bind_core(sql, entity)).await?;
    Ok(())
}

/// Binds the values of [`COLUMNS`], in their order.
fn bind_core(sql: Sql, c: &EntityRecord) -> Sql {
    sql.bind(c.id.as_str())
        .bind(c.platform_id.as_str())
        .bind(c.entity_type.as_str())
        .bind(&c.name)
        .bind(c.is_root)
        .bind(c.requires_screening)
        .bind(c.verification_status.as_str())
        .bind(c.first_name.clone())
        .bind(c.last_name.clone())
        .bind(c.business_name.clone())
        .bind(c.created_at)
        .bind(c.updated_at)
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
    tx.fetch_optional_as(sql, from_row).await
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
    tx.fetch_optional_as(sql, from_row).await
}

/// One page of the platform's entities by creation time.
pub async fn list(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    order: SortOrder,
    request: &PageRequest,
) -> Result<Page<EntityRecord>, ListError> {
    Keyset::new(COLUMNS, "entities", SortKey::CREATED_AT, order)
        .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
        .filter(Sql::new("deleted_at IS NULL"))
        .fetch(tx, request, from_row)
        .await
}

// ---------------------------------------------------------------------------------------------
// The full record: everything the Entities API reads and writes. `EntityRecord` above stays the
// small core that platform creation and other areas use.
// ---------------------------------------------------------------------------------------------

const DETAIL_COLUMNS: &str = "review_reasons, middle_name, date_of_birth, email, ssn_last_4, \
    ein, industry, legal_type, state_of_incorporation, website, year_of_incorporation, \
    description, countries_of_operation, address, additional_requirements, \
    additional_requirements_updated_at";

fn full_columns() -> String {
    format!("{COLUMNS}, {DETAIL_COLUMNS}")
}

fn full_from_row(row: &Row) -> Result<EntityRow, StoreError> {
    let address = row.optional_json("address")?;
    Ok(EntityRow {
        core: from_row(row)?,
        details: EntityDetails {
            review_reasons: row.json("review_reasons")?,
            middle_name: row.get("middle_name")?,
            date_of_birth: row.get("date_of_birth")?,
            email: row.get("email")?,
            ssn_last_4: row.get("ssn_last_4")?,
            ein: row.get("ein")?,
            industry: row.get("industry")?,
            legal_type: row.get("legal_type")?,
            state_of_incorporation: row.get("state_of_incorporation")?,
            website: row.get("website")?,
            year_of_incorporation: row.get("year_of_incorporation")?,
            description: row.get("description")?,
            countries_of_operation: row.json("countries_of_operation")?,
            address,
            additional_requirements: row.json("additional_requirements")?,
            additional_requirements_updated_at: row.get("additional_requirements_updated_at")?,
        },
    })
}

/// Inserts a new entity with all its fields.
pub async fn insert_full(tx: &mut Tx<'_>, entity: &EntityRow) -> Result<(), StoreError> {
    let (c, d) = (&entity.core, &entity.details);
    let sql = Sql::new(format!(
        "INSERT INTO entities ({}) VALUES ({})",
        full_columns(),
        vec!["?"; 28].join(", ")
    ));
    let sql = bind_details(bind_core(sql, c), d)?;
    tx.execute(sql).await?;
    Ok(())
}

fn bind_details(sql: Sql, d: &EntityDetails) -> Result<Sql, StoreError> {
    let address = d.address.as_ref().map(to_json).transpose()?;
    Ok(sql
        .bind(to_json(&d.review_reasons)?)
        .bind(d.middle_name.clone())
        .bind(d.date_of_birth)
        .bind(d.email.clone())
        .bind(d.ssn_last_4.clone())
        .bind(d.ein.clone())
        .bind(d.industry.clone())
        .bind(d.legal_type.clone())
        .bind(d.state_of_incorporation.clone())
        .bind(d.website.clone())
        .bind(d.year_of_incorporation.clone())
        .bind(d.description.clone())
        .bind(to_json(&d.countries_of_operation)?)
        .bind(address)
        .bind(to_json(&d.additional_requirements)?)
        .bind(d.additional_requirements_updated_at))
}

/// Writes every mutable field of a stored entity (identity, type, root flag and creation time
/// never change). Answers whether the (live) row was found.
pub async fn update_full(tx: &mut Tx<'_>, entity: &EntityRow) -> Result<bool, StoreError> {
    let c = &entity.core;
    let sets: Vec<String> = [
        "name",
        "verification_status",
        "first_name",
        "last_name",
        "business_name",
        "updated_at",
    ]
    .iter()
    .copied()
    .chain(DETAIL_COLUMNS.split(',').map(str::trim))
    .map(|column| format!("{column} = ?"))
    .collect();
    let sql = Sql::new(format!("UPDATE entities SET {} WHERE ", sets.join(", ")))
        .bind(&c.name)
        .bind(c.verification_status.as_str())
        .bind(c.first_name.clone())
        .bind(c.last_name.clone())
        .bind(c.business_name.clone())
        .bind(c.updated_at);
    let mut sql = bind_details(sql, &entity.details)?;
    sql.push("platform_id = ")
        .push_bind(c.platform_id.as_str())
        .push(" AND id = ")
        .push_bind(c.id.as_str())
        .push(" AND deleted_at IS NULL");
    Ok(tx.execute(sql).await? == 1)
}

/// How [`get_full`] locks the row it reads, until the transaction ends (PostgreSQL; SQLite's
/// single writer needs no row locks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// A plain read.
    None,
    /// The row is read to be updated (not its key): other writers of the row wait, inserts of
    /// rows that reference it (documents, owners) do not.
    ForChange,
    /// The row is read to be deleted: also waits for, and holds off, transactions that are
    /// inserting rows referencing it (their foreign-key checks hold `KEY SHARE` locks).
    ForDelete,
}

/// The full entity, unless absent, deleted or another platform's, locked as `lock` says.
pub async fn get_full(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EntityId,
    lock: Lock,
) -> Result<Option<EntityRow>, StoreError> {
    let suffix = match lock {
        Lock::None => "",
        Lock::ForChange => dialect::for_no_key_update(tx.backend()),
        Lock::ForDelete => dialect::for_update(tx.backend()),
    };
    let sql = Sql::new(format!(
        "SELECT {} FROM entities WHERE platform_id = ? AND id = ? AND deleted_at IS NULL{suffix}",
        full_columns()
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, full_from_row).await
}

/// One page of the platform's live entities, newest first, filtered.
pub async fn list_full(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    filter: &EntityFilter,
    request: &PageRequest,
) -> Result<Page<EntityRow>, ListError> {
    list_keyset(platform_id, filter)
        .fetch(tx, request, full_from_row)
        .await
}

/// The query of [`list_full`] (public for the tests of its plans).
pub fn list_keyset(platform_id: &PlatformId, filter: &EntityFilter) -> Keyset {
    let mut keyset = Keyset::new(
        &full_columns(),
        "entities",
        SortKey::CREATED_AT,
        SortOrder::Desc,
    )
    .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
    .filter(Sql::new("deleted_at IS NULL"));
    keyset = keyset.created_within(&filter.created);
    // The root, and the entities not verified, are found through partial indexes that hold
    // only them, whose conditions are stated as written: SQLite matches a partial index's
    // condition by its text, before values are bound. Without them, `is_root=true` or
    // `verification_status=MANUAL_REVIEW` read every entity of the platform. The root's index
    // is on `platform_id` alone, not in list order, so SQLite (without statistics) would still
    // walk the list index: it is named (`INDEXED BY`), also when both filters apply. A type
    // reads `entities_by_type`, which SQLite picks by itself (an equality more than the list
    // index, in the same order); with a status other than VERIFIED, the review queue is named,
    // being the rarer of the two, where SQLite would otherwise take either.
    let verified = VerificationStatus::Verified.as_str();
    match filter.verification_status {
        Some(VerificationStatus::Verified) => {
            keyset = keyset.filter(Sql::new(format!("verification_status = '{verified}'")));
        }
        Some(status) => {
            keyset = keyset
                .filter(
                    Sql::new(format!(
                        "verification_status = ? AND verification_status <> '{verified}'"
                    ))
                    .bind(status.as_str()),
                )
                .through_index("entities_not_verified");
        }
        None => {}
    }
    match filter.is_root {
        Some(true) => {
            keyset = keyset
                .filter(Sql::new("is_root"))
                .through_index("entities_one_root");
        }
        Some(false) => keyset = keyset.filter(Sql::new("NOT is_root")),
        None => {}
    }
    if let Some(name) = &filter.name {
        keyset = keyset
            .filter(Sql::new(dialect::contains_ci("name")).bind(dialect::contains_pattern(name)));
    }
    if let Some(query) = &filter.query {
        keyset = keyset.filter(
            Sql::new(format!("{} OR id = ?", dialect::contains_ci("name")))
                .bind(dialect::contains_pattern(query))
                .bind(query),
        );
    }
    if let Some(t) = filter.entity_type {
        keyset = keyset.filter(Sql::new("type = ?").bind(t.as_str()));
    }
    keyset
}

/// Marks a live entity deleted; answers whether it was live.
pub async fn mark_deleted(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EntityId,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE entities SET deleted_at = ?, updated_at = ? \
         WHERE platform_id = ? AND id = ? AND deleted_at IS NULL",
    )
    .bind(now)
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

/// Whether the entity owns (alone or jointly) any bank account that is not closed.
pub async fn owns_unclosed_bank_accounts(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EntityId,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "SELECT 1 AS found FROM bank_account_owners o \
         JOIN bank_accounts a ON a.platform_id = o.platform_id AND a.id = o.bank_account_id \
         WHERE o.platform_id = ? AND o.entity_id = ? AND a.status <> 'closed' LIMIT 1",
    )
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.fetch_optional(sql).await?.is_some())
}

/// Stores the merged additional requirement values of a live entity.
pub async fn set_additional_requirements(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EntityId,
    values: &BTreeMap<String, RequirementValue>,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE entities SET additional_requirements = ?, additional_requirements_updated_at = ? \
         WHERE platform_id = ? AND id = ? AND deleted_at IS NULL",
    )
    .bind(to_json(values)?)
    .bind(now)
    .bind(platform_id.as_str())
    .bind(id.as_str());
    Ok(tx.execute(sql).await? == 1)
}

// ---------------------------------------------------------------------------------------------
// Associated persons
// ---------------------------------------------------------------------------------------------

/// Whether `person` is already linked to `business`.
pub async fn association_exists(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    business: &EntityId,
    person: &EntityId,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "SELECT 1 AS found FROM associated_persons \
         WHERE platform_id = ? AND business_entity_id = ? AND person_entity_id = ?",
    )
    .bind(platform_id.as_str())
    .bind(business.as_str())
    .bind(person.as_str());
    Ok(tx.fetch_optional(sql).await?.is_some())
}

/// Inserts a link unless it exists; answers whether it was inserted. `ON CONFLICT DO NOTHING`
/// rather than catching the error, because a failed statement aborts the whole transaction on
/// PostgreSQL.
pub async fn insert_association(
    tx: &mut Tx<'_>,
    link: &AssociationRecord,
) -> Result<bool, StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO associated_persons \
         (platform_id, business_entity_id, person_entity_id, roles, title_in_business, created_at) \
         VALUES (?, ?, ?, ?, ?, ?){}",
        dialect::on_conflict_do_nothing("business_entity_id, person_entity_id")
    ))
    .bind(link.platform_id.as_str())
    .bind(link.business_entity_id.as_str())
    .bind(link.person_entity_id.as_str())
    .bind(to_json(&link.roles)?)
    .bind(link.title_in_business.clone())
    .bind(link.created_at);
    Ok(tx.execute(sql).await? == 1)
}

/// The sort key of the associated-persons list: link creation time, person id as tie-breaker
/// (the cursors are person entity ids).
const ASSOCIATION_SORT: SortKey = SortKey {
    column: "ap.created_at",
    kind: SortKind::Time,
    id_column: "ap.person_entity_id",
};

/// One page of the live persons linked to `business`, newest link first, each with its person.
pub async fn list_associations(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    business: &EntityId,
    request: &PageRequest,
) -> Result<Page<(AssociationRecord, EntityRow)>, ListError> {
    let person_columns: Vec<String> = full_columns()
        .split(',')
        .map(|c| format!("e.{}", c.trim()))
        .collect();
    let columns = format!(
        "ap.business_entity_id AS ap_business_entity_id, ap.roles AS ap_roles, \
         ap.title_in_business AS ap_title_in_business, ap.created_at AS ap_created_at, {}",
        person_columns.join(", ")
    );
    let from = "associated_persons ap JOIN entities e \
                ON e.platform_id = ap.platform_id AND e.id = ap.person_entity_id";
    Keyset::new(&columns, from, ASSOCIATION_SORT, SortOrder::Desc)
        .filter(Sql::new("ap.platform_id = ?").bind(platform_id.as_str()))
        .filter(Sql::new("ap.business_entity_id = ?").bind(business.as_str()))
        .filter(Sql::new("e.deleted_at IS NULL"))
        .fetch(tx, request, |row| {
            let person = full_from_row(row)?;
            let link = AssociationRecord {
                platform_id: person.core.platform_id.clone(),
                business_entity_id: EntityId::from_trusted(row.get("ap_business_entity_id")?),
                person_entity_id: person.core.id.clone(),
                roles: row.json("ap_roles")?,
                title_in_business: row.get("ap_title_in_business")?,
                created_at: row.get("ap_created_at")?,
            };
            Ok((link, person))
        })
        .await
}
