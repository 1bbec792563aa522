//! Conflict-checker configuration: isolation level, attempt bound, the `legacy` switch and one switch
//! per reconcile tier. Settings come from the library API, CLI `--conf key=value`, and the
//! `DELTA_RLC_CONF` environment variable (`key=value,key=value`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationLevel {
    Serializable,
    WriteSerializable,
    SnapshotIsolation,
}

impl IsolationLevel {
    pub fn name(self) -> &'static str {
        match self {
            IsolationLevel::Serializable => "Serializable",
            IsolationLevel::WriteSerializable => "WriteSerializable",
            IsolationLevel::SnapshotIsolation => "SnapshotIsolation",
        }
    }

    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "Serializable" => Ok(IsolationLevel::Serializable),
            "WriteSerializable" => Ok(IsolationLevel::WriteSerializable),
            other => Err(EngineError::invalid(format!(
                "unknown isolation level {other:?} (expected Serializable or WriteSerializable)"
            ))),
        }
    }
}

/// One switch per reconcile tier. An enum, so a misspelt tier name is a compile error in code and
/// an "unknown setting" error from `--conf`, never a tier silently turned off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Switch {
    /// Case 1: conflict-time data skipping on the winner's file stats.
    DataSkipping,
    /// Case 1: the winner's rows evaluated against the read predicate.
    ValueExact,
    /// Case 1: rows a winner deleted evaluated against the read predicate.
    DeleteReadRefinement,
    /// Case 1: a MERGE reads only target rows whose ON keys occur in its source.
    MergeSourceKey,
    /// Case 2: same-file deletion-vector merge.
    DvMerge,
    /// Case 3: relocation (dataChange=false) exclusion for append-only losers.
    Relocation,
    /// Case 4: OPTIMIZE ⟂ DML offset remap, forward.
    OptimizeForward,
    /// Case 4: OPTIMIZE ⟂ DML offset remap, reverse.
    OptimizeReverse,
    /// Case 5: reclustering ⟂ DML through stable row ids (row tracking).
    RowIdRemap,
    /// Case 6: MERGE with NOT MATCHED BY SOURCE reads only what its clauses can touch.
    MergeNotMatchedBySource,
    /// Metadata: a winner's compatible schema or property change does not abort the loser.
    MetadataChange,
    /// Metadata: a loser whose commit changes only metadata is re-applied on a winner's metadata
    /// change that touches different things (`conflict/metadata_pair.rs`).
    MetadataPair,
    /// Identity: a loser that generated identity values for new rows only has them moved past a
    /// winner's (`conflict/identity_rebase.rs`).
    IdentityRebase,
}

impl Switch {
    /// Every switch (each defaults to on: a tier is on once it is proven).
    pub const ALL: [Switch; 13] = [
        Switch::DataSkipping,
        Switch::ValueExact,
        Switch::DeleteReadRefinement,
        Switch::MergeSourceKey,
        Switch::DvMerge,
        Switch::Relocation,
        Switch::OptimizeForward,
        Switch::OptimizeReverse,
        Switch::RowIdRemap,
        Switch::MergeNotMatchedBySource,
        Switch::MetadataChange,
        Switch::MetadataPair,
        Switch::IdentityRebase,
    ];

