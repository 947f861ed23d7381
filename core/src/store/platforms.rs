//! Platform rows. The platform's own id is its tenant key (`platforms.platform_id`).

use chrono::{DateTime, Utc};

use super::{Row, Sql, StoreError, Tx};
use crate::model::ids::PlatformId;
use crate::model::platforms::PlatformRecord;

const COLUMNS: &str =
    "platform_id, name, reporting_time_zone, additional_requirements, created_at, updated_at";

fn from_row(row: &Row) -> Result<PlatformRecord, StoreError> {
    Ok(PlatformRecord {
        id: PlatformId::from_trusted(row.get("platform_id")?),
        name: row.get("name")?,
        reporting_time_zone: row.get("reporting_time_zone")?,
        additional_requirements: row.get("additional_requirements")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub async fn insert(tx: &mut Tx<'_>, platform: &PlatformRecord) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO platforms ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform.id.as_str())
    .bind(&platform.name)
    .bind(platform.reporting_time_zone.clone())
    .bind(&platform.additional_requirements)
    .bind(platform.created_at)
    .bind(platform.updated_at);
    tx.execute(sql).await?;
    Ok(())
}

pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<Option<PlatformRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM platforms WHERE platform_id = ?"
    ))
    .bind(platform_id.as_str());
    tx.fetch_optional_as(sql, from_row).await
}

/// Whether any platform exists (the first start of `serve` creates a sandbox one).
pub async fn any_exists(tx: &mut Tx<'_>) -> Result<bool, StoreError> {
    let row = tx
        .fetch_optional(Sql::new("SELECT platform_id FROM platforms LIMIT 1"))
        .await?;
    Ok(row.is_some())
}

/// Updates the settings of `platform_id`; `None` leaves a setting as it is.
pub async fn update_settings(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    reporting_time_zone: Option<&str>,
    additional_requirements: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "UPDATE platforms SET reporting_time_zone = COALESCE(?, reporting_time_zone), \
         additional_requirements = COALESCE(?, additional_requirements), updated_at = ? \
         WHERE platform_id = ?",
    )
    .bind(reporting_time_zone.map(str::to_owned))
    .bind(additional_requirements.map(str::to_owned))
    .bind(now)
    .bind(platform_id.as_str());
    Ok(tx.execute(sql).await? == 1)
}
