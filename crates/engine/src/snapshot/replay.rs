//! Action reconciliation: checkpoint first, then commits in version order. Last protocol and
//! metadata win; per appId the last txn; per domain the last domainMetadata (removed deletes it);
//! files keyed by (resolved path, DV unique id), the newest action wins.

use std::collections::BTreeMap;

use datafusion::common::HashMap;

use delta_rlc_protocol::actions::{Action, Add, DomainMetadata, Metadata, Protocol, Remove, Txn};
use delta_rlc_protocol::column_mapping::{self, ColumnMappingMode};
use delta_rlc_protocol::schema::StructType;
use delta_rlc_protocol::table_path::TableRoot;

use super::Snapshot;
use crate::error::{EngineError, Result};

type FileKey = (String, Option<String>);

pub struct ReplayState {
    root: TableRoot,
    protocol: Option<Protocol>,
    metadata: Option<Metadata>,
    files: HashMap<FileKey, Add>,
    tombstones: HashMap<FileKey, Remove>,
    txns: BTreeMap<String, Txn>,
    domains: BTreeMap<String, DomainMetadata>,
    last_timestamp_ms: i64,
}

impl ReplayState {
    pub fn new(root: TableRoot) -> Self {
        ReplayState {
            root,
            protocol: None,
            metadata: None,
            files: HashMap::new(),
            tombstones: HashMap::new(),
            txns: BTreeMap::new(),
            domains: BTreeMap::new(),
            last_timestamp_ms: 0,
        }
    }

    pub fn apply_checkpoint(&mut self, version: u64, actions: Vec<Action>) -> Result<()> {
        // A checkpoint is mostly adds: size the file map once instead of growing it step by step.
        self.files.reserve(actions.len());
        for a in actions {
            self.apply(a).map_err(|e| match e {
                EngineError::Protocol(p) if !e_is_corruption(&p) => EngineError::Protocol(p),
                other => EngineError::corrupt(format!("checkpoint {version}: {other}")),
            })?;
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
                check_sizes(&add.path, Some(add.size), add.deletion_vector.as_ref())?;
                add.path = self.root.resolve(&add.path)?;
                // Snapshot state is not a change: dataChange is false for reconciled files.
                add.data_change = false;
                let key = (
                    add.path.clone(),
                    add.deletion_vector.as_ref().map(|d| d.unique_id()),
                );
                if !self.tombstones.is_empty() {
                    self.tombstones.remove(&key);
                }
                self.files.insert(key, add);
            }
            Action::Remove(mut rm) => {
                check_sizes(&rm.path, rm.size, rm.deletion_vector.as_ref())?;
                rm.path = self.root.resolve(&rm.path)?;
                rm.data_change = false;
                let key = (
                    rm.path.clone(),
                    rm.deletion_vector.as_ref().map(|d| d.unique_id()),
                );
                self.files.remove(&key);
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

    pub fn finish(self, version: u64, checkpoint_version: Option<u64>) -> Result<Snapshot> {
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
        let files = sorted_by_path(self.files.into_values(), |a: &Add| &a.path);
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
        let tombstones = sorted_by_path(self.tombstones.into_values(), |r: &Remove| &r.path);
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
        })
    }
}

/// `items` ordered by path (stable). Sorts an index permutation and moves each item twice (into a
/// slot, out in order): sorting the actions themselves would move these large structs O(n log n)
/// times (measured: a quarter of a 100k-file snapshot load).
fn sorted_by_path<T>(items: impl Iterator<Item = T>, path: impl Fn(&T) -> &String) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.map(Some).collect();
    let key = |i: usize| slots.get(i).and_then(Option::as_ref).map(&path);
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by(|&a, &b| key(a).cmp(&key(b)));
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
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
    use super::sorted_by_path;

    #[test]
    fn sorted_by_path_is_a_stable_sort() {
        let items: Vec<(String, u32)> = ["b", "a", "c", "a", "b"]
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), i as u32))
            .collect();
        let mut want = items.clone();
        want.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(sorted_by_path(items.into_iter(), |x| &x.0), want);
        assert!(sorted_by_path(Vec::<(String, u32)>::new().into_iter(), |x| &x.0).is_empty());
    }
}
