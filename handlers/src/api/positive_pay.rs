//! `AchPositivePayRules`: which ACH companies may debit a bank account.

use bank_api::Json;
use bank_api::ach_positive_pay_rules::*;
use bank_api::models::{AchPositivePayRule, AchPositivePayRuleList, AmountCondition};

use super::Bankd;
use super::errors::fail;
use crate::auth::Principal;
use crate::domain::positive_pay::{self, NewRule};
use crate::model::page::PageRequest;
use crate::model::positive_pay::{AmountCondition as Condition, RuleRecord};

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
        let rules = self.services.positive_pay();
        match rules.create(&principal.platform_id, &rule).await {
            Ok(record) => CreateAchPositivePayRuleResponse::Ok(Json(wire(record))),
            Err(e) => fail(e.into()),
        }
    }

    async fn get_ach_positive_pay_rule(
        &self,
        principal: Principal,
        input: GetAchPositivePayRuleInput,
    ) -> GetAchPositivePayRuleResponse {
        let rules = self.services.positive_pay();
        match rules
            .get(&principal.platform_id, &input.ach_positive_pay_rule_id)
            .await
        {
            Ok(record) => GetAchPositivePayRuleResponse::Ok(Json(wire(record))),
            Err(e) => fail(e.into()),
        }
    }

    async fn delete_ach_positive_pay_rule(
        &self,
        principal: Principal,
        input: DeleteAchPositivePayRuleInput,
    ) -> DeleteAchPositivePayRuleResponse {
        let rules = self.services.positive_pay();
        match rules
            .delete(&principal.platform_id, &input.ach_positive_pay_rule_id)
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
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let rules = self.services.positive_pay();
        let account = &input.bank_account_id;
        let listed = async { rules.list(&principal.platform_id, account, &page?).await };
        match listed.await {
            Ok(page) => ListAchPositivePayRulesResponse::Ok(Json(AchPositivePayRuleList {
                ach_positive_pay_rules: page.items.into_iter().map(wire).collect(),
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }
}

fn condition(c: AmountCondition) -> Condition {
    match c {
        AmountCondition::Equal => Condition::Equal,
        AmountCondition::LessThanOrEqualTo => Condition::LessThanOrEqualTo,
        AmountCondition::AnyAmount => Condition::AnyAmount,
    }
}

/// The wire shape of a stored rule.
fn wire(r: RuleRecord) -> AchPositivePayRule {
    AchPositivePayRule {
        id: r.id.into_string(),
        bank_account_id: r.bank_account_id.into_string(),
        ach_company_id: r.ach_company_id,
        amount_condition: match r.amount_condition {
            Condition::Equal => AmountCondition::Equal,
            Condition::LessThanOrEqualTo => AmountCondition::LessThanOrEqualTo,
            Condition::AnyAmount => AmountCondition::AnyAmount,
        },
        amount: r.amount,
        description: r.description,
        created_at: r.created_at,
    }
}
