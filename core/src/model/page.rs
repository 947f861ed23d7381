//! A page request (limit and cursor), a page of results, list order and why a page request is
//! refused: what the API parses and the store's keyset queries answer (`store::keyset`).

/// Default page size.
pub const DEFAULT_LIMIT: i64 = 10;
/// Largest page size.
pub const MAX_LIMIT: i64 = 100;

/// Why a list request cannot be served. HTTP-agnostic; the API layer maps these.
#[derive(Debug, thiserror::Error)]
pub enum PaginationError {
    #[error("limit must be between 1 and {MAX_LIMIT}")]
    InvalidLimit,
    #[error("starting_after and ending_before cannot be used together")]
    ConflictingCursors,
    #[error("the pagination cursor is not an object of this list")]
    InvalidCursor,
}

/// A comparison of a range filter (`created.gt`, `balance.lte`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Comparison {
    /// The operator, as SQL and most languages write it.
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Gt => ">",
            Comparison::Gte => ">=",
            Comparison::Lt => "<",
            Comparison::Lte => "<=",
        }
    }
}

/// The four bounds of a range filter (`created.gt`, `.gte`, `.lt`, `.lte`); each one set
/// narrows the list (AND).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds<T> {
    pub gt: Option<T>,
    pub gte: Option<T>,
    pub lt: Option<T>,
    pub lte: Option<T>,
}

impl<T: Copy> Bounds<T> {
    pub fn new(gt: Option<T>, gte: Option<T>, lt: Option<T>, lte: Option<T>) -> Bounds<T> {
        Bounds { gt, gte, lt, lte }
    }

    /// The bounds that are set, with their comparison.
    pub fn set(&self) -> impl Iterator<Item = (Comparison, T)> {
        [
            (Comparison::Gt, self.gt),
            (Comparison::Gte, self.gte),
            (Comparison::Lt, self.lt),
            (Comparison::Lte, self.lte),
        ]
        .into_iter()
        .filter_map(|(op, bound)| bound.map(|b| (op, b)))
    }
}

/// The `created.*` filters of a list.
pub type CreatedRange = Bounds<chrono::DateTime<chrono::Utc>>;

/// Where a page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    /// `starting_after`: the objects after this id, in list order.
    After(String),
    /// `ending_before`: the objects just before this id, still returned in list order.
    Before(String),
}

/// A validated page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    limit: i64,
    cursor: Option<Cursor>,
}

impl PageRequest {
    /// Validates the three paging parameters. Both cursors set is an error whatever their values
    /// and whatever the limit (it is checked first).
    pub fn parse(
        limit: Option<i64>,
        starting_after: Option<String>,
        ending_before: Option<String>,
    ) -> Result<PageRequest, PaginationError> {
        let cursor = match (starting_after, ending_before) {
            (Some(_), Some(_)) => return Err(PaginationError::ConflictingCursors),
            (Some(after), None) => Some(Cursor::After(after)),
            (None, Some(before)) => Some(Cursor::Before(before)),
            (None, None) => None,
        };
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(PaginationError::InvalidLimit);
        }
        Ok(PageRequest { limit, cursor })
    }

    /// The first page with the default limit.
    pub fn first() -> PageRequest {
        PageRequest {
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }

    pub fn limit(&self) -> i64 {
        self.limit
    }

    pub fn cursor(&self) -> Option<&Cursor> {
        self.cursor.as_ref()
    }

    pub(crate) fn backward(&self) -> bool {
        matches!(self.cursor, Some(Cursor::Before(_)))
    }
}

/// List order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOrder {
    Asc,
    Desc,
}

impl SortOrder {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            SortOrder::Asc => "ASC",
            SortOrder::Desc => "DESC",
        }
    }

    pub(crate) fn reversed(self) -> SortOrder {
        match self {
            SortOrder::Asc => SortOrder::Desc,
            SortOrder::Desc => SortOrder::Asc,
        }
    }
}

/// A page of results, in list order.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Whether more objects exist beyond this page in the direction of travel.
    pub has_more: bool,
}

impl<T> Page<T> {
    /// The same page with each item mapped.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            has_more: self.has_more,
        }
    }

    /// The same page with each item mapped, or the first failure.
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, _>>()?,
            has_more: self.has_more,
        })
    }
}
