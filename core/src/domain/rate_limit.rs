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

#[derive(Debug, Clone)]
struct Bucket {
    micro_tokens: u64,
    at_micros: i64,
    /// Whose key it is (a platform id), told with a refusal made before the key is read.
    owner: String,
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
    /// `owner` names whose key it is (a platform id) for [`Self::refuses`] to tell.
    pub fn check(&self, key: &str, owner: &str, now: DateTime<Utc>) -> Option<Decision> {
        if !self.limit.is_on() {
            return None;
        }
        let now = now.timestamp_micros();
        let mut buckets = self.shard(key);
        let bucket = match buckets.get_mut(key) {
            Some(bucket) => bucket,
            None => buckets.entry(key.to_owned()).or_insert(Bucket {
                micro_tokens: self.capacity(),
                at_micros: now,
                owner: owner.to_owned(),
            }),
        };
        self.refill(bucket, now);
        let allowed = bucket.micro_tokens >= MICRO;
        if allowed {
            bucket.micro_tokens -= MICRO;
        }
        Some(self.decision(allowed, bucket.micro_tokens))
    }

    /// The refusal of a request of `key` whose bucket holds less than one request at `now`,
    /// with the bucket's owner, taking nothing: a request that would be refused is refused
    /// before its key is looked up. `None` when the bucket has room, when the key has no bucket
    /// (it never authenticated in this process), or when limits are off: the request goes on
    /// to be authenticated and to [`Self::check`].
    pub fn refuses(&self, key: &str, now: DateTime<Utc>) -> Option<(Decision, String)> {
        if !self.limit.is_on() {
            return None;
        }
        let mut buckets = self.shard(key);
        let bucket = buckets.get_mut(key)?;
        self.refill(bucket, now.timestamp_micros());
        (bucket.micro_tokens < MICRO).then(|| {
            (
                self.decision(false, bucket.micro_tokens),
                bucket.owner.clone(),
            )
        })
    }

    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, HashMap<String, Bucket>> {
        self.shards[shard_of(key)]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn capacity(&self) -> u64 {
        u64::from(self.limit.burst) * MICRO
    }

    /// Adds what `now` brings to `bucket` (nothing for a clock that went back), up to the burst.
    fn refill(&self, bucket: &mut Bucket, now: i64) {
        // Millionths of a request added per microsecond.
        let rate = u64::from(self.limit.per_second);
        let elapsed = u64::try_from(now.saturating_sub(bucket.at_micros)).unwrap_or(0);
        bucket.micro_tokens = bucket
            .micro_tokens
            .saturating_add(elapsed.saturating_mul(rate))
            .min(self.capacity());
        bucket.at_micros = now;
    }

    /// What a client is told when its bucket holds `tokens` after the decision.
    fn decision(&self, allowed: bool, tokens: u64) -> Decision {
        let per_second = u64::from(self.limit.per_second) * MICRO;
        Decision {
            allowed,
            limit: self.limit,
            remaining: tokens / MICRO,
            reset_secs: (self.capacity() - tokens).div_ceil(per_second),
            retry_after_secs: MICRO.saturating_sub(tokens).div_ceil(per_second).max(1),
        }
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
            let d = limiter.check("a", "p", at(0)).expect("limits are on");
            assert!(d.allowed);
            assert_eq!(d.remaining, left);
        }
        let refused = limiter.check("a", "p", at(0)).expect("on");
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 1);
        assert_eq!(refused.reset_secs, 2, "3 tokens at 2 a second");
        assert!(
            limiter.check("b", "p", at(0)).expect("on").allowed,
            "keys are apart"
        );
        // Half a second later one token is back (2 per second), not two.
        assert!(limiter.check("a", "p", at(500)).expect("on").allowed);
        assert!(!limiter.check("a", "p", at(500)).expect("on").allowed);
    }

    #[test]
    fn an_empty_bucket_refuses_before_the_key_is_read_and_takes_nothing() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 1,
            burst: 2,
        });
        assert_eq!(limiter.refuses("a", at(0)), None, "a key never seen");
        assert!(limiter.check("a", "plat_a", at(0)).expect("on").allowed);
        assert_eq!(limiter.refuses("a", at(0)), None, "one request left");
        assert!(limiter.check("a", "plat_a", at(0)).expect("on").allowed);
        let (refused, owner) = limiter.refuses("a", at(0)).expect("the bucket is empty");
        assert_eq!(owner, "plat_a");
        assert!(!refused.allowed);
        assert_eq!((refused.remaining, refused.retry_after_secs), (0, 1));
        assert_eq!(refused.reset_secs, 2);
        // Refusals take nothing: a second later there is room for exactly one request.
        assert!(limiter.refuses("a", at(400)).is_some());
        assert_eq!(limiter.refuses("a", at(1000)), None);
        assert!(limiter.check("a", "plat_a", at(1000)).expect("on").allowed);
        assert!(limiter.refuses("a", at(1000)).is_some());
        assert_eq!(limiter.refuses("b", at(1000)), None, "keys are apart");
    }

    #[test]
    fn the_bucket_never_holds_more_than_its_burst() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 100,
            burst: 2,
        });
        let later = at(0) + TimeDelta::hours(5);
        assert!(limiter.check("k", "p", at(0)).expect("on").allowed);
        let allowed = (0..10)
            .filter(|_| limiter.check("k", "p", later).expect("on").allowed)
            .count();
        assert_eq!(allowed, 2);
    }

    #[test]
    fn a_clock_that_jumps_back_locks_no_key_out() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 1,
            burst: 1,
        });
        assert!(limiter.check("k", "p", at(0)).expect("on").allowed);
        let earlier = at(0) - TimeDelta::hours(3);
        assert!(!limiter.check("k", "p", earlier).expect("on").allowed);
        // One second after the jump the key may send again, not three hours and a second.
        assert!(
            limiter
                .check("k", "p", earlier + TimeDelta::seconds(1))
                .expect("on")
                .allowed
        );
    }

    #[test]
    fn limits_are_off_when_either_number_is_zero() {
        for (per_second, burst) in [(0, 10), (10, 0), (0, 0)] {
            let limiter = RateLimiter::new(RateLimit { per_second, burst });
            assert_eq!(limiter.check("k", "p", at(0)), None);
            assert_eq!(limiter.refuses("k", at(0)), None);
        }
    }
}
