//! Crash safety of a real `bankd` process: `kill -9` at random moments under concurrent load.
//!
//! Three client threads create persons (`POST /entities/person`), bank accounts
//! (`POST /bank-accounts`) and book transfers between funded accounts (`POST /transfers/book`),
//! every request with its own `Idempotency-Key` and a unique marker (last name or description).
//! Meanwhile the server is killed with SIGKILL 20 times, each at a random moment, and started
//! again on the same database and address. Afterwards:
//! - every request that got a 200 is there (`GET` by id, with its marker);
//! - every request that got no answer, retried with the same key and the same bytes, answers 200
//!   (replayed or fresh), and each marker names exactly one object in the lists;
//! - the ledger holds: over all bank accounts of the platform (root accounts included) the sum of
//!   available + pending + holding + locked is 0, no account that may not overdraw has a negative
//!   available, each funded account's balance is its funding plus the completed transfers
//!   in, minus those out, and `bankd ledger check` finds every balance equal to the sum of its
//!   postings.
//!
//! Counts (requests sent, acknowledged, without answer, retried, replayed, kills) are printed.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Exchange, Rng, call, call_bytes, ok, walk};
use contract_tests::process::{Backend, BankdProcess, TestDatabase};
use serde_json::{Value, json};

const KILLS: usize = 20;
const WORKERS: usize = 3;
const FUNDING: i64 = 100_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Person,
    Account,
    Transfer,
}

impl Kind {
    fn create_path(self) -> &'static str {
        match self {
            Kind::Person => "/entities/person",
            Kind::Account => "/bank-accounts",
            Kind::Transfer => "/transfers/book",
        }
    }

    fn get_path(self, id: &str) -> String {
        match self {
            Kind::Person => format!("/entities/{id}"),
            Kind::Account => format!("/bank-accounts/{id}"),
            Kind::Transfer => format!("/transfers/book/{id}"),
        }
    }

    /// The marker an object of this kind carries.
    fn marker(self, object: &Value) -> Option<String> {
        match self {
            // The record has `person_details`; a list item only `name` ("first last").
            Kind::Person => object["person_details"]["last_name"]
                .as_str()
                .or_else(|| {
                    object["name"]
                        .as_str()
                        .and_then(|n| n.split_whitespace().last())
                })
                .map(str::to_owned),
            Kind::Account | Kind::Transfer => object["description"].as_str().map(str::to_owned),
        }
    }
}

#[derive(Debug, Clone)]
enum Outcome {
    Acked(String),
    Refused(u16, String),
    NoAnswer(String),
}

#[derive(Debug, Clone)]
struct Sent {
    kind: Kind,
    /// Both the `Idempotency-Key` and the marker of the object.
    key: String,
    body: Vec<u8>,
    outcome: Outcome,
}

struct Fixture {
    base: String,
    key: String,
    entity: String,
    accounts: Vec<String>,
}

fn load(
    fx: Arc<Fixture>,
    worker: usize,
    tag: String,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Vec<Sent> {
    let mut rng = Rng::new(seed);
    let mut sent = Vec::new();
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let key = format!("crash-{tag}-{worker}-{seq}");
        let kind = match rng.range(0, 4) {
            0 => Kind::Person,
            1 => Kind::Account,
            _ => Kind::Transfer,
        };
        let body = match kind {
            Kind::Person => json!({"first_name": "Crash", "last_name": key}),
            Kind::Account => json!({"entity_id": fx.entity, "description": key}),
            Kind::Transfer => {
                let from = rng.range(0, fx.accounts.len() as u64) as usize;
                let to = (from + 1 + rng.range(0, fx.accounts.len() as u64 - 1) as usize)
                    % fx.accounts.len();
                json!({
                    "amount": rng.range(1, 1001),
                    "sender_bank_account_id": fx.accounts[from],
                    "receiver_bank_account_id": fx.accounts[to],
                    "description": key,
                })
            }
        };
        let body = serde_json::to_vec(&body).expect("json");
        let got = call_bytes(
            &fx.base,
            &fx.key,
            "POST",
            kind.create_path(),
            Some(&body),
            &[("Idempotency-Key", &key)],
        );
        let outcome = match got {
            Exchange::Answered(r) if r.status == 200 => match r.json()["id"].as_str() {
                Some(id) => Outcome::Acked(id.to_owned()),
                None => Outcome::Refused(200, format!("a 200 without id: {}", r.text())),
            },
            Exchange::Answered(r) if r.status >= 500 => {
                Outcome::NoAnswer(format!("{} {}", r.status, r.text()))
            }
            Exchange::Answered(r) => Outcome::Refused(r.status, r.text()),
            Exchange::Refused(e) => {
                // The server is down: wait a little, the request was not even sent.
                std::thread::sleep(Duration::from_millis(20));
                Outcome::NoAnswer(format!("connection refused: {e}"))
            }
            other => Outcome::NoAnswer(format!("{other:?}")),
        };
        sent.push(Sent {
            kind,
            key,
            body,
            outcome,
        });
    }
    sent
}

