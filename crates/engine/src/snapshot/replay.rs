//! Action reconciliation: checkpoint first, then commits in version order. Last protocol and
//! metadata win; per appId the last txn; per domain the last domainMetadata (removed deletes it);
//! files keyed by (resolved path, DV unique id), the newest action wins.
//!
//! A checkpoint is already reconciled (each file once), so its adds — the bulk of a large table —
//! are kept in a list rather than hashed; commits after it go to a map, and each key a commit adds
//! or removes shadows the checkpoint's entry. The result is the same as hashing every add.

use std::collections::BTreeMap;

use datafusion::common::HashMap;

use delta_rlc_protocol::actions::{Action, Add, DomainMetadata, Metadata, Protocol, Remove, Txn};
use delta_rlc_protocol::column_mapping::{self, ColumnMappingMode};
use delta_rlc_protocol::dv::DvDescriptor;
use delta_rlc_protocol::schema::StructType;
use delta_rlc_protocol::table_path::TableRoot;

use super::Snapshot;
use crate::error::{EngineError, Result};

type FileKey = (String, Option<String>);

pub struct ReplayState {
    root: TableRoot,
    protocol: Option<Protocol>,
    metadata: Option<Metadata>,
    /// The checkpoint's adds, in its order; entries whose key is in `shadowed` are dropped.
    checkpoint_files: Vec<Add>,
    /// Keys a commit after the checkpoint added or removed (newer than the checkpoint's entry).
    shadowed: std::collections::HashSet<FileKey>,
    /// Adds of commits after the checkpoint (and of the checkpoint's own duplicate keys).
    files: HashMap<FileKey, Add>,
    tombstones: HashMap<FileKey, Remove>,
    /// The previous snapshot's tombstones (ordered as `finish` orders them) when replaying onto
    /// it; entries whose key is in `tombstones_shadowed` are dropped. Kept as a list, not hashed:
    /// a table's tombstones grow by one per removed file, and re-hashing and re-sorting all of
    /// them on every snapshot update was most of a small update's cost.
    base_tombstones: Vec<Remove>,
    /// Keys a replayed commit added (revived) or removed again: newer than the base's entry.
    tombstones_shadowed: std::collections::HashSet<FileKey>,
    /// Applying the checkpoint (its adds go to `checkpoint_files`).
    in_checkpoint: bool,
    /// Keys the checkpoint lists as removed: none may also be one of its adds.
    checkpoint_removed: std::collections::HashSet<FileKey>,
    txns: BTreeMap<String, Txn>,
    domains: BTreeMap<String, DomainMetadata>,
    last_timestamp_ms: i64,
    writer_engines: std::collections::BTreeSet<String>,
}

impl ReplayState {
    pub fn new(root: TableRoot) -> Self {
        ReplayState {
            root,
            protocol: None,
            metadata: None,
            checkpoint_files: Vec::new(),
            shadowed: std::collections::HashSet::new(),
            files: HashMap::new(),
            tombstones: HashMap::new(),
            base_tombstones: Vec::new(),
            tombstones_shadowed: std::collections::HashSet::new(),
            in_checkpoint: false,
            checkpoint_removed: std::collections::HashSet::new(),
            txns: BTreeMap::new(),
            domains: BTreeMap::new(),
            last_timestamp_ms: 0,
            writer_engines: std::collections::BTreeSet::new(),
        }
    }

    /// The state `snapshot` was built from, as a starting point for replaying later commits: its
    /// live files play the checkpoint's part (reconciled, ordered).
    pub fn from_snapshot(snapshot: &Snapshot) -> Self {
        let mut state = ReplayState::new(snapshot.root.clone());
        state.protocol = Some(snapshot.protocol.clone());
        state.metadata = Some(snapshot.metadata.clone());
        // With room for the new commits' files, merged in place without growing (and so copying)
        // the list again.
        let mut files = Vec::with_capacity(snapshot.files.len() + snapshot.files.len() / 4 + 64);
        files.extend_from_slice(&snapshot.files);
        state.checkpoint_files = files;
        state.writer_engines = snapshot.writer_engines.clone();
        state.base_tombstones = snapshot.tombstones.clone();
        state.txns = snapshot.txns.clone();
        state.domains = snapshot.domains.clone();
        state.last_timestamp_ms = snapshot.timestamp_ms;
        state
    }

