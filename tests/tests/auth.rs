//! API keys on a real `bankd` process: revocation takes effect on the very next request, a
//! `live_` key reads and writes but never reaches a simulation, and no key text ever reaches the
//! server's log, whatever the request (failed ones, and keys sent in the wrong place).

mod common;

use std::time::Duration;

use common::{Exchange, Raw, base64, basic, call, exchange, ok, request_bytes};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use serde_json::{Value, json};

fn answered(got: Exchange, what: &str) -> Raw {
    match got {
        Exchange::Answered(r) => r,
        other => panic!("{what}: no answer: {other:?}"),
    }
}

fn assert_unauthorized(r: &Raw, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.text());
    assert_eq!(r.code(), "unauthorized", "{what}: {}", r.text());
    assert_eq!(
        r.json()["type"],
        "authentication_error",
        "{what}: {}",
        r.text()
    );
    assert_eq!(
        r.header("www-authenticate"),
        Some("Basic realm=\"bankd\""),
        "{what}: {:?}",
        r.headers
    );
}

/// A request with the key as the Basic user name and an empty password (also accepted).
fn as_user_name(base: &str, key: &str, path: &str) -> Raw {
    let auth = format!("Basic {}", base64(format!("{key}:").as_bytes()));
    let req = request_bytes(
        "GET",
        path.as_bytes(),
        &[("Authorization".into(), auth.into_bytes())],
        None,
    );
    answered(
        exchange(base, &req, false, Duration::from_secs(30)),
        "user-name key",
    )
}

fn revoked_key_is_refused_at_once(backend: Backend, name: &str) {
    let Some(db) = TestDatabase::create(backend, name) else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let base = bankd.base.as_str();
    for mode in ["test", "live"] {
        let key = bankd.cli(&[
            "api-key",
            "create",
            "--platform",
            &bankd.platform_id,
            "--mode",
            mode,
        ]);
        let key = key["api_key"].as_str().expect("api_key").to_owned();
        assert!(key.starts_with(&format!("{mode}_")), "{key:?}");
        // In use, both ways of sending it, and through a write: warm any cache there may be.
        for _ in 0..3 {
            ok(base, &key, "GET", "/platform", None);
        }
        assert_eq!(as_user_name(base, &key, "/platform").status, 200);
        let made = ok(
            base,
            &key,
            "POST",
            "/entities/person",
            Some(&json!({"first_name": "Before", "last_name": "Revoke"})),
        );
        let made = made["id"].as_str().expect("id").to_owned();

        bankd.cli(&["api-key", "revoke", "--key", &key]);

        let r = answered(
            call(base, &key, "GET", "/platform", None, &[]),
            "first request after revoke",
        );
        assert_unauthorized(
            &r,
            &format!("{mode} key, the very next request after revoke"),
        );
        assert_unauthorized(
            &as_user_name(base, &key, "/platform"),
            "revoked key as user name",
        );
        let r = answered(
            call(base, &key, "GET", &format!("/entities/{made}"), None, &[]),
            "get after revoke",
        );
        assert_unauthorized(&r, "revoked key reading what it made");
        let r = answered(
            call(
                base,
                &key,
                "POST",
                "/entities/person",
                Some(&json!({"first_name": "After", "last_name": "Revoke"})),
                &[("Idempotency-Key", "after-revoke")],
            ),
            "write after revoke",
        );
        assert_unauthorized(&r, "revoked key writing");
        // Revocation is of that key only.
        ok(base, &bankd.key, "GET", "/platform", None);
        let people = ok(
            base,
            &bankd.key,
            "GET",
            "/entities?limit=100&type=PERSON",
            None,
        );
        let names: Vec<&str> = people["entities"]
            .as_array()
            .expect("entities")
            .iter()
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert!(
            !names.contains(&"After Revoke"),
            "a revoked key created an entity: {names:?}"
        );
    }
}

#[test]
fn a_revoked_key_is_refused_on_the_very_next_request_on_sqlite() {
    revoked_key_is_refused_at_once(Backend::Sqlite, "auth revoke sqlite");
}

