//! Webhook endpoints (a platform's registered receivers of its events) and the outbox's
//! delivery rules: which attempt comes next, when, and signed with which secrets.
//!
//! The delivery loop itself (claim, send, record) runs in the shell (`webhook_worker.rs`),
//! since it owns an HTTP client; the decisions it applies live here so the API, the worker and
//! the tests share them: [`next_attempt_delay`] (exponential backoff with jitter, capped, so
//! the default 25 attempts span about three days), [`signing_secrets`] (both secrets during a
//! rotation's overlap) and [`Outbox::record_and_claim`] (outcomes, the next pending attempt of
//! each failure and the next claim in one transaction).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::domain::webhook_signing::WebhookSecret;
use crate::domain::webhook_targets::{self, TargetError, WebhookTarget};
use crate::model::events::EventType;
use crate::model::ids::{PlatformId, WebhookDeliveryId, WebhookEndpointId};
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::model::webhooks::{
    AttemptOutcome, ClaimedDelivery, DeliveryRecord, DeliveryStatus, WebhookEndpointRecord,
};
use crate::store::webhooks as repo;
use crate::store::{Db, StoreError, Tx};

/// Longest endpoint description, in characters.
pub const MAX_DESCRIPTION: usize = 500;
/// Most endpoints per platform: each event is written once per subscribed endpoint, so the
/// count bounds what one change writes (Stripe allows 16; a platform with more receivers
/// fans out itself).
pub const MAX_ENDPOINTS: i64 = 100;
/// Most selectors in `enabled_events`.
pub const MAX_SELECTORS: usize = 64;
/// How long the secret before a rotation keeps signing.
pub const ROTATION_OVERLAP: chrono::TimeDelta = chrono::TimeDelta::hours(24);
/// The longest wait between two attempts: with the default first wait of a minute, doubling
/// reaches it at the ninth attempt, and 25 attempts then span about 68 hours.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(4 * 60 * 60);
/// How long a name lookup of a new endpoint's host may take before the URL is refused.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The delivery settings (`webhook_*` of the configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSettings {
    /// Whether loopback, private and link-local targets are allowed (a local sandbox).
    pub allow_private_targets: bool,
    /// Attempts per event and endpoint, the first included.
    pub max_attempts: u32,
    /// The wait after the first failed attempt; each later one doubles it (with jitter).
    pub retry_initial: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            allow_private_targets: false,
            max_attempts: 25,
            retry_initial: Duration::from_millis(60_000),
            timeout: Duration::from_millis(10_000),
        }
    }
}

/// Failures of webhook operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Fields of the request are invalid: field path → message.
    #[error("invalid request: {0:?}")]
    Invalid(BTreeMap<String, String>),
    /// The URL may not receive webhooks; the message says why.
    #[error("{0}")]
    InvalidUrl(String),
    #[error("webhook endpoint not found")]
    EndpointNotFound,
    #[error("webhook delivery not found")]
    DeliveryNotFound,
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(WebhookError);

impl From<TargetError> for WebhookError {
    fn from(e: TargetError) -> Self {
        if let TargetError::Private(ip) = &e {
            tracing::info!(%ip, "webhook target refused: not a public address");
        }
        WebhookError::InvalidUrl(e.to_string())
    }
}

/// A new endpoint as the client asked for it.
#[derive(Debug, Clone, Default)]
pub struct NewEndpoint {
    pub url: String,
    pub description: Option<String>,
    pub enabled_events: Option<Vec<String>>,
}

/// The fields of an endpoint to change; `None` keeps a field.
#[derive(Debug, Clone, Default)]
pub struct EndpointUpdate {
    pub url: Option<String>,
    pub description: Option<String>,
    pub enabled_events: Option<Vec<String>>,
    pub is_disabled: Option<bool>,
}

