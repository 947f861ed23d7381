//! `BankAccounts`: bank accounts, their owners and their daily history.
//!
//! Each handler parses, calls one method of the bank accounts service (which owns the
//! transaction, the idempotency and the contract's error precedence) and maps the result.

use crate::model::page::Bounds;
use bank_api::Json;
use bank_api::bank_accounts::*;
use bank_api::models::{
    Balances, BankAccount, BankAccountHistory, BankAccountList, BankAccountSort,
    BankAccountWithDetails, CreateBankAccountRequest, DailySummary, SortOrder,
};

use super::Bankd;
use super::convert::IntoTwin;
use super::errors::{ApiError, fail};
use super::idempotent::{body_bytes, replayed_header, write_request};
use crate::auth::Principal;
use crate::domain::bank_accounts::{
    BankAccountDetails, BankAccountUpdate, BankAccountView, BankAccounts, ListQuery,
    NewBankAccount, SortField,
};
use crate::domain::history::{DaySummary, History};
use crate::model::bank_accounts::BankAccountRecord;
use crate::model::page::{PageRequest, PaginationError};

impl BankAccountsApi for Bankd {
    async fn list_bank_accounts(
        &self,
        principal: Principal,
        input: ListBankAccountsInput,
    ) -> ListBankAccountsResponse {
        let (page, query) = list_query(input);
        let accounts = self.bank_accounts();
        let listed = async { accounts.list(&principal.platform_id, &query, &page?).await };
        match listed
            .await
            .map_err(ApiError::from)
            .and_then(|p| p.try_map(wire_view))
        {
            Ok(page) => ListBankAccountsResponse::Ok(Json(BankAccountList {
                bank_accounts: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e),
        }
    }

    async fn create_bank_account(
        &self,
        principal: Principal,
        input: CreateBankAccountInput,
    ) -> CreateBankAccountResponse {
        let body = body_bytes(&input.body);
        let new = match new_account(input.body).validate() {
            Ok(new) => new,
            Err(e) => return fail(e.into()),
        };
        let write = write_request(input.idempotency_key.as_deref(), "/bank-accounts", &body);
        let accounts = self.bank_accounts();
        let created = accounts.create(&principal.platform_id, &new, write).await;
        match created
            .map_err(ApiError::from)
            .and_then(|w| Ok((wire_details(w.value)?, w.replayed)))
        {
            Ok((a, replayed)) => CreateBankAccountResponse::Ok(Json(a), replayed_header(replayed)),
            Err(e) => fail(e),
        }
    }

    async fn get_bank_account(
        &self,
        principal: Principal,
        input: GetBankAccountInput,
    ) -> GetBankAccountResponse {
        let accounts = self.bank_accounts();
        let found = accounts.get(&principal.platform_id, &input.bank_account_id);
        match found.await.map_err(ApiError::from).and_then(wire_details) {
            Ok(account) => GetBankAccountResponse::Ok(Json(account)),
            Err(e) => fail(e),
        }
    }

    async fn delete_bank_account(
        &self,
        principal: Principal,
        input: DeleteBankAccountInput,
    ) -> DeleteBankAccountResponse {
        let accounts = self.bank_accounts();
        match accounts
            .close(&principal.platform_id, &input.bank_account_id)
            .await
        {
            Ok(()) => DeleteBankAccountResponse::Ok,
            Err(e) => fail(e.into()),
        }
    }

    async fn update_bank_account(
        &self,
        principal: Principal,
        input: UpdateBankAccountInput,
    ) -> UpdateBankAccountResponse {
        let b = input.body;
        let update = BankAccountUpdate {
            description: b.description,
            display_name: b.display_name,
            is_overdraftable: b.is_overdraftable,
            overdraft_reserve_account_id: b.overdraft_reserve_account_id,
        };
        let accounts = self.bank_accounts();
        let updated = accounts.update(&principal.platform_id, &input.bank_account_id, &update);
        match updated.await.map_err(ApiError::from).and_then(wire_details) {
            Ok(account) => UpdateBankAccountResponse::Ok(Json(account)),
            Err(e) => fail(e),
        }
    }

    async fn get_bank_account_history(
        &self,
        principal: Principal,
        input: GetBankAccountHistoryInput,
    ) -> GetBankAccountHistoryResponse {
        let (accounts, range) = (self.bank_accounts(), (input.from_date, input.to_date));
        let found = accounts.history(
            &principal.platform_id,
            &input.bank_account_id,
            range.0,
            range.1,
        );
        match found.await {
            Ok(h) => GetBankAccountHistoryResponse::Ok(Json(wire_history(h))),
            Err(e) => fail(e.into()),
        }
    }

    async fn add_bank_account_owner(
        &self,
        principal: Principal,
        input: AddBankAccountOwnerInput,
    ) -> AddBankAccountOwnerResponse {
        let (accounts, entity_id) = (self.bank_accounts(), &input.body.entity_id);
        let added = accounts.add_owner(&principal.platform_id, &input.bank_account_id, entity_id);
        match added.await.map_err(ApiError::from).and_then(wire_details) {
            Ok(account) => AddBankAccountOwnerResponse::Ok(Json(account)),
            Err(e) => fail(e),
        }
    }
}

impl Bankd {
    pub(super) fn bank_accounts(&self) -> BankAccounts<'_> {
        self.services.bank_accounts()
    }
}

/// The request's fields for the rules.
fn new_account(b: CreateBankAccountRequest) -> NewBankAccount {
    NewBankAccount {
        entity_id: b.entity_id,
        description: b.description,
        display_name: b.display_name,
        currency_code: b.currency_code,
        is_overdraftable: b.is_overdraftable,
        overdraft_reserve_account_id: b.overdraft_reserve_account_id,
    }
}

/// The list query's page, filters and order.
fn list_query(input: ListBankAccountsInput) -> (Result<PageRequest, PaginationError>, ListQuery) {
    let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
    let query = ListQuery {
        balance: Bounds::new(
            input.balance_gt,
            input.balance_gte,
            input.balance_lt,
            input.balance_lte,
        ),
        created: Bounds::new(
            input.created_gt,
            input.created_gte,
            input.created_lt,
            input.created_lte,
        ),
        currency_code: input.currency_code,
        description: input.description,
        entity_id: input.entity_id,
        is_overdraftable: input.is_overdraftable,
        overdraft_reserve_account_id: input.overdraft_reserve_account_id,
        query: input.query,
        status: input.status.map(IntoTwin::twin),
        account_type: input.r#type.map(IntoTwin::twin),
        sort: match input.sort.unwrap_or(BankAccountSort::CreatedAt) {
            BankAccountSort::CreatedAt => SortField::CreatedAt,
            BankAccountSort::Balance => SortField::Balance,
            BankAccountSort::Description => SortField::Description,
        },
        descending: input.sort_order.unwrap_or(SortOrder::Desc) == SortOrder::Desc,
    };
    (page, query)
}

/// The wire shape of an account's daily history.
fn wire_history(h: History) -> BankAccountHistory {
    let currency = h.currency_code;
    BankAccountHistory {
        bank_account_id: h.bank_account_id.into_string(),
        time_zone: h.time_zone,
        history: h.days.into_iter().map(|d| wire_day(d, &currency)).collect(),
    }
}

fn balances(a: &BankAccountRecord) -> Balances {
    Balances {
        available_amount: a.available_amount,
        pending_amount: a.pending_amount,
        holding_amount: a.holding_amount,
        locked_amount: a.locked_amount,
    }
}

/// The wire shape of a list item.
fn wire_view(v: BankAccountView) -> Result<BankAccount, ApiError> {
    let a = v.account;
    Ok(BankAccount {
        balances: balances(&a),
        id: a.id.into_string(),
        description: a.description,
        display_name: a.display_name,
        r#type: a.account_type.twin(),
        status: a.status.twin(),
        currency_code: a.currency_code,
        is_overdraftable: a.is_overdraftable,
        overdraft_reserve_account_id: a.overdraft_reserve_account_id.map(|id| id.into_string()),
        owners: v.owners.into_iter().map(|id| id.into_string()).collect(),
        created_at: a.created_at,
        updated_at: a.updated_at,
    })
}

/// The wire shape of a bank account with its default account number: the list item's fields
/// plus the number's.
pub(super) fn wire_details(d: BankAccountDetails) -> Result<BankAccountWithDetails, ApiError> {
    let n = d.default_number;
    let a = wire_view(BankAccountView {
        account: d.account,
        owners: d.owners,
    })?;
    Ok(BankAccountWithDetails {
        balances: a.balances,
        id: a.id,
        description: a.description,
        display_name: a.display_name,
        r#type: a.r#type,
        status: a.status,
        currency_code: a.currency_code,
        is_overdraftable: a.is_overdraftable,
        overdraft_reserve_account_id: a.overdraft_reserve_account_id,
        owners: a.owners,
        created_at: a.created_at,
        updated_at: a.updated_at,
        default_account_number_id: n.id.into_string(),
        default_account_number: n.account_number,
        routing_number: n.routing_number,
        bic: n.bic,
    })
}

fn wire_day(d: DaySummary, currency: &str) -> DailySummary {
    DailySummary {
        effective_on: d.effective_on,
        currency_code: currency.to_owned(),
        transaction_count: d.transaction_count,
        available_open: d.available.open,
        available_credit: d.available.credit,
        available_debit: d.available.debit,
        available_close: d.available.close,
        pending_open: d.pending.open,
        pending_credit: d.pending.credit,
        pending_debit: d.pending.debit,
        pending_close: d.pending.close,
        holding_open: d.holding.open,
        holding_credit: d.holding.credit,
        holding_debit: d.holding.debit,
        holding_close: d.holding.close,
        locked_open: d.locked.open,
        locked_credit: d.locked.credit,
        locked_debit: d.locked.debit,
        locked_close: d.locked.close,
    }
}
