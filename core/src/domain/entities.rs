//! Entities (persons and businesses): creation and update with sandbox verification, deletion,
//! associated persons and additional compliance requirements.
//!
//! Validation is split by the contract's error precedence: [`PersonChanges::parse`],
//! [`BusinessChanges::parse`], [`NewAssociation::parse`] and the additional-requirements check
//! judge the request's shape (400 `invalid_request` / `invalid_additional_requirements`) before
//! anything is looked up; the operations then answer 404 for entities that are absent, deleted or
//! another platform's, and only then apply business rules (type mismatch, already linked, bank
//! accounts still open).
//!
//! Sandbox verification is the only verification this server has, so it runs for `test_` and
//! `live_` keys alike (they see the same data): `VERIFIED`, except a `last_name` /
//! `business_name` of exactly `Review` (`MANUAL_REVIEW`, one review reason) or `Denied`.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};

use crate::clock::Clock;
use crate::domain::documents::{self, LinkSigner};
use crate::domain::events::{self, EventData};
use crate::idempotency::{self, WriteError, WriteRequest, Written};
use crate::model::documents::{DocumentRecord, SignedDocument};
use crate::model::entities::{
    Address, AssociatedPersonRole, BusinessFields, PersonFields, RequirementField,
    RequirementFieldType, RequirementValue,
};
use crate::model::entities::{
    AssociationRecord, EntityDetails, EntityFilter, EntityRecord, EntityRow, EntityType,
    VerificationStatus,
};
use crate::model::events::EventType;
use crate::model::ids::{EntityId, PlatformId};
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::store::documents as documents_repo;
use crate::store::entities::{self as repo, Lock};
use crate::store::{StoreError, Tx, platforms};

/// The review reason the sandbox gives a `Review` name.
pub const SANDBOX_REVIEW_REASON: &str = "other_review_reason";

/// Failures of entity operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum EntityError {
    #[error("entity not found")]
    NotFound,
    /// Fields of the request are invalid; field path → message.
    #[error("invalid request")]
    InvalidFields(BTreeMap<String, String>),
    #[error("{0}")]
    TypeMismatch(&'static str),
    #[error("the person is already associated with this business")]
    AlreadyLinked,
    #[error("the entity still owns bank accounts that are not deleted")]
    HasBankAccounts,
    /// Submitted additional requirements are invalid; field name → message.
    #[error("invalid additional requirements")]
    InvalidAdditionalRequirements(BTreeMap<String, String>),
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(EntityError);

/// Collects field errors so that one answer names every offending field.
#[derive(Default)]
struct FieldErrors(BTreeMap<String, String>);

impl FieldErrors {
    fn add(&mut self, field: &str, message: impl Into<String>) {
        self.0
            .entry(field.to_owned())
            .or_insert_with(|| message.into());
    }

    fn finish<T>(self, value: T) -> Result<T, EntityError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(EntityError::InvalidFields(self.0))
        }
    }
}

/// A name field: trimmed, and not blank.
fn name_field(errors: &mut FieldErrors, field: &str, value: Option<String>) -> Option<String> {
    let value = value?.trim().to_owned();
    if value.is_empty() || value.chars().any(char::is_control) {
        errors.add(field, "must not be blank or contain control characters");
        return None;
    }
    Some(value)
}

/// An optional free-text field: trimmed; blank means "not given".
fn text_field(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// A plain email address: `local@domain.tld`, no spaces, quotes or angle brackets, at most 254
/// characters, a domain of dot-separated letter/digit/hyphen labels.
pub fn is_plain_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    text.len() <= 254 && local_ok && domain_ok
}

/// An absolute URI: a scheme, a colon and at least one more visible character, no spaces.
fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut s = scheme.bytes();
    s.next().is_some_and(|b| b.is_ascii_alphabetic())
        && s.all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_graphic())
}