    pub fn apply_checkpoint(
        &mut self,
        version: u64,
        actions: super::checkpoint_read::CheckpointActions,
    ) -> Result<()> {
        let corrupt = |e: EngineError| match e {
            EngineError::Protocol(p) if !e_is_corruption(&p) => EngineError::Protocol(p),
            other => EngineError::corrupt(format!("checkpoint {version}: {other}")),
        };
        self.in_checkpoint = true;
        for a in actions.others {
            self.apply(a).map_err(corrupt)?;
        }
        self.in_checkpoint = false;
        // The adds, prepared in place (no move of these large structs).
        let mut adds = actions.adds;
        for add in &mut adds {
            check_sizes(&add.path, Some(add.size), add.deletion_vector.as_deref())
                .map_err(corrupt)?;
            add.path = self
                .root
                .resolve(&add.path)
                .map_err(|e| corrupt(e.into()))?;
            // Snapshot state is not a change: dataChange is false for reconciled files.
            add.data_change = false;
        }
        if self.checkpoint_files.is_empty() {
            self.checkpoint_files = adds;
        } else {
            self.checkpoint_files.extend(adds);
        }
        Ok(())
    }

    pub fn apply_commit(
        &mut self,
        version: u64,
        actions: Vec<Action>,
        mtime_ms: i64,
    ) -> Result<()> {
        let mut ts = None;
        for a in actions {
            if let Action::CommitInfo(ci) = &a {
                ts = ci.in_commit_timestamp.or(ci.timestamp);
                if let Some(engine) = ci.engine_info.as_deref().and_then(engine_name) {
                    if !self.writer_engines.contains(engine) {
                        self.writer_engines.insert(engine.to_string());
                    }
                }
            }
            self.apply(a).map_err(|e| match e {
                EngineError::Protocol(p) if e_is_corruption(&p) => {
                    EngineError::corrupt(format!("commit {version}: {p}"))
                }
                EngineError::Protocol(p) => EngineError::Protocol(p),
                other => other,
            })?;
        }
        self.last_timestamp_ms = ts.unwrap_or(mtime_ms);
        if version == 0 && self.metadata.is_none() {
            return Err(EngineError::corrupt("version 0 has no metaData action"));
        }
        Ok(())
    }

    fn apply(&mut self, action: Action) -> Result<()> {
        match action {
            Action::Protocol(p) => {
                p.check_readable()?;
                self.protocol = Some(p);
            }
            Action::Metadata(m) => self.metadata = Some(m),
            Action::Add(mut add) => {
                check_sizes(&add.path, Some(add.size), add.deletion_vector.as_deref())?;
                add.path = self.root.resolve(&add.path)?;
                // Snapshot state is not a change: dataChange is false for reconciled files.
                add.data_change = false;
                if self.in_checkpoint {
                    self.checkpoint_files.push(add);
                    return Ok(());
                }
                let key = (
                    add.path.clone(),
                    add.deletion_vector.as_ref().map(|d| d.unique_id()),
                );
                if !self.tombstones.is_empty() {
                    self.tombstones.remove(&key);
                }
                if !self.base_tombstones.is_empty() {
                    self.tombstones_shadowed.insert(key.clone());
                }
                if !self.checkpoint_files.is_empty() {
                    self.shadowed.insert(key.clone());
                }
                self.files.insert(key, add);
            }
            Action::Remove(mut rm) => {
                check_sizes(&rm.path, rm.size, rm.deletion_vector.as_deref())?;
                rm.path = self.root.resolve(&rm.path)?;
                rm.data_change = false;
                // A tombstone keeps what a checkpoint keeps of it (no stats, no tags): only VACUUM
                // and checkpoints read tombstones, and every snapshot update copies them.
                (rm.stats, rm.tags) = (None, None);
                let key = (
                    rm.path.clone(),
                    rm.deletion_vector.as_ref().map(|d| d.unique_id()),
                );
                self.files.remove(&key);
                if self.in_checkpoint {
                    self.checkpoint_removed.insert(key.clone());
                } else if !self.checkpoint_files.is_empty() {
                    self.shadowed.insert(key.clone());
                }
                if !self.base_tombstones.is_empty() {
                    self.tombstones_shadowed.insert(key.clone());
                }
                self.tombstones.insert(key, rm);
            }
            Action::Txn(t) => {
                self.txns.insert(t.app_id.clone(), t);
            }
            Action::DomainMetadata(d) => {
                if d.removed {
                    self.domains.remove(&d.domain);
                } else {
                    self.domains.insert(d.domain.clone(), d);
                }
            }
            Action::Cdc(_)
            | Action::CommitInfo(_)
            | Action::CheckpointMetadata(_)
            | Action::Sidecar(_)
            | Action::Unknown(..) => {}
        }
        Ok(())
    }

