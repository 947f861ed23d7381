//! Daily summary history of a bank account, in the platform's reporting time zone.
//!
//! Design note. The ledger writes one posting per balance change (`ledger_postings`: account,
//! balance kind, signed amount, time), so a day's summary is: the sums of all earlier postings
//! (the opening balances), then that day's postings split into increases (`_credit`) and
//! decreases (`_debit`). Days are calendar days of the reporting time zone, so they are not all
//! 24 hours long: a spring-forward day has 23 and a fall-back day 25. Options considered:
//! - Grouping in SQL by a local date expression: SQLite has no time zone database, so the two
//!   engines would need different code and PostgreSQL's answer would depend on its tzdata.
//! - Chosen: SQL returns the window's postings (oldest first) and the sums that open it; Rust
//!   assigns each posting to its local date with `chrono-tz`. The window is at most 366 days of
//!   one account. The opening sums come from whichever side of the window spans less time (see
//!   `opening_balances`), so an account's recent days never read its whole past.
//!   TODO-performance: a very busy account reads every posting of the window; per-day rollups
//!   written by the ledger would bound that.
//!
//! The window is today and the 365 days before it (366 days). Defaults: `to_date` today,
//! `from_date` 29 days before `to_date` (clamped to the window). One summary per day from the
//! later of `from_date` and the account's creation day to the earlier of `to_date` and today,
//! newest first, days without postings included.

use chrono::{DateTime, Days, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

use crate::model::bank_accounts::BankAccountRecord;
use crate::model::ids::{BankAccountId, PlatformId};
use crate::model::ledger::{BalanceKind, Balances};
use crate::store::bank_accounts::{self as repo, PostingRecord};
use crate::store::platforms;
use crate::store::{StoreError, Tx};

/// Days before today that can still be read.
pub const WINDOW_DAYS_BEFORE_TODAY: u64 = 365;
/// Days before `to_date` where the default `from_date` lies (30 days in all).
pub const DEFAULT_DAYS: u64 = 29;

/// Failures of the history. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("bank account not found")]
    NotFound,
    #[error("the platform's reporting time zone is not set")]
    TimeZoneNotSet,
    /// (field, message)
    #[error("{0} {1}")]
    InvalidDateRange(&'static str, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(HistoryError);

/// The balances stored on `account`.
fn balances_of(account: &BankAccountRecord) -> Balances {
    Balances {
        available: account.available_amount,
        pending: account.pending_amount,
        holding: account.holding_amount,
        locked: account.locked_amount,
    }
}

/// Adds `amount` (signed) to the balance named `kind`, one of the ledger's four (a posting row's
/// spelling); another name changes nothing.
fn add(balances: &mut Balances, kind: &str, amount: i64) {
    if let Some(kind) = BalanceKind::parse(kind) {
        let slot = balances.get_mut(kind);
        *slot = slot.saturating_add(amount);
    }
}

/// Open, credit (sum of increases), debit (sum of decreases) and close of one balance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Movement {
    pub open: i64,
    pub credit: i64,
    pub debit: i64,
    pub close: i64,
}

impl Movement {
    fn opening(amount: i64) -> Movement {
        Movement {
            open: amount,
            credit: 0,
            debit: 0,
            close: amount,
        }
    }

    fn apply(&mut self, amount: i64) {
        // Saturating: balances are far from i64's range; a corrupt ledger must not panic.
        if amount >= 0 {
            self.credit = self.credit.saturating_add(amount);
        } else {
            self.debit = self.debit.saturating_add(amount.saturating_neg());
        }
        self.close = self.close.saturating_add(amount);
    }
}

/// The summary of one day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaySummary {
    pub effective_on: NaiveDate,
    pub transaction_count: i64,
    pub available: Movement,
    pub pending: Movement,
    pub holding: Movement,
    pub locked: Movement,
}

impl DaySummary {
    fn opening(effective_on: NaiveDate, b: Balances) -> DaySummary {
        DaySummary {
            effective_on,
            transaction_count: 0,
            available: Movement::opening(b.available),
            pending: Movement::opening(b.pending),
            holding: Movement::opening(b.holding),
            locked: Movement::opening(b.locked),
        }
    }

