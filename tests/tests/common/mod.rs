//! Shared by the black-box robustness tests (`fuzz`, `limits`, `crash`, `auth`): a raw HTTP/1.1
//! client that sends bytes exactly as given (malformed requests included), Basic credentials,
//! and the write operations of `spec/openapi.yaml` with an example body built from their schemas.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use serde_json::{Map, Value, json};

/// The document the server implements.
pub const SPEC: &str = include_str!("../../../spec/openapi.yaml");

/// One HTTP answer read off the wire.
#[derive(Debug, Clone)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Raw {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `code` of an error body (empty when there is none).
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `host:port` of a `http://host:port` base.
pub fn addr(base: &str) -> &str {
    base.trim_start_matches("http://").trim_end_matches('/')
}

/// The `Authorization` value for an API key sent as the Basic password (empty user name).
pub fn basic(key: &str) -> String {
    format!("Basic {}", base64(format!(":{key}").as_bytes()))
}

pub fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A request's bytes: request line, `Host`, the given headers (raw bytes, so invalid UTF-8 can
/// be sent), `Content-Length` of `body` when there is one, and `Connection: close`.
pub fn request_bytes(
    method: &str,
    target: &[u8],
    headers: &[(String, Vec<u8>)],
    body: Option<&[u8]>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + body.map_or(0, <[u8]>::len));
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target);
    out.extend_from_slice(b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(b) = body {
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes());
        out.extend_from_slice(b);
    } else {
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// What became of one raw exchange.
#[derive(Debug)]
pub enum Exchange {
    /// A complete HTTP response.
    Answered(Raw),
    /// The server closed the connection without a (complete) response.
    Closed(String),
    /// Nothing within the time limit.
    TimedOut,
    /// No connection at all (the server is not listening).
    Refused(String),
}

impl Exchange {
    pub fn status(&self) -> Option<u16> {
        match self {
            Exchange::Answered(r) => Some(r.status),
            _ => None,
        }
    }
}

/// Sends `bytes` as they are, then (after closing the write side when `half_close`, so that a
/// body shorter than its `Content-Length` ends) reads the whole answer.
pub fn exchange(base: &str, bytes: &[u8], half_close: bool, timeout: Duration) -> Exchange {
    let mut stream = match TcpStream::connect(addr(base)) {
        Ok(s) => s,
        Err(e) => return Exchange::Refused(e.to_string()),
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let _ = stream.set_nodelay(true);
    // The server may answer (and close) before it has read everything: a write error is not
    // the end of the exchange, the answer may be waiting.
    let _ = stream.write_all(bytes);
    if half_close {
        let _ = stream.shutdown(Shutdown::Write);
    }
    read_response(&mut stream)
}

/// Reads one response until it is complete or the connection ends.
pub fn read_response(stream: &mut TcpStream) -> Exchange {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(raw) = parse_response(&buf) {
            return Exchange::Answered(raw);
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                return match parse_response_at_eof(&buf) {
                    Some(raw) => Exchange::Answered(raw),
                    None => Exchange::Closed(format!("closed after {} bytes", buf.len())),
                };
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Exchange::TimedOut;
            }
            Err(e) => {
                return match parse_response_at_eof(&buf) {
                    Some(raw) => Exchange::Answered(raw),
                    None => Exchange::Closed(format!("{e} after {} bytes", buf.len())),
                };
            }
        }
    }
}

/// Status, headers, and where the body starts.
type Head = (u16, Vec<(String, String)>, usize);

fn split_head(buf: &[u8]) -> Option<Head> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some((status, headers, end + 4))
}

fn parse_response(buf: &[u8]) -> Option<Raw> {
    let (status, headers, start) = split_head(buf)?;
    let raw = Raw {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &buf[start..];
    if let Some(len) = raw
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        return (rest.len() >= len).then(|| Raw {
            body: rest[..len].to_vec(),
            ..raw
        });
    }
    if raw
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        return dechunk(rest).map(|body| Raw { body, ..raw });
    }
    None
}

