//! Lost commit responses and lost commit requests, injected at a seeded rate into the commit
//! primitive of one handle (`put_if_absent`), for the lost-response campaign (`delta-rlc-dev bench
//! lost-responses`, docs/verification.md): whatever the store — the local disk's own put-if-absent,
//! S3's or Azure's conditional PUT — the commit path under test is the one production uses.
//!
//! - A lost response: the put is applied, then the caller is told the outcome is unknown (a
//!   timeout after the store answered).
//! - A lost request: nothing is applied, and the caller is told the outcome is unknown (a timeout
//!   before the request reached the store).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::{PutOutcome, StorageError, StorageErrorKind, TableStore};

/// Which fault a commit put meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Draw {
    None,
    LoseResponse,
    LoseRequest,
}

/// Fault rates (per mille of commit puts) and what fired; shared by the clones of a handle.
#[derive(Debug)]
pub struct CommitFaults {
    lose_response_per_mille: u64,
    lose_request_per_mille: u64,
    state: Mutex<u64>,
    responses_lost: AtomicU64,
    requests_lost: AtomicU64,
    puts: AtomicU64,
}

impl CommitFaults {
    /// Faults at these rates (per mille of commit puts), drawn from `seed`.
    pub fn new(lose_response_per_mille: u64, lose_request_per_mille: u64, seed: u64) -> Arc<Self> {
        Arc::new(CommitFaults {
            lose_response_per_mille,
            lose_request_per_mille,
            state: Mutex::new(seed | 1),
            responses_lost: AtomicU64::new(0),
            requests_lost: AtomicU64::new(0),
            puts: AtomicU64::new(0),
        })
    }

    /// (commit puts seen, responses lost, requests lost).
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.puts.load(Ordering::Relaxed),
            self.responses_lost.load(Ordering::Relaxed),
            self.requests_lost.load(Ordering::Relaxed),
        )
    }

    fn draw(&self) -> Draw {
        self.puts.fetch_add(1, Ordering::Relaxed);
        // xorshift64*: reproducible for a seed, good enough to spread faults.
        let r = match self.state.lock() {
            Ok(mut s) => {
                let mut x = *s;
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                *s = x;
                x.wrapping_mul(0x2545_F491_4F6C_DD1D) % 1000
            }
            Err(_) => return Draw::None,
        };
        if r < self.lose_response_per_mille {
            self.responses_lost.fetch_add(1, Ordering::Relaxed);
            Draw::LoseResponse
        } else if r < self
            .lose_response_per_mille
            .saturating_add(self.lose_request_per_mille)
        {
            self.requests_lost.fetch_add(1, Ordering::Relaxed);
            Draw::LoseRequest
        } else {
            Draw::None
        }
    }
}

fn lost(rel: &str, what: &str) -> StorageError {
    StorageError::new(
        StorageErrorKind::Io,
        format!("{rel}: injected fault: the {what} was lost"),
    )
}

impl TableStore {
    /// This handle with faults injected into its commit puts.
    pub fn with_commit_faults(&self, faults: Arc<CommitFaults>) -> TableStore {
        let mut store = self.clone();
        store.commit_faults = Some(faults);
        store
    }

    /// `put` (the real commit primitive) through the handle's faults, if it has any.
    pub(crate) async fn faulty_commit<F, Fut>(
        &self,
        rel: &str,
        bytes: Bytes,
        put: F,
    ) -> (PutOutcome, Option<String>)
    where
        F: FnOnce(Bytes) -> Fut,
        Fut: std::future::Future<Output = (PutOutcome, Option<String>)>,
    {
        let draw = match &self.commit_faults {
            Some(f) => f.draw(),
            None => Draw::None,
        };
        match draw {
            Draw::None => put(bytes).await,
            Draw::LoseRequest => (PutOutcome::Unknown(lost(rel, "request")), None),
            Draw::LoseResponse => match put(bytes).await {
                (PutOutcome::Created, _) => (PutOutcome::Unknown(lost(rel, "response")), None),
                other => other,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every put loses its response (applied, unknown) or its request (not applied, unknown),
    /// on a local disk and in memory; the counts say which fired.
    #[tokio::test]
    async fn a_lost_response_applies_the_put_and_a_lost_request_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("t").display().to_string();
        for location in [local.as_str(), "memory://commit-faults-test/t"] {
            let base = TableStore::open(location).unwrap();
            let responses = base.with_commit_faults(CommitFaults::new(1000, 0, 3));
            let out = responses
                .put_if_absent("_delta_log/a.json", Bytes::from_static(b"a"))
                .await;
            assert!(matches!(out, PutOutcome::Unknown(_)), "{location}: {out:?}");
            assert_eq!(
                base.get("_delta_log/a.json").await.unwrap(),
                "a",
                "{location}"
            );
            let requests = CommitFaults::new(0, 1000, 3);
            let lossy = base.with_commit_faults(Arc::clone(&requests));
            let out = lossy
                .put_if_absent("_delta_log/b.json", Bytes::from_static(b"b"))
                .await;
            assert!(matches!(out, PutOutcome::Unknown(_)), "{location}: {out:?}");
            assert!(
                !base.exists("_delta_log/b.json").await.unwrap(),
                "{location}"
            );
            assert_eq!(requests.counts(), (1, 0, 1));
            // Without faults the same handle commits.
            let out = base
                .put_if_absent("_delta_log/b.json", Bytes::from_static(b"b"))
                .await;
            assert!(matches!(out, PutOutcome::Created), "{location}: {out:?}");
        }
    }
}