    /// The version's time when no replayed commit gave it (a load from a checkpoint alone).
    pub fn set_timestamp_ms(&mut self, ts: i64) {
        self.last_timestamp_ms = ts;
    }

    pub fn finish(mut self, version: u64, checkpoint_version: Option<u64>) -> Result<Snapshot> {
        let files = self.live_files()?;
        let protocol = self
            .protocol
            .ok_or_else(|| EngineError::corrupt("table has no protocol action"))?;
        protocol.check_readable()?;
        let metadata = self
            .metadata
            .ok_or_else(|| EngineError::corrupt("table has no metaData action"))?;
        let schema = StructType::parse(&metadata.schema_string)?;
        // Column mapping: a known mode, set only with the feature, and every column named.
        let mode = ColumnMappingMode::from_configuration(&metadata.configuration)?;
        if mode != ColumnMappingMode::None && !protocol.has_reader_feature("columnMapping") {
            return Err(EngineError::corrupt(
                "delta.columnMapping.mode is set but the protocol lacks the columnMapping feature",
            ));
        }
        column_mapping::validate(&schema, mode)?;
        // Type widening: every recorded change must be one this reader widens correctly.
        delta_rlc_protocol::type_widening::validate_type_changes(&schema)?;
        for w in files.windows(2) {
            if let [a, b] = w {
                if a.path == b.path {
                    return Err(EngineError::corrupt(format!(
                        "file {} is live twice with different deletion vectors",
                        a.path
                    )));
                }
            }
        }
        let later =
            super::path_order::sorted_by_path(self.tombstones.into_values(), |r: &Remove| &r.path);
        // The base's runs of equal paths are in DV order already (it is a finished snapshot's
        // list); only a run a later tombstone joins is sorted again.
        let later_paths: std::collections::HashSet<String> =
            later.iter().map(|r| r.path.clone()).collect();
        let mut tombstones = merge_by_path(
            std::mem::take(&mut self.base_tombstones),
            &self.tombstones_shadowed,
            later,
        );
        // Equal paths (a file's tombstones with different DVs) in DV order, so the order never
        // depends on the map's iteration order.
        for run in tombstones.chunk_by_mut(|a, b| a.path == b.path) {
            if run.len() > 1 && run.first().is_some_and(|r| later_paths.contains(&r.path)) {
                run.sort_by_cached_key(|r| r.deletion_vector.as_ref().map(|d| d.unique_id()));
            }
        }
        Ok(Snapshot {
            version,
            protocol,
            metadata,
            schema,
            files,
            tombstones,
            txns: self.txns,
            domains: self.domains,
            timestamp_ms: self.last_timestamp_ms,
            checkpoint_version,
            root: self.root,
            commit_hash: None,
            commit_file_id: None,
            writer_engines: self.writer_engines,
        })
    }
}

/// The engine's name in a commit's `engineInfo` ("Apache-Spark/3.5.1 Delta-Lake/3.2.0" →
/// "Apache-Spark"; "delta-rlc/0.1.0" → "delta-rlc"), at most 64 bytes.
fn engine_name(info: &str) -> Option<&str> {
    let name = info.split(['/', ' ']).next()?.trim();
    (!name.is_empty() && name.len() <= 64).then_some(name)
}

