//! `Entities`: persons and businesses, their associated persons and additional requirements.

use std::collections::BTreeMap;

use bank_api::Json;
use bank_api::entities::*;
use bank_api::models::{
    AdditionalRequirements, AssociatedPerson, AssociatedPersonList, AssociatedPersonRole,
    BusinessDetails, EmptyObject, Entity, EntityList, EntityListItem, EntityType, ErrorType,
    PersonDetails, VerificationStatus,
};

use super::Bankd;
use super::documents::wire as document_wire;
use super::errors::{ApiError, fail};
use super::idempotent;
use crate::auth::Principal;
use crate::domain::entities::{
    self, BusinessChanges, EntityChanges, EntityError, EntityView, NewAssociation, PersonChanges,
    RequirementsView,
};
use crate::model::documents::SignedDocument;
use crate::model::page::PageRequest;
use crate::store::StoreError;
use crate::store::entities::{AssociationRecord, EntityFilter, EntityRow};

impl EntitiesApi for Bankd {
    async fn create_person_entity(
        &self,
        principal: Principal,
        input: CreatePersonEntityInput,
    ) -> CreatePersonEntityResponse {
        let state = &self.state;
        let fingerprint = idempotent::body_bytes(&input.body);
        let changes = match PersonChanges::parse(input.body.into(), state.clock.now().date_naive())
        {
            Ok(c) => c,
            Err(e) => return fail(e.into()),
        };
        let (clock, platform_id) = (state.clock.as_ref(), &principal.platform_id);
        let key = input.idempotency_key.as_deref();
        let written = idempotent::write(
            state,
            &principal,
            key,
            ("POST", "/entities/person", &fingerprint),
            |tx| {
                let changes = &changes;
                Box::pin(async move {
                    let row = entities::create_person_in(tx, clock, platform_id, changes).await?;
                    Ok(entity_wire(row, Vec::new())?)
                })
            },
        )
        .await;
        match written {
            Ok(w) => {
                let replayed = w.replayed_header();
                CreatePersonEntityResponse::Ok(Json(w.value), replayed)
            }
            Err(e) => fail(e),
        }
    }

    async fn create_business_entity(
        &self,
        principal: Principal,
        input: CreateBusinessEntityInput,
    ) -> CreateBusinessEntityResponse {
        let state = &self.state;
        let fingerprint = idempotent::body_bytes(&input.body);
        let changes = match BusinessChanges::parse(input.body.into()) {
            Ok(c) => c,
            Err(e) => return fail(e.into()),
        };
        let (clock, platform_id) = (state.clock.as_ref(), &principal.platform_id);
        let key = input.idempotency_key.as_deref();
        let written = idempotent::write(
            state,
            &principal,
            key,
            ("POST", "/entities/business", &fingerprint),
            |tx| {
                let changes = &changes;
                Box::pin(async move {
                    let row = entities::create_business_in(tx, clock, platform_id, changes).await?;
                    Ok(entity_wire(row, Vec::new())?)
                })
            },
        )
        .await;
        match written {
            Ok(w) => {
                let replayed = w.replayed_header();
                CreateBusinessEntityResponse::Ok(Json(w.value), replayed)
            }
            Err(e) => fail(e),
        }
    }

    async fn update_person_entity(
        &self,
        principal: Principal,
        input: UpdatePersonEntityInput,
    ) -> UpdatePersonEntityResponse {
        let state = &self.state;
        let changes = match PersonChanges::parse(input.body.into(), state.clock.now().date_naive())
        {
            Ok(c) => EntityChanges::Person(c),
            Err(e) => return fail(e.into()),
        };
        let updated = entities::update(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.entity_id,
            &changes,
        )
        .await;
        match updated.map_err(ApiError::from).and_then(view_wire) {
            Ok(e) => UpdatePersonEntityResponse::Ok(Json(e)),
            Err(e) => fail(e),
        }
    }

    async fn update_business_entity(
        &self,
        principal: Principal,
        input: UpdateBusinessEntityInput,
    ) -> UpdateBusinessEntityResponse {
        let state = &self.state;
        let changes = match BusinessChanges::parse(input.body.into()) {
            Ok(c) => EntityChanges::Business(c),
            Err(e) => return fail(e.into()),
        };
        let updated = entities::update(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.entity_id,
            &changes,
        )
        .await;
        match updated.map_err(ApiError::from).and_then(view_wire) {
            Ok(e) => UpdateBusinessEntityResponse::Ok(Json(e)),
            Err(e) => fail(e),
        }
    }