    fn closing(&self) -> Balances {
        Balances {
            available: self.available.close,
            pending: self.pending.close,
            holding: self.holding.close,
            locked: self.locked.close,
        }
    }

    fn movement(&mut self, kind: &str) -> Option<&mut Movement> {
        match kind {
            "available" => Some(&mut self.available),
            "pending" => Some(&mut self.pending),
            "holding" => Some(&mut self.holding),
            "locked" => Some(&mut self.locked),
            _ => None,
        }
    }
}

/// The history of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    pub bank_account_id: BankAccountId,
    pub currency_code: String,
    pub time_zone: String,
    /// Newest first.
    pub days: Vec<DaySummary>,
}

/// The first instant of `date` in `tz`. Where local midnight does not exist (a zone that
/// springs forward at midnight) the day starts at the first local time that does.
pub fn day_start(tz: Tz, date: NaiveDate) -> DateTime<Utc> {
    let midnight = date.and_time(NaiveTime::MIN);
    // Gaps are at most a few hours; step through them a quarter hour at a time.
    for quarter in 0..(4 * 24) {
        let local = midnight + TimeDelta::minutes(15 * quarter);
        if let Some(t) = tz.from_local_datetime(&local).earliest() {
            return t.with_timezone(&Utc);
        }
    }
    // Unreachable for real zones; treat the day as starting at UTC midnight of that date.
    midnight.and_utc()
}

/// The local date of an instant.
pub fn local_date(tz: Tz, at: DateTime<Utc>) -> NaiveDate {
    at.with_timezone(&tz).date_naive()
}

/// The days to summarise, oldest and newest, or `None` when the range holds no day of the
/// account's life. Validates the requested range against the window around `today`.
pub fn day_range(
    today: NaiveDate,
    created_on: NaiveDate,
    from_date: Option<NaiveDate>,
    to_date: Option<NaiveDate>,
) -> Result<Option<(NaiveDate, NaiveDate)>, HistoryError> {
    let window_start = today
        .checked_sub_days(Days::new(WINDOW_DAYS_BEFORE_TODAY))
        .unwrap_or(NaiveDate::MIN);
    let to = to_date.unwrap_or(today);
    if to > today {
        return Err(HistoryError::InvalidDateRange(
            "to_date",
            format!("must not be after today ({today})"),
        ));
    }
    let from = match from_date {
        Some(from) => from,
        None => to
            .checked_sub_days(Days::new(DEFAULT_DAYS))
            .unwrap_or(NaiveDate::MIN)
            .max(window_start),
    };
    if from < window_start {
        return Err(HistoryError::InvalidDateRange(
            "from_date",
            format!(
                "must not be before {window_start} (today and the {WINDOW_DAYS_BEFORE_TODAY} days before it)"
            ),
        ));
    }
    if from > to {
        return Err(HistoryError::InvalidDateRange(
            "from_date",
            "must not be after to_date".to_owned(),
        ));
    }
    let first = from.max(created_on);
    Ok((first <= to).then_some((first, to)))
}

/// Summaries of every day from `first` to `last` (inclusive), newest first, from the balances
/// at the start of `first` and the postings of those days (any order).
pub fn summarize(
    tz: Tz,
    first: NaiveDate,
    last: NaiveDate,
    opening: Balances,
    postings: &[PostingRecord],
) -> Vec<DaySummary> {
    let mut days: Vec<DaySummary> = first
        .iter_days()
        .take_while(|day| *day <= last)
        .map(|day| DaySummary::opening(day, opening))
        .collect();
    // Postings arrive oldest first, but do not rely on it: apply them per day, then roll the
    // closes forward so each day opens at the previous day's close.
    for posting in postings {
        let date = local_date(tz, posting.created_at);
        let Some(index) = date
            .signed_duration_since(first)
            .num_days()
            .try_into()
            .ok()
            .filter(|i: &usize| *i < days.len())
        else {
            continue;
        };
        let summary = &mut days[index];
        if let Some(movement) = summary.movement(&posting.balance) {
            movement.apply(posting.amount);
            summary.transaction_count += 1;
        }
    }
    for i in 1..days.len() {
        let previous = days[i - 1].closing();
        let day = &mut days[i];
        for (movement, open) in [
            (&mut day.available, previous.available),
            (&mut day.pending, previous.pending),
            (&mut day.holding, previous.holding),
            (&mut day.locked, previous.locked),
        ] {
            movement.open = open;
            movement.close = open
                .saturating_add(movement.credit)
                .saturating_sub(movement.debit);
        }
    }
    days.reverse();
    days
}

