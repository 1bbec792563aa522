//! Re-execution on a true conflict, opt in (off by default).
//!
//! A statement whose commit aborted on a conflict the checker could not reconcile is planned and
//! run again from the table's latest snapshot, as a user re-running it by hand would, up to
//! [`Reexecution::reruns`] more times with exponential backoff and full jitter.
//!
//! Why this is as safe as the retry a user writes:
//! - Each run is a fresh transaction: it reads the latest snapshot, re-evaluates the statement's
//!   predicate and sources there, and commits through the one commit function and the whole
//!   conflict checker. Nothing of the aborted run (its read set, its files) is reused; its data
//!   files stay invisible, as every aborted transaction's do, until VACUUM removes them.
//! - Only errors that prove nothing landed are re-run: a conflict ([`EngineError::Conflict`], the
//!   commit's put never took a version: a lost response is resolved to "ours" before any conflict
//!   is reported) and an expired transaction — but not a `ConcurrentTransaction` conflict, where
//!   another writer committed the same application id: running again would write the batch that
//!   idempotency marker exists to write once. [`EngineError::CommitUnknown`] (the commit may have
//!   landed) and every other error are returned as they are, so a statement never applies twice.
//! - The statement's inputs must be re-readable: SQL (its sources re-evaluated at the new
//!   snapshot) and library calls whose source is data in memory. A source that is a stream is
//!   read once, so a caller with one does not re-execute.
//!
//! The contract the caller accepts by turning it on: the statement's input does not depend on
//! what the caller read from the table outside the statement. A job that SELECTs a value and
//! then writes an UPDATE computed from it must not re-execute the UPDATE (the value may be
//! stale at the new snapshot); the same job as one statement (`UPDATE … SET v = (SELECT …)`)
//! may.

use std::future::Future;

pub use crate::conflict_config::{Reexecution, MAX_RERUNS};
use crate::env::Env;
use crate::error::EngineError;

/// An error after which the statement may run again: it is known not to have committed, and a
/// later snapshot may not repeat it — a conflict, or a transaction open too long. Never a
/// `ConcurrentTransaction` conflict: another writer recorded the same application id (an
/// idempotent writer's `txn` marker), which is the duplicate that marker exists to stop.
pub fn may_run_again(error: &EngineError) -> bool {
    match error {
        EngineError::Conflict(c) => {
            c.kind != crate::conflict_error::ConflictKind::ConcurrentTransaction
        }
        EngineError::TransactionExpired(_) => true,
        _ => false,
    }
}

/// An error a statement's run may end with (the engine's, or a front end's wrapping it).
pub trait RunError: std::fmt::Display {
    /// The statement may run again after this error ([`may_run_again`]).
    fn may_run_again(&self) -> bool;
    /// The error after `runs` runs of the statement (a conflict records the count).
    fn after_runs(self, runs: u32) -> Self;
}

impl RunError for EngineError {
    fn may_run_again(&self) -> bool {
        may_run_again(self)
    }

    fn after_runs(self, runs: u32) -> Self {
        match self {
            EngineError::Conflict(mut c) => {
                c.statement_runs = runs;
                EngineError::Conflict(c)
            }
            other => other,
        }
    }
}

/// Why each earlier run of a statement did not commit (empty: it ran once).
pub type EarlierRuns = Vec<String>;

