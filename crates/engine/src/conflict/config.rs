//! Conflict-checker configuration: isolation level, attempt bound, the `legacy` switch and one switch
//! per reconcile tier. Settings come from the library API, CLI `--conf key=value`, and the
//! `DELTA_RLC_CONF` environment variable (`key=value,key=value`).

use std::collections::BTreeMap;

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

/// Known switches and their defaults (a tier defaults to on once it is proven).
pub const SWITCHES: &[(&str, bool)] = &[
    // Case 1: conflict-time data skipping.
    ("dataSkipping", true),
    ("valueExact", true),
    ("deleteReadRefinement", true),
    ("mergeSourceKey", true),
    // Case 2: same-file DV merge.
    ("dvMerge", true),
    // Case 3: relocation (dataChange=false) exclusion for append-only losers.
    ("relocation", true),
    // Case 4: OPTIMIZE ⟂ DML offset remap, both directions.
    ("optimizeForward", true),
    ("optimizeReverse", true),
    // Case 5: reclustering ⟂ DML through stable row ids (row tracking).
    ("rowIdRemap", true),
    // Case 6: MERGE with NOT MATCHED BY SOURCE reads only what its clauses can touch.
    ("mergeNotMatchedBySource", true),
];

#[derive(Debug, Clone)]
pub struct ConflictConfig {
    /// Reproduce OSS Delta exactly: every reconcile tier off.
    pub legacy: bool,
    pub isolation: Option<IsolationLevel>,
    pub max_attempts: u32,
    pub switches: BTreeMap<String, bool>,
    /// Value-exact tier: give up (keep the conflict) above this many candidate bytes.
    pub value_exact_max_bytes: u64,
    /// MERGE source keys: IN-list pre-filter up to this many distinct keys, else min/max ranges.
    pub in_set_threshold: usize,
    /// Test-only: a deliberately unsound tier that clears every file (the oracle must catch it).
    pub unsound_for_testing: bool,
}

impl Default for ConflictConfig {
    fn default() -> Self {
        ConflictConfig {
            legacy: false,
            isolation: None,
            max_attempts: 1000,
            switches: SWITCHES.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            value_exact_max_bytes: 256 * 1024 * 1024,
            in_set_threshold: 10_000,
            unsound_for_testing: false,
        }
    }
}

impl ConflictConfig {
    /// Is a reconcile tier on? Always off in legacy mode.
    pub fn enabled(&self, switch: &str) -> bool {
        !self.legacy && self.switches.get(switch).copied().unwrap_or(false)
    }

    /// Applies one `key=value` setting. Keys: `legacy`, `isolation`, `maxAttempts`, or a switch name
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
            "inSetThreshold" => {
                self.in_set_threshold = value.parse().map_err(|_| {
                    EngineError::invalid(format!("inSetThreshold must be a count, got {value:?}"))
                })?
            }
            "unsoundForTesting" => self.unsound_for_testing = as_bool()?,
            other => {
                let name = other.strip_prefix("rlc.").unwrap_or(other);
                if !SWITCHES.iter().any(|(k, _)| *k == name) {
                    let known: Vec<&str> = SWITCHES.iter().map(|(k, _)| *k).collect();
                    return Err(EngineError::invalid(format!(
                        "unknown setting {other:?} (known: legacy, isolation, maxAttempts, valueExact.maxBytes, inSetThreshold, {})",
                        known.join(", ")
                    )));
                }
                self.switches.insert(name.to_string(), as_bool()?);
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
