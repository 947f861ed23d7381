//! Resource identifiers: `<prefix>_` followed by 27 base62 characters.
//!
//! Design note. The 27 characters encode 20 bytes (160 bits), the KSUID size: the first 6 bytes
//! are the creation time in Unix milliseconds (big-endian), the other 14 are from the operating
//! system's CSPRNG. KSUID proper uses whole seconds; milliseconds keep ids created in one burst
//! roughly in creation order while 112 random bits keep them unguessable. The base62 alphabet is
//! in ASCII order (`0-9A-Za-z`) and the encoding is left-padded, so comparing two ids as strings
//! compares their timestamps first. Lists still order by `(created_at, id)`: ids made in the same
//! millisecond are ordered randomly, which is fine for a tie-breaker.
//!
//! Parsing never fails loudly: [`PlatformId::parse`] and friends return `None` for anything
//! malformed (wrong prefix, length, alphabet or a value above 2^160), and callers treat `None`
//! exactly like an id that does not exist, so a malformed path id is a 404 and never a 500.

use chrono::{DateTime, Utc};
use rand::RngCore;

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Length of the encoded part after the prefix.
pub const ENCODED_LEN: usize = 27;
const RAW_LEN: usize = 20;
const TIME_LEN: usize = 6;

/// Encodes 20 bytes as exactly 27 base62 characters (big-endian, left-padded with `0`).
fn encode_base62(raw: &[u8; RAW_LEN]) -> String {
    // Repeated division of the big-endian number by 62; 20 bytes make this a few hundred
    // operations, not worth a bignum dependency.
    let mut number = *raw;
    let mut out = [b'0'; ENCODED_LEN];
    for slot in out.iter_mut().rev() {
        let mut remainder: u32 = 0;
        for byte in number.iter_mut() {
            let acc = (remainder << 8) | u32::from(*byte);
            *byte = (acc / 62) as u8;
            remainder = acc % 62;
        }
        *slot = ALPHABET[remainder as usize];
    }
    // Every byte of `out` comes from ALPHABET, which is ASCII.
    out.iter().map(|&b| char::from(b)).collect()
}

fn base62_digit(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some(u32::from(c - b'0')),
        b'A'..=b'Z' => Some(u32::from(c - b'A') + 10),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 36),
        _ => None,
    }
}

/// Decodes 27 base62 characters; `None` when the text is not base62 or exceeds 160 bits.
fn decode_base62(text: &str) -> Option<[u8; RAW_LEN]> {
    if text.len() != ENCODED_LEN {
        return None;
    }
    let mut number = [0u8; RAW_LEN];
    for c in text.bytes() {
        let mut carry = base62_digit(c)?;
        for byte in number.iter_mut().rev() {
            let acc = u32::from(*byte) * 62 + carry;
            *byte = (acc & 0xff) as u8;
            carry = acc >> 8;
        }
        if carry != 0 {
            return None;
        }
    }
    Some(number)
}

/// Makes the encoded part of a new id from a creation time and a random source.
pub fn generate_suffix(now: DateTime<Utc>, rng: &mut impl RngCore) -> String {
    let mut raw = [0u8; RAW_LEN];
    // Times before 1970 cannot come from a real clock; clamp rather than wrap.
    let millis = u64::try_from(now.timestamp_millis()).unwrap_or(0);
    raw[..TIME_LEN].copy_from_slice(&millis.to_be_bytes()[8 - TIME_LEN..]);
    rng.fill_bytes(&mut raw[TIME_LEN..]);
    encode_base62(&raw)
}

/// Checks `text` is `prefix` + `_` + a valid 27-character suffix.
pub fn is_valid(prefix: &str, text: &str) -> bool {
    text.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .and_then(decode_base62)
        .is_some()
}

/// The creation time in Unix milliseconds encoded in a valid id, if it is one.
pub fn timestamp_millis(prefix: &str, text: &str) -> Option<u64> {
    let raw = decode_base62(text.strip_prefix(prefix)?.strip_prefix('_')?)?;
    let mut bytes = [0u8; 8];
    bytes[8 - TIME_LEN..].copy_from_slice(&raw[..TIME_LEN]);
    Some(u64::from_be_bytes(bytes))
}

