//! The per-winner checks, in OSS order, with the reconcilers and tier chains in between.

use crate::conflict_config::Switch;
use std::collections::BTreeSet;

use delta_rlc_protocol::actions::{Action, Add, Metadata, Protocol, Remove};
use delta_rlc_storage::TableStore;

use super::abort_reason::{explain, reads_every_row, AbortFacts, Findings};
use super::metadata_change::{allowed_config_change, check_metadata_change};
use super::metadata_pair;
use super::reconcile::{reconcilers, ReconcileContext};
use super::summary::WinningCommit;
use super::tiers::{append_tiers, delete_read_tiers, TierContext};
use super::Event;
use crate::conflict_config::{ConflictConfig, IsolationLevel};
use crate::conflict_error::{AbortReason, ConflictError, ConflictKind};
use crate::error::{EngineError, Result};
use crate::read_set::{ReadPredicate, ReadSet};
use crate::snapshot::Snapshot;

/// Fixed facts about the losing transaction for the whole commit loop.
pub struct CheckInput<'a> {
    pub read_snapshot: &'a Snapshot,
    pub store: &'a TableStore,
    pub is_blind_append: bool,
    pub isolation: IsolationLevel,
    pub config: &'a ConflictConfig,
    pub env: &'a crate::env::Env,
}

/// What the loser looks like now; reconcilers rewrite it, the checks read it. It carries over from
/// one winning commit to the next.
#[derive(Debug, Clone)]
pub struct LoserState {
    pub read_set: ReadSet,
    /// Staged actions (paths decoded).
    pub staged: Vec<Action>,
    /// What reconcilers learned about the loser's own new files (immutable), kept across winners.
    pub own_files: std::sync::Arc<crate::conflict::reconcile::OwnFileCache>,
    /// Deletion vectors reconcilers read or wrote (immutable, by unique id), kept across winners.
    pub dvs: std::sync::Arc<crate::conflict::reconcile::DvCache>,
    /// The read snapshot under the newest schema a winner committed (None while no winner changed
    /// it): tiers and reconcilers read winners' files through it, so a value only a widened type
    /// holds is read as that type, never through the loser's older, narrower schema.
    pub table_view: Option<std::sync::Arc<Snapshot>>,
    /// The table's metadata as the last winner that changed it left it (None: the read
    /// snapshot's). A loser that changes metadata itself is rebased on each in turn.
    pub table_metadata: Option<Metadata>,
    /// The table's protocol as the last winner that changed it left it (None: the read
    /// snapshot's).
    pub table_protocol: Option<Protocol>,
    /// What the loser's ALTER names (None for any other statement: never re-applied).
    pub metadata_intent: Option<crate::metadata_intent::MetadataIntent>,
    /// The identity columns the loser generated values for, when every value it stages is a
    /// generated one (None otherwise: never re-based).
    pub identity_generated: Option<BTreeSet<String>>,
    /// Identity values to move before the next attempt (`identity_rebase`), by column.
    pub identity_shifts: std::collections::BTreeMap<String, super::identity_rebase::Shift>,
    /// Files reconcilers write (merged DVs), uploading while later winners are checked; the
    /// commit waits for them before each attempt's put (their bytes serve this statement's reads
    /// meanwhile).
    pub uploads: delta_rlc_storage::PendingUploads,
}

impl LoserState {
    /// The snapshot the checks read and evaluate through: the read snapshot, under the newest
    /// schema a winner committed.
    pub fn view<'a>(&'a self, read_snapshot: &'a Snapshot) -> &'a Snapshot {
        self.table_view.as_deref().unwrap_or(read_snapshot)
    }
}

#[derive(Debug, Default)]
pub struct CheckOutcome {
    /// Winner metadata the loser adopts (allow-listed configuration changes only).
    pub adopt_metadata: Option<Metadata>,
    /// Winner protocol the loser adopts (feature additions).
    pub adopt_protocol: Option<Protocol>,
    /// The loser's own metadata, re-applied on the winner's (`metadata_pair`).
    pub rebased_metadata: Option<Metadata>,
    /// The loser's own protocol, re-applied on the winner's (`metadata_pair`).
    pub rebased_protocol: Option<Protocol>,
    /// How far the loser's identity values move past this winner's (`identity_rebase`).
    pub identity_shifts: std::collections::BTreeMap<String, super::identity_rebase::Shift>,
    pub events: Vec<Event>,
}

