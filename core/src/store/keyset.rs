//! Keyset (cursor) pagination for every list.
//!
//! Design note. Lists are ordered by `(sort key, id)`; the id breaks ties, so the order is total
//! and stable. Options considered:
//! - `OFFSET`: simple, but rows inserted or deleted during a walk shift every later page (rows
//!   seen twice or never), and the cost grows with the offset. Rejected.
//! - Opaque encoded cursors carrying the sort value: one query per page, but the public API's
//!   cursors are object ids (`starting_after=bacc_...`), so they must stay plain ids.
//! - Chosen: the cursor is an id; one query looks up that object's sort value *through the same
//!   filters* (tenancy included) and fails with `PaginationError::InvalidCursor` when the object
//!   is not in the list (unknown, deleted, another platform's, filtered out); the page query then
//!   continues strictly after (or before) `(sort value, id)` with a row-value comparison. Both
//!   queries run in one read transaction, so they see one snapshot.
//!
//! `ending_before` reads the page backwards (reversed comparison and `ORDER BY`) and flips it
//! back, so a page is always returned in list order. Each query asks for `limit + 1` rows: the
//! extra row only answers `has_more` in the direction of travel.
//!
//! The builder emits dialect-neutral [`Sql`] (`?` placeholders, row values), so one definition
//! serves SQLite and PostgreSQL. A sort column must be `NOT NULL`: row-value comparisons with
//! `NULL` are unknown and would drop rows.

use chrono::{DateTime, Utc};

use crate::model::page::{CreatedRange, Cursor, Page, PageRequest, PaginationError, SortOrder};
use crate::store::{Backend, Row, Sql, StoreError, Tx, Value, dialect};

/// Why a list query failed: a cursor that is not in the list, or the store.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error(transparent)]
    Page(#[from] PaginationError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(ListError);

/// The type of a sort column, to bind the cursor's value with the right type on PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKind {
    Time,
    Integer,
    Text,
}

/// The columns a list is ordered by. Names are trusted SQL, never user input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    /// The sort column or expression (`NOT NULL`).
    pub column: &'static str,
    pub kind: SortKind,
    /// The unique tie-breaker, also what cursors name.
    pub id_column: &'static str,
}

impl SortKey {
    /// The usual `created_at, id` order.
    pub const CREATED_AT: SortKey = SortKey {
        column: "created_at",
        kind: SortKind::Time,
        id_column: "id",
    };
}

/// One list query: columns, source, filters, order.
#[derive(Debug, Clone)]
pub struct Keyset {
    columns: String,
    from: String,
    conditions: Vec<Sql>,
    /// Conditions of which a row must meet at least one ([`Keyset::any_of`]).
    alternatives: Vec<Sql>,
    /// The index SQLite must read the page through ([`Keyset::through_index`]).
    index: Option<&'static str>,
    sort: SortKey,
    order: SortOrder,
}

impl Keyset {
    /// `columns` and `from` are trusted SQL (`"id, name"`, `"entities"`).
    pub fn new(columns: &str, from: &str, sort: SortKey, order: SortOrder) -> Keyset {
        Keyset {
            columns: columns.to_owned(),
            from: from.to_owned(),
            conditions: Vec::new(),
            alternatives: Vec::new(),
            index: None,
            sort,
            order,
        }
    }

    /// Adds a condition (AND-ed with the others); tenancy is one of them, always.
    pub fn filter(mut self, condition: Sql) -> Keyset {
        self.conditions.push(condition);
        self
    }

    /// Adds conditions of which each row must meet at least one (`a OR b`, AND-ed with the
    /// filters), each one served by an index of its own that ends with the sort columns. The
    /// id column must identify a row of the table on its own (a primary key).
    ///
    /// A page is then one ordered, limited read of sort keys per alternative, merged, and the
    /// page's rows fetched by id: its cost follows the page's size whatever the table holds.
    /// Written as a plain `OR`, the planner may instead walk the whole list in order and test
    /// each row (SQLite without statistics does), which costs the table's size when matches
    /// are rare: with 356 574 book transfers on the platform, a page of an account with none
    /// took 180 ms alone and 8 s at p99 under load (bench/log/, "Fixed so far").
    pub fn any_of(mut self, alternatives: Vec<Sql>) -> Keyset {
        self.alternatives = alternatives;
        self
    }

    /// Reads the page through `index` on SQLite (`INDEXED BY`): a partial index that holds only
    /// the rows a filter for a rare value can match, whose condition the filters must state.
    /// Without statistics SQLite prefers walking the sort's own index and testing each row,
    /// which costs the table's size when matches are rare: one page of bank accounts with
    /// `currency_code=EUR` among a million in USD read them all (bench/log/, "Fixed so
    /// far"). PostgreSQL has statistics and plans by them.
    pub fn through_index(mut self, index: &'static str) -> Keyset {
        self.index = Some(index);
        self
    }