/// Validated changes to a PERSON (creation is "every required field present").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PersonChanges {
    pub first_name: Option<String>,
    pub middle_name: Option<String>,
    pub last_name: Option<String>,
    pub date_of_birth: Option<NaiveDate>,
    pub email: Option<String>,
    /// The last four digits of a submitted SSN; the rest is dropped here and never stored.
    pub ssn_last_4: Option<String>,
    pub address: Option<Address>,
}

impl PersonChanges {
    /// Validates the fields of a person request; `today` bounds the date of birth.
    pub fn parse(req: PersonFields, today: NaiveDate) -> Result<PersonChanges, EntityError> {
        let mut errors = FieldErrors::default();
        let first_name = name_field(&mut errors, "first_name", req.first_name);
        let last_name = name_field(&mut errors, "last_name", req.last_name);
        if req.date_of_birth.is_some_and(|dob| dob > today) {
            errors.add("date_of_birth", "must not be in the future");
        }
        let email = req.email.map(|e| e.trim().to_owned());
        if email.as_deref().is_some_and(|e| !is_plain_email(e)) {
            errors.add("email", "must be a plain email address (name@example.com)");
        }
        let ssn_last_4 = match req.ssn {
            None => None,
            Some(ssn) if ssn.len() == 9 && ssn.bytes().all(|b| b.is_ascii_digit()) => {
                Some(ssn[5..].to_owned())
            }
            Some(_) => {
                errors.add("ssn", "must be 9 digits without separators");
                None
            }
        };
        let changes = PersonChanges {
            first_name,
            middle_name: text_field(req.middle_name),
            last_name,
            date_of_birth: req.date_of_birth,
            email,
            ssn_last_4,
            address: req.address,
        };
        errors.finish(changes)
    }
}

/// Validated changes to a BUSINESS: the request's fields, checked and normalised (names and
/// texts trimmed); only [`BusinessChanges::parse`] makes one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BusinessChanges(BusinessFields);

impl BusinessChanges {
    pub fn parse(req: BusinessFields) -> Result<BusinessChanges, EntityError> {
        let mut errors = FieldErrors::default();
        let business_name = name_field(&mut errors, "business_name", req.business_name);
        let website = req.website.map(|w| w.trim().to_owned());
        if website.as_deref().is_some_and(|w| !is_uri(w)) {
            errors.add("website", "must be an absolute URI (https://example.com)");
        }
        let ein_ok = |ein: &str| ein.len() == 9 && ein.bytes().all(|b| b.is_ascii_digit());
        if req.ein.as_deref().is_some_and(|ein| !ein_ok(ein)) {
            errors.add("ein", "must be 9 digits without separators");
        }
        let changes = BusinessChanges(BusinessFields {
            business_name,
            address: req.address,
            countries_of_operation: req.countries_of_operation,
            description: text_field(req.description),
            ein: req.ein,
            industry: text_field(req.industry),
            legal_type: text_field(req.legal_type),
            state_of_incorporation: text_field(req.state_of_incorporation),
            website,
            year_of_incorporation: req.year_of_incorporation,
        });
        errors.finish(changes)
    }
}

/// The sandbox verification outcome for a person's last name or a business name.
pub fn sandbox_verification(name: &str) -> (VerificationStatus, Vec<String>) {
    match name {
        "Review" => (
            VerificationStatus::ManualReview,
            vec![SANDBOX_REVIEW_REASON.to_owned()],
        ),
        "Denied" => (VerificationStatus::Denied, Vec::new()),
        _ => (VerificationStatus::Verified, Vec::new()),
    }
}

/// Sets name and verification from the type's fields. The root entity was verified with its
/// platform and stays so: other accounts of the platform depend on it.
fn reverify(row: &mut EntityRow) {
    let core = &mut row.core;
    let (name, magic) = if core.entity_type == EntityType::Person {
        let first = core.first_name.clone().unwrap_or_default();
        let last = core.last_name.clone().unwrap_or_default();
        (format!("{first} {last}"), last)
    } else {
        let name = core.business_name.clone().unwrap_or_default();
        (name.clone(), name)
    };
    core.name = name;
    if core.is_root {
        return;
    }
    let (status, reasons) = sandbox_verification(&magic);
    core.verification_status = status;
    row.details.review_reasons = reasons;
}

