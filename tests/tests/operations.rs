//! Operating a real `bankd` process: `/metrics` (exact counts, bounded cardinality), `/readyz`
//! across a database outage, JSON logs without secrets, and the drain on SIGTERM.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Exchange, call, get_plain, ok, request_bytes, samples, value};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use serde_json::{Value, json};

#[test]
fn metrics_count_a_scenario_exactly_by_operation_status_and_reason() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "metrics scenario") else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let base = bankd.base.as_str();
    for i in 0..3 {
        let body = json!({"first_name": "Metric", "last_name": format!("Person{i}")});
        ok(base, &bankd.key, "POST", "/entities/person", Some(&body));
    }
    for _ in 0..5 {
        ok(base, &bankd.key, "GET", "/entities?limit=2", None);
    }
    let body = json!({"first_name": "Twice", "last_name": "Keyed"});
    for _ in 0..2 {
        let answer = call(
            base,
            &bankd.key,
            "POST",
            "/entities/person",
            Some(&body),
            &[("Idempotency-Key", "metrics-replay")],
        );
        assert_eq!(answer.status(), Some(200), "{answer:?}");
    }
    for _ in 0..4 {
        let wrong = call(base, "test_wrong", "GET", "/entities", None, &[]);
        assert_eq!(wrong.status(), Some(401));
    }
    let unknown = call(base, &bankd.key, "GET", "/nowhere", None, &[]);
    assert_eq!(unknown.status(), Some(404));
    let bad = call(base, &bankd.key, "GET", "/entities?limit=0", None, &[]);
    assert_eq!(bad.status(), Some(400));

    let (status, scrape) = get_plain(base, "/metrics");
    assert_eq!(status, 200, "{scrape}");
    let s = samples(&scrape);
    let requests = "bankd_http_requests_total";
    let created = [("operation", "create_person_entity"), ("status", "200")];
    assert_eq!(
        value(&s, requests, &created),
        5.0,
        "3 creates and 2 keyed: {scrape}"
    );
    let listed = [("operation", "list_entities"), ("status", "200")];
    assert_eq!(value(&s, requests, &listed), 5.0, "{scrape}");
    assert_eq!(
        value(
            &s,
            requests,
            &[("operation", "list_entities"), ("status", "401")]
        ),
        4.0
    );
    assert_eq!(
        value(
            &s,
            requests,
            &[("operation", "list_entities"), ("status", "400")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            requests,
            &[("operation", "unmatched"), ("status", "404")]
        ),
        1.0
    );
    let rejected = "bankd_http_rejected_total";
    assert_eq!(value(&s, rejected, &[("reason", "unauthorized")]), 4.0);
    assert_eq!(value(&s, rejected, &[("reason", "route_not_found")]), 1.0);
    assert_eq!(value(&s, rejected, &[("reason", "invalid_request")]), 1.0);
    let replays = [("outcome", "replayed")];
    assert_eq!(value(&s, "bankd_idempotency_requests_total", &replays), 1.0);
    // Every one of the 5 creates was timed, and the histogram counts them.
    let timed = [("operation", "create_person_entity")];
    assert_eq!(
        value(&s, "bankd_http_request_duration_seconds_count", &timed),
        5.0
    );
    // The scrape being served is in flight; nothing else is.
    assert_eq!(value(&s, "bankd_http_requests_in_flight", &[]), 1.0);
    assert!(value(&s, "bankd_sqlite_group_commit_batch_size_count", &[]) >= 1.0);
    assert_eq!(
        value(&s, "bankd_build_info", &[("backend", "sqlite")]),
        1.0,
        "{scrape}"
    );
    assert!(
        value(&s, "process_resident_memory_bytes", &[]) > 1e6,
        "{scrape}"
    );
    assert!(value(&s, "process_open_fds", &[]) > 0.0, "{scrape}");
    // Nothing a client sent is a label value.
    for sent in [
        bankd.key.as_str(),
        "metrics-replay",
        "Person",
        "test_wrong",
        "nowhere",
    ] {
        assert!(!scrape.contains(sent), "{sent:?} in the scrape");
    }
}

