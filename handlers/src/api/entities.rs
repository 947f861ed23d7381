//! `Entities`: persons and businesses, their associated persons and additional requirements.

use crate::model::page::Bounds;
use bank_api::Json;
use bank_api::entities::*;
use bank_api::models::{
    AdditionalRequirements, AssociatedPerson, AssociatedPersonList, BusinessDetails, EmptyObject,
    Entity, EntityList, EntityListItem, EntityType, PersonDetails,
};

use super::Bankd;
use super::convert::IntoTwin;
use super::documents::wire as document_wire;
use super::errors::{ApiError, fail};
use super::idempotent::{body_bytes, replayed_header, write_request};
use crate::auth::Principal;
use crate::domain::entities::{
    BusinessChanges, Entities, EntityChanges, EntityView, NewAssociation, PersonChanges,
    RequirementsView,
};
use crate::model::documents::SignedDocument;
use crate::model::entities::{AssociationRecord, EntityFilter, EntityRow};
use crate::model::page::{PageRequest, PaginationError};

impl EntitiesApi for Bankd {
    async fn create_person_entity(
        &self,
        principal: Principal,
        input: CreatePersonEntityInput,
    ) -> CreatePersonEntityResponse {
        let body = body_bytes(&input.body);
        let parsed = PersonChanges::parse(input.body.twin(), self.today());
        let key = input.idempotency_key.as_deref();
        let changes = parsed.map(EntityChanges::Person).map_err(ApiError::from);
        match self
            .create_entity(&principal, changes, key, "/entities/person", &body)
            .await
        {
            Ok((entity, replayed)) => CreatePersonEntityResponse::Ok(Json(entity), replayed),
            Err(e) => fail(e),
        }
    }

    async fn create_business_entity(
        &self,
        principal: Principal,
        input: CreateBusinessEntityInput,
    ) -> CreateBusinessEntityResponse {
        let body = body_bytes(&input.body);
        let parsed = BusinessChanges::parse(input.body.twin());
        let key = input.idempotency_key.as_deref();
        let changes = parsed.map(EntityChanges::Business).map_err(ApiError::from);
        match self
            .create_entity(&principal, changes, key, "/entities/business", &body)
            .await
        {
            Ok((entity, replayed)) => CreateBusinessEntityResponse::Ok(Json(entity), replayed),
            Err(e) => fail(e),
        }
    }

    async fn update_person_entity(
        &self,
        principal: Principal,
        input: UpdatePersonEntityInput,
    ) -> UpdatePersonEntityResponse {
        let parsed = PersonChanges::parse(input.body.twin(), self.today());
        let changes = parsed.map(EntityChanges::Person).map_err(ApiError::from);
        match self
            .update_entity(&principal, &input.entity_id, changes)
            .await
        {
            Ok(e) => UpdatePersonEntityResponse::Ok(Json(e)),
            Err(e) => fail(e),
        }
    }

    async fn update_business_entity(
        &self,
        principal: Principal,
        input: UpdateBusinessEntityInput,
    ) -> UpdateBusinessEntityResponse {
        let parsed = BusinessChanges::parse(input.body.twin());
        let changes = parsed.map(EntityChanges::Business).map_err(ApiError::from);
        match self
            .update_entity(&principal, &input.entity_id, changes)
            .await
        {
            Ok(e) => UpdateBusinessEntityResponse::Ok(Json(e)),
            Err(e) => fail(e),
        }
    }

