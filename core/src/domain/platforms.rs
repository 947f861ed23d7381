//! Platforms (tenants): creation with everything a platform starts with.

use std::collections::HashSet;

use rand::Rng;

use crate::auth::{ApiKey, KeyMode, insert_new_key};
use crate::clock::Clock;
use crate::model::bank_accounts::{AccountNumberRecord, BankAccountRecord};
use crate::model::entities::EntityRecord;
use crate::model::entities::{RequirementField, RequirementFieldType};
use crate::model::ids::{AccountNumberId, BankAccountId, EntityId, PlatformId};
use crate::model::ledger::AccountType;
use crate::model::money::Currency;
use crate::model::platforms::PlatformRecord;
use crate::store::bank_accounts;
use crate::store::entities;
use crate::store::platforms;
use crate::store::{Db, StoreError, Tx};

/// The root account types every platform gets, in creation order.
pub const ROOT_ACCOUNT_TYPES: [AccountType; 3] = [
    AccountType::ProgramReserve,
    AccountType::OverdraftReserve,
    AccountType::NetworkSettlementAccount,
];

/// Longest platform name.
pub const MAX_NAME_LEN: usize = 255;

/// Bank identifiers that new account numbers carry (from the server configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankSettings {
    pub routing_number: String,
    pub bic: String,
}

/// Failures of platform operations. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("platform name must be 1 to {MAX_NAME_LEN} characters without control characters")]
    InvalidName,
    #[error("platform not found")]
    NotFound,
    #[error("could not find an unused account number")]
    AccountNumbersExhausted,
    /// A setting is invalid; (field, message).
    #[error("{0}: {1}")]
    InvalidSetting(&'static str, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(PlatformError);

/// What creating a platform made.
#[derive(Debug, Clone)]
pub struct CreatedPlatform {
    pub platform: PlatformRecord,
    pub root_entity_id: EntityId,
    /// The three root accounts, in [`ROOT_ACCOUNT_TYPES`] order.
    pub root_accounts: Vec<BankAccountId>,
    /// The first `test_` key; shown once, stored only as a hash.
    pub api_key: ApiKey,
}

fn validate_name(name: &str) -> Result<String, PlatformError> {
    let name = name.trim();
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_LEN
        && !name.chars().any(char::is_control);
    if ok {
        Ok(name.to_owned())
    } else {
        Err(PlatformError::InvalidName)
    }
}

/// Creates a platform in one transaction: the platform, its root BUSINESS entity (`is_root`,
/// VERIFIED), the three root bank accounts owned by it (each with a default account number) and
/// a first `test_` key.
pub async fn create_platform(
    db: &Db,
    clock: &dyn Clock,
    bank: &BankSettings,
    name: &str,
) -> Result<CreatedPlatform, PlatformError> {
    let name = validate_name(name)?;
    db.write(|tx| {
        let name = &name;
        Box::pin(async move { create_in(tx, clock, bank, name).await })
    })
    .await
}

/// On an empty database, creates a platform named "Sandbox" and answers it; otherwise `None`.
/// The check and the creation share one write transaction, so two processes starting together
/// on SQLite cannot both create one. (On PostgreSQL they could; the second platform is harmless.)
pub async fn ensure_sandbox_platform(
    db: &Db,
    clock: &dyn Clock,
    bank: &BankSettings,
) -> Result<Option<CreatedPlatform>, PlatformError> {
    db.write(|tx| {
        Box::pin(async move {
            if platforms::any_exists(tx).await? {
                return Ok(None);
            }
            Ok(Some(create_in(tx, clock, bank, "Sandbox").await?))
        })
    })
    .await
}

super::service! {
    /// The caller's own platform: its settings.
    Platforms
}

impl Platforms<'_> {
    /// Reads a platform's settings.
    pub async fn get_platform(
        &self,
        platform_id: &PlatformId,
    ) -> Result<PlatformRecord, PlatformError> {
        let db = self.db;
        db.read_single(|tx| Box::pin(async move { platforms::get(tx, platform_id).await }))
            .await?
            .ok_or(PlatformError::NotFound)
    }

    /// Validates and applies `update` to the platform's settings.
    pub async fn update_settings(
        &self,
        platform_id: &PlatformId,
        update: SettingsUpdate,
    ) -> Result<PlatformRecord, PlatformError> {
        let (db, clock) = (self.db, self.clock);
        if let Some(tz) = &update.reporting_time_zone
            && tz.parse::<chrono_tz::Tz>().is_err()
        {
            return Err(PlatformError::InvalidSetting(
                "reporting_time_zone",
                format!("`{tz}` is not an IANA time zone name"),
            ));
        }
        let requirements = match &update.additional_requirements {
            None => None,
            Some(fields) => Some(requirement_fields_json(fields)?),
        };
        let now = clock.now();
        db.write(|tx| {
            let tz = update.reporting_time_zone.as_deref();
            let req = requirements.as_deref();
            Box::pin(async move {
                if !platforms::update_settings(tx, platform_id, tz, req, now).await? {
                    return Err(PlatformError::NotFound);
                }
                platforms::get(tx, platform_id)
                    .await?
                    .ok_or(PlatformError::NotFound)
            })
        })
        .await
    }
}

