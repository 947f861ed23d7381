//! Wire types ↔ model types, for the values the rules take or the store keeps that have a wire
//! twin (`bank_api::models`). The domain and the store never see a wire type; these are the
//! only conversions, and they are total (the wire has already been checked against the schema).

use bank_api::models as wire;

use crate::model::entities as model;

impl From<wire::Address> for model::Address {
    fn from(a: wire::Address) -> Self {
        model::Address {
            line_1: a.line_1,
            line_2: a.line_2,
            city: a.city,
            state: a.state,
            postal_code: a.postal_code,
            country_code: a.country_code,
        }
    }
}

impl From<model::Address> for wire::Address {
    fn from(a: model::Address) -> Self {
        wire::Address {
            line_1: a.line_1,
            line_2: a.line_2,
            city: a.city,
            state: a.state,
            postal_code: a.postal_code,
            country_code: a.country_code,
        }
    }
}

impl From<model::RequirementValue> for wire::RequirementValue {
    fn from(v: model::RequirementValue) -> Self {
        match v {
            model::RequirementValue::String(s) => wire::RequirementValue::String(s),
            model::RequirementValue::Boolean(b) => wire::RequirementValue::Boolean(b),
            model::RequirementValue::Integer(i) => wire::RequirementValue::Integer(i),
        }
    }
}

impl From<wire::UpdatePersonEntityRequest> for model::PersonFields {
    fn from(r: wire::UpdatePersonEntityRequest) -> Self {
        model::PersonFields {
            first_name: r.first_name,
            middle_name: r.middle_name,
            last_name: r.last_name,
            date_of_birth: r.date_of_birth,
            email: r.email,
            ssn: r.ssn,
            address: r.address.map(Into::into),
        }
    }
}

impl From<wire::CreatePersonEntityRequest> for model::PersonFields {
    fn from(r: wire::CreatePersonEntityRequest) -> Self {
        model::PersonFields {
            first_name: Some(r.first_name),
            last_name: Some(r.last_name),
            ..wire::UpdatePersonEntityRequest {
                first_name: None,
                middle_name: r.middle_name,
                last_name: None,
                date_of_birth: r.date_of_birth,
                email: r.email,
                ssn: r.ssn,
                address: r.address,
            }
            .into()
        }
    }
}

impl From<wire::UpdateBusinessEntityRequest> for model::BusinessFields {
    fn from(r: wire::UpdateBusinessEntityRequest) -> Self {
        model::BusinessFields {
            business_name: r.business_name,
            address: r.address.map(Into::into),
            countries_of_operation: r.countries_of_operation,
            description: r.description,
            ein: r.ein,
            industry: r.industry,
            legal_type: r.legal_type,
            state_of_incorporation: r.state_of_incorporation,
            website: r.website,
            year_of_incorporation: r.year_of_incorporation,
        }
    }
}

impl From<wire::CreateBusinessEntityRequest> for model::BusinessFields {
    fn from(r: wire::CreateBusinessEntityRequest) -> Self {
        model::BusinessFields {
            business_name: Some(r.business_name),
            ..wire::UpdateBusinessEntityRequest {
                business_name: None,
                address: r.address,
                countries_of_operation: r.countries_of_operation,
                description: r.description,
                ein: r.ein,
                industry: r.industry,
                legal_type: r.legal_type,
                state_of_incorporation: r.state_of_incorporation,
                website: r.website,
                year_of_incorporation: r.year_of_incorporation,
            }
            .into()
        }
    }
}

fn field_type(t: wire::RequirementFieldType) -> model::RequirementFieldType {
    use model::RequirementFieldType as M;
    use wire::RequirementFieldType as W;
    match t {
        W::String => M::String,
        W::Boolean => M::Boolean,
        W::Integer => M::Integer,
        W::Email => M::Email,
        W::Phone => M::Phone,
        W::Date => M::Date,
        W::Enum => M::Enum,
    }
}

fn wire_field_type(t: model::RequirementFieldType) -> wire::RequirementFieldType {
    use model::RequirementFieldType as M;
    use wire::RequirementFieldType as W;
    match t {
        M::String => W::String,
        M::Boolean => W::Boolean,
        M::Integer => W::Integer,
        M::Email => W::Email,
        M::Phone => W::Phone,
        M::Date => W::Date,
        M::Enum => W::Enum,
    }
}

impl From<wire::AdditionalRequirementField> for model::RequirementField {
    fn from(f: wire::AdditionalRequirementField) -> Self {
        model::RequirementField {
            name: f.name,
            field_type: field_type(f.r#type),
            required: f.required,
            values: f.values,
            max_length: f.max_length,
        }
    }
}

impl From<model::RequirementField> for wire::AdditionalRequirementField {
    fn from(f: model::RequirementField) -> Self {
        wire::AdditionalRequirementField {
            name: f.name,
            r#type: wire_field_type(f.field_type),
            required: f.required,
            values: f.values,
            max_length: f.max_length,
        }
    }
}

impl From<wire::AssociatedPersonRole> for model::AssociatedPersonRole {
    fn from(r: wire::AssociatedPersonRole) -> Self {
        match r {
            wire::AssociatedPersonRole::ControlPerson => model::AssociatedPersonRole::ControlPerson,
            wire::AssociatedPersonRole::BeneficialOwner => {
                model::AssociatedPersonRole::BeneficialOwner
            }
        }
    }
}