fn apply_person(row: &mut EntityRow, c: &PersonChanges) {
    let (core, d) = (&mut row.core, &mut row.details);
    if let Some(v) = &c.first_name {
        core.first_name = Some(v.clone());
    }
    if let Some(v) = &c.last_name {
        core.last_name = Some(v.clone());
    }
    if c.middle_name.is_some() {
        d.middle_name.clone_from(&c.middle_name);
    }
    if c.date_of_birth.is_some() {
        d.date_of_birth = c.date_of_birth;
    }
    if c.email.is_some() {
        d.email.clone_from(&c.email);
    }
    if c.ssn_last_4.is_some() {
        d.ssn_last_4.clone_from(&c.ssn_last_4);
    }
    if c.address.is_some() {
        d.address.clone_from(&c.address);
    }
    reverify(row);
}

fn apply_business(row: &mut EntityRow, BusinessChanges(c): &BusinessChanges) {
    let (core, d) = (&mut row.core, &mut row.details);
    if let Some(v) = &c.business_name {
        core.business_name = Some(v.clone());
    }
    let replace = |target: &mut Option<String>, value: &Option<String>| {
        if value.is_some() {
            target.clone_from(value);
        }
    };
    replace(&mut d.description, &c.description);
    replace(&mut d.ein, &c.ein);
    replace(&mut d.industry, &c.industry);
    replace(&mut d.legal_type, &c.legal_type);
    replace(&mut d.state_of_incorporation, &c.state_of_incorporation);
    replace(&mut d.website, &c.website);
    replace(&mut d.year_of_incorporation, &c.year_of_incorporation);
    if let Some(countries) = &c.countries_of_operation {
        d.countries_of_operation.clone_from(countries);
    }
    if c.address.is_some() {
        d.address.clone_from(&c.address);
    }
    reverify(row);
}

fn new_row(platform_id: &PlatformId, entity_type: EntityType, now: DateTime<Utc>) -> EntityRow {
    EntityRow {
        core: EntityRecord {
            id: EntityId::generate(now),
            platform_id: platform_id.clone(),
            entity_type,
            name: String::new(),
            is_root: false,
            requires_screening: false,
            verification_status: VerificationStatus::Unverified,
            first_name: None,
            last_name: None,
            business_name: None,
            created_at: now,
            updated_at: now,
        },
        details: EntityDetails::default(),
    }
}

/// Creates a PERSON or a BUSINESS inside `tx` (the caller's idempotent write transaction).
async fn create_in(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    changes: &EntityChanges,
) -> Result<EntityRow, EntityError> {
    let mut row;
    match changes {
        EntityChanges::Person(c) => {
            row = new_row(platform_id, EntityType::Person, clock.now());
            apply_person(&mut row, c);
        }
        EntityChanges::Business(c) => {
            row = new_row(platform_id, EntityType::Business, clock.now());
            apply_business(&mut row, c);
        }
    }
    repo::insert_full(tx, &row).await?;
    let view = EntityView {
        entity: row.clone(),
        documents: Vec::new(),
    };
    record_event(
        tx,
        platform_id,
        row.core.created_at,
        EventType::EntityCreated,
        view,
    )
    .await?;
    Ok(row)
}

/// An event about an entity, in the change's transaction.
async fn record_event(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    event_type: EventType,
    view: EntityView,
) -> Result<(), StoreError> {
    let data = EventData::Entity(Box::new(view));
    events::record(tx, now, platform_id, event_type, data).await
}

/// The entity as its GET shows it, read in `tx`.
async fn view_in(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    row: EntityRow,
) -> Result<EntityView, StoreError> {
    let documents = documents_repo::list_for_entities(tx, platform_id, &[&row.core.id]).await?;
    let key = documents::signing_key_in(tx, clock).await?;
    Ok(LinkSigner::new(key, clock.now()).view(row, documents))
}

/// An entity with its documents (newest first), as the entity record shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntityView {
    pub entity: EntityRow,
    pub documents: Vec<SignedDocument>,
}

