//! Malformed input, fuzzed with proptest, against every write operation (POST, PATCH, PUT,
//! DELETE) of `spec/openapi.yaml` on a real `bankd` process: random bytes and random JSON,
//! a plausible body with one field replaced by a wrong type, a huge number (1e400, 2^70), a
//! string of invalid UTF-8 or deep nesting, unknown fields, wrong content types, odd
//! `Idempotency-Key`, `Authorization` and other headers (up to 100 KB), odd path ids, bodies cut
//! short, and truncated or malformed multipart bodies. Besides the random cases, every operation
//! gets a fixed set of extremes (10 000 levels of nesting, 100 KB headers, invalid UTF-8, ...).
//!
//! Every answer must be below 500 and, when it has a body, carry the API's error shape; a
//! well-framed request must get an answer (a dropped connection hides a panic); after each
//! operation's batch `/healthz` answers 200 and the process still runs; the log has no panic.
//! The number of random cases per operation is `BANKD_FUZZ_CASES` (default 64).

mod common;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use common::{
    BodyKind, Exchange, WriteOp, basic, call, exchange, healthy, request_bytes, write_operations,
};
use contract_tests::contract::Contract;
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use serde_json::{Value, json};

/// Bytes shown as (lossy, shortened) text in failure reports.
#[derive(Clone)]
struct Bytes(Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = format!("{:?}", String::from_utf8_lossy(&self.0));
        if shown.chars().count() > 160 {
            let head: String = shown.chars().take(120).collect();
            write!(f, "{head}… ({} bytes)", self.0.len())
        } else {
            f.write_str(&shown)
        }
    }
}

/// One malformed request, relative to the operation's plausible example body.
#[derive(Debug, Clone)]
enum Case {
    /// The example with the value at one leaf replaced by raw JSON text (maybe not JSON at all).
    Replace { at: usize, raw: Bytes },
    /// The example without one leaf.
    Remove { at: usize },
    /// The example with a field the document does not know.
    Unknown { name: String, raw: Bytes },
    /// A whole body of arbitrary bytes, sent as JSON.
    WholeBody(Bytes),
    /// A whole body of arbitrary JSON.
    RandomJson(Value),
    /// The example sent with another content type (or none).
    ContentType(Option<String>),
    /// The example with one more header.
    Header { name: &'static str, value: Bytes },
    /// The example with a path parameter replaced (percent-encoded as needed).
    PathId(Bytes),
    /// The example cut at `cut` bytes, with the `Content-Length` of what is sent.
    Truncated { cut: usize },
    /// The example's full `Content-Length` but only `cut` bytes of body, then end of stream.
    ShortBody { cut: usize },
    /// A multipart body made of these parts (name, file name, content), maybe cut, maybe with a
    /// boundary that differs from the header's.
    Multipart {
        parts: Vec<(String, Option<String>, Bytes)>,
        cut: Option<usize>,
        boundary_ok: bool,
    },
}

/// Raw JSON texts of numbers no int64 or f64 holds, and other edge tokens.
const EDGE_TOKENS: &[&str] = &[
    "1e400",
    "-1e400",
    "1180591620717411303424",
    "-1180591620717411303424",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1e-400",
    "123456789012345678901234567890.5",
    "-0",
    "0.5",
    "1.0",
    "1E2",
    "01",
    "+1",
    "1.",
    ".5",
    "-",
    "NaN",
    "Infinity",
    "null",
    "true",
    "[]",
    "{}",
    "\"\"",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "\"\\x\"",
    "\"\u{202e}\u{fffd}\u{10ffff}\"",
    "\"",
    "[",
    "{",
    "{\"a\":}",
    "[1,]",
];

fn nested(depth: usize, object: bool) -> Vec<u8> {
    let (open, close): (&[u8], &[u8]) = if object {
        (b"{\"a\":", b"}")
    } else {
        (b"[", b"]")
    };
    let mut v = Vec::with_capacity(depth * (open.len() + close.len()) + 1);
    for _ in 0..depth {
        v.extend_from_slice(open);
    }
    v.push(b'1');
    for _ in 0..depth {
        v.extend_from_slice(close);
    }
    v
}

fn invalid_utf8_string(bytes: &[u8]) -> Vec<u8> {
    let mut v = b"\"".to_vec();
    v.extend(
        bytes
            .iter()
            .copied()
            .filter(|b| *b != b'"' && *b != b'\\' && *b >= 0x20),
    );
    v.extend_from_slice(b"\xff\xfe\xc3\x28\"");
    v
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        ".{0,24}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Raw JSON text (or not quite JSON) for one value.
fn weird_raw() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        3 => prop::sample::select(EDGE_TOKENS).prop_map(|t| t.as_bytes().to_vec()),
        3 => any_json().prop_map(|v| serde_json::to_vec(&v).expect("json")),
        1 => any::<i128>().prop_map(|n| n.to_string().into_bytes()),
        1 => (1u32..400).prop_map(|e| format!("1e{e}").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..48).prop_map(|b| invalid_utf8_string(&b)),
        1 => (1usize..400, any::<bool>()).prop_map(|(d, o)| nested(d, o)),
        1 => (0usize..120_000).prop_map(|n| format!("\"{}\"", "a".repeat(n)).into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..32),
    ]
    .prop_map(Bytes)
}

