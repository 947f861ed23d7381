//! Counterparties: the parties on the other side of transfers, with their bank details.
//!
//! The request schema already bounds lengths and character sets; the rules here are the ones a
//! pattern cannot say: the ABA checksum, BIC structure, account numbers per routing type (at
//! most 17 digits for ABA; an IBAN, checked with ISO 7064 mod-97, when a BIC counterparty's
//! account starts with a country code), and email shape. They are re-checked here in full so
//! the domain never relies on the edge for its invariants.
//!
//! Deletion is soft (`deleted_at`): transfers may name a counterparty long after it is deleted,
//! while every read and list treats a deleted one as absent.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::domain::bank_codes::{is_valid_aba_routing_number, is_valid_bic};
use crate::domain::events::{self, EventData};
use crate::model::counterparties::{
    CounterpartyFields, CounterpartyRecord, ListFilter, RoutingNumberType,
};
use crate::model::events::EventType;
use crate::model::ids::{CounterpartyId, PlatformId};
use crate::model::page::{Page, PageRequest, PaginationError};
use crate::store::counterparties as store;
use crate::store::{StoreError, Tx};

/// Longest ABA account number, in digits.
pub const MAX_ABA_ACCOUNT_DIGITS: usize = 17;
/// Longest name and description, in characters.
pub const MAX_TEXT_LEN: usize = 255;
/// Longest email address.
pub const MAX_EMAIL_LEN: usize = 254;
/// Longest legal id, local bank code and local account number.
pub const MAX_CODE_LEN: usize = 64;

