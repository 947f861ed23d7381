//! The daily history end to end, with a settable clock: movements made through the API at
//! chosen instants land on the local day of the platform's reporting time zone, across the
//! 23-hour and 25-hour days of daylight saving time, and days chain (each opens at the close
//! of the day before).
//!
//! Expected local days are written out by hand (with the UTC offset in force) rather than
//! computed with the time zone library the server uses, so a shared mistake cannot hide.

use std::collections::BTreeMap;
use std::sync::Arc;

use bankd::clock::FixedClock;
use bankd::config::Config;
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};

use crate::common::Ctx;
use crate::helpers::{TestApp, ctx_tests, spawn_app_with};
use crate::transfers::{Acct, assert_books_balance, book, fund, open_account};

ctx_tests!(
    history_puts_each_movement_on_its_local_day_across_both_dst_changes,
    history_reaches_back_exactly_366_days_and_opens_with_everything_before,
    history_opens_alike_whichever_side_of_the_window_it_adds_up,
);

const ZONE: &str = "America/New_York";
const KINDS: [&str; 4] = ["available", "pending", "holding", "locked"];

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

fn date(s: &str) -> NaiveDate {
    s.parse().expect("a date")
}

/// A bankd whose clock stands at `start`, with platform A reporting in New York time, and two
/// accounts of A opened then: (the account under test, a counterpart for book transfers).
async fn app_at(ctx: Ctx, start: DateTime<Utc>) -> (TestApp, Arc<FixedClock>, Acct, Acct) {
    let clock = Arc::new(FixedClock::new(start));
    let app = spawn_app_with(ctx, clock.clone(), Config::default()).await;
    let zone = json!({"reporting_time_zone": ZONE});
    app.patch("/platform", &app.a.key, &zone).await.expect(200);
    let account = open_account(&app, &app.a, "USD", false).await;
    let other = open_account(&app, &app.a, "USD", false).await;
    (app, clock, account, other)
}

/// A movement of the account under test: money in (an ACH credit) or out (a book transfer).
#[derive(Debug, Clone, Copy)]
enum Move {
    In(i64),
    Out(i64),
}

/// Makes `movement` at `at`, through the API.
async fn make(app: &TestApp, clock: &FixedClock, at: &str, movement: Move, pair: (&Acct, &Acct)) {
    clock.set(utc(at));
    let (account, other) = pair;
    match movement {
        Move::In(amount) => fund(app, &app.a, account, amount).await,
        Move::Out(amount) => {
            let t = app
                .post("/transfers/book", &app.a.key, &book(account, other, amount))
                .await
                .expect(200);
            assert_eq!(t["created_at"].as_str().map(utc), Some(utc(at)));
        }
    }
}

/// Per local day: (credit, debit, transaction count) of `available`.
type Expected = BTreeMap<NaiveDate, (i64, i64, i64)>;

/// Makes each (instant, its local day, movement) in order; answers what each day must show.
async fn make_all(
    app: &TestApp,
    clock: &FixedClock,
    moves: &[(&str, &str, Move)],
    pair: (&Acct, &Acct),
) -> Expected {
    let mut expected = Expected::new();
    for &(at, day, movement) in moves {
        make(app, clock, at, movement, pair).await;
        expect_on(&mut expected, day, movement);
    }
    expected
}

fn expect_on(expected: &mut Expected, day: &str, movement: Move) {
    let e = expected.entry(date(day)).or_default();
    match movement {
        Move::In(amount) => e.0 += amount,
        Move::Out(amount) => e.1 += amount,
    }
    e.2 += 1;
}

/// The history days of `account` for `query`, newest first.
async fn history(app: &TestApp, account: &Acct, query: &str) -> Vec<Value> {
    let path = format!("/bank-accounts/{}/history?{query}", account.id);
    let h = app.get(&path, &app.a.key).await.expect(200);
    assert_eq!(h["time_zone"], ZONE);
    h["history"].as_array().cloned().expect("a history list")
}

fn field(day: &Value, name: &str) -> i64 {
    day[name]
        .as_i64()
        .unwrap_or_else(|| panic!("`{name}` in {day}"))
}

/// `[open, credit, debit, close]` of one balance of a day.
fn figures(day: &Value, kind: &str) -> [i64; 4] {
    ["open", "credit", "debit", "close"].map(|f| field(day, &format!("{kind}_{f}")))
}

