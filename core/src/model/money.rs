//! Currencies and amounts.
//!
//! Money is always an `i64` count of the currency's minor unit (cents, fils, yen); there are no
//! floats anywhere on the money path. Supported currencies and their ISO 4217 minor-unit exponent
//! come from the single table [`CURRENCIES`].
//!
//! The `balance.*` list filters may be given without a currency: the value then has two implied
//! decimals ("1234" means 12.34) and is converted to each currency's own minor unit:
//! 1234 USD cents, 12 JPY, 12340 BHD fils ([`two_decimals_to_minor`]). Converting to a currency
//! with fewer decimals loses precision, so a comparison must round in the direction that keeps it
//! exact over integers: `x > 12.34` is `x > 12` but `x >= 12.34` is `x >= 13`. That is
//! [`comparison_bound`].

use std::fmt;

/// A supported ISO 4217 currency.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    code: &'static str,
    exponent: u8,
}

/// Every supported currency with its minor-unit exponent (ISO 4217).
pub const CURRENCIES: &[Currency] = &[
    Currency {
        code: "AUD",
        exponent: 2,
    },
    Currency {
        code: "BHD",
        exponent: 3,
    },
    Currency {
        code: "CAD",
        exponent: 2,
    },
    Currency {
        code: "CHF",
        exponent: 2,
    },
    Currency {
        code: "CLP",
        exponent: 0,
    },
    Currency {
        code: "CNY",
        exponent: 2,
    },
    Currency {
        code: "DKK",
        exponent: 2,
    },
    Currency {
        code: "EUR",
        exponent: 2,
    },
    Currency {
        code: "GBP",
        exponent: 2,
    },
    Currency {
        code: "HKD",
        exponent: 2,
    },
    Currency {
        code: "INR",
        exponent: 2,
    },
    Currency {
        code: "JOD",
        exponent: 3,
    },
    Currency {
        code: "JPY",
        exponent: 0,
    },
    Currency {
        code: "KRW",
        exponent: 0,
    },
    Currency {
        code: "KWD",
        exponent: 3,
    },
    Currency {
        code: "MXN",
        exponent: 2,
    },
    Currency {
        code: "NOK",
        exponent: 2,
    },
    Currency {
        code: "NZD",
        exponent: 2,
    },
    Currency {
        code: "OMR",
        exponent: 3,
    },
    Currency {
        code: "SEK",
        exponent: 2,
    },
    Currency {
        code: "SGD",
        exponent: 2,
    },
    Currency {
        code: "TND",
        exponent: 3,
    },
    Currency {
        code: "USD",
        exponent: 2,
    },
];

/// The exponent of the implied decimals of a currency-less `balance.*` filter.
pub const FILTER_DECIMALS: u8 = 2;

impl Currency {
    /// The currency for an upper-case ISO 4217 code; `None` when unsupported.
    ///
    /// Codes are case sensitive on the wire (`usd` is not a code), so no case folding here.
    pub fn from_code(code: &str) -> Option<Currency> {
        CURRENCIES.iter().copied().find(|c| c.code == code)
    }

    /// The default currency of new bank accounts.
    pub fn usd() -> Currency {
        Currency {
            code: "USD",
            exponent: 2,
        }
    }

    pub fn code(self) -> &'static str {
        self.code
    }

    /// Number of decimals of the minor unit (USD 2, JPY 0, BHD 3).
    pub fn exponent(self) -> u8 {
        self.exponent
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code)
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code)
    }
}

/// `10^exp` as an i64 (exponents here are at most a few).
fn pow10(exp: u32) -> Option<i64> {
    10i64.checked_pow(exp)
}

/// Rounding direction for conversions that lose precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// Towards negative infinity.
    Floor,
    /// Towards positive infinity.
    Ceil,
}

/// Converts a value with [`FILTER_DECIMALS`] implied decimals to `currency`'s minor units,
/// rounding as told when the currency has fewer decimals. `None` on overflow.
pub fn convert_two_decimals(value: i64, currency: Currency, rounding: Rounding) -> Option<i64> {
    let exponent = currency.exponent();
    if exponent >= FILTER_DECIMALS {
        value.checked_mul(pow10(u32::from(exponent - FILTER_DECIMALS))?)
    } else {
        let divisor = pow10(u32::from(FILTER_DECIMALS - exponent))?;
        // `div_euclid` floors for a positive divisor, also for negative balances.
        let floor = value.div_euclid(divisor);
        match rounding {
            Rounding::Floor => Some(floor),
            Rounding::Ceil if value.rem_euclid(divisor) == 0 => Some(floor),
            Rounding::Ceil => floor.checked_add(1),
        }
    }
}