    async fn list_entities(
        &self,
        principal: Principal,
        input: ListEntitiesInput,
    ) -> ListEntitiesResponse {
        let (page, filter) = list_query(input);
        let entities = self.entities();
        let listed = async { entities.list(&principal.platform_id, &filter, &page?).await };
        match listed.await.map(|p| p.map(list_item_wire)) {
            Ok(page) => ListEntitiesResponse::Ok(Json(EntityList {
                entities: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn get_entity(&self, principal: Principal, input: GetEntityInput) -> GetEntityResponse {
        let found = self
            .entities()
            .get(&principal.platform_id, &input.entity_id)
            .await;
        match found {
            Ok(view) => GetEntityResponse::Ok(Json(view_wire(view))),
            Err(e) => fail(e.into()),
        }
    }

    async fn delete_entity(
        &self,
        principal: Principal,
        input: DeleteEntityInput,
    ) -> DeleteEntityResponse {
        match self
            .entities()
            .delete(&principal.platform_id, &input.entity_id)
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
        let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
        let (entities, business) = (self.entities(), &input.entity_id);
        let listed = async {
            entities
                .list_associations(&principal.platform_id, business, &page?)
                .await
        };
        match listed
            .await
            .map(|p| p.map(|(link, person)| association_wire(link, &person)))
        {
            Ok(page) => ListAssociatedPersonsResponse::Ok(Json(AssociatedPersonList {
                associated_persons: page.items,
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn create_associated_person(
        &self,
        principal: Principal,
        input: CreateAssociatedPersonInput,
    ) -> CreateAssociatedPersonResponse {
        let b = input.body;
        let roles = b.roles.into_iter().map(IntoTwin::twin).collect();
        let new = match NewAssociation::parse(b.person_entity_id, roles, b.title_in_business) {
            Ok(n) => n,
            Err(e) => return fail(e.into()),
        };
        let entities = self.entities();
        let created = entities.create_association(&principal.platform_id, &input.entity_id, &new);
        match created.await {
            Ok((link, person)) => {
                CreateAssociatedPersonResponse::Ok(Json(association_wire(link, &person)))
            }
            Err(e) => fail(e.into()),
        }
    }

    async fn get_additional_requirements(
        &self,
        principal: Principal,
        input: GetAdditionalRequirementsInput,
    ) -> GetAdditionalRequirementsResponse {
        let entities = self.entities();
        match entities
            .get_requirements(&principal.platform_id, &input.entity_id)
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
        let (entities, submitted) = (self.entities(), &input.body.0);
        let result =
            entities.submit_requirements(&principal.platform_id, &input.entity_id, submitted);
        match result.await {
            Ok(view) => SubmitAdditionalRequirementsResponse::Ok(Json(requirements_wire(view))),
            Err(e) => fail(e.into()),
        }
    }
}

impl Bankd {
    fn entities(&self) -> Entities<'_> {
        self.services.entities()
    }

    /// Both creations: the validated fields, one idempotent write, the created entity's wire
    /// shape and its `Idempotent-Replayed` header.
    async fn create_entity(
        &self,
        principal: &Principal,
        changes: Result<EntityChanges, ApiError>,
        key: Option<&str>,
        path: &str,
        body: &[u8],
    ) -> Result<(Entity, Option<String>), ApiError> {
        let write = write_request(key, path, body);
        let created = self
            .entities()
            .create(&principal.platform_id, &changes?, write)
            .await?;
        Ok((
            entity_wire(created.value, Vec::new()),
            replayed_header(created.replayed),
        ))
    }

    /// Both PATCHes: the validated fields, one write, the updated entity's wire shape.
    async fn update_entity(
        &self,
        principal: &Principal,
        id: &str,
        changes: Result<EntityChanges, ApiError>,
    ) -> Result<Entity, ApiError> {
        let updated = self
            .entities()
            .update(&principal.platform_id, id, &changes?)
            .await?;
        Ok(view_wire(updated))
    }

    /// Today's date (UTC), which bounds a date of birth.
    fn today(&self) -> chrono::NaiveDate {
        self.services.clock().now().date_naive()
    }
}

/// The list query's page and filters.
fn list_query(input: ListEntitiesInput) -> (Result<PageRequest, PaginationError>, EntityFilter) {
    let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
    let filter = EntityFilter {
        created: Bounds::new(
            input.created_gt,
            input.created_gte,
            input.created_lt,
            input.created_lte,
        ),
        is_root: input.is_root,
        name: input.name,
        query: input.query,
        entity_type: input.r#type.map(IntoTwin::twin),
        verification_status: input.verification_status.map(IntoTwin::twin),
    };
    (page, filter)
}

// ---------------------------------------------------------------------------------------------
// Wire shapes
// ---------------------------------------------------------------------------------------------

fn person_details(row: &EntityRow) -> PersonDetails {
    let (c, d) = (&row.core, &row.details);
    PersonDetails {
        first_name: c.first_name.clone().unwrap_or_default(),
        middle_name: d.middle_name.clone(),
        last_name: c.last_name.clone().unwrap_or_default(),
        date_of_birth: d.date_of_birth,
        email: d.email.clone(),
        address: d.address.clone().map(IntoTwin::twin),
        ssn_last_4: d.ssn_last_4.clone(),
    }
}

fn business_details(row: &EntityRow) -> BusinessDetails {
    let (c, d) = (&row.core, &row.details);
    BusinessDetails {
        business_name: c.business_name.clone().unwrap_or_default(),
        address: d.address.clone().map(IntoTwin::twin),
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
fn list_item(row: &EntityRow, documents: Vec<bank_api::models::Document>) -> EntityListItem {
    let c = &row.core;
    EntityListItem {
        id: c.id.as_str().to_owned(),
        name: c.name.clone(),
        r#type: c.entity_type.twin(),
        is_root: c.is_root,
        requires_screening: c.requires_screening,
        review_reasons: row.details.review_reasons.clone(),
        documents,
        verification_status: c.verification_status.twin(),
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
}

/// The entity record: the list item's fields plus the details of its type.
fn entity_wire(row: EntityRow, documents: Vec<bank_api::models::Document>) -> Entity {
    let item = list_item(&row, documents);
    let is_person = item.r#type == EntityType::Person;
    Entity {
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
    }
}

fn documents_wire(documents: Vec<SignedDocument>) -> Vec<bank_api::models::Document> {
    documents.into_iter().map(document_wire).collect()
}

pub(super) fn view_wire(view: EntityView) -> Entity {
    entity_wire(view.entity, documents_wire(view.documents))
}

fn list_item_wire(view: EntityView) -> EntityListItem {
    list_item(&view.entity, documents_wire(view.documents))
}

fn association_wire(link: AssociationRecord, person: &EntityRow) -> AssociatedPerson {
    AssociatedPerson {
        person_entity_id: link.person_entity_id.into_string(),
        roles: link.roles.into_iter().map(IntoTwin::twin).collect(),
        title_in_business: link.title_in_business,
        person_details: person_details(person),
        created_at: link.created_at,
    }
}

fn requirements_wire(view: RequirementsView) -> AdditionalRequirements {
    AdditionalRequirements {
        entity_id: view.entity_id.into_string(),
        submitted: view
            .submitted
            .into_iter()
            .map(|(k, v)| (k, v.twin()))
            .collect(),
        missing: view.missing,
        updated_at: view.updated_at,
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------
