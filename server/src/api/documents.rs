//! `Documents`: upload, read, list, and the signed download.

use bank_api::Json;
use bank_api::documents::*;
use bank_api::models::{Document, DocumentList, DocumentType, ErrorType};
use poem_openapi::payload::Binary;

use super::Bankd;
use super::errors::{ApiError, DOCS_BASE, fail};
use super::idempotent;
use crate::auth::Principal;
use crate::domain::documents::{self, DocumentError, LinkSigner, NewDocument};
use crate::idempotency::IdempotencyKey;
use crate::model::page::PageRequest;
use crate::store::StoreError;
use crate::store::documents::{DocumentFilter, DocumentRecord};

impl DocumentsApi for Bankd {
    async fn list_documents(
        &self,
        principal: Principal,
        input: ListDocumentsInput,
    ) -> ListDocumentsResponse {
        let request = match PageRequest::parse(
            Some(input.limit),
            input.starting_after,
            input.ending_before,
        ) {
            Ok(r) => r,
            Err(e) => return fail(e.into()),
        };
        let filter = DocumentFilter {
            created_gt: input.created_gt,
            created_gte: input.created_gte,
            created_lt: input.created_lt,
            created_lte: input.created_lte,
            description: input.description,
            file_name: input.file_name,
            tag: input.tag,
            document_type: input.r#type.map(|t| t.as_str().to_owned()),
        };
        let state = &self.state;
        let listed = documents::list(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &filter,
            &request,
        )
        .await;
        let (page, signer) = match listed {
            Ok(listed) => listed,
            Err(e) => return fail(e.into()),
        };
        let wired: Result<Vec<Document>, StoreError> =
            page.items.into_iter().map(|d| wire(d, &signer)).collect();
        match wired {
            Ok(documents) => ListDocumentsResponse::Ok(Json(DocumentList {
                documents,
                has_more: page.has_more,
            })),
            Err(e) => fail(e.into()),
        }
    }

    async fn upload_document(
        &self,
        principal: Principal,
        input: UploadDocumentInput,
    ) -> UploadDocumentResponse {
        let state = &self.state;
        let body = input.body;
        let file = body.file;
        let upload = match NewDocument::parse(
            body.r#type.as_str(),
            body.description,
            body.tag,
            body.entity_id,
            file.file_name,
            file.content_type,
            file.bytes,
        ) {
            Ok(u) => u,
            Err(e) => return fail(e.into()),
        };
        // The header is part of the request's shape: judge it before the 404 below.
        if let Some(Err(e)) = input.idempotency_key.as_deref().map(IdempotencyKey::parse) {
            return fail(e.into());
        }
        let platform_id = &principal.platform_id;
        if let Err(e) =
            documents::check_entity(&state.db, platform_id, upload.entity_id.as_deref()).await
        {
            return fail(e.into());
        }
        let fingerprint = fingerprint(&upload);
        let clock = state.clock.as_ref();
        let written = idempotent::write(
            state,
            &principal,
            input.idempotency_key.as_deref(),
            ("POST", "/documents", &fingerprint),
            |tx| {
                let upload = &upload;
                Box::pin(async move {
                    let (record, signer) =
                        documents::upload_in(tx, clock, platform_id, upload).await?;
                    Ok(wire(record, &signer)?)
                })
            },
        )
        .await;
        match written {
            Ok(w) => {
                let replayed = w.replayed_header();
                UploadDocumentResponse::Ok(Json(w.value), replayed)
            }
            Err(e) => fail(e),
        }
    }

    async fn get_document(
        &self,
        principal: Principal,
        input: GetDocumentInput,
    ) -> GetDocumentResponse {
        let state = &self.state;
        let found = documents::get(
            &state.db,
            state.clock.as_ref(),
            &principal.platform_id,
            &input.document_id,
        )
        .await;
        match found
            .map_err(ApiError::from)
            .and_then(|(d, signer)| Ok(wire(d, &signer)?))
        {
            Ok(d) => GetDocumentResponse::Ok(Json(d)),
            Err(e) => fail(e),
        }
    }

    async fn get_document_content(
        &self,
        input: GetDocumentContentInput,
    ) -> GetDocumentContentResponse {
        let state = &self.state;
        let found = documents::content(
            &state.db,
            state.clock.as_ref(),
            &input.document_id,
            input.expires,
            &input.signature,
        )
        .await;
        match found {
            Ok((record, bytes)) => GetDocumentContentResponse::Ok(
                Binary(bytes),
                Some(documents::content_disposition(&record.file_name)),
            ),
            Err(e) => fail(e.into()),
        }
    }
}

/// What identifies an upload for `Idempotency-Key`: its text fields, the file part's name and
/// type, and the SHA-256 of the file (not the bytes themselves, which may be megabytes).
fn fingerprint(upload: &NewDocument) -> Vec<u8> {
    idempotent::body_bytes(&serde_json::json!({
        "type": upload.document_type,
        "description": upload.description,
        "tag": upload.tag,
        "entity_id": upload.entity_id,
        "file_name": upload.file_name,
        "content_type": upload.content_type,
        "sha256": upload.checksum,
    }))
}

/// Where links point: the served base URL (set from the listen address at start-up).
fn base_url() -> &'static str {
    DOCS_BASE
        .get()
        .map(String::as_str)
        .unwrap_or("http://127.0.0.1:8080")
}

/// The wire shape of a stored document, with a signed link.
pub(super) fn wire(d: DocumentRecord, signer: &LinkSigner) -> Result<Document, StoreError> {
    let r#type: DocumentType = d
        .document_type
        .parse()
        .map_err(|e: String| StoreError::Corrupt(format!("documents.type: {e}")))?;
    Ok(Document {
        url: signer.url(base_url(), &d.id),
        id: d.id.into_string(),
        r#type,
        tag: d.tag,
        description: d.description,
        file_name: d.file_name,
        content_type: d.content_type,
        size: d.size,
        checksum: d.checksum,
        entity_id: d.entity_id.map(|id| id.into_string()),
        created_at: d.created_at,
        updated_at: d.updated_at,
    })
}

impl From<DocumentError> for ApiError {
    fn from(e: DocumentError) -> Self {
        use DocumentError as D;
        let t = ErrorType::DocumentError;
        match e {
            D::NotFound => ApiError::not_found(t, "document_not_found", "document"),
            D::EntityNotFound => {
                ApiError::not_found(ErrorType::EntityError, "entity_not_found", "entity")
            }
            D::TypeNotAllowed => ApiError::new(400, t, "document_type_not_allowed", e.to_string()),
            D::InvalidSignature => ApiError::new(
                401,
                ErrorType::AuthenticationError,
                "invalid_signature",
                e.to_string(),
            ),
            D::InvalidField(field, message) => ApiError::invalid_field(field, message),
            D::Pagination(e) => e.into(),
            D::Store(e) => e.into(),
        }
    }
}
