//! A winner that changed row tracking against a loser that rewrites or re-adds existing rows.
//!
//! Row ids of existing rows come from their file's `baseRowId` (or the materialized column once a
//! rewrite carried them). A loser planned without the winner's row tracking: its staged re-adds
//! and rewrites carry no ids for those rows, so the commit would give them fresh ones — rows it did
//! not change would read with new `_row_id`s, and rows it rewrote would lose ids the serial run
//! (planned under the winner's row tracking) keeps. So this is a true conflict when the loser
//! removes any file (DML, OPTIMIZE, RESTORE) and the winner
//! - added the `rowTracking` feature to the protocol, or
//! - turned `delta.enableRowTracking` on or off or changed its materialized column names, or
//! - re-added, with row ids, a file the loser removes without any (a backfill; the loser's remove
//!   carries the ids its read-snapshot entry had).
//! A loser that only appends commits: its new files get fresh ids at commit, as they would
//! serially (`txn/commit.rs` takes row tracking from the last winner's protocol).

use std::collections::BTreeSet;

use delta_rlc_protocol::actions::Action;

use super::checks::{conflict, CheckInput, LoserState};
use super::summary::WinningCommit;
use crate::conflict_error::ConflictKind;
use crate::error::Result;
use delta_rlc_protocol::table_properties::TableProperty;

const KEYS: &[TableProperty] = &[
    TableProperty::EnableRowTracking,
    TableProperty::MaterializedRowIdColumnName,
    TableProperty::MaterializedRowCommitVersionColumnName,
];

pub(super) fn check(input: &CheckInput<'_>, state: &LoserState, w: &WinningCommit) -> Result<()> {
    let mut removes = state.staged.iter().filter_map(|a| match a {
        Action::Remove(r) => Some(r),
        _ => None,
    });
    if removes.next().is_none() {
        return Ok(());
    }
    let read = input.read_snapshot;
    let protocol_added = w.protocol.as_ref().is_some_and(|p| {
        p.has_writer_feature("rowTracking") && !read.protocol.has_writer_feature("rowTracking")
    });
    let config_changed = w.metadata.as_ref().is_some_and(|m| {
        KEYS.iter()
            .any(|k| k.get(&m.configuration) != k.get(&read.metadata.configuration))
    });
    // A loser's remove carries the row ids its read-snapshot file had (none, before a backfill).
    let backfilled = || {
        let with_ids: BTreeSet<&str> = w
            .adds
            .iter()
            .filter(|a| a.base_row_id.is_some())
            .map(|a| a.path.as_str())
            .collect();
        !with_ids.is_empty()
            && state.staged.iter().any(|a| {
                matches!(a, Action::Remove(r)
                    if r.base_row_id.is_none() && with_ids.contains(r.path.as_str()))
            })
    };
    if protocol_added || config_changed || backfilled() {
        return Err(conflict(
            ConflictKind::ProtocolChanged,
            w,
            vec![],
            Some(
                "row tracking changed, and this transaction rewrites rows whose ids it did not carry"
                    .into(),
            ),
            None,
        ));
    }
    Ok(())
}
