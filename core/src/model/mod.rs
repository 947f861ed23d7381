//! The records and values every layer shares: typed ids, money, the ledger's records, kinds and
//! statuses. It depends on nothing else in the crate; `store`, `domain` and `api` depend on it
//! (`tests/layers.rs` keeps it so).

/// An enumeration of kinds or statuses that is stored, serialized and sent in one spelling
/// per variant (`Variant = "SPELLING"`): the enum with serde's renames, `ALL`, `as_str`,
/// `FromStr` (an unknown spelling is an error naming the type) and `Display`.
macro_rules! spelled_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $spelling:literal),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $spelling)] $variant),*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The stored (and wire) spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $spelling),*
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| format!("unknown {}: {s:?}", stringify!($name)))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod bank_accounts;
pub mod counterparties;
pub mod documents;
pub mod entities;
pub mod events;
pub mod ids;
pub mod ledger;
pub mod money;
pub mod page;
pub mod platforms;
pub mod positive_pay;
pub mod transfers;
pub mod webhooks;
