//! `AccountNumbers`: routing and account number pairs that point to a bank account.

use bank_api::Json;
use bank_api::account_numbers::*;
use bank_api::models::{AccountNumber, AccountNumberList};

use super::Bankd;
use super::bank_accounts::check_key;
use super::errors::fail;
use super::idempotent::{self, body_bytes};
use crate::auth::Principal;
use crate::domain::bank_accounts::{self as accounts, AccountNumberUpdate, NewAccountNumber};
use crate::model::page::PageRequest;
use crate::store::bank_accounts::AccountNumberRecord;

impl AccountNumbersApi for Bankd {
    async fn list_account_numbers(
        &self,
        principal: Principal,
        input: ListAccountNumbersInput,
    ) -> ListAccountNumbersResponse {
        let page = match PageRequest::parse(
            Some(input.limit),
            input.starting_after,
            input.ending_before,
        ) {
            Ok(page) => page,
            Err(e) => return fail(e.into()),
        };
        let listed = accounts::list_account_numbers(
            &self.state.db,
            &principal.platform_id,
            &input.bank_account_id,
            &page,
        )
        .await;
        match listed {
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
        if let Err(e) = new.validate() {
            return fail(e.into());
        }
        if let Err(e) = check_key(input.idempotency_key.as_deref()) {
            return fail(e);
        }
        let state = &self.state;
        let (platform_id, account_id) = (&principal.platform_id, input.bank_account_id.as_str());
        // 404 for the addressed account before the key's 409/422.
        if let Err(e) = accounts::check_exists(&state.db, platform_id, account_id).await {
            return fail(e.into());
        }
        let path = format!("/bank-accounts/{account_id}/account-numbers");
        let (new, bank, clock) = (&new, &state.config.bank_settings(), state.clock.as_ref());
        let written = idempotent::write(
            state,
            &principal,
            input.idempotency_key.as_deref(),
            ("POST", &path, &body),
            |tx| {
                Box::pin(async move {
                    let record = accounts::create_account_number(
                        tx,
                        clock,
                        bank,
                        platform_id,
                        account_id,
                        new,
                    )
                    .await?;
                    Ok(wire(record))
                })
            },
        )
        .await;
        match written {
            Ok(w) => {
                let replayed = w.replayed_header();
                CreateAccountNumberResponse::Ok(Json(w.value), replayed)
            }
            Err(e) => fail(e),
        }
    }

    async fn get_account_number(
        &self,
        principal: Principal,
        input: GetAccountNumberInput,
    ) -> GetAccountNumberResponse {
        match accounts::get_account_number(
            &self.state.db,
            &principal.platform_id,
            &input.account_number_id,
        )
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
        let state = &self.state;
        let updated = accounts::update_account_number(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.account_number_id,
            &update,
        )
        .await;
        match updated {
            Ok(record) => UpdateAccountNumberResponse::Ok(Json(wire(record))),
            Err(e) => fail(e.into()),
        }
    }
}

/// The wire shape of a stored account number.
fn wire(n: AccountNumberRecord) -> AccountNumber {
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