/// `selectors` checked: each an event type or a `prefix.*` that some type starts with;
/// duplicates dropped, order kept.
pub fn check_selectors(selectors: &[String]) -> Result<Vec<String>, WebhookError> {
    let mut errors = BTreeMap::new();
    if selectors.len() > MAX_SELECTORS {
        errors.insert(
            "enabled_events".to_owned(),
            format!("at most {MAX_SELECTORS} event types"),
        );
    }
    let mut out: Vec<String> = Vec::with_capacity(selectors.len());
    for (i, selector) in selectors.iter().enumerate() {
        if !is_known_selector(selector) {
            errors.insert(
                format!("enabled_events[{i}]"),
                format!("unknown event type or prefix `{selector}`"),
            );
        } else if !out.contains(selector) {
            out.push(selector.clone());
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(WebhookError::Invalid(errors))
    }
}

fn is_known_selector(selector: &str) -> bool {
    match selector.strip_suffix(".*") {
        Some(prefix) => EventType::ALL
            .iter()
            .any(|t| t.as_str().starts_with(prefix) && t.as_str()[prefix.len()..].starts_with('.')),
        None => selector.parse::<EventType>().is_ok(),
    }
}

fn check_description(description: &str) -> Result<(), WebhookError> {
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(WebhookError::Invalid(BTreeMap::from([(
            "description".to_owned(),
            format!("at most {MAX_DESCRIPTION} characters"),
        )])));
    }
    Ok(())
}

/// `url` as an endpoint may hold it: the URL rules, then (unless private targets are allowed)
/// every address its host resolves to is public. Deliveries check the addresses again.
pub async fn check_url(url: &str, allow_private: bool) -> Result<WebhookTarget, WebhookError> {
    let target = WebhookTarget::parse(url)?;
    if !allow_private {
        match tokio::time::timeout(RESOLVE_TIMEOUT, webhook_targets::resolve(&target, false)).await
        {
            Ok(resolved) => {
                resolved?;
            }
            Err(_) => {
                return Err(TargetError::Unresolvable(target.host().to_owned()).into());
            }
        }
    }
    Ok(target)
}

/// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: `initial`
/// doubled per earlier failure, capped at [`MAX_RETRY_DELAY`], then spread by ±20 % (`jitter`
/// in 0.0..1.0) so receivers that failed together are not retried together.
pub fn next_attempt_delay(attempt: u32, initial: Duration, jitter: f64) -> Duration {
    let doublings = attempt.saturating_sub(1).min(30);
    let base = initial
        .saturating_mul(1u32 << doublings)
        .min(MAX_RETRY_DELAY);
    let factor = 0.8 + 0.4 * jitter.clamp(0.0, 1.0);
    base.mul_f64(factor)
}

/// The secrets that sign a delivery at `now`: the current one, and the one before the last
/// rotation while its overlap lasts. A stored secret that does not parse is corruption.
pub fn signing_secrets(
    endpoint: &WebhookEndpointRecord,
    now: DateTime<Utc>,
) -> Result<Vec<WebhookSecret>, StoreError> {
    let parse = |s: &str| {
        WebhookSecret::parse(s)
            .map_err(|e| StoreError::Corrupt(format!("secret of {}: {e}", endpoint.id)))
    };
    let mut secrets = vec![parse(&endpoint.secret)?];
    if let (Some(previous), Some(until)) = (&endpoint.previous_secret, endpoint.previous_expires_at)
        && now < until
    {
        secrets.push(parse(previous)?);
    }
    Ok(secrets)
}

/// Webhook endpoints and their delivery attempts.
pub struct WebhookEndpoints<'a> {
    pub(super) db: &'a Db,
    pub(super) clock: &'a dyn crate::clock::Clock,
    pub(super) settings: &'a WebhookSettings,
}