macro_rules! id_types {
    ($($(#[$doc:meta])* $name:ident => $prefix:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// Serializes as its text; deserializing trusts the text like [`Self::from_trusted`]
        /// (only our own stored snapshots are read back).
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The type prefix, without the underscore.
            pub const PREFIX: &'static str = $prefix;

            /// A new id created at `now`, random part from the thread-local CSPRNG.
            pub fn generate(now: DateTime<Utc>) -> Self {
                Self::generate_with(now, &mut rand::thread_rng())
            }

            /// A new id with an explicit random source (tests).
            pub fn generate_with(now: DateTime<Utc>, rng: &mut impl RngCore) -> Self {
                Self(format!("{}_{}", $prefix, generate_suffix(now, rng)))
            }

            /// Parses an id; `None` for anything malformed (treat as "not found").
            pub fn parse(text: &str) -> Option<Self> {
                is_valid($prefix, text).then(|| Self(text.to_owned()))
            }

            /// Wraps a value read back from our own database without re-validating it.
            pub fn from_trusted(text: String) -> Self {
                Self(text)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    )*};
}

id_types! {
    /// A platform (tenant).
    PlatformId => "plat";
    /// A person or business entity.
    EntityId => "enti";
    /// A bank account.
    BankAccountId => "bacc";
    /// An account number (routing and account number pair).
    AccountNumberId => "acno";
    /// A counterparty.
    CounterpartyId => "cpty";
    /// An uploaded document.
    DocumentId => "docu";
    /// An ACH positive pay rule.
    AchPositivePayRuleId => "appr";
    /// A book transfer.
    BookTransferId => "book";
    /// An ACH transfer.
    AchTransferId => "acht";
    /// An event (something that happened to a resource).
    EventId => "evnt";
    /// A webhook endpoint.
    WebhookEndpointId => "wend";
    /// One attempt to deliver an event to a webhook endpoint.
    WebhookDeliveryId => "wdlv";
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn at(millis: i64) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(millis)
            .single()
            .expect("valid timestamp")
    }

    #[test]
    fn generated_ids_have_prefix_and_27_base62_characters() {
        let id = BankAccountId::generate(Utc::now());
        let text = id.as_str();
        assert!(text.starts_with("bacc_"));
        assert_eq!(text.len(), 5 + ENCODED_LEN);
        assert!(text[5..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(BankAccountId::parse(text), Some(id));
    }

    #[test]
    fn encoding_round_trips_extremes() {
        for raw in [[0u8; RAW_LEN], [0xffu8; RAW_LEN]] {
            let text = encode_base62(&raw);
            assert_eq!(text.len(), ENCODED_LEN);
            assert_eq!(decode_base62(&text), Some(raw));
        }
        // The largest 160-bit value, as KSUID spells it.
        assert_eq!(
            encode_base62(&[0xff; RAW_LEN]),
            "aWgEPTl1tmebfsQzFP4bxwgy80V"
        );
    }

    #[test]
    fn later_ids_sort_after_earlier_ones() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut previous = EntityId::generate_with(at(1_700_000_000_000), &mut rng);
        for step in 1..200 {
            let next = EntityId::generate_with(at(1_700_000_000_000 + step), &mut rng);
            assert!(next > previous, "{next} should sort after {previous}");
            assert_eq!(
                timestamp_millis("enti", next.as_str()),
                Some(1_700_000_000_000 + step as u64)
            );
            previous = next;
        }
    }

    #[test]
    fn malformed_ids_are_rejected_without_panicking() {
        let good = PlatformId::generate(Utc::now()).into_string();
        let suffix = &good[5..];
        let cases = [
            String::new(),
            "plat_".to_owned(),
            format!("plat{suffix}"),
            format!("enti_{suffix}"),
            format!("PLAT_{suffix}"),
            format!("plat_{}", &suffix[1..]),
            format!("plat_{suffix}0"),
            format!("plat_{}-", &suffix[1..]),
            format!("plat_{}é", &suffix[2..]),
            // Above 2^160: 27 characters but not a possible encoding.
            "plat_zzzzzzzzzzzzzzzzzzzzzzzzzzz".to_owned(),
            "plat_aWgEPTl1tmebfsQzFP4bxwgy80W".to_owned(),
        ];
        for case in cases {
            assert!(
                PlatformId::parse(&case).is_none(),
                "{case:?} should be rejected"
            );
        }
        assert!(PlatformId::parse("plat_aWgEPTl1tmebfsQzFP4bxwgy80V").is_some());
    }

    #[test]
    fn random_part_differs_between_ids_of_the_same_millisecond() {
        let now = Utc::now();
        let a = DocumentId::generate(now);
        let b = DocumentId::generate(now);
        assert_ne!(a, b);
    }
}
