//! Runtime support for code emitted by `openapi-poem`.
//!
//! One crate that every generated crate depends on (and re-exports as `runtime`). It is general:
//! nothing in it knows which API it serves; what it needs of one document (the closed schemas,
//! the declared headers) it reads through [`ApiDocument`], which each generated crate implements
//! on its `Document` type.
//!
//! Design notes:
//! - **Schemas are data.** Every generated type registers a `MetaSchema` that mirrors the source
//!   document. The same registry feeds the served document *and* [`validate`], so what is
//!   documented is exactly what is enforced.
//! - **Bodies are validated before they are typed.** [`JsonBody`] reads JSON, collects every
//!   violation of the schema (type, required, unknown field, lengths, ranges, patterns, enums,
//!   item counts), answers them all at once, and only then deserialises with serde.
//! - **Framework failures keep the API's error shape.** Every failure before a handler runs
//!   (authentication, parameters, body, unknown route, wrong method, wrong media type) becomes a
//!   [`RequestError`], which the server's [`Hooks::render_error`] turns into the API's own error
//!   body. There is no `text/plain` error path.
//! - **What poem-openapi cannot express** (`additionalProperties: false`, response `links`,
//!   top-level `security`, `servers`) is applied to the served document by [`patch_document`]
//!   from tables the generator emits, so the served document still equals the source.

mod body;
mod document;
mod error;
mod hooks;
mod multipart;
mod param_check;
mod params;
mod representation;
mod response;
mod spec_type;
mod validate;

pub use body::{BodyLimits, FormBody, JsonBody, JsonOrFormBody, OptionalJsonBody, RawBody};
pub use document::{ApiDocument, DocumentPatch, patch_document, source_docs, static_endpoint};
pub use error::{Answer, Rejection, RequestError, RequestErrorKind};
pub use hooks::{
    AuthEndpoint, AuthMiddleware, ErrorRenderer, ErrorRendererEndpoint, Hooks, problem,
};
pub use multipart::{FilePart, MultipartBody, MultipartForm};
pub use param_check::ParameterIndex;
pub use params::{Csv, Date, DeepObject, Delimited, JsonParam, ParamPattern, PathStyled};
pub use representation::{MediaTypes, OrOther, PayloadValue, Representation, media_listed};
pub use response::{
    CallbackRequest, ErrorVariant, ErrorVariants, Json, NoBody, date_time, form_bytes, json_bytes,
};
pub use spec_type::{SpecType, spec_type};
pub use validate::{
    DocumentRules, Rules, inline, nullable, pattern_matches, reference, registry_of, schema,
    validate,
};

// Crate-internal helpers that `keywords` and `querystring` reach at the crate root.
pub(crate) use body::checked_value;
pub(crate) use params::{object_of_pairs, query_parameter_extractor};
pub(crate) use validate::{field_path, push, validate_at};

pub mod keywords;
pub use keywords::{Keywords, SchemaFn};

pub mod schema_data;
pub use schema_data::{Link, SchemaData, link};

pub mod string_enum;
pub use string_enum::{StringEnum, string_enum};

pub mod methods;
pub use methods::ExtensionMethods;

pub mod querystring;
pub use querystring::QueryString;

/// The client half of a generated crate (feature `client`).
#[cfg(feature = "client")]
pub mod client;

pub mod stream;

/// `Deserialize` for generated structs without serde's derive.
pub mod de;
pub mod glue;
/// A response enum described and written from what it says of each variant.
pub mod responses;
pub use de::deserialize_object;
pub use responses::{ResponseDescriber, Responses};
pub use stream::{ItemStream, StreamError};

/// Responses written in the listed media type that `Accept` prefers.
pub mod negotiate;
pub use negotiate::{Accept, AcceptHeader, Negotiated, ResponseMedia};
/// ECMA-262 patterns through `regress`, the crate the generator uses too.
pub use openapi_poem_pattern as pattern;
/// Security schemes, requirements and the credentials a request presents.
pub mod security;
pub use security::{
    Auth, Credential, Credentials, OptionalAuth, SchemeCredential, SchemeKind, SecuritySchemeDef,
};