pub(super) fn conflict(
    kind: ConflictKind,
    w: &WinningCommit,
    files: Vec<String>,
    predicate: Option<String>,
    tier: Option<&str>,
) -> EngineError {
    EngineError::Conflict(Box::new(ConflictError {
        kind,
        reason: AbortReason::of_kind(kind),
        winning_version: w.version,
        winning_operation: w.operation(),
        files,
        predicate,
        tier: tier.map(str::to_string),
        reconcile_failures: Vec::new(),
        statement_runs: 1,
    }))
}

async fn check_whole_commit(
    input: &CheckInput<'_>,
    state: &LoserState,
    w: &WinningCommit,
    out: &mut CheckOutcome,
) -> Result<()> {
    let ours_protocol = state
        .staged
        .iter()
        .any(|a| matches!(a, Action::Protocol(_)));
    let ours_metadata = state
        .staged
        .iter()
        .any(|a| matches!(a, Action::Metadata(_)));
    // A loser that changes only the table's metadata may be re-applied on a winner's change.
    let pair = input.config.enabled(Switch::MetadataPair)
        && state.metadata_intent.is_some()
        && state.staged.iter().all(|a| {
            matches!(
                a,
                Action::Metadata(_) | Action::Protocol(_) | Action::CommitInfo(_)
            )
        });
    super::row_tracking_change::check(input, state, w)?;
    super::vacuum_restore::check(state, w)?;
    if let Some(p) = &w.protocol {
        p.check_writable()?;
        if ours_protocol && !pair {
            return Err(conflict(
                ConflictKind::ProtocolChanged,
                w,
                vec![],
                None,
                None,
            ));
        }
        let read = &input.read_snapshot.protocol;
        let new_features = p.writer_feature_set();
        let dropped = read
            .writer_feature_set()
            .into_iter()
            .any(|f| !new_features.contains(&f))
            || p.min_writer_version < read.min_writer_version
            || p.min_reader_version < read.min_reader_version;
        if dropped {
            return Err(conflict(
                ConflictKind::ProtocolChanged,
                w,
                vec![],
                None,
                None,
            ));
        }
        if ours_protocol {
            let base = state.table_protocol.as_ref().unwrap_or(read);
            let ours = state.staged.iter().find_map(|a| match a {
                Action::Protocol(p) => Some(p),
                _ => None,
            });
            let rebased = ours
                .ok_or_else(|| "no protocol action".to_string())
                .and_then(|ours| {
                    let intent = state.metadata_intent.clone().unwrap_or_default();
                    metadata_pair::rebase_protocol(base, p, ours, &intent)
                });
            match rebased {
                Ok(merged) => out.rebased_protocol = Some(merged),
                Err(reason) => {
                    return Err(conflict(
                        ConflictKind::ProtocolChanged,
                        w,
                        vec![],
                        Some(format!("both transactions change the protocol: {reason}")),
                        Some("metadataPair"),
                    ))
                }
            }
        }
        out.adopt_protocol = Some(p.clone());
    }
    if let Some(m) = &w.metadata {
        // A loser whose own metadata is identity marks it generated is checked as a data
        // transaction, then re-based (`identity_rebase`).
        let identity = super::identity_rebase::applies(input, state);
        if ours_metadata && identity.is_err() {
            let abort = |reason: String| {
                conflict(
                    ConflictKind::MetadataChanged,
                    w,
                    vec![],
                    Some(format!(
                        "both transactions change the table's metadata{reason}"
                    )),
                    pair.then_some("metadataPair"),
                )
            };
            if !pair {
                return Err(abort(identity.err().flatten().unwrap_or_default()));
            }
            let base = state
                .table_metadata
                .as_ref()
                .unwrap_or(&input.read_snapshot.metadata);
            let ours = state
                .staged
                .iter()
                .find_map(Action::as_metadata)
                .ok_or_else(|| abort(": no metadata action".into()))?;
            let intent = state.metadata_intent.clone().unwrap_or_default();
            let rebased = metadata_pair::rebase_metadata(base, m, ours, &intent)
                .map_err(|reason| abort(format!(": {reason}")))?;
            out.events.push(Event::new(
                crate::events::EventName::MetadataRebased,
                serde_json::json!({
                    "winningVersion": w.version,
                    "winningOperation": w.operation(),
                    "keys": rebased.keys,
                    "columns": rebased.columns,
                }),
            ));
            out.rebased_metadata = rebased.metadata;
            out.adopt_metadata = Some(m.clone());
            return super::domains::check(input, state, w);
        }
        let old = &input.read_snapshot.metadata;
        let same_shape = m.schema_string == old.schema_string
            && m.partition_columns == old.partition_columns
            && m.id == old.id;
        let removed = old
            .configuration
            .keys()
            .any(|k| !m.configuration.contains_key(k));
        let changes_ok = m
            .configuration
            .iter()
            .filter(|(k, v)| old.configuration.get(*k) != Some(*v))
            .all(|(k, v)| allowed_config_change(k, old.configuration.get(k), v));
        if !(same_shape && !removed && changes_ok) {
            check_metadata_change(input, state, w, m, out).await?;
        }
        if ours_metadata {
            super::identity_rebase::check(input, state, w, m, out)?;
        }
        out.adopt_metadata = Some(m.clone());
    }
    super::domains::check(input, state, w)
}

