//! A cap on the bytes read through one handle: the conflict checker's reconcile budget
//! (docs/design.md, "The reconcile budget"). Every byte a read hands out counts, from the store
//! or from a cache alike (a cached file still costs its decoding); once the cap is passed, every
//! further read through the handle fails with [`StorageErrorKind::BudgetExceeded`]. Writes are
//! not charged. The charge comes after a read, so one read may pass the cap by its own size.
//!
//! Invariant the checker relies on: a refused read is an error to its caller, never an empty
//! answer, so a proof that needed the bytes declines (and the loser aborts).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{StorageError, StorageErrorKind, TableStore};

/// Bytes read so far against a cap; shared by every clone of the handle it is attached to.
#[derive(Debug)]
pub struct ReadBudget {
    limit: u64,
    used: AtomicU64,
}

impl ReadBudget {
    pub fn new(limit: u64) -> Arc<ReadBudget> {
        Arc::new(ReadBudget {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes handed out so far (including the read that passed the cap).
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether a read has passed the cap (every later read fails).
    pub fn exceeded(&self) -> bool {
        self.used() > self.limit
    }

    fn refusal(&self, rel: &str) -> StorageError {
        StorageError::new(
            StorageErrorKind::BudgetExceeded,
            format!(
                "reading {rel}: the read budget of {} bytes is spent ({} read)",
                self.limit,
                self.used()
            ),
        )
    }
}

impl TableStore {
    /// This handle with every read charged to `budget`.
    pub fn with_read_budget(&self, budget: Arc<ReadBudget>) -> TableStore {
        let mut store = self.clone();
        store.read_budget = Some(budget);
        store
    }

    /// Before a read: refused once the budget is spent.
    pub(crate) fn check_read_budget(&self, rel: &str) -> Result<(), StorageError> {
        match &self.read_budget {
            Some(b) if b.exceeded() => Err(b.refusal(rel)),
            _ => Ok(()),
        }
    }

    /// After a read of `n` bytes: charged, and refused when it passes the cap.
    pub(crate) fn charge_read(&self, rel: &str, n: usize) -> Result<(), StorageError> {
        let Some(b) = &self.read_budget else {
            return Ok(());
        };
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        let before = b.used.fetch_add(n, Ordering::Relaxed);
        match before.saturating_add(n) > b.limit {
            true => Err(b.refusal(rel)),
            false => Ok(()),
        }
    }
}
