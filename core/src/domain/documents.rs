//! Documents: uploads with their content, and signed download links.
//!
//! Design note (download links). `GET /documents/{id}/content` takes no credentials, so its
//! link must carry its own authority. Options considered:
//! - A random token stored per link: a write on every read of a document, and a table to purge.
//! - Chosen: a stateless signature, HMAC-SHA256 over the document id and the expiry (Unix
//!   seconds), with a server secret. The link is valid until `expires` ([`LINK_TTL_SECS`] after
//!   it was made, by the injected clock); changing the id or the expiry breaks the signature.
//!   The secret is stored once in the database (`server_secrets`), created by the first process
//!   that needs it, so every process sharing the database agrees on it; it never leaves the
//!   server (no logs, no responses; [`SigningKey`]'s `Debug` hides it).
//!
//! The signature check runs before the document is looked up, so an unsigned caller learns
//! nothing about which ids exist.

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::clock::Clock;
use crate::domain::events::{self, EventData};
use crate::idempotency::{self, IdempotencyKey, WriteError, WriteRequest, Written};
use crate::model::documents::{DocumentFilter, DocumentRecord, DocumentType, SignedDocument};
use crate::model::events::EventType;
use crate::model::ids::{DocumentId, EntityId, PlatformId};
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::store::documents as repo;
use crate::store::{Db, StoreError, Tx, entities};

/// How long a download link stays valid.
pub const LINK_TTL_SECS: i64 = 60;
/// Bytes of a newly created signing secret.
const SECRET_LEN: usize = 32;
/// Longest description (characters).
pub const MAX_DESCRIPTION_LEN: usize = 127;
/// Longest tag (characters).
pub const MAX_TAG_LEN: usize = 255;
/// Longest accepted file name (characters).
pub const MAX_FILE_NAME_LEN: usize = 255;

/// Failures of document operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("document not found")]
    NotFound,
    #[error("entity not found")]
    EntityNotFound,
    #[error(
        "documents of type card_dispute_evidence are uploaded through POST /issuing/card-disputes/documents"
    )]
    TypeNotAllowed,
    #[error("the download link's signature is invalid or has expired")]
    InvalidSignature,
    /// A field of the upload is invalid; (field, message).
    #[error("{0} {1}")]
    InvalidField(&'static str, String),
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(DocumentError);

// ---------------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------------

/// The secret that keys download-link signatures.
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    /// The MAC of a link to `document_id` that expires at `expires` (Unix seconds).
    fn mac(&self, document_id: &str, expires: i64) -> [u8; 32] {
        // A separator that cannot occur in an id keeps (id, expires) pairs unambiguous.
        let message = format!("{document_id}\n{expires}");
        hmac_sha256(&self.0, message.as_bytes())
    }

    /// The signature (lower-case hex) of a link to `document_id` expiring at `expires`.
    pub fn sign(&self, document_id: &str, expires: i64) -> String {
        hex::encode(self.mac(document_id, expires))
    }

    /// Whether `signature` is this key's signature of (`document_id`, `expires`) and the link
    /// has not expired at `now`. The comparison takes the same time wherever the bytes differ.
    pub fn verify(
        &self,
        document_id: &str,
        expires: i64,
        signature: &str,
        now: DateTime<Utc>,
    ) -> bool {
        let Ok(given) = hex::decode(signature) else {
            return false;
        };
        let expected = self.mac(document_id, expires);
        let matches: bool = expected.as_slice().ct_eq(given.as_slice()).into();
        matches && now.timestamp() <= expires
    }
}

/// Makes signed links valid from `now` for [`LINK_TTL_SECS`].
#[derive(Debug, Clone)]
pub struct LinkSigner {
    key: SigningKey,
    expires: i64,
}

impl LinkSigner {
    pub fn new(key: SigningKey, now: DateTime<Utc>) -> Self {
        let expires = (now + Duration::seconds(LINK_TTL_SECS)).timestamp();
        LinkSigner { key, expires }
    }

    /// `record` with its signed link.
    pub fn sign(&self, record: DocumentRecord) -> SignedDocument {
        let signature = self.key.sign(record.id.as_str(), self.expires);
        SignedDocument {
            record,
            expires: self.expires,
            signature,
        }
    }
}

/// HMAC-SHA256 (RFC 2104) with the `sha2` crate the server already uses for key hashes.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}