/// Failures of counterparty operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum CounterpartyError {
    /// Field path → what is wrong with it; every offending field at once.
    #[error("invalid counterparty: {0:?}")]
    InvalidFields(BTreeMap<String, String>),
    #[error("counterparty not found")]
    NotFound,
    #[error(transparent)]
    Pagination(PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(CounterpartyError);

/// A counterparty as a client asks for it, before any check.
pub type NewCounterparty = CounterpartyFields;

/// A [`NewCounterparty`] whose fields are all valid; only [`validate`] makes one.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidCounterparty(NewCounterparty);

/// Field name → what is wrong with it.
type Problems = BTreeMap<String, String>;

/// Checks every field of `new` (no database), collecting all problems.
pub fn validate(new: NewCounterparty) -> Result<ValidCounterparty, CounterpartyError> {
    let mut problems = Problems::new();
    check_bank_fields(&new, &mut problems);
    check_text_fields(&new, &mut problems);
    check_contact_fields(&new, &mut problems);
    if problems.is_empty() {
        Ok(ValidCounterparty(new))
    } else {
        Err(CounterpartyError::InvalidFields(problems))
    }
}

/// The routing and account numbers, by what the routing number is.
fn check_bank_fields(new: &NewCounterparty, problems: &mut Problems) {
    let mut bad = |field: &str, message: String| {
        problems.insert(field.to_owned(), message);
    };
    match new.routing_number_type {
        RoutingNumberType::Aba => {
            if !is_valid_aba_routing_number(&new.routing_number) {
                bad(
                    "routing_number",
                    "must be a 9-digit ABA routing number with a valid checksum".to_owned(),
                );
            }
            if !is_aba_account_number(&new.account_number) {
                bad(
                    "account_number",
                    format!(
                        "must be 1 to {MAX_ABA_ACCOUNT_DIGITS} digits for an ABA routing number"
                    ),
                );
            }
        }
        RoutingNumberType::Bic => {
            if !is_valid_bic(&new.routing_number) {
                bad(
                    "routing_number",
                    "must be a BIC of 8 or 11 characters".to_owned(),
                );
            }
            if let Err(message) = check_bic_account_number(&new.account_number) {
                bad("account_number", message);
            }
        }
    }
}

/// The free-text fields: their lengths, and no control characters.
fn check_text_fields(new: &NewCounterparty, problems: &mut Problems) {
    let text_fields = [
        ("name", &new.name, 1, MAX_TEXT_LEN),
        ("description", &new.description, 0, MAX_TEXT_LEN),
        ("legal_id", &new.legal_id, 0, MAX_CODE_LEN),
        ("local_bank_code", &new.local_bank_code, 0, MAX_CODE_LEN),
        (
            "local_account_number",
            &new.local_account_number,
            0,
            MAX_CODE_LEN,
        ),
    ];
    for (field, value, min, max) in text_fields {
        let Some(value) = value else { continue };
        let len = value.chars().count();
        let problem = if len < min || len > max {
            format!("must be {min} to {max} characters long")
        } else if value.chars().any(char::is_control) {
            "must not contain control characters".to_owned()
        } else {
            continue;
        };
        problems.insert(field.to_owned(), problem);
    }
}

/// The email address and the phone number, when given.
fn check_contact_fields(new: &NewCounterparty, problems: &mut Problems) {
    if let Some(email) = &new.email
        && !is_plain_email(email)
    {
        problems.insert(
            "email".to_owned(),
            "must be a plain email address (name@example.com)".to_owned(),
        );
    }
    if let Some(phone) = &new.phone
        && !is_e164(phone)
    {
        problems.insert(
            "phone".to_owned(),
            "must be in E.164 format: + and 8 to 15 digits".to_owned(),
        );
    }
}

fn is_aba_account_number(text: &str) -> bool {
    (1..=MAX_ABA_ACCOUNT_DIGITS).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

/// A BIC counterparty's account number: an IBAN when it starts with two letters (a country
/// code), otherwise a domestic number of up to 34 upper-case letters and digits.
fn check_bic_account_number(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let upper_alnum = |c: &u8| c.is_ascii_uppercase() || c.is_ascii_digit();
    if b.is_empty() || b.len() > 34 || !b.iter().all(upper_alnum) {
        return Err("must be 1 to 34 upper-case letters and digits".to_owned());
    }
    if b.len() >= 2 && b[..2].iter().all(u8::is_ascii_uppercase) && !is_valid_iban(text) {
        return Err("must be a valid IBAN (country code, check digits, mod-97)".to_owned());
    }
    Ok(())
}

/// Whether `text` is an IBAN: 2 letters, 2 check digits, up to 30 letters and digits, and the
/// ISO 7064 mod-97-10 check (rotate the first four characters to the end, letters as 10..35,
/// the number mod 97 is 1). Upper case only, without spaces.
pub fn is_valid_iban(text: &str) -> bool {
    let b = text.as_bytes();
    if !(15..=34).contains(&b.len())
        || !b[..2].iter().all(u8::is_ascii_uppercase)
        || !b[2..4].iter().all(u8::is_ascii_digit)
        || !b[4..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return false;
    }
    // Digit by digit, so the (up to 68-digit) number never needs a bignum.
    let mut remainder: u32 = 0;
    for &c in b[4..].iter().chain(&b[..4]) {
        let value = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

/// A plain address: one `@`, a non-empty local part, a dotted domain, no spaces or controls.
fn is_plain_email(text: &str) -> bool {
    if text.len() > MAX_EMAIL_LEN || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && domain.split('.').all(|label| !label.is_empty())
}

fn is_e164(text: &str) -> bool {
    text.strip_prefix('+').is_some_and(|digits| {
        (8..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

super::service! {
    /// Counterparties: create, read, delete and list, each in its own transaction.
    Counterparties
}

impl Counterparties<'_> {
    /// Creates the counterparty in its own write transaction.
    pub async fn create(
        &self,
        platform_id: &PlatformId,
        new: &ValidCounterparty,
    ) -> Result<CounterpartyRecord, CounterpartyError> {
        let now = self.clock.now();
        self.db
            .write(|tx| Box::pin(create_in(tx, now, platform_id, new)))
            .await
    }

    /// The platform's live counterparty `id` (a malformed id is simply not found).
    pub async fn get(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<CounterpartyRecord, CounterpartyError> {
        let id = CounterpartyId::parse(id);
        super::get_one(
            self.db,
            platform_id,
            id,
            || CounterpartyError::NotFound,
            |tx, p, id| Box::pin(store::get(tx, p, id)),
        )
        .await
    }

    /// Deletes the platform's counterparty `id`; later reads and lists do not see it.
    pub async fn delete(
        &self,
        platform_id: &PlatformId,
        id: &str,
    ) -> Result<(), CounterpartyError> {
        let now = self.clock.now();
        let id = CounterpartyId::parse(id).ok_or(CounterpartyError::NotFound)?;
        self.db
            .write(|tx| {
                let id = &id;
                Box::pin(async move {
                    // The event shows the counterparty as its last GET did.
                    let Some(last) = store::get(tx, platform_id, id).await? else {
                        return Err(CounterpartyError::NotFound);
                    };
                    if !store::mark_deleted(tx, platform_id, id, now).await? {
                        return Err(CounterpartyError::NotFound);
                    }
                    let deleted = EventType::CounterpartyDeleted;
                    record_event(tx, platform_id, now, deleted, last).await
                })
            })
            .await
    }

    /// One page of the platform's counterparties matching `filter`.
    pub async fn list(
        &self,
        platform_id: &PlatformId,
        filter: &ListFilter,
        request: &PageRequest,
    ) -> Result<Page<CounterpartyRecord>, CounterpartyError> {
        self.db
            .read(|tx| {
                Box::pin(async move { Ok(store::page(tx, platform_id, filter, request).await?) })
            })
            .await
    }
}

/// Creates the counterparty inside the caller's write transaction.
async fn create_in(
    tx: &mut Tx<'_>,
    now: DateTime<Utc>,
    platform_id: &PlatformId,
    new: &ValidCounterparty,
) -> Result<CounterpartyRecord, CounterpartyError> {
    let record = CounterpartyRecord {
        id: CounterpartyId::generate(now),
        fields: new.0.clone(),
        created_at: now,
        updated_at: now,
    };
    store::insert(tx, platform_id, &record).await?;
    let created = EventType::CounterpartyCreated;
    record_event(tx, platform_id, now, created, record.clone()).await?;
    Ok(record)
}

/// An event about a counterparty, in the change's transaction.
async fn record_event(
    tx: &mut Tx<'_>,
    platform_id: &PlatformId,
    now: DateTime<Utc>,
    event_type: EventType,
    counterparty: CounterpartyRecord,
) -> Result<(), CounterpartyError> {
    let data = EventData::Counterparty(Box::new(counterparty));
    Ok(events::record(tx, now, platform_id, event_type, data).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aba() -> NewCounterparty {
        NewCounterparty {
            routing_number: "121000248".to_owned(),
            account_number: "123456789012".to_owned(),
            ..NewCounterparty::default()
        }
    }

    fn bic(account: &str) -> NewCounterparty {
        NewCounterparty {
            routing_number: "DEUTDEFF".to_owned(),
            routing_number_type: RoutingNumberType::Bic,
            account_number: account.to_owned(),
            ..NewCounterparty::default()
        }
    }

    fn invalid_fields(new: NewCounterparty) -> Vec<String> {
        match validate(new) {
            Err(CounterpartyError::InvalidFields(f)) => f.into_keys().collect(),
            other => panic!("expected invalid fields, got {other:?}"),
        }
    }

    #[test]
    fn a_domestic_counterparty_needs_only_routing_and_account_numbers() {
        assert!(validate(aba()).is_ok());
    }

    #[test]
    fn aba_routing_numbers_need_a_valid_checksum() {
        let mut new = aba();
        new.routing_number = "121000249".to_owned();
        assert_eq!(invalid_fields(new), ["routing_number"]);
        let mut new = aba();
        new.routing_number = "DEUTDEFF".to_owned();
        assert_eq!(invalid_fields(new), ["routing_number"]);
    }

    #[test]
    fn aba_account_numbers_are_1_to_17_digits() {
        for ok in ["1", "12345678901234567"] {
            let mut new = aba();
            new.account_number = ok.to_owned();
            assert!(validate(new).is_ok(), "{ok}");
        }
        for bad in ["", "123456789012345678", "12345A", "DE89370400440532013000"] {
            let mut new = aba();
            new.account_number = bad.to_owned();
            assert_eq!(invalid_fields(new), ["account_number"], "{bad}");
        }
    }

    #[test]
    fn bic_counterparties_take_8_or_11_character_bics() {
        assert!(validate(bic("DE89370400440532013000")).is_ok());
        let mut new = bic("DE89370400440532013000");
        new.routing_number = "DEUTDEFF500".to_owned();
        assert!(validate(new).is_ok());
        for bad in ["DEUTDEF", "DEUTDEFF5", "121000248", "deutdeff"] {
            let mut new = bic("DE89370400440532013000");
            new.routing_number = bad.to_owned();
            assert_eq!(invalid_fields(new), ["routing_number"], "{bad}");
        }
    }

    #[test]
    fn ibans_pass_the_mod_97_check() {
        for good in [
            "DE89370400440532013000",
            "GB29NWBK60161331926819",
            "FR1420041010050500013M02606",
            "NO9386011117947",
        ] {
            assert!(is_valid_iban(good), "{good}");
        }
        for bad in [
            "DE89370400440532013001",
            "GB29NWBK60161331926818",
            "DE8937040044",
            "D189370400440532013000",
        ] {
            assert!(!is_valid_iban(bad), "{bad}");
        }
        assert_eq!(
            invalid_fields(bic("DE89370400440532013001")),
            ["account_number"]
        );
        // A BIC counterparty's account that is not an IBAN is a plain alphanumeric number.
        assert!(validate(bic("0532013000")).is_ok());
        assert_eq!(invalid_fields(bic("05-32013000")), ["account_number"]);
    }

    #[test]
    fn optional_fields_are_checked_and_every_bad_field_is_reported() {
        let mut new = aba();
        new.routing_number = "000000001".to_owned();
        new.email = Some("not an email".to_owned());
        new.phone = Some("4155550123".to_owned());
        new.name = Some(String::new());
        new.description = Some("x".repeat(256));
        assert_eq!(
            invalid_fields(new),
            ["description", "email", "name", "phone", "routing_number"]
        );
        let mut new = aba();
        new.email = Some("jane@example.com".to_owned());
        new.phone = Some("+14155550123".to_owned());
        new.name = Some("Jane Doe".to_owned());
        assert!(validate(new).is_ok());
    }

    #[test]
    fn email_addresses_must_be_plain() {
        for good in ["a@b.co", "jane.doe+x@mail.example.com"] {
            assert!(is_plain_email(good), "{good}");
        }
        for bad in ["", "@b.co", "a@", "a@b", "a@@b.co", "a b@c.co", "a@b..co"] {
            assert!(!is_plain_email(bad), "{bad}");
        }
    }
}
