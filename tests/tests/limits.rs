//! Request size limits of a real `bankd` process, and its memory while it refuses a huge body.
//!
//! Limits observed (defaults, debug build, SQLite and PostgreSQL alike):
//! - JSON request body: at most 1 MiB (1 048 576 bytes): exactly 1 MiB is read (and judged on
//!   its content), one byte more is 400 `request_too_large`, on every JSON write operation.
//!   Streamed chunked without a length, 256 MiB of JSON is refused after 4-6 MiB have left the
//!   client (the rest is socket buffers), RSS peak about 43 MiB.
//! - Document upload: the file part at most 10 MiB (`max_document_bytes`): 10 MiB is stored,
//!   10 MiB + 1 byte is 400 `document_too_large`. A 1 GiB upload (with `Content-Length` or
//!   chunked) is 400 `document_too_large` within 0.1-0.15 s, after 14-16 MiB have left the
//!   client; the server's RSS goes from 32-42 MiB to a peak of 48-52 MiB (limit asserted: 100 MiB).
//! - Headers: hyper's default buffer for the request head (about 400 KiB). A 100 KB header is
//!   read: unknown header 200, `Authorization` 401, `Idempotency-Key` 400, `Content-Type` 415.
//!   A 512 KiB, 1 MiB or 8 MiB header, 201 headers, or a 1 MiB request target: 431 before any
//!   handler runs. Never a 5xx.
//!
//! The 1 GiB body comes from a generator (a 64 KiB block written over and over): the test never
//! holds it in memory. The server's RSS is sampled from `/proc/<pid>/status` every 10 ms.

mod common;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{
    BodyKind, Exchange, basic, exchange, healthy, read_response, request_bytes, write_operations,
};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use serde_json::json;

const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;
const JSON_LIMIT: usize = 1024 * 1024;

/// The resident set size of a process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Samples a process's RSS until stopped; answers the peak.
struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<u64>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(rss_kib(pid).unwrap_or(0));
                std::thread::sleep(Duration::from_millis(10));
            }
            peak.max(rss_kib(pid).unwrap_or(0))
        });
        RssSampler { stop, handle }
    }

    fn peak_kib(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("sampler")
    }
}

/// How the body's length is told.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    ContentLength,
    Chunked,
}

struct Streamed {
    answer: Exchange,
    /// Body bytes written when the answer had arrived.
    sent_at_answer: u64,
    seconds: f64,
    peak_rss_kib: u64,
    baseline_rss_kib: u64,
}

/// Streams `prefix`, then `filler` bytes from a generator, then `suffix`, as the body of
/// `head` (which ends just before the blank line), reading the answer while writing.
fn stream(
    bankd: &BankdProcess,
    head: String,
    framing: Framing,
    prefix: Vec<u8>,
    filler: u64,
    suffix: Vec<u8>,
) -> Streamed {
    let baseline_rss_kib = rss_kib(bankd.pid()).unwrap_or(0);
    let sampler = RssSampler::start(bankd.pid());
    let mut stream = TcpStream::connect(common::addr(&bankd.base)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let total = prefix.len() as u64 + filler + suffix.len() as u64;
    let mut head = head.into_bytes();
    match framing {
        Framing::ContentLength => {
            head.extend_from_slice(format!("Content-Length: {total}\r\n\r\n").as_bytes())
        }
        Framing::Chunked => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n"),
    }
    let sent = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let mut w = stream.try_clone().expect("clone");
        let sent = sent.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            let mut block = vec![0u8; 64 * 1024];
            let mut x: u32 = 0x1234_5678;
            for b in &mut block {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            if w.write_all(&head).is_err() {
                return;
            }
            let mut put = |bytes: &[u8]| -> bool {
                if done.load(Ordering::Relaxed) {
                    return false;
                }
                let ok = match framing {
                    Framing::ContentLength => w.write_all(bytes).is_ok(),
                    Framing::Chunked => {
                        w.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
                            .is_ok()
                            && w.write_all(bytes).is_ok()
                            && w.write_all(b"\r\n").is_ok()
                    }
                };
                if ok {
                    sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                }
                ok
            };
            if !put(&prefix) {
                return;
            }
            let mut left = filler;
            while left > 0 {
                let n = left.min(block.len() as u64) as usize;
                if !put(&block[..n]) {
                    return;
                }
                left -= n as u64;
            }
            let _ = put(&suffix) && framing == Framing::Chunked && put(b"");
        })
    };
    let started = Instant::now();
    let answer = read_response(&mut stream);
    let sent_at_answer = sent.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let _ = stream.shutdown(Shutdown::Both);
    writer.join().expect("writer");
    let peak_rss_kib = sampler.peak_kib();
    Streamed {
        answer,
        sent_at_answer,
        seconds,
        peak_rss_kib,
        baseline_rss_kib,
    }
}