/// The plain conversion of a two-decimal value (1234 → 1234 USD, 12 JPY, 12340 BHD): rounds
/// down where the currency has fewer decimals. `None` on overflow.
pub fn two_decimals_to_minor(value: i64, currency: Currency) -> Option<i64> {
    convert_two_decimals(value, currency, Rounding::Floor)
}

pub use crate::model::page::Comparison;

/// The bound in `currency`'s minor units such that, for every integer amount `x`,
/// `x <op> bound` holds exactly when `x <op> value/100` does. `None` on overflow.
pub fn comparison_bound(op: Comparison, value: i64, currency: Currency) -> Option<i64> {
    let rounding = match op {
        // x > 12.34 ⇔ x > 12 and x <= 12.34 ⇔ x <= 12 for integers x.
        Comparison::Gt | Comparison::Lte => Rounding::Floor,
        // x >= 12.34 ⇔ x >= 13 and x < 12.34 ⇔ x < 13.
        Comparison::Gte | Comparison::Lt => Rounding::Ceil,
    };
    convert_two_decimals(value, currency, rounding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cur(code: &str) -> Currency {
        Currency::from_code(code).expect("supported currency")
    }

    #[test]
    fn table_has_expected_exponents_and_no_duplicates() {
        assert_eq!(cur("USD").exponent(), 2);
        assert_eq!(cur("EUR").exponent(), 2);
        assert_eq!(cur("GBP").exponent(), 2);
        assert_eq!(cur("CAD").exponent(), 2);
        assert_eq!(cur("JPY").exponent(), 0);
        assert_eq!(cur("BHD").exponent(), 3);
        assert_eq!(Currency::usd(), cur("USD"));
        let mut codes: Vec<_> = CURRENCIES.iter().map(|c| c.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), CURRENCIES.len());
        assert!(
            CURRENCIES
                .iter()
                .all(|c| c.code().len() == 3 && c.code().bytes().all(|b| b.is_ascii_uppercase()))
        );
    }

    #[test]
    fn unknown_or_lower_case_codes_are_unsupported() {
        assert!(Currency::from_code("usd").is_none());
        assert!(Currency::from_code("XXX").is_none());
        assert!(Currency::from_code("").is_none());
    }

    #[test]
    fn two_decimal_values_convert_to_each_minor_unit() {
        assert_eq!(two_decimals_to_minor(1234, cur("USD")), Some(1234));
        assert_eq!(two_decimals_to_minor(1234, cur("JPY")), Some(12));
        assert_eq!(two_decimals_to_minor(1234, cur("BHD")), Some(12340));
        assert_eq!(two_decimals_to_minor(-1234, cur("JPY")), Some(-13));
        assert_eq!(two_decimals_to_minor(i64::MAX, cur("BHD")), None);
        assert_eq!(
            two_decimals_to_minor(i64::MAX, cur("JPY")),
            Some(i64::MAX / 100)
        );
    }

    #[test]
    fn comparison_bounds_are_exact_over_integers() {
        let jpy = cur("JPY");
        for value in -1000..1000i64 {
            for op in [
                Comparison::Gt,
                Comparison::Gte,
                Comparison::Lt,
                Comparison::Lte,
            ] {
                let bound = comparison_bound(op, value, jpy).expect("no overflow");
                for x in -20..20i64 {
                    // Compare x yen with value/100 yen using exact integer arithmetic.
                    let scaled = x * 100;
                    let expected = match op {
                        Comparison::Gt => scaled > value,
                        Comparison::Gte => scaled >= value,
                        Comparison::Lt => scaled < value,
                        Comparison::Lte => scaled <= value,
                    };
                    let actual = match op {
                        Comparison::Gt => x > bound,
                        Comparison::Gte => x >= bound,
                        Comparison::Lt => x < bound,
                        Comparison::Lte => x <= bound,
                    };
                    assert_eq!(actual, expected, "{op:?} {value} with x={x}, bound={bound}");
                }
            }
        }
    }
}
