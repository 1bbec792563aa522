//! What an operation reports when it finishes: the commit (version, attempts, the reconcile events
//! that let it commit beside concurrent writers) and its metrics.

use std::collections::BTreeMap;

use arrow::record_batch::RecordBatch;
use delta_rlc_engine::events::Event;
use delta_rlc_engine::sql::StatementOutput;
use delta_rlc_engine::txn::CommitResult;
use serde_json::{Map, Value};

/// The result of a committed (or no-op) operation.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitOutcome {
    /// The version this operation committed; `None` when it changed nothing and committed
    /// nothing.
    pub version: Option<u64>,
    /// How many times the commit was attempted (1 without concurrent writers; each lost race
    /// that was reconciled adds one).
    pub attempts: u32,
    /// What the conflict checker reconciled instead of aborting (and planner events).
    pub events: Vec<ReconcileEvent>,
    /// The operation's metrics (rows, files, bytes, time).
    pub metrics: Metrics,
    /// The requests the statement sent to the store (reading the snapshot, its files, writing
    /// and committing), with its critical-path depth.
    pub requests: Option<delta_rlc_storage::RequestCounts>,
    /// Why each earlier run of the statement aborted, when re-execution on conflict
    /// ([`crate::ConflictSettings::retry_on_conflict`]) ran it again; empty when it ran once.
    pub earlier_runs: Vec<String>,
}

impl CommitOutcome {
    /// How many times the statement ran (1 unless re-execution on conflict ran it again).
    pub fn statement_runs(&self) -> u32 {
        self.earlier_runs.len() as u32 + 1
    }

    /// One outcome for a statement that committed in several versions (an OPTIMIZE with a commit
    /// interval): the last version, attempts and events of all, counters summed.
    pub(crate) fn followed_by(mut self, next: CommitOutcome) -> Self {
        self.version = next.version.or(self.version);
        self.attempts += next.attempts;
        self.events.extend(next.events);
        self.metrics.add(&next.metrics);
        self.requests = next.requests.or(self.requests);
        self.earlier_runs.extend(next.earlier_runs);
        self
    }

    pub(crate) fn new(result: CommitResult, metrics: &Map<String, Value>) -> Self {
        let committed = result.attempts > 0;
        CommitOutcome {
            version: if committed { result.version } else { None },
            attempts: result.attempts,
            events: result
                .events
                .iter()
                .map(ReconcileEvent::from_engine)
                .collect(),
            metrics: Metrics::new(result.affected_rows, metrics),
            requests: None,
            earlier_runs: result.earlier_runs,
        }
    }
}

/// Counters an operation recorded (the commit's `operationMetrics`), plus the rows it affected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Rows inserted, updated or deleted (for MERGE, their sum).
    pub rows_affected: Option<u64>,
    values: BTreeMap<String, String>,
}

impl Metrics {
    fn new(rows_affected: Option<u64>, map: &Map<String, Value>) -> Self {
        Metrics {
            rows_affected,
            values: map
                .iter()
                .map(|(k, v)| {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect(),
        }
    }

    /// Adds `other`'s counters to these (`max…`/`min…` by their maximum/minimum; a value that is
    /// not a number: `other`'s).
    fn add(&mut self, other: &Metrics) {
        self.rows_affected = match (self.rows_affected, other.rows_affected) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => b.or(a),
        };
        for (k, v) in &other.values {
            let sum = match (
                self.values.get(k).and_then(|x| x.parse::<i64>().ok()),
                v.parse::<i64>(),
            ) {
                (Some(a), Ok(b)) if k.starts_with("max") => a.max(b).to_string(),
                (Some(a), Ok(b)) if k.starts_with("min") => a.min(b).to_string(),
                (Some(a), Ok(b)) => (a + b).to_string(),
                _ => v.clone(),
            };
            self.values.insert(k.clone(), sum);
        }
    }

    /// A counter by its Delta name (`numDeletedRows`, `numAddedFiles`, `numOutputRows`, …).
    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.get(name).and_then(|v| v.parse().ok())
    }

    /// Every recorded metric, by name (values as Delta writes them).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// One thing the engine did to commit beside a concurrent writer instead of aborting (e.g.
/// `delta.rlc.reconcile.dvMerge`), or a planner event (e.g. the MERGE source-key read).
#[derive(Debug, Clone, PartialEq)]
pub struct ReconcileEvent {
    /// The event's name.
    pub name: String,
    /// Its fields, each as JSON text.
    pub fields: BTreeMap<String, String>,
}

impl ReconcileEvent {
    fn from_engine(e: &Event) -> Self {
        ReconcileEvent {
            name: e.name.to_string(),
            fields: e
                .fields
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
        }
    }
}

/// What [`crate::Table::sql`] returns.
#[derive(Debug, Clone)]
pub struct SqlOutcome {
    /// Rows, for statements that return rows.
    pub batches: Vec<RecordBatch>,
    /// The commit, for statements that write.
    pub commit: Option<CommitOutcome>,
    /// A message, for statements that report one (e.g. a no-op VACUUM).
    pub message: Option<String>,
}

impl SqlOutcome {
    pub(crate) fn from_engine(out: StatementOutput) -> Self {
        SqlOutcome {
            batches: out.batches,
            commit: out.commit.map(|c| {
                let mut outcome = CommitOutcome::new(c, &Map::new());
                outcome.requests = out.requests;
                outcome
            }),
            message: out.message,
        }
    }
}

/// What VACUUM deleted (or, in a dry run, would delete).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VacuumOutcome {
    /// Paths relative to the table root.
    pub files: Vec<String>,
    /// True when nothing was deleted because it was a dry run.
    pub dry_run: bool,
}
