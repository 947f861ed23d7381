//! Streamed answers (OpenAPI 3.2's `itemSchema`): `text/event-stream`, JSON lines and JSON text
//! sequences read item by item as the body arrives, the same way whether the body came whole or
//! is still coming. An event feed that never ends gives its items as they are sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Error, Operation, Received};
use crate::stream::{Format, ItemStream, StreamError};

/// Whether `media_type` (lowercase, without parameters) is one a streamed body is written in.
pub(crate) fn is_stream_media(media_type: &str) -> bool {
    matches!(
        media_type,
        "text/event-stream"
            | "application/jsonl"
            | "application/x-ndjson"
            | "application/x-jsonlines"
            | "application/json-seq"
    )
}

/// A streamed body not read yet: the answer whose body it is, taken once by the reader.
#[derive(Clone)]
pub(crate) struct Live(Arc<Mutex<Option<reqwest::Response>>>);

impl Live {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        Live(Arc::new(Mutex::new(Some(response))))
    }

    fn take(&self) -> Option<reqwest::Response> {
        self.0.lock().map(|mut r| r.take()).unwrap_or_default()
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live { .. }")
    }
}

/// Cuts a body into items as its bytes come: lines (a JSON text sequence's record separators
/// dropped) or Server-Sent Events.
pub(crate) struct Decoder {
    sse: Option<Map<String, Value>>,
    buffer: Vec<u8>,
    items: usize,
}

/// An item, or why the bytes that should have been one are not.
type Item<T> = Result<T, String>;

impl Decoder {
    pub(crate) fn new(media_type: &str) -> Self {
        Decoder {
            sse: (media_type == "text/event-stream").then(Map::new),
            buffer: Vec::new(),
            items: 0,
        }
    }

    /// The items `chunk` completes.
    pub(crate) fn push<T: DeserializeOwned>(&mut self, chunk: &[u8], out: &mut VecDeque<Item<T>>) {
        self.buffer.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(end) = self.buffer[start..].iter().position(|b| *b == b'\n') {
            let line = self.buffer[start..start + end].to_vec();
            start += end + 1;
            self.line(&line, out);
        }
        self.buffer.drain(..start);
    }

    /// The items left when the body ends (a last line without its line feed, an event without
    /// its blank line).
    pub(crate) fn finish<T: DeserializeOwned>(&mut self, out: &mut VecDeque<Item<T>>) {
        let rest = std::mem::take(&mut self.buffer);
        if !rest.is_empty() {
            self.line(&rest, out);
        }
        if let Some(fields) = self.sse.as_mut().map(std::mem::take)
            && !fields.is_empty()
        {
            self.item(sse_item(&fields), out);
        }
    }

    fn line<T: DeserializeOwned>(&mut self, line: &[u8], out: &mut VecDeque<Item<T>>) {
        let line = match std::str::from_utf8(line) {
            Ok(line) => line,
            Err(e) => {
                self.item::<T>(Err(format!("not UTF-8 text: {e}")), out);
                return;
            }
        };
        let Some(fields) = &mut self.sse else {
            let text = line.trim_matches(|c: char| c == '\u{1e}' || c.is_whitespace());
            if !text.is_empty() {
                let item = serde_json::from_str(text).map_err(|e| e.to_string());
                self.item(item, out);
            }
            return;
        };
        if let Some(event) = sse_line(fields, line) {
            self.item(sse_item(&event), out);
        }
    }

    fn item<T>(&mut self, item: Item<T>, out: &mut VecDeque<Item<T>>) {
        let n = self.items;
        self.items += 1;
        out.push_back(item.map_err(|e| format!("item {n}: {e}")));
    }
}

