//! HTTP-agnostic rules. Nothing here knows about status codes or poem: each area has its own
//! `thiserror` enum, and `api/error_map.rs` (with the handlers) is the one place that turns them
//! into responses.

pub mod bank_accounts;
pub mod bank_codes;
pub mod counterparties;
pub mod documents;
pub mod entities;
pub mod events;
pub mod history;
pub mod ledger;
pub mod platforms;
pub mod positive_pay;
pub mod rate_limit;
pub mod transfers;
pub mod webhook_signing;
pub mod webhook_targets;
pub mod webhooks;

/// A store failure as the edge needs to know it: the one classification the error table maps
/// (the details go to the log, never to the client).
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    /// Text the database cannot store: the client's input.
    #[error("text the database cannot store")]
    UnstorableText,
    /// A write conflict that outlasted its retries.
    #[error("transaction conflict: {0}")]
    Conflict(String),
    /// No database connection came free in time: the server is overloaded, not broken.
    #[error("overloaded: {0}")]
    Busy(String),
    /// The database could not be reached or its connection was lost: `applied_unknown` when
    /// that happened during the commit (the write may have been applied).
    #[error("database unavailable: {detail}")]
    Unavailable {
        detail: String,
        applied_unknown: bool,
    },
    /// The database could not grow (a full disk); nothing of the write was kept.
    #[error("storage is full")]
    StorageFull,
    /// Anything else: a bug, corrupted data or an unavailable database.
    #[error("{0}")]
    Internal(String),
}

impl From<crate::store::StoreError> for Fault {
    fn from(e: crate::store::StoreError) -> Self {
        use crate::store::Retryable;
        if e.is_unstorable_text() {
            Fault::UnstorableText
        } else if e.is_storage_full() {
            Fault::StorageFull
        } else if e.is_unavailable() {
            Fault::Unavailable {
                applied_unknown: matches!(e, crate::store::StoreError::CommitInterrupted(_)),
                detail: e.to_string(),
            }
        } else if e.is_retryable() {
            Fault::Conflict(e.to_string())
        } else if e.is_pool_timeout() {
            Fault::Busy(e.to_string())
        } else {
            Fault::Internal(e.to_string())
        }
    }
}

/// What [`Services::admit`] decided for a request's key.
#[derive(Debug)]
pub enum Admission {
    /// A malformed, unknown or revoked key.
    Unknown,
    /// The key's rate limit refuses the request; `platform_id` owns the key.
    Limited {
        decision: rate_limit::Decision,
        platform_id: String,
    },
    /// The request may run; `decision` is `None` when limits are off.
    Admitted {
        principal: crate::auth::Principal,
        decision: Option<rate_limit::Decision>,
    },
}

/// The rules as services over one database and clock: what the API layer calls. Each service
/// owns its transactions (and idempotency), so a handler parses, calls one method and maps the
/// committed result.
#[derive(Clone)]
pub struct Services {
    db: crate::store::Db,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
    /// The bank's identifiers that new account numbers carry.
    bank: platforms::BankSettings,
    /// How webhooks are delivered (targets allowed, retries, timeout).
    webhooks: webhooks::WebhookSettings,
    /// Every key's request budget in this process.
    limiter: std::sync::Arc<rate_limit::RateLimiter>,
}

impl Services {
    pub fn new(
        db: crate::store::Db,
        clock: std::sync::Arc<dyn crate::clock::Clock>,
        bank: platforms::BankSettings,
    ) -> Services {
        Services {
            db,
            clock,
            bank,
            webhooks: webhooks::WebhookSettings::default(),
            limiter: std::sync::Arc::new(rate_limit::RateLimiter::new(Default::default())),
        }
    }

    /// The same services with this limit on every key's requests.
    pub fn with_rate_limit(mut self, limit: rate_limit::RateLimit) -> Services {
        self.limiter = std::sync::Arc::new(rate_limit::RateLimiter::new(limit));
        self
    }

    /// The same services with these webhook delivery settings.
    pub fn with_webhooks(mut self, settings: webhooks::WebhookSettings) -> Services {
        self.webhooks = settings;
        self
    }

    /// The clock every service reads.
    pub fn clock(&self) -> &dyn crate::clock::Clock {
        self.clock.as_ref()
    }