impl ReplayState {
    /// Live files ordered by path: the checkpoint's unshadowed adds (already in order when the
    /// checkpoint was written in order — checked, not assumed) merged with the later commits'.
    /// Within the checkpoint an exact key twice keeps the last, as hashing would.
    fn live_files(&mut self) -> Result<Vec<Add>> {
        let key_of = |a: &Add| {
            (
                a.path.clone(),
                a.deletion_vector.as_ref().map(|d| d.unique_id()),
            )
        };
        let shadowed = std::mem::take(&mut self.shadowed);
        let mut base: Vec<Add> = std::mem::take(&mut self.checkpoint_files);
        if !self.checkpoint_removed.is_empty() {
            let paths: std::collections::HashSet<&str> = self
                .checkpoint_removed
                .iter()
                .map(|k| k.0.as_str())
                .collect();
            if let Some(a) = base.iter().find(|a| {
                paths.contains(a.path.as_str()) && self.checkpoint_removed.contains(&key_of(a))
            }) {
                return Err(EngineError::corrupt(format!(
                    "the checkpoint lists {} as both live and removed",
                    a.path
                )));
            }
        }
        if !base.is_sorted_by(|a, b| a.path <= b.path) {
            super::path_order::sort_by_path_in_place(&mut base, |a: &Add| &a.path);
        }
        // Exact duplicates (same path and DV) inside the checkpoint: the last one wins.
        let has_duplicates = base.windows(2).any(|w| match w {
            [a, b] => a.path == b.path && key_of(a) == key_of(b),
            _ => false,
        });
        if has_duplicates {
            let mut deduped: Vec<Add> = Vec::with_capacity(base.len());
            for a in base {
                if let Some(prev) = deduped.last_mut() {
                    if prev.path == a.path && key_of(prev) == key_of(&a) {
                        *prev = a;
                        continue;
                    }
                }
                deduped.push(a);
            }
            base = deduped;
        }
        let later = super::path_order::sorted_by_path(
            std::mem::take(&mut self.files).into_values(),
            |a: &Add| &a.path,
        );
        if later.is_empty() && shadowed.is_empty() {
            return Ok(base);
        }
        // In place, so a large table's files are never held twice (a second list of a million
        // entries was most of the peak memory of a load): drop the shadowed checkpoint entries
        // (paths first, no allocation per entry; the full key only on a path match), then merge
        // the later commits' files in (stable: the checkpoint's entry first on equal paths).
        if !shadowed.is_empty() {
            let shadow = ShadowKeys::new(&shadowed);
            base.retain(|a| !shadow.contains(&a.path, a.deletion_vector.as_deref()));
        }
        super::path_order::merge_sorted_into(&mut base, later, |a: &Add| &a.path);
        Ok(base)
    }
}

/// `base` (ordered by path) without the entries whose key is in `shadowed`, merged with `later`
/// (ordered by path); on equal paths the base's entry comes first.
fn merge_by_path(
    mut base: Vec<Remove>,
    shadowed: &std::collections::HashSet<FileKey>,
    later: Vec<Remove>,
) -> Vec<Remove> {
    if !shadowed.is_empty() {
        let shadow = ShadowKeys::new(shadowed);
        base.retain(|r| !shadow.contains(&r.path, r.deletion_vector.as_deref()));
    }
    super::path_order::merge_sorted_into(&mut base, later, |r: &Remove| &r.path);
    base
}

/// A set of file keys looked up by an entry's path and DV without building the entry's key: a
/// file updated a thousand times has a thousand tombstones, all of them compared on every
/// snapshot update that touches the file.
struct ShadowKeys<'a> {
    by_path: HashMap<&'a str, Vec<Option<&'a str>>>,
}

impl<'a> ShadowKeys<'a> {
    fn new(keys: &'a std::collections::HashSet<FileKey>) -> Self {
        let mut by_path: HashMap<&str, Vec<Option<&str>>> = HashMap::new();
        for (path, dv) in keys {
            by_path
                .entry(path.as_str())
                .or_default()
                .push(dv.as_deref());
        }
        ShadowKeys { by_path }
    }