fn upload_head(bankd: &BankdProcess) -> String {
    format!(
        "POST /documents HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: {}\r\nContent-Type: multipart/form-data; boundary=limitbound\r\n",
        basic(&bankd.key)
    )
}

fn huge_upload_is_refused_early_with_little_memory(backend: Backend, name: &str) {
    let Some(db) = TestDatabase::create(backend, name) else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let prefix = b"--limitbound\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\nother\r\n--limitbound\r\nContent-Disposition: form-data; name=\"file\"; filename=\"huge.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    let suffix = b"\r\n--limitbound--\r\n".to_vec();
    for framing in [Framing::ContentLength, Framing::Chunked] {
        let s = stream(
            &bankd,
            upload_head(&bankd),
            framing,
            prefix.clone(),
            GIB,
            suffix.clone(),
        );
        eprintln!(
            "1 GiB upload ({framing:?}) on {name}: answer {:?} after {:.2} s and {:.1} MiB sent; server RSS {:.1} MiB before, peak {:.1} MiB",
            s.answer.status(),
            s.seconds,
            s.sent_at_answer as f64 / MIB as f64,
            s.baseline_rss_kib as f64 / 1024.0,
            s.peak_rss_kib as f64 / 1024.0
        );
        let Exchange::Answered(r) = &s.answer else {
            panic!(
                "no answer to the 1 GiB upload ({framing:?}): {:?}",
                s.answer
            )
        };
        assert_eq!(r.status, 400, "1 GiB upload ({framing:?}): {}", r.text());
        assert!(
            ["document_too_large", "request_too_large"].contains(&r.code().as_str()),
            "1 GiB upload ({framing:?}): {}",
            r.text()
        );
        assert!(
            s.sent_at_answer < 256 * MIB,
            "1 GiB upload ({framing:?}): refused only after {} bytes",
            s.sent_at_answer
        );
        assert!(
            s.peak_rss_kib > 0,
            "RSS of pid {} could not be read",
            bankd.pid()
        );
        assert!(
            s.peak_rss_kib < 100 * 1024,
            "the server's RSS reached {} KiB during a refused upload",
            s.peak_rss_kib
        );
        assert!(
            healthy(&bankd.base),
            "the server is not healthy after the upload"
        );
    }
    // Just over the document limit is refused as well; just under it is stored.
    for (size, want) in [(10 * MIB + 1, 400), (10 * MIB, 200)] {
        let s = stream(
            &bankd,
            upload_head(&bankd),
            Framing::ContentLength,
            prefix.clone(),
            size,
            suffix.clone(),
        );
        let Exchange::Answered(r) = &s.answer else {
            panic!("no answer to the upload of {size} bytes: {:?}", s.answer)
        };
        assert_eq!(r.status, want, "upload of {size} bytes: {}", r.text());
        if want == 200 {
            assert_eq!(r.json()["size"], json!(size), "{}", r.text());
        } else {
            assert_eq!(r.code(), "document_too_large", "{}", r.text());
        }
    }
}

#[test]
fn a_one_gib_upload_is_refused_early_while_the_server_stays_below_100_mib_on_sqlite() {
    huge_upload_is_refused_early_with_little_memory(Backend::Sqlite, "limits upload sqlite");
}

#[test]
fn a_one_gib_upload_is_refused_early_while_the_server_stays_below_100_mib_on_postgres() {
    huge_upload_is_refused_early_with_little_memory(Backend::Postgres, "limits upload postgres");
}

/// A JSON body of exactly `len` bytes: an object whose one string field fills it.
fn json_of_len(field: &str, len: usize) -> Vec<u8> {
    let overhead = format!("{{\"{field}\":\"\"}}").len();
    let mut v = format!("{{\"{field}\":\"").into_bytes();
    v.extend(std::iter::repeat_n(b'a', len - overhead));
    v.extend_from_slice(b"\"}");
    assert_eq!(v.len(), len);
    v
}