impl LinkSigner {
    /// `entity` with `documents`, their links signed.
    fn view(&self, entity: EntityRow, documents: Vec<DocumentRecord>) -> EntityView {
        EntityView {
            entity,
            documents: documents.into_iter().map(|d| self.sign(d)).collect(),
        }
    }
}

/// The validated fields of a creation or a PATCH, by entity type.
#[derive(Debug, Clone)]
pub enum EntityChanges {
    Person(PersonChanges),
    Business(BusinessChanges),
}

super::service! {
    /// Entities, their associated persons and additional requirements, each operation in its
    /// own transaction.
    Entities
}

impl Entities<'_> {
    /// Creates a PERSON or a BUSINESS, at most once per `Idempotency-Key`.
    pub async fn create(
        &self,
        platform_id: &PlatformId,
        changes: &EntityChanges,
        write: WriteRequest<'_>,
    ) -> Result<Written<EntityRow>, WriteError<EntityError>> {
        let clock = self.clock;
        idempotency::write(self.db, clock, platform_id, write, |tx| {
            Box::pin(create_in(tx, clock, platform_id, changes))
        })
        .await
    }

    /// Applies a PATCH to a live entity of the platform (404 otherwise; 400 for the wrong type).
    pub async fn update(
        &self,
        platform_id: &PlatformId,
        id: &str,
        changes: &EntityChanges,
    ) -> Result<EntityView, EntityError> {
        let db = self.db;
        let clock = self.clock;
        let id = EntityId::parse(id).ok_or(EntityError::NotFound)?;
        db.write(|tx| {
            let id = &id;
            Box::pin(async move {
                let mut row = live(tx, platform_id, id, Lock::ForChange).await?;
                match changes {
                    EntityChanges::Person(c) if row.core.entity_type == EntityType::Person => {
                        apply_person(&mut row, c)
                    }
                    EntityChanges::Business(c) if row.core.entity_type == EntityType::Business => {
                        apply_business(&mut row, c)
                    }
                    EntityChanges::Person(_) => {
                        return Err(EntityError::TypeMismatch("the entity is not a PERSON"));
                    }
                    EntityChanges::Business(_) => {
                        return Err(EntityError::TypeMismatch("the entity is not a BUSINESS"));
                    }
                }
                let now = clock.now();
                row.core.updated_at = now;
                if !repo::update_full(tx, &row).await? {
                    return Err(EntityError::NotFound);
                }
                let view = view_in(tx, clock, platform_id, row).await?;
                record_event(tx, platform_id, now, EventType::EntityUpdated, view.clone()).await?;
                Ok(view)
            })
        })
        .await
    }

    /// One live entity of the platform with its documents.
    pub async fn get(&self, platform_id: &PlatformId, id: &str) -> Result<EntityView, EntityError> {
        let db = self.db;
        let clock = self.clock;
        let id = EntityId::parse(id).ok_or(EntityError::NotFound)?;
        let key = documents::signing_key(db, clock).await?;
        let view = db
            .read(|tx| {
                let id = &id;
                Box::pin(async move {
                    let entity = live(tx, platform_id, id, Lock::None).await?;
                    let documents =
                        documents_repo::list_for_entities(tx, platform_id, &[id]).await?;
                    Ok::<_, EntityError>((entity, documents))
                })
            })
            .await?;
        Ok(LinkSigner::new(key, clock.now()).view(view.0, view.1))
    }

    /// One page of the platform's live entities, each with its documents.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        filter: &EntityFilter,
        request: &PageRequest,
    ) -> Result<Page<EntityView>, EntityError> {
        let db = self.db;
        let clock = self.clock;
        let key = documents::signing_key(db, clock).await?;
        let page = db
            .read(|tx| {
                Box::pin(async move {
                    let page = repo::list_full(tx, platform_id, filter, request).await?;
                    let ids: Vec<&EntityId> = page.items.iter().map(|e| &e.core.id).collect();
                    let mut documents =
                        documents_repo::list_for_entities(tx, platform_id, &ids).await?;
                    let items = page
                        .items
                        .iter()
                        .map(|entity| {
                            // `documents` is newest first; extracting keeps that order per entity.
                            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut documents)
                                .into_iter()
                                .partition(|d| d.entity_id.as_ref() == Some(&entity.core.id));
                            documents = rest;
                            (entity.clone(), mine)
                        })
                        .collect();
                    Ok::<_, EntityError>(Page {
                        items,
                        has_more: page.has_more,
                    })
                })
            })
            .await?;
        let signer = LinkSigner::new(key, clock.now());
        Ok(page.map(|(entity, documents)| signer.view(entity, documents)))
    }

    /// Deletes a live entity that owns no bank account that is still open or frozen.
    pub async fn delete(&self, platform_id: &PlatformId, id: &str) -> Result<(), EntityError> {
        let db = self.db;
        let clock = self.clock;
        let id = EntityId::parse(id).ok_or(EntityError::NotFound)?;
        db.write(|tx| {
            let id = &id;
            Box::pin(async move {
                // Locked for delete: a transaction adding this entity as an owner holds a KEY SHARE
                // lock on the row (its foreign-key check), so this waits for it and then sees the
                // new owner. TODO-correctness: a transaction that read the entity as live before this
                // commit and inserts its owner after it can still slip in on PostgreSQL, unless it
                // re-reads the entity with a lock.
                let row = live(tx, platform_id, id, Lock::ForDelete).await?;
                if repo::owns_unclosed_bank_accounts(tx, platform_id, id).await? {
                    return Err(EntityError::HasBankAccounts);
                }
                let now = clock.now();
                // The event shows the entity as its last GET did.
                let view = view_in(tx, clock, platform_id, row).await?;
                if !repo::mark_deleted(tx, platform_id, id, now).await? {
                    return Err(EntityError::NotFound);
                }
                record_event(tx, platform_id, now, EventType::EntityDeleted, view).await?;
                Ok(())
            })
        })
        .await
    }

    /// Links a PERSON to a BUSINESS of the same platform.
    pub async fn create_association(
        &self,
        platform_id: &PlatformId,
        business_id: &str,
        new: &NewAssociation,
    ) -> Result<(AssociationRecord, EntityRow), EntityError> {
        let db = self.db;
        let clock = self.clock;
        let business_id = EntityId::parse(business_id).ok_or(EntityError::NotFound)?;
        let person_id = EntityId::parse(&new.person_entity_id).ok_or(EntityError::NotFound)?;
        db.write(|tx| {
            let (business_id, person_id) = (&business_id, &person_id);
            Box::pin(async move {
                // Both lookups come before the type checks: 404 precedes business-rule 400s.
                let business = live(tx, platform_id, business_id, Lock::None).await?;
                let person = live(tx, platform_id, person_id, Lock::None).await?;
                if business.core.entity_type != EntityType::Business {
                    return Err(EntityError::TypeMismatch(
                        "the entity in the path is not a BUSINESS",
                    ));
                }
                if person.core.entity_type != EntityType::Person {
                    return Err(EntityError::TypeMismatch(
                        "person_entity_id is not a PERSON entity",
                    ));
                }
                let link = AssociationRecord {
                    platform_id: platform_id.clone(),
                    business_entity_id: business_id.clone(),
                    person_entity_id: person_id.clone(),
                    roles: new.roles.clone(),
                    title_in_business: new.title_in_business.clone(),
                    created_at: clock.now(),
                };
                if !repo::insert_association(tx, &link).await? {
                    return Err(EntityError::AlreadyLinked);
                }
                Ok((link, person))
            })
        })
        .await
    }

    /// One page of the persons linked to a BUSINESS, newest link first.
    pub async fn list_associations(
        &self,
        platform_id: &PlatformId,
        business_id: &str,
        request: &PageRequest,
    ) -> Result<Page<(AssociationRecord, EntityRow)>, EntityError> {
        let db = self.db;
        let business_id = EntityId::parse(business_id).ok_or(EntityError::NotFound)?;
        db.read(|tx| {
            let business_id = &business_id;
            Box::pin(async move {
                let business = live(tx, platform_id, business_id, Lock::None).await?;
                if business.core.entity_type != EntityType::Business {
                    return Err(EntityError::TypeMismatch(
                        "the entity in the path is not a BUSINESS",
                    ));
                }
                Ok(repo::list_associations(tx, platform_id, business_id, request).await?)
            })
        })
        .await
    }

    /// The additional requirements of a live entity.
    pub async fn get_requirements(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<RequirementsView, EntityError> {
        let db = self.db;
        let id = EntityId::parse(id).ok_or(EntityError::NotFound)?;
        db.read(|tx| {
            let id = &id;
            Box::pin(async move {
                let row = live(tx, platform_id, id, Lock::None).await?;
                let fields = requirement_fields(tx, platform_id).await?;
                Ok(view_of(&row, &fields))
            })
        })
        .await
    }

    /// Validates `submitted` against the platform's list and merges it into the entity's values.
    pub async fn submit_requirements(
        &self,
        platform_id: &PlatformId,
        id: &str,
        submitted: &BTreeMap<String, serde_json::Value>,
    ) -> Result<RequirementsView, EntityError> {
        let db = self.db;
        let clock = self.clock;
        let id = EntityId::parse(id);
        db.write(|tx| {
            let id = &id;
            Box::pin(async move {
                // The values are judged first (a 400 for the request's shape precedes the 404).
                let fields = requirement_fields(tx, platform_id).await?;
                let submitted = validate_requirements(&fields, submitted)?;
                let id = id.as_ref().ok_or(EntityError::NotFound)?;
                let mut row = live(tx, platform_id, id, Lock::ForChange).await?;
                if !submitted.is_empty() {
                    let now = clock.now();
                    let merged = &mut row.details.additional_requirements;
                    merged.extend(submitted.iter().map(|(k, v)| (k.clone(), v.clone())));
                    if !repo::set_additional_requirements(tx, platform_id, id, merged, now).await? {
                        return Err(EntityError::NotFound);
                    }
                    row.details.additional_requirements_updated_at = Some(now);
                }
                Ok(view_of(&row, &fields))
            })
        })
        .await
    }
}