fn setup(bankd: &BankdProcess) -> Fixture {
    let (base, key) = (bankd.base.clone(), bankd.key.clone());
    let entity = ok(
        &base,
        &key,
        "POST",
        "/entities/person",
        Some(&json!({"first_name": "Ledger", "last_name": "Owner"})),
    );
    assert_eq!(entity["verification_status"], "VERIFIED", "{entity}");
    let entity = entity["id"].as_str().expect("entity id").to_owned();
    let mut accounts = Vec::new();
    for i in 0..4 {
        let acct = ok(
            &base,
            &key,
            "POST",
            "/bank-accounts",
            Some(&json!({"entity_id": entity, "description": format!("Funded {i}")})),
        );
        let id = acct["id"].as_str().expect("account id").to_owned();
        let acno = acct["default_account_number_id"]
            .as_str()
            .expect("account number")
            .to_owned();
        let credit = ok(
            &base,
            &key,
            "POST",
            "/simulate/receive-ach-credit",
            Some(
                &json!({"destination_account_number_id": acno, "amount": FUNDING, "company_id": "FUNDING001", "company_name": "Funding"}),
            ),
        );
        assert_eq!(credit["status"], "COMPLETED", "{credit}");
        accounts.push(id);
    }
    Fixture {
        base,
        key,
        entity,
        accounts,
    }
}

/// Retries `s` with the same key and bytes until it has a final answer; answers it and
/// whether it was a replay. A 409 (the first attempt's transaction still running in a dying
/// connection) is waited out.
fn retry(fx: &Fixture, s: &Sent, in_use_waits: &mut usize) -> (common::Raw, bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = call_bytes(
            &fx.base,
            &fx.key,
            "POST",
            s.kind.create_path(),
            Some(&s.body),
            &[("Idempotency-Key", &s.key)],
        );
        match got {
            Exchange::Answered(r) if r.status == 409 && Instant::now() < deadline => {
                *in_use_waits += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            Exchange::Answered(r) => {
                let replayed = r.header("idempotent-replayed") == Some("true");
                return (r, replayed);
            }
            other if Instant::now() < deadline => {
                eprintln!("retry of {}: {other:?}", s.key);
                std::thread::sleep(Duration::from_millis(200));
            }
            other => panic!("retry of {} never answered: {other:?}", s.key),
        }
    }
}

