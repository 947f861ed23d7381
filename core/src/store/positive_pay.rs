//! ACH positive pay rule rows.

use super::{Row, Sql, StoreError, Tx};
use crate::model::ids::{AchPositivePayRuleId, BankAccountId, PlatformId};
use crate::model::page::{Page, PageRequest, SortOrder};
use crate::model::positive_pay::{AmountCondition, RuleRecord};
use crate::store::keyset::{Keyset, ListError, SortKey};

const COLUMNS: &str =
    "id, bank_account_id, ach_company_id, amount_condition, amount, description, created_at";

fn from_row(row: &Row) -> Result<RuleRecord, StoreError> {
    Ok(RuleRecord {
        id: AchPositivePayRuleId::from_trusted(row.get("id")?),
        bank_account_id: BankAccountId::from_trusted(row.get("bank_account_id")?),
        ach_company_id: row.get("ach_company_id")?,
        amount_condition: {
            let text: String = row.get("amount_condition")?;
            AmountCondition::parse(&text).ok_or_else(|| {
                StoreError::Corrupt(format!("ach_positive_pay_rules.amount_condition: {text}"))
            })?
        },
        amount: row.get("amount")?,
        description: row.get("description")?,
        created_at: row.get("created_at")?,
    })
}

/// Every rule of the bank account (none when the account is another platform's), oldest first.
/// An account has at most one rule per ACH company, so this stays small.
pub async fn list_for_account(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
) -> Result<Vec<RuleRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM ach_positive_pay_rules \
         WHERE platform_id = ? AND bank_account_id = ? ORDER BY created_at, id"
    ))
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str());
    tx.fetch_all_as(sql, from_row).await
}

pub async fn insert(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    rule: &RuleRecord,
) -> Result<(), StoreError> {
    let sql = Sql::new(format!(
        "INSERT INTO ach_positive_pay_rules (platform_id, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    ))
    .bind(platform_id.as_str())
    .bind(rule.id.as_str())
    .bind(rule.bank_account_id.as_str())
    .bind(&rule.ach_company_id)
    .bind(rule.amount_condition.as_str())
    .bind(rule.amount)
    .bind(&rule.description)
    .bind(rule.created_at);
    tx.execute(sql).await?;
    Ok(())
}

/// Whether the bank account already has a rule for `ach_company_id`.
pub async fn exists_for_company(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    ach_company_id: &str,
) -> Result<bool, StoreError> {
    let sql = Sql::new(
        "SELECT id FROM ach_positive_pay_rules \
         WHERE platform_id = ? AND bank_account_id = ? AND ach_company_id = ?",
    )
    .bind(platform_id.as_str())
    .bind(bank_account_id.as_str())
    .bind(ach_company_id);
    Ok(tx.fetch_optional(sql).await?.is_some())
}

/// The rule, unless absent or another platform's.
pub async fn get(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &AchPositivePayRuleId,
) -> Result<Option<RuleRecord>, StoreError> {
    let sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM ach_positive_pay_rules WHERE platform_id = ? AND id = ?"
    ))
    .bind(platform_id.as_str())
    .bind(id.as_str());
    tx.fetch_optional_as(sql, from_row).await
}

/// Deletes the rule; answers whether there was one (of this platform) to delete.
pub async fn delete(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &AchPositivePayRuleId,
) -> Result<bool, StoreError> {
    let sql = Sql::new("DELETE FROM ach_positive_pay_rules WHERE platform_id = ? AND id = ?")
        .bind(platform_id.as_str())
        .bind(id.as_str());
    Ok(tx.execute(sql).await? > 0)
}

/// One page of the bank account's rules, newest first.
pub async fn page(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    request: &PageRequest,
) -> Result<Page<RuleRecord>, ListError> {
    Keyset::new(
        COLUMNS,
        "ach_positive_pay_rules",
        SortKey::CREATED_AT,
        SortOrder::Desc,
    )
    .filter(Sql::new("platform_id = ?").bind(platform_id.as_str()))
    .filter(Sql::new("bank_account_id = ?").bind(bank_account_id.as_str()))
    .fetch(tx, request, from_row)
    .await
}
