//! Snapshots: the reconciled state of a table at one version.
//!
//! Invariants:
//! - Files are keyed by (decoded path, DV unique id); adds are live files, removes are tombstones; the
//!   two key sets are disjoint.
//! - Every path is resolved under the table root when the snapshot is built; a path that escapes the
//!   root fails the load.
//! - A torn or unparsable commit fails the load with its version; it is never skipped.
//! - The protocol is checked for readability before any file is used.

pub mod as_of;
mod checkpoint_adds;
mod checkpoint_read;
pub mod history;
mod own_commit;
mod path_order;
pub mod probe;
mod replay;
mod segment;

use delta_rlc_protocol::column_mapping::{self, ColumnMappingMode};
use delta_rlc_protocol::table_properties::TableProperty;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::Arc;

use delta_rlc_protocol::actions::{Add, DomainMetadata, Metadata, Protocol, Remove, Txn};
use delta_rlc_protocol::schema::StructType;
use delta_rlc_protocol::table_path::TableRoot;
use delta_rlc_storage::TableStore;

pub use checkpoint_read::parquet_to_actions;
pub use replay::ReplayState;
pub use segment::{
    build_segment, last_checkpoint_hint, list_log, segment_after, CheckpointFiles, LogSegment,
};

use crate::error::{EngineError, Result};

fn commit_path(version: u64) -> String {
    format!(
        "{}/{}",
        delta_rlc_protocol::log_path::LOG_DIR,
        delta_rlc_protocol::log_path::commit_file_name(version)
    )
}

/// Identifies a commit file's content (the base check of an incremental load).
fn commit_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// How many times a listing with a version gap is taken again before the gap is reported.
const GAP_RELISTS: u32 = 3;

/// The state of a table at one version. Immutable; share with `Arc`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub version: u64,
    pub protocol: Protocol,
    pub metadata: Metadata,
    pub schema: StructType,
    /// Live files, sorted by path.
    pub files: Vec<Add>,
    pub tombstones: Vec<Remove>,
    pub txns: BTreeMap<String, Txn>,
    pub domains: BTreeMap<String, DomainMetadata>,
    /// In-commit timestamp, else commitInfo.timestamp, else the commit file's modification time.
    pub timestamp_ms: i64,
    pub checkpoint_version: Option<u64>,
    pub root: TableRoot,
    /// A hash of the commit file of `version` as read when this snapshot was loaded (None when no
    /// commit file was read for it): an incremental update checks that the file is still the one
    /// this state was built from (a table deleted and re-created in place is not).
    pub commit_hash: Option<u64>,
    /// The listed identity (size and e-tag) of the commit file of `version` when this snapshot was
    /// loaded: an incremental update compares it with a new listing instead of reading the file.
    pub commit_file_id: Option<String>,
    /// Engines (the first word of `engineInfo`) whose commits were replayed into this snapshot —
    /// the JSON commits after the checkpoint, and those of any snapshot it was updated from.
    pub writer_engines: std::collections::BTreeSet<String>,
}

impl Snapshot {
    /// Loads `version` (None = latest).
    pub async fn load(store: &TableStore, version: Option<u64>) -> Result<Arc<Snapshot>> {
        let start = match version {
            None => segment::last_checkpoint_hint(store).await?,
            Some(_) => None,
        };
        let segment = Snapshot::segment_for(store, version, start).await?;
        Snapshot::from_segment(store, &segment).await
    }

