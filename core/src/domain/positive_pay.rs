//! ACH positive pay rules: which ACH companies may debit a bank account, and for how much.
//!
//! A rule names one ACH company (the originator's 10-character company id) and an amount
//! condition. Once a bank account has any rule, an incoming ACH debit must match one of them
//! ([`debit_allowed`]); the simulation returns the others with `R29`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::model::ids::{AchPositivePayRuleId, BankAccountId, PlatformId};
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::model::positive_pay::{AmountCondition, RuleRecord};
use crate::store::positive_pay as store;
use crate::store::{StoreError, Tx, bank_accounts};

/// Longest rule description, in characters.
pub const MAX_DESCRIPTION_LEN: usize = 255;
/// Length of an ACH company id.
pub const COMPANY_ID_LEN: usize = 10;

/// Failures of positive pay operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum PositivePayError {
    /// Field path → what is wrong with it; every offending field at once.
    #[error("invalid rule: {0:?}")]
    InvalidFields(BTreeMap<String, String>),
    #[error("bank account not found")]
    BankAccountNotFound,
    #[error("ACH positive pay rule not found")]
    NotFound,
    #[error("the bank account already has a rule for this ACH company id")]
    Duplicate,
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(PositivePayError);

/// A rule as a client asks for it, before any check.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRule {
    pub bank_account_id: String,
    pub ach_company_id: String,
    pub amount_condition: AmountCondition,
    pub amount: Option<i64>,
    pub description: String,
}

/// A [`NewRule`] whose fields are all valid; only [`validate`] makes one.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRule(NewRule);

/// Checks every field of `rule` on its own (no database), collecting all problems.
pub fn validate(rule: NewRule) -> Result<ValidRule, PositivePayError> {
    let mut errors = BTreeMap::new();
    let company = rule.ach_company_id.as_bytes();
    if company.len() != COMPANY_ID_LEN || !company.iter().all(u8::is_ascii_alphanumeric) {
        errors.insert(
            "ach_company_id".to_owned(),
            format!("must be exactly {COMPANY_ID_LEN} letters or digits"),
        );
    }
    match (rule.amount_condition, rule.amount) {
        (AmountCondition::AnyAmount, Some(_)) => {
            errors.insert(
                "amount".to_owned(),
                "must be absent when amount_condition is any_amount".to_owned(),
            );
        }
        (AmountCondition::Equal | AmountCondition::LessThanOrEqualTo, None) => {
            errors.insert(
                "amount".to_owned(),
                format!(
                    "is required when amount_condition is {}",
                    rule.amount_condition.as_str()
                ),
            );
        }
        (_, Some(amount)) if amount < 1 => {
            errors.insert("amount".to_owned(), "must be at least 1".to_owned());
        }
        _ => {}
    }
    let description_len = rule.description.chars().count();
    if !(1..=MAX_DESCRIPTION_LEN).contains(&description_len) {
        errors.insert(
            "description".to_owned(),
            format!("must be 1 to {MAX_DESCRIPTION_LEN} characters long"),
        );
    }
    if errors.is_empty() {
        Ok(ValidRule(rule))
    } else {
        Err(PositivePayError::InvalidFields(errors))
    }
}

super::service! {
    /// ACH positive pay rules: create, read, delete and list, each in its own transaction.
    PositivePay
}

impl PositivePay<'_> {
    /// Creates the rule in its own write transaction: the bank account must be the
    /// platform's, and it may have only one rule per ACH company.
    pub async fn create(
        &self,
        platform_id: &PlatformId,
        rule: &ValidRule,
    ) -> Result<RuleRecord, PositivePayError> {
        let now = self.clock.now();
        self.db
            .write(|tx| Box::pin(create_in(tx, now, platform_id, rule)))
            .await
    }

    /// The platform's rule `id` (a malformed id is simply not found).
    pub async fn get(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<RuleRecord, PositivePayError> {
        let id = AchPositivePayRuleId::parse(id);
        super::get_one(
            self.db,
            platform_id,
            id,
            || PositivePayError::NotFound,
            |tx, p, id| Box::pin(store::get(tx, p, id)),
        )
        .await
    }

    /// Deletes the platform's rule `id`; later reads of it are not found.
    pub async fn delete(&self, platform_id: &PlatformId, id: &str) -> Result<(), PositivePayError> {
        let id = AchPositivePayRuleId::parse(id).ok_or(PositivePayError::NotFound)?;
        let deleted = self
            .db
            .write(|tx| {
                let id = &id;
                Box::pin(async move { store::delete(tx, platform_id, id).await })
            })
            .await?;
        if deleted {
            Ok(())
        } else {
            Err(PositivePayError::NotFound)
        }
    }

    /// One page of the rules of the platform's bank account, newest first.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        bank_account_id: &str,
        request: &PageRequest,
    ) -> Result<Page<RuleRecord>, PositivePayError> {
        let account_id =
            BankAccountId::parse(bank_account_id).ok_or(PositivePayError::BankAccountNotFound)?;
        self.db
            .read(|tx| {
                let account_id = &account_id;
                Box::pin(async move {
                    // The account is checked first: an unknown account is 404 even with a bad cursor.
                    if bank_accounts::get(tx, platform_id, account_id)
                        .await?
                        .is_none()
                    {
                        return Err(PositivePayError::BankAccountNotFound);
                    }
                    Ok(store::page(tx, platform_id, account_id, request).await?)
                })
            })
            .await
    }
}

