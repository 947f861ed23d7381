//! `Book Transfers`: create (with `Idempotency-Key`), get, list, clear and cancel; and the one
//! mapping of [`TransferError`] to the wire, shared with the ACH and simulation handlers.
//!
//! Creation follows the contract's precedence: the request's shape (body, `Idempotency-Key`)
//! → 404 for the accounts it names → 409/422 for the key → business rules (inside the write
//! transaction). The 404 check runs inside the write transaction anyway, so it is repeated
//! outside only when the key answer is a conflict: the common path pays nothing for it.

use std::collections::BTreeMap;

use bank_api::Json;
use bank_api::book_transfers::*;
use bank_api::models::{
    BookTransfer, BookTransferList, BookTransferStatus as WireStatus, ErrorType,
};

use super::Bankd;
use super::errors::{ApiError, fail};
use super::idempotent::{self, body_bytes};
use crate::auth::Principal;
use crate::domain::transfers::{self, BookTransferFields, NewBookTransfer, TransferError};
use crate::model::page::PageRequest;
use crate::model::transfers::BookTransferStatus;
use crate::store::transfers::{BookTransferFilter, BookTransferRecord};

impl BookTransfersApi for Bankd {
    async fn list_book_transfers(
        &self,
        principal: Principal,
        input: ListBookTransfersInput,
    ) -> ListBookTransfersResponse {
        let page = match PageRequest::parse(
            Some(input.limit),
            input.starting_after,
            input.ending_before,
        ) {
            Ok(page) => page,
            Err(e) => return fail(e.into()),
        };
        let filter = BookTransferFilter {
            bank_account_id: input.bank_account_id,
            status: input.status.map(status_from_wire),
            created_gt: input.created_gt,
            created_gte: input.created_gte,
            created_lt: input.created_lt,
            created_lte: input.created_lte,
        };
        match transfers::list_book_transfers(&self.state.db, &principal.platform_id, &filter, &page)
            .await
        {
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
        let b = input.body;
        let parsed = NewBookTransfer::parse(BookTransferFields {
            amount: b.amount,
            currency_code: b.currency_code,
            sender_bank_account_id: b.sender_bank_account_id,
            sender_account_number_id: b.sender_account_number_id,
            receiver_bank_account_id: b.receiver_bank_account_id,
            receiver_account_number_id: b.receiver_account_number_id,
            description: b.description,
            allow_overdraft: b.allow_overdraft,
            hold: b.hold,
        });
        let request = match parsed {
            Ok(request) => request,
            Err(e) => return fail(e.into()),
        };
        let (state, platform_id, key) = (
            &self.state,
            &principal.platform_id,
            input.idempotency_key.as_deref(),
        );
        let request_ref = &request;
        let fingerprint = ("POST", "/transfers/book", body.as_slice());
        let written = idempotent::write(state, &principal, key, fingerprint, |tx| {
            Box::pin(async move {
                let now = state.clock.now();
                let created =
                    transfers::create_book_transfer(tx, platform_id, now, request_ref, key).await?;
                Ok(wire(created))
            })
        })
        .await;
        match written {
            Ok(w) => {
                let replayed = w.replayed_header();
                CreateBookTransferResponse::Ok(Json(w.value), replayed)
            }
            Err(e) if e.status == 409 || e.status == 422 => {
                match transfers::check_book_transfer_parties(&state.db, platform_id, &request).await
                {
                    Err(not_found) => fail(not_found.into()),
                    Ok(()) => fail(e),
                }
            }
            Err(e) => fail(e),
        }
    }

    async fn get_book_transfer(
        &self,
        principal: Principal,
        input: GetBookTransferInput,
    ) -> GetBookTransferResponse {
        match transfers::get_book_transfer(
            &self.state.db,
            &principal.platform_id,
            &input.book_transfer_id,
        )
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
        let (state, platform_id) = (&self.state, &principal.platform_id);
        let (id, amount) = (
            input.book_transfer_id.as_str(),
            input.body.and_then(|b| b.amount),
        );
        let fingerprint = ("POST", "/transfers/book/{book_transfer_id}/clear", &[][..]);
        let written = idempotent::write(state, &principal, None, fingerprint, |tx| {
            Box::pin(async move {
                let now = state.clock.now();
                Ok(wire(
                    transfers::clear_book_transfer(tx, platform_id, now, id, amount).await?,
                ))
            })
        })
        .await;
        match written {
            Ok(w) => ClearBookTransferResponse::Ok(Json(w.value)),
            Err(e) => fail(e),
        }
    }

    async fn cancel_book_transfer(
        &self,
        principal: Principal,
        input: CancelBookTransferInput,
    ) -> CancelBookTransferResponse {
        let (state, platform_id, id) = (
            &self.state,
            &principal.platform_id,
            input.book_transfer_id.as_str(),
        );
        let fingerprint = ("POST", "/transfers/book/{book_transfer_id}/cancel", &[][..]);
        let written = idempotent::write(state, &principal, None, fingerprint, |tx| {
            Box::pin(async move {
                let now = state.clock.now();
                Ok(wire(
                    transfers::cancel_book_transfer(tx, platform_id, now, id).await?,
                ))
            })
        })
        .await;
        match written {
            Ok(w) => CancelBookTransferResponse::Ok(Json(w.value)),
            Err(e) => fail(e),
        }
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
fn wire(t: BookTransferRecord) -> BookTransfer {
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

fn one_field(field: &str, message: impl Into<String>) -> BTreeMap<String, String> {
    BTreeMap::from([(field.to_owned(), message.into())])
}

impl From<TransferError> for ApiError {
    fn from(e: TransferError) -> Self {
        use TransferError as E;
        let message = e.to_string();
        let transfer = ErrorType::TransferError;
        let shape = ErrorType::RequestValidationError;
        match e {
            E::Invalid(details) => {
                let message = details
                    .iter()
                    .map(|(field, problem)| format!("{field} {problem}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                ApiError::new(400, shape, "invalid_request", message).with_details(details)
            }
            E::UnsupportedCurrency(_) => {
                ApiError::new(400, shape, "unsupported_currency", message.clone())
                    .with_details(one_field("currency_code", message))
            }
            E::SameAccount(field) => {
                ApiError::invalid_field(field, "must name a bank account other than the sender's")
            }
            E::AmountOverflow => {
                ApiError::invalid_field("amount", "is too large: a balance would overflow")
            }
            E::BankAccountNotFound => ApiError::not_found(
                ErrorType::BankAccountError,
                "bank_account_not_found",
                "bank account",
            ),
            E::AccountNumberNotFound => ApiError::not_found(
                ErrorType::AccountNumberError,
                "account_number_not_found",
                "account number",
            ),
            E::BookTransferNotFound => {
                ApiError::not_found(transfer, "book_transfer_not_found", "book transfer")
            }
            E::AchTransferNotFound => {
                ApiError::not_found(transfer, "ach_transfer_not_found", "ACH transfer")
            }
            E::NotOpen(..) => ApiError::new(
                400,
                ErrorType::BankAccountError,
                "bank_account_not_open",
                message,
            ),
            E::CurrencyMismatch(..) => {
                ApiError::new(400, transfer, "currency_mismatch", message.clone())
                    .with_details(one_field("currency_code", message))
            }
            E::InsufficientFunds => ApiError::new(
                400,
                transfer,
                "insufficient_funds",
                "the sender's available amount (and its overdraft reserve, where allowed) cannot cover the amount",
            ),
            E::NotOnHold(_) => ApiError::new(400, transfer, "transfer_not_on_hold", message),
            E::Internal(_) => ApiError::internal(&message),
            E::Pagination(e) => e.into(),
            E::Store(e) => e.into(),
        }
    }
}
