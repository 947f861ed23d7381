//! Paginated operations as a `Stream` of their items.
//!
//! A generated client recognises how an operation pages (see the generator's README: a cursor
//! parameter fed from the last item while a `has_more` flag holds, a next-page token in the
//! body, or the `rel="next"` link of a `Link` header, or the `x-pagination` extension that
//! says so) and writes a `<operation>_stream` method over [`pages`].

use std::future::Future;

use futures_util::Stream;

use super::{Error, Received};

/// One page as read: its items and the input of the next page (`None`: the last page).
pub struct Page<T, I> {
    pub items: Vec<T>,
    pub next: Option<I>,
}

/// Why a stream of items stopped early.
#[derive(Debug)]
pub enum PageError<R> {
    /// No declared answer (see [`Error`]).
    Failed(Error),
    /// A declared answer that is not a page (an error response of the operation): the
    /// operation's response, whole.
    Answered(Box<R>),
}

impl<R> From<Error> for PageError<R> {
    fn from(e: Error) -> Self {
        PageError::Failed(e)
    }
}

impl<R: std::fmt::Debug> std::fmt::Display for PageError<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Failed(e) => e.fmt(f),
            PageError::Answered(r) => write!(f, "a page was answered {r:?}"),
        }
    }
}

impl<R: std::fmt::Debug> std::error::Error for PageError<R> {}

/// The items of every page from `first` on, fetched one page at a time as the stream is read.
/// After an error the stream ends.
pub fn pages<I, T, R, F, Fut>(first: I, fetch: F) -> impl Stream<Item = Result<T, PageError<R>>>
where
    F: Fn(I) -> Fut,
    Fut: Future<Output = Result<Page<T, I>, PageError<R>>>,
{
    struct State<I, T, F> {
        next: Option<I>,
        buffered: std::vec::IntoIter<T>,
        fetch: F,
    }
    let state = State {
        next: Some(first),
        buffered: Vec::new().into_iter(),
        fetch,
    };
    futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.buffered.next() {
                return Some((Ok(item), s));
            }
            let input = s.next.take()?;
            match (s.fetch)(input).await {
                Ok(page) => {
                    s.buffered = page.items.into_iter();
                    s.next = page.next;
                }
                Err(e) => return Some((Err(e), s)),
            }
        }
    })
}

/// A page's items, whether the property is required (`Vec`) or not (`Option<Vec>`).
pub trait IntoItems<T> {
    fn into_items(self) -> Vec<T>;
}

impl<T> IntoItems<T> for Vec<T> {
    fn into_items(self) -> Vec<T> {
        self
    }
}

impl<T> IntoItems<T> for Option<Vec<T>> {
    fn into_items(self) -> Vec<T> {
        self.unwrap_or_default()
    }
}

/// A `has_more` flag, required or not (absent: no more).
pub trait Flag {
    fn is_set(&self) -> bool;
}

impl Flag for bool {
    fn is_set(&self) -> bool {
        *self
    }
}

impl Flag for Option<bool> {
    fn is_set(&self) -> bool {
        self.unwrap_or(false)
    }
}

/// A next-page token, required or not (absent, null or empty: the last page).
pub trait Token {
    fn token(&self) -> Option<String>;
}

impl Token for String {
    fn token(&self) -> Option<String> {
        (!self.is_empty()).then(|| self.clone())
    }
}

impl Token for Option<String> {
    fn token(&self) -> Option<String> {
        self.as_ref().and_then(Token::token)
    }
}

/// The property `field` of `item` as text (a string as it is, a number as written): the
/// cursor an item gives for the page after it.
pub fn field_text<T: serde::Serialize>(item: &T, field: &str) -> Option<String> {
    match serde_json::to_value(item).ok()?.get(field)? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of query parameter `param` in the target of the answer's `Link: <…>; rel="next"`.
pub fn link_next(received: &Received, param: &str) -> Option<String> {
    for value in received.headers.get_all("link") {
        let value = value.to_str().ok()?;
        for link in value.split(',') {
            let (target, params) = link.split_once(';').unwrap_or((link, ""));
            let is_next = params.split(';').any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p == "rel=\"next\"" || p == "rel=next"
            });
            if !is_next {
                continue;
            }
            let target = target.trim().trim_start_matches('<').trim_end_matches('>');
            let query = target.split_once('?')?.1;
            let query = query.split('#').next().unwrap_or(query);
            let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).ok()?;
            return pairs.into_iter().find(|(k, _)| k == param).map(|(_, v)| v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn pages_are_read_one_after_the_other_until_the_last() {
        let fetched = std::sync::Mutex::new(Vec::new());
        let stream = pages(0u32, |n| {
            fetched.lock().unwrap().push(n);
            async move {
                Ok::<_, PageError<()>>(Page {
                    items: vec![n * 10, n * 10 + 1],
                    next: (n < 2).then_some(n + 1),
                })
            }
        });
        let items: Vec<u32> = stream.map(|r| r.unwrap()).collect().await;
        assert_eq!(items, [0, 1, 10, 11, 20, 21]);
        assert_eq!(*fetched.lock().unwrap(), [0, 1, 2]);
    }

    #[tokio::test]
    async fn an_answer_that_is_not_a_page_ends_the_stream() {
        let stream = pages(0u32, |n| async move {
            if n == 1 {
                return Err(PageError::Answered(Box::new("400")));
            }
            Ok(Page {
                items: vec![n],
                next: Some(n + 1),
            })
        });
        let items: Vec<_> = stream.collect().await;
        assert_eq!(items.len(), 2);
        assert!(matches!(items[1], Err(PageError::Answered(_))));
    }

    #[test]
    fn the_next_link_gives_its_cursor() {
        let mut headers = super::super::HeaderMap::new();
        headers.insert(
            "link",
            "<https://x/items?page=1>; rel=\"prev\", <https://x/items?per_page=5&page=3>; rel=\"next\""
                .parse()
                .unwrap(),
        );
        let received = Received {
            status: super::super::StatusCode::OK,
            headers,
            body: Vec::new(),
            live: None,
        };
        assert_eq!(link_next(&received, "page").as_deref(), Some("3"));
        assert_eq!(link_next(&received, "cursor"), None);
    }
}
