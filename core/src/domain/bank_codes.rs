//! Bank identifiers: ABA routing numbers and BICs.

/// Whether `text` is a 9-digit ABA routing number with a valid checksum
/// (3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 mod 10).
pub fn is_valid_aba_routing_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 9 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    const WEIGHTS: [u32; 3] = [3, 7, 1];
    let sum: u32 = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| WEIGHTS[i % 3] * u32::from(b - b'0'))
        .sum();
    sum.is_multiple_of(10)
}

/// Whether `text` is a BIC (ISO 9362): 4 letters (institution), 2 letters (country),
/// 2 letters or digits (location), and optionally 3 letters or digits (branch). Upper case only.
pub fn is_valid_bic(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 8 && b.len() != 11 {
        return false;
    }
    let upper_alnum = |c: &u8| c.is_ascii_uppercase() || c.is_ascii_digit();
    b[..6].iter().all(u8::is_ascii_uppercase) && b[6..].iter().all(upper_alnum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_routing_numbers_pass_the_checksum() {
        for good in ["021000021", "011000015", "026009593", "121000358"] {
            assert!(is_valid_aba_routing_number(good), "{good}");
        }
    }

    #[test]
    fn bad_routing_numbers_fail() {
        for bad in [
            "021000022",
            "02100002",
            "0210000210",
            "02100002a",
            "",
            "０21000021",
        ] {
            assert!(!is_valid_aba_routing_number(bad), "{bad}");
        }
    }

    #[test]
    fn bics_of_8_or_11_characters_pass() {
        assert!(is_valid_bic("BANKUS33XXX"));
        assert!(is_valid_bic("DEUTDEFF"));
        assert!(is_valid_bic("DEUTDEFF500"));
        assert!(!is_valid_bic("DEUTDEF"));
        assert!(!is_valid_bic("deutdeff"));
        assert!(!is_valid_bic("DEU1DEFF"));
        assert!(!is_valid_bic("BANKUS33XX"));
    }
}
