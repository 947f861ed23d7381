//! Streamed responses (OpenAPI 3.2's `itemSchema`): the handler returns a stream of typed items
//! and the runtime writes each one as it comes, as Server-Sent Events, JSON Lines or a JSON text
//! sequence (RFC 7464).
//!
//! For `text/event-stream` the item schema describes one event: an object whose `event`, `id`,
//! `retry` and `data` properties are the event's fields. A string `data` is written as it is
//! (one `data:` line per line of it), any other `data` as its JSON text. An item that is not an
//! object is written as the `data` of an event.

use std::marker::PhantomData;
use std::pin::Pin;

/// What a handler builds its stream with, without a dependency of its own.
pub use futures_util::stream::{Stream, StreamExt, empty, iter, once, unfold};
use poem::{Body, IntoResponse, Response};
use poem_openapi::payload::Payload;
use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use serde_json::Value;

/// How the items are written: [`SSE`], [`JSON_LINES`] or [`JSON_SEQ`].
pub type Format = u8;
/// `text/event-stream`.
pub const SSE: Format = 0;
/// `application/jsonl` (and `application/x-ndjson`, `application/x-jsonlines`): one JSON text
/// and a line feed per item.
pub const JSON_LINES: Format = 1;
/// `application/json-seq` (RFC 7464): a record separator, one JSON text and a line feed.
pub const JSON_SEQ: Format = 2;

/// A response body of items of type `T`, written as they come in the format `FORMAT`.
///
/// A server builds one from its items ([`ItemStream::new`], [`ItemStream::from_items`]); a
/// generated client gives one whose items are read as the body arrives, any of which may fail
/// ([`ItemStream::into_results`]).
pub struct ItemStream<T, const FORMAT: Format> {
    items: Pin<Box<dyn Stream<Item = Result<T, StreamError>> + Send + 'static>>,
    _t: PhantomData<fn() -> T>,
}

/// Why a streamed body could not give its next item: the transport failed, or what came is not
/// an item. A generated client's error is its source.
#[derive(Debug)]
pub struct StreamError(Box<dyn std::error::Error + Send + Sync + 'static>);

impl StreamError {
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        StreamError(Box::new(error))
    }

    /// The error itself (a generated client's `runtime::client::Error`, to downcast).
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self.0
    }
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl<T, const FORMAT: Format> std::fmt::Debug for ItemStream<T, FORMAT> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ItemStream { .. }")
    }
}

impl<T: Send + 'static, const FORMAT: Format> ItemStream<T, FORMAT> {
    /// The body of `items`; the response ends when the stream does.
    pub fn new(items: impl Stream<Item = T> + Send + 'static) -> Self {
        Self::from_results(items.map(Ok))
    }

    /// The body of the items of `items`, all known already.
    pub fn from_items(items: impl IntoIterator<Item = T, IntoIter: Send + 'static>) -> Self {
        Self::new(iter(items))
    }

    /// Items any of which may fail (what a client reads). A server that writes one ends the
    /// body at the first error, as a connection that breaks does.
    pub fn from_results(
        items: impl Stream<Item = Result<T, StreamError>> + Send + 'static,
    ) -> Self {
        ItemStream {
            items: Box::pin(items),
            _t: PhantomData,
        }
    }

    /// The items as they come, each or the reason it could not come: after an error the
    /// stream ends.
    pub fn into_results(
        self,
    ) -> Pin<Box<dyn Stream<Item = Result<T, StreamError>> + Send + 'static>> {
        self.items
    }

    /// The items as they come, up to the end or the first error ([`ItemStream::into_results`]
    /// tells the two apart).
    pub fn into_stream(self) -> Pin<Box<dyn Stream<Item = T> + Send + 'static>> {
        Box::pin(
            self.items
                .take_while(|item| std::future::ready(item.is_ok()))
                .filter_map(|item| std::future::ready(item.ok())),
        )
    }
}

impl<T: Type, const FORMAT: Format> Payload for ItemStream<T, FORMAT> {
    const CONTENT_TYPE: &'static str = match FORMAT {
        SSE => "text/event-stream",
        JSON_SEQ => "application/json-seq",
        _ => "application/jsonl",
    };

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + serde::Serialize + 'static, const FORMAT: Format> IntoResponse
    for ItemStream<T, FORMAT>
{
    fn into_response(self) -> Response {
        let bytes = self.items.map(|item| match item {
            Ok(item) => Ok(written::<T, FORMAT>(&item)),
            Err(e) => Err(std::io::Error::other(e)),
        });
        let mut response = Response::builder()
            .content_type(<Self as Payload>::CONTENT_TYPE)
            .body(Body::from_bytes_stream(bytes));
        if FORMAT == SSE {
            // Each event is sent as it comes: no proxy should hold it back.
            response
                .headers_mut()
                .insert("cache-control", "no-cache".parse().expect("a header value"));
        }
        response
    }
}

/// One item as the bytes of its format. Generated types always serialise; were one not to, the
/// item is written as `null` rather than ending the stream without a word.
fn written<T: serde::Serialize, const FORMAT: Format>(item: &T) -> Vec<u8> {
    let value = serde_json::to_value(item).unwrap_or(Value::Null);
    match FORMAT {
        SSE => event(&value).into_bytes(),
        JSON_SEQ => {
            let mut out = vec![0x1e];
            out.extend(value.to_string().into_bytes());
            out.push(b'\n');
            out
        }
        _ => {
            let mut out = value.to_string().into_bytes();
            out.push(b'\n');
            out
        }
    }
}

/// An item as one Server-Sent Event: its fields, then the blank line that ends it.
fn event(value: &Value) -> String {
    let mut out = String::new();
    let Value::Object(fields) = value else {
        data_lines(&mut out, value);
        out.push('\n');
        return out;
    };
    for name in ["event", "id", "retry"] {
        if let Some(v) = fields.get(name).filter(|v| !v.is_null()) {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            // A field's value ends at a line break: one cannot be sent inside it.
            let text = text.split(['\r', '\n']).next().unwrap_or_default();
            out.push_str(&format!("{name}: {text}\n"));
        }
    }
    if let Some(data) = fields.get("data").filter(|v| !v.is_null()) {
        data_lines(&mut out, data);
    }
    out.push('\n');
    out
}

/// `data:` lines for `data`: a string line by line, anything else as its JSON text.
fn data_lines(out: &mut String, data: &Value) {
    let text = match data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for line in text.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_writes_its_fields_and_each_line_of_its_data() {
        let e = event(&json!({"event": "tick", "id": 7, "data": "a\nb"}));
        assert_eq!(e, "event: tick\nid: 7\ndata: a\ndata: b\n\n");
        let e = event(&json!({"data": {"n": 1}}));
        assert_eq!(e, "data: {\"n\":1}\n\n");
        assert_eq!(event(&json!(3)), "data: 3\n\n");
        // A line break cannot end a field early.
        assert_eq!(event(&json!({"event": "a\nid: 9"})), "event: a\n\n");
    }

    #[test]
    fn lines_and_sequences_end_each_item() {
        assert_eq!(written::<_, JSON_LINES>(&json!({"a": 1})), b"{\"a\":1}\n");
        assert_eq!(written::<_, JSON_SEQ>(&json!([1])), b"\x1e[1]\n");
    }
}