/// Creates the rule inside the caller's write transaction: the bank account must be the
/// platform's, and it may have only one rule per ACH company.
async fn create_in(
    tx: &mut Tx<'_>,
    now: DateTime<Utc>,
    platform_id: &PlatformId,
    rule: &ValidRule,
) -> Result<RuleRecord, PositivePayError> {
    let rule = &rule.0;
    let account_id =
        BankAccountId::parse(&rule.bank_account_id).ok_or(PositivePayError::BankAccountNotFound)?;
    // Locked so that a concurrent delete of the account cannot interleave (PostgreSQL; SQLite has
    // one writer).
    bank_accounts::get_for_update(tx, platform_id, &account_id)
        .await?
        .ok_or(PositivePayError::BankAccountNotFound)?;
    if store::exists_for_company(tx, platform_id, &account_id, &rule.ach_company_id).await? {
        return Err(PositivePayError::Duplicate);
    }
    let record = RuleRecord {
        id: AchPositivePayRuleId::generate(now),
        bank_account_id: account_id,
        ach_company_id: rule.ach_company_id.clone(),
        amount_condition: rule.amount_condition,
        amount: rule.amount,
        description: rule.description.clone(),
        created_at: now,
    };
    match store::insert(tx, platform_id, &record).await {
        Ok(()) => Ok(record),
        // Two concurrent creates both passed the check above; the UNIQUE constraint decides.
        Err(e) if e.is_unique_violation() => Err(PositivePayError::Duplicate),
        Err(e) => Err(e.into()),
    }
}

/// Whether an incoming ACH debit from `company_id` for `amount` minor units may post: an account
/// without rules accepts every debit; once it has rules, only a debit matching one of them does.
pub fn debit_allowed(rules: &[RuleRecord], company_id: &str, amount: i64) -> bool {
    rules.is_empty()
        || rules
            .iter()
            .any(|rule| rule.ach_company_id == company_id && condition_holds(rule, amount))
}