impl WebhookEndpoints<'_> {
    /// The settings deliveries follow.
    pub fn settings(&self) -> &WebhookSettings {
        self.settings
    }

    /// Registers an endpoint with a new secret.
    pub async fn create(
        &self,
        platform_id: &PlatformId,
        new: &NewEndpoint,
    ) -> Result<WebhookEndpointRecord, WebhookError> {
        let description = new.description.clone().unwrap_or_default();
        check_description(&description)?;
        let enabled_events = check_selectors(new.enabled_events.as_deref().unwrap_or(&[]))?;
        let target = check_url(&new.url, self.settings.allow_private_targets).await?;
        let now = self.clock.now();
        let record = WebhookEndpointRecord {
            id: WebhookEndpointId::generate(now),
            url: target.as_str().to_owned(),
            description,
            enabled_events,
            is_disabled: false,
            secret: WebhookSecret::generate().expose(),
            previous_secret: None,
            previous_expires_at: None,
            created_at: now,
            updated_at: now,
        };
        let record = &record;
        self.db
            .write(|tx| {
                Box::pin(async move {
                    if repo::count_endpoints(tx, platform_id).await? >= MAX_ENDPOINTS {
                        return Err(WebhookError::Invalid(BTreeMap::from([(
                            "webhook_endpoints".to_owned(),
                            format!("a platform has at most {MAX_ENDPOINTS} webhook endpoints"),
                        )])));
                    }
                    repo::insert_endpoint(tx, platform_id, record).await?;
                    Ok(())
                })
            })
            .await?;
        Ok(record.clone())
    }

    /// The platform's endpoint `id` (a malformed id is simply not found).
    pub async fn get(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<WebhookEndpointRecord, WebhookError> {
        super::get_one(
            self.db,
            platform_id,
            WebhookEndpointId::parse(id),
            || WebhookError::EndpointNotFound,
            |tx, p, id| Box::pin(repo::get_endpoint(tx, p, id)),
        )
        .await
    }

    /// One page of the platform's endpoints, newest first.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        request: &PageRequest,
    ) -> Result<Page<WebhookEndpointRecord>, WebhookError> {
        self.db
            .read(|tx| {
                Box::pin(async move { Ok(repo::page_endpoints(tx, platform_id, request).await?) })
            })
            .await
    }

    /// Changes the fields `update` sets.
    pub async fn update(
        &self,
        platform_id: &PlatformId,
        id: &str,
        update: &EndpointUpdate,
    ) -> Result<WebhookEndpointRecord, WebhookError> {
        let id = WebhookEndpointId::parse(id).ok_or(WebhookError::EndpointNotFound)?;
        if let Some(description) = &update.description {
            check_description(description)?;
        }
        let enabled_events = update
            .enabled_events
            .as_deref()
            .map(check_selectors)
            .transpose()?;
        let url = match &update.url {
            Some(url) => Some(
                check_url(url, self.settings.allow_private_targets)
                    .await?
                    .as_str()
                    .to_owned(),
            ),
            None => None,
        };
        let now = self.clock.now();
        self.change(platform_id, &id, |e| {
            if let Some(url) = &url {
                e.url = url.clone();
            }
            if let Some(description) = &update.description {
                e.description = description.clone();
            }
            if let Some(selectors) = &enabled_events {
                e.enabled_events = selectors.clone();
            }
            if let Some(disabled) = update.is_disabled {
                e.is_disabled = disabled;
            }
            e.updated_at = now;
        })
        .await
    }

    /// Gives the endpoint a new secret; the old one signs too for [`ROTATION_OVERLAP`].
    pub async fn rotate_secret(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<WebhookEndpointRecord, WebhookError> {
        let id = WebhookEndpointId::parse(id).ok_or(WebhookError::EndpointNotFound)?;
        let now = self.clock.now();
        let fresh = WebhookSecret::generate().expose();
        self.change(platform_id, &id, |e| {
            e.previous_secret = Some(std::mem::replace(&mut e.secret, fresh.clone()));
            e.previous_expires_at = Some(now + ROTATION_OVERLAP);
            e.updated_at = now;
        })
        .await
    }

    /// Reads the endpoint, applies `change` and writes it back, in one transaction.
    async fn change(
        &self,
        platform_id: &PlatformId,
        id: &WebhookEndpointId,
        change: impl Fn(&mut WebhookEndpointRecord) + Send + Sync,
    ) -> Result<WebhookEndpointRecord, WebhookError> {
        let change = &change;
        self.db
            .write(|tx| {
                Box::pin(async move {
                    let mut endpoint = repo::get_endpoint(tx, platform_id, id)
                        .await?
                        .ok_or(WebhookError::EndpointNotFound)?;
                    change(&mut endpoint);
                    repo::update_endpoint(tx, platform_id, &endpoint).await?;
                    Ok(endpoint)
                })
            })
            .await
    }

    /// Deletes the endpoint: from now on it is not found and is sent nothing. Its attempts, as
    /// many as it ever had, are removed afterwards in small transactions
    /// ([`Outbox::purge_deleted`]), so that a request never holds the database for them.
    pub async fn delete(&self, platform_id: &PlatformId, id: &str) -> Result<(), WebhookError> {
        let id = WebhookEndpointId::parse(id).ok_or(WebhookError::EndpointNotFound)?;
        let (id, now) = (&id, self.clock.now());
        let deleted = self
            .db
            .write(|tx| {
                Box::pin(async move {
                    Ok::<_, WebhookError>(repo::mark_deleted(tx, platform_id, id, now).await?)
                })
            })
            .await?;
        deleted.then_some(()).ok_or(WebhookError::EndpointNotFound)
    }

    /// One page of the endpoint's attempts, newest first.
    pub async fn deliveries(
        &self,
        platform_id: &PlatformId,
        endpoint_id: &str,
        request: &PageRequest,
    ) -> Result<Page<DeliveryRecord>, WebhookError> {
        let id = WebhookEndpointId::parse(endpoint_id).ok_or(WebhookError::EndpointNotFound)?;
        let id = &id;
        self.db
            .read(|tx| {
                Box::pin(async move {
                    repo::get_endpoint(tx, platform_id, id)
                        .await?
                        .ok_or(WebhookError::EndpointNotFound)?;
                    Ok(repo::page_deliveries(tx, platform_id, id, request).await?)
                })
            })
            .await
    }

    /// Schedules an attempt, due now, of the event of attempt `delivery_id`: the event's pending
    /// attempt to this endpoint if it has one (an automatic retry brought forward, or one under
    /// way), else a new one. An event so has at most one pending attempt per endpoint, and once
    /// it is delivered no retry scheduled earlier sends it again.
    pub async fn retry(
        &self,
        platform_id: &PlatformId,
        endpoint_id: &str,
        delivery_id: &str,
    ) -> Result<DeliveryRecord, WebhookError> {
        let endpoint_id =
            WebhookEndpointId::parse(endpoint_id).ok_or(WebhookError::EndpointNotFound)?;
        let delivery_id = WebhookDeliveryId::parse(delivery_id);
        let now = self.clock.now();
        let (endpoint_id, delivery_id) = (&endpoint_id, &delivery_id);
        self.db
            .write(|tx| {
                Box::pin(async move {
                    // Concurrent retries of one endpoint's events queue here, so that the second
                    // finds the attempt the first scheduled.
                    if !repo::lock_endpoint(tx, platform_id, endpoint_id).await? {
                        return Err(WebhookError::EndpointNotFound);
                    }
                    let id = delivery_id.as_ref().ok_or(WebhookError::DeliveryNotFound)?;
                    let earlier = repo::get_delivery(tx, platform_id, endpoint_id, id)
                        .await?
                        .ok_or(WebhookError::DeliveryNotFound)?;
                    if let Some(mut pending) =
                        repo::pending_attempt(tx, endpoint_id, &earlier.event_id).await?
                    {
                        if pending.next_attempt_at.is_none_or(|due| due > now) {
                            repo::reschedule(tx, &pending.id, now).await?;
                            pending.next_attempt_at = Some(now);
                        }
                        return Ok(pending);
                    }
                    let attempt = repo::last_attempt(tx, endpoint_id, &earlier.event_id).await?;
                    let next = pending(&earlier, attempt + 1, now, now);
                    repo::insert_delivery(tx, platform_id, &next).await?;
                    Ok(next)
                })
            })
            .await
    }
}