/// The platform's additional requirement fields, checked (unique names; `values` exactly for
/// enum fields, and not empty), as the JSON the platform row stores.
fn requirement_fields_json(fields: &[RequirementField]) -> Result<String, PlatformError> {
    let invalid =
        |message: String| PlatformError::InvalidSetting("additional_requirements", message);
    let mut seen = HashSet::new();
    for (i, f) in fields.iter().enumerate() {
        if !seen.insert(f.name.as_str()) {
            return Err(invalid(format!("field name `{}` appears twice", f.name)));
        }
        let is_enum = f.field_type == RequirementFieldType::Enum;
        match (&f.values, is_enum) {
            (None, true) => return Err(invalid(format!("[{i}] an enum field needs `values`"))),
            (Some(v), true) if v.is_empty() => {
                return Err(invalid(format!("[{i}] `values` must not be empty")));
            }
            (Some(_), false) => {
                return Err(invalid(format!("[{i}] `values` is only for enum fields")));
            }
            _ => {}
        }
    }
    Ok(serde_json::to_string(fields).map_err(|e| StoreError::Corrupt(e.to_string()))?)
}

async fn create_in(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    bank: &BankSettings,
    name: &str,
) -> Result<CreatedPlatform, PlatformError> {
    let now = clock.now();
    let platform = PlatformRecord {
        id: PlatformId::generate(now),
        name: name.to_owned(),
        reporting_time_zone: None,
        additional_requirements: "[]".to_owned(),
        created_at: now,
        updated_at: now,
    };
    platforms::insert(tx, &platform).await?;

    let root = EntityRecord {
        id: EntityId::generate(now),
        platform_id: platform.id.clone(),
        entity_type: crate::model::entities::EntityType::Business,
        name: name.to_owned(),
        is_root: true,
        requires_screening: false,
        verification_status: crate::model::entities::VerificationStatus::Verified,
        first_name: None,
        last_name: None,
        business_name: Some(name.to_owned()),
        created_at: now,
        updated_at: now,
    };
    entities::insert(tx, &root).await?;

    let mut root_accounts = Vec::with_capacity(ROOT_ACCOUNT_TYPES.len());
    for account_type in ROOT_ACCOUNT_TYPES {
        let mut account = BankAccountRecord::opened(
            BankAccountId::generate(now),
            platform.id.clone(),
            account_type,
            root_description(account_type).to_owned(),
            Currency::usd().code().to_owned(),
            now,
        );
        open_account(tx, clock, bank, &mut account, &root.id).await?;
        root_accounts.push(account.id);
    }

    let api_key = insert_new_key(tx, &platform.id, KeyMode::Test, now).await?;
    Ok(CreatedPlatform {
        platform,
        root_entity_id: root.id,
        root_accounts,
        api_key,
    })
}