fn header_value() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        ".{0,300}".prop_map(String::into_bytes),
        (0usize..100_000).prop_map(|n| vec![b'k'; n]),
        prop::sample::select(vec![
            "",
            " ",
            "\t",
            "Basic",
            "Basic ",
            "Basic !!!",
            "Basic Og==",
            "Bearer x",
            "multipart/form-data",
            "multipart/form-data; boundary=",
            "application/json; charset=latin1"
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ]
    .prop_map(|mut v: Vec<u8>| {
        // CR and LF would end the header: that is another request, not a malformed value.
        v.retain(|b| *b != b'\r' && *b != b'\n');
        Bytes(v)
    })
}

fn case_strategy(op: &WriteOp, leaves: usize) -> BoxedStrategy<Case> {
    let leaves = leaves.max(1);
    let names: Vec<String> = op
        .example
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    let unknown_name = if names.is_empty() {
        "[a-z_]{1,12}".boxed()
    } else {
        prop_oneof![
            prop::sample::select(names).prop_map(|n| format!("{n}_x")),
            "[a-z_]{1,12}"
        ]
        .boxed()
    };
    let common = prop_oneof![
        4 => (0..leaves, weird_raw()).prop_map(|(at, raw)| Case::Replace { at, raw }),
        1 => (0..leaves).prop_map(|at| Case::Remove { at }),
        1 => (unknown_name, weird_raw()).prop_map(|(name, raw)| Case::Unknown { name, raw }),
        2 => prop::collection::vec(any::<u8>(), 0..512).prop_map(|b| Case::WholeBody(Bytes(b))),
        1 => weird_raw().prop_map(Case::WholeBody),
        2 => any_json().prop_map(Case::RandomJson),
        1 => prop::option::of(prop::sample::select(vec![
            "text/plain".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
            "multipart/form-data; boundary=zzz".to_owned(),
            "application/json; charset=utf-16".to_owned(),
            "application/jsonx".to_owned(),
            "*/*".to_owned(),
            "".to_owned(),
        ]))
        .prop_map(Case::ContentType),
        2 => (prop::sample::select(vec!["Idempotency-Key", "Authorization", "Content-Type", "X-Request-Id", "Accept", "X-Fuzz"]), header_value())
            .prop_map(|(name, value)| Case::Header { name, value }),
        1 => prop_oneof![
            prop::collection::vec(any::<u8>(), 0..80),
            (0usize..20_000).prop_map(|n| vec![b'x'; n]),
            prop::sample::select(vec!["..", "%2e%2e", "enti_", "bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIM", "%00", "%ff%fe", "a%2Fb", "%", "%zz", "%C0%AF"]).prop_map(|s| s.as_bytes().to_vec()),
        ]
        .prop_map(|b| Case::PathId(Bytes(b))),
        1 => (0usize..4096).prop_map(|cut| Case::Truncated { cut }),
        1 => (0usize..4096).prop_map(|cut| Case::ShortBody { cut }),
    ];
    if op.body != BodyKind::Multipart {
        return common.boxed();
    }
    let part_name = prop::sample::select(vec![
        "file",
        "type",
        "description",
        "tag",
        "entity_id",
        "unknown",
        "",
    ])
    .prop_map(str::to_owned);
    let content = prop_oneof![
        weird_raw(),
        header_value(),
        prop::collection::vec(any::<u8>(), 0..2048).prop_map(Bytes)
    ];
    let part = (
        part_name,
        prop::option::of("[a-zA-Z0-9 ._\u{e9}\"/\\\\-]{0,40}"),
        content,
    );
    let multipart = (
        prop::collection::vec(part, 0..5),
        prop::option::of(0usize..3000),
        prop::bool::weighted(0.85),
    )
        .prop_map(|(parts, cut, boundary_ok)| Case::Multipart {
            parts,
            cut,
            boundary_ok,
        });
    prop_oneof![2 => common, 3 => multipart].boxed()
}

