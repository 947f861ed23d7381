//! `AccountNumbers`: routing and account number pairs that point to a bank account.

use bank_api::Json;
use bank_api::account_numbers::*;
use bank_api::models::{AccountNumber, AccountNumberList};

use super::Bankd;
use super::errors::fail;
use super::idempotent::{body_bytes, replayed_header, write_request};
use crate::auth::Principal;
use crate::domain::bank_accounts::{AccountNumberUpdate, NewAccountNumber};
use crate::model::bank_accounts::AccountNumberRecord;
use crate::model::page::PageRequest;

impl AccountNumbersApi for Bankd {
    async fn list_account_numbers(
        &self,
        principal: Principal,
        input: ListAccountNumbersInput,
    ) -> ListAccountNumbersResponse {
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let (accounts, account) = (self.bank_accounts(), &input.bank_account_id);
        let listed = async {
            accounts
                .list_account_numbers(&principal.platform_id, account, &page?)
                .await
        };
        match listed.await {
            Ok(page) => ListAccountNumbersResponse::Ok(Json(AccountNumberList {
                account_numbers: page.items.into_iter().map(wire).collect(),
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn create_account_number(
        &self,
        principal: Principal,
        input: CreateAccountNumberInput,
    ) -> CreateAccountNumberResponse {
        let body = body_bytes(&input.body);
        let new = NewAccountNumber {
            description: input.body.description,
            check_issuing_positive_pay_required: input.body.check_issuing_positive_pay_required,
        };
        let account = input.bank_account_id.as_str();
        let path = format!("/bank-accounts/{account}/account-numbers");
        let write = write_request(input.idempotency_key.as_deref(), &path, &body);
        let accounts = self.bank_accounts();
        let created = accounts.create_account_number(&principal.platform_id, account, &new, write);
        match created.await {
            Ok(w) => {
                CreateAccountNumberResponse::Ok(Json(wire(w.value)), replayed_header(w.replayed))
            }
            Err(e) => fail(e.into()),
        }
    }

    async fn get_account_number(
        &self,
        principal: Principal,
        input: GetAccountNumberInput,
    ) -> GetAccountNumberResponse {
        let accounts = self.bank_accounts();
        match accounts
            .get_account_number(&principal.platform_id, &input.account_number_id)
            .await
        {
            Ok(record) => GetAccountNumberResponse::Ok(Json(wire(record))),
            Err(e) => fail(e.into()),
        }
    }

    async fn update_account_number(
        &self,
        principal: Principal,
        input: UpdateAccountNumberInput,
    ) -> UpdateAccountNumberResponse {
        let update = AccountNumberUpdate {
            description: input.body.description,
            check_issuing_positive_pay_required: input.body.check_issuing_positive_pay_required,
        };
        let (accounts, id) = (self.bank_accounts(), &input.account_number_id);
        match accounts
            .update_account_number(&principal.platform_id, id, &update)
            .await
        {
            Ok(record) => UpdateAccountNumberResponse::Ok(Json(wire(record))),
            Err(e) => fail(e.into()),
        }
    }
}

/// The wire shape of a stored account number.
pub(super) fn wire(n: AccountNumberRecord) -> AccountNumber {
    AccountNumber {
        id: n.id.into_string(),
        bank_account_id: n.bank_account_id.into_string(),
        account_number: n.account_number,
        routing_number: n.routing_number,
        bic: n.bic,
        description: n.description,
        check_issuing_positive_pay_required: n.check_issuing_positive_pay_required,
        created_at: n.created_at,
        updated_at: n.updated_at,
    }
}