fn root_description(account_type: AccountType) -> &'static str {
    match account_type {
        AccountType::ProgramReserve => "Program reserve",
        AccountType::OverdraftReserve => "Overdraft reserve",
        AccountType::NetworkSettlementAccount | AccountType::Checking => "Network settlement",
    }
}

/// Digits of generated account numbers (the API allows 12 to 17).
pub const ACCOUNT_NUMBER_DIGITS: usize = 15;

/// A random account number: [`ACCOUNT_NUMBER_DIGITS`] digits, no leading zero (so that tools
/// that treat it as a number do not shorten it).
pub fn random_account_number(rng: &mut impl Rng) -> String {
    let mut out = String::with_capacity(ACCOUNT_NUMBER_DIGITS);
    out.push(char::from(b'1' + rng.gen_range(0..9u8)));
    for _ in 1..ACCOUNT_NUMBER_DIGITS {
        out.push(char::from(b'0' + rng.gen_range(0..10u8)));
    }
    out
}

/// Stores a new `account` owned by `owner` inside `tx`, with its default account number
/// (answered, and set on `account`). Deferred writes, as [`bank_accounts::insert`] says.
pub(crate) async fn open_account(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    bank: &BankSettings,
    account: &mut BankAccountRecord,
    owner: &EntityId,
) -> Result<AccountNumberRecord, PlatformError> {
    let (platform_id, now) = (&account.platform_id, account.created_at);
    bank_accounts::insert(tx, account).await?;
    bank_accounts::add_owner(tx, platform_id, &account.id, owner, 0, now).await?;
    let number = create_account_number(tx, clock, bank, platform_id, &account.id, "").await?;
    bank_accounts::set_default_account_number(tx, platform_id, &account.id, &number.id, now)
        .await?;
    account.default_account_number_id = Some(number.id.clone());
    Ok(number)
}

/// Creates an account number on a bank account inside `tx`, drawing random numbers until one is
/// unused (collisions are astronomically rare at 15 digits; the bound stops a broken RNG).
pub async fn create_account_number(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    bank: &BankSettings,
    platform_id: &PlatformId,
    bank_account_id: &BankAccountId,
    description: &str,
) -> Result<AccountNumberRecord, PlatformError> {
    const ATTEMPTS: usize = 8;
    let now = clock.now();
    for _ in 0..ATTEMPTS {
        let record = AccountNumberRecord {
            id: AccountNumberId::generate(now),
            platform_id: platform_id.clone(),
            bank_account_id: bank_account_id.clone(),
            account_number: random_account_number(&mut rand::thread_rng()),
            routing_number: bank.routing_number.clone(),
            bic: bank.bic.clone(),
            description: description.to_owned(),
            check_issuing_positive_pay_required: false,
            created_at: now,
            updated_at: now,
        };
        if bank_accounts::insert_account_number_if_unique(tx, &record).await? {
            return Ok(record);
        }
    }
    Err(PlatformError::AccountNumbersExhausted)
}

/// A change of platform settings (`PATCH /platform`); `None` keeps the current value.
#[derive(Debug, Clone, Default)]
pub struct SettingsUpdate {
    pub reporting_time_zone: Option<String>,
    pub additional_requirements: Option<Vec<RequirementField>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(validate_name("  Acme  ").ok().as_deref(), Some("Acme"));
        assert!(validate_name("").is_err());
        assert!(validate_name("   ").is_err());
        assert!(validate_name("a\nb").is_err());
        assert!(validate_name(&"x".repeat(MAX_NAME_LEN)).is_ok());
        assert!(validate_name(&"x".repeat(MAX_NAME_LEN + 1)).is_err());
    }

    #[test]
    fn account_numbers_are_15_digits_without_leading_zero() {
        let mut rng = rand::thread_rng();
        for _ in 0..1000 {
            let n = random_account_number(&mut rng);
            assert_eq!(n.len(), ACCOUNT_NUMBER_DIGITS);
            assert!(n.bytes().all(|b| b.is_ascii_digit()));
            assert_ne!(n.as_bytes()[0], b'0');
        }
    }
}
