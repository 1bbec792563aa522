//! The reconcile budget of one commit attempt: what the checks of every winner found after one
//! lost race may spend, in wall time and in bytes read (`ConflictConfig::budget`).
//!
//! Why it is safe: the budget can only turn a commit into an abort. The byte cap makes the
//! attempt's reads fail once spent (`delta_rlc_storage::ReadBudget`), and every tier and
//! reconciler treats a failed read as a decline; the time cap drops the checks of the winner being
//! checked, and a check that did not finish proved nothing. Either way the loser aborts with
//! reason `budget-exceeded` (unless a proof had already found a true overlap), never a silent
//! skip, and nothing it staged becomes visible.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delta_rlc_storage::{ReadBudget, TableStore};

use super::summary::WinningCommit;
use crate::conflict_config::ConflictConfig;
use crate::conflict_error::{AbortReason, ConflictError, ConflictKind};
use crate::error::{EngineError, Result};

pub struct AttemptBudget {
    started: tokio::time::Instant,
    time: Duration,
    reads: Arc<ReadBudget>,
    timed_out: AtomicBool,
}

impl AttemptBudget {
    /// A fresh budget, for the checks of one attempt.
    pub fn start(config: &ConflictConfig) -> AttemptBudget {
        AttemptBudget {
            started: tokio::time::Instant::now(),
            time: config.budget.time,
            reads: ReadBudget::new(config.budget.bytes),
            timed_out: AtomicBool::new(false),
        }
    }

    /// The handle the checks read through: every byte charged to this attempt.
    pub fn store(&self, store: &TableStore) -> TableStore {
        store.with_read_budget(Arc::clone(&self.reads))
    }

    /// The time this attempt's checks have left (zero once spent).
    pub fn time_left(&self) -> Duration {
        self.time.saturating_sub(self.started.elapsed())
    }

    /// Whether the time or the bytes ran out.
    pub fn exceeded(&self) -> bool {
        self.reads.exceeded() || self.timed_out.load(Ordering::Relaxed)
    }

    /// Runs `checks` (of winner `w`) within the time left; names the budget in the abort it
    /// ends in once the budget is spent.
    pub async fn run<T>(
        &self,
        w: &WinningCommit,
        checks: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let left = self.time_left();
        let outcome = match left.is_zero() {
            true => None,
            false => tokio::time::timeout(left, checks).await.ok(),
        };
        match outcome {
            Some(Ok(t)) => Ok(t),
            Some(Err(e)) => Err(self.explain(e)),
            None => {
                self.timed_out.store(true, Ordering::Relaxed);
                Err(self.timeout(w))
            }
        }
    }

    /// A file-level abort reached after the budget ran out names the budget, unless a proof had
    /// found a true overlap (then the budget did not matter).
    fn explain(&self, e: EngineError) -> EngineError {
        match e {
            EngineError::Conflict(mut c)
                if self.exceeded()
                    && c.reason != AbortReason::TrueOverlap
                    && matches!(
                        c.kind,
                        ConflictKind::ConcurrentAppend
                            | ConflictKind::ConcurrentDeleteRead
                            | ConflictKind::ConcurrentDeleteDelete
                    ) =>
            {
                c.reason = AbortReason::BudgetExceeded;
                c.predicate = Some(match c.predicate.take() {
                    Some(p) => format!("{p} ({})", self.spent()),
                    None => self.spent(),
                });
                EngineError::Conflict(c)
            }
            other => other,
        }
    }

    fn spent(&self) -> String {
        match self.reads.exceeded() {
            true => format!(
                "the reconcile budget of {} bytes read was spent",
                self.reads.limit()
            ),
            false => format!(
                "the reconcile budget of {} ms was spent",
                self.time.as_millis()
            ),
        }
    }

    /// The abort of checks cut short: classed by what the winner did (its metadata or protocol
    /// first, then its removes, then its adds), as OSS Delta would have aborted on it. A winner
    /// that recorded application transactions is classed `ConcurrentTransaction` first: its ids
    /// were not compared, and re-execution must never re-run a statement whose idempotent write
    /// may already have landed under the same id (`txn::reexecute` refuses that class).
    fn timeout(&self, w: &WinningCommit) -> EngineError {
        let kind = if !w.txns.is_empty() {
            ConflictKind::ConcurrentTransaction
        } else if w.protocol.is_some() {
            ConflictKind::ProtocolChanged
        } else if w.metadata.is_some() {
            ConflictKind::MetadataChanged
        } else if !w.removes.is_empty() {
            ConflictKind::ConcurrentDeleteRead
        } else {
            ConflictKind::ConcurrentAppend
        };
        EngineError::Conflict(Box::new(ConflictError {
            kind,
            reason: AbortReason::BudgetExceeded,
            winning_version: w.version,
            winning_operation: w.operation(),
            files: Vec::new(),
            predicate: Some(format!(
                "{} before the checks of this winner finished",
                self.spent()
            )),
            tier: None,
            reconcile_failures: Vec::new(),
            statement_runs: 1,
        }))
    }
}
