//! Documents as the rules and the store share them: the stored metadata, the list filter, and
//! a document with the signature of its download link.

use crate::model::page::CreatedRange;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::ids::{DocumentId, EntityId, PlatformId};

spelled_enum! {
    /// What a document is.
    pub enum DocumentType {
        IdentityLicense = "identity_license",
        IdentityPassport = "identity_passport",
        IdentityUtility = "identity_utility",
        BankStatement = "bank_statement",
        W9 = "w9",
        IrsLetter = "irs_letter",
        CertificateOfBusinessFormation = "certificate_of_business_formation",
        EinConfirmation = "ein_confirmation",
        CheckAttachment = "check_attachment",
        MonthlyStatement = "monthly_statement",
        CardDisputeEvidence = "card_dispute_evidence",
        Other = "other",
    }
}

/// A stored document's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentRecord {
    pub id: DocumentId,
    pub platform_id: PlatformId,
    pub entity_id: Option<EntityId>,
    pub document_type: DocumentType,
    pub tag: Option<String>,
    pub description: Option<String>,
    pub file_name: String,
    pub content_type: String,
    pub size: i64,
    /// SHA-256 of the content, lower-case hex.
    pub checksum: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Filters of `GET /documents`; `None` does not filter.
#[derive(Debug, Clone, Default)]
pub struct DocumentFilter {
    pub created: CreatedRange,
    /// Case-insensitive substring of the description.
    pub description: Option<String>,
    /// Exact file name.
    pub file_name: Option<String>,
    /// Exact tag.
    pub tag: Option<String>,
    /// Exact type.
    pub document_type: Option<DocumentType>,
}

/// A document with its signed download link (`expires`, Unix seconds, and the signature): what
/// every read answers. The link's absolute URL depends on where the server is reached, so the
/// caller puts it together with [`SignedDocument::url`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignedDocument {
    pub record: DocumentRecord,
    pub expires: i64,
    pub signature: String,
}

impl SignedDocument {
    /// The absolute download link under `base` (`http://host:port`).
    pub fn url(&self, base: &str) -> String {
        format!(
            "{base}/documents/{}/content?expires={}&signature={}",
            self.record.id.as_str(),
            self.expires,
            self.signature
        )
    }
}