fn effective_on(day: &Value) -> NaiveDate {
    date(day["effective_on"].as_str().expect("effective_on"))
}

/// Asserts that `days` are consecutive dates, newest first, that every balance of every day
/// closes at open + credit - debit, and that each day opens at the close of the day before.
fn assert_chained(days: &[Value]) {
    for day in days {
        for kind in KINDS {
            let [open, credit, debit, close] = figures(day, kind);
            assert!(credit >= 0 && debit >= 0, "{kind} in {day}");
            assert_eq!(close, open + credit - debit, "{kind} in {day}");
        }
    }
    for pair in days.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        assert_eq!(
            effective_on(older).succ_opt(),
            Some(effective_on(newer)),
            "consecutive days, newest first"
        );
        for kind in KINDS {
            assert_eq!(
                field(newer, &format!("{kind}_open")),
                field(older, &format!("{kind}_close")),
                "{kind}: {newer} opens at the close of {older}"
            );
        }
    }
}

/// Asserts every day's `available` figures and transaction count against `expected`, the
/// oldest day opening at `opening`; days not in `expected` carry the balance forward.
fn assert_days(days: &[Value], opening: i64, expected: &Expected) {
    assert_chained(days);
    let mut balance = opening;
    for day in days.iter().rev() {
        let (credit, debit, count) = expected
            .get(&effective_on(day))
            .copied()
            .unwrap_or_default();
        let close = balance + credit - debit;
        assert_eq!(
            figures(day, "available"),
            [balance, credit, debit, close],
            "{day}"
        );
        assert_eq!(field(day, "transaction_count"), count, "{day}");
        for kind in ["pending", "holding", "locked"] {
            assert_eq!(field(day, &format!("{kind}_close")), 0, "{kind} in {day}");
        }
        balance = close;
    }
}

async fn history_puts_each_movement_on_its_local_day_across_both_dst_changes(ctx: Ctx) {
    // Friday 2025-03-07, 12:00 EST (UTC-5).
    let (app, clock, account, other) = app_at(ctx, utc("2025-03-07T17:00:00Z")).await;
    // (instant, the local day it belongs to, movement). Powers of two: each day's sums say
    // exactly which movements it holds.
    let moves = [
        ("2025-03-07T17:00:00Z", "2025-03-07", Move::In(100_000)),
        // Spring forward: 2025-03-09 has 23 hours (02:00 EST jumps to 03:00 EDT, UTC-4).
        ("2025-03-09T04:30:00Z", "2025-03-08", Move::In(1)), // 03-08 23:30 EST
        ("2025-03-09T05:30:00Z", "2025-03-09", Move::In(2)), // 03-09 00:30 EST
        ("2025-03-09T07:30:00Z", "2025-03-09", Move::Out(4)), // 03:30 EDT, after the gap
        ("2025-03-10T03:30:00Z", "2025-03-09", Move::In(8)), // 03-09 23:30 EDT
        ("2025-03-10T04:30:00Z", "2025-03-10", Move::Out(16)), // 03-10 00:30 EDT
        ("2025-03-11T03:30:00Z", "2025-03-10", Move::In(32)), // 03-10 23:30 EDT
        // Fall back: 2025-11-02 has 25 hours (02:00 EDT goes back to 01:00 EST, UTC-5).
        ("2025-11-02T03:30:00Z", "2025-11-01", Move::In(64)), // 11-01 23:30 EDT
        ("2025-11-02T04:30:00Z", "2025-11-02", Move::Out(128)), // 11-02 00:30 EDT
        ("2025-11-02T05:30:00Z", "2025-11-02", Move::In(256)), // 01:30 EDT, the first
        ("2025-11-02T06:30:00Z", "2025-11-02", Move::Out(512)), // 01:30 EST, the second
        ("2025-11-03T04:30:00Z", "2025-11-02", Move::In(1_024)), // 11-02 23:30 EST
        ("2025-11-03T05:30:00Z", "2025-11-03", Move::Out(2_048)), // 11-03 00:30 EST
        ("2025-11-04T04:30:00Z", "2025-11-03", Move::In(4_096)), // 11-03 23:30 EST
    ];
    let expected = make_all(&app, &clock, &moves, (&account, &other)).await;
    // Today is Wednesday 2025-11-05, 12:00 EST.
    clock.set(utc("2025-11-05T17:00:00Z"));

    // The whole life of the account: 244 days, from its creation day to today.
    let days = history(&app, &account, "from_date=2025-03-01").await;
    assert_eq!(days.len(), 244);
    assert_eq!(effective_on(&days[0]), date("2025-11-05"));
    assert_eq!(effective_on(&days[243]), date("2025-03-07"));
    assert_days(&days, 0, &expected);
    // Spot checks, in plain numbers: the 23-hour day and the 25-hour day.
    let on = |d: &str| {
        days.iter()
            .find(|x| effective_on(x) == date(d))
            .cloned()
            .expect("the day is listed")
    };
    let march_9 = on("2025-03-09");
    assert_eq!(figures(&march_9, "available"), [100_001, 10, 4, 100_007]);
    assert_eq!(field(&march_9, "transaction_count"), 3);
    let november_2 = on("2025-11-02");
    assert_eq!(
        figures(&november_2, "available"),
        [100_087, 1_280, 640, 100_727]
    );
    assert_eq!(field(&november_2, "transaction_count"), 4);
    // A quiet day in between carries the balance forward.
    let quiet = on("2025-07-04");
    assert_eq!(field(&quiet, "transaction_count"), 0);
    assert_eq!(figures(&quiet, "available"), [100_023, 0, 0, 100_023]);

    // A window that starts on a DST day opens with everything before it.
    let days = history(&app, &account, "from_date=2025-11-02&to_date=2025-11-03").await;
    assert_eq!(days.len(), 2);
    assert_days(&days, 100_087, &expected);
    let days = history(&app, &account, "from_date=2025-03-09&to_date=2025-03-10").await;
    assert_days(&days, 100_001, &expected);
    // The counterpart's history sees the book transfers on the same local days.
    let days = history(&app, &other, "from_date=2025-11-01&to_date=2025-11-04").await;
    let credits: Vec<i64> = days.iter().map(|d| field(d, "available_credit")).collect();
    assert_eq!(credits, vec![0, 2_048, 640, 0]);
    assert_books_balance(&app, &app.a.id).await;
}