    async fn list_entities(
        &self,
        principal: Principal,
        input: ListEntitiesInput,
    ) -> ListEntitiesResponse {
        let request = match PageRequest::parse(
            Some(input.limit),
            input.starting_after,
            input.ending_before,
        ) {
            Ok(r) => r,
            Err(e) => return fail(e.into()),
        };
        let filter = EntityFilter {
            created_gt: input.created_gt,
            created_gte: input.created_gte,
            created_lt: input.created_lt,
            created_lte: input.created_lte,
            is_root: input.is_root,
            name: input.name,
            query: input.query,
            entity_type: input.r#type.map(|t| t.as_str().to_owned()),
            verification_status: input.verification_status.map(|s| s.as_str().to_owned()),
        };
        let state = &self.state;
        let listed = entities::list(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &filter,
            &request,
        )
        .await;
        match listed
            .map_err(ApiError::from)
            .and_then(|p| Ok(p.try_map(list_item_wire)?))
        {
            Ok(page) => ListEntitiesResponse::Ok(Json(EntityList {
                entities: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e),
        }
    }

    async fn get_entity(&self, principal: Principal, input: GetEntityInput) -> GetEntityResponse {
        let state = &self.state;
        let found = entities::get(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.entity_id,
        )
        .await;
        match found.map_err(ApiError::from).and_then(view_wire) {
            Ok(e) => GetEntityResponse::Ok(Json(e)),
            Err(e) => fail(e),
        }
    }

    async fn delete_entity(
        &self,
        principal: Principal,
        input: DeleteEntityInput,
    ) -> DeleteEntityResponse {
        let state = &self.state;
        match entities::delete(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.entity_id,
        )
        .await
        {
            Ok(()) => DeleteEntityResponse::Ok(Json(EmptyObject {})),
            Err(e) => fail(e.into()),
        }
    }

    async fn list_associated_persons(
        &self,
        principal: Principal,
        input: ListAssociatedPersonsInput,
    ) -> ListAssociatedPersonsResponse {
        let request = match PageRequest::parse(
            Some(input.limit),
            input.starting_after,
            input.ending_before,
        ) {
            Ok(r) => r,
            Err(e) => return fail(e.into()),
        };
        let listed = entities::list_associations(
            &self.state.db,
            &principal.platform_id,
            &input.entity_id,
            &request,
        )
        .await;
        let page = match listed {
            Ok(page) => page,
            Err(e) => return fail(e.into()),
        };
        let items: Result<Vec<AssociatedPerson>, StoreError> = page
            .items
            .into_iter()
            .map(|(link, person)| association_wire(link, &person))
            .collect();
        match items {
            Ok(associated_persons) => {
                ListAssociatedPersonsResponse::Ok(Json(AssociatedPersonList {
                    associated_persons,
                    has_more: page.has_more,
                }))
            }
            Err(e) => fail(e.into()),
        }
    }

    async fn create_associated_person(
        &self,
        principal: Principal,
        input: CreateAssociatedPersonInput,
    ) -> CreateAssociatedPersonResponse {
        let body = input.body;
        let new = match NewAssociation::parse(
            body.person_entity_id,
            body.roles.into_iter().map(Into::into).collect(),
            body.title_in_business,
        ) {
            Ok(n) => n,
            Err(e) => return fail(e.into()),
        };
        let state = &self.state;
        let created = entities::create_association(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.entity_id,
            &new,
        )
        .await;
        match created
            .map_err(ApiError::from)
            .and_then(|(link, person)| Ok(association_wire(link, &person)?))
        {
            Ok(a) => CreateAssociatedPersonResponse::Ok(Json(a)),
            Err(e) => fail(e),
        }
    }

    async fn get_additional_requirements(
        &self,
        principal: Principal,
        input: GetAdditionalRequirementsInput,
    ) -> GetAdditionalRequirementsResponse {
        match entities::get_requirements(&self.state.db, &principal.platform_id, &input.entity_id)
            .await
        {
            Ok(view) => GetAdditionalRequirementsResponse::Ok(Json(requirements_wire(view))),
            Err(e) => fail(e.into()),
        }
    }

    async fn submit_additional_requirements(
        &self,
        principal: Principal,
        input: SubmitAdditionalRequirementsInput,
    ) -> SubmitAdditionalRequirementsResponse {
        let state = &self.state;
        let submitted = input.body.0;
        let result = entities::submit_requirements(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.entity_id,
            &submitted,
        )
        .await;
        match result {
            Ok(view) => SubmitAdditionalRequirementsResponse::Ok(Json(requirements_wire(view))),
            Err(e) => fail(e.into()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Wire shapes
// ---------------------------------------------------------------------------------------------

fn corrupt(column: &str) -> impl Fn(String) -> StoreError + '_ {
    move |e| StoreError::Corrupt(format!("entities.{column}: {e}"))
}

fn person_details(row: &EntityRow) -> PersonDetails {
    let (c, d) = (&row.core, &row.details);
    PersonDetails {
        first_name: c.first_name.clone().unwrap_or_default(),
        middle_name: d.middle_name.clone(),
        last_name: c.last_name.clone().unwrap_or_default(),
        date_of_birth: d.date_of_birth,
        email: d.email.clone(),
        address: d.address.clone().map(Into::into),
        ssn_last_4: d.ssn_last_4.clone(),
    }
}

fn business_details(row: &EntityRow) -> BusinessDetails {
    let (c, d) = (&row.core, &row.details);
    BusinessDetails {
        business_name: c.business_name.clone().unwrap_or_default(),
        address: d.address.clone().map(Into::into),
        countries_of_operation: d.countries_of_operation.clone(),
        description: d.description.clone(),
        ein: d.ein.clone(),
        industry: d.industry.clone(),
        legal_type: d.legal_type.clone(),
        state_of_incorporation: d.state_of_incorporation.clone(),
        website: d.website.clone(),
        year_of_incorporation: d.year_of_incorporation.clone(),
    }
}

/// The fields an entity record and a list item share.
fn list_item(
    row: &EntityRow,
    documents: Vec<bank_api::models::Document>,
) -> Result<EntityListItem, StoreError> {
    let c = &row.core;
    Ok(EntityListItem {
        id: c.id.as_str().to_owned(),
        name: c.name.clone(),
        r#type: c
            .entity_type
            .parse::<EntityType>()
            .map_err(corrupt("type"))?,
        is_root: c.is_root,
        requires_screening: c.requires_screening,
        review_reasons: row.details.review_reasons.clone(),
        documents,
        verification_status: c
            .verification_status
            .parse::<VerificationStatus>()
            .map_err(corrupt("verification_status"))?,
        created_at: c.created_at,
        updated_at: c.updated_at,
    })
}

/// The entity record: the list item's fields plus the details of its type.
fn entity_wire(
    row: EntityRow,
    documents: Vec<bank_api::models::Document>,
) -> Result<Entity, StoreError> {
    let item = list_item(&row, documents)?;
    let is_person = item.r#type == EntityType::Person;
    Ok(Entity {
        person_details: is_person.then(|| person_details(&row)),
        business_details: (!is_person).then(|| business_details(&row)),
        id: item.id,
        name: item.name,
        r#type: item.r#type,
        is_root: item.is_root,
        requires_screening: item.requires_screening,
        review_reasons: item.review_reasons,
        documents: item.documents,
        verification_status: item.verification_status,
        created_at: item.created_at,
        updated_at: item.updated_at,
    })
}

fn documents_wire(
    documents: Vec<SignedDocument>,
) -> Result<Vec<bank_api::models::Document>, StoreError> {
    documents.into_iter().map(document_wire).collect()
}

fn view_wire(view: EntityView) -> Result<Entity, ApiError> {
    let documents = documents_wire(view.documents)?;
    Ok(entity_wire(view.entity, documents)?)
}

fn list_item_wire(view: EntityView) -> Result<EntityListItem, StoreError> {
    let documents = documents_wire(view.documents)?;
    list_item(&view.entity, documents)
}

fn association_wire(
    link: AssociationRecord,
    person: &EntityRow,
) -> Result<AssociatedPerson, StoreError> {
    let roles = link
        .roles
        .iter()
        .map(|r| {
            r.parse::<AssociatedPersonRole>()
                .map_err(|e| StoreError::Corrupt(format!("associated_persons.roles: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AssociatedPerson {
        person_entity_id: link.person_entity_id.into_string(),
        roles,
        title_in_business: link.title_in_business,
        person_details: person_details(person),
        created_at: link.created_at,
    })
}

fn requirements_wire(view: RequirementsView) -> AdditionalRequirements {
    AdditionalRequirements {
        entity_id: view.entity_id.into_string(),
        submitted: view
            .submitted
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect(),
        missing: view.missing,
        updated_at: view.updated_at,
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// "invalid request: a x; b y" over the offending fields, like the framework's own messages.
fn summary(prefix: &str, details: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = details.iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!("{prefix}: {}", parts.join("; "))
}

impl From<EntityError> for ApiError {
    fn from(e: EntityError) -> Self {
        use EntityError as E;
        let t = ErrorType::EntityError;
        let v = ErrorType::RequestValidationError;
        match e {
            E::NotFound => ApiError::not_found(t, "entity_not_found", "entity"),
            E::InvalidFields(details) => ApiError::new(
                400,
                v,
                "invalid_request",
                summary("invalid request", &details),
            )
            .with_details(details),
            E::TypeMismatch(message) => ApiError::new(400, t, "entity_type_mismatch", message),
            E::AlreadyLinked => {
                ApiError::new(400, t, "associated_person_already_linked", e.to_string())
            }
            E::HasBankAccounts => ApiError::new(400, t, "entity_has_bank_accounts", e.to_string()),
            E::InvalidAdditionalRequirements(details) => ApiError::new(
                400,
                v,
                "invalid_additional_requirements",
                summary("invalid additional requirements", &details),
            )
            .with_details(details),
            E::Pagination(e) => e.into(),
            E::Store(e) => e.into(),
        }
    }
}
