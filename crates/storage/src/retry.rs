//! Retries of idempotent store operations after a transient failure.
//!
//! HTTP stores already retry 5xx, 429/SlowDown and timeouts inside object_store's client (jittered
//! exponential backoff, `max_retries`/`retry_timeout`). This layer sits above every store, so an
//! error that still surfaces as transient (a dropped connection while a body streams, a store
//! wrapper's injected throttle) is tried again a few times before the statement fails.
//!
//! Only idempotent operations are retried: reads, listings, heads, deletes and overwriting puts of
//! data files (same path, same bytes). The commit put is never retried here: its outcome is
//! resolved by the commit loop, which reads the version back.
//!
//! Invariant: a retry never changes what an operation means, only when it happens; the jitter
//! therefore affects timing alone, and the simulator (zero delays) stays deterministic.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::{StorageError, StorageErrorKind};

/// How often and how patiently transient failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all (1 = no retry).
    pub attempts: u32,
    /// The first backoff's upper bound; each retry doubles it, up to `max_delay`.
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// Four tries, backoff up to 50 ms, 100 ms, 200 ms (full jitter).
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        attempts: 4,
        base_delay: Duration::from_millis(50),
        max_delay: Duration::from_secs(2),
    };

    /// Retries without waiting (simulation and tests: timing must not matter).
    pub const IMMEDIATE: RetryPolicy = RetryPolicy {
        attempts: 4,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// The delay before retry number `retry` (1-based): uniform in [0, min(max, base·2^(retry-1))].
    fn delay(&self, retry: u32) -> Duration {
        let cap = self
            .base_delay
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16))
            .min(self.max_delay);
        let cap_us = u64::try_from(cap.as_micros()).unwrap_or(u64::MAX);
        if cap_us == 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(jitter() % (cap_us + 1))
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::DEFAULT
    }
}

/// A cheap, decorrelated pseudo-random number (splitmix64 over a process-wide counter seeded by
/// the process id). Only backoff durations use it.
fn jitter() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let n =
        STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ u64::from(std::process::id());
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A failure worth trying again: service and I/O errors. Not-found, already-exists, bad paths and
/// bad locations are answers, not accidents.
pub(crate) fn is_transient(e: &StorageError) -> bool {
    e.kind == StorageErrorKind::Io
}

/// Runs `op` until it succeeds, fails permanently, or the policy's tries are spent.
pub(crate) async fn retrying<T, F, Fut>(policy: RetryPolicy, mut op: F) -> Result<T, StorageError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StorageError>>,
{
    let mut tried = 1;
    loop {
        match op().await {
            Err(e) if is_transient(&e) && tried < policy.attempts.max(1) => {
                let d = policy.delay(tried);
                if !d.is_zero() {
                    tokio::time::sleep(d).await;
                }
                tried += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    fn io() -> StorageError {
        StorageError::new(StorageErrorKind::Io, "503 SlowDown")
    }

    #[tokio::test]
    async fn transient_failures_are_retried_up_to_the_policy() {
        let calls = AtomicU32::new(0);
        let r = retrying(RetryPolicy::IMMEDIATE, || async {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            if n < 3 {
                Err(io())
            } else {
                Ok(n)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        calls.store(0, Ordering::SeqCst);
        let r: Result<(), _> = retrying(RetryPolicy::IMMEDIATE, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(io())
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn answers_are_not_retried() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = retrying(RetryPolicy::IMMEDIATE, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StorageError::new(
                StorageErrorKind::NotFound,
                "x: not found",
            ))
        })
        .await;
        assert_eq!(r.unwrap_err().kind, StorageErrorKind::NotFound);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn backoff_is_bounded_and_grows() {
        let p = RetryPolicy::DEFAULT;
        for retry in 1..10 {
            let cap = p
                .base_delay
                .saturating_mul(1 << (retry - 1))
                .min(p.max_delay);
            for _ in 0..50 {
                assert!(p.delay(retry) <= cap);
            }
        }
        assert_eq!(RetryPolicy::IMMEDIATE.delay(3), Duration::ZERO);
    }
}
