//! Wire types ↔ model types, for the values the rules take or the store keeps that have a wire
//! twin (`bank_api::models`). The domain and the store never see a wire type; these are the
//! only conversions, and they are total (the wire has already been checked against the schema).

use bank_api::models as wire;

use crate::model::entities as model;
use crate::model::{counterparties, documents, events, ledger, webhooks};

/// `From` for a wire type and its model twin. The two live in other crates (`bank-api` and
/// `bankd-core`), where the orphan rule forbids `From` between them; this trait is this crate's.
pub(crate) trait Twin<T>: Sized {
    fn from_twin(value: T) -> Self;
}

/// `Into` for [`Twin`]: `wire_value.twin()` is the model value, and the other way round.
pub(crate) trait IntoTwin<T> {
    fn twin(self) -> T;
}

impl<T, U: Twin<T>> IntoTwin<U> for T {
    fn twin(self) -> U {
        U::from_twin(self)
    }
}

/// `Twin` both ways between a wire type and its model twin with the same fields.
macro_rules! twins {
    ($wire:ident <-> $model:ident { $($field:ident),* }) => {
        impl Twin<wire::$wire> for model::$model {
            fn from_twin(v: wire::$wire) -> Self {
                model::$model { $($field: v.$field),* }
            }
        }

        impl Twin<model::$model> for wire::$wire {
            fn from_twin(v: model::$model) -> Self {
                wire::$wire { $($field: v.$field),* }
            }
        }
    };
}

twins!(Address <-> Address { line_1, line_2, city, state, postal_code, country_code });

/// `Twin` both ways between a wire enumeration and its model twin with the same variants.
macro_rules! twin_enums {
    ($wire:ident <-> $module:ident::$model:ident { $($variant:ident),* }) => {
        impl Twin<wire::$wire> for $module::$model {
            fn from_twin(v: wire::$wire) -> Self {
                match v { $(wire::$wire::$variant => $module::$model::$variant),* }
            }
        }

        impl Twin<$module::$model> for wire::$wire {
            fn from_twin(v: $module::$model) -> Self {
                match v { $($module::$model::$variant => wire::$wire::$variant),* }
            }
        }
    };
}

twin_enums!(EntityType <-> model::EntityType { Person, Business });
twin_enums!(AssociatedPersonRole <-> model::AssociatedPersonRole { ControlPerson, BeneficialOwner });
twin_enums!(BankAccountType <-> ledger::AccountType {
    Checking, OverdraftReserve, ProgramReserve, NetworkSettlementAccount
});
twin_enums!(BankAccountStatus <-> ledger::AccountStatus { Open, Closed, Frozen });
twin_enums!(RoutingNumberType <-> counterparties::RoutingNumberType { Aba, Bic });
twin_enums!(AccountType <-> counterparties::CounterpartyAccountType { Checking, Savings });
twin_enums!(LegalType <-> counterparties::LegalType {
    Business, NonProfit, Individual, SoleProprietor
});
twin_enums!(DocumentType <-> documents::DocumentType {
IdentityLicense, IdentityPassport, IdentityUtility, BankStatement, W9, IrsLetter, CertificateOfBusinessFormation, EinConfirmation, CheckAttachment, MonthlyStatement, CardDisputeEvidence, Other
});
twin_enums!(EventType <-> events::EventType {
    EntityCreated, EntityUpdated, EntityDeleted, BankAccountCreated, BankAccountUpdated,
    BankAccountClosed, BankAccountOverdrafted, AccountNumberCreated, AccountNumberUpdated,
    CounterpartyCreated, CounterpartyDeleted, DocumentCreated, BookTransferCompleted,
    BookTransferHoldCreated, BookTransferCanceled, AchIncomingTransferCompleted,
    AchIncomingTransferReturned
});
twin_enums!(WebhookDeliveryStatus <-> webhooks::DeliveryStatus { Pending, Succeeded, Failed });
twin_enums!(VerificationStatus <-> model::VerificationStatus {
    Unverified, Pending, ManualReview, Verified, Denied
});

impl Twin<model::RequirementValue> for wire::RequirementValue {
    fn from_twin(v: model::RequirementValue) -> Self {
        match v {
            model::RequirementValue::String(s) => wire::RequirementValue::String(s),
            model::RequirementValue::Boolean(b) => wire::RequirementValue::Boolean(b),
            model::RequirementValue::Integer(i) => wire::RequirementValue::Integer(i),
        }
    }
}

/// The model's fields of a person or business from a create or update request: the two
/// requests carry the same fields, the create one with the names it requires; `$name => $wrap`
/// says how those required names are carried over (`Some` on create, as they are on update).
macro_rules! fields_from {
    ($model:ident <- $wire:ident ($r:ident) { $($named:ident => $wrap:expr),* ; $($field:ident),* }) => {
        impl Twin<wire::$wire> for model::$model {
            fn from_twin($r: wire::$wire) -> Self {
                model::$model {
                    $($named: $wrap,)*
                    $($field: $r.$field,)*
                    address: $r.address.map(IntoTwin::twin),
                }
            }
        }
    };
}

fields_from!(PersonFields <- UpdatePersonEntityRequest (r) {
    first_name => r.first_name, last_name => r.last_name;
    middle_name, date_of_birth, email, ssn
});
fields_from!(PersonFields <- CreatePersonEntityRequest (r) {
    first_name => Some(r.first_name), last_name => Some(r.last_name);
    middle_name, date_of_birth, email, ssn
});
fields_from!(BusinessFields <- UpdateBusinessEntityRequest (r) {
    business_name => r.business_name;
    countries_of_operation, description, ein, industry, legal_type, state_of_incorporation,
    website, year_of_incorporation
});
fields_from!(BusinessFields <- CreateBusinessEntityRequest (r) {
    business_name => Some(r.business_name);
    countries_of_operation, description, ein, industry, legal_type, state_of_incorporation,
    website, year_of_incorporation
});

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

impl Twin<wire::AdditionalRequirementField> for model::RequirementField {
    fn from_twin(f: wire::AdditionalRequirementField) -> Self {
        model::RequirementField {
            name: f.name,
            field_type: field_type(f.r#type),
            required: f.required,
            values: f.values,
            max_length: f.max_length,
        }
    }
}

impl Twin<model::RequirementField> for wire::AdditionalRequirementField {
    fn from_twin(f: model::RequirementField) -> Self {
        wire::AdditionalRequirementField {
            name: f.name,
            r#type: wire_field_type(f.field_type),
            required: f.required,
            values: f.values,
            max_length: f.max_length,
        }
    }
}
