//! ACH positive pay rules as the rules and the store share them.

use chrono::{DateTime, Utc};

use crate::model::ids::{AchPositivePayRuleId, BankAccountId};

/// How a rule compares the debit amount with its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountCondition {
    Equal,
    LessThanOrEqualTo,
    AnyAmount,
}

impl AmountCondition {
    /// The stored (and wire) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AmountCondition::Equal => "equal",
            AmountCondition::LessThanOrEqualTo => "less_than_or_equal_to",
            AmountCondition::AnyAmount => "any_amount",
        }
    }

    pub fn parse(text: &str) -> Option<AmountCondition> {
        [Self::Equal, Self::LessThanOrEqualTo, Self::AnyAmount]
            .into_iter()
            .find(|c| c.as_str() == text)
    }
}

/// A stored positive pay rule: ACH debits to `bank_account_id` from `ach_company_id` are allowed
/// when `amount_condition` holds for the debit amount.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleRecord {
    pub id: AchPositivePayRuleId,
    pub bank_account_id: BankAccountId,
    pub ach_company_id: String,
    pub amount_condition: AmountCondition,
    /// Minor units; `None` exactly when the condition is `any_amount`.
    pub amount: Option<i64>,
    pub description: String,
    pub created_at: DateTime<Utc>,
}
