//! The snapshot a writer holds after its own commit: its read snapshot with the winners it checked
//! and its own commit replayed — what loading that version gives, without reading back what the
//! writer has just read or written. The next statement on the handle then lists the log and reads
//! only commits written after it (issue #51: a statement's LIST, then its own last commit, was a
//! round trip per statement).
//!
//! Sound because every input is the log's own bytes: the read snapshot is a load of its version,
//! each winner is the commit file as read for the conflict check, and the own commit is the bytes
//! put-if-absent created at its version. The winners must be exactly the versions between the
//! read version and the own commit; otherwise there is no snapshot (the next load reads the log).
//!
//! What it trusts: that the table was not deleted and created again at this root while the
//! transaction ran (the read version's commit still being the one read). Such a commit already
//! lands in the new table, as it did before; the held view only serves this handle, and the
//! checkpoint is never written from it (`maybe_checkpoint` loads with the base check).

use std::sync::Arc;

use bytes::Bytes;
use delta_rlc_protocol::actions::parse_commit;

use super::replay::ReplayState;
use super::{commit_hash, Snapshot};
use crate::error::Result;

impl Snapshot {
    /// The snapshot at `version` after this writer created that commit (module header). `e_tag`
    /// is the store's tag of the created commit file: with it, the next load recognises its base
    /// from the listing; without it, that load reads the commit back to compare hashes.
    pub fn after_own_commit(
        read: &Snapshot,
        winners: &[(u64, Bytes)],
        version: u64,
        commit: &[u8],
        e_tag: Option<&str>,
        now_ms: i64,
    ) -> Result<Option<Arc<Snapshot>>> {
        let contiguous = winners
            .iter()
            .map(|(v, _)| *v)
            .eq(read.version.saturating_add(1)..version);
        if !contiguous || version != read.version + 1 + winners.len() as u64 {
            return Ok(None);
        }
        let mut state = ReplayState::from_snapshot(read);
        for (v, bytes) in winners {
            state.apply_commit(*v, parse_commit(*v, bytes)?, now_ms)?;
        }
        state.apply_commit(version, parse_commit(version, commit)?, now_ms)?;
        let mut snap = state.finish(version, read.checkpoint_version)?;
        snap.commit_hash = Some(commit_hash(commit));
        snap.commit_file_id = e_tag.map(|t| format!("{}:{t}", commit.len()));
        Ok(Some(Arc::new(snap)))
    }
}