#[test]
fn a_revoked_key_is_refused_on_the_very_next_request_on_postgres() {
    revoked_key_is_refused_at_once(Backend::Postgres, "auth revoke postgres");
}

fn balances(base: &str, key: &str, account: &str) -> Value {
    ok(base, key, "GET", &format!("/bank-accounts/{account}"), None)["balances"].clone()
}

fn live_key_never_reaches_a_simulation(backend: Backend, name: &str) {
    let Some(db) = TestDatabase::create(backend, name) else {
        return;
    };
    let bankd = BankdProcess::start(&db.url);
    let base = bankd.base.as_str();
    let live = bankd.cli(&[
        "api-key",
        "create",
        "--platform",
        &bankd.platform_id,
        "--mode",
        "live",
    ]);
    let live = live["api_key"].as_str().expect("live key").to_owned();
    assert!(live.starts_with("live_"), "{live:?}");

    // The live key reads and writes the same data as the sandbox key.
    let person = ok(
        base,
        &live,
        "POST",
        "/entities/person",
        Some(&json!({"first_name": "Live", "last_name": "Owner"})),
    );
    let person = person["id"].as_str().expect("id").to_owned();
    let acct = ok(
        base,
        &live,
        "POST",
        "/bank-accounts",
        Some(&json!({"entity_id": person, "description": "Live account"})),
    );
    let account = acct["id"].as_str().expect("id").to_owned();
    let acno = acct["default_account_number_id"]
        .as_str()
        .expect("acno")
        .to_owned();
    for path in [
        "/platform".to_owned(),
        "/entities".to_owned(),
        "/bank-accounts".to_owned(),
        format!("/bank-accounts/{account}"),
        "/transfers/ach".to_owned(),
    ] {
        ok(base, &live, "GET", &path, None);
        ok(base, &bankd.key, "GET", &path, None);
    }
    ok(
        base,
        &bankd.key,
        "GET",
        &format!("/entities/{person}"),
        None,
    );

    // The sandbox key simulates; the live key gets 403 `sandbox_only` and moves nothing.
    let credit = json!({"destination_account_number_id": acno, "amount": 5_000, "company_id": "LIVETEST01", "company_name": "Live Test"});
    ok(
        base,
        &bankd.key,
        "POST",
        "/simulate/receive-ach-credit",
        Some(&credit),
    );
    let before = balances(base, &bankd.key, &account);
    let transfers_before =
        ok(base, &bankd.key, "GET", "/transfers/ach?limit=100", None)["transfers"]
            .as_array()
            .map_or(0, Vec::len);
    let debit = json!({"destination_account_number_id": acno, "amount": 1_000, "company_id": "LIVETEST01", "company_name": "Live Test"});
    for path in [
        "/simulate/receive-ach-credit",
        "/simulate/receive-ach-debit",
    ] {
        for body in [&credit, &debit] {
            let r = answered(call(base, &live, "POST", path, Some(body), &[]), path);
            assert_eq!(
                (r.status, r.code().as_str()),
                (403, "sandbox_only"),
                "live key on {path}: {}",
                r.text()
            );
            assert_eq!(
                r.json()["type"].as_str().map(str::is_empty),
                Some(false),
                "{}",
                r.text()
            );
        }
        // Whatever the body, never a success.
        for body in [
            json!({}),
            json!({"destination_account_number_id": "acno_nope", "amount": 1, "company_id": "LIVETEST01", "company_name": "x"}),
            json!({"amount": -1}),
        ] {
            let r = answered(call(base, &live, "POST", path, Some(&body), &[]), path);
            assert!(
                matches!(r.status, 400 | 403 | 404),
                "live key on {path} with {body}: {} {}",
                r.status,
                r.text()
            );
        }
        let r = as_user_name_post(base, &live, path, &credit);
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "sandbox_only"),
            "live key as user name on {path}: {}",
            r.text()
        );
    }
    assert_eq!(
        balances(base, &bankd.key, &account),
        before,
        "a live key's simulation moved money"
    );
    let transfers_after =
        ok(base, &bankd.key, "GET", "/transfers/ach?limit=100", None)["transfers"]
            .as_array()
            .map_or(0, Vec::len);
    assert_eq!(
        transfers_after, transfers_before,
        "a live key's simulation made an ACH transfer"
    );
}