/// The account's balances as the window `[start, end)` opens, given the window's postings.
///
/// They are the sums of the account's postings before `start`. Each stored balance is the sum
/// of all of its postings (written in one transaction with them; `bankd ledger check` verifies
/// it), so they are also the stored balances less the window's postings and those from `end`
/// on. The older side is the account's whole past before the window, which grows without end
/// for a busy account (65 000 postings took 35-40 ms a request on this machine); the newer side
/// is empty for a window that ends today. The side spanning less time is read.
async fn opening_balances(
    tx: &mut Tx<'_>,
    account: &BankAccountRecord,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    now: DateTime<Utc>,
    window: &[PostingRecord],
) -> Result<Balances, StoreError> {
    let older = start.signed_duration_since(account.created_at);
    let newer = now.signed_duration_since(end);
    // The sign each summed posting adds with: +1 before the window, -1 after it.
    let (mut balances, at, sign) = if older <= newer {
        (Balances::default(), repo::PostingsAt::Before(start), 1)
    } else {
        let mut stored = balances_of(account);
        for posting in window {
            add(
                &mut stored,
                &posting.balance,
                posting.amount.saturating_neg(),
            );
        }
        (stored, repo::PostingsAt::From(end), -1)
    };
    for (kind, total) in repo::posting_totals(tx, &account.platform_id, &account.id, at).await? {
        add(&mut balances, &kind, total.saturating_mul(sign));
    }
    Ok(balances)
}

