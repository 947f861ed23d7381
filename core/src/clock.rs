//! Time as an injected dependency.
//!
//! Every timestamp the server writes comes from a [`Clock`], so tests can pin time (history
//! windows, idempotency expiry, id ordering) without sleeping. Timestamps are truncated to whole
//! microseconds because that is PostgreSQL's precision: a value read back must compare equal to
//! the value written, or keyset cursors built from it would skip or repeat rows.

use std::sync::Mutex;

use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant, truncated to microseconds.
    fn now(&self) -> DateTime<Utc>;
}

/// Truncates to microseconds (the precision both backends store).
pub fn truncate_to_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    // `duration_trunc` only fails for out-of-range instants, which a clock never produces; fall
    // back to the untruncated value rather than panic.
    t.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(t)
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        truncate_to_micros(Utc::now())
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug)]
pub struct FixedClock {
    now: Mutex<DateTime<Utc>>,
}

impl FixedClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(truncate_to_micros(start)),
        }
    }

    /// Sets the time.
    pub fn set(&self, t: DateTime<Utc>) {
        *self.lock() = truncate_to_micros(t);
    }

    /// Moves the time forward (or backward, for a negative duration).
    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        *now = truncate_to_micros(*now + by);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A poisoned lock only means another test thread panicked while holding it; the
        // timestamp inside is still a valid value.
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn system_clock_has_microsecond_precision() {
        let t = SystemClock.now();
        assert_eq!(t.timestamp_subsec_nanos() % 1_000, 0);
    }

    #[test]
    fn fixed_clock_moves_only_when_told() {
        let start = Utc
            .with_ymd_and_hms(2025, 1, 2, 3, 4, 5)
            .single()
            .expect("valid date");
        let clock = FixedClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::seconds(90));
        assert_eq!(clock.now(), start + Duration::seconds(90));
        clock.set(start);
        assert_eq!(clock.now(), start);
    }
}