#[test]
fn a_json_body_over_one_mib_is_refused_on_every_json_write_operation() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "limits json") else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let auth = ("Authorization".to_owned(), basic(&bankd.key).into_bytes());
    let json_ct = ("Content-Type".to_owned(), b"application/json".to_vec());
    let mut checked = 0;
    for op in write_operations() {
        if !matches!(op.body, BodyKind::Json { .. }) {
            continue;
        }
        let path =
            op.concrete_path(&|param| format!("{}_2Ks1MnvPLKTGvSG9QWJrCQPYqIM", &param[..4]));
        for (len, too_large) in [
            (JSON_LIMIT + 1, true),
            (4 * JSON_LIMIT, true),
            (JSON_LIMIT, false),
        ] {
            let body = json_of_len("description", len);
            let req = request_bytes(
                &op.method,
                path.as_bytes(),
                &[auth.clone(), json_ct.clone()],
                Some(&body),
            );
            let got = exchange(&bankd.base, &req, false, Duration::from_secs(30));
            let Exchange::Answered(r) = &got else {
                panic!(
                    "{} {path}: no answer to a {len}-byte body: {got:?}",
                    op.method
                )
            };
            assert!(
                r.status < 500,
                "{} {path} with {len} bytes: {} {}",
                op.method,
                r.status,
                r.text()
            );
            if too_large {
                assert_eq!(
                    (r.status, r.code().as_str()),
                    (400, "request_too_large"),
                    "{} {path} with {len} bytes: {}",
                    op.method,
                    r.text()
                );
            } else {
                assert_ne!(
                    r.code(),
                    "request_too_large",
                    "{} {path}: a body of exactly 1 MiB is within the limit",
                    op.method
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} JSON write operations");

    // Streamed without a length: refused once past the limit, without reading the rest.
    let head = format!(
        "POST /entities/person HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: {}\r\nContent-Type: application/json\r\n",
        basic(&bankd.key)
    );
    let s = stream(
        &bankd,
        head,
        Framing::Chunked,
        b"{\"first_name\":\"".to_vec(),
        256 * MIB,
        b"\"}".to_vec(),
    );
    eprintln!(
        "256 MiB chunked JSON: answer {:?} after {:.1} MiB sent; server RSS peak {:.1} MiB",
        s.answer.status(),
        s.sent_at_answer as f64 / MIB as f64,
        s.peak_rss_kib as f64 / 1024.0
    );
    let Exchange::Answered(r) = &s.answer else {
        panic!("no answer to 256 MiB of chunked JSON: {:?}", s.answer)
    };
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "request_too_large"),
        "{}",
        r.text()
    );
    assert!(
        s.sent_at_answer < 64 * MIB,
        "refused only after {} bytes",
        s.sent_at_answer
    );
    assert!(
        s.peak_rss_kib < 100 * 1024,
        "RSS reached {} KiB",
        s.peak_rss_kib
    );
    assert!(healthy(&bankd.base));
}

#[test]
fn an_oversized_header_is_refused_without_a_5xx_and_a_100_kb_header_is_served() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "limits headers") else {
        return;
    };
    let mut bankd = BankdProcess::start(&db.url);
    let auth = ("Authorization".to_owned(), basic(&bankd.key).into_bytes());
    let get = |headers: &[(String, Vec<u8>)], target: &[u8]| {
        let req = request_bytes("GET", target, headers, None);
        exchange(&bankd.base, &req, false, Duration::from_secs(30))
    };
    let mut seen = Vec::new();

    // 100 KB in one header the API does not read: served as usual.
    let got = get(
        &[auth.clone(), ("X-Padding".into(), vec![b'p'; 100 * 1000])],
        b"/platform",
    );
    seen.push(format!("100 KB X-Padding: {:?}", got.status()));
    assert_eq!(got.status(), Some(200), "{got:?}");

    // 100 KB in headers the API reads: a 4xx, never a 5xx.
    for name in [
        "Authorization",
        "Idempotency-Key",
        "Content-Type",
        "X-Request-Id",
    ] {
        let mut headers = vec![auth.clone()];
        headers.retain(|(k, _)| k != name);
        headers.push((name.into(), vec![b'k'; 100 * 1000]));
        let req = request_bytes(
            "POST",
            b"/entities/person",
            &headers,
            Some(br#"{"first_name":"A","last_name":"B"}"#),
        );
        let got = exchange(&bankd.base, &req, false, Duration::from_secs(30));
        seen.push(format!("100 KB {name}: {:?}", got.status()));
        let status = got
            .status()
            .unwrap_or_else(|| panic!("100 KB {name}: no answer: {got:?}"));
        assert!(status < 500, "100 KB {name}: {got:?}");
        if name != "X-Request-Id" {
            assert!((400..500).contains(&status), "100 KB {name}: {got:?}");
        }
    }

    // Past the head buffer: refused (431) before any handler, never a 5xx.
    for size in [512 * 1024, 1024 * 1024, 8 * 1024 * 1024] {
        let got = get(
            &[auth.clone(), ("X-Padding".into(), vec![b'p'; size])],
            b"/platform",
        );
        seen.push(format!("{size}-byte header: {:?}", got.status()));
        match &got {
            Exchange::Answered(r) => assert!(
                (400..500).contains(&r.status),
                "{size}-byte header: {} {}",
                r.status,
                r.text()
            ),
            other => panic!("{size}-byte header: no refusal, {other:?}"),
        }
    }
    let many: Vec<(String, Vec<u8>)> = std::iter::once(auth.clone())
        .chain((0..200).map(|i| (format!("X-H{i}"), b"v".to_vec())))
        .collect();
    let got = get(&many, b"/platform");
    seen.push(format!("201 headers: {:?}", got.status()));
    assert!(
        got.status().is_some_and(|s| (400..500).contains(&s)),
        "201 headers: {got:?}"
    );
    let long_target = format!("/entities/{}", "e".repeat(1024 * 1024));
    let got = get(std::slice::from_ref(&auth), long_target.as_bytes());
    seen.push(format!("1 MiB request target: {:?}", got.status()));
    assert!(
        got.status().is_some_and(|s| (400..500).contains(&s)),
        "1 MiB request target: {got:?}"
    );

    eprintln!("header limits observed: {}", seen.join("; "));
    assert!(bankd.is_running(), "the server exited");
    assert!(
        healthy(&bankd.base),
        "the server is not healthy after the oversized headers"
    );
}

