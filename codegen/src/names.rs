//! Turning document names into Rust identifiers, the same way every time.

/// A name as one JSON pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`).
pub fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Words of a name: split on non-alphanumerics and on lower→upper case changes. A non-ASCII
/// letter or digit is a word of its own, spelled `u` and its code point in hex (`é` → `u00e9`),
/// so that names in any script stay distinct, stable and ASCII.
fn words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii() && c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            words.push(format!("u{:04x}", c as u32));
            continue;
        }
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1);
        let boundary = c.is_ascii_uppercase()
            && !cur.is_empty()
            && (prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
                || (prev.is_some_and(|p| p.is_ascii_uppercase())
                    && next.is_some_and(|n| n.is_ascii_lowercase())));
        if boundary {
            words.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// `bank_account-id.gte` → `bank_account_id_gte`; keywords get `r#` or a trailing `_`.
pub fn snake(s: &str) -> String {
    let mut out = words(s)
        .iter()
        .map(|w| w.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    if out.is_empty() {
        out.push_str("value");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A method name for an `operationId` (or `method path`): snake case, a keyword gets a
/// trailing `_`.
pub fn method_name(s: &str) -> String {
    let name = snake(s);
    if is_keyword(&name) {
        format!("{name}_")
    } else {
        name
    }
}

/// `bank accounts` / `bank_accounts` / `BANK_ACCOUNTS` → `BankAccounts`.
pub fn camel(s: &str) -> String {
    let mut out = String::new();
    for w in words(s) {
        let lower = if w
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            w.to_ascii_lowercase()
        } else {
            w
        };
        let mut cs = lower.chars();
        if let Some(f) = cs.next() {
            out.push(f.to_ascii_uppercase());
            out.extend(cs);
        }
    }
    if out.is_empty() {
        out.push_str("Value");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    if is_keyword(&out) {
        out.push('_');
    }
    out
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
];

pub fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// Whether `s` must be written `r#s` (or cannot be raw at all).
pub fn needs_raw(s: &str) -> bool {
    is_keyword(s)
}

/// Keywords that cannot be raw identifiers get a trailing underscore instead.
pub fn field_ident(s: &str) -> String {
    match s {
        "self" | "Self" | "super" | "crate" | "_" => format!("{s}_"),
        _ => s.to_string(),
    }
}

/// A field or parameter name: snake case, unique among `taken`, a keyword raw (`r#type`) or
/// with a trailing `_` where it cannot be raw (`self_`).
pub fn field_name(name: &str, taken: &mut std::collections::BTreeSet<String>) -> String {
    let rust = unique(snake(name), taken);
    if !needs_raw(&rust) {
        return rust;
    }
    let plain = field_ident(&rust);
    if plain.ends_with('_') {
        plain
    } else {
        format!("r#{plain}")
    }
}

/// Makes `name` unique among `taken` by appending a counter.
pub fn unique(name: String, taken: &mut std::collections::BTreeSet<String>) -> String {
    if taken.insert(name.clone()) {
        return name;
    }
    for i in 2.. {
        let candidate = format!("{name}{i}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
    }
    unreachable!("an unbounded counter always finds a free name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_handles_dots_dashes_and_case() {
        assert_eq!(snake("balance.gte"), "balance_gte");
        assert_eq!(snake("Idempotency-Key"), "idempotency_key");
        assert_eq!(snake("camelCaseName"), "camel_case_name");
        assert_eq!(snake("showPetById"), "show_pet_by_id");
        assert_eq!(snake("HTTPServer"), "http_server");
        assert_eq!(snake("1st"), "_1st");
    }

    #[test]
    fn non_ascii_letters_become_stable_ascii_words() {
        assert_eq!(snake("café"), "caf_u00e9");
        assert_eq!(camel("Ärger"), "U00c4Rger");
        assert_eq!(camel("日本"), "U65e5U672c");
        assert_ne!(camel("日本"), camel("中国"));
        assert_eq!(method_name("get /pets/{petId}"), "get_pets_pet_id");
        assert_eq!(method_name("type"), "type_");
    }

    #[test]
    fn camel_handles_screaming_and_spaces() {
        assert_eq!(camel("Bank Accounts"), "BankAccounts");
        assert_eq!(
            camel("NETWORK_SETTLEMENT_ACCOUNT"),
            "NetworkSettlementAccount"
        );
        assert_eq!(camel("in-progress"), "InProgress");
        assert_eq!(camel("v1.2"), "V12");
        assert_eq!(camel("self"), "Self_");
        assert_eq!(camel("ACH Transfers"), "AchTransfers");
    }
}