    /// The filters, and `alternative` when given, as a `WHERE` clause.
    fn push_where(&self, sql: &mut Sql, alternative: Option<&Sql>) {
        let conditions = self.conditions.iter().chain(alternative);
        for (i, condition) in conditions.enumerate() {
            sql.push(if i == 0 { " WHERE (" } else { " AND (" });
            sql.append(condition.clone());
            sql.push(")");
        }
        if self.conditions.is_empty() && alternative.is_none() {
            sql.push(" WHERE 1 = 1");
        }
    }

    /// All the alternatives as one condition (`None` without any).
    fn alternatives_or(&self) -> Option<Sql> {
        let mut alternatives = self.alternatives.iter();
        let mut sql = Sql::new("(");
        sql.append(alternatives.next()?.clone());
        for alternative in alternatives {
            sql.push(") OR (");
            sql.append(alternative.clone());
        }
        sql.push(")");
        Some(sql)
    }

    /// The query that finds the cursor object's sort value within the list.
    pub fn cursor_lookup(&self, cursor_id: &str) -> Sql {
        let mut sql = Sql::new(format!(
            "SELECT {} AS sort_value FROM {}",
            self.sort.column, self.from
        ));
        self.push_where(&mut sql, self.alternatives_or().as_ref());
        sql.push(&format!(" AND {} = ", self.sort.id_column))
            .push_bind(cursor_id);
        sql
    }

    /// The page query; `after` is the cursor's `(sort value, id)` when there is a cursor.
    pub fn page_query(
        &self,
        backend: Backend,
        request: &PageRequest,
        after: Option<(Value, &str)>,
    ) -> Sql {
        // Reading backwards means reading the reversed order forwards.
        let order = if request.backward() {
            self.order.reversed()
        } else {
            self.order
        };
        let after = after.as_ref().map(|(value, id)| (value, *id));
        if self.alternatives.len() < 2 {
            return self.read_query(
                backend,
                &self.columns,
                request,
                order,
                after,
                self.alternatives.first(),
            );
        }
        // Each alternative's read takes only the sort key and id, from its index alone; the
        // merged page's rows are then fetched by id. `UNION` rather than `UNION ALL`: a row
        // meeting two alternatives counts once.
        let key_columns = format!(
            "{} AS keyset_id, {} AS keyset_sort",
            self.sort.id_column, self.sort.column
        );
        let mut merged = Sql::new("SELECT keyset_id FROM (");
        for (i, alternative) in self.alternatives.iter().enumerate() {
            if i > 0 {
                merged.push(" UNION ");
            }
            merged.push("SELECT * FROM (");
            merged.append(self.read_query(
                backend,
                &key_columns,
                request,
                order,
                after,
                Some(alternative),
            ));
            merged.push(&format!(") AS alternative_{i}"));
        }
        merged.push(") AS alternatives");
        push_order_limit(&mut merged, "keyset_sort", "keyset_id", request, order);
        // By id alone: the reads applied every filter (tenancy among them), and with them
        // here the planner may walk the whole list in order again, testing each row's id.
        let mut sql = Sql::new(format!(
            "SELECT {} FROM {} WHERE {} IN (",
            self.columns, self.from, self.sort.id_column
        ));
        sql.append(merged);
        sql.push(")");
        self.push_order_limit(&mut sql, request, order);
        sql
    }

    /// One ordered read of `columns`, at most a page and its probe row, after the cursor if any.
    fn read_query(
        &self,
        backend: Backend,
        columns: &str,
        request: &PageRequest,
        order: SortOrder,
        after: Option<(&Value, &str)>,
        alternative: Option<&Sql>,
    ) -> Sql {
        let mut sql = Sql::new(format!("SELECT {} FROM {}", columns, self.from));
        if let (Backend::Sqlite, Some(index)) = (backend, self.index) {
            sql.push(&format!(" INDEXED BY {index}"));
        }
        self.push_where(&mut sql, alternative);
        if let Some((value, id)) = after {
            let greater = order == SortOrder::Asc;
            sql.push(" AND ");
            sql.append(
                Sql::new(dialect::row_compare(
                    &[self.sort.column, self.sort.id_column],
                    greater,
                ))
                .bind(value.clone())
                .bind(id),
            );
        }
        self.push_order_limit(&mut sql, request, order);
        sql
    }