async fn history_reaches_back_exactly_366_days_and_opens_with_everything_before(ctx: Ctx) {
    // Today will be Thursday 2026-01-15 (EST, UTC-5): the window is 2025-01-15 to 2026-01-15.
    // The account is opened 400 days earlier, on 2024-12-11 at 12:00 EST.
    let (app, clock, account, other) = app_at(ctx, utc("2024-12-11T17:00:00Z")).await;
    let moves = [
        // Before the window: all of it is in the oldest day's opening.
        ("2024-12-11T17:00:00Z", "2024-12-11", Move::In(1_000)),
        ("2024-12-31T17:00:00Z", "2024-12-31", Move::Out(100)),
        ("2025-01-14T17:00:00Z", "2025-01-14", Move::In(20)),
        // 2025-01-14 23:30 EST: already the window's first day in UTC, not in New York.
        ("2025-01-15T04:30:00Z", "2025-01-14", Move::In(40)),
        // Inside: 00:30 EST on the oldest day, a summer day (EDT), and today.
        ("2025-01-15T05:30:00Z", "2025-01-15", Move::In(5)),
        ("2025-08-03T16:00:00Z", "2025-08-03", Move::Out(7)),
        ("2026-01-15T17:00:00Z", "2026-01-15", Move::In(11)),
    ];
    let expected = make_all(&app, &clock, &moves, (&account, &other)).await;

    let days = history(&app, &account, "from_date=2025-01-15").await;
    assert_eq!(days.len(), 366);
    assert_eq!(
        effective_on(&days[0]),
        date("2026-01-15"),
        "newest first: today"
    );
    assert_eq!(effective_on(&days[365]), date("2025-01-15"));
    assert_eq!(figures(&days[365], "available"), [960, 5, 0, 965]);
    assert_days(&days, 960, &expected);
    assert_eq!(figures(&days[0], "available"), [958, 11, 0, 969]);
    // The same window named in full, and one day further back is outside it.
    let named = history(&app, &account, "from_date=2025-01-15&to_date=2026-01-15").await;
    assert_eq!(named, days);
    let path = format!("/bank-accounts/{}/history", account.id);
    let too_old = format!("{path}?from_date=2025-01-14");
    let e = app
        .get(&too_old, &app.a.key)
        .await
        .expect_error(400, "invalid_date_range");
    assert!(e["details"]["from_date"].is_string(), "{e}");

    // Today is the clock's day in New York: at 23:30 EST it is still 2026-01-15 there (already
    // the 16th in UTC), so the window has not moved and tomorrow is still refused.
    clock.set(utc("2026-01-16T04:30:00Z"));
    assert_eq!(history(&app, &account, "from_date=2025-01-15").await, days);
    let tomorrow = format!("{path}?to_date=2026-01-16");
    app.get(&tomorrow, &app.a.key)
        .await
        .expect_error(400, "invalid_date_range");
    // An hour later it is the 16th: the window moves one day.
    clock.set(utc("2026-01-16T05:30:00Z"));
    app.get(&format!("{path}?from_date=2025-01-15"), &app.a.key)
        .await
        .expect_error(400, "invalid_date_range");
    let moved = history(&app, &account, "from_date=2025-01-16").await;
    assert_eq!(moved.len(), 366);
    assert_eq!(effective_on(&moved[0]), date("2026-01-16"));
    assert_days(&moved, 965, &expected);
}

