//! The whole-commit checks after protocol and metadata: domain metadata both transactions set
//! (and clustering columns a schema-changing loser may have invalidated), and application ids
//! both recorded (`SetTransaction`: the duplicate that marker exists to stop).

use delta_rlc_protocol::actions::Action;

use super::checks::{conflict, CheckInput, LoserState};
use super::summary::WinningCommit;
use crate::conflict_error::ConflictKind;
use crate::error::Result;

/// Domain metadata the loser sets that a winner also set, and application ids both recorded.
pub(super) fn check(input: &CheckInput<'_>, state: &LoserState, w: &WinningCommit) -> Result<()> {
    // Clustering columns name schema columns: a loser that changes the schema (a rename, a
    // drop) never commits beside a winner that set them — it checked its change against the
    // clustering it read.
    let base_schema = &state
        .table_metadata
        .as_ref()
        .unwrap_or(&input.read_snapshot.metadata)
        .schema_string;
    let changes_schema = state
        .staged
        .iter()
        .any(|a| matches!(a, Action::Metadata(m) if &m.schema_string != base_schema));
    if changes_schema && w.domains.iter().any(|d| d.domain == "delta.clustering") {
        return Err(conflict(
            ConflictKind::ConcurrentDomainMetadata,
            w,
            vec![],
            Some(
                "domain delta.clustering names columns, and this transaction changes the schema"
                    .into(),
            ),
            None,
        ));
    }
    for a in &state.staged {
        if let Action::DomainMetadata(d) = a {
            if d.domain != "delta.rowTracking" && w.domains.iter().any(|x| x.domain == d.domain) {
                return Err(conflict(
                    ConflictKind::ConcurrentDomainMetadata,
                    w,
                    vec![],
                    Some(format!("domain {}", d.domain)),
                    None,
                ));
            }
        }
    }
    if let Some(t) = w
        .txns
        .iter()
        .find(|t| state.read_set.app_ids.contains(&t.app_id))
    {
        return Err(conflict(
            ConflictKind::ConcurrentTransaction,
            w,
            vec![],
            Some(format!("appId {}", t.app_id)),
            None,
        ));
    }
    Ok(())
}
