//! `sqlite:` database URLs, read the way sqlx's `SqliteConnectOptions` read them (bankd's
//! configuration and scripts kept the sqlx forms when SQLite moved to rusqlite).
//!
//! The forms: `sqlite://PATH?mode=rwc`, `sqlite:PATH`, `sqlite::memory:` (also `sqlite://:memory:`
//! or `?mode=memory`). `PATH` may be relative and is percent-decoded (`%3F` for a `?` in a file
//! name). The query parameters sqlx knew are accepted (`mode`, `cache`, `immutable`, `vfs`), but
//! only `mode=memory` changes anything: bankd always opens its writer read-write, creating the
//! file, and its readers read-only. An unknown parameter or value, a bad percent escape or a
//! missing path is refused with a [`StoreError::InvalidUrl`] that says which.

use std::path::PathBuf;

use crate::store::StoreError;

/// The file a `sqlite:` URL names, or `None` for an in-memory database.
pub fn database_file(url: &str) -> Result<Option<PathBuf>, StoreError> {
    let invalid = |why: String| StoreError::InvalidUrl(why);
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| invalid("a SQLite URL starts with `sqlite:`".to_owned()))?;
    let (database, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut in_memory = database == ":memory:";
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value).ok_or_else(|| invalid(format!("bad escape in `{pair}`")))?;
        let known = match key {
            "mode" => {
                in_memory |= value == "memory";
                ["ro", "rw", "rwc", "memory"].contains(&value.as_str())
            }
            "cache" => ["private", "shared"].contains(&value.as_str()),
            "immutable" => ["true", "1", "false", "0"].contains(&value.as_str()),
            "vfs" => true,
            _ => return Err(invalid(format!("unknown query parameter `{key}`"))),
        };
        if !known {
            return Err(invalid(format!("unknown value {value:?} for `{key}`")));
        }
    }
    if in_memory {
        return Ok(None);
    }
    if database.is_empty() {
        return Err(invalid(
            "no database file (`sqlite://PATH?mode=rwc`, or `sqlite::memory:`)".to_owned(),
        ));
    }
    let file = decode(database).ok_or_else(|| invalid(format!("bad escape in `{database}`")))?;
    Ok(Some(PathBuf::from(file)))
}

/// `text` with its `%XX` escapes decoded; `None` when an escape is cut short or the result is
/// not UTF-8.
fn decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        rest = tail;
        match byte {
            b'%' => {
                let hex = std::str::from_utf8(rest.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &rest[2..];
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(url: &str) -> Option<String> {
        database_file(url)
            .expect(url)
            .map(|path| path.display().to_string())
    }

    #[test]
    fn the_forms_bankd_documents_name_their_file() {
        assert_eq!(
            file("sqlite://./data/bankd.db?mode=rwc").as_deref(),
            Some("./data/bankd.db")
        );
        assert_eq!(
            file("sqlite:///tmp/x/bankd.db?mode=rwc").as_deref(),
            Some("/tmp/x/bankd.db")
        );
        assert_eq!(file("sqlite:data/b.db").as_deref(), Some("data/b.db"));
        assert_eq!(file("sqlite://b.db").as_deref(), Some("b.db"));
        assert_eq!(
            file("sqlite://my%20db%3F.db?mode=rw&cache=shared").as_deref(),
            Some("my db?.db")
        );
    }

    #[test]
    fn in_memory_urls_name_no_file() {
        for url in [
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://?mode=memory",
            "sqlite://x.db?mode=memory&cache=private",
        ] {
            assert_eq!(file(url), None, "{url}");
        }
    }

    #[test]
    fn malformed_urls_are_refused_with_the_reason() {
        for (url, reason) in [
            ("sqlite://x.db?mode=rwx", "unknown value \"rwx\" for `mode`"),
            (
                "sqlite://x.db?journal=wal",
                "unknown query parameter `journal`",
            ),
            ("sqlite://x%2.db", "bad escape"),
            ("sqlite://?mode=rwc", "no database file"),
            ("sqlite:", "no database file"),
            ("postgres://x", "starts with `sqlite:`"),
        ] {
            let err = database_file(url).expect_err(url);
            assert!(
                matches!(&err, StoreError::InvalidUrl(why) if why.contains(reason)),
                "{url}: {err}"
            );
        }
    }
}
