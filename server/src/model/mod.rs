//! The records and values every layer shares: typed ids, money, the ledger's records, kinds and
//! statuses. It depends on nothing else in the crate; `store`, `domain` and `api` depend on it
//! (`tests/layers.rs` keeps it so).

/// `FromStr` for a spelled enum with `ALL` and `as_str`: the stored spelling back to the value.
macro_rules! parse_spelled {
    ($($t:ty),*) => {$(
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| format!("unknown {}: {s:?}", stringify!($t)))
            }
        }
    )*};
}

pub mod bank_accounts;
pub mod counterparties;
pub mod documents;
pub mod entities;
pub mod ids;
pub mod ledger;
pub mod money;
pub mod page;
pub mod platforms;
pub mod positive_pay;
pub mod transfers;