/// Runs every check of one winning commit against the loser, letting reconcilers rewrite the loser.
pub async fn check_winner(
    input: &CheckInput<'_>,
    state: &mut LoserState,
    w: &WinningCommit,
) -> Result<CheckOutcome> {
    let mut out = CheckOutcome::default();
    check_whole_commit(input, state, w, &mut out).await?;
    for a in state.staged.iter_mut() {
        match a {
            Action::Metadata(m) => {
                if let Some(r) = out.rebased_metadata.take() {
                    *m = r;
                }
            }
            Action::Protocol(p) => {
                if let Some(r) = out.rebased_protocol.take() {
                    *p = r;
                }
            }
            _ => {}
        }
    }
    super::identity_rebase::accumulate(
        &mut state.identity_shifts,
        std::mem::take(&mut out.identity_shifts),
    )
    .map_err(|reason| {
        conflict(
            ConflictKind::MetadataChanged,
            w,
            vec![],
            Some(reason),
            Some("identityRebase"),
        )
    })?;
    if let Some(p) = &w.protocol {
        state.table_protocol = Some(p.clone());
    }
    if let Some(m) = &w.metadata {
        state.table_metadata = Some(m.clone());
        // Accepted: from here on the winners' files are read under the winner's schema.
        if m.schema_string != state.view(input.read_snapshot).metadata.schema_string {
            let view = input.read_snapshot.with_metadata(m).map_err(|e| {
                conflict(
                    ConflictKind::MetadataChanged,
                    w,
                    vec![],
                    Some(format!("cannot read the new schema: {e}")),
                    Some("metadataChange"),
                )
            })?;
            state.table_view = Some(std::sync::Arc::new(view));
        }
    }

    // Reconcilers: each proposes a rewrite of the loser (with the paths it settles) or declines;
    // the checker applies a rewrite whole. A failed reconciler is a decline, logged and named in
    // the abort message should the checks below abort.
    let mut resolved: BTreeSet<String> = BTreeSet::new();
    let mut failures: Vec<String> = Vec::new();
    let findings = Findings::default();
    for r in reconcilers() {
        if !input.config.enabled(r.switch()) {
            continue;
        }
        let ctx = ReconcileContext {
            snapshot: state.view(input.read_snapshot),
            store: input.store,
            config: input.config,
            env: input.env,
            winner: w,
            resolved: &resolved,
            findings: &findings,
            uploads: &state.uploads,
        };
        match r.reconcile(&ctx, state).await {
            // Rows the loser depends on without changing them, on a path this reconciler cannot
            // vouch for: the standard checks judge it.
            // That includes a winner that removed such a path while the rewrite settles others (a
            // compaction whose output holds both kept rows and the loser's moved changes).
            Ok(Some(rewrite))
                if !r.keeps_read_rows()
                    && rewrite
                        .settled
                        .iter()
                        .chain(w.removes.iter().map(|x| &x.path))
                        .any(|p| state.read_set.kept_rows.contains_key(p)) =>
            {
                tracing::trace!(
                    reconciler = r.name(),
                    winner = w.version,
                    "kept rows; declined"
                );
            }
            Ok(Some(rewrite)) => {
                let (settled, event) = super::reconcile::apply(state, rewrite);
                resolved.extend(settled);
                out.events.push(event);
            }
            Ok(None) => {
                tracing::trace!(reconciler = r.name(), winner = w.version, "declined");
            }
            Err(e) => {
                tracing::debug!(reconciler = r.name(), winner = w.version, reason = %e, "failed; declined");
                failures.push(format!(
                    "{}: {}",
                    r.name(),
                    crate::error::one_line(&e.to_string())
                ));
            }
        }
    }
    // A file-level abort names its reason (`abort_reason`) and the reconcilers that failed.
    let every_row = reads_every_row(&state.read_set);
    let annotate = |e: EngineError| {
        let facts = AbortFacts {
            findings: &findings,
            reads_every_row: every_row,
            winner_adds: w.adds.iter().map(|a| (a.path.as_str(), a)).collect(),
            config: input.config,
            reconcile_failed: !failures.is_empty(),
        };
        match explain(e, &facts) {
            EngineError::Conflict(mut c) if !failures.is_empty() => {
                c.reconcile_failures = failures.clone();
                EngineError::Conflict(c)
            }
            other => other,
        }
    };

    // A staged metadata action equal to the read snapshot's (RESTORE to a version with the same
    // metadata) changes nothing a blind append must be checked against.
    let ours_metadata = state
        .staged
        .iter()
        .any(|a| matches!(a, Action::Metadata(m) if *m != input.read_snapshot.metadata));
    check_appends(
        input,
        state,
        w,
        ours_metadata,
        &resolved,
        &findings,
        &mut out,
    )
    .await
    .map_err(annotate)?;
    check_delete_read(input, state, w, &resolved, &findings, &mut out)
        .await
        .map_err(annotate)?;

    let ours: BTreeSet<&str> = state
        .staged
        .iter()
        .filter_map(|a| a.as_remove())
        .map(|r| r.path.as_str())
        .collect();
    let both: Vec<String> = w
        .removes
        .iter()
        .filter(|r| ours.contains(r.path.as_str()) && !resolved.contains(&r.path))
        .map(|r| r.path.clone())
        .collect();
    if !both.is_empty() {
        return Err(annotate(conflict(
            ConflictKind::ConcurrentDeleteDelete,
            w,
            both,
            None,
            None,
        )));
    }
    Ok(out)
}

