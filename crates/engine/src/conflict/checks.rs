//! The per-winner checks, in OSS order. Each failure is a typed conflict naming the winner.

use std::collections::BTreeSet;

use delta_rlc_protocol::actions::{Action, Add, Metadata, Protocol};

use super::config::{ConflictConfig, IsolationLevel};
use super::error::{ConflictError, ConflictKind};
use super::summary::WinningCommit;
use super::tiers::{append_tiers, AppendContext};
use super::Event;
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;
use crate::txn::read_set::ReadSet;

pub struct CheckInput<'a> {
    pub read_snapshot: &'a Snapshot,
    pub read_set: &'a ReadSet,
    /// The loser's staged actions (paths decoded, relative).
    pub staged: &'a [Action],
    pub is_blind_append: bool,
    pub isolation: IsolationLevel,
    pub config: &'a ConflictConfig,
}

#[derive(Debug, Default)]
pub struct CheckOutcome {
    /// Winner metadata the loser adopts (allow-listed configuration changes only).
    pub adopt_metadata: Option<Metadata>,
    /// Winner protocol the loser adopts (feature additions).
    pub adopt_protocol: Option<Protocol>,
    pub events: Vec<Event>,
}

fn conflict(
    kind: ConflictKind,
    w: &WinningCommit,
    files: Vec<String>,
    predicate: Option<String>,
    tier: Option<&str>,
) -> EngineError {
    EngineError::Conflict(Box::new(ConflictError {
        kind,
        winning_version: w.version,
        winning_operation: w.operation(),
        files,
        predicate,
        tier: tier.map(str::to_string),
    }))
}

/// Configuration keys a concurrent winner may change without conflicting with a data transaction.
fn allowed_config_change(key: &str, old: Option<&String>, new: &str) -> bool {
    match key {
        "delta.enableDeletionVectors"
        | "delta.enableRowTracking"
        | "delta.enableInCommitTimestamps" => new.eq_ignore_ascii_case("true"),
        "delta.rowTracking.materializedRowIdColumnName"
        | "delta.rowTracking.materializedRowCommitVersionColumnName"
        | "delta.inCommitTimestampEnablementVersion"
        | "delta.inCommitTimestampEnablementTimestamp" => old.is_none(),
        "delta.checkpointPolicy" => new == "v2",
        _ => false,
    }
}

pub fn check_winner(input: &CheckInput<'_>, w: &WinningCommit) -> Result<CheckOutcome> {
    let mut out = CheckOutcome::default();
    let ours_protocol = input
        .staged
        .iter()
        .any(|a| matches!(a, Action::Protocol(_)));
    let ours_metadata = input
        .staged
        .iter()
        .any(|a| matches!(a, Action::Metadata(_)));

    // 1. Protocol.
    if let Some(p) = &w.protocol {
        p.check_writable()?;
        if ours_protocol {
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
        out.adopt_protocol = Some(p.clone());
    }

    // 2. Metadata.
    if let Some(m) = &w.metadata {
        if ours_metadata {
            return Err(conflict(
                ConflictKind::MetadataChanged,
                w,
                vec![],
                None,
                None,
            ));
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
            return Err(conflict(
                ConflictKind::MetadataChanged,
                w,
                vec![],
                None,
                None,
            ));
        }
        out.adopt_metadata = Some(m.clone());
    }

    // 3. Domain metadata: the same non-row-tracking domain in both conflicts.
    for a in input.staged {
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

    // 4. Application transaction ids the loser read.
    if let Some(t) = w
        .txns
        .iter()
        .find(|t| input.read_set.app_ids.contains(&t.app_id))
    {
        return Err(conflict(
            ConflictKind::ConcurrentTransaction,
            w,
            vec![],
            Some(format!("appId {}", t.app_id)),
            None,
        ));
    }

    // 5. Append check.
    check_appends(input, w, ours_metadata, &mut out)?;

    // 6. Delete/read.
    let read_paths = input.read_set.file_paths();
    let hit: Vec<String> = w
        .removes
        .iter()
        .filter(|r| read_paths.contains(r.path.as_str()))
        .map(|r| r.path.clone())
        .collect();
    if !hit.is_empty() {
        return Err(conflict(
            ConflictKind::ConcurrentDeleteRead,
            w,
            hit,
            None,
            None,
        ));
    }
    if input.read_set.whole_table && !w.removes.is_empty() {
        let files = w.removes.iter().map(|r| r.path.clone()).collect();
        return Err(conflict(
            ConflictKind::ConcurrentDeleteRead,
            w,
            files,
            Some("whole table".into()),
            None,
        ));
    }

    // 7. Delete/delete.
    let ours: BTreeSet<&str> = input
        .staged
        .iter()
        .filter_map(|a| a.as_remove())
        .map(|r| r.path.as_str())
        .collect();
    let both: Vec<String> = w
        .removes
        .iter()
        .filter(|r| ours.contains(r.path.as_str()))
        .map(|r| r.path.clone())
        .collect();
    if !both.is_empty() {
        return Err(conflict(
            ConflictKind::ConcurrentDeleteDelete,
            w,
            both,
            None,
            None,
        ));
    }
    Ok(out)
}

fn check_appends(
    input: &CheckInput<'_>,
    w: &WinningCommit,
    ours_metadata: bool,
    out: &mut CheckOutcome,
) -> Result<()> {
    let candidates: Vec<&Add> = match input.isolation {
        IsolationLevel::SnapshotIsolation => return Ok(()),
        IsolationLevel::WriteSerializable if !ours_metadata => {
            if w.is_blind_append() {
                Vec::new()
            } else {
                w.adds.iter().collect()
            }
        }
        _ => w.adds.iter().collect(),
    };
    if candidates.is_empty() || input.is_blind_append {
        return Ok(());
    }
    if input.read_set.whole_table {
        let files = candidates.iter().map(|a| a.path.clone()).collect();
        return Err(conflict(
            ConflictKind::ConcurrentAppend,
            w,
            files,
            Some("whole table".into()),
            None,
        ));
    }
    let ctx = AppendContext {
        snapshot: input.read_snapshot,
        read_set: input.read_set,
        config: input.config,
        winner: w,
    };
    let tiers = append_tiers();
    for pred in &input.read_set.predicates {
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
            let cleared = tier.clear(&ctx, pred, &open);
            let before = open.len();
            open = open
                .into_iter()
                .zip(cleared)
                .filter(|(_, c)| !c)
                .map(|(a, _)| a)
                .collect();
            if open.len() < before && tier.switch().is_some() {
                out.events.push(Event::new(
                    "delta.conflictDetection.dataSkipping.filesSkipped",
                    serde_json::json!({"candidateFiles": before, "skippedFiles": before - open.len(), "tier": tier.name()}),
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