fn as_user_name_post(base: &str, key: &str, path: &str, body: &Value) -> Raw {
    let auth = format!("Basic {}", base64(format!("{key}:").as_bytes()));
    let body = serde_json::to_vec(body).expect("json");
    let headers = [
        ("Authorization".to_owned(), auth.into_bytes()),
        ("Content-Type".to_owned(), b"application/json".to_vec()),
    ];
    let req = request_bytes("POST", path.as_bytes(), &headers, Some(&body));
    answered(
        exchange(base, &req, false, Duration::from_secs(30)),
        "user-name key",
    )
}

#[test]
fn a_live_key_reads_and_writes_but_never_reaches_a_simulation_on_sqlite() {
    live_key_never_reaches_a_simulation(Backend::Sqlite, "auth live sqlite");
}

#[test]
fn a_live_key_reads_and_writes_but_never_reaches_a_simulation_on_postgres() {
    live_key_never_reaches_a_simulation(Backend::Postgres, "auth live postgres");
}

/// The forms in which a key could leak into a log line.
fn leak_forms(key: &str) -> Vec<String> {
    let secret = key.split_once('_').map_or(key, |(_, s)| s);
    vec![
        key.to_owned(),
        secret.to_owned(),
        base64(format!(":{key}").as_bytes()),
        base64(format!("{key}:").as_bytes()),
    ]
}