#[test]
fn a_request_that_outlasts_the_time_limit_is_abandoned_and_answered_503_request_timeout() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "limits timeout") else {
        return;
    };
    let mut bankd = BankdProcess::start_with_env(&db.url, &[("BANKD_REQUEST_TIMEOUT_SECS", "1")]);
    // A body that promises 100 bytes and stalls after 12: the handler waits for the rest until
    // the time limit ends the request.
    let mut head = format!(
        "POST /entities/person HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Authorization: {}\r\nContent-Type: application/json\r\nX-Request-Id: slow-1\r\n\
         Content-Length: 100\r\n\r\n",
        basic(&bankd.key)
    )
    .into_bytes();
    head.extend_from_slice(br#"{"first_name"#);
    let started = Instant::now();
    let got = exchange(&bankd.base, &head, false, Duration::from_secs(20));
    let waited = started.elapsed();
    let Exchange::Answered(raw) = &got else {
        panic!("no answer to a stalled request: {got:?}");
    };
    assert_eq!(raw.status, 503, "{}", raw.text());
    let body = raw.json();
    assert_eq!(body["code"], "request_timeout", "{body}");
    assert_eq!(body["type"], "server_error", "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with("(request id slow-1)") && message.contains("Idempotency-Key"),
        "a 5xx carries the request id and what to do, nothing internal: {body}"
    );
    assert_eq!(raw.header("x-request-id"), Some("slow-1"));
    assert_eq!(raw.header("retry-after"), Some("1"));
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "answered after {waited:?}, expected about the 1 s limit"
    );
    // Nothing of the abandoned request was kept, and the server goes on serving.
    assert!(bankd.is_running(), "the server exited");
    assert!(healthy(&bankd.base));
    let listed = common::ok(
        &bankd.base,
        &bankd.key,
        "GET",
        "/entities?type=PERSON",
        None,
    );
    assert_eq!(listed["entities"], json!([]), "{listed}");
}

#[test]
fn many_small_text_parts_cannot_add_up_past_the_body_limit() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "limits text parts") else {
        return;
    };
    let mut bankd = BankdProcess::start(&db.url);
    // 2 048 text parts of 1 KiB each (2 MiB in all), every one under the per-part cap.
    let mut body = Vec::new();
    for i in 0..2048 {
        body.extend_from_slice(
            format!(
                "--limitbound\r\nContent-Disposition: form-data; name=\"x{i}\"\r\n\r\n{}\r\n",
                "t".repeat(1024)
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(b"--limitbound--\r\n");
    let headers = [
        ("Authorization".to_owned(), basic(&bankd.key).into_bytes()),
        (
            "Content-Type".to_owned(),
            b"multipart/form-data; boundary=limitbound".to_vec(),
        ),
    ];
    let req = request_bytes("POST", b"/documents", &headers, Some(&body));
    let got = exchange(&bankd.base, &req, false, Duration::from_secs(30));
    let Exchange::Answered(raw) = &got else {
        panic!("no answer: {got:?}");
    };
    assert_eq!(raw.status, 400, "{}", raw.text());
    let answer = raw.json();
    assert_eq!(answer["code"], "invalid_request", "{answer}");
    let why = answer["details"]["body"].as_str().unwrap_or_default();
    assert!(
        why.contains("in total"),
        "refused for the total of its text parts, not later for their names: {answer}"
    );
    assert!(bankd.is_running(), "the server exited");
    assert!(healthy(&bankd.base));
}