    fn contains(&self, path: &str, dv: Option<&DvDescriptor>) -> bool {
        self.by_path.get(path).is_some_and(|ids| {
            ids.iter().any(|id| match (id, dv) {
                (None, None) => true,
                (Some(id), Some(d)) => d.has_unique_id(id),
                _ => false,
            })
        })
    }
}

/// Unsupported features are not corruption: the table is fine, this engine cannot handle it.
fn e_is_corruption(p: &delta_rlc_protocol::ProtocolError) -> bool {
    use delta_rlc_protocol::ProtocolError as P;
    !matches!(
        p,
        P::UnsupportedReaderFeature(_)
            | P::UnsupportedWriterFeature(_)
            | P::UnsupportedProtocolVersion { .. }
    )
}

/// Sizes and counts in add/remove actions are never negative (arithmetic on them trusts that).
fn check_sizes(
    path: &str,
    size: Option<i64>,
    dv: Option<&delta_rlc_protocol::DvDescriptor>,
) -> Result<()> {
    if size.is_some_and(|s| s < 0) {
        return Err(EngineError::corrupt(format!(
            "{path}: negative size {size:?}"
        )));
    }
    if let Some(d) = dv {
        if d.cardinality < 0 || d.size_in_bytes < 0 {
            return Err(EngineError::corrupt(format!(
                "{path}: deletion vector with negative cardinality or size"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::checkpoint_read::CheckpointActions;
    use serde_json::json;

    fn action(v: serde_json::Value) -> Action {
        Action::from_json(v).unwrap().unwrap()
    }

    fn add(path: &str, size: i64, dv: Option<&str>) -> Action {
        let mut a = json!({"add": {"path": path, "partitionValues": {}, "size": size,
            "modificationTime": 0, "dataChange": true}});
        if let Some(d) = dv {
            a["add"]["deletionVector"] = json!({"storageType": "u", "pathOrInlineDv": d,
                "offset": 1, "sizeInBytes": 10, "cardinality": 1});
        }
        action(a)
    }

    fn remove(path: &str) -> Action {
        action(json!({"remove": {"path": path, "dataChange": true, "deletionTimestamp": 1}}))
    }

    fn header() -> Vec<Action> {
        vec![
            action(json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})),
            action(
                json!({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                "schemaString": "{\"type\":\"struct\",\"fields\":[]}", "partitionColumns": [],
                "configuration": {}}}),
            ),
        ]
    }

    fn split(actions: Vec<Action>) -> CheckpointActions {
        let mut c = CheckpointActions::default();
        for a in actions {
            match a {
                Action::Add(x) => c.adds.push(x),
                other => c.others.push(other),
            }
        }
        c
    }

    fn files(s: &Snapshot) -> Vec<(String, i64)> {
        s.files.iter().map(|a| (a.path.clone(), a.size)).collect()
    }

    /// The checkpoint's adds kept in a list (shadowed by later commits, merged in order) give
    /// exactly what hashing every action in order gives: unsorted checkpoints, exact duplicates
    /// (the last wins), later removes, re-adds and DV updates.
    #[test]
    fn checkpoint_list_equals_hashing_every_action() {
        let mut checkpoint = header();
        checkpoint.extend([
            add("c", 1, None),
            add("a", 2, None),
            add("e", 3, Some("dv1")),
            add("b", 4, None),
            add("a", 5, None),
        ]);
        let later = vec![
            remove("b"),
            add("d", 6, None),
            add("c", 7, None),
            action(
                json!({"remove": {"path": "e", "dataChange": true, "deletionVector":
                {"storageType": "u", "pathOrInlineDv": "dv1", "offset": 1, "sizeInBytes": 10,
                 "cardinality": 1}}}),
            ),
            add("e", 8, Some("dv2")),
            add("0", 9, None),
        ];
        let root = TableRoot::parse("memory://replay/t").unwrap();
        let mut fast = ReplayState::new(root.clone());
        fast.apply_checkpoint(1, split(checkpoint.clone())).unwrap();
        fast.apply_commit(2, later.clone(), 0).unwrap();
        let fast = fast.finish(2, Some(1)).unwrap();
        let mut reference = ReplayState::new(root);
        reference.apply_commit(1, checkpoint, 0).unwrap();
        reference.apply_commit(2, later, 0).unwrap();
        let reference = reference.finish(2, None).unwrap();
        assert_eq!(files(&fast), files(&reference));
        assert_eq!(
            files(&fast),
            vec![
                ("0".into(), 9),
                ("a".into(), 5),
                ("c".into(), 7),
                ("d".into(), 6),
                ("e".into(), 8)
            ]
        );
    }

    fn tombstones(s: &Snapshot) -> Vec<(String, Option<String>, Option<i64>)> {
        s.tombstones
            .iter()
            .map(|r| {
                (
                    r.path.clone(),
                    r.deletion_vector.as_ref().map(|d| d.unique_id()),
                    r.deletion_timestamp,
                )
            })
            .collect()
    }

    fn remove_at(path: &str, dv: Option<&str>, ts: i64) -> Action {
        let mut a = json!({"remove": {"path": path, "dataChange": true, "deletionTimestamp": ts}});
        if let Some(d) = dv {
            a["remove"]["deletionVector"] = json!({"storageType": "u", "pathOrInlineDv": d,
                "offset": 1, "sizeInBytes": 10, "cardinality": 1});
        }
        action(a)
    }

    /// Replaying commits onto a held snapshot (its tombstones kept as an ordered list, shadowed
    /// and merged) gives exactly the files and tombstones of a replay from scratch: a revived
    /// tombstone, a tombstone replaced by a newer remove of the same key, one with a second DV
    /// on the same path, and new ones before, between and after the held ones.
    #[test]
    fn replay_onto_a_snapshot_equals_a_full_replay() {
        let mut first = header();
        first.extend([
            add("b", 1, None),
            add("d", 2, Some("dv1")),
            add("f", 3, None),
            add("h", 4, None),
        ]);
        let second = vec![
            remove_at("b", None, 10),
            remove_at("d", Some("dv1"), 11),
            add("d", 5, Some("dv2")),
            remove_at("f", None, 12),
            remove_at("x", None, 13),
        ];
        let third = vec![
            add("b", 6, None),
            remove_at("f", None, 20),
            remove_at("d", Some("dv2"), 21),
            add("d", 7, Some("dv3")),
            remove_at("a", None, 22),
            remove_at("g", None, 23),
            remove_at("z", None, 24),
        ];
        let root = TableRoot::parse("memory://replay/t").unwrap();
        let mut held = ReplayState::new(root.clone());
        held.apply_commit(0, first.clone(), 0).unwrap();
        held.apply_commit(1, second.clone(), 0).unwrap();
        let held = held.finish(1, None).unwrap();
        assert_eq!(tombstones(&held).len(), 4);
        let mut onto = ReplayState::from_snapshot(&held);
        onto.apply_commit(2, third.clone(), 0).unwrap();
        let onto = onto.finish(2, None).unwrap();
        let mut reference = ReplayState::new(root);
        for (v, c) in [first, second, third].into_iter().enumerate() {
            reference.apply_commit(v as u64, c, 0).unwrap();
        }
        let reference = reference.finish(2, None).unwrap();
        assert_eq!(files(&onto), files(&reference));
        assert_eq!(tombstones(&onto), tombstones(&reference));
        assert_eq!(
            tombstones(&onto)
                .iter()
                .map(|(p, d, t)| (p.as_str(), d.is_some(), *t))
                .collect::<Vec<_>>(),
            vec![
                ("a", false, Some(22)),
                ("d", true, Some(11)),
                ("d", true, Some(21)),
                ("f", false, Some(20)),
                ("g", false, Some(23)),
                ("x", false, Some(13)),
                ("z", false, Some(24)),
            ]
        );
    }

    #[test]
    fn a_checkpoint_listing_a_file_live_and_removed_is_corrupt() {
        let mut checkpoint = header();
        checkpoint.extend([add("a", 1, None), remove("a")]);
        let mut r = ReplayState::new(TableRoot::parse("memory://replay/t").unwrap());
        r.apply_checkpoint(1, split(checkpoint)).unwrap();
        let err = r.finish(1, Some(1)).unwrap_err();
        assert!(err.to_string().contains("both live and removed"), "{err}");
    }
}