    fn push_order_limit(&self, sql: &mut Sql, request: &PageRequest, order: SortOrder) {
        push_order_limit(sql, self.sort.column, self.sort.id_column, request, order);
    }

    /// Adds `created_at > gt`, `>= gte`, `< lt` and `<= lte` for the bounds that are set (the
    /// `created.*` filters every list takes).
    pub fn created_within(mut self, created: &CreatedRange) -> Keyset {
        for (op, bound) in created.set() {
            let condition = format!("created_at {} ?", op.symbol());
            self = self.filter(Sql::new(condition).bind(bound));
        }
        self
    }

    /// Runs the lookup (if any) and the page query in `tx`, mapping each row with `map`.
    pub async fn fetch<T>(
        &self,
        tx: &mut Tx<'_>,
        request: &PageRequest,
        map: impl Fn(&Row) -> Result<T, StoreError>,
    ) -> Result<Page<T>, ListError> {
        let cursor_id = match request.cursor() {
            Some(Cursor::After(id) | Cursor::Before(id)) => Some(id.as_str()),
            None => None,
        };
        let after = match cursor_id {
            None => None,
            Some(id) => {
                let row = tx
                    .fetch_optional(self.cursor_lookup(id))
                    .await?
                    .ok_or(PaginationError::InvalidCursor)?;
                let value = match self.sort.kind {
                    SortKind::Time => Value::from(row.get::<DateTime<Utc>>("sort_value")?),
                    SortKind::Integer => Value::from(row.get::<i64>("sort_value")?),
                    SortKind::Text => Value::from(row.get::<String>("sort_value")?),
                };
                Some((value, id))
            }
        };
        let rows = tx
            .fetch_all(self.page_query(tx.backend(), request, after))
            .await?;
        let mut items = rows
            .iter()
            .map(map)
            .collect::<Result<Vec<T>, StoreError>>()?;
        Ok(finish(request, &mut items))
    }
}

/// Appends ` ORDER BY sort, id LIMIT ?` for a page and its probe row.
fn push_order_limit(sql: &mut Sql, sort: &str, id: &str, request: &PageRequest, order: SortOrder) {
    sql.push(&format!(
        " ORDER BY {sort} {kw}, {id} {kw} LIMIT ",
        kw = order.keyword()
    ));
    sql.push_bind(request.limit() + 1);
}