    /// The setting name (`--conf dataSkipping=false`).
    pub fn name(self) -> &'static str {
        match self {
            Switch::DataSkipping => "dataSkipping",
            Switch::ValueExact => "valueExact",
            Switch::DeleteReadRefinement => "deleteReadRefinement",
            Switch::MergeSourceKey => "mergeSourceKey",
            Switch::DvMerge => "dvMerge",
            Switch::Relocation => "relocation",
            Switch::OptimizeForward => "optimizeForward",
            Switch::OptimizeReverse => "optimizeReverse",
            Switch::RowIdRemap => "rowIdRemap",
            Switch::MergeNotMatchedBySource => "mergeNotMatchedBySource",
            Switch::MetadataChange => "metadataChange",
            Switch::MetadataPair => "metadataPair",
            Switch::IdentityRebase => "identityRebase",
        }
    }

    pub fn parse(name: &str) -> Option<Switch> {
        Switch::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[derive(Debug, Clone)]
pub struct ConflictConfig {
    /// Reproduce OSS Delta exactly: every reconcile tier off.
    pub legacy: bool,
    pub isolation: Option<IsolationLevel>,
    pub max_attempts: u32,
    pub switches: BTreeMap<Switch, bool>,
    /// Value-exact tier: give up (keep the conflict) above this many candidate bytes.
    pub value_exact_max_bytes: u64,
    /// MERGE source keys: IN-list pre-filter up to this many distinct keys, else min/max ranges.
    pub in_set_threshold: usize,
    /// VACUUM refuses a retention below the table's `delta.deletedFileRetentionDuration` unless
    /// this is off (`retentionDurationCheck=false`, Spark's
    /// `spark.databricks.delta.retentionDurationCheck.enabled`).
    pub retention_duration_check: bool,
    /// Re-execution on a true conflict (`retryOnConflict`): off unless asked for
    /// ([`crate::txn::reexecute`]).
    pub reexecution: Reexecution,
    /// What the checks of one commit attempt may spend (`conflict::budget`).
    pub budget: ReconcileBudget,
    /// Test-only: a deliberately unsound tier that clears every file (the oracle must catch it).
    /// Exists only with the `unsound-for-testing` cargo feature (the CLI never enables it) and is
    /// not a setting: no `--conf`, environment, table property or scenario can reach it.
    #[cfg(feature = "unsound-for-testing")]
    pub unsound_for_testing: bool,
}

impl Default for ConflictConfig {
    fn default() -> Self {
        ConflictConfig {
            legacy: false,
            isolation: None,
            max_attempts: 1000,
            switches: Switch::ALL.into_iter().map(|s| (s, true)).collect(),
            value_exact_max_bytes: 256 * 1024 * 1024,
            in_set_threshold: 10_000,
            retention_duration_check: true,
            reexecution: Default::default(),
            budget: Default::default(),
            #[cfg(feature = "unsound-for-testing")]
            unsound_for_testing: false,
        }
    }
}

impl ConflictConfig {
    /// Is a reconcile tier on? Always off in legacy mode.
    pub fn enabled(&self, switch: Switch) -> bool {
        !self.legacy && self.switches.get(&switch).copied().unwrap_or(false)
    }

    /// Applies one `key=value` setting. Keys: `legacy`, `isolation`, `maxAttempts`,
    /// `retryOnConflict`, `valueExact.maxBytes`, `reconcile.maxMillis`, `reconcile.maxBytes`,
    /// `inSetThreshold`, `retentionDurationCheck`, or a switch name
    /// (optionally prefixed `rlc.`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let key = key.trim();
        let value = value.trim();
        let as_bool = || match value {
            "true" | "on" | "1" => Ok(true),
            "false" | "off" | "0" => Ok(false),
            other => Err(EngineError::invalid(format!(
                "setting {key}: expected true or false, got {other:?}"
            ))),
        };
        match key {
            "legacy" => self.legacy = as_bool()?,
            "isolation" => self.isolation = Some(IsolationLevel::parse(value)?),
            "maxAttempts" | "max_attempts" => {
                self.max_attempts = value.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    EngineError::invalid(format!(
                        "maxAttempts must be a positive integer, got {value:?}"
                    ))
                })?
            }
            "valueExact.maxBytes" => {
                self.value_exact_max_bytes = value.parse().map_err(|_| {
                    EngineError::invalid(format!(
                        "valueExact.maxBytes must be a byte count, got {value:?}"
                    ))
                })?
            }
            "retentionDurationCheck" => self.retention_duration_check = as_bool()?,
            "retryOnConflict" | "rlc.retryOnConflict" => {
                self.reexecution.reruns = Reexecution::parse_reruns(value)?
            }
            "reconcile.maxMillis" => {
                let ms: u64 = value.parse().map_err(|_| {
                    EngineError::invalid(format!(
                        "reconcile.maxMillis must be a count of milliseconds, got {value:?}"
                    ))
                })?;
                self.budget.time = Duration::from_millis(ms);
            }
            "reconcile.maxBytes" => {
                self.budget.bytes = value.parse().map_err(|_| {
                    EngineError::invalid(format!(
                        "reconcile.maxBytes must be a byte count, got {value:?}"
                    ))
                })?
            }
            "inSetThreshold" => {
                self.in_set_threshold = value.parse().map_err(|_| {
                    EngineError::invalid(format!("inSetThreshold must be a count, got {value:?}"))
                })?
            }
            other => {
                let name = other.strip_prefix("rlc.").unwrap_or(other);
                let Some(switch) = Switch::parse(name) else {
                    let known: Vec<&str> = Switch::ALL.iter().map(|s| s.name()).collect();
                    return Err(EngineError::invalid(format!(
                        "unknown setting {other:?} (known: legacy, isolation, maxAttempts, retryOnConflict, valueExact.maxBytes, reconcile.maxMillis, reconcile.maxBytes, inSetThreshold, retentionDurationCheck, {})",
                        known.join(", ")
                    )));
                };
                self.switches.insert(switch, as_bool()?);
            }
        }
        Ok(())
    }

    /// Applies `key=value,key=value` (the `DELTA_RLC_CONF` format).
    pub fn apply_list(&mut self, list: &str) -> Result<()> {
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| {
                EngineError::invalid(format!("setting {item:?} is not key=value"))
            })?;
            self.set(k, v)?;
        }
        Ok(())
    }

    /// Defaults, then `DELTA_RLC_CONF` from the environment.
    pub fn from_env() -> Result<Self> {
        let mut c = ConflictConfig::default();
        if let Ok(list) = std::env::var("DELTA_RLC_CONF") {
            c.apply_list(&list)?;
        }
        Ok(c)
    }
}

