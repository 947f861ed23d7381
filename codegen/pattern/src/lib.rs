//! `pattern` keywords are ECMA-262 regular expressions (what OpenAPI specifies), matched with
//! `regress` (the engine typify uses). Shared by the generator, which warns about a pattern it
//! cannot compile when it reads the document, and the runtime, which checks values: one
//! crate, so the two cannot disagree about what a pattern means.

pub use regress::{Error, Regex};

/// Compiles `pattern` with the Unicode flag (so `\p{L}` is a letter, as documents mean it), or
/// without it when the pattern is valid only there (identity escapes such as `\-` or `\_`).
pub fn compile(pattern: &str) -> Result<Regex, Error> {
    regress::Regex::with_flags(pattern, "u").or_else(|_| regress::Regex::new(pattern))
}

/// Whether `re` matches somewhere in `s`: like JSON Schema's, patterns are not anchored.
#[inline]
pub fn is_match(re: &Regex, s: &str) -> bool {
    re.find(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(p: &str, s: &str) -> bool {
        is_match(&compile(p).expect("compiles"), s)
    }

    #[test]
    fn ecma_semantics() {
        assert!(matches("^[A-Z]{3}$", "USD"));
        assert!(!matches("^[A-Z]{3}$", "usd"));
        assert!(matches("[0-9]", "ab1")); // unanchored
        assert!(matches(r"^\p{L}+$", "Größe")); // Unicode property, with the u flag
        assert!(matches(r"^(?!aws:)[a-z:]+$", "gcp:x")); // lookahead
        assert!(!matches(r"^(?!aws:)[a-z:]+$", "aws:x"));
        assert!(matches(r"^[\s\S]*$", "any\nthing"));
        assert!(matches(r"^a\-b$", "a-b")); // identity escape: valid without the u flag only
        assert!(compile("(unclosed").is_err());
    }
}