/// Cuts the probe row and restores list order.
fn finish<T>(request: &PageRequest, items: &mut Vec<T>) -> Page<T> {
    // `limit` is validated to 1..=100, so the conversion cannot fail.
    let limit = usize::try_from(request.limit()).unwrap_or(usize::MAX);
    let has_more = items.len() > limit;
    items.truncate(limit);
    if request.backward() {
        items.reverse();
    }
    Page {
        items: std::mem::take(items),
        has_more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_defaults_to_10_and_must_be_1_to_100() {
        assert_eq!(
            PageRequest::parse(None, None, None).map(|r| r.limit()).ok(),
            Some(10)
        );
        assert_eq!(
            PageRequest::parse(Some(1), None, None)
                .map(|r| r.limit())
                .ok(),
            Some(1)
        );
        assert_eq!(
            PageRequest::parse(Some(100), None, None)
                .map(|r| r.limit())
                .ok(),
            Some(100)
        );
        for bad in [0, -1, 101, i64::MAX, i64::MIN] {
            assert!(matches!(
                PageRequest::parse(Some(bad), None, None),
                Err(PaginationError::InvalidLimit)
            ));
        }
    }

    #[test]
    fn both_cursors_conflict_whatever_their_values_or_the_limit() {
        for limit in [None, Some(0), Some(5)] {
            assert!(matches!(
                PageRequest::parse(limit, Some("x".into()), Some(String::new())),
                Err(PaginationError::ConflictingCursors)
            ));
        }
    }

    #[test]
    fn forward_query_on_a_descending_list_continues_below_the_cursor() {
        let keyset = Keyset::new("id, name", "entities", SortKey::CREATED_AT, SortOrder::Desc)
            .filter(Sql::new("platform_id = ?").bind("plat_x"));
        let request = PageRequest::parse(Some(5), Some("enti_a".into()), None).expect("valid");
        let sql = keyset.page_query(
            Backend::Sqlite,
            &request,
            Some((Value::from(7i64), "enti_a")),
        );
        assert_eq!(
            sql.text(),
            "SELECT id, name FROM entities WHERE (platform_id = ?) AND (created_at, id) < (?, ?) \
             ORDER BY created_at DESC, id DESC LIMIT ?"
        );
        assert_eq!(sql.args().len(), 4);
        assert_eq!(sql.args()[3], Value::from(6i64));
    }

    #[test]
    fn backward_query_reverses_comparison_and_order() {
        let keyset = Keyset::new("id", "entities", SortKey::CREATED_AT, SortOrder::Desc);
        let request = PageRequest::parse(None, None, Some("enti_a".into())).expect("valid");
        let sql = keyset.page_query(
            Backend::Sqlite,
            &request,
            Some((Value::from(7i64), "enti_a")),
        );
        assert_eq!(
            sql.text(),
            "SELECT id FROM entities WHERE 1 = 1 AND (created_at, id) > (?, ?) \
             ORDER BY created_at ASC, id ASC LIMIT ?"
        );
    }

    #[test]
    fn a_named_index_is_forced_on_sqlite_only_and_never_for_the_cursor_lookup() {
        let keyset = Keyset::new("id", "t", SortKey::CREATED_AT, SortOrder::Desc)
            .filter(Sql::new("flag = TRUE"))
            .through_index("t_flagged");
        let request = PageRequest::parse(Some(5), Some("x".into()), None).expect("valid");
        let after = || Some((Value::from(7i64), "x"));
        assert_eq!(
            keyset.page_query(Backend::Sqlite, &request, after()).text(),
            "SELECT id FROM t INDEXED BY t_flagged WHERE (flag = TRUE) \
             AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?"
        );
        assert_eq!(
            keyset
                .page_query(Backend::Postgres, &request, after())
                .text(),
            "SELECT id FROM t WHERE (flag = TRUE) \
             AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?"
        );
        // The cursor is found by its id, whatever index serves the page.
        assert_eq!(
            keyset.cursor_lookup("x").text(),
            "SELECT created_at AS sort_value FROM t WHERE (flag = TRUE) AND id = ?"
        );
    }

    #[test]
    fn alternatives_are_read_one_by_one_in_order_and_merged() {
        let keyset = Keyset::new("id, created_at", "t", SortKey::CREATED_AT, SortOrder::Desc)
            .filter(Sql::new("platform_id = ?").bind("plat_x"))
            .any_of(vec![
                Sql::new("sender = ?").bind("a"),
                Sql::new("receiver = ?").bind("a"),
            ]);
        let request = PageRequest::parse(Some(5), Some("x".into()), None).expect("valid");
        let sql = keyset.page_query(Backend::Sqlite, &request, Some((Value::from(7i64), "x")));
        let read = |side: &str| {
            format!(
                "SELECT id AS keyset_id, created_at AS keyset_sort FROM t WHERE (platform_id = ?) \
                 AND ({side} = ?) AND (created_at, id) < (?, ?) \
                 ORDER BY created_at DESC, id DESC LIMIT ?"
            )
        };
        assert_eq!(
            sql.text(),
            format!(
                "SELECT id, created_at FROM t WHERE id IN (\
                 SELECT keyset_id FROM (SELECT * FROM ({}) AS alternative_0 UNION \
                 SELECT * FROM ({}) AS alternative_1) AS alternatives \
                 ORDER BY keyset_sort DESC, keyset_id DESC LIMIT ?) \
                 ORDER BY created_at DESC, id DESC LIMIT ?",
                read("sender"),
                read("receiver")
            )
        );
        let read_args: Vec<Value> = ["plat_x", "a"]
            .into_iter()
            .map(Value::from)
            .chain([Value::from(7i64), Value::from("x"), Value::from(6i64)])
            .collect();
        let limit = vec![Value::from(6i64)];
        assert_eq!(
            sql.args(),
            [read_args.clone(), read_args, limit.clone(), limit].concat()
        );
        // The cursor must be in the list: on either side.
        assert_eq!(
            keyset.cursor_lookup("x").text(),
            "SELECT created_at AS sort_value FROM t WHERE (platform_id = ?) \
             AND ((sender = ?) OR (receiver = ?)) AND id = ?"
        );
    }

    #[test]
    fn finish_trims_the_probe_row_and_restores_order() {
        let forward = PageRequest::parse(Some(2), None, None).expect("valid");
        assert_eq!(
            finish(&forward, &mut vec![1, 2, 3]),
            Page {
                items: vec![1, 2],
                has_more: true
            }
        );
        assert_eq!(
            finish(&forward, &mut vec![1, 2]),
            Page {
                items: vec![1, 2],
                has_more: false
            }
        );
        let backward = PageRequest::parse(Some(2), None, Some("c".into())).expect("valid");
        // Read backwards: nearest first; the page comes back in list order.
        assert_eq!(
            finish(&backward, &mut vec![5, 4, 3]),
            Page {
                items: vec![4, 5],
                has_more: true
            }
        );
    }
}
