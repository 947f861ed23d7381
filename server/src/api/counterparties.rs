//! `Counterparties`: the parties on the other side of transfers.

use crate::model::page::Bounds;
use bank_api::Json;
use bank_api::counterparties::*;
use bank_api::models::{self, Counterparty, CounterpartyList, CounterpartySort, EmptyObject};

use super::Bankd;
use super::errors::{ApiError, fail};
use crate::auth::Principal;
use crate::domain::counterparties::{self, NewCounterparty, RoutingNumberType};
use crate::model::counterparties::{CounterpartyRecord, ListFilter, Sort};
use crate::model::page::{PageRequest, PaginationError, SortOrder};

impl CounterpartiesApi for Bankd {
    async fn list_counterparties(
        &self,
        principal: Principal,
        input: ListCounterpartiesInput,
    ) -> ListCounterpartiesResponse {
        let (page, filter) = list_query(input);
        let counterparties = self.services.counterparties();
        let listed = async {
            counterparties
                .list(&principal.platform_id, &filter, &page?)
                .await
        };
        let wired = match listed.await {
            Ok(page) => page.try_map(wire),
            Err(e) => Err(e.into()),
        };
        match wired {
            Ok(page) => ListCounterpartiesResponse::Ok(Json(CounterpartyList {
                counterparties: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e),
        }
    }

    async fn create_counterparty(
        &self,
        principal: Principal,
        input: CreateCounterpartyInput,
    ) -> CreateCounterpartyResponse {
        let new = match new_counterparty(input.body).and_then(|n| Ok(counterparties::validate(n)?))
        {
            Ok(new) => new,
            Err(e) => return fail(e),
        };
        let counterparties = self.services.counterparties();
        match counterparties.create(&principal.platform_id, &new).await {
            Ok(record) => {
                wire(record).map_or_else(fail, |c| CreateCounterpartyResponse::Ok(Json(c)))
            }
            Err(e) => fail(e.into()),
        }
    }

    async fn get_counterparty(
        &self,
        principal: Principal,
        input: GetCounterpartyInput,
    ) -> GetCounterpartyResponse {
        let counterparties = self.services.counterparties();
        match counterparties
            .get(&principal.platform_id, &input.counterparty_id)
            .await
        {
            Ok(record) => wire(record).map_or_else(fail, |c| GetCounterpartyResponse::Ok(Json(c))),
            Err(e) => fail(e.into()),
        }
    }

    async fn delete_counterparty(
        &self,
        principal: Principal,
        input: DeleteCounterpartyInput,
    ) -> DeleteCounterpartyResponse {
        let counterparties = self.services.counterparties();
        match counterparties
            .delete(&principal.platform_id, &input.counterparty_id)
            .await
        {
            Ok(()) => DeleteCounterpartyResponse::Ok(Json(EmptyObject {})),
            Err(e) => fail(e.into()),
        }
    }
}

/// The list query's page, filters and order for the rules.
fn list_query(
    input: ListCounterpartiesInput,
) -> (Result<PageRequest, PaginationError>, ListFilter) {
    let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
    let filter = ListFilter {
        account_number: input.account_number,
        routing_number: input.routing_number,
        created: Bounds::new(
            input.created_gt,
            input.created_gte,
            input.created_lt,
            input.created_lte,
        ),
        description: input.description,
        query: input.query,
        deduplicate: input.deduplicate,
        sort: match input.sort {
            Some(CounterpartySort::Description) => Sort::Description,
            Some(CounterpartySort::CreatedAt) | None => Sort::CreatedAt,
        },
        order: input.sort_order.map(|o| match o {
            models::SortOrder::Asc => SortOrder::Asc,
            models::SortOrder::Desc => SortOrder::Desc,
        }),
    };
    (page, filter)
}

/// The request's fields for the rules (the address kept as its JSON text).
fn new_counterparty(b: models::CreateCounterpartyRequest) -> Result<NewCounterparty, ApiError> {
    let address = b
        .address
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| ApiError::internal(&e))?;
    Ok(NewCounterparty {
        routing_number: b.routing_number,
        routing_number_type: match b.routing_number_type {
            Some(models::RoutingNumberType::Bic) => RoutingNumberType::Bic,
            Some(models::RoutingNumberType::Aba) | None => RoutingNumberType::Aba,
        },
        account_number: b.account_number,
        account_type: b.account_type.map(|t| t.as_str()),
        name: b.name,
        description: b.description,
        email: b.email,
        phone: b.phone,
        address,
        legal_id: b.legal_id,
        legal_type: b.legal_type.map(|t| t.as_str()),
        local_bank_code: b.local_bank_code,
        local_account_number: b.local_account_number,
    })
}

/// The wire shape of a stored counterparty; a stored value the spec cannot express is
/// corruption (500), never guessed at.
fn wire(c: CounterpartyRecord) -> Result<Counterparty, ApiError> {
    let id = c.id.as_str().to_owned();
    let corrupt = |what: &str, e: &dyn std::fmt::Display| {
        ApiError::internal(&format!("stored counterparty {id}: {what}: {e}"))
    };
    let routing_number_type = c
        .routing_number_type
        .parse()
        .map_err(|e: String| corrupt("routing_number_type", &e))?;
    let account_type = c
        .account_type
        .map(|t| t.parse())
        .transpose()
        .map_err(|e: String| corrupt("account_type", &e))?;
    let legal_type = c
        .legal_type
        .map(|t| t.parse())
        .transpose()
        .map_err(|e: String| corrupt("legal_type", &e))?;
    let address = c
        .address
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| corrupt("address", &e))?;
    Ok(Counterparty {
        id,
        routing_number: c.routing_number,
        routing_number_type,
        account_number: c.account_number,
        account_type,
        name: c.name,
        description: c.description,
        email: c.email,
        phone: c.phone,
        address,
        legal_id: c.legal_id,
        legal_type,
        local_bank_code: c.local_bank_code,
        local_account_number: c.local_account_number,
        created_at: c.created_at,
        updated_at: c.updated_at,
    })
}