#[test]
fn ten_thousand_ids_over_a_hundred_platforms_keep_the_scrape_under_two_thousand_series() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "metrics cardinality") else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let keys: Vec<String> = (0..100)
        .map(|i| {
            let created = bankd.cli(&["platform", "create", "--name", &format!("Tenant {i}")]);
            created["api_key"].as_str().expect("a key").to_owned()
        })
        .collect();
    let paths = [
        "/bank-accounts/bacc_",
        "/entities/enti_",
        "/transfers/book/book_",
        "/counterparties/cpty_",
    ];
    for i in 0..10_000usize {
        let path = format!("{}{:026}", paths[i % paths.len()], i);
        let answer = call(&bankd.base, &keys[i % keys.len()], "GET", &path, None, &[]);
        assert_eq!(answer.status(), Some(404), "{path}: {answer:?}");
    }
    let (status, scrape) = get_plain(&bankd.base, "/metrics");
    assert_eq!(status, 200);
    let series = samples(&scrape).len();
    assert!(series < 2_000, "{series} series:\n{scrape}");
    assert!(
        value(
            &samples(&scrape),
            "bankd_http_requests_total",
            &[("operation", "get_bank_account"), ("status", "404")]
        ) == 2_500.0,
        "{scrape}"
    );
    assert!(!scrape.contains("plat_"), "no platform id in a label");
    assert!(!scrape.contains("bacc_0"), "no path id in a label");
}

/// A TCP proxy in front of PostgreSQL that a test can cut and restore, so that the database
/// becomes unreachable for one server without stopping it for every other test.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (up2, open2) = (up.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !up2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut open = open2.lock().expect("lock");
                for s in [&client, &server] {
                    open.push(s.try_clone().expect("clone"));
                }
                drop(open);
                pipe(
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                pipe(server, client);
            }
        });
        Proxy { port, up, open }
    }

    /// Refuses new connections and cuts every open one.
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for s in self.open.lock().expect("lock").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// `host:port` and the URL with the authority's host and port replaced by `127.0.0.1:port`.
fn through_proxy(url: &str, port: u16) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, host) = authority
        .rsplit_once('@')
        .map_or(("", authority), |(u, h)| (u, h));
    let target = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    };
    let user = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    (target, format!("{scheme}://{user}127.0.0.1:{port}/{path}"))
}