async fn check_appends(
    input: &CheckInput<'_>,
    state: &LoserState,
    w: &WinningCommit,
    ours_metadata: bool,
    resolved: &BTreeSet<String>,
    findings: &Findings,
    out: &mut CheckOutcome,
) -> Result<()> {
    let all: Vec<&Add> = w
        .adds
        .iter()
        .filter(|a| !resolved.contains(&a.path))
        .collect();
    let candidates: Vec<&Add> = match input.isolation {
        IsolationLevel::SnapshotIsolation => return Ok(()),
        IsolationLevel::WriteSerializable if !ours_metadata && w.is_blind_append() => Vec::new(),
        _ => all,
    };
    if candidates.is_empty() || input.is_blind_append {
        return Ok(());
    }
    #[cfg(feature = "unsound-for-testing")]
    if input.config.unsound_for_testing {
        return Ok(());
    }
    let ctx = tier_context(input, state, w, findings);
    let tiers = append_tiers();
    if state.read_set.whole_table {
        // Only proofs that a file holds no new rows at all apply to a whole-table read.
        let everything = ReadPredicate {
            partition: None,
            data: None,
            text: "whole table".into(),
            exact_keys: None,
        };
        let mut open = candidates.clone();
        let mut last_tier = None;
        for tier in tiers.iter().filter(|t| t.predicate_independent()) {
            if open.is_empty() {
                break;
            }
            if tier.switch().is_some_and(|sw| !input.config.enabled(sw)) {
                continue;
            }
            last_tier = Some(tier.name());
            let cleared = tier.clear(&ctx, &everything, &open).await;
            open = keep_uncleared(open, &cleared);
        }
        if !open.is_empty() {
            let files = open.iter().map(|a| a.path.clone()).collect();
            return Err(conflict(
                ConflictKind::ConcurrentAppend,
                w,
                files,
                Some("whole table".into()),
                last_tier,
            ));
        }
        return Ok(());
    }
    for pred in &state.read_set.predicates {
        let mut open: Vec<&Add> = candidates.clone();
        let mut last_tier: Option<&str> = None;
        for tier in &tiers {
            if open.is_empty() {
                break;
            }
            if let Some(sw) = tier.switch() {
                if !input.config.enabled(sw) {
                    continue;
                }
            }
            last_tier = Some(tier.name());
            let cleared = tier.clear(&ctx, pred, &open).await;
            let before = open.len();
            open = keep_uncleared(open, &cleared);
            if open.len() < before && tier.switch().is_some() {
                out.events.push(Event::new(
                    crate::events::EventName::DataSkippingFilesSkipped,
                    serde_json::json!({"candidateFiles": before, "skippedFiles": before - open.len(), "tier": tier.name(), "winningCommitVersion": w.version}),
                ));
            }
        }
        if !open.is_empty() {
            let files = open.iter().map(|a| a.path.clone()).collect();
            return Err(conflict(
                ConflictKind::ConcurrentAppend,
                w,
                files,
                Some(pred.text.clone()),
                last_tier,
            ));
        }
    }
    Ok(())
}

