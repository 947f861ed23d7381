//! Rate limits per API key: a token bucket per key, in this process.
//!
//! Each key may send `burst` requests at once and `per_second` more every second after that.
//! Tokens are counted in millionths so that the bucket needs no floating point, and time comes
//! from the injected clock: a clock that jumps backwards restarts the refill from the new time
//! (no key is locked out for the hours it jumped), one that jumps forwards fills the bucket, no
//! more. The buckets live in shards, each behind its own lock, so that keys seldom wait for
//! each other; there is one bucket per key that authenticated, bounded by the keys that exist.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// A bucket's tokens are counted in millionths of a request.
const MICRO: u64 = 1_000_000;

/// How many independently locked maps hold the buckets.
const SHARDS: usize = 16;

/// The limit every key gets; off when either number is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    /// Requests added to a key's bucket per second.
    pub per_second: u32,
    /// Requests a key may send at once (the bucket's size).
    pub burst: u32,
}

impl RateLimit {
    pub fn is_on(&self) -> bool {
        self.per_second > 0 && self.burst > 0
    }

    /// Seconds to refill an empty bucket (the policy's window), at least 1.
    pub fn window_secs(&self) -> u64 {
        u64::from(self.burst)
            .div_ceil(u64::from(self.per_second.max(1)))
            .max(1)
    }
}

/// What the limiter decided for one request, with what a client is told about its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: RateLimit,
    /// Whole requests left in the bucket after this one.
    pub remaining: u64,
    /// Seconds until the bucket is full again.
    pub reset_secs: u64,
    /// When refused: seconds until one request fits (at least 1).
    pub retry_after_secs: u64,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    micro_tokens: u64,
    at_micros: i64,
}

/// The buckets of every key seen by this process.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    shards: Vec<Mutex<HashMap<String, Bucket>>>,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes one request from `key`'s bucket at `now`, or refuses it; `None` when limits are off.
    pub fn check(&self, key: &str, now: DateTime<Utc>) -> Option<Decision> {
        if !self.limit.is_on() {
            return None;
        }
        let now = now.timestamp_micros();
        let capacity = u64::from(self.limit.burst) * MICRO;
        // Millionths of a request added per microsecond.
        let rate = u64::from(self.limit.per_second);
        let shard = &self.shards[shard_of(key)];
        let mut buckets = shard
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let bucket = match buckets.get_mut(key) {
            Some(bucket) => bucket,
            None => buckets.entry(key.to_owned()).or_insert(Bucket {
                micro_tokens: capacity,
                at_micros: now,
            }),
        };
        let elapsed = u64::try_from(now.saturating_sub(bucket.at_micros)).unwrap_or(0);
        bucket.micro_tokens = bucket
            .micro_tokens
            .saturating_add(elapsed.saturating_mul(rate))
            .min(capacity);
        bucket.at_micros = now;
        let allowed = bucket.micro_tokens >= MICRO;
        if allowed {
            bucket.micro_tokens -= MICRO;
        }
        let tokens = bucket.micro_tokens;
        let per_second = rate * MICRO;
        Some(Decision {
            allowed,
            limit: self.limit,
            remaining: tokens / MICRO,
            reset_secs: (capacity - tokens).div_ceil(per_second),
            retry_after_secs: MICRO.saturating_sub(tokens).div_ceil(per_second).max(1),
        })
    }
}

/// The shard of `key` (keys are hex digests: their first characters are already uniform).
fn shard_of(key: &str) -> usize {
    key.bytes().take(4).fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    }) % SHARDS
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_800_000_000_000 + ms).expect("a time")
    }

    #[test]
    fn a_key_gets_its_burst_then_its_rate_and_another_key_is_untouched() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 2,
            burst: 3,
        });
        for left in [2, 1, 0] {
            let d = limiter.check("a", at(0)).expect("limits are on");
            assert!(d.allowed);
            assert_eq!(d.remaining, left);
        }
        let refused = limiter.check("a", at(0)).expect("on");
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 1);
        assert_eq!(refused.reset_secs, 2, "3 tokens at 2 a second");
        assert!(
            limiter.check("b", at(0)).expect("on").allowed,
            "keys are apart"
        );
        // Half a second later one token is back (2 per second), not two.
        assert!(limiter.check("a", at(500)).expect("on").allowed);
        assert!(!limiter.check("a", at(500)).expect("on").allowed);
    }

    #[test]
    fn the_bucket_never_holds_more_than_its_burst() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 100,
            burst: 2,
        });
        let later = at(0) + TimeDelta::hours(5);
        assert!(limiter.check("k", at(0)).expect("on").allowed);
        let allowed = (0..10)
            .filter(|_| limiter.check("k", later).expect("on").allowed)
            .count();
        assert_eq!(allowed, 2);
    }

    #[test]
    fn a_clock_that_jumps_back_locks_no_key_out() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 1,
            burst: 1,
        });
        assert!(limiter.check("k", at(0)).expect("on").allowed);
        let earlier = at(0) - TimeDelta::hours(3);
        assert!(!limiter.check("k", earlier).expect("on").allowed);
        // One second after the jump the key may send again, not three hours and a second.
        assert!(
            limiter
                .check("k", earlier + TimeDelta::seconds(1))
                .expect("on")
                .allowed
        );
    }

    #[test]
    fn limits_are_off_when_either_number_is_zero() {
        for (per_second, burst) in [(0, 10), (10, 0), (0, 0)] {
            let limiter = RateLimiter::new(RateLimit { per_second, burst });
            assert_eq!(limiter.check("k", at(0)), None);
        }
    }
}