/// `/readyz` answers 503 with a reason while PostgreSQL is unreachable and 200 again once it is
/// back, without a restart; meanwhile the JSON log stays one parseable object a line, and the
/// outage shows at warning and error level.
#[test]
fn readiness_follows_the_database_and_json_logs_parse_at_every_level() {
    let Some(db) = TestDatabase::create(Backend::Postgres, "readiness") else {
        return;
    };
    let (target, _) = through_proxy(&db.url, 0);
    let proxy = Proxy::start(target);
    let (_, url) = through_proxy(&db.url, proxy.port);
    let bankd = BankdProcess::start_with_env(
        &url,
        &[("BANKD_LOG_FORMAT", "json"), ("BANKD_LOG", "debug")],
    );
    let base = bankd.base.as_str();
    assert_eq!(
        get_plain(base, "/readyz"),
        (200, r#"{"status":"ready"}"#.to_owned())
    );

    proxy.cut();
    let deadline = Instant::now() + Duration::from_secs(20);
    let reason = loop {
        let (status, body) = get_plain(base, "/readyz");
        if status == 503 {
            break body;
        }
        assert!(Instant::now() < deadline, "still {status} {body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let reason: Value = serde_json::from_str(&reason).expect("a JSON reason");
    assert_eq!(reason["status"], "not_ready", "{reason}");
    assert!(reason["reason"].is_string(), "{reason}");
    // Liveness does not depend on the database.
    assert_eq!(get_plain(base, "/healthz").0, 200);
    let during = call(base, &bankd.key, "GET", "/entities", None, &[]);
    assert!(
        matches!(during.status(), Some(s) if s >= 500),
        "a request during the outage fails as the server's: {during:?}"
    );

    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = get_plain(base, "/readyz");
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not ready again: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    ok(base, &bankd.key, "GET", "/entities", None);

    let is_request = |l: &Value| {
        l["message"] == "request" && l["operation"] == "list_entities" && l["status"] == 200
    };
    let log = bankd.log_when(|log| {
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| is_request(&l))
    });
    let mut levels = BTreeSet::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let parsed: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"));
        levels.insert(parsed["level"].as_str().unwrap_or("?").to_owned());
        assert!(parsed["timestamp"].is_string(), "{line}");
    }
    for level in ["DEBUG", "INFO", "WARN", "ERROR"] {
        assert!(levels.contains(level), "no {level} line in:\n{log}");
    }
    let request = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(is_request)
        .unwrap_or_else(|| panic!("no request line for list_entities:\n{log}"));
    for field in [
        "request_id",
        "status",
        "latency_us",
        "platform_id",
        "method",
        "path",
    ] {
        assert!(!request[field].is_null(), "{field} in {request}");
    }
    assert_eq!(request["platform_id"], bankd.platform_id.as_str());
}

/// A request full of secrets (the API key, an SSN, an account number, a tax id, a birth date)
/// leaves none of them in the log, in either format.
#[test]
fn no_key_secret_or_personal_field_reaches_the_log() {
    for format in ["text", "json"] {
        let Some(db) = TestDatabase::create(Backend::Sqlite, "secret-free log") else {
            return;
        };
        let bankd = BankdProcess::start_with_env(
            &db.url,
            &[("BANKD_LOG_FORMAT", format), ("BANKD_LOG", "trace")],
        );
        let base = bankd.base.as_str();
        let person = ok(
            base,
            &bankd.key,
            "POST",
            "/entities/person",
            Some(&json!({
                "first_name": "Secretive",
                "last_name": "Zyxwvutsr",
                "ssn": "987654329",
                "date_of_birth": "1961-07-13",
                "email": "hidden.person@example.org",
            })),
        );
        let account = ok(
            base,
            &bankd.key,
            "POST",
            "/bank-accounts",
            Some(&json!({"entity_id": person["id"], "description": "Private purse"})),
        );
        let number = account["default_account_number"]
            .as_str()
            .unwrap_or_else(|| panic!("an account number in {account}"))
            .to_owned();
        // A key in the wrong place, a malformed body and a request id shaped like a key.
        let _ = call(
            base,
            &bankd.key,
            "POST",
            "/entities/person",
            Some(&json!({"first_name": "Zyxwvutsr", "ssn": "12345678Q"})),
            &[("X-Request-Id", &bankd.key)],
        );
        // A last request whose line, once written, follows every line above.
        let _ = call(
            base,
            &bankd.key,
            "GET",
            "/platform",
            None,
            &[("X-Request-Id", "t-last")],
        );
        let log = bankd.log_when(|log| log.contains("t-last"));
        assert!(log.contains("request"), "the log has request lines:\n{log}");
        let mut secrets = vec![
            bankd.key.clone(),
            "987654329".to_owned(),
            "1961-07-13".to_owned(),
            "hidden.person@example.org".to_owned(),
            "Zyxwvutsr".to_owned(),
            "Private purse".to_owned(),
            "12345678Q".to_owned(),
        ];
        secrets.push(number);
        for secret in &secrets {
            assert!(
                !log.contains(secret.as_str()),
                "{format} log holds {secret:?}:\n{log}"
            );
        }
    }
}

/// SIGTERM: no new connections, every request in flight answered in full, every acknowledged
/// write still there after a restart, exit status 0.
#[test]
fn sigterm_drains_requests_in_flight_and_loses_no_acknowledged_write() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "drain") else {
        return;
    };
    let mut bankd = BankdProcess::start(&db.url);
    let (base, key) = (bankd.base.clone(), bankd.key.clone());
    let answered = Arc::new(Mutex::new(Vec::<(u16, Value)>::new()));
    let refused = Arc::new(Mutex::new(0usize));
    let workers: Vec<_> = (0..32)
        .map(|w| {
            let (base, key, answered, refused) =
                (base.clone(), key.clone(), answered.clone(), refused.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    let body = json!({"first_name": "Drain", "last_name": format!("W{w}N{i}")});
                    match call(&base, &key, "POST", "/entities/person", Some(&body), &[]) {
                        Exchange::Answered(r) => {
                            answered.lock().expect("lock").push((r.status, r.json()))
                        }
                        // Not accepted: the listener had closed (refused), or the connection
                        // waited in the kernel's queue when it did (reset before one byte).
                        Exchange::Refused(_) => {
                            *refused.lock().expect("lock") += 1;
                            return;
                        }
                        Exchange::Closed(how) if how.ends_with(" after 0 bytes") => {
                            *refused.lock().expect("lock") += 1;
                            return;
                        }
                        other => panic!("a request was cut off mid-answer: {other:?}"),
                    }
                }
            })
        })
        .collect();
    // Let the writers get going, then ask the server to stop while they are mid-flight.
    let deadline = Instant::now() + Duration::from_secs(20);
    while answered.lock().expect("lock").len() < 100 {
        assert!(Instant::now() < deadline, "no progress before the signal");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before_signal = answered.lock().expect("lock").len();
    bankd.signal("TERM");
    let status = bankd
        .wait_exit(Duration::from_secs(30))
        .expect("bankd exits after draining");
    assert!(status.success(), "exit status {status:?}");
    for w in workers {
        w.join().expect("a worker saw every answer complete");
    }
    let answered = answered.lock().expect("lock").clone();
    assert!(answered.iter().all(|(s, _)| *s == 200), "{answered:?}");
    assert_eq!(
        *refused.lock().expect("lock"),
        32,
        "each worker ends refused"
    );
    assert!(
        answered.len() > before_signal,
        "requests in flight at the signal were answered after it"
    );
    assert!(bankd.log().contains("stopped"), "{}", bankd.log());

    bankd.restart();
    let stored: BTreeSet<String> = common::walk(&bankd.base, &key, "/entities", "entities")
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect();
    for (_, person) in &answered {
        let id = person["id"].as_str().expect("an id");
        assert!(stored.contains(id), "acknowledged {id} is missing");
    }
}