fn parse_response_at_eof(buf: &[u8]) -> Option<Raw> {
    parse_response(buf).or_else(|| {
        let (status, headers, start) = split_head(buf)?;
        let raw = Raw {
            status,
            headers,
            body: buf[start..].to_vec(),
        };
        // A declared length that did not arrive is an incomplete answer.
        (raw.header("content-length").is_none() && raw.header("transfer-encoding").is_none())
            .then_some(raw)
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        if rest.len() < size + 2 {
            return None;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// A well-formed JSON call with the key as Basic password; `None` when no answer arrived.
pub fn call(
    base: &str,
    key: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
    extra: &[(&str, &str)],
) -> Exchange {
    let body_bytes = body.map(|b| serde_json::to_vec(b).expect("json"));
    call_bytes(base, key, method, path, body_bytes.as_deref(), extra)
}

/// Like [`call`] with the body's exact bytes (for byte-identical retries).
pub fn call_bytes(
    base: &str,
    key: &str,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    extra: &[(&str, &str)],
) -> Exchange {
    let mut headers = vec![("Authorization".to_owned(), basic(key).into_bytes())];
    if body.is_some() {
        headers.push(("Content-Type".to_owned(), b"application/json".to_vec()));
    }
    for (k, v) in extra {
        headers.push(((*k).to_owned(), v.as_bytes().to_vec()));
    }
    exchange(
        base,
        &request_bytes(method, path.as_bytes(), &headers, body),
        false,
        Duration::from_secs(30),
    )
}

/// [`call`] that must succeed with 200; answers the JSON body.
pub fn ok(base: &str, key: &str, method: &str, path: &str, body: Option<&Value>) -> Value {
    match call(base, key, method, path, body, &[]) {
        Exchange::Answered(r) if r.status == 200 => r.json(),
        Exchange::Answered(r) => panic!("{method} {path}: {} {}", r.status, r.text()),
        other => panic!("{method} {path}: no answer: {other:?}"),
    }
}

/// `GET /healthz` answers 200.
pub fn healthy(base: &str) -> bool {
    let req = request_bytes("GET", b"/healthz", &[], None);
    matches!(exchange(base, &req, false, Duration::from_secs(10)), Exchange::Answered(r) if r.status == 200)
}

/// Every object of a list endpoint, walking `starting_after` pages of 100.
pub fn walk(base: &str, key: &str, path: &str, list_key: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let page_path = match &after {
            Some(a) => format!("{path}{sep}limit=100&starting_after={a}"),
            None => format!("{path}{sep}limit=100"),
        };
        let page = ok(base, key, "GET", &page_path, None);
        let items = page[list_key]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("{page_path}: no `{list_key}`: {page}"));
        after = items
            .last()
            .and_then(|o| o["id"].as_str())
            .map(str::to_owned);
        all.extend(items);
        if page["has_more"] != json!(true) || after.is_none() {
            return all;
        }
        assert!(all.len() < 1_000_000, "{path}: the walk does not end");
    }
}

// ---------------------------------------------------------------------------------------------
// The document's write operations
// ---------------------------------------------------------------------------------------------

/// How an operation takes its body.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyKind {
    None,
    Json { required: bool },
    Multipart,
}

/// One POST/PATCH/PUT/DELETE of the document.
#[derive(Debug, Clone)]
pub struct WriteOp {
    pub method: String,
    pub path: String,
    pub operation_id: String,
    pub body: BodyKind,
    pub idempotent: bool,
    /// A plausible body built from the request schema (its `example`s, enums and types).
    pub example: Value,
}

impl WriteOp {
    /// The path with every `{param}` replaced by `ids(param)`.
    pub fn concrete_path(&self, ids: &dyn Fn(&str) -> String) -> String {
        let mut out = String::new();
        for seg in self.path.split('/').skip(1) {
            out.push('/');
            match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(param) => out.push_str(&ids(param)),
                None => out.push_str(seg),
            }
        }
        out
    }
}