    /// Resolves presented key text to a principal and takes one request from its key's rate
    /// limit. A key whose bucket is already empty is refused before it is looked up (a runaway
    /// client costs no database read); a key revoked while its bucket is empty is therefore
    /// refused, not unknown, until the bucket has room again.
    pub async fn admit(&self, presented: &str) -> Result<Admission, Fault> {
        let Some(key) = crate::auth::ApiKey::parse(presented) else {
            return Ok(Admission::Unknown);
        };
        let hash = key.hash();
        if let Some((decision, platform_id)) = self.limiter.refuses(&hash, self.clock.now()) {
            return Ok(Admission::Limited {
                decision,
                platform_id,
            });
        }
        let Some(principal) = crate::auth::authenticate_key(&self.db, &key, hash).await? else {
            return Ok(Admission::Unknown);
        };
        let owner = principal.platform_id.as_str();
        let decision = self
            .limiter
            .check(&principal.key_hash, owner, self.clock.now());
        Ok(match decision {
            Some(decision) if !decision.allowed => Admission::Limited {
                decision,
                platform_id: owner.to_owned(),
            },
            decision => Admission::Admitted {
                principal,
                decision,
            },
        })
    }

    pub fn webhook_endpoints(&self) -> webhooks::WebhookEndpoints<'_> {
        webhooks::WebhookEndpoints {
            db: &self.db,
            clock: self.clock.as_ref(),
            settings: &self.webhooks,
        }
    }

    /// The delivery worker's side of the event outbox.
    pub fn outbox(&self) -> webhooks::Outbox<'_> {
        webhooks::Outbox {
            db: &self.db,
            clock: self.clock.as_ref(),
            settings: &self.webhooks,
        }
    }

    pub fn bank_accounts(&self) -> bank_accounts::BankAccounts<'_> {
        bank_accounts::BankAccounts {
            db: &self.db,
            clock: self.clock.as_ref(),
            bank: &self.bank,
        }
    }
}

/// A service type per area (`pub struct $name<'a>` over the database and clock) and its
/// accessor on [`Services`].
macro_rules! services {
    ($($accessor:ident => $module:ident::$name:ident;)*) => {$(
        impl Services {
            pub fn $accessor(&self) -> $module::$name<'_> {
                $module::$name {
                    db: &self.db,
                    clock: self.clock.as_ref(),
                }
            }
        }

        impl $module::$name<'_> {
            /// The clock, for rules that read the time outside a transaction.
            #[allow(dead_code)]
            fn now(&self) -> chrono::DateTime<chrono::Utc> {
                self.clock.now()
            }
        }
    )*};
}

/// Declares an area's service type; [`services!`] gives it its accessor.
macro_rules! service {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<'a> {
            pub(super) db: &'a crate::store::Db,
            pub(super) clock: &'a dyn crate::clock::Clock,
        }
    };
}
pub(crate) use service;

services! {
    counterparties => counterparties::Counterparties;
    documents => documents::Documents;
    entities => entities::Entities;
    events => events::Events;
    platforms => platforms::Platforms;
    positive_pay => positive_pay::PositivePay;
    transfers => transfers::Transfers;
}

/// Reads the record of `platform_id` that an id from a request names. A malformed id (`id` is
/// `None`) is as unknown as a missing record: both answer `missing()`, so a client cannot tell
/// them apart.
pub(crate) async fn get_one<I, R, E>(
    db: &crate::store::Db,
    platform_id: &crate::model::ids::PlatformId,
    id: Option<I>,
    missing: impl Fn() -> E,
    get: impl for<'t, 's> Fn(
        &'t mut crate::store::Tx<'s>,
        &'t crate::model::ids::PlatformId,
        &'t I,
    )
        -> crate::store::BoxFuture<'t, Result<Option<R>, crate::store::StoreError>>,
) -> Result<R, E>
where
    I: Sync,
    E: From<crate::store::StoreError>,
{
    let id = id.ok_or_else(&missing)?;
    db.read_single(|tx| get(tx, platform_id, &id))
        .await?
        .ok_or_else(missing)
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
    events::EventError,
    webhooks::WebhookError,
    counterparties::CounterpartyError,
    documents::DocumentError,
    entities::EntityError,
    positive_pay::PositivePayError,
    transfers::TransferError,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    #[test]
    fn no_free_connection_is_busy_and_other_store_failures_are_not() {
        let busy = Fault::from(StoreError::Database(sqlx::Error::PoolTimedOut));
        assert!(matches!(busy, Fault::Busy(_)), "{busy:?}");
        let other = Fault::from(StoreError::Database(sqlx::Error::RowNotFound));
        assert!(matches!(other, Fault::Internal(_)), "{other:?}");
    }
}