/// A new pending attempt of `earlier`'s event to its endpoint.
fn pending(
    earlier: &DeliveryRecord,
    attempt: i32,
    now: DateTime<Utc>,
    due: DateTime<Utc>,
) -> DeliveryRecord {
    DeliveryRecord {
        id: WebhookDeliveryId::generate(now),
        endpoint_id: earlier.endpoint_id.clone(),
        event_id: earlier.event_id.clone(),
        attempt,
        status: DeliveryStatus::Pending,
        response_status: None,
        latency_ms: None,
        error: None,
        created_at: now,
        next_attempt_at: Some(due),
    }
}

/// How long events and delivery attempts are kept; `None` keeps them for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention {
    pub events: Option<Duration>,
    pub attempts: Option<Duration>,
}

/// The worker's side of the outbox: claim due attempts, record their outcomes.
pub struct Outbox<'a> {
    pub(super) db: &'a Db,
    pub(super) clock: &'a dyn crate::clock::Clock,
    pub(super) settings: &'a WebhookSettings,
}

impl Outbox<'_> {
    /// The settings deliveries follow.
    pub fn settings(&self) -> &WebhookSettings {
        self.settings
    }

    /// One transaction of the worker: records `finished` attempts' outcomes (scheduling the
    /// next attempt of each failure with attempts left), then leases up to `limit` due attempts
    /// for `lease`. A worker under load so pays one write for the slots it frees and fills
    /// again, each carrying whatever finished meanwhile instead of one write per attempt or per
    /// claim. With nothing to record and `ask_first`, a read decides first whether anything is
    /// due, so that a worker polling an idle outbox takes no write transaction; a worker whose
    /// last claim filled its room knows more are likely due and skips it. `None` when there
    /// was nothing to write.
    pub async fn record_and_claim(
        &self,
        finished: &[RecordedAttempt],
        limit: i64,
        lease: Duration,
        ask_first: bool,
    ) -> Result<Option<Vec<ClaimedDelivery>>, StoreError> {
        let now = self.clock.now();
        if finished.is_empty()
            && (limit <= 0
                || ask_first
                    && !self
                        .db
                        .read_single(|tx| Box::pin(repo::any_due(tx, now)))
                        .await?)
        {
            return Ok(None);
        }
        let until = now + chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX);
        let settings = self.settings;
        self.db
            .write_row_locked(|tx| {
                Box::pin(async move {
                    for a in finished {
                        record_in(tx, now, settings, a).await?;
                    }
                    if limit > 0 {
                        repo::claim_due(tx, now, until, limit).await
                    } else {
                        Ok(Vec::new())
                    }
                })
            })
            .await
            .map(Some)
    }

    /// Deletes what is older than its retention, `chunk` rows a transaction (as
    /// [`Outbox::purge_deleted`] does): first finished attempts, then events with their
    /// attempts (an event an attempt still has to send is kept until it is sent). Answers how
    /// many attempts and events.
    pub async fn purge_expired(
        &self,
        retention: &Retention,
        chunk: u32,
    ) -> Result<(u64, u64), StoreError> {
        let now = self.clock.now();
        let attempts = match retention.attempts {
            None => 0,
            Some(keep) => {
                let before = now - TimeDelta::from_std(keep).unwrap_or(TimeDelta::MAX);
                self.db
                    .delete_in_chunks(chunk, |tx, n| {
                        Box::pin(repo::delete_attempts_created_before(tx, before, n))
                    })
                    .await?
            }
        };
        let events = match retention.events {
            None => 0,
            Some(keep) => {
                let before = now - TimeDelta::from_std(keep).unwrap_or(TimeDelta::MAX);
                self.db
                    .delete_in_chunks(chunk, |tx, n| {
                        Box::pin(repo::delete_events_created_before(tx, before, n))
                    })
                    .await?
            }
        };
        Ok((attempts, events))
    }

    /// Removes the attempts of deleted endpoints, `chunk` a transaction, then the endpoints'
    /// rows; how many attempts. After each chunk it pauses three times as long as the chunk held
    /// the database (as the idempotency keys' purge does), so a large purge takes at most about
    /// a quarter of SQLite's one writer. With nothing deleted it only reads.
    pub async fn purge_deleted(&self, chunk: u32) -> Result<u64, StoreError> {
        if !self
            .db
            .read_single(|tx| Box::pin(repo::any_deleted(tx)))
            .await?
        {
            return Ok(0);
        }
        let total = self
            .db
            .delete_in_chunks(chunk, |tx, n| {
                Box::pin(repo::delete_attempts_of_deleted(tx, n))
            })
            .await?;
        self.db
            .write(|tx| Box::pin(repo::delete_emptied_endpoints(tx)))
            .await?;
        Ok(total)
    }
}

