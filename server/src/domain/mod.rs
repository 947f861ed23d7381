//! HTTP-agnostic rules. Nothing here knows about status codes or poem: each area has its own
//! `thiserror` enum, and `api/error_map.rs` (with the handlers) is the one place that turns them
//! into responses.

pub mod bank_accounts;
pub mod bank_codes;
pub mod counterparties;
pub mod documents;
pub mod entities;
pub mod history;
pub mod ledger;
pub mod platforms;
pub mod positive_pay;
pub mod transfers;

/// The rules as services over one database and clock: what the API layer calls. Each service
/// owns its transactions (and idempotency), so a handler parses, calls one method and maps the
/// committed result.
#[derive(Clone)]
pub struct Services {
    db: crate::store::Db,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
}

impl Services {
    pub fn new(db: crate::store::Db, clock: std::sync::Arc<dyn crate::clock::Clock>) -> Services {
        Services { db, clock }
    }

    pub fn transfers(&self) -> transfers::Transfers<'_> {
        transfers::Transfers {
            db: &self.db,
            clock: self.clock.as_ref(),
        }
    }
}

/// `From<ListError>` and `From<PaginationError>` for the domain errors that answer lists: a refused page request becomes
/// their `Pagination` variant, a store failure their `Store` variant.
macro_rules! from_list_error {
    ($($error:ty),* $(,)?) => {$(
        impl From<crate::store::keyset::ListError> for $error {
            fn from(e: crate::store::keyset::ListError) -> Self {
                match e {
                    crate::store::keyset::ListError::Page(e) => Self::Pagination(e),
                    crate::store::keyset::ListError::Store(e) => Self::Store(e),
                }
            }
        }

        impl From<crate::model::page::PaginationError> for $error {
            fn from(e: crate::model::page::PaginationError) -> Self {
                Self::Pagination(e)
            }
        }
    )*};
}

from_list_error!(
    bank_accounts::BankAccountError,
    counterparties::CounterpartyError,
    documents::DocumentError,
    entities::EntityError,
    positive_pay::PositivePayError,
    transfers::TransferError,
);