#[test]
fn no_key_text_ever_appears_in_the_server_log() {
    let Some(db) = TestDatabase::create(Backend::Sqlite, "auth log") else {
        return;
    };
    // `debug`: more than a deployment logs, so a leak at any level the server uses shows.
    let bankd = BankdProcess::start_with_env(&db.url, &[("BANKD_LOG", "debug")]);
    let base = bankd.base.as_str();
    let live = bankd.cli(&[
        "api-key",
        "create",
        "--platform",
        &bankd.platform_id,
        "--mode",
        "live",
    ]);
    let live = live["api_key"].as_str().expect("live key").to_owned();
    let spare = bankd.cli(&[
        "api-key",
        "create",
        "--platform",
        &bankd.platform_id,
        "--mode",
        "test",
    ]);
    let spare = spare["api_key"].as_str().expect("test key").to_owned();
    let keys = [bankd.key.clone(), live.clone(), spare.clone()];

    let mut statuses = Vec::new();
    let mut send =
        |method: &str, target: String, headers: Vec<(String, Vec<u8>)>, body: Option<Vec<u8>>| {
            let req = request_bytes(method, target.as_bytes(), &headers, body.as_deref());
            let got = exchange(base, &req, false, Duration::from_secs(30));
            statuses.push(got.status().unwrap_or(0));
        };
    let json_ct = || ("Content-Type".to_owned(), b"application/json".to_vec());
    for key in &keys {
        let auth = || ("Authorization".to_owned(), basic(key).into_bytes());
        // Successes and failures with the key where it belongs.
        send("GET", "/platform".into(), vec![auth()], None);
        send("GET", "/entities?limit=0".into(), vec![auth()], None);
        send("GET", "/entities/enti_nope".into(), vec![auth()], None);
        send(
            "POST",
            "/entities/person".into(),
            vec![auth(), json_ct()],
            Some(br#"{"first_name": ""}"#.to_vec()),
        );
        send(
            "POST",
            "/entities/person".into(),
            vec![auth(), json_ct()],
            Some(b"{not json".to_vec()),
        );
        send("POST", "/simulate/receive-ach-credit".into(), vec![auth(), json_ct()], Some(br#"{"destination_account_number_id":"acno_nope","amount":1,"company_id":"ABCDEFGHIJ","company_name":"x"}"#.to_vec()));
        send(
            "POST",
            "/documents".into(),
            vec![
                auth(),
                (
                    "Content-Type".into(),
                    b"multipart/form-data; boundary=b".to_vec(),
                ),
            ],
            Some(b"--b\r\nbroken".to_vec()),
        );
        // The key as the user name.
        send(
            "GET",
            "/platform".into(),
            vec![(
                "Authorization".into(),
                format!("Basic {}", base64(format!("{key}:").as_bytes())).into_bytes(),
            )],
            None,
        );
        // The key in the wrong places.
        send("GET", format!("/platform?api_key={key}"), vec![], None);
        send(
            "GET",
            format!("/entities?key={key}&limit=5"),
            vec![auth()],
            None,
        );
        send("GET", format!("/entities/{key}"), vec![auth()], None);
        send("GET", format!("/{key}"), vec![], None);
        send(
            "GET",
            "/platform".into(),
            vec![("Authorization".into(), format!("Bearer {key}").into_bytes())],
            None,
        );
        send(
            "GET",
            "/platform".into(),
            vec![("Authorization".into(), key.clone().into_bytes())],
            None,
        );
        send(
            "GET",
            "/platform".into(),
            vec![("X-Api-Key".into(), key.clone().into_bytes())],
            None,
        );
        send(
            "POST",
            "/entities/person".into(),
            vec![
                auth(),
                json_ct(),
                ("Idempotency-Key".into(), key.clone().into_bytes()),
            ],
            Some(br#"{"first_name":"Key","last_name":"Holder"}"#.to_vec()),
        );
        send(
            "POST",
            "/entities/person".into(),
            vec![auth(), json_ct()],
            Some(
                format!(r#"{{"first_name":"{key}","last_name":"{key}","unknown":"{key}"}}"#)
                    .into_bytes(),
            ),
        );
        send(
            "PATCH",
            "/platform".into(),
            vec![auth(), json_ct()],
            Some(format!(r#"{{"reporting_time_zone":"{key}"}}"#).into_bytes()),
        );
        send(
            "POST",
            "/bank-accounts".into(),
            vec![auth(), json_ct()],
            Some(format!(r#"{{"entity_id":"{key}","description":"{key}"}}"#).into_bytes()),
        );
        // Wrong and mangled keys.
        send(
            "GET",
            "/platform".into(),
            vec![(
                "Authorization".into(),
                basic(&format!("{key}x")).into_bytes(),
            )],
            None,
        );
        send(
            "GET",
            "/platform".into(),
            vec![(
                "Authorization".into(),
                basic(&key.to_uppercase()).into_bytes(),
            )],
            None,
        );
        send(
            "GET",
            "/platform".into(),
            vec![("Authorization".into(), format!("Basic {key}").into_bytes())],
            None,
        );
    }
    // A revoked key, used after its revocation.
    bankd.cli(&["api-key", "revoke", "--key", &spare]);
    let auth = ("Authorization".to_owned(), basic(&spare).into_bytes());
    send("GET", "/platform".into(), vec![auth.clone()], None);
    send(
        "POST",
        "/entities/person".into(),
        vec![auth, json_ct()],
        Some(br#"{"first_name":"A","last_name":"B"}"#.to_vec()),
    );

    assert!(
        statuses.iter().all(|s| *s != 0),
        "some requests got no answer: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s < 500),
        "some requests failed with a 5xx: {statuses:?}"
    );
    assert!(
        statuses.contains(&200)
            && statuses.contains(&401)
            && statuses.contains(&400)
            && statuses.contains(&404)
    );
    let log = std::fs::read_to_string(&bankd.stderr_log).expect("the server's log");
    let request_lines = log.lines().filter(|l| l.contains("request")).count();
    assert!(
        request_lines >= statuses.len() / 2,
        "the log has only {request_lines} request lines: is it the right file? {}",
        bankd.stderr_log.display()
    );
    let mut leaks = Vec::new();
    for key in &keys {
        for form in leak_forms(key) {
            for line in log.lines().filter(|l| l.contains(&form)) {
                leaks.push(format!("{form}: {line}"));
            }
        }
    }
    eprintln!(
        "auth log: {} requests, {} log lines, {} leaks",
        statuses.len(),
        log.lines().count(),
        leaks.len()
    );
    assert!(
        leaks.is_empty(),
        "key text in the server's log ({}):\n{}",
        bankd.stderr_log.display(),
        leaks.join("\n")
    );
}
