//! `Counterparties`: the parties on the other side of transfers.

use crate::model::page::Bounds;
use bank_api::Json;
use bank_api::counterparties::*;
use bank_api::models::{self, Counterparty, CounterpartyList, CounterpartySort, EmptyObject};

use super::Bankd;
use super::convert::IntoTwin;
use super::errors::fail;
use crate::auth::Principal;
use crate::domain::counterparties::{self, NewCounterparty};
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
        match listed.await.map(|page| page.map(wire)) {
            Ok(page) => ListCounterpartiesResponse::Ok(Json(CounterpartyList {
                counterparties: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn create_counterparty(
        &self,
        principal: Principal,
        input: CreateCounterpartyInput,
    ) -> CreateCounterpartyResponse {
        let new = match counterparties::validate(new_counterparty(input.body)) {
            Ok(new) => new,
            Err(e) => return fail(e.into()),
        };
        let counterparties = self.services.counterparties();
        match counterparties.create(&principal.platform_id, &new).await {
            Ok(record) => CreateCounterpartyResponse::Ok(Json(wire(record))),
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
            Ok(record) => GetCounterpartyResponse::Ok(Json(wire(record))),
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

/// The request's fields for the rules.
fn new_counterparty(b: models::CreateCounterpartyRequest) -> NewCounterparty {
    NewCounterparty {
        routing_number: b.routing_number,
        routing_number_type: b
            .routing_number_type
            .map(IntoTwin::twin)
            .unwrap_or_default(),
        account_number: b.account_number,
        account_type: b.account_type.map(IntoTwin::twin),
        name: b.name,
        description: b.description,
        email: b.email,
        phone: b.phone,
        address: b.address.map(IntoTwin::twin),
        legal_id: b.legal_id,
        legal_type: b.legal_type.map(IntoTwin::twin),
        local_bank_code: b.local_bank_code,
        local_account_number: b.local_account_number,
    }
}

/// The wire shape of a stored counterparty.
pub(super) fn wire(c: CounterpartyRecord) -> Counterparty {
    let f = c.fields;
    Counterparty {
        id: c.id.into_string(),
        routing_number: f.routing_number,
        routing_number_type: f.routing_number_type.twin(),
        account_number: f.account_number,
        account_type: f.account_type.map(IntoTwin::twin),
        name: f.name,
        description: f.description,
        email: f.email,
        phone: f.phone,
        address: f.address.map(IntoTwin::twin),
        legal_id: f.legal_id,
        legal_type: f.legal_type.map(IntoTwin::twin),
        local_bank_code: f.local_bank_code,
        local_account_number: f.local_account_number,
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
}