/// The signing key inside a write transaction, created on first use.
pub async fn signing_key_in(tx: &mut Tx<'_>, clock: &dyn Clock) -> Result<SigningKey, StoreError> {
    if let Some(secret) = repo::signing_secret(tx).await? {
        return Ok(SigningKey(secret));
    }
    let mut candidate = vec![0u8; SECRET_LEN];
    rand::rngs::OsRng.fill_bytes(&mut candidate);
    Ok(SigningKey(
        repo::ensure_signing_secret(tx, &candidate, clock.now()).await?,
    ))
}

/// The signing key: read it, or create it in a write transaction the first time.
pub async fn signing_key(db: &Db, clock: &dyn Clock) -> Result<SigningKey, StoreError> {
    let existing = db
        .read_single(|tx| Box::pin(async move { repo::signing_secret(tx).await }))
        .await?;
    match existing {
        Some(secret) => Ok(SigningKey(secret)),
        None => {
            db.write(|tx| Box::pin(async move { signing_key_in(tx, clock).await }))
                .await
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Upload
// ---------------------------------------------------------------------------------------------

/// A validated upload, ready to store.
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub document_type: DocumentType,
    pub description: Option<String>,
    pub tag: Option<String>,
    /// The entity id as sent: a malformed one fails the lookup exactly like an unknown one.
    pub entity_id: Option<String>,
    pub file_name: String,
    pub content_type: String,
    pub content: Vec<u8>,
    /// SHA-256 of `content`, lower-case hex.
    pub checksum: String,
}

impl NewDocument {
    /// Checks the parts of an upload that the schema cannot (file name, content type) and
    /// computes the checksum. `file_name` and `content_type` come from the file part's headers.
    pub fn parse(
        document_type: DocumentType,
        description: Option<String>,
        tag: Option<String>,
        entity_id: Option<String>,
        file_name: Option<String>,
        content_type: Option<String>,
        content: Vec<u8>,
    ) -> Result<NewDocument, DocumentError> {
        // The schema says so too; checked here because the rule belongs to the record, whatever
        // the transport checked.
        let too_long = |value: &Option<String>, max: usize| {
            value.as_ref().is_some_and(|v| v.chars().count() > max)
        };
        if too_long(&description, MAX_DESCRIPTION_LEN) {
            return Err(DocumentError::InvalidField(
                "description",
                format!("must be at most {MAX_DESCRIPTION_LEN} characters long"),
            ));
        }
        if too_long(&tag, MAX_TAG_LEN) {
            return Err(DocumentError::InvalidField(
                "tag",
                format!("must be at most {MAX_TAG_LEN} characters long"),
            ));
        }
        let file_name = match file_name.map(|n| n.trim().to_owned()) {
            None => "file".to_owned(),
            Some(n) if n.is_empty() => "file".to_owned(),
            Some(n) => {
                if n.chars().count() > MAX_FILE_NAME_LEN || n.chars().any(char::is_control) {
                    return Err(DocumentError::InvalidField(
                        "file",
                        format!(
                            "file name must be at most {MAX_FILE_NAME_LEN} characters without control characters"
                        ),
                    ));
                }
                n
            }
        };
        // The content type is only echoed back; anything that is not a plain `type/subtype`
        // token (with parameters) is recorded as opaque bytes rather than refused.
        let content_type = content_type
            .map(|c| c.trim().to_owned())
            .filter(|c| is_media_type(c))
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let checksum = hex::encode(Sha256::digest(&content));
        Ok(NewDocument {
            document_type,
            description,
            tag,
            entity_id,
            file_name,
            content_type,
            content,
            checksum,
        })
    }
}

/// `type/subtype` with optional parameters, visible ASCII and spaces only, at most 255 bytes.
fn is_media_type(text: &str) -> bool {
    let essence = text.split(';').next().unwrap_or_default().trim();
    let mut parts = essence.split('/');
    let token = |s: Option<&str>| {
        s.is_some_and(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
        })
    };
    text.len() <= 255
        && text.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && token(parts.next())
        && token(parts.next())
        && parts.next().is_none()
}

/// The part of [`upload_in`] that answers 404 before idempotency is considered: the entity the
/// upload names must be a live entity of the platform.
async fn check_entity(
    db: &Db,
    platform_id: &PlatformId,
    entity_id: Option<&str>,
) -> Result<(), DocumentError> {
    let Some(text) = entity_id else {
        return Ok(());
    };
    let id = EntityId::parse(text).ok_or(DocumentError::EntityNotFound)?;
    let found = db
        .read_single(|tx| {
            let id = &id;
            Box::pin(async move { entities::get(tx, platform_id, id).await })
        })
        .await?;
    found.map(|_| ()).ok_or(DocumentError::EntityNotFound)
}

/// Stores an upload inside `tx` (the caller's idempotent write transaction).
async fn upload_in(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    upload: &NewDocument,
) -> Result<SignedDocument, DocumentError> {
    // Checked again inside the transaction: the entity may have been deleted since
    // `check_entity`.
    let entity_id = match &upload.entity_id {
        None => None,
        Some(text) => {
            let id = EntityId::parse(text).ok_or(DocumentError::EntityNotFound)?;
            entities::get(tx, platform_id, &id)
                .await?
                .ok_or(DocumentError::EntityNotFound)?;
            Some(id)
        }
    };
    if upload.document_type == DocumentType::CardDisputeEvidence {
        return Err(DocumentError::TypeNotAllowed);
    }
    let now = clock.now();
    let size = i64::try_from(upload.content.len())
        .map_err(|_| DocumentError::InvalidField("file", "is too large".into()))?;
    let record = DocumentRecord {
        id: DocumentId::generate(now),
        platform_id: platform_id.clone(),
        entity_id,
        document_type: upload.document_type,
        tag: upload.tag.clone(),
        description: upload.description.clone(),
        file_name: upload.file_name.clone(),
        content_type: upload.content_type.clone(),
        size,
        checksum: upload.checksum.clone(),
        created_at: now,
        updated_at: now,
    };
    repo::insert(tx, &record, &upload.content).await?;
    let key = signing_key_in(tx, clock).await?;
    let signed = LinkSigner::new(key, now).sign(record);
    let data = EventData::Document(Box::new(signed.clone()));
    events::record(tx, now, platform_id, EventType::DocumentCreated, data).await?;
    Ok(signed)
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

super::service! {
    /// Documents: upload (with its idempotency), read, list and the signed download, each in
    /// its own transaction.
    Documents
}

impl Documents<'_> {
    /// Stores an upload. Precedence as the contract gives it: the `Idempotency-Key`'s shape, then
    /// 404 for the entity the upload names, then the key's 409/422, then the rules.
    pub async fn upload(
        &self,
        platform_id: &PlatformId,
        upload: &NewDocument,
        write: WriteRequest<'_>,
    ) -> Result<Written<SignedDocument>, WriteError<DocumentError>> {
        if let Some(key) = write.key {
            IdempotencyKey::parse(key)?;
        }
        check_entity(self.db, platform_id, upload.entity_id.as_deref())
            .await
            .map_err(WriteError::Rule)?;
        let clock = self.clock;
        idempotency::write(self.db, clock, platform_id, write, |tx| {
            Box::pin(upload_in(tx, clock, platform_id, upload))
        })
        .await
    }

    /// One document of the platform, with its link signed now.
    pub async fn get(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<SignedDocument, DocumentError> {
        let id = DocumentId::parse(id);
        let key = signing_key(self.db, self.clock).await?;
        let record = super::get_one(
            self.db,
            platform_id,
            id,
            || DocumentError::NotFound,
            |tx, p, id| Box::pin(repo::get(tx, p, id)),
        )
        .await?;
        Ok(LinkSigner::new(key, self.clock.now()).sign(record))
    }

    /// One page of the platform's documents, their links signed now.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        filter: &DocumentFilter,
        request: &PageRequest,
    ) -> Result<Page<SignedDocument>, DocumentError> {
        let key = signing_key(self.db, self.clock).await?;
        let page = self
            .db
            .read(|tx| Box::pin(async move { repo::list(tx, platform_id, filter, request).await }))
            .await?;
        let signer = LinkSigner::new(key, self.clock.now());
        Ok(page.map(|record| signer.sign(record)))
    }

    /// The content of a document for a signed link: checks the signature and expiry first.
    pub async fn content(
        &self,
        document_id: &str,
        expires: i64,
        signature: &str,
    ) -> Result<(DocumentRecord, Vec<u8>), DocumentError> {
        // Only read the secret: without one no link was ever signed, and an unauthenticated
        // caller must not be able to make the server write.
        let secret = self
            .db
            .read_single(|tx| Box::pin(async move { repo::signing_secret(tx).await }))
            .await?;
        let now = self.clock.now();
        let valid =
            secret.is_some_and(|s| SigningKey(s).verify(document_id, expires, signature, now));
        if !valid {
            return Err(DocumentError::InvalidSignature);
        }
        let id = DocumentId::parse(document_id).ok_or(DocumentError::NotFound)?;
        self.db
            .read_single(|tx| {
                let id = &id;
                Box::pin(async move { repo::get_content(tx, id).await })
            })
            .await?
            .ok_or(DocumentError::NotFound)
    }
}

/// `attachment; filename="..."` for a stored file name: an ASCII fallback with quotes,
/// backslashes and control characters replaced, plus the exact name in RFC 5987 `filename*`
/// when it is not plain ASCII.
pub fn content_disposition(file_name: &str) -> String {
    let fallback: String = file_name
        .chars()
        .map(|c| {
            if c == ' ' || (c.is_ascii_graphic() && c != '"' && c != '\\') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut header = format!("attachment; filename=\"{fallback}\"");
    if fallback != file_name {
        header.push_str("; filename*=UTF-8''");
        for b in file_name.bytes() {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                header.push(char::from(b));
            } else {
                header.push_str(&format!("%{b:02X}"));
            }
        }
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn hmac_matches_rfc_4231_test_vectors() {
        // Test case 1.
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex::encode(mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(secs, 0).single().unwrap_or_default()
    }

    #[test]
    fn signatures_bind_the_id_and_expiry_and_expire() {
        let key = SigningKey(vec![7; 32]);
        let sig = key.sign("docu_a", 1_000);
        assert_eq!(sig.len(), 64);
        assert!(key.verify("docu_a", 1_000, &sig, at(1_000)));
        assert!(key.verify("docu_a", 1_000, &sig, at(940)));
        assert!(!key.verify("docu_a", 1_000, &sig, at(1_001)), "expired");
        assert!(!key.verify("docu_b", 1_000, &sig, at(900)), "other id");
        assert!(!key.verify("docu_a", 1_001, &sig, at(900)), "other expiry");
        assert!(!key.verify("docu_a", 1_000, "zz", at(900)), "not hex");
        assert!(!key.verify("docu_a", 1_000, &sig[..62], at(900)), "short");
        let other = SigningKey(vec![8; 32]);
        assert!(
            !other.verify("docu_a", 1_000, &sig, at(900)),
            "other secret"
        );
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        assert_eq!(format!("{:?}", SigningKey(vec![1, 2, 3])), "SigningKey(..)");
    }

    #[test]
    fn content_disposition_quotes_safely() {
        assert_eq!(
            content_disposition("a b.pdf"),
            "attachment; filename=\"a b.pdf\""
        );
        assert_eq!(
            content_disposition("x\"y\r\n.pdf"),
            "attachment; filename=\"x_y__.pdf\"; filename*=UTF-8''x%22y%0D%0A.pdf"
        );
        assert_eq!(
            content_disposition("é.txt"),
            "attachment; filename=\"_.txt\"; filename*=UTF-8''%C3%A9.txt"
        );
    }

    #[test]
    fn uploads_get_a_checksum_and_safe_defaults() {
        let doc = NewDocument::parse(
            DocumentType::Other,
            None,
            None,
            None,
            None,
            Some("bad\ntype".into()),
            b"abc".to_vec(),
        )
        .map_err(|e| e.to_string());
        let doc = doc.as_ref().map(|d| {
            (
                d.file_name.as_str(),
                d.content_type.as_str(),
                d.checksum.as_str(),
            )
        });
        assert_eq!(
            doc,
            Ok((
                "file",
                "application/octet-stream",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            ))
        );
        assert!(is_media_type("image/png"));
        assert!(is_media_type("text/plain; charset=utf-8"));
        assert!(!is_media_type("text"));
        assert!(!is_media_type("a/b/c"));
        assert!(
            NewDocument::parse(
                DocumentType::Other,
                None,
                None,
                None,
                Some("a\u{7}".into()),
                None,
                vec![]
            )
            .is_err()
        );
    }
}