fn condition_holds(rule: &RuleRecord, amount: i64) -> bool {
    match (rule.amount_condition, rule.amount) {
        (AmountCondition::AnyAmount, _) => true,
        (AmountCondition::Equal, Some(limit)) => amount == limit,
        (AmountCondition::LessThanOrEqualTo, Some(limit)) => amount <= limit,
        // The table's CHECK constraints rule these out; refusing is the safe answer.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(company: &str, condition: &str, amount: Option<i64>) -> RuleRecord {
        let condition = AmountCondition::parse(condition).expect("a known condition");
        let now = Utc::now();
        RuleRecord {
            id: AchPositivePayRuleId::generate(now),
            bank_account_id: BankAccountId::generate(now),
            ach_company_id: company.to_owned(),
            amount_condition: condition,
            amount,
            description: "rule".to_owned(),
            created_at: now,
        }
    }

    #[test]
    fn an_account_without_rules_accepts_every_debit() {
        assert!(debit_allowed(&[], "1234567890", 1_000_000));
    }

    #[test]
    fn a_debit_from_a_company_without_a_rule_is_refused() {
        let rules = [rule("1234567890", "any_amount", None)];
        assert!(!debit_allowed(&rules, "0987654321", 1));
    }

    #[test]
    fn any_amount_accepts_every_amount_of_its_company() {
        let rules = [rule("1234567890", "any_amount", None)];
        assert!(debit_allowed(&rules, "1234567890", 0));
        assert!(debit_allowed(&rules, "1234567890", i64::MAX));
    }

    #[test]
    fn equal_accepts_only_the_exact_amount() {
        let rules = [rule("1234567890", "equal", Some(500))];
        assert!(debit_allowed(&rules, "1234567890", 500));
        assert!(!debit_allowed(&rules, "1234567890", 499));
        assert!(!debit_allowed(&rules, "1234567890", 501));
    }

    #[test]
    fn less_than_or_equal_to_accepts_up_to_the_amount() {
        let rules = [rule("1234567890", "less_than_or_equal_to", Some(500))];
        assert!(debit_allowed(&rules, "1234567890", 1));
        assert!(debit_allowed(&rules, "1234567890", 500));
        assert!(!debit_allowed(&rules, "1234567890", 501));
    }

    #[test]
    fn one_matching_rule_among_several_is_enough() {
        let rules = [
            rule("AAAAAAAAAA", "equal", Some(100)),
            rule("BBBBBBBBBB", "less_than_or_equal_to", Some(50)),
        ];
        assert!(debit_allowed(&rules, "BBBBBBBBBB", 50));
        assert!(!debit_allowed(&rules, "BBBBBBBBBB", 100));
        assert!(debit_allowed(&rules, "AAAAAAAAAA", 100));
    }

    #[test]
    fn company_ids_compare_exactly() {
        let rules = [rule("ABCDEFGHIJ", "any_amount", None)];
        assert!(!debit_allowed(&rules, "abcdefghij", 1));
    }

    #[test]
    fn a_malformed_rule_refuses_rather_than_allows() {
        let rules = [rule("1234567890", "equal", None)];
        assert!(!debit_allowed(&rules, "1234567890", 0));
    }
}

#[cfg(test)]
mod validation_tests {
    use super::*;

    fn new_rule(condition: AmountCondition, amount: Option<i64>) -> NewRule {
        NewRule {
            bank_account_id: "bacc_x".to_owned(),
            ach_company_id: "AB12345678".to_owned(),
            amount_condition: condition,
            amount,
            description: "Utility company".to_owned(),
        }
    }

    fn invalid_fields(rule: NewRule) -> Vec<String> {
        match validate(rule) {
            Err(PositivePayError::InvalidFields(f)) => f.into_keys().collect(),
            other => panic!("expected invalid fields, got {other:?}"),
        }
    }

    #[test]
    fn a_well_formed_rule_is_valid() {
        assert!(validate(new_rule(AmountCondition::Equal, Some(5))).is_ok());
        assert!(validate(new_rule(AmountCondition::LessThanOrEqualTo, Some(1))).is_ok());
        assert!(validate(new_rule(AmountCondition::AnyAmount, None)).is_ok());
    }

    #[test]
    fn amount_is_required_unless_any_amount_where_it_must_be_absent() {
        assert_eq!(
            invalid_fields(new_rule(AmountCondition::Equal, None)),
            ["amount"]
        );
        assert_eq!(
            invalid_fields(new_rule(AmountCondition::LessThanOrEqualTo, None)),
            ["amount"]
        );
        assert_eq!(
            invalid_fields(new_rule(AmountCondition::AnyAmount, Some(5))),
            ["amount"]
        );
        assert_eq!(
            invalid_fields(new_rule(AmountCondition::Equal, Some(0))),
            ["amount"]
        );
    }

    #[test]
    fn every_bad_field_is_reported_at_once() {
        let mut rule = new_rule(AmountCondition::Equal, None);
        rule.ach_company_id = "12345-6789".to_owned();
        rule.description = String::new();
        assert_eq!(
            invalid_fields(rule),
            ["ach_company_id", "amount", "description"]
        );
    }

    #[test]
    fn company_ids_are_exactly_ten_ascii_alphanumerics() {
        for bad in ["123456789", "12345678901", "12345678é", "1234 67890"] {
            let mut rule = new_rule(AmountCondition::AnyAmount, None);
            rule.ach_company_id = bad.to_owned();
            assert_eq!(invalid_fields(rule), ["ach_company_id"], "{bad}");
        }
    }

    #[test]
    fn descriptions_are_1_to_255_characters() {
        let mut rule = new_rule(AmountCondition::AnyAmount, None);
        rule.description = "é".repeat(255);
        assert!(validate(rule.clone()).is_ok());
        rule.description = "é".repeat(256);
        assert_eq!(invalid_fields(rule), ["description"]);
    }
}
