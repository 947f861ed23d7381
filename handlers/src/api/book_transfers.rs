//! `Book Transfers`: create (with `Idempotency-Key`), get, list, clear and cancel; and the one
//! mapping of [`TransferError`] to the wire, shared with the ACH and simulation handlers.
//!
//! Each handler parses its input, calls one method of the transfers service (which owns the
//! transaction and the idempotency, and keeps the contract's error precedence) and maps the
//! committed record to the wire.

use crate::model::page::Bounds;
use bank_api::Json;
use bank_api::book_transfers::*;
use bank_api::models::{
    BookTransfer, BookTransferList, BookTransferStatus as WireStatus, CreateBookTransferRequest,
};

use super::Bankd;
use super::errors::fail;
use super::idempotent::{body_bytes, replayed_header, write_request};
use crate::auth::Principal;
use crate::domain::transfers::{BookTransferFields, NewBookTransfer, Transfers};
use crate::model::page::{PageRequest, PaginationError};
use crate::model::transfers::BookTransferStatus;
use crate::model::transfers::{BookTransferFilter, BookTransferRecord};

impl BookTransfersApi for Bankd {
    async fn list_book_transfers(
        &self,
        principal: Principal,
        input: ListBookTransfersInput,
    ) -> ListBookTransfersResponse {
        let (page, filter) = list_query(input);
        let transfers = self.transfers();
        let listed = async {
            transfers
                .list_book(&principal.platform_id, &filter, &page?)
                .await
        };
        match listed.await {
            Ok(page) => ListBookTransfersResponse::Ok(Json(BookTransferList {
                transfers: page.items.into_iter().map(wire).collect(),
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn create_book_transfer(
        &self,
        principal: Principal,
        input: CreateBookTransferInput,
    ) -> CreateBookTransferResponse {
        let body = body_bytes(&input.body);
        let request = match NewBookTransfer::parse(fields(input.body)) {
            Ok(request) => request,
            Err(e) => return fail(e.into()),
        };
        let write = write_request(input.idempotency_key.as_deref(), "/transfers/book", &body);
        let transfers = self.transfers();
        match transfers
            .create_book(&principal.platform_id, &request, write)
            .await
        {
            Ok(w) => {
                CreateBookTransferResponse::Ok(Json(wire(w.value)), replayed_header(w.replayed))
            }
            Err(e) => fail(e.into()),
        }
    }

    async fn get_book_transfer(
        &self,
        principal: Principal,
        input: GetBookTransferInput,
    ) -> GetBookTransferResponse {
        let transfers = self.transfers();
        match transfers
            .get_book(&principal.platform_id, &input.book_transfer_id)
            .await
        {
            Ok(t) => GetBookTransferResponse::Ok(Json(wire(t))),
            Err(e) => fail(e.into()),
        }
    }

    async fn clear_book_transfer(
        &self,
        principal: Principal,
        input: ClearBookTransferInput,
    ) -> ClearBookTransferResponse {
        let amount = input.body.and_then(|b| b.amount);
        let transfers = self.transfers();
        match transfers
            .clear_book(&principal.platform_id, &input.book_transfer_id, amount)
            .await
        {
            Ok(t) => ClearBookTransferResponse::Ok(Json(wire(t))),
            Err(e) => fail(e.into()),
        }
    }

    async fn cancel_book_transfer(
        &self,
        principal: Principal,
        input: CancelBookTransferInput,
    ) -> CancelBookTransferResponse {
        let transfers = self.transfers();
        match transfers
            .cancel_book(&principal.platform_id, &input.book_transfer_id)
            .await
        {
            Ok(t) => CancelBookTransferResponse::Ok(Json(wire(t))),
            Err(e) => fail(e.into()),
        }
    }
}

impl Bankd {
    pub(super) fn transfers(&self) -> Transfers<'_> {
        self.services.transfers()
    }
}

/// The list query's page and filters.
fn list_query(
    input: ListBookTransfersInput,
) -> (Result<PageRequest, PaginationError>, BookTransferFilter) {
    let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
    let filter = BookTransferFilter {
        bank_account_id: input.bank_account_id,
        status: input.status.map(status_from_wire),
        created: Bounds::new(
            input.created_gt,
            input.created_gte,
            input.created_lt,
            input.created_lte,
        ),
    };
    (page, filter)
}

/// The request's fields for the rules.
fn fields(b: CreateBookTransferRequest) -> BookTransferFields {
    BookTransferFields {
        amount: b.amount,
        currency_code: b.currency_code,
        sender_bank_account_id: b.sender_bank_account_id,
        sender_account_number_id: b.sender_account_number_id,
        receiver_bank_account_id: b.receiver_bank_account_id,
        receiver_account_number_id: b.receiver_account_number_id,
        description: b.description,
        allow_overdraft: b.allow_overdraft,
        hold: b.hold,
    }
}

fn status_from_wire(status: WireStatus) -> BookTransferStatus {
    match status {
        WireStatus::Hold => BookTransferStatus::Hold,
        WireStatus::Completed => BookTransferStatus::Completed,
        WireStatus::Canceled => BookTransferStatus::Canceled,
        WireStatus::Rejected => BookTransferStatus::Rejected,
    }
}

fn status_to_wire(status: BookTransferStatus) -> WireStatus {
    match status {
        BookTransferStatus::Hold => WireStatus::Hold,
        BookTransferStatus::Completed => WireStatus::Completed,
        BookTransferStatus::Canceled => WireStatus::Canceled,
        BookTransferStatus::Rejected => WireStatus::Rejected,
    }
}

/// The wire shape of a stored book transfer.
pub(super) fn wire(t: BookTransferRecord) -> BookTransfer {
    BookTransfer {
        id: t.id.into_string(),
        amount: t.amount,
        currency_code: t.currency_code,
        sender_bank_account_id: t.sender_bank_account_id.into_string(),
        sender_account_number_id: t.sender_account_number_id.map(|id| id.into_string()),
        receiver_bank_account_id: t.receiver_bank_account_id.into_string(),
        receiver_account_number_id: t.receiver_account_number_id.map(|id| id.into_string()),
        description: t.description,
        allow_overdraft: t.allow_overdraft,
        status: status_to_wire(t.status),
        idempotency_key: t.idempotency_key,
        created_at: t.created_at,
        updated_at: t.updated_at,
    }
}