impl super::bank_accounts::BankAccounts<'_> {
    /// The history of the account addressed by `id` (404 first, then the time zone, then the
    /// range).
    pub async fn history(
        &self,
        platform_id: &PlatformId,
        id: &str,
        from_date: Option<NaiveDate>,
        to_date: Option<NaiveDate>,
    ) -> Result<History, HistoryError> {
        let db = self.db;
        let clock = self.clock;
        let now = clock.now();
        db.read(|tx| {
            Box::pin(async move {
                let account_id = BankAccountId::parse(id).ok_or(HistoryError::NotFound)?;
                let account = repo::get(tx, platform_id, &account_id)
                    .await?
                    .ok_or(HistoryError::NotFound)?;
                let platform = platforms::get(tx, platform_id).await?.ok_or_else(|| {
                    StoreError::Corrupt(format!("platform {platform_id} is missing"))
                })?;
                let zone_name = platform
                    .reporting_time_zone
                    .ok_or(HistoryError::TimeZoneNotSet)?;
                // Validated when set; an unparsable stored value is the server's fault.
                let tz: Tz = zone_name.parse().map_err(|_| {
                    StoreError::Corrupt(format!("stored time zone `{zone_name}` is unknown"))
                })?;
                let today = local_date(tz, now);
                let created_on = local_date(tz, account.created_at);
                let mut history = History {
                    bank_account_id: account.id.clone(),
                    currency_code: account.currency_code.clone(),
                    time_zone: zone_name.clone(),
                    days: Vec::new(),
                };
                let Some((first, last)) = day_range(today, created_on, from_date, to_date)? else {
                    return Ok(history);
                };
                let start = day_start(tz, first);
                let end = last
                    .succ_opt()
                    .map_or(DateTime::<Utc>::MAX_UTC, |next| day_start(tz, next));
                let postings =
                    repo::postings_between(tx, platform_id, &account.id, start, end).await?;
                let opening = opening_balances(tx, &account, (start, end), now, &postings).await?;
                history.days = summarize(tz, first, last, opening, &postings);
                Ok(history)
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::clock::FixedClock;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("rfc 3339")
            .with_timezone(&Utc)
    }

    fn posting(kind: &str, amount: i64, at: &str) -> PostingRecord {
        PostingRecord {
            balance: kind.to_owned(),
            amount,
            created_at: utc(at),
        }
    }

    const NEW_YORK: Tz = chrono_tz::America::New_York;

    #[test]
    fn a_spring_forward_day_has_23_hours_and_keeps_its_late_postings() {
        // 2025-03-09: New York skips 02:00-03:00 EST → EDT.
        let clock = FixedClock::new(utc("2025-03-10T16:00:00Z"));
        let today = local_date(NEW_YORK, clock.now());
        assert_eq!(today, date(2025, 3, 10));
        let day = date(2025, 3, 9);
        let length = day_start(NEW_YORK, date(2025, 3, 10)) - day_start(NEW_YORK, day);
        assert_eq!(length, TimeDelta::hours(23));
        assert_eq!(day_start(NEW_YORK, day), utc("2025-03-09T05:00:00Z"));

        let postings = [
            // 23:59 EST on the 8th: the day before.
            posting("available", 100, "2025-03-09T04:59:00Z"),
            // 00:00 EST and 23:30 EDT on the 9th.
            posting("available", 1_000, "2025-03-09T05:00:00Z"),
            posting("available", -300, "2025-03-10T03:30:00Z"),
            posting("holding", 50, "2025-03-10T03:59:59Z"),
            // 00:00 EDT on the 10th.
            posting("available", 7, "2025-03-10T04:00:00Z"),
        ];
        let range = day_range(today, date(2025, 3, 1), Some(date(2025, 3, 8)), None)
            .expect("valid range")
            .expect("some days");
        assert_eq!(range, (date(2025, 3, 8), date(2025, 3, 10)));
        let days = summarize(NEW_YORK, range.0, range.1, Balances::default(), &postings);
        let dates: Vec<NaiveDate> = days.iter().map(|d| d.effective_on).collect();
        assert_eq!(
            dates,
            vec![date(2025, 3, 10), date(2025, 3, 9), date(2025, 3, 8)]
        );
        let [tenth, ninth, eighth] = &days[..] else {
            panic!("three days expected");
        };
        assert_eq!(
            eighth.available,
            Movement {
                open: 0,
                credit: 100,
                debit: 0,
                close: 100
            }
        );
        assert_eq!(ninth.transaction_count, 3);
        assert_eq!(
            ninth.available,
            Movement {
                open: 100,
                credit: 1_000,
                debit: 300,
                close: 800
            }
        );
        assert_eq!(
            ninth.holding,
            Movement {
                open: 0,
                credit: 50,
                debit: 0,
                close: 50
            }
        );
        assert_eq!(
            tenth.available,
            Movement {
                open: 800,
                credit: 7,
                debit: 0,
                close: 807
            }
        );
        assert_eq!(
            tenth.holding,
            Movement {
                open: 50,
                credit: 0,
                debit: 0,
                close: 50
            }
        );
        assert_eq!(tenth.transaction_count, 1);
    }

    #[test]
    fn a_fall_back_day_has_25_hours_and_keeps_its_late_postings() {
        // 2025-11-02: New York repeats 01:00-02:00 EDT → EST.
        let clock = FixedClock::new(utc("2025-11-03T12:00:00Z"));
        let today = local_date(NEW_YORK, clock.now());
        let day = date(2025, 11, 2);
        let length = day_start(NEW_YORK, date(2025, 11, 3)) - day_start(NEW_YORK, day);
        assert_eq!(length, TimeDelta::hours(25));

        let postings = [
            // 00:00 EDT on the 2nd, both 01:30s, and 23:30 EST.
            posting("available", 10, "2025-11-02T04:00:00Z"),
            posting("available", 20, "2025-11-02T05:30:00Z"),
            posting("available", 30, "2025-11-02T06:30:00Z"),
            posting("locked", 5, "2025-11-03T04:30:00Z"),
            // 00:00 EST on the 3rd.
            posting("locked", -5, "2025-11-03T05:00:00Z"),
        ];
        let (first, last) = day_range(today, date(2025, 11, 2), None, None)
            .expect("valid range")
            .expect("some days");
        // Created on the 2nd: the default 30 days start at creation.
        assert_eq!((first, last), (date(2025, 11, 2), date(2025, 11, 3)));
        let days = summarize(NEW_YORK, first, last, Balances::default(), &postings);
        assert_eq!(days.len(), 2);
        assert_eq!(days[1].effective_on, day);
        assert_eq!(days[1].transaction_count, 4);
        assert_eq!(
            days[1].available,
            Movement {
                open: 0,
                credit: 60,
                debit: 0,
                close: 60
            }
        );
        assert_eq!(
            days[1].locked,
            Movement {
                open: 0,
                credit: 5,
                debit: 0,
                close: 5
            }
        );
        assert_eq!(
            days[0].locked,
            Movement {
                open: 5,
                credit: 0,
                debit: 5,
                close: 0
            }
        );
        assert_eq!(
            days[0].available,
            Movement {
                open: 60,
                credit: 0,
                debit: 0,
                close: 60
            }
        );
    }

    #[test]
    fn days_without_postings_carry_the_opening_balances_forward() {
        let opening = Balances {
            available: 500,
            pending: 1,
            holding: 2,
            locked: 3,
        };
        let days = summarize(NEW_YORK, date(2025, 1, 1), date(2025, 1, 3), opening, &[]);
        assert_eq!(days.len(), 3);
        for d in &days {
            assert_eq!(d.transaction_count, 0);
            assert_eq!(
                d.available,
                Movement {
                    open: 500,
                    credit: 0,
                    debit: 0,
                    close: 500
                }
            );
            assert_eq!(
                d.locked,
                Movement {
                    open: 3,
                    credit: 0,
                    debit: 0,
                    close: 3
                }
            );
        }
    }

    #[test]
    fn midnight_gaps_start_the_day_at_the_first_valid_local_time() {
        // Santiago springs forward at 24:00 → 01:00 (2024-09-08 has no local midnight).
        let tz = chrono_tz::America::Santiago;
        let start = day_start(tz, date(2024, 9, 8));
        assert_eq!(local_date(tz, start), date(2024, 9, 8));
        assert_eq!(
            local_date(tz, start - TimeDelta::seconds(1)),
            date(2024, 9, 7)
        );
    }

    #[test]
    fn the_range_is_today_and_the_365_days_before_it() {
        let today = date(2025, 6, 30);
        let created = date(2020, 1, 1);
        let oldest = date(2024, 6, 30);
        assert_eq!(
            day_range(today, created, Some(oldest), None).expect("valid"),
            Some((oldest, today))
        );
        assert!(matches!(
            day_range(today, created, Some(date(2024, 6, 29)), None),
            Err(HistoryError::InvalidDateRange("from_date", _))
        ));
        assert!(matches!(
            day_range(today, created, None, Some(date(2025, 7, 1))),
            Err(HistoryError::InvalidDateRange("to_date", _))
        ));
        assert!(matches!(
            day_range(
                today,
                created,
                Some(date(2025, 6, 2)),
                Some(date(2025, 6, 1))
            ),
            Err(HistoryError::InvalidDateRange("from_date", _))
        ));
        // Default: the last 30 days, clamped to the window when to_date is old.
        assert_eq!(
            day_range(today, created, None, None).expect("valid"),
            Some((date(2025, 6, 1), today))
        );
        assert_eq!(
            day_range(today, created, None, Some(date(2024, 7, 5))).expect("valid"),
            Some((oldest, date(2024, 7, 5)))
        );
        // A range before the account existed holds no day.
        assert_eq!(
            day_range(
                today,
                date(2025, 6, 10),
                Some(date(2025, 6, 1)),
                Some(date(2025, 6, 5))
            )
            .expect("valid"),
            None
        );
    }
}
