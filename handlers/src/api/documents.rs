//! `Documents`: upload, read, list, and the signed download.

use crate::model::page::Bounds;
use bank_api::Json;
use bank_api::documents::*;
use bank_api::models::{Document, DocumentList, UploadDocumentRequest};
use poem_openapi::payload::Binary;

use super::Bankd;
use super::convert::IntoTwin;
use super::errors::{DOCS_BASE, fail};
use super::idempotent::{self, replayed_header, write_request};
use crate::auth::Principal;
use crate::domain::documents::{self, DocumentError, NewDocument};
use crate::model::documents::{DocumentFilter, SignedDocument};
use crate::model::page::{PageRequest, PaginationError};

impl DocumentsApi for Bankd {
    async fn list_documents(
        &self,
        principal: Principal,
        input: ListDocumentsInput,
    ) -> ListDocumentsResponse {
        let (page, filter) = list_query(input);
        let documents = self.services.documents();
        let listed = async {
            documents
                .list(&principal.platform_id, &filter, &page?)
                .await
        };
        match listed.await.map(|p| p.map(wire)) {
            Ok(page) => ListDocumentsResponse::Ok(Json(DocumentList {
                documents: page.items,
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
        let upload = match new_document(input.body) {
            Ok(u) => u,
            Err(e) => return fail(e.into()),
        };
        let fingerprint = fingerprint(&upload);
        let key = input.idempotency_key.as_deref();
        let write = write_request(key, "/documents", &fingerprint);
        let documents = self.services.documents();
        let uploaded = documents
            .upload(&principal.platform_id, &upload, write)
            .await;
        match uploaded {
            Ok(w) => UploadDocumentResponse::Ok(Json(wire(w.value)), replayed_header(w.replayed)),
            Err(e) => fail(e.into()),
        }
    }

    async fn get_document(
        &self,
        principal: Principal,
        input: GetDocumentInput,
    ) -> GetDocumentResponse {
        let documents = self.services.documents();
        let found = documents
            .get(&principal.platform_id, &input.document_id)
            .await;
        match found {
            Ok(d) => GetDocumentResponse::Ok(Json(wire(d))),
            Err(e) => fail(e.into()),
        }
    }

    async fn get_document_content(
        &self,
        input: GetDocumentContentInput,
    ) -> GetDocumentContentResponse {
        let documents = self.services.documents();
        let (id, expires) = (&input.document_id, input.expires);
        match documents.content(id, expires, &input.signature).await {
            Ok((record, bytes)) => GetDocumentContentResponse::Ok(
                Binary(bytes),
                Some(documents::content_disposition(&record.file_name)),
            ),
            Err(e) => fail(e.into()),
        }
    }
}

/// The list query's page and filters.
fn list_query(input: ListDocumentsInput) -> (Result<PageRequest, PaginationError>, DocumentFilter) {
    let page = PageRequest::parse(Some(input.limit), input.starting_after, input.ending_before);
    let filter = DocumentFilter {
        created: Bounds::new(
            input.created_gt,
            input.created_gte,
            input.created_lt,
            input.created_lte,
        ),
        description: input.description,
        file_name: input.file_name,
        tag: input.tag,
        document_type: input.r#type.map(IntoTwin::twin),
    };
    (page, filter)
}

/// The upload's parts, checked.
fn new_document(body: UploadDocumentRequest) -> Result<NewDocument, DocumentError> {
    let file = body.file;
    NewDocument::parse(
        body.r#type.twin(),
        body.description,
        body.tag,
        body.entity_id,
        file.file_name,
        file.content_type,
        file.bytes,
    )
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

/// The wire shape of a stored document, with its signed link.
pub(super) fn wire(d: SignedDocument) -> Document {
    let url = d.url(base_url());
    let d = d.record;
    Document {
        url,
        id: d.id.into_string(),
        r#type: d.document_type.twin(),
        tag: d.tag,
        description: d.description,
        file_name: d.file_name,
        content_type: d.content_type,
        size: d.size,
        checksum: d.checksum,
        entity_id: d.entity_id.map(|id| id.into_string()),
        created_at: d.created_at,
        updated_at: d.updated_at,
    }
}