async fn history_opens_alike_whichever_side_of_the_window_it_adds_up(ctx: Ctx) {
    // The opening balances are the postings before the window, or the stored balance less the
    // window's postings and those after it, whichever side spans less time. Windows that make
    // each choice, with postings on both sides of each, must open at the same figures.
    // Today will be 2026-01-15 (EST, UTC-5); the account is opened on 2024-12-11.
    let (app, clock, account, other) = app_at(ctx, utc("2024-12-11T17:00:00Z")).await;
    let moves = [
        ("2024-12-11T17:00:00Z", "2024-12-11", Move::In(100_000)),
        ("2025-01-10T17:00:00Z", "2025-01-10", Move::Out(1_000)),
        ("2025-01-20T17:00:00Z", "2025-01-20", Move::In(300)),
        ("2025-03-01T17:00:00Z", "2025-03-01", Move::Out(70)),
        ("2025-08-03T16:00:00Z", "2025-08-03", Move::In(5_000)),
        ("2025-12-20T17:00:00Z", "2025-12-20", Move::Out(900)),
        // 2025-12-31 23:30 EST, already 2026 in UTC: the last day of a 2025 window.
        ("2026-01-01T04:30:00Z", "2025-12-31", Move::In(40)),
        ("2026-01-02T17:00:00Z", "2026-01-02", Move::Out(8)),
        ("2026-01-15T16:00:00Z", "2026-01-15", Move::In(2)),
    ];
    let expected = make_all(&app, &clock, &moves, (&account, &other)).await;
    clock.set(utc("2026-01-15T17:00:00Z"));
    let opening_on = |day: &str| -> i64 {
        moves
            .iter()
            .filter(|(_, local, _)| date(local) < date(day))
            .map(|(_, _, movement)| match movement {
                Move::In(amount) => *amount,
                Move::Out(amount) => -amount,
            })
            .sum()
    };

    for (query, first, last) in [
        // 35 days after the opening, 348 before today: the older side is added up.
        (
            "from_date=2025-01-15&to_date=2025-02-01",
            "2025-01-15",
            "2025-02-01",
        ),
        // 233 days after the opening, 14 before today: the newer side, with postings after
        // the window (on 2026-01-02 and today) taken off the stored balance.
        (
            "from_date=2025-08-01&to_date=2025-12-31",
            "2025-08-01",
            "2025-12-31",
        ),
        // Ends today (the default): nothing after it.
        ("", "2025-12-17", "2026-01-15"),
        // One day, the newest side again, a posting on it and after it.
        (
            "from_date=2026-01-02&to_date=2026-01-02",
            "2026-01-02",
            "2026-01-02",
        ),
    ] {
        let days = history(&app, &account, query).await;
        assert_eq!(effective_on(&days[0]), date(last), "{query}");
        assert_eq!(effective_on(&days[days.len() - 1]), date(first), "{query}");
        assert_days(&days, opening_on(first), &expected);
    }
    assert_books_balance(&app, &app.a.id).await;
}