/// One attempt made: what was claimed, how it went, and the jitter (0..1) of its retry delay.
#[derive(Debug)]
pub struct RecordedAttempt {
    pub claimed: ClaimedDelivery,
    pub outcome: AttemptOutcome,
    pub jitter: f64,
}

async fn record_in(
    tx: &mut Tx<'_>,
    now: DateTime<Utc>,
    settings: &WebhookSettings,
    attempt: &RecordedAttempt,
) -> Result<(), StoreError> {
    let RecordedAttempt {
        claimed,
        outcome,
        jitter,
    } = attempt;
    let d = &claimed.delivery;
    let recorded = repo::record_attempt(tx, &d.id, outcome).await?;
    let attempts_left = u32::try_from(d.attempt).unwrap_or(u32::MAX) < settings.max_attempts;
    if recorded && !outcome.succeeded && attempts_left && !claimed.endpoint.is_disabled {
        let delay = next_attempt_delay(d.attempt as u32, settings.retry_initial, *jitter);
        let due = now + chrono::TimeDelta::from_std(delay).unwrap_or(chrono::TimeDelta::MAX);
        let next = pending(d, d.attempt + 1, now, due);
        repo::insert_delivery(tx, &claimed.platform_id, &next).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_types_or_prefixes_of_types() {
        let ok = check_selectors(&[
            "book.transfer.*".to_owned(),
            "entity.created".to_owned(),
            "book.*".to_owned(),
            "entity.created".to_owned(),
        ])
        .expect("known selectors");
        assert_eq!(ok, ["book.transfer.*", "entity.created", "book.*"]);
        let Err(WebhookError::Invalid(details)) = check_selectors(&[
            "entity.created".to_owned(),
            "entity.exploded".to_owned(),
            "boo.*".to_owned(),
            "*".to_owned(),
            "book.transfer".to_owned(),
        ]) else {
            panic!("unknown selectors must be refused");
        };
        assert_eq!(
            details.keys().collect::<Vec<_>>(),
            [
                "enabled_events[1]",
                "enabled_events[2]",
                "enabled_events[3]",
                "enabled_events[4]"
            ]
        );
    }

    #[test]
    fn the_wait_doubles_from_the_first_is_capped_and_jittered_by_a_fifth() {
        let initial = Duration::from_secs(60);
        assert_eq!(next_attempt_delay(1, initial, 0.5), Duration::from_secs(60));
        assert_eq!(
            next_attempt_delay(2, initial, 0.5),
            Duration::from_secs(120)
        );
        assert_eq!(
            next_attempt_delay(4, initial, 0.5),
            Duration::from_secs(480)
        );
        assert_eq!(next_attempt_delay(24, initial, 0.5), MAX_RETRY_DELAY);
        assert_eq!(next_attempt_delay(1, initial, 0.0), Duration::from_secs(48));
        assert_eq!(next_attempt_delay(1, initial, 1.0), Duration::from_secs(72));
        let total: Duration = (1..25).map(|a| next_attempt_delay(a, initial, 0.5)).sum();
        let hours = total.as_secs_f64() / 3600.0;
        assert!(
            (60.0..80.0).contains(&hours),
            "25 attempts span {hours} hours"
        );
    }

    #[test]
    fn the_previous_secret_signs_until_its_overlap_ends() {
        let now = Utc::now();
        let mut e = WebhookEndpointRecord {
            id: WebhookEndpointId::generate(now),
            url: "https://example.com/hook".to_owned(),
            description: String::new(),
            enabled_events: Vec::new(),
            is_disabled: false,
            secret: WebhookSecret::generate().expose(),
            previous_secret: Some(WebhookSecret::generate().expose()),
            previous_expires_at: Some(now + ROTATION_OVERLAP),
            created_at: now,
            updated_at: now,
        };
        assert_eq!(signing_secrets(&e, now).expect("secrets").len(), 2);
        let later = now + ROTATION_OVERLAP;
        assert_eq!(signing_secrets(&e, later).expect("secrets").len(), 1);
        e.secret = "not base64!".to_owned();
        assert!(signing_secrets(&e, now).is_err());
    }
}
