//! Change data for tables with `delta.enableChangeDataFeed = true`: the rows a DELETE, UPDATE,
//! MERGE or REPLACE WHERE changes, written under `_change_data/` with a `_change_type` column
//! (`insert`, `delete`, `update_preimage`, `update_postimage`) and staged as `cdc` actions.
//!
//! Invariant (the protocol's reading rule): a commit with `cdc` actions lists *every* row it
//! changes in them — readers then ignore its add/remove actions. A commit without them is read from
//! its data-changing adds (inserts) and removes (deletes), which is exact only for appends,
//! whole-file deletes and overwrites; any other commit that removes rows must carry change data
//! ([`check_commit`] refuses it otherwise, before and after every conflict rewrite).
//!
//! Rows are buffered by the transaction (`crate::txn::change_data`) and written in chunks of
//! [`CHANGE_CHUNK_BYTES`]; the commit writes what is left. Partitioned tables write change files under the partition's
//! directory, without the partition columns (they are in the action), as Delta Spark does.

use delta_rlc_protocol::actions::{Action, Metadata};

use crate::error::{EngineError, Result};

pub const CHANGE_TYPE_COLUMN: &str = "_change_type";
pub use delta_rlc_protocol::actions::CHANGE_DATA_DIR;
pub const CDF_PROPERTY: &str =
    delta_rlc_protocol::table_properties::TableProperty::EnableChangeDataFeed.key();

/// Change rows a transaction buffers before writing them as change files.
pub const CHANGE_CHUNK_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Insert,
    Delete,
    UpdatePreimage,
    UpdatePostimage,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Insert => "insert",
            ChangeType::Delete => "delete",
            ChangeType::UpdatePreimage => "update_preimage",
            ChangeType::UpdatePostimage => "update_postimage",
        }
    }
}

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The reading rule's precondition for `actions` (a commit about to be written): on a table that
/// records change data, a commit that removes rows either carries change files, or only removes
/// whole files (read as deletes), or is an overwrite whose file actions are its changes.
pub fn check_commit(
    actions: &[Action],
    read_metadata: Option<&Metadata>,
    file_actions_are_changes: bool,
) -> Result<()> {
    let metadata = actions
        .iter()
        .find_map(|a| match a {
            Action::Metadata(m) => Some(m),
            _ => None,
        })
        .or(read_metadata);
    if !metadata.is_some_and(|m| is_true(m.configuration.get(CDF_PROPERTY))) {
        return Ok(());
    }
    let removes_rows = actions
        .iter()
        .any(|a| matches!(a, Action::Remove(r) if r.data_change));
    let adds_rows = actions
        .iter()
        .any(|a| matches!(a, Action::Add(a) if a.data_change));
    let has_cdc = actions.iter().any(|a| matches!(a, Action::Cdc(_)));
    if !removes_rows || has_cdc || !adds_rows || file_actions_are_changes {
        return Ok(());
    }
    Err(EngineError::Internal(
        "a commit that rewrites rows on a table with delta.enableChangeDataFeed = true carries no change data".into(),
    ))
}
