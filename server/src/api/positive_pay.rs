//! `AchPositivePayRules`: which ACH companies may debit a bank account.

use bank_api::Json;
use bank_api::ach_positive_pay_rules::*;
use bank_api::models::{AchPositivePayRule, AchPositivePayRuleList, AmountCondition, ErrorType};

use super::Bankd;
use super::errors::{ApiError, fail};
use super::idempotent;
use crate::auth::Principal;
use crate::domain::positive_pay::{self, NewRule, PositivePayError};
use crate::model::page::PageRequest;
use crate::store::positive_pay::RuleRecord;

impl AchPositivePayRulesApi for Bankd {
    async fn create_ach_positive_pay_rule(
        &self,
        principal: Principal,
        input: CreateAchPositivePayRuleInput,
    ) -> CreateAchPositivePayRuleResponse {
        let body = input.body;
        let rule = match positive_pay::validate(NewRule {
            bank_account_id: body.bank_account_id,
            ach_company_id: body.ach_company_id,
            amount_condition: condition(body.amount_condition),
            amount: body.amount,
            description: body.description,
        }) {
            Ok(rule) => rule,
            Err(e) => return fail(e.into()),
        };
        let state = &self.state;
        let now = state.clock.now();
        let (rule, platform_id) = (&rule, &principal.platform_id);
        // No Idempotency-Key on this operation: still one retried write transaction.
        let written = idempotent::write(state, &principal, None, ("", "", &[]), |tx| {
            Box::pin(async move {
                let record = positive_pay::create(tx, now, platform_id, rule).await?;
                Ok(wire(record)?)
            })
        })
        .await;
        match written {
            Ok(w) => CreateAchPositivePayRuleResponse::Ok(Json(w.value)),
            Err(e) => fail(e),
        }
    }

    async fn get_ach_positive_pay_rule(
        &self,
        principal: Principal,
        input: GetAchPositivePayRuleInput,
    ) -> GetAchPositivePayRuleResponse {
        let db = &self.state.db;
        match positive_pay::get(db, &principal.platform_id, &input.ach_positive_pay_rule_id).await {
            Ok(record) => match wire(record) {
                Ok(rule) => GetAchPositivePayRuleResponse::Ok(Json(rule)),
                Err(e) => fail(e),
            },
            Err(e) => fail(e.into()),
        }
    }

    async fn delete_ach_positive_pay_rule(
        &self,
        principal: Principal,
        input: DeleteAchPositivePayRuleInput,
    ) -> DeleteAchPositivePayRuleResponse {
        let db = &self.state.db;
        match positive_pay::delete(db, &principal.platform_id, &input.ach_positive_pay_rule_id)
            .await
        {
            Ok(()) => DeleteAchPositivePayRuleResponse::Ok,
            Err(e) => fail(e.into()),
        }
    }

    async fn list_ach_positive_pay_rules(
        &self,
        principal: Principal,
        input: ListAchPositivePayRulesInput,
    ) -> ListAchPositivePayRulesResponse {
        let request = match PageRequest::parse(
            Some(input.limit),
            input.starting_after,
            input.ending_before,
        ) {
            Ok(r) => r,
            Err(e) => return fail(e.into()),
        };
        let db = &self.state.db;
        let page =
            match positive_pay::list(db, &principal.platform_id, &input.bank_account_id, &request)
                .await
            {
                Ok(page) => page,
                Err(e) => return fail(e.into()),
            };
        match page
            .items
            .into_iter()
            .map(wire)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(rules) => ListAchPositivePayRulesResponse::Ok(Json(AchPositivePayRuleList {
                ach_positive_pay_rules: rules,
                has_more: page.has_more,
            })),
            Err(e) => fail(e),
        }
    }
}

fn condition(c: AmountCondition) -> positive_pay::AmountCondition {
    match c {
        AmountCondition::Equal => positive_pay::AmountCondition::Equal,
        AmountCondition::LessThanOrEqualTo => positive_pay::AmountCondition::LessThanOrEqualTo,
        AmountCondition::AnyAmount => positive_pay::AmountCondition::AnyAmount,
    }
}

/// The wire shape of a stored rule; a stored condition the spec does not know is corruption.
fn wire(r: RuleRecord) -> Result<AchPositivePayRule, ApiError> {
    let amount_condition = r
        .amount_condition
        .parse()
        .map_err(|e| ApiError::internal(&format!("stored rule {}: {e}", r.id.as_str())))?;
    Ok(AchPositivePayRule {
        id: r.id.as_str().to_owned(),
        bank_account_id: r.bank_account_id.as_str().to_owned(),
        ach_company_id: r.ach_company_id,
        amount_condition,
        amount: r.amount,
        description: r.description,
        created_at: r.created_at,
    })
}

impl From<PositivePayError> for ApiError {
    fn from(e: PositivePayError) -> Self {
        match e {
            PositivePayError::InvalidFields(details) => ApiError::invalid_fields(details),
            PositivePayError::BankAccountNotFound => ApiError::not_found(
                ErrorType::BankAccountError,
                "bank_account_not_found",
                "bank account",
            ),
            PositivePayError::NotFound => ApiError::not_found(
                ErrorType::PositivePayError,
                "ach_positive_pay_rule_not_found",
                "ACH positive pay rule",
            ),
            PositivePayError::Duplicate => ApiError::new(
                400,
                ErrorType::PositivePayError,
                "duplicate_ach_positive_pay_rule",
                e.to_string(),
            ),
            PositivePayError::Pagination(e) => e.into(),
            PositivePayError::Store(e) => e.into(),
        }
    }
}