    /// The log segment of `version` (None = latest). With `start` (a checkpoint version known or
    /// hinted), first from a listing of only the log after it (`segment::segment_after`, which
    /// accepts it only when it gives exactly what a whole listing would).
    async fn segment_for(
        store: &TableStore,
        version: Option<u64>,
        start: Option<u64>,
    ) -> Result<LogSegment> {
        if let Some(start) = start {
            if let Some(s) = segment::segment_after(store, start, version).await? {
                return Ok(s);
            }
        }
        // A directory listing is not a snapshot of the directory: on a local filesystem an entry
        // created while the listing runs can be missed while a later one is seen (readdir walks
        // hash order). So a gap is listed again before it is believed; a real gap persists.
        let mut relists = 0;
        loop {
            let listing = segment::list_log(store).await?;
            match segment::build_segment(&listing, version) {
                Ok(s) => return Ok(s),
                Err(EngineError::Corrupt(_)) if relists < GAP_RELISTS => relists += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Loads `version` (None = latest) reusing `previous`, a snapshot of the same table: when
    /// the listing shows every commit from `previous.version` to the target and
    /// `previous.version`'s commit file is still the one it was built from (same listed
    /// identity), the new commits are replayed onto `previous`'s state — a reconciled state,
    /// exactly what a checkpoint holds — instead of reading the checkpoint and every commit
    /// again, also across a newer checkpoint. Otherwise (an older target, a replaced table, an
    /// older checkpoint, a commit not listed, any doubt) a full load. Both give the same files,
    /// metadata and protocol (`tests`: incremental equals full); see `after_segment` for the
    /// tombstones a newer checkpoint may have expired.
    pub async fn load_after(
        store: &TableStore,
        previous: &Arc<Snapshot>,
        version: Option<u64>,
    ) -> Result<Arc<Snapshot>> {
        let segment = Snapshot::segment_for(store, version, previous.checkpoint_version).await?;
        Snapshot::after_segment(store, previous, segment).await
    }

    /// The latest snapshot, or None when the log has no commit, from one listing (plus the
    /// relists a gap needs): an existence check and a load in one, replayed onto `previous` when
    /// [`Snapshot::load_after`] would.
    pub async fn load_latest_if_exists(
        store: &TableStore,
        previous: Option<&Arc<Snapshot>>,
    ) -> Result<Option<Arc<Snapshot>>> {
        let start = match previous {
            Some(p) => p.checkpoint_version,
            None => segment::last_checkpoint_hint(store).await?,
        };
        if let Some(start) = start {
            if let Some(s) = segment::segment_after(store, start, None).await? {
                return Ok(Some(match previous {
                    Some(p) => Snapshot::after_segment(store, p, s).await?,
                    None => Snapshot::from_segment(store, &s).await?,
                }));
            }
        }
        let mut relists = 0;
        let segment = loop {
            let listing = segment::list_log(store).await?;
            if !listing
                .iter()
                .any(|o| o.path.ends_with(".json") || o.path.contains(".checkpoint"))
            {
                return Ok(None);
            }
            match segment::build_segment(&listing, None) {
                Ok(s) => break s,
                Err(EngineError::Corrupt(_)) if relists < GAP_RELISTS => relists += 1,
                Err(e) => return Err(e),
            }
        };
        Ok(Some(match previous {
            Some(p) => Snapshot::after_segment(store, p, segment).await?,
            None => Snapshot::from_segment(store, &segment).await?,
        }))
    }

    /// `segment` (of the same table as `previous`) loaded, replaying only its commits after
    /// `previous` when that is sound (see [`Snapshot::load_after`]).
    async fn after_segment(
        store: &TableStore,
        previous: &Arc<Snapshot>,
        segment: LogSegment,
    ) -> Result<Arc<Snapshot>> {
        Ok(Snapshot::after_segment_replayed(store, previous, segment)
            .await?
            .0)
    }

    /// [`Snapshot::load_after`], and whether the result was built on `previous` (its commits
    /// replayed onto it) rather than loaded afresh (a re-created table, an older checkpoint, a gap).
    pub async fn load_after_replayed(
        store: &TableStore,
        previous: &Arc<Snapshot>,
        version: Option<u64>,
    ) -> Result<(Arc<Snapshot>, bool)> {
        let segment = Snapshot::segment_for(store, version, previous.checkpoint_version).await?;
        Snapshot::after_segment_replayed(store, previous, segment).await
    }

    async fn after_segment_replayed(
        store: &TableStore,
        previous: &Arc<Snapshot>,
        segment: LogSegment,
    ) -> Result<(Arc<Snapshot>, bool)> {
        // The base commit file is still the one `previous` was built from: the listing shows the
        // same object (size and e-tag), or, where the store gives no e-tag, its bytes hash alike.
        let listed_id = segment.commit_ids.get(&previous.version);
        let same_base = match (&previous.commit_file_id, listed_id, previous.commit_hash) {
            (Some(was), Some(now), _) if was == now => true,
            // A store whose listing shows another tag than its put gave: compare the bytes.
            (Some(_), Some(_), None) => false,
            (_, _, Some(h)) => store
                .get(&commit_path(previous.version))
                .await
                .is_ok_and(|bytes| commit_hash(&bytes) == h),
            _ => false,
        };
        // A checkpoint newer than `previous`'s holds the state of the commits up to it, which is
        // `previous` plus the commits after it: those are replayed too, read from the listing
        // (`earlier_commits` holds the ones at or below the checkpoint). The one difference from a
        // full load: a checkpoint may leave out tombstones (and app transactions) past its writer's
        // retention, which the replayed state keeps. Both only protect: VACUUM keeps a tombstoned
        // file until its own cutoff, a checkpoint written from this snapshot applies the retention
        // again, and a kept app transaction only makes a duplicate write be recognized. An older
        // checkpoint than `previous`'s (its checkpoint deleted, a time-travel target): full load.
        let checkpoint = segment.checkpoint.as_ref().map(|c| c.0);
        if !same_base
            || checkpoint < previous.checkpoint_version
            || segment.version < previous.version
        {
            return Ok((Snapshot::from_segment(store, &segment).await?, false));
        }
        if segment.version == previous.version && checkpoint == previous.checkpoint_version {
            return Ok((Arc::clone(previous), true));
        }
        let newer: Vec<&(u64, String, i64)> = segment
            .earlier_commits
            .iter()
            .chain(&segment.commits)
            .filter(|(v, _, _)| *v > previous.version)
            .collect();
        let contiguous = newer
            .iter()
            .zip(previous.version + 1..)
            .all(|((v, _, _), want)| *v == want)
            && newer.last().map_or(previous.version, |(v, _, _)| *v) == segment.version;
        if !contiguous {
            return Ok((Snapshot::from_segment(store, &segment).await?, false));
        }
        let mut state = ReplayState::from_snapshot(previous);
        let mut last = None;
        let mut fetched = fetch_commits(store, newer.into_iter());
        while let Some(commit) = fetched.next().await {
            let ((v, _, mtime), bytes) = commit?;
            last = Some(commit_hash(&bytes));
            let actions = delta_rlc_protocol::actions::parse_commit(v, &bytes)?;
            state.apply_commit(v, actions, mtime)?;
        }
        let mut snap = state.finish(segment.version, checkpoint)?;
        // No commit read: only a checkpoint of `previous.version` is new.
        snap.commit_hash = last.or(previous.commit_hash);
        snap.commit_file_id = segment.commit_ids.get(&segment.version).cloned();
        Ok((Arc::new(snap), true))
    }

    pub async fn from_segment(store: &TableStore, segment: &LogSegment) -> Result<Arc<Snapshot>> {
        let root = TableRoot::parse(store.root_uri())?;
        let mut state = ReplayState::new(root.clone());
        // The checkpoint and the first commits after it are fetched together: one stage of
        // requests, not the checkpoint and then each commit in turn.
        let checkpoint = async {
            match &segment.checkpoint {
                Some((v, files)) => checkpoint_read::read_checkpoint(store, *v, files)
                    .await
                    .map(|a| Some((*v, a))),
                None => Ok(None),
            }
        };
        let mut fetched = fetch_commits(store, segment.commits.iter());
        let first = async {
            match futures::StreamExt::next(&mut fetched).await {
                Some(c) => c.map(Some),
                None => Ok(None),
            }
        };
        // A checkpoint with no commit after it: the version's own commit file (for its hash and
        // time), read beside the checkpoint too.
        let own = async {
            match segment.commits.is_empty() && segment.checkpoint.is_some() {
                true => store.get(&commit_path(segment.version)).await.ok(),
                false => None,
            }
        };
        let (checkpoint, first, own) = futures::join!(checkpoint, first, own);
        if let Some((v, actions)) = checkpoint? {
            state.apply_checkpoint(v, actions)?;
        }
        let mut last = None;
        let mut rest = futures::stream::iter(first?.map(Ok)).chain(fetched);
        while let Some(commit) = rest.next().await {
            let ((v, _, mtime), bytes) = commit?;
            last = (v == segment.version).then(|| commit_hash(&bytes));
            let actions = delta_rlc_protocol::actions::parse_commit(v, &bytes)?;
            state.apply_commit(v, actions, mtime)?;
        }
        if last.is_none() {
            // Loaded from a checkpoint alone: identify the version by its commit file when it is
            // still there, so a later load can build on this one, and take the version's time
            // from it (a checkpoint holds no commitInfo).
            if let Some(bytes) = own {
                last = Some(commit_hash(&bytes));
                let info = delta_rlc_protocol::actions::parse_commit(segment.version, &bytes)
                    .ok()
                    .and_then(|actions| {
                        actions.into_iter().find_map(|a| match a {
                            delta_rlc_protocol::actions::Action::CommitInfo(ci) => {
                                ci.in_commit_timestamp.or(ci.timestamp)
                            }
                            _ => None,
                        })
                    });
                if let Some(ts) = info {
                    state.set_timestamp_ms(ts);
                }
            }
        }
        let mut snap = state.finish(segment.version, segment.checkpoint.as_ref().map(|c| c.0))?;
        snap.commit_hash = last;
        snap.commit_file_id = segment.commit_ids.get(&segment.version).cloned();
        Ok(Arc::new(snap))
    }

    pub fn partition_columns(&self) -> &[String] {
        &self.metadata.partition_columns
    }

    pub fn config(&self, key: &str) -> Option<&str> {
        self.metadata.configuration.get(key).map(String::as_str)
    }

    /// The table's column mapping mode (validated when the snapshot was loaded).
    pub fn column_mapping_mode(&self) -> ColumnMappingMode {
        ColumnMappingMode::from_configuration(&self.metadata.configuration)
            .unwrap_or(ColumnMappingMode::None)
    }

    /// The physical name of top-level column `logical` (data files, stats, partition values):
    /// itself without column mapping or for a name that is not a column.
    pub fn physical_name<'a>(&'a self, logical: &'a str) -> &'a str {
        let mode = self.column_mapping_mode();
        if mode == ColumnMappingMode::None {
            return logical;
        }
        self.schema
            .field(logical)
            .and_then(|f| column_mapping::physical_name(f, mode).ok())
            .unwrap_or(logical)
    }

    /// This snapshot's files and state under a later commit's `metadata`: how the conflict checks
    /// read and judge files that winners wrote after changing the schema (a value only a widened
    /// type holds must be read as that type). A copy of the file list, so made only when a winner
    /// changed the schema.
    pub fn with_metadata(&self, metadata: &Metadata) -> Result<Snapshot> {
        let mut view = self.clone();
        view.schema = StructType::parse(&metadata.schema_string)?;
        view.metadata = metadata.clone();
        Ok(view)
    }

    /// Whether a top-level column's file stats may prune: not when its type was widened
    /// (`delta.typeChanges`), since files written before the change hold stats of the narrower
    /// type — a float's `0.1` is not the double its value widens to, so a bound could exclude a
    /// row that matches. Their stats read as unknown. A struct column with a widened field (at any
    /// depth) counts as widened as a whole.
    pub fn stats_usable(&self, logical: &str) -> bool {
        fn widened(f: &delta_rlc_protocol::schema::StructField) -> bool {
            f.metadata.contains_key("delta.typeChanges") || type_widened(&f.data_type)
        }
        fn type_widened(t: &delta_rlc_protocol::schema::DataType) -> bool {
            use delta_rlc_protocol::schema::DataType;
            match t {
                DataType::Primitive(_) => false,
                DataType::Struct(st) => st.fields.iter().any(widened),
                DataType::Array { element, .. } => type_widened(element),
                DataType::Map { key, value, .. } => type_widened(key) || type_widened(value),
            }
        }
        self.schema.field(logical).is_none_or(|f| !widened(f))
    }

    /// A table property's value.
    pub fn property(&self, p: TableProperty) -> Option<&str> {
        p.get(&self.metadata.configuration)
    }

    /// Whether a boolean table property is `true` (as Delta reads it: unset or other text is false).
    pub fn property_true(&self, p: TableProperty) -> bool {
        p.is_true(&self.metadata.configuration)
    }

    /// Files are resolved paths; this returns the add for a path (any DV).
    pub fn file(&self, path: &str) -> Option<&Add> {
        self.files
            .binary_search_by(|a| a.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.files.get(i))
    }

    pub fn deletion_vectors_enabled(&self) -> bool {
        self.property_true(TableProperty::EnableDeletionVectors)
            && self.protocol.has_writer_feature("deletionVectors")
    }

    pub fn row_tracking_supported(&self) -> bool {
        self.protocol.has_writer_feature("rowTracking")
            && !self.property_true(TableProperty::RowTrackingSuspended)
    }

    pub fn row_id_high_water_mark(&self) -> Option<i64> {
        let d = self.domains.get("delta.rowTracking")?;
        let v: serde_json::Value = serde_json::from_str(&d.configuration).ok()?;
        v.get("rowIdHighWaterMark")?.as_i64()
    }

    /// Total logical rows if every file has numRecords.
    pub fn num_rows(&self) -> Option<i64> {
        let mut total = 0i64;
        for f in &self.files {
            let n = f.num_records()?;
            let deleted = f
                .deletion_vector
                .as_ref()
                .map(|d| d.cardinality)
                .unwrap_or(0);
            // A DV that deletes more rows than the file has is corrupt: no total.
            total = total.checked_add(n.checked_sub(deleted).filter(|r| *r >= 0)?)?;
        }
        Some(total)
    }
}

/// Commit files in flight at once while a snapshot replays them (in order).
const CONCURRENT_COMMITS: usize = 16;

/// The commits `commits` fetched a few ahead of the replay, concurrently, yielded in order.
/// Owned inputs: a stream of closures over borrowed items makes every caller's future non-`Send`
/// (a higher-ranked lifetime rustc cannot prove general enough).
fn fetch_commits<'a>(
    store: &TableStore,
    commits: impl Iterator<Item = &'a (u64, String, i64)>,
) -> impl futures::Stream<Item = Result<((u64, String, i64), bytes::Bytes)>> + Send + 'static {
    let owned: Vec<(u64, String, i64)> = commits.cloned().collect();
    let store = store.clone();
    futures::stream::iter(owned)
        .map(move |c| {
            let store = store.clone();
            async move {
                let bytes = store.get(&c.1).await?;
                Ok((c, bytes))
            }
        })
        .buffered(CONCURRENT_COMMITS)
}