/// JSON pointers of the example's leaves (and of its empty containers).
fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(o) if !o.is_empty() => o
            .iter()
            .for_each(|(k, c)| leaves(c, format!("{at}/{k}"), out)),
        Value::Array(a) if !a.is_empty() => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| leaves(c, format!("{at}/{i}"), out)),
        _ if !at.is_empty() => out.push(at),
        _ => {}
    }
}

const HOLE: &str = "@@FUZZ-HOLE@@";

/// The example's bytes with the value at `pointer` replaced by `raw` (or removed).
fn with_leaf(example: &Value, pointer: Option<&str>, raw: Option<&[u8]>) -> Vec<u8> {
    let mut v = example.clone();
    let Some(pointer) = pointer else {
        return serde_json::to_vec(&v).expect("json");
    };
    let (parent, last) = pointer.rsplit_once('/').expect("a pointer");
    match (v.pointer_mut(parent), raw) {
        (Some(Value::Object(o)), Some(_)) => {
            o.insert(last.to_owned(), json!(HOLE));
        }
        (Some(Value::Object(o)), None) => {
            o.remove(last);
        }
        (Some(Value::Array(a)), Some(_)) => {
            if let Some(slot) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *slot = json!(HOLE);
            }
        }
        (Some(Value::Array(a)), None) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
    let text = serde_json::to_vec(&v).expect("json");
    match raw {
        Some(raw) => replace_hole(&text, raw),
        None => text,
    }
}

fn replace_hole(text: &[u8], raw: &[u8]) -> Vec<u8> {
    let hole = format!("\"{HOLE}\"");
    match text.windows(hole.len()).position(|w| w == hole.as_bytes()) {
        Some(i) => [&text[..i], raw, &text[i + hole.len()..]].concat(),
        None => text.to_vec(),
    }
}

