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
    /// The query runtime (`query_runtime`) built for a memory limit, shared by this
    /// environment's clones — a SQL session's statements and the handles they open — so one
    /// pool bounds their queries and MERGE joins together.
    pub runtimes: QueryRuntimes,
}

/// Query runtimes by the memory limit they were built for (see [`Env::query_runtime`]).
pub type QueryRuntimes = Arc<
    std::sync::Mutex<
        Vec<(
            Option<usize>,
            Arc<datafusion::execution::runtime_env::RuntimeEnv>,
        )>,
    >,
>;

impl Default for Env {
    fn default() -> Self {
        Env {
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            parallelism: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_limit: None,
            runtimes: QueryRuntimes::default(),
        }
    }
}

impl Env {
    /// The DataFusion runtime a statement's queries, joins and sorts run in: under a memory
    /// limit, a pool of half the limit (the rest is the file caches and the rows a write
    /// buffers) whose operators spill to the temporary directory or, when they cannot spill,
    /// fail with "resources exhausted" naming the largest consumers; without one, unbounded.
    /// Built once per memory limit and shared by this environment's clones: SELECT, INSERT …
    /// SELECT and MERGE's join of one session draw on one pool. Without a limit, the process's
    /// [`unlimited_runtime`]: an unbounded pool holds nothing to share, and one runtime lets
    /// every context be a clone of one planning template (`spark::session_template`).
    pub fn query_runtime(
        &self,
    ) -> crate::error::Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>> {
        use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
        if self.memory_limit.is_none() {
            return unlimited_runtime();
        }
        let mut held = self.runtimes.lock().map_err(|_| {
            crate::error::EngineError::Internal("the query runtime lock is poisoned".into())
        })?;
        if let Some((_, rt)) = held.iter().find(|(l, _)| *l == self.memory_limit) {
            return Ok(Arc::clone(rt));
        }
        let mut runtime = runtime_builder();
        if let Some(limit) = self.memory_limit {
            let tracked = TrackConsumersPool::new(
                FairSpillPool::new(query_pool_bytes(limit)),
                std::num::NonZeroUsize::new(4).unwrap_or(std::num::NonZeroUsize::MIN),
            );
            runtime = runtime.with_memory_pool(Arc::new(tracked));
        }
        let runtime = runtime.build_arc()?;
        held.push((self.memory_limit, Arc::clone(&runtime)));
        Ok(runtime)
    }

    pub fn deterministic(seed: u64) -> Self {
        Env {
            clock: Arc::new(ManualClock::new(1_700_000_000_000, 1)),
            ids: Arc::new(SeededIds::new(seed)),
            // More than one, so deterministic tests exercise the parallel paths too.
            parallelism: 2,
            memory_limit: None,
            runtimes: QueryRuntimes::default(),
        }
    }
}

/// The bytes a statement's query operators (joins, sorts, aggregates) may hold under a memory
/// limit of `limit`.
pub fn query_pool_bytes(limit: usize) -> usize {
    limit / 2
}

/// `1.5GB`, `512MB`, `64KB` (powers of 1024) or a byte count.
pub fn parse_byte_size(s: &str) -> crate::error::Result<usize> {
    let t = s.trim().to_ascii_uppercase();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t.as_str(), ""),
    };
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "K" | "KIB" => 1024.0,
        "MB" | "M" | "MIB" => 1024.0 * 1024.0,
        "GB" | "G" | "GIB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(crate::error::EngineError::invalid(format!(
                "memory limit {s:?}: unknown unit"
            )))
        }
    };
    let n: f64 = num.trim().parse().map_err(|_| {
        crate::error::EngineError::invalid(format!("memory limit {s:?} is not a size"))
    })?;
    let bytes = n * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > usize::MAX as f64 {
        return Err(crate::error::EngineError::invalid(format!(
            "memory limit {s:?} is out of range"
        )));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::parse_byte_size;

    #[test]
    fn byte_sizes_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_byte_size("1.5GB").ok(), Some(1_610_612_736));
        assert_eq!(parse_byte_size("512mb").ok(), Some(512 << 20));
        assert_eq!(parse_byte_size("64 KiB").ok(), Some(64 << 10));
        assert_eq!(parse_byte_size("1000").ok(), Some(1000));
        for bad in ["", "GB", "-1GB", "1.5TB", "lots", "0", "1e400"] {
            assert!(parse_byte_size(bad).is_err(), "{bad}");
        }
    }
}

/// How every DataFusion runtime of the engine starts: without DataFusion's caches of directory
/// listings (which never expire), Parquet footers and file statistics. A runtime outlives a
/// statement (a session's; the process's [`unlimited_runtime`] is shared by every session), and
/// a folder of data files read again must be listed again, or rows written between two
/// statements would not be seen; footers and statistics are keyed by path within a store, not
/// by store, and checked only by size and modification time. The engine's own scans never used
/// these caches (they read Delta tables through the engine's scan).
pub fn runtime_builder() -> datafusion::execution::runtime_env::RuntimeEnvBuilder {
    use datafusion::execution::cache::cache_manager::CacheManagerConfig;
    let caches = CacheManagerConfig::default()
        .with_list_files_cache_limit(0)
        .with_file_statistics_cache_limit(0)
        .with_metadata_cache_limit(0);
    datafusion::execution::runtime_env::RuntimeEnvBuilder::new().with_cache_manager(caches)
}

/// The process's runtime for queries without a memory limit (built once; see [`runtime_builder`]).
pub fn unlimited_runtime(
) -> crate::error::Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>> {
    static RUNTIME: std::sync::OnceLock<Arc<datafusion::execution::runtime_env::RuntimeEnv>> =
        std::sync::OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(Arc::clone(rt));
    }
    let built = runtime_builder().build_arc()?;
    Ok(Arc::clone(RUNTIME.get_or_init(|| built)))
}