async fn check_delete_read(
    input: &CheckInput<'_>,
    state: &mut LoserState,
    w: &WinningCommit,
    resolved: &BTreeSet<String>,
    findings: &Findings,
    out: &mut CheckOutcome,
) -> Result<()> {
    let read_paths: BTreeSet<String> = state
        .read_set
        .file_paths()
        .into_iter()
        .map(str::to_string)
        .collect();
    let removes: Vec<&Remove> = w
        .removes
        .iter()
        .filter(|r| !resolved.contains(&r.path))
        .collect();
    let mut hits: Vec<&Remove> = removes
        .iter()
        .copied()
        .filter(|r| read_paths.contains(&r.path))
        .collect();
    if state.read_set.whole_table && !removes.is_empty() {
        // Whole-table readers are never refined, except by reconcilers (resolved paths) and by the
        // relocation tier (dataChange=false moves no rows).
        let ctx = tier_context(input, state, w, findings);
        let mut open = removes.clone();
        for t in delete_read_tiers()
            .into_iter()
            .filter(|t| t.refines_whole_table_reads() && input.config.enabled(t.switch()))
        {
            let cleared = t.clear(&ctx, &open).await;
            open = keep_uncleared(open, &cleared);
        }
        if !open.is_empty() {
            let files = open.iter().map(|r| r.path.clone()).collect();
            return Err(conflict(
                ConflictKind::ConcurrentDeleteRead,
                w,
                files,
                Some("whole table".into()),
                None,
            ));
        }
        inherit_read_interest(state, w);
        return Ok(());
    }
    if hits.is_empty() {
        return Ok(());
    }
    let mut last_tier: Option<&str> = None;
    let mut relocated = false;
    {
        let ctx = tier_context(input, state, w, findings);
        for tier in delete_read_tiers() {
            if hits.is_empty() {
                break;
            }
            if !input.config.enabled(tier.switch()) {
                continue;
            }
            last_tier = Some(tier.name());
            let cleared = tier.clear(&ctx, &hits).await;
            let before = hits.len();
            hits = keep_uncleared(hits, &cleared);
            if hits.len() < before {
                if tier.switch() == Switch::Relocation {
                    relocated = true;
                }
                out.events.push(Event::new(
                    crate::events::EventName::DeleteReadFilesSkipped,
                    serde_json::json!({"candidateFiles": before, "skippedFiles": before - hits.len(), "tier": tier.name(), "winningCommitVersion": w.version}),
                ));
            }
        }
    }
    if !hits.is_empty() {
        let files = hits.iter().map(|r| r.path.clone()).collect();
        let preds: Vec<&str> = state
            .read_set
            .predicates
            .iter()
            .map(|p| p.text.as_str())
            .collect();
        return Err(conflict(
            ConflictKind::ConcurrentDeleteRead,
            w,
            files,
            (!preds.is_empty()).then(|| preds.join(" OR ")),
            last_tier,
        ));
    }
    if relocated {
        inherit_read_interest(state, w);
    }
    Ok(())
}

/// Case 3's transitive hazard: rows the loser read now live in the relocation outputs, so a later
/// winner that deletes from those outputs must still be seen by the delete/read check.
fn inherit_read_interest(state: &mut LoserState, w: &WinningCommit) {
    for a in &w.adds {
        if !a.data_change {
            state
                .read_set
                .read_file(&a.path, a.deletion_vector.as_ref().map(|d| d.unique_id()));
        }
    }
}

/// The tiers' view of one winner against the loser's state.
fn tier_context<'a>(
    input: &'a CheckInput<'a>,
    state: &'a LoserState,
    w: &'a WinningCommit,
    findings: &'a Findings,
) -> TierContext<'a> {
    TierContext::new(
        state.view(input.read_snapshot),
        input.store,
        &state.read_set,
        &state.staged,
        input.config,
        w,
        findings,
    )
}

/// The items no tier cleared. A missing verdict (a tier returning too few) counts as "not cleared":
/// a tier bug can only add aborts, never hide a conflict.
fn keep_uncleared<T>(items: Vec<T>, cleared: &[bool]) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| cleared.get(*i) != Some(&true))
        .map(|(_, x)| x)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::keep_uncleared;

    #[test]
    fn a_missing_verdict_keeps_the_file() {
        assert_eq!(
            keep_uncleared(vec!["a", "b", "c"], &[true, false]),
            vec!["b", "c"]
        );
        assert_eq!(keep_uncleared(vec!["a"], &[]), vec!["a"]);
    }
}