/// Runs `run_once` (given the 1-based run number), again after each abort `policy` allows. On
/// success, returns the value and why the earlier runs aborted; on failure, the last error, with
/// a conflict's count of runs set.
pub async fn run_statement<T, E, F, Fut>(
    policy: &Reexecution,
    env: &Env,
    mut run_once: F,
) -> std::result::Result<(T, EarlierRuns), E>
where
    E: RunError,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = std::result::Result<T, E>>,
{
    let mut earlier = Vec::new();
    let mut run = 1u32;
    loop {
        match run_once(run).await {
            Ok(value) => return Ok((value, earlier)),
            Err(e) if policy.runs_again(run, e.may_run_again()) => {
                earlier.push(e.to_string());
                let wait = policy.wait_after(run, env);
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                run += 1;
            }
            Err(e) => return Err(e.after_runs(run)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conflict_error::{ConflictError, ConflictKind};
    use crate::error::Result;
    use std::time::Duration;

    fn conflict() -> EngineError {
        EngineError::Conflict(Box::new(ConflictError {
            kind: ConflictKind::ConcurrentDeleteRead,
            reason: crate::conflict_error::AbortReason::TrueOverlap,
            winning_version: 3,
            winning_operation: "DELETE".into(),
            files: vec![],
            predicate: None,
            tier: None,
            reconcile_failures: vec![],
            statement_runs: 1,
        }))
    }

    fn quick(reruns: u32) -> Reexecution {
        Reexecution {
            reruns,
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        }
    }

    #[tokio::test]
    async fn a_conflict_runs_again_until_the_reruns_are_spent() {
        let env = Env::deterministic(1);
        let mut runs = 0;
        let out: Result<(u32, EarlierRuns)> = run_statement(&quick(2), &env, |_| {
            runs += 1;
            async { Err(conflict()) }
        })
        .await;
        assert_eq!(runs, 3);
        match out {
            Err(EngineError::Conflict(c)) => {
                assert_eq!(c.statement_runs, 3);
                assert!(c.to_string().contains("the statement ran 3 times"), "{c}");
            }
            other => panic!("expected the last conflict, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_later_run_that_commits_reports_why_the_earlier_ones_aborted() {
        let env = Env::deterministic(1);
        let out = run_statement(&quick(5), &env, |run| async move {
            match run {
                1 | 2 => Err(conflict()),
                n => Ok(n),
            }
        })
        .await;
        let Ok((value, earlier)) = out else {
            panic!("expected a commit, got {out:?}")
        };
        assert_eq!(value, 3);
        assert_eq!(earlier.len(), 2);
        assert!(
            earlier[0].starts_with("ConcurrentDeleteRead"),
            "{earlier:?}"
        );
    }

    #[tokio::test]
    async fn the_same_application_id_committed_elsewhere_never_runs_again() {
        let env = Env::deterministic(1);
        let mut runs = 0;
        let out: std::result::Result<((), EarlierRuns), EngineError> =
            run_statement(&quick(5), &env, |_| {
                runs += 1;
                async {
                    Err(EngineError::Conflict(Box::new(ConflictError {
                        kind: ConflictKind::ConcurrentTransaction,
                        reason: crate::conflict_error::AbortReason::SameApplicationTransaction,
                        winning_version: 2,
                        winning_operation: "WRITE".into(),
                        files: vec![],
                        predicate: Some("app id job-1".into()),
                        tier: None,
                        reconcile_failures: vec![],
                        statement_runs: 1,
                    })))
                }
            })
            .await;
        assert_eq!(runs, 1);
        assert!(
            matches!(out, Err(EngineError::Conflict(c)) if c.kind == ConflictKind::ConcurrentTransaction)
        );
    }

    #[tokio::test]
    async fn an_unknown_outcome_or_bad_input_never_runs_again() {
        let env = Env::deterministic(1);
        for error in [
            || EngineError::CommitUnknown("lost".into()),
            || EngineError::invalid("bad"),
        ] {
            let mut runs = 0;
            let out: Result<((), EarlierRuns)> = run_statement(&quick(5), &env, |_| {
                runs += 1;
                async move { Err(error()) }
            })
            .await;
            assert_eq!(runs, 1);
            assert!(out.is_err());
        }
        // Off by default: a conflict is returned after one run.
        let mut runs = 0;
        let out: Result<((), EarlierRuns)> = run_statement(&Reexecution::default(), &env, |_| {
            runs += 1;
            async { Err(conflict()) }
        })
        .await;
        assert_eq!(runs, 1);
        assert!(matches!(out, Err(EngineError::Conflict(c)) if c.statement_runs == 1));
    }

    #[test]
    fn waits_grow_with_jitter_and_stay_bounded() {
        let env = Env::deterministic(7);
        let p = Reexecution {
            reruns: 10,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        };
        for run in 1..=10 {
            let bound = Duration::from_millis(10 * (1 << (run - 1))).min(p.max_backoff);
            assert!(p.wait_after(run, &env) <= bound);
        }
        assert!(Reexecution::reruns(MAX_RERUNS + 1).is_err());
        assert!(Reexecution::parse_reruns("x").is_err());
        assert_eq!(Reexecution::parse_reruns(" 3 ").ok(), Some(3));
    }
}