fn percent_encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~%".contains(b) {
                (*b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn multipart_body(boundary: &str, parts: &[(String, Option<String>, Bytes)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file_name, content) in parts {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes(),
        );
        if let Some(f) = file_name {
            body.extend_from_slice(
                format!("; filename=\"{f}\"\r\nContent-Type: application/octet-stream").as_bytes(),
            );
        }
        body.extend_from_slice(b"\r\n\r\n");
        body.extend_from_slice(&content.0);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

/// The ids this run's requests address, by path parameter name.
struct Ids(BTreeMap<&'static str, String>);

impl Ids {
    fn get(&self, param: &str) -> String {
        self.0.get(param).cloned().unwrap_or_else(|| {
            panic!("no id for the path parameter `{param}`: add it to the fuzz fixture")
        })
    }
}

/// A well-formed id of `prefix` that exists nowhere: the fallback when a fixture could not be made.
fn absent_id(prefix: &str) -> String {
    format!("{prefix}_2Ks1MnvPLKTGvSG9QWJrCQPYqIM")
}

/// Best-effort fixture: real objects where the server can make them, absent ids otherwise.
fn fixture(base: &str, key: &str) -> Ids {
    let try_id = |method: &str, path: &str, body: Value, field: &str| -> Option<String> {
        match call(base, key, method, path, Some(&body), &[]) {
            Exchange::Answered(r) if r.status == 200 => r.json()[field].as_str().map(str::to_owned),
            other => {
                eprintln!("fixture: {method} {path} failed: {:?}", other.status());
                None
            }
        }
    };
    // First, so that every later change has a delivery attempt (to a closed port).
    let endpoint = try_id(
        "POST",
        "/webhook-endpoints",
        json!({"url": "http://127.0.0.1:9/fuzz"}),
        "id",
    );
    let person = try_id(
        "POST",
        "/entities/person",
        json!({"first_name": "Fuzz", "last_name": "Person"}),
        "id",
    );
    let business = try_id(
        "POST",
        "/entities/business",
        json!({"business_name": "Fuzz LLC"}),
        "id",
    );
    let entity = person.clone().unwrap_or_else(|| absent_id("enti"));
    let account = try_id(
        "POST",
        "/bank-accounts",
        json!({"entity_id": entity, "description": "Fuzz account"}),
        "id",
    );
    let account_body = account
        .as_ref()
        .map(|a| common::ok(base, key, "GET", &format!("/bank-accounts/{a}"), None));
    let acno = account_body
        .as_ref()
        .and_then(|b| b["default_account_number_id"].as_str().map(str::to_owned));
    let bacc = account.clone().unwrap_or_else(|| absent_id("bacc"));
    let rule = try_id(
        "POST",
        "/ach-positive-pay-rules",
        json!({"bank_account_id": bacc, "ach_company_id": "FUZZ000001", "amount_condition": "any_amount", "description": "Fuzz"}),
        "id",
    );
    let cpty = try_id(
        "POST",
        "/counterparties",
        json!({"routing_number": "021000021", "account_number": "123456789"}),
        "id",
    );
    if let Some(acno) = &acno {
        try_id(
            "POST",
            "/simulate/receive-ach-credit",
            json!({"destination_account_number_id": acno, "amount": 1_000_000, "company_id": "FUZZ000002", "company_name": "Fuzz"}),
            "id",
        );
    }
    let account2 = try_id(
        "POST",
        "/bank-accounts",
        json!({"entity_id": entity, "description": "Fuzz account 2"}),
        "id",
    );
    let book = try_id(
        "POST",
        "/transfers/book",
        json!({"amount": 100, "sender_bank_account_id": bacc, "receiver_bank_account_id": account2.clone().unwrap_or_else(|| absent_id("bacc")), "hold": true}),
        "id",
    );
    let mut ids = BTreeMap::new();
    ids.insert("entity_id", entity);
    ids.insert(
        "person_entity_id",
        person.unwrap_or_else(|| absent_id("enti")),
    );
    ids.insert(
        "business_entity_id",
        business.unwrap_or_else(|| absent_id("enti")),
    );
    ids.insert("bank_account_id", bacc);
    ids.insert(
        "receiver_bank_account_id",
        account2.unwrap_or_else(|| absent_id("bacc")),
    );
    ids.insert(
        "account_number_id",
        acno.unwrap_or_else(|| absent_id("acno")),
    );
    ids.insert(
        "ach_positive_pay_rule_id",
        rule.unwrap_or_else(|| absent_id("appr")),
    );
    ids.insert("counterparty_id", cpty.unwrap_or_else(|| absent_id("cpty")));
    ids.insert(
        "book_transfer_id",
        book.unwrap_or_else(|| absent_id("book")),
    );
    ids.insert("document_id", absent_id("docu"));
    let delivery = endpoint.as_ref().and_then(|e| {
        let list = common::ok(
            base,
            key,
            "GET",
            &format!("/webhook-endpoints/{e}/deliveries"),
            None,
        );
        list["deliveries"][0]["id"].as_str().map(str::to_owned)
    });
    ids.insert(
        "webhook_endpoint_id",
        endpoint.unwrap_or_else(|| absent_id("wend")),
    );
    ids.insert(
        "webhook_delivery_id",
        delivery.unwrap_or_else(|| absent_id("wdlv")),
    );
    Ids(ids)
}

/// The example with this platform's ids where the document's examples name foreign ones, and
/// without the alternatives that cannot be sent together.
fn personalize(example: &Value, ids: &Ids) -> Value {
    let mut v = example.clone();
    if let Value::Object(o) = &mut v {
        for drop in [
            "sender_account_number_id",
            "receiver_account_number_id",
            "overdraft_reserve_account_id",
            "is_overdraftable",
        ] {
            o.remove(drop);
        }
        for (k, val) in o.iter_mut() {
            let id = match k.as_str() {
                "person_entity_id" => Some(ids.get("person_entity_id")),
                k if k.ends_with("entity_id") => Some(ids.get("entity_id")),
                "receiver_bank_account_id" => Some(ids.get("receiver_bank_account_id")),
                k if k.ends_with("bank_account_id") => Some(ids.get("bank_account_id")),
                k if k.ends_with("account_number_id") => Some(ids.get("account_number_id")),
                _ => None,
            };
            if let Some(id) = id {
                *val = json!(id);
            }
        }
        if o.contains_key("amount") {
            o.insert("amount".into(), json!(1));
        }
    }
    v
}

/// One built request: its bytes, whether its HTTP framing is sound (then an answer is owed),
/// and whether to end the stream after it.
struct Built {
    bytes: Vec<u8>,
    framed: bool,
    half_close: bool,
}

fn build(
    op: &WriteOp,
    example: &Value,
    pointers: &[String],
    ids: &Ids,
    key: &str,
    case: &Case,
) -> Built {
    let auth = ("Authorization".to_owned(), basic(key).into_bytes());
    let json_ct = ("Content-Type".to_owned(), b"application/json".to_vec());
    let path = op.concrete_path(&|p| ids.get(p));
    let pick = |at: usize| pointers.get(at % pointers.len().max(1)).map(String::as_str);
    let example_bytes = || {
        if example.is_null() {
            b"{}".to_vec()
        } else {
            serde_json::to_vec(example).expect("json")
        }
    };
    let valid_multipart = || {
        multipart_body(
            "fuzzbound",
            &[
                ("type".into(), None, Bytes(b"other".to_vec())),
                ("description".into(), None, Bytes(b"fuzz".to_vec())),
                (
                    "file".into(),
                    Some("f.pdf".into()),
                    Bytes(b"%PDF-1.4 fuzz".to_vec()),
                ),
            ],
        )
    };
    let (mut headers, body): (Vec<(String, Vec<u8>)>, Vec<u8>) = if op.body == BodyKind::Multipart {
        (
            vec![
                auth.clone(),
                (
                    "Content-Type".into(),
                    b"multipart/form-data; boundary=fuzzbound".to_vec(),
                ),
            ],
            valid_multipart(),
        )
    } else {
        (vec![auth.clone(), json_ct.clone()], example_bytes())
    };
    let mut target = path.clone().into_bytes();
    let mut framed = true;
    let body = match case {
        Case::Replace { at, raw } => {
            headers = vec![auth, json_ct];
            with_leaf(example, pick(*at), Some(&raw.0))
        }
        Case::Remove { at } => {
            headers = vec![auth, json_ct];
            with_leaf(example, pick(*at), None)
        }
        Case::Unknown { name, raw } => {
            headers = vec![auth, json_ct];
            let mut v = if example.is_object() {
                example.clone()
            } else {
                json!({})
            };
            v[name.as_str()] = json!(HOLE);
            replace_hole(&serde_json::to_vec(&v).expect("json"), &raw.0)
        }
        Case::WholeBody(b) => {
            headers = vec![auth, json_ct];
            b.0.clone()
        }
        Case::RandomJson(v) => {
            headers = vec![auth, json_ct];
            serde_json::to_vec(v).expect("json")
        }
        Case::ContentType(ct) => {
            headers.retain(|(k, _)| k != "Content-Type");
            if let Some(ct) = ct {
                headers.push(("Content-Type".into(), ct.clone().into_bytes()));
            }
            body
        }
        Case::Header { name, value } => {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            headers.push(((*name).to_owned(), value.0.clone()));
            // Control characters other than HTAB are outside HTTP's field-value syntax.
            framed = value
                .0
                .iter()
                .all(|b| *b == b'\t' || *b >= 0x20 && *b != 0x7f);
            body
        }
        Case::PathId(id) => {
            let encoded = percent_encode(&id.0);
            let segments: Vec<&str> = op.path.split('/').collect();
            match segments.iter().position(|s| s.starts_with('{')) {
                Some(i) => {
                    let concrete: Vec<String> = path.split('/').map(str::to_owned).collect();
                    let mut c = concrete.clone();
                    c[i] = encoded;
                    target = c.join("/").into_bytes();
                }
                None => target = format!("{path}?id={encoded}").into_bytes(),
            }
            body
        }
        Case::Truncated { cut } => body[..(*cut).min(body.len())].to_vec(),
        Case::ShortBody { cut } => {
            let declared = body.len() + 1;
            let mut bytes = request_bytes(&op.method, &target, &headers, None);
            // Replace the final blank line by a Content-Length header that promises more.
            bytes.truncate(bytes.len() - 2);
            bytes.extend_from_slice(format!("Content-Length: {declared}\r\n\r\n").as_bytes());
            bytes.extend_from_slice(&body[..(*cut).min(body.len())]);
            return Built {
                bytes,
                framed: false,
                half_close: true,
            };
        }
        Case::Multipart {
            parts,
            cut,
            boundary_ok,
        } => {
            let boundary = if *boundary_ok {
                "fuzzbound"
            } else {
                "otherbound"
            };
            headers = vec![
                auth,
                (
                    "Content-Type".into(),
                    b"multipart/form-data; boundary=fuzzbound".to_vec(),
                ),
            ];
            let b = multipart_body(boundary, parts);
            match cut {
                Some(c) => b[..(*c).min(b.len())].to_vec(),
                None => b,
            }
        }
    };
    Built {
        bytes: request_bytes(&op.method, &target, &headers, Some(&body)),
        framed,
        half_close: false,
    }
}

/// The fixed extremes every operation gets, whatever the random cases are.
fn extremes(op: &WriteOp, leaves: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    let big_header = Bytes(vec![b'h'; 100 * 1024]);
    // Every leaf: a number too large for int64 and for f64, and a string PostgreSQL cannot store.
    for at in 0..leaves.max(1) {
        for token in ["1e400", "1180591620717411303424", "\"a\\u0000b\""] {
            cases.push(Case::Replace {
                at,
                raw: Bytes(token.as_bytes().to_vec()),
            });
        }
    }
    for at in 0..leaves.clamp(1, 6) {
        for token in ["-1180591620717411303424", "9223372036854775808"] {
            cases.push(Case::Replace {
                at,
                raw: Bytes(token.as_bytes().to_vec()),
            });
        }
        cases.push(Case::Replace {
            at,
            raw: Bytes(nested(10_000, false)),
        });
        cases.push(Case::Replace {
            at,
            raw: Bytes(invalid_utf8_string(b"caf")),
        });
        cases.push(Case::Replace {
            at,
            raw: Bytes(b"[\"x\"]".to_vec()),
        });
        cases.push(Case::Replace {
            at,
            raw: Bytes(b"{\"x\":1}".to_vec()),
        });
    }
    cases.push(Case::WholeBody(Bytes(nested(10_000, false))));
    cases.push(Case::WholeBody(Bytes(nested(10_000, true))));
    cases.push(Case::WholeBody(Bytes(b"1e400".to_vec())));
    cases.push(Case::WholeBody(Bytes(b"\xff\xfe\xfd".to_vec())));
    cases.push(Case::WholeBody(Bytes(invalid_utf8_string(b""))));
    cases.push(Case::WholeBody(Bytes(Vec::new())));
    cases.push(Case::ContentType(None));
    for name in [
        "X-Fuzz",
        "Idempotency-Key",
        "Authorization",
        "Content-Type",
        "X-Request-Id",
    ] {
        cases.push(Case::Header {
            name,
            value: big_header.clone(),
        });
        cases.push(Case::Header {
            name,
            value: Bytes(b"\xff\xfe\x80 \xc3\x28".to_vec()),
        });
    }
    cases.push(Case::PathId(Bytes(b"\xff\xfe".to_vec())));
    cases.push(Case::PathId(Bytes(vec![b'x'; 10_000])));
    cases.push(Case::ShortBody { cut: 1 });
    cases.push(Case::Truncated { cut: 1 });
    if op.body == BodyKind::Multipart {
        let parts = vec![
            ("type".to_owned(), None, Bytes(b"other".to_vec())),
            (
                "file".to_owned(),
                Some("a.bin".to_owned()),
                Bytes(vec![7u8; 4000]),
            ),
        ];
        let whole = multipart_body("fuzzbound", &parts).len();
        for cut in [0, 1, 10, 50, 100, 200, whole / 2, whole - 20, whole - 3] {
            cases.push(Case::Multipart {
                parts: parts.clone(),
                cut: Some(cut),
                boundary_ok: true,
            });
        }
        cases.push(Case::Multipart {
            parts: parts.clone(),
            cut: None,
            boundary_ok: false,
        });
        cases.push(Case::Multipart {
            parts: vec![
                ("type".to_owned(), None, Bytes(b"\xff\xfe".to_vec())),
                (
                    "file".to_owned(),
                    Some("\u{e9}.bin".to_owned()),
                    Bytes(b"x".to_vec()),
                ),
            ],
            cut: None,
            boundary_ok: true,
        });
        cases.push(Case::Multipart {
            parts: vec![("type".to_owned(), None, Bytes(b"other".to_vec()))],
            cut: None,
            boundary_ok: true,
        });
        // NUL and invalid UTF-8 in each text part and in the file name.
        for field in ["description", "tag", "entity_id", "type"] {
            for value in [&b"a\0b"[..], b"a\xffb"] {
                let mut parts = parts.clone();
                parts.push((field.to_owned(), None, Bytes(value.to_vec())));
                cases.push(Case::Multipart {
                    parts,
                    cut: None,
                    boundary_ok: true,
                });
            }
        }
        cases.push(Case::Multipart {
            parts: vec![
                ("type".to_owned(), None, Bytes(b"other".to_vec())),
                (
                    "file".to_owned(),
                    Some("a\u{0}b.bin".to_owned()),
                    Bytes(b"x".to_vec()),
                ),
            ],
            cut: None,
            boundary_ok: true,
        });
    }
    cases
}

/// The case, with the JSON pointer of the leaf it changes.
fn describe(case: &Case, pointers: &[String]) -> String {
    let at = |i: usize| {
        pointers
            .get(i % pointers.len().max(1))
            .cloned()
            .unwrap_or_default()
    };
    match case {
        Case::Replace { at: i, raw } => format!("{} set to {raw:?}", at(*i)),
        Case::Remove { at: i } => format!("{} removed", at(*i)),
        other => format!("{other:?}"),
    }
}

/// What is wrong with the exchange, if anything.
fn judge(built: &Built, got: &Exchange) -> Option<String> {
    match got {
        Exchange::Answered(r) if r.status >= 500 => {
            Some(format!("answered {}: {}", r.status, r.text()))
        }
        Exchange::Answered(r) if r.status >= 400 && !r.body.is_empty() => {
            let body = r.json();
            let shaped = ["type", "code", "message", "documentation_url", "details"]
                .iter()
                .all(|k| body.get(*k).is_some());
            (!shaped).then(|| {
                format!(
                    "answered {} with a body that is not an error object: {}",
                    r.status,
                    r.text()
                )
            })
        }
        Exchange::Answered(_) => None,
        Exchange::Closed(why) if built.framed => {
            Some(format!("connection closed without an answer ({why})"))
        }
        Exchange::TimedOut if built.framed => Some("no answer within 10 s".to_owned()),
        Exchange::Refused(e) => Some(format!("the server no longer accepts connections: {e}")),
        _ => None,
    }
}

fn cases_per_operation() -> u32 {
    std::env::var("BANKD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn run(backend: Backend, name: &str) {
    let Some(db) = TestDatabase::create(backend, name) else {
        return;
    };
    let mut bankd = BankdProcess::start(&db.url);
    let started = Instant::now();
    let ops = write_operations();
    let contract = Contract::load(common::SPEC);
    for op in &ops {
        assert!(
            contract.operation(&op.method, &op.path).is_some(),
            "{} {} is not an operation the contract knows",
            op.method,
            op.path
        );
    }
    assert!(
        ops.len() >= 20,
        "only {} write operations found in the document",
        ops.len()
    );
    let ids = fixture(&bankd.base, &bankd.key);
    let mut failures: Vec<String> = Vec::new();
    let mut sent = 0usize;
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let timeout = Duration::from_secs(10);
    for op in &ops {
        let example = personalize(&op.example, &ids);
        let mut pointers = Vec::new();
        leaves(&example, String::new(), &mut pointers);
        let label = format!("{} {} ({})", op.method, op.path, op.operation_id);

        // Fixed extremes.
        for case in extremes(op, pointers.len()) {
            let built = build(op, &example, &pointers, &ids, &bankd.key, &case);
            let got = exchange(&bankd.base, &built.bytes, built.half_close, timeout);
            sent += 1;
            if let Some(s) = got.status() {
                *statuses.entry(s).or_default() += 1;
            }
            if let Some(problem) = judge(&built, &got) {
                failures.push(format!(
                    "{label}: {}: {problem}",
                    describe(&case, &pointers)
                ));
            }
        }

        // Random cases, shrunk to a smallest failing one.
        let config = Config {
            cases: cases_per_operation(),
            failure_persistence: None,
            max_shrink_iters: 64,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let counter = std::cell::Cell::new(0usize);
        let tally = std::cell::RefCell::new(BTreeMap::<u16, usize>::new());
        let result = runner.run(&case_strategy(op, pointers.len()), |case| {
            let built = build(op, &example, &pointers, &ids, &bankd.key, &case);
            let got = exchange(&bankd.base, &built.bytes, built.half_close, timeout);
            counter.set(counter.get() + 1);
            if let Some(s) = got.status() {
                *tally.borrow_mut().entry(s).or_default() += 1;
            }
            match judge(&built, &got) {
                Some(problem) => Err(TestCaseError::fail(problem)),
                None => Ok(()),
            }
        });
        sent += counter.get();
        for (s, n) in tally.into_inner() {
            *statuses.entry(s).or_default() += n;
        }
        match result {
            Ok(()) => {}
            Err(TestError::Fail(why, case)) => failures.push(format!(
                "{label}: smallest failing case {}: {why}",
                describe(&case, &pointers)
            )),
            Err(TestError::Abort(why)) => failures.push(format!("{label}: aborted: {why}")),
        }

        // The server is still up after the batch.
        if !bankd.is_running() {
            failures.push(format!("{label}: the server process exited"));
            panic!(
                "the server died during the batch of {label}; failures so far:\n{}",
                failures.join("\n")
            );
        }
        if !healthy(&bankd.base) {
            failures.push(format!("{label}: /healthz is not 200 after the batch"));
        }
    }
    let log = std::fs::read_to_string(&bankd.stderr_log).unwrap_or_default();
    for line in log.lines().filter(|l| l.contains("panicked")) {
        failures.push(format!("the server log shows a panic: {line}"));
    }
    eprintln!(
        "fuzz on {name}: {} write operations, {sent} requests in {:.1} s, statuses {statuses:?}, {} failures",
        ops.len(),
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    failures.sort();
    failures.dedup();
    assert!(
        failures.is_empty(),
        "{} malformed requests were mishandled:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn malformed_requests_to_every_write_operation_never_get_a_5xx_nor_bring_the_server_down_on_sqlite()
{
    run(Backend::Sqlite, "fuzz sqlite");
}

#[test]
fn malformed_requests_to_every_write_operation_never_get_a_5xx_nor_bring_the_server_down_on_postgres()
 {
    run(Backend::Postgres, "fuzz postgres");
}