/// What the checks of one commit attempt (every winner found after one lost race) may spend:
/// wall time, and bytes read from winners' files, DVs and the loser's own. Past either, the loser
/// aborts with reason `budget-exceeded` (Databricks reports `ALLOTTED_TIME_EXCEEDED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileBudget {
    pub time: Duration,
    pub bytes: u64,
}

impl Default for ReconcileBudget {
    /// 30 s and 2 GiB: far above what the benchmarks' attempts spend (the p99 check of a lost
    /// race at 16 writers takes milliseconds), so only a pathological winner reaches them.
    fn default() -> Self {
        ReconcileBudget {
            time: Duration::from_secs(30),
            bytes: 2 * 1024 * 1024 * 1024,
        }
    }
}

/// Re-execution on a true conflict, opt in (`crate::txn::reexecute` runs it).
/// How many more times a statement may run after a true conflict, and how long it waits between
/// runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reexecution {
    /// Runs after the first (0 = never re-run: the default).
    pub reruns: u32,
    /// The wait before the first re-run is drawn from `[0, backoff]`; each later one doubles the
    /// bound, up to `max_backoff` (full jitter).
    pub backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Reexecution {
    fn default() -> Self {
        Reexecution {
            reruns: 0,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// The most re-runs a setting may ask for: past this, retrying is a loop, not a policy.
pub const MAX_RERUNS: u32 = 100;

impl Reexecution {
    /// `n` re-runs with the default backoff.
    pub fn reruns(n: u32) -> Result<Self> {
        if n > MAX_RERUNS {
            return Err(EngineError::invalid(format!(
                "retryOnConflict must be at most {MAX_RERUNS}, got {n}"
            )));
        }
        Ok(Reexecution {
            reruns: n,
            ..Reexecution::default()
        })
    }

    /// Parses a setting's value (`3`).
    pub fn parse_reruns(value: &str) -> Result<u32> {
        let n: u32 = value.trim().parse().map_err(|_| {
            EngineError::invalid(format!(
                "retryOnConflict must be a count of re-runs (0 = off), got {value:?}"
            ))
        })?;
        Reexecution::reruns(n).map(|r| r.reruns)
    }

    /// Whether a statement whose `run`-th run (1-based) failed runs again: re-runs are left and
    /// the failure allows it (`crate::txn::reexecute::may_run_again`: nothing landed).
    pub fn runs_again(&self, run: u32, may_run_again: bool) -> bool {
        run <= self.reruns && may_run_again
    }

    /// The wait before run `run + 1`, after run `run` (1-based) aborted: uniform in
    /// `[0, min(max_backoff, backoff × 2^(run-1))]`, drawn from the environment's ids so a
    /// simulation stays deterministic.
    pub fn wait_after(&self, run: u32, env: &crate::env::Env) -> Duration {
        let doubled = self
            .backoff
            .saturating_mul(1u32 << run.saturating_sub(1).min(20));
        let bound = doubled.min(self.max_backoff).as_micros() as u64;
        if bound == 0 {
            return Duration::ZERO;
        }
        let draw = env.ids.uuid().as_u128() as u64;
        Duration::from_micros(draw % (bound + 1))
    }
}