/// Every write operation of the document, in document order.
pub fn write_operations() -> Vec<WriteOp> {
    let doc: Value = serde_yaml::from_str(SPEC).expect("the document parses");
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if !matches!(method.as_str(), "post" | "patch" | "put" | "delete") {
                continue;
            }
            let op = resolve(&doc, op);
            let params: Vec<Value> = op["parameters"].as_array().cloned().unwrap_or_default();
            let idempotent = params
                .iter()
                .map(|p| resolve(&doc, p))
                .any(|p| p["name"] == "Idempotency-Key");
            let (body, example) = match op.get("requestBody").map(|b| resolve(&doc, b)) {
                None => (BodyKind::None, Value::Null),
                Some(rb) => {
                    let content = rb["content"].as_object().expect("content");
                    let (media, m) = content.iter().next().expect("one media type");
                    let example = example_of(&doc, &m["schema"], 0);
                    let kind = if media.starts_with("multipart/") {
                        BodyKind::Multipart
                    } else {
                        BodyKind::Json {
                            required: rb["required"] == json!(true),
                        }
                    };
                    (kind, example)
                }
            };
            ops.push(WriteOp {
                method: method.to_uppercase(),
                path: path.clone(),
                operation_id: op["operationId"].as_str().unwrap_or_default().to_owned(),
                body,
                idempotent,
                example,
            });
        }
    }
    ops
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(
            doc,
            doc.pointer(r.trim_start_matches('#'))
                .unwrap_or(&Value::Null),
        ),
        None => v,
    }
}

/// A value that fits `schema` well enough to get past the type checks.
pub fn example_of(doc: &Value, schema: &Value, depth: usize) -> Value {
    let schema = resolve(doc, schema);
    if depth > 8 {
        return Value::Null;
    }
    if let Some(e) = schema.get("example") {
        return e.clone();
    }
    if let Some(e) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return e.clone();
    }
    for combinator in ["allOf", "oneOf", "anyOf"] {
        if let Some(parts) = schema.get(combinator).and_then(Value::as_array) {
            let mut merged = Map::new();
            for part in parts {
                match example_of(doc, part, depth + 1) {
                    Value::Object(o) => merged.extend(o),
                    other if combinator != "allOf" => return other,
                    _ => {}
                }
            }
            return Value::Object(merged);
        }
    }
    match schema["type"]
        .as_str()
        .unwrap_or(if schema.get("properties").is_some() {
            "object"
        } else {
            "string"
        }) {
        "object" => {
            let mut o = Map::new();
            for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                o.insert(name.clone(), example_of(doc, prop, depth + 1));
            }
            Value::Object(o)
        }
        "array" => json!([example_of(doc, &schema["items"], depth + 1)]),
        "integer" => json!(schema["minimum"].as_i64().unwrap_or(0).max(1)),
        "number" => json!(1.5),
        "boolean" => json!(false),
        _ => match schema["format"].as_str() {
            Some("date") => json!("2020-01-31"),
            Some("date-time") => json!("2020-01-31T12:00:00Z"),
            Some("email") => json!("a@example.org"),
            Some("binary") => json!("file"),
            _ => json!("abc"),
        },
    }
}

/// A small xorshift generator: reproducible from its seed, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Seeded from the clock; the seed is printed so a run can be repeated.
    pub fn from_clock(label: &str) -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        eprintln!("{label}: seed {seed}");
        Rng::new(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
}

/// `GET path` without credentials: status and body.
pub fn get_plain(base: &str, path: &str) -> (u16, String) {
    let req = request_bytes("GET", path.as_bytes(), &[], None);
    match exchange(base, &req, false, Duration::from_secs(10)) {
        Exchange::Answered(r) => (r.status, r.text()),
        other => panic!("GET {path}: no answer: {other:?}"),
    }
}

/// The samples of a Prometheus text scrape: `name{labels}` → value (comments skipped).
pub fn samples(scrape: &str) -> BTreeMap<String, f64> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The value of the series `name` whose labels include every one of `labels` (0 when none).
pub fn value(samples: &BTreeMap<String, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(series, _)| {
            series.split('{').next() == Some(name)
                && labels
                    .iter()
                    .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| *v)
        .sum()
}