// ---------------------------------------------------------------------------------------------
// Associated persons
// ---------------------------------------------------------------------------------------------

/// A validated request to link a person to a business.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAssociation {
    /// As sent: a malformed id is "not found" like an unknown one.
    pub person_entity_id: String,
    pub roles: Vec<AssociatedPersonRole>,
    pub title_in_business: Option<String>,
}

impl NewAssociation {
    pub fn parse(
        person_entity_id: String,
        roles: Vec<AssociatedPersonRole>,
        title_in_business: Option<String>,
    ) -> Result<NewAssociation, EntityError> {
        let mut errors = FieldErrors::default();
        if roles.is_empty() {
            errors.add("roles", "must name at least one role");
        }
        let mut seen = roles.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != roles.len() {
            errors.add("roles", "must not repeat a role");
        }
        let new = NewAssociation {
            person_entity_id,
            roles,
            title_in_business: text_field(title_in_business),
        };
        errors.finish(new)
    }
}

// ---------------------------------------------------------------------------------------------
// Additional requirements
// ---------------------------------------------------------------------------------------------

/// What an entity submitted and which required fields are still missing.
#[derive(Debug, Clone, PartialEq)]
pub struct RequirementsView {
    pub entity_id: EntityId,
    pub submitted: BTreeMap<String, RequirementValue>,
    /// In the order of the platform's field list.
    pub missing: Vec<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// The platform's field list, as `PATCH /platform` stored it.
async fn requirement_fields(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
) -> Result<Vec<RequirementField>, StoreError> {
    let platform = platforms::get(tx, platform_id)
        .await?
        .ok_or_else(|| StoreError::Corrupt("the caller's platform does not exist".into()))?;
    serde_json::from_str(&platform.additional_requirements)
        .map_err(|e| StoreError::Corrupt(format!("platforms.additional_requirements: {e}")))
}

fn view_of(row: &EntityRow, fields: &[RequirementField]) -> RequirementsView {
    let submitted = row.details.additional_requirements.clone();
    let missing = fields
        .iter()
        .filter(|f| f.required && !submitted.contains_key(&f.name))
        .map(|f| f.name.clone())
        .collect();
    RequirementsView {
        entity_id: row.core.id.clone(),
        submitted,
        missing,
        updated_at: row.details.additional_requirements_updated_at,
    }
}

/// The typed value `value` gives `field`, or why it does not fit it (any JSON value may be
/// submitted: a wrong JSON type is a message like any other invalid value).
pub fn check_requirement(
    field: &RequirementField,
    value: &serde_json::Value,
) -> Result<RequirementValue, String> {
    use RequirementFieldType as T;
    use serde_json::Value as J;
    let text = match (field.field_type, value) {
        (T::Boolean, J::Bool(b)) => return Ok(RequirementValue::Boolean(*b)),
        (T::Integer, J::Number(n)) if n.as_i64().is_some() => {
            return Ok(RequirementValue::Integer(n.as_i64().unwrap_or_default()));
        }
        (T::Boolean, _) => return Err("must be a boolean".into()),
        (T::Integer, _) => return Err("must be an integer".into()),
        (_, J::String(s)) => s,
        (_, _) => return Err("must be a string".into()),
    };
    if let Some(max) = field.max_length
        && i64::try_from(text.chars().count()).unwrap_or(i64::MAX) > i64::from(max)
    {
        return Err(format!("must be at most {max} characters long"));
    }
    match field.field_type {
        T::Email if !is_plain_email(text) => {
            Err("must be a plain email address (name@example.com)".into())
        }
        T::Phone if !is_e164(text) => {
            Err("must be an E.164 phone number (+ and 8 to 15 digits)".into())
        }
        T::Date if text.len() != 10 || NaiveDate::parse_from_str(text, "%Y-%m-%d").is_err() => {
            Err("must be a date (YYYY-MM-DD)".into())
        }
        T::Enum if !field.values.as_ref().is_some_and(|v| v.contains(text)) => Err(format!(
            "must be one of {}",
            field.values.as_deref().unwrap_or_default().join(", ")
        )),
        _ => Ok(RequirementValue::String(text.clone())),
    }
}

/// `+` followed by 8 to 15 digits.
fn is_e164(text: &str) -> bool {
    text.strip_prefix('+').is_some_and(|digits| {
        (8..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Validates every submitted value against the platform's list (one message per bad field) and
/// returns them typed.
pub fn validate_requirements(
    fields: &[RequirementField],
    submitted: &BTreeMap<String, serde_json::Value>,
) -> Result<BTreeMap<String, RequirementValue>, EntityError> {
    let mut errors = BTreeMap::new();
    let mut valid = BTreeMap::new();
    for (name, value) in submitted {
        match fields.iter().find(|f| &f.name == name) {
            None => {
                errors.insert(
                    name.clone(),
                    "is not an additional requirement of this platform".to_owned(),
                );
            }
            Some(field) => match check_requirement(field, value) {
                Ok(v) => {
                    valid.insert(name.clone(), v);
                }
                Err(message) => {
                    errors.insert(name.clone(), message);
                }
            },
        }
    }
    if errors.is_empty() {
        Ok(valid)
    } else {
        Err(EntityError::InvalidAdditionalRequirements(errors))
    }
}

/// The platform's live entity `id`, or [`EntityError::NotFound`].
async fn live(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    id: &EntityId,
    lock: Lock,
) -> Result<EntityRow, EntityError> {
    repo::get_full(tx, platform_id, id, lock)
        .await?
        .ok_or(EntityError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, t: RequirementFieldType) -> RequirementField {
        RequirementField {
            name: name.into(),
            field_type: t,
            required: false,
            values: None,
            max_length: None,
        }
    }

    #[test]
    fn plain_emails_are_accepted_and_others_refused() {
        for ok in ["a@b.co", "first.last+tag@sub.example.org", "x_y@a-b.io"] {
            assert!(is_plain_email(ok), "{ok}");
        }
        for bad in [
            "", "a", "a@b", "@b.co", "a@.co", "a@b..co", "a b@c.co", "<a@b.co>", "a@b.co ",
            "a@@b.co", ".a@b.co", "a@-b.co",
        ] {
            assert!(!is_plain_email(bad), "{bad}");
        }
    }

    #[test]
    fn phones_must_be_e164() {
        assert!(is_e164("+14155550123"));
        assert!(is_e164("+12345678"));
        assert!(!is_e164("+1234567"));
        assert!(!is_e164("+1234567890123456"));
        assert!(!is_e164("14155550123"));
        assert!(!is_e164("+1 415 555 0123"));
    }

    #[test]
    fn requirement_values_follow_their_field_type() {
        use RequirementFieldType as T;
        use serde_json::json;
        let s = |t: &str| json!(t);
        assert_eq!(
            check_requirement(&field("a", T::Boolean), &json!(true)),
            Ok(RequirementValue::Boolean(true))
        );
        assert!(check_requirement(&field("a", T::Boolean), &s("true")).is_err());
        assert_eq!(
            check_requirement(&field("a", T::Integer), &json!(3)),
            Ok(RequirementValue::Integer(3))
        );
        assert!(check_requirement(&field("a", T::Integer), &s("3")).is_err());
        // Not an integer, whatever JSON calls it: the field's message, not a shape error.
        for not_integer in [json!(12.5), json!(null), json!([1]), json!(1e300)] {
            assert_eq!(
                check_requirement(&field("a", T::Integer), &not_integer),
                Err("must be an integer".to_string())
            );
        }
        assert!(check_requirement(&field("a", T::String), &json!(3)).is_err());
        assert!(check_requirement(&field("a", T::String), &json!({"x": 1})).is_err());
        assert!(check_requirement(&field("a", T::Date), &s("2024-02-29")).is_ok());
        assert!(check_requirement(&field("a", T::Date), &s("2023-02-29")).is_err());
        assert!(check_requirement(&field("a", T::Date), &s("2024-2-9")).is_err());
        assert!(check_requirement(&field("a", T::Phone), &s("+4930123456")).is_ok());
        assert!(check_requirement(&field("a", T::Email), &s("nope")).is_err());
        let mut limited = field("a", T::String);
        limited.max_length = Some(3);
        assert!(check_requirement(&limited, &s("abc")).is_ok());
        assert!(check_requirement(&limited, &s("abcd")).is_err());
        let mut tier = field("tier", T::Enum);
        tier.values = Some(vec!["gold".into(), "silver".into()]);
        assert!(check_requirement(&tier, &s("gold")).is_ok());
        assert!(check_requirement(&tier, &s("bronze")).is_err());
    }

    #[test]
    fn sandbox_names_decide_verification() {
        assert_eq!(
            sandbox_verification("Lovelace"),
            (VerificationStatus::Verified, vec![])
        );
        assert_eq!(
            sandbox_verification("Review"),
            (
                VerificationStatus::ManualReview,
                vec![SANDBOX_REVIEW_REASON.to_owned()]
            )
        );
        assert_eq!(
            sandbox_verification("Denied"),
            (VerificationStatus::Denied, vec![])
        );
        assert_eq!(
            sandbox_verification("review"),
            (VerificationStatus::Verified, vec![])
        );
    }

    #[test]
    fn only_the_last_four_ssn_digits_are_kept() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap_or_default();
        let req = PersonFields {
            first_name: Some(" Ada ".into()),
            last_name: Some("Lovelace".into()),
            ssn: Some("123456789".into()),
            ..PersonFields::default()
        };
        let changes = PersonChanges::parse(req, today).map_err(|e| e.to_string());
        assert_eq!(
            changes.as_ref().map(|c| c.ssn_last_4.as_deref()),
            Ok(Some("6789"))
        );
        assert_eq!(
            changes.as_ref().map(|c| c.first_name.as_deref()),
            Ok(Some("Ada"))
        );
    }
}
