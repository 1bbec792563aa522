//! Injectable sources of time and identifiers, so that simulations are deterministic. Production code
//! never calls the system clock or a random generator directly; it asks the [`Env`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use uuid::Uuid;

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

pub trait IdGen: Send + Sync + std::fmt::Debug {
    fn uuid(&self) -> Uuid;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

#[derive(Debug, Default)]
pub struct RandomIds;

impl IdGen for RandomIds {
    fn uuid(&self) -> Uuid {
        Uuid::new_v4()
    }
}

/// A clock that advances by `step_ms` on every read (deterministic tests and simulation).
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
    step_ms: i64,
}

impl ManualClock {
    pub fn new(start_ms: i64, step_ms: i64) -> Self {
        ManualClock {
            now: AtomicI64::new(start_ms),
            step_ms,
        }
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.fetch_add(self.step_ms, Ordering::SeqCst)
    }
}

/// Sequential UUIDs from a seed (deterministic tests and simulation).
#[derive(Debug)]
pub struct SeededIds {
    seed: u64,
    next: AtomicU64,
}

impl SeededIds {
    pub fn new(seed: u64) -> Self {
        SeededIds {
            seed,
            next: AtomicU64::new(1),
        }
    }
}

impl IdGen for SeededIds {
    fn uuid(&self) -> Uuid {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        // Version-4 layout bits so the ids look like ordinary UUIDs.
        let raw = (u128::from(self.seed) << 64) | u128::from(n);
        let raw = (raw & !(0xF000u128 << 64) & !(0xC000u128 << 48))
            | (0x4000u128 << 64)
            | (0x8000u128 << 48);
        Uuid::from_u128(raw)
    }
}

/// The environment an engine operation runs in.
#[derive(Debug, Clone)]
pub struct Env {
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGen>,
    /// How many data files one statement may decode at once. Parallel work never draws ids or
    /// reads the clock and its results are consumed in a fixed order, so it does not affect
    /// determinism.
    pub parallelism: usize,
    /// Bytes a statement's joins and sorts may hold before they spill to disk (a MERGE's join);
    /// `None` = no limit.
    pub memory_limit: Option<usize>,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            parallelism: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_limit: None,
        }
    }
}

impl Env {
    pub fn deterministic(seed: u64) -> Self {
        Env {
            clock: Arc::new(ManualClock::new(1_700_000_000_000, 1)),
            ids: Arc::new(SeededIds::new(seed)),
            // More than one, so deterministic tests exercise the parallel paths too.
            parallelism: 2,
            memory_limit: None,
        }
    }
}
