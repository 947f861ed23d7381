//! The backend-neutral statement and row: [`Sql`] (text with `?` placeholders and typed bind
//! values, built once for both backends), [`Value`] (a bind value that keeps its type when
//! `NULL`, which PostgreSQL needs), and [`Row`] (a result row of either backend, decoding any
//! [`Column`] type).

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row as _};

use super::{FromSqlite, SqliteRow, StoreError};

/// A bind value with its type, so that a `NULL` is still typed for PostgreSQL.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(Option<String>),
    I64(Option<i64>),
    Bool(Option<bool>),
    Bytes(Option<Vec<u8>>),
    Time(Option<DateTime<Utc>>),
    Date(Option<NaiveDate>),
}

macro_rules! value_from {
    ($($t:ty => $variant:ident $(via $conv:expr)?;)*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(Some(value_from!(@conv v $(, $conv)?)))
            }
        }
        impl From<Option<$t>> for Value {
            fn from(v: Option<$t>) -> Value {
                Value::$variant(v.map(|v| value_from!(@conv v $(, $conv)?)))
            }
        }
    )*};
    (@conv $v:ident) => { $v };
    (@conv $v:ident, $conv:expr) => { $conv($v) };
}

value_from! {
    String => Text;
    &str => Text via str::to_owned;
    &String => Text via String::clone;
    i64 => I64;
    i32 => I64 via i64::from;
    bool => Bool;
    Vec<u8> => Bytes;
    &[u8] => Bytes via <[u8]>::to_vec;
    DateTime<Utc> => Time;
    NaiveDate => Date;
}

/// SQL text with `?` placeholders and its bind values, built once for both backends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sql {
    pub(super) text: String,
    pub(super) args: Vec<Value>,
    /// See [`Sql::planned_each_run`].
    pub(super) plan_each_run: bool,
}

impl Sql {
    /// A statement or fragment; `text` must be trusted SQL (never user input: that goes in binds).
    pub fn new(text: impl Into<String>) -> Sql {
        Sql {
            text: text.into(),
            args: Vec::new(),
            plan_each_run: false,
        }
    }

    /// Has PostgreSQL plan the statement this fragment ends up in with its values on every run
    /// (an unnamed statement: sqlx's `persistent(false)`) instead of preparing it once per
    /// connection, where after five runs PostgreSQL may keep one generic plan for all values.
    /// For a condition whose best plan depends on how common its value is, at the cost of
    /// planning each time. Carried through [`Sql::append`]; nothing changes on SQLite.
    pub fn planned_each_run(mut self) -> Sql {
        self.plan_each_run = true;
        self
    }

    /// Adds the value for the next `?` already in the text.
    pub fn bind(mut self, value: impl Into<Value>) -> Sql {
        self.args.push(value.into());
        self
    }

    /// Appends trusted SQL text.
    pub fn push(&mut self, text: &str) -> &mut Sql {
        self.text.push_str(text);
        self
    }

    /// Appends a `?` and its value.
    pub fn push_bind(&mut self, value: impl Into<Value>) -> &mut Sql {
        self.text.push('?');
        self.args.push(value.into());
        self
    }

    /// Appends another fragment with its values.
    pub fn append(&mut self, other: Sql) -> &mut Sql {
        self.text.push_str(&other.text);
        self.args.extend(other.args);
        self.plan_each_run |= other.plan_each_run;
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn args(&self) -> &[Value] {
        &self.args
    }
}

/// A type that both backends can decode from a column.
pub trait Column: FromSqlite + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres> {}

impl<T> Column for T where T: FromSqlite + for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres> {}

/// A result row from either backend.
pub enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

impl Row {
    /// Decodes column `name`.
    pub fn get<T: Column>(&self, name: &str) -> Result<T, StoreError> {
        self.get_prefixed("", name)
    }

    /// Decodes column `{prefix}{name}` (a join's alias) without building the name on SQLite,
    /// where rows are read on every `GET`.
    pub fn get_prefixed<T: Column>(&self, prefix: &str, name: &str) -> Result<T, StoreError> {
        Ok(match self {
            Row::Sqlite(r) => r.get_prefixed(prefix, name)?,
            Row::Postgres(r) if prefix.is_empty() => r.try_get(name)?,
            Row::Postgres(r) => r.try_get(format!("{prefix}{name}").as_str())?,
        })
    }

    /// Decodes column `name`, which holds an enumeration's spelling; an unknown spelling is
    /// corrupt.
    pub fn spelled<T: std::str::FromStr<Err = String>>(&self, name: &str) -> Result<T, StoreError> {
        self.get::<String>(name)?
            .parse()
            .map_err(StoreError::Corrupt)
    }

    /// [`Row::spelled`] for a nullable column.
    pub fn optional_spelled<T: std::str::FromStr<Err = String>>(
        &self,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        let text: Option<String> = self.get(name)?;
        text.map(|t| t.parse())
            .transpose()
            .map_err(StoreError::Corrupt)
    }

    /// Decodes column `name`, a JSON text the application wrote.
    pub fn json<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T, StoreError> {
        let text: String = self.get(name)?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("{name}: {e}")))
    }

    /// [`Row::json`] for a nullable column.
    pub fn optional_json<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        let text: Option<String> = self.get(name)?;
        text.map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("{name}: {e}")))
    }
}

/// Encodes a value for a JSON column.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_fragments_carry_their_bind_values() {
        let mut sql = Sql::new("SELECT id FROM t WHERE platform_id = ?").bind("plat_x");
        sql.push(" AND n > ").push_bind(5i64);
        sql.append(Sql::new(" AND flag = ?").bind(Some(true)));
        sql.push(" AND gone IS ").push_bind(Option::<String>::None);
        assert_eq!(
            sql.text(),
            "SELECT id FROM t WHERE platform_id = ? AND n > ? AND flag = ? AND gone IS ?"
        );
        assert_eq!(
            sql.args(),
            &[
                Value::Text(Some("plat_x".into())),
                Value::I64(Some(5)),
                Value::Bool(Some(true)),
                Value::Text(None)
            ]
        );
        assert!(!sql.plan_each_run);
        sql.append(Sql::new(" AND x = ?").bind(1i64).planned_each_run());
        assert!(
            sql.plan_each_run,
            "a fragment planned on each run plans its statement so"
        );
    }
}