fn run(backend: Backend, name: &str, tag: &str) {
    let Some(db) = TestDatabase::create(backend, name) else {
        return;
    };
    let mut bankd = BankdProcess::start(&db.url);
    let fx = Arc::new(setup(&bankd));
    let mut rng = Rng::from_clock(name);

    // Load, and kill -9 at random moments.
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (fx, stop, tag, seed) = (fx.clone(), stop.clone(), tag.to_owned(), rng.next());
            std::thread::spawn(move || load(fx, w, tag, seed, stop))
        })
        .collect();
    let started = Instant::now();
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_millis(rng.range(100, 800)));
        bankd.restart();
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let sent: Vec<Sent> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect();
    let load_seconds = started.elapsed().as_secs_f64();
    assert!(
        bankd.is_running(),
        "the server is not running after the last restart"
    );

    let mut problems: Vec<String> = Vec::new();
    let acked = sent
        .iter()
        .filter(|s| matches!(s.outcome, Outcome::Acked(_)))
        .count();
    let unanswered: Vec<&Sent> = sent
        .iter()
        .filter(|s| matches!(s.outcome, Outcome::NoAnswer(_)))
        .collect();
    let interrupted = unanswered.iter().filter(|s| matches!(&s.outcome, Outcome::NoAnswer(w) if !w.starts_with('5') && !w.starts_with("connection refused"))).count();
    let server_errors = unanswered
        .iter()
        .filter(|s| matches!(&s.outcome, Outcome::NoAnswer(w) if w.starts_with('5')))
        .count();
    for s in &sent {
        match &s.outcome {
            Outcome::Refused(status, body) => problems.push(format!(
                "{} ({:?}) was refused during the load: {status} {body}",
                s.key, s.kind
            )),
            Outcome::NoAnswer(why) if why.starts_with('5') => problems.push(format!(
                "{} ({:?}) got a server error during the load: {why}",
                s.key, s.kind
            )),
            _ => {}
        }
    }

    // Every acknowledged request is there.
    for s in &sent {
        if let Outcome::Acked(id) = &s.outcome {
            match call(&fx.base, &fx.key, "GET", &s.kind.get_path(id), None, &[]) {
                Exchange::Answered(r) if r.status == 200 => {
                    if s.kind.marker(&r.json()).as_deref() != Some(s.key.as_str()) {
                        problems.push(format!(
                            "{} ({:?}) acknowledged as {id}, but {id} is {}",
                            s.key,
                            s.kind,
                            r.text()
                        ));
                    }
                }
                other => problems.push(format!(
                    "{} ({:?}) was acknowledged as {id}, which is now {:?}",
                    s.key,
                    s.kind,
                    other.status()
                )),
            }
        }
    }

    // Retries of the unanswered ones complete, exactly once.
    let (mut replayed, mut fresh, mut in_use_waits) = (0usize, 0usize, 0usize);
    let mut final_id: BTreeMap<String, (Kind, String)> = BTreeMap::new();
    for s in &sent {
        if let Outcome::Acked(id) = &s.outcome {
            final_id.insert(s.key.clone(), (s.kind, id.clone()));
        }
    }
    for s in &unanswered {
        let (r, was_replay) = retry(&fx, s, &mut in_use_waits);
        if r.status != 200 {
            problems.push(format!(
                "retry of {} ({:?}): {} {}",
                s.key,
                s.kind,
                r.status,
                r.text()
            ));
            continue;
        }
        if was_replay {
            replayed += 1;
        } else {
            fresh += 1;
        }
        let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
        final_id.insert(s.key.clone(), (s.kind, id));
    }
    // A second retry of some of each replays the same object.
    let mut rechecked = 0;
    for s in sent.iter().step_by((sent.len() / 60).max(1)) {
        let Some((_, id)) = final_id.get(&s.key) else {
            continue;
        };
        let (r, was_replay) = retry(&fx, s, &mut in_use_waits);
        rechecked += 1;
        if r.status != 200 || !was_replay || r.json()["id"].as_str() != Some(id.as_str()) {
            problems.push(format!(
                "repeat of {} ({:?}) should replay {id}: {} replayed={was_replay} {}",
                s.key,
                s.kind,
                r.status,
                r.text()
            ));
        }
    }

    // Exactly one object per marker, and it is the one the request answered.
    let entities = walk(&fx.base, &fx.key, "/entities", "entities");
    let accounts = walk(&fx.base, &fx.key, "/bank-accounts", "bank_accounts");
    let transfers = walk(&fx.base, &fx.key, "/transfers/book", "transfers");
    let mut by_marker: BTreeMap<(Kind, String), Vec<String>> = BTreeMap::new();
    for (kind, list) in [
        (Kind::Person, &entities),
        (Kind::Account, &accounts),
        (Kind::Transfer, &transfers),
    ] {
        for o in list.iter() {
            if let Some(m) = kind.marker(o).filter(|m| m.starts_with("crash-")) {
                by_marker
                    .entry((kind, m))
                    .or_default()
                    .push(o["id"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    for s in &sent {
        let found = by_marker
            .get(&(s.kind, s.key.clone()))
            .cloned()
            .unwrap_or_default();
        match final_id.get(&s.key) {
            Some((_, id)) if found != [id.clone()] => {
                problems.push(format!(
                    "{} ({:?}) answered {id}; the lists hold {found:?}",
                    s.key, s.kind
                ));
            }
            None if !found.is_empty() => problems.push(format!(
                "{} ({:?}) was refused, yet the lists hold {found:?}",
                s.key, s.kind
            )),
            _ => {}
        }
    }
    let orphan = by_marker
        .keys()
        .filter(|(_, m)| !final_id.contains_key(m))
        .count();
    if orphan > 0 {
        problems.push(format!(
            "{orphan} objects carry a marker of no successful request"
        ));
    }

    // The ledger.
    let mut sum: i128 = 0;
    let mut types = BTreeMap::<String, usize>::new();
    for a in &accounts {
        let b = &a["balances"];
        let parts: Vec<i64> = [
            "available_amount",
            "pending_amount",
            "holding_amount",
            "locked_amount",
        ]
        .iter()
        .map(|f| {
            b[*f]
                .as_i64()
                .unwrap_or_else(|| panic!("{} has no {f}: {a}", a["id"]))
        })
        .collect();
        sum += parts.iter().map(|p| i128::from(*p)).sum::<i128>();
        *types
            .entry(a["type"].as_str().unwrap_or_default().to_owned())
            .or_default() += 1;
        // The settlement account stands for the outside world: money that came in makes it
        // negative by design.
        if a["is_overdraftable"] != json!(true)
            && a["type"] != "NETWORK_SETTLEMENT_ACCOUNT"
            && parts[0] < 0
        {
            problems.push(format!(
                "{} may not overdraw but has available {}",
                a["id"], parts[0]
            ));
        }
    }
    for root in [
        "PROGRAM_RESERVE",
        "OVERDRAFT_RESERVE",
        "NETWORK_SETTLEMENT_ACCOUNT",
    ] {
        if !types.contains_key(root) {
            problems.push(format!(
                "GET /bank-accounts does not list the root {root} account (types seen {types:?})"
            ));
        }
    }
    if sum != 0 {
        problems.push(format!(
            "the balances of the platform's {} bank accounts sum to {sum}, not 0",
            accounts.len()
        ));
    }
    // The books themselves: every stored balance equals the sum of its postings (the audit of
    // `bankd ledger check`, run on the database the kills left behind).
    let audit = bankd.ledger_check();
    if audit["balance_total"] != json!(0) || audit["discrepancies"] != json!([]) {
        problems.push(format!("bankd ledger check: {audit}"));
    }
    let mut expected: BTreeMap<&str, i64> =
        fx.accounts.iter().map(|a| (a.as_str(), FUNDING)).collect();
    for t in transfers.iter().filter(|t| t["status"] == "COMPLETED") {
        let amount = t["amount"].as_i64().unwrap_or_default();
        if let Some(e) = t["sender_bank_account_id"]
            .as_str()
            .and_then(|s| expected.get_mut(s))
        {
            *e -= amount;
        }
        if let Some(e) = t["receiver_bank_account_id"]
            .as_str()
            .and_then(|s| expected.get_mut(s))
        {
            *e += amount;
        }
    }
    for a in accounts
        .iter()
        .filter(|a| a["id"].as_str().is_some_and(|id| expected.contains_key(id)))
    {
        let want = expected[a["id"].as_str().unwrap_or_default()];
        if a["balances"]["available_amount"] != json!(want) {
            problems.push(format!(
                "{} has balances {}, but its funding and completed transfers make {want}",
                a["id"], a["balances"]
            ));
        }
    }

    eprintln!(
        "crash on {name}: {KILLS} kills in {load_seconds:.1} s; requests sent {}, acknowledged {acked}, without answer {} (cut by a kill {interrupted}, sent while down {}, 5xx {server_errors}), \
         retried {} (replayed {replayed}, fresh {fresh}, 409 waits {in_use_waits}), repeats checked {rechecked}; \
         objects: {} entities, {} bank accounts, {} book transfers; {} problems",
        sent.len(),
        unanswered.len(),
        unanswered.len() - interrupted - server_errors,
        unanswered.len(),
        entities.len(),
        accounts.len(),
        transfers.len(),
        problems.len()
    );
    assert!(acked > 0, "no request was acknowledged at all");
    assert!(
        interrupted > 0,
        "no kill interrupted a request in flight: the test proved nothing"
    );
    assert!(
        problems.is_empty(),
        "{} crash-safety problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_acknowledged_request_survives_twenty_kills_and_retries_complete_exactly_once_on_sqlite() {
    run(Backend::Sqlite, "crash sqlite", "sq");
}

#[test]
fn every_acknowledged_request_survives_twenty_kills_and_retries_complete_exactly_once_on_postgres()
{
    run(Backend::Postgres, "crash postgres", "pg");
}