/// A second signal ends the process at once, even while a request is still in flight.
#[test]
fn a_second_signal_exits_at_once() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "second signal") else {
        return;
    };
    let mut bankd = BankdProcess::start(&db.url);
    // A request whose head never ends: the drain waits for it (up to 30 s by default).
    let mut stalled = TcpStream::connect(common::addr(&bankd.base)).expect("connect");
    let head = format!(
        "POST /entities/person HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{",
        common::basic(&bankd.key)
    );
    stalled
        .write_all(head.as_bytes())
        .expect("send part of a request");
    std::thread::sleep(Duration::from_millis(200));
    bankd.signal("TERM");
    assert!(
        bankd.wait_exit(Duration::from_millis(1_500)).is_none(),
        "the first signal waits for the request in flight"
    );
    bankd.signal("TERM");
    let status = bankd
        .wait_exit(Duration::from_secs(3))
        .expect("the second signal ends the process at once");
    assert!(!status.success(), "{status:?}");
}

/// `metrics_listen` moves `/metrics` to an address of its own; `metrics = false` turns it off.
#[test]
fn metrics_move_to_their_own_listener_or_turn_off() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "metrics listener") else {
        return;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let own = format!("127.0.0.1:{port}");
    let bankd = BankdProcess::start_with_env(&db.url, &[("BANKD_METRICS_LISTEN", &own)]);
    assert_eq!(get_plain(&bankd.base, "/metrics").0, 404);
    let deadline = Instant::now() + Duration::from_secs(10);
    let scrape = loop {
        let req = request_bytes("GET", b"/metrics", &[], None);
        match common::exchange(&own, &req, false, Duration::from_secs(5)) {
            Exchange::Answered(r) if r.status == 200 => break r.text(),
            other => assert!(Instant::now() < deadline, "{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(scrape.contains("bankd_build_info"), "{scrape}");
    assert!(scrape.contains("process_start_time_seconds"), "{scrape}");
    drop(bankd);

    let Some(db) = TestDatabase::create(Backend::Sqlite, "metrics off") else {
        return;
    };
    let bankd = BankdProcess::start_with_env(&db.url, &[("BANKD_METRICS", "false")]);
    assert_eq!(get_plain(&bankd.base, "/metrics").0, 404);
    assert_eq!(get_plain(&bankd.base, "/readyz").0, 200);
}