/// Feeds one line of a `text/event-stream` body to the event being read (`fields`): the event,
/// when the line is the blank one that ends it. Comments are skipped; `data` lines are joined
/// by line feeds.
fn sse_line(fields: &mut Map<String, Value>, line: &str) -> Option<Map<String, Value>> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.is_empty() {
        return (!fields.is_empty()).then(|| std::mem::take(fields));
    }
    if line.starts_with(':') {
        return None;
    }
    let (name, value) = line.split_once(':').unwrap_or((line, ""));
    let value = value.strip_prefix(' ').unwrap_or(value);
    match (name, fields.get_mut("data")) {
        ("data", Some(Value::String(data))) => {
            data.push('\n');
            data.push_str(value);
        }
        _ => {
            fields.insert(name.to_string(), value.into());
        }
    }
    None
}

/// An item from its event's fields, as the server's `ItemStream` writes one: an object of the
/// fields (`data` as JSON when it is, else text; `retry` a number; `id` text, else a number),
/// else the `data` alone. The first reading the item's type takes wins.
fn sse_item<T: DeserializeOwned>(fields: &Map<String, Value>) -> Item<T> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let data_text = text(fields.get("data"));
    let data_json = serde_json::from_str::<Value>(&data_text).ok();
    let mut object = fields.clone();
    if let Some(retry) = fields
        .get("retry")
        .and_then(|r| r.as_str()?.parse::<u64>().ok())
    {
        object.insert("retry".into(), retry.into());
    }
    let mut tries: Vec<Value> = Vec::new();
    for data in data_json.iter().chain([&Value::String(data_text.clone())]) {
        let mut o = object.clone();
        if fields.contains_key("data") {
            o.insert("data".into(), data.clone());
        }
        tries.push(Value::Object(o.clone()));
        if let Some(id) = fields
            .get("id")
            .and_then(|i| i.as_str()?.parse::<i64>().ok())
        {
            o.insert("id".into(), id.into());
            tries.push(Value::Object(o));
        }
    }
    tries.extend(data_json.clone());
    tries.push(Value::String(data_text));
    let mut first = None;
    for t in tries {
        match serde_json::from_value(t) {
            Ok(item) => return Ok(item),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    Err(first.expect("at least one reading was tried").to_string())
}

impl Received {
    /// The body's items, written one by one in a stream format (`text/event-stream`, JSON
    /// lines or JSON text sequences). A body still arriving gives each item as it is read, and
    /// a failure (the connection, an item that does not match its schema) as the stream's last
    /// element; a body read whole is checked at once, as every other body is.
    pub fn item_stream<T, const FORMAT: Format>(
        &self,
        op: &Operation,
    ) -> Result<ItemStream<T, FORMAT>, Error>
    where
        T: DeserializeOwned + Send + 'static,
    {
        let mut decoder = Decoder::new(&self.media_type());
        let Some(response) = self.live.as_ref().and_then(Live::take) else {
            let mut items = VecDeque::new();
            decoder.push(&self.body, &mut items);
            decoder.finish(&mut items);
            let items = items
                .into_iter()
                .collect::<Result<Vec<T>, String>>()
                .map_err(|reason| self.invalid(op, reason))?;
            return Ok(ItemStream::from_items(items));
        };
        let head = Received {
            status: self.status,
            headers: self.headers.clone(),
            body: Vec::new(),
            live: None,
        };
        let state = Reading {
            bytes: response.bytes_stream().boxed(),
            decoder,
            ready: VecDeque::new(),
            ended: false,
            head,
            operation: op.id,
        };
        Ok(ItemStream::from_results(futures_util::stream::unfold(
            state,
            Reading::next,
        )))
    }
}

/// The state of a body read as it arrives.
struct Reading<T> {
    bytes: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: Decoder,
    ready: VecDeque<Item<T>>,
    ended: bool,
    head: Received,
    operation: &'static str,
}

impl<T: DeserializeOwned> Reading<T> {
    /// The next item, read from as many chunks as it takes; `None` once the body has ended or
    /// an error was given.
    async fn next(mut self) -> Option<(Result<T, StreamError>, Self)> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return match item {
                    Ok(item) => Some((Ok(item), self)),
                    Err(reason) => {
                        let error = Error::InvalidResponse {
                            operation: self.operation,
                            received: Box::new(self.head.clone()),
                            reason,
                        };
                        self.stop();
                        Some((Err(StreamError::new(error)), self))
                    }
                };
            }
            if self.ended {
                return None;
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => self.decoder.push(&chunk, &mut self.ready),
                Some(Err(source)) => {
                    let error = Error::Transport {
                        operation: self.operation,
                        source,
                    };
                    self.stop();
                    return Some((Err(StreamError::new(error)), self));
                }
                None => {
                    self.ended = true;
                    self.decoder.finish(&mut self.ready);
                }
            }
        }
    }

    /// Nothing more after an error.
    fn stop(&mut self) {
        self.ended = true;
        self.ready.clear();
        self.bytes = futures_util::stream::empty().boxed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items<T: DeserializeOwned>(media: &str, chunks: &[&[u8]]) -> Vec<Item<T>> {
        let mut decoder = Decoder::new(media);
        let mut out = VecDeque::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out);
        }
        decoder.finish(&mut out);
        out.into()
    }

    #[test]
    fn server_sent_events_are_read_back_as_the_items_written() {
        let body: &[u8] = b": a comment\nevent: tick\nid: 7\ndata: {\"n\":\ndata: 1}\n\ndata: plain\ndata: text\n\ndata: 3\n\n";
        // An item schema of the whole event.
        let events = items::<Value>("text/event-stream", &[body]);
        assert_eq!(
            events[0],
            Ok(json!({"event": "tick", "id": "7", "data": {"n": 1}}))
        );
        #[derive(serde::Deserialize, PartialEq, Debug)]
        struct Tick {
            id: i64,
            data: Value,
        }
        let ticks = items::<Tick>("text/event-stream", &[body]);
        assert_eq!(
            ticks[0],
            Ok(Tick {
                id: 7,
                data: json!({"n": 1})
            })
        );
        // Items that are the data alone.
        let texts = items::<String>("text/event-stream", &[body]);
        assert_eq!(texts[1], Ok("plain\ntext".to_string()));
        let numbers = items::<i64>("text/event-stream", &[body]);
        assert_eq!(numbers[2], Ok(3));
        let flags = items::<bool>("text/event-stream", &[body]);
        assert!(flags[2].as_ref().is_err_and(|e| e.starts_with("item 2:")));
    }

    #[test]
    fn items_cut_anywhere_by_the_network_are_read_whole() {
        let body = b"event: a\r\ndata: {\"n\": 1}\r\n\r\ndata: {\"n\": 2}\n\ndata: {\"n\": 3}";
        let whole = items::<Value>("text/event-stream", &[body]);
        assert_eq!(whole.len(), 3);
        // Every split of the body into two chunks gives the same items, including a split
        // inside a multi-byte character of a JSON line.
        for at in 0..body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(items::<Value>("text/event-stream", &[a, b]), whole, "{at}");
        }
        let lines = "\u{1e}{\"é\": 1}\n\u{1e}[2]\n".as_bytes();
        let whole = items::<Value>("application/json-seq", &[lines]);
        assert_eq!(whole, vec![Ok(json!({"é": 1})), Ok(json!([2]))]);
        for at in 0..lines.len() {
            let (a, b) = lines.split_at(at);
            assert_eq!(
                items::<Value>("application/json-seq", &[a, b]),
                whole,
                "{at}"
            );
        }
        // A last line without its line feed is an item too; a bad one says which it was.
        let bad = items::<i64>("application/jsonl", &[b"1\n\nx\n3"]);
        assert_eq!(bad[0], Ok(1));
        assert!(bad[1].as_ref().is_err_and(|e| e.starts_with("item 1:")));
        assert_eq!(bad[2], Ok(3));
    }
}
