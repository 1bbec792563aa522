//! Reading the change data feed (`table_changes('t', start[, end])`, `DeltaTable.load_cdf`): the
//! rows each commit in `[start, end]` changed, with `_change_type`, `_commit_version` and
//! `_commit_timestamp`.
//!
//! Per commit, the protocol's rule: when it has `cdc` actions, only its change files are read;
//! otherwise its data-changing adds are inserts (their live rows) and its data-changing removes are
//! deletes (the rows live when removed: the remove's DV applied). Commits that change no data
//! (OPTIMIZE, metadata) contribute nothing. Rows are typed by the end version's schema (files
//! written before a column was added read it as NULL; column mapping resolves renames).
//!
//! Refused with a one-line error: a range that starts after the latest version or ends before it
//! starts, a commit in the range that changed data while `delta.enableChangeDataFeed` was not true
//! (its change data was never recorded), a commit no longer in the log, an unreadable file.
//! `end` past the latest version is clamped to it, as Delta Spark does.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    UInt64Array,
};
use arrow::compute::concat_batches;
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use delta_rlc_protocol::actions::{parse_commit, Action, Add, Metadata};
use delta_rlc_protocol::log_path::{commit_file_name, LOG_DIR};
use delta_rlc_storage::StorageErrorKind;

use crate::arrow_conv::table_arrow_schema;
use crate::dv_io::load_file_dv;
use crate::error::{EngineError, Result};
use crate::scan::{read_file, FileReadOptions, ROW_INDEX_COLUMN};
use crate::snapshot::Snapshot;
use crate::table::DeltaTable;
use crate::write::change_data::{ChangeType, CDF_PROPERTY, CHANGE_TYPE_COLUMN};

pub const COMMIT_VERSION_COLUMN: &str = "_commit_version";
pub const COMMIT_TIMESTAMP_COLUMN: &str = "_commit_timestamp";

/// One end of a change range: a version, or a timestamp (epoch milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeBound {
    Version(u64),
    TimestampMs(i64),
}

/// The schema of the change rows: the table's columns, then the three change columns.
pub fn changes_schema(snapshot: &Snapshot) -> SchemaRef {
    let table = table_arrow_schema(&snapshot.schema);
    let mut fields: Vec<Field> = table
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    // Nullable, as Spark's change-feed schema declares them (`StructType.add`); never NULL.
    fields.push(Field::new(CHANGE_TYPE_COLUMN, DataType::Utf8, true));
    fields.push(Field::new(COMMIT_VERSION_COLUMN, DataType::Int64, true));
    fields.push(Field::new(
        COMMIT_TIMESTAMP_COLUMN,
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        true,
    ));
    Arc::new(Schema::new(fields))
}

/// A validated range of the change feed, read commit by commit and file by file
/// ([`ChangeRange::stream`]): at most one file's rows are held at a time.
#[derive(Clone)]
pub struct ChangeRange {
    table: DeltaTable,
    start: u64,
    end: u64,
    /// The configuration in force before the range: the state at `start - 1`.
    metadata_before: Option<Metadata>,
    /// The table at the range's end: the columns the change rows have.
    end_snapshot: Arc<Snapshot>,
    schema: SchemaRef,
}

/// The range of versions `start..=end` (`end` None: the latest), checked before any row is read.
pub async fn change_range(
    table: &DeltaTable,
    start: ChangeBound,
    end: Option<ChangeBound>,
) -> Result<ChangeRange> {
    let latest = table.snapshot(None).await?;
    let start_v = match start {
        ChangeBound::Version(v) => v,
        ChangeBound::TimestampMs(ms) => first_version_at_or_after(table, ms).await?,
    };
    let end_v = match end {
        None => latest.version,
        Some(ChangeBound::Version(v)) => v.min(latest.version),
        Some(ChangeBound::TimestampMs(ms)) => {
            crate::snapshot::as_of::version_at_timestamp(&table.store, ms).await?
        }
    };
    if start_v > latest.version {
        return Err(EngineError::invalid(format!(
            "table_changes: invalid table version: {start_v} (the start version is after the latest version {})",
            latest.version
        )));
    }
    if end_v < start_v {
        return Err(EngineError::invalid(format!(
            "table_changes: the range ends (version {end_v}) before it starts (version {start_v})"
        )));
    }
    let end_snapshot = match end_v == latest.version {
        true => latest,
        false => table.snapshot(Some(end_v)).await?,
    };
    let metadata_before = match start_v {
        0 => None,
        v => Some(table.snapshot(Some(v - 1)).await?.metadata.clone()),
    };
    let schema = changes_schema(&end_snapshot);
    Ok(ChangeRange {
        table: table.clone(),
        start: start_v,
        end: end_v,
        metadata_before,
        end_snapshot,
        schema,
    })
}

impl std::fmt::Debug for ChangeRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChangeRange({}..={})", self.start, self.end)
    }
}

/// Where a change stream is: the next version, the configuration in force, and the current
/// commit's files still to read.
struct Cursor {
    range: ChangeRange,
    next_version: u64,
    metadata: Option<Metadata>,
    files: std::collections::VecDeque<FileChange>,
    version: u64,
    timestamp_ms: i64,
}

impl ChangeRange {
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    pub fn schema_ref(&self) -> &SchemaRef {
        &self.schema
    }

    /// The change rows, in version order; a commit's files are read one at a time.
    pub fn stream(self) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static {
        let cursor = Cursor {
            next_version: self.start,
            metadata: self.metadata_before.clone(),
            range: self,
            files: Default::default(),
            version: 0,
            timestamp_ms: 0,
        };
        futures::stream::try_unfold(cursor, |mut c| async move {
            loop {
                if let Some(fc) = c.files.pop_front() {
                    let r = &c.range;
                    let mut out = Vec::new();
                    for (change, batch) in file_change_rows(&r.table, &r.end_snapshot, &fc).await? {
                        out.push(with_change_columns(
                            &r.schema,
                            batch,
                            change,
                            c.version,
                            c.timestamp_ms,
                        )?);
                    }
                    if out.is_empty() {
                        continue;
                    }
                    let batch = concat_batches(&r.schema, &out)?;
                    return Ok(Some((batch, c)));
                }
                if c.next_version > c.range.end {
                    return Ok(None);
                }
                let v = c.next_version;
                c.next_version += 1;
                c.next_commit(v).await?;
            }
        })
    }
}

impl Cursor {
    /// Reads commit `v` and queues the files whose rows it changed.
    async fn next_commit(&mut self, v: u64) -> Result<()> {
        let table = &self.range.table;
        let path = format!("{LOG_DIR}/{}", commit_file_name(v));
        let bytes = table.store.get(&path).await.map_err(|e| match e.kind {
            StorageErrorKind::NotFound => EngineError::NotFound(format!(
                "table_changes: version {v} is no longer in the log (cleaned up); start later"
            )),
            _ => EngineError::Storage(e),
        })?;
        let actions = parse_commit(v, &bytes)?;
        if let Some(m) = actions.iter().find_map(|a| match a {
            Action::Metadata(m) => Some(m),
            _ => None,
        }) {
            self.metadata = Some(m.clone());
        }
        let changes_data = actions.iter().any(|a| match a {
            Action::Add(a) => a.data_change,
            Action::Remove(r) => r.data_change,
            Action::Cdc(_) => true,
            _ => false,
        });
        if !changes_data {
            return Ok(());
        }
        let recorded = self.metadata.as_ref().is_some_and(|m| {
            m.configuration
                .get(CDF_PROPERTY)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        });
        if !recorded {
            return Err(EngineError::invalid(format!(
                "table_changes: change data was not recorded for version {v} ({CDF_PROPERTY} was not true then)"
            )));
        }
        self.timestamp_ms = commit_timestamp_ms(table, &actions, &path).await?;
        self.version = v;
        self.files = commit_file_changes(&self.range.end_snapshot, &actions)?.into();
        Ok(())
    }
}

/// The changes of versions `start..=end` (`end` None: the latest), in one batch.
pub async fn read_changes(
    table: &DeltaTable,
    start: ChangeBound,
    end: Option<ChangeBound>,
) -> Result<RecordBatch> {
    use futures::TryStreamExt;
    let range = change_range(table, start, end).await?;
    let schema = range.schema();
    let batches: Vec<RecordBatch> = range.stream().try_collect().await?;
    Ok(concat_batches(&schema, &batches)?)
}

/// The commit's timestamp: in-commit timestamp, else `commitInfo.timestamp`, else the file's
/// modification time (the rule `TIMESTAMP AS OF` uses).
async fn commit_timestamp_ms(table: &DeltaTable, actions: &[Action], path: &str) -> Result<i64> {
    if let Some(ts) = actions.iter().find_map(|a| match a {
        Action::CommitInfo(c) => c.in_commit_timestamp.or(c.timestamp),
        _ => None,
    }) {
        return Ok(ts);
    }
    let head = table.store.head(path).await.map_err(EngineError::Storage)?;
    Ok(head.last_modified_ms)
}

/// The first version committed at or after `ms`.
async fn first_version_at_or_after(table: &DeltaTable, ms: i64) -> Result<u64> {
    match crate::snapshot::as_of::version_at_timestamp(&table.store, ms.saturating_sub(1)).await {
        Ok(v) => Ok(v + 1),
        Err(EngineError::NotFound(_)) => Ok(0),
        Err(e) => Err(e),
    }
}

/// One file's part of a commit's changes.
enum FileChange {
    /// A change file: its rows carry their own `_change_type`.
    Cdc(Add),
    Deleted(Add),
    Inserted(Add),
    /// A file whose deletion vector was replaced: (before, after).
    DvReplaced(Add, Add),
}

/// The files of one commit whose rows changed. Without change files: adds are inserts, removes
/// deletes — except a remove and an add of the same file (a deletion vector replaced), whose change
/// is the rows one DV hides and the other does not (Delta's rule for DV commits without change
/// data).
fn commit_file_changes(snapshot: &Snapshot, actions: &[Action]) -> Result<Vec<FileChange>> {
    let root = &snapshot.root;
    if actions.iter().any(|a| matches!(a, Action::Cdc(_))) {
        let mut out = Vec::new();
        for a in actions {
            if let Action::Cdc(c) = a {
                out.push(FileChange::Cdc(file_as_add(
                    root.resolve(&c.path)?,
                    c.partition_values.clone(),
                    c.size,
                    None,
                )));
            }
        }
        return Ok(out);
    }
    let mut removed: Vec<Add> = Vec::new();
    for a in actions {
        if let Action::Remove(rm) = a {
            if !rm.data_change {
                continue;
            }
            let pv = match (
                &rm.partition_values,
                snapshot.partition_columns().is_empty(),
            ) {
                (Some(pv), _) => pv.clone(),
                (None, true) => Default::default(),
                (None, false) => {
                    return Err(EngineError::corrupt(format!(
                        "table_changes: the remove of {} has no partition values",
                        rm.path
                    )))
                }
            };
            let mut file = file_as_add(
                root.resolve(&rm.path)?,
                pv,
                rm.size.unwrap_or(0),
                rm.deletion_vector.as_deref().cloned(),
            );
            // numRecords bounds the DV's row indexes.
            file.stats = rm.stats.clone();
            removed.push(file);
        }
    }
    let mut added: Vec<Add> = Vec::new();
    for a in actions {
        if let Action::Add(add) = a {
            if add.data_change {
                let mut f = add.clone();
                f.path = root.resolve(&add.path)?;
                added.push(f);
            }
        }
    }
    let mut out = Vec::new();
    for rm in &removed {
        out.push(match added.iter().find(|a| a.path == rm.path) {
            Some(add) => FileChange::DvReplaced(rm.clone(), add.clone()),
            None => FileChange::Deleted(rm.clone()),
        });
    }
    for add in added {
        if !removed.iter().any(|r| r.path == add.path) {
            out.push(FileChange::Inserted(add));
        }
    }
    Ok(out)
}

/// The rows one file changed, each batch with its change type (`None`: the batch carries its own
/// `_change_type` column, read from a change file). Batches have the table columns of `snapshot`
/// first.
async fn file_change_rows(
    table: &DeltaTable,
    snapshot: &Snapshot,
    change: &FileChange,
) -> Result<Vec<(Option<ChangeType>, RecordBatch)>> {
    let plain = FileReadOptions::default();
    let tag = |c: Option<ChangeType>, batches: Vec<RecordBatch>| {
        batches.into_iter().map(|b| (c, b)).collect::<Vec<_>>()
    };
    Ok(match change {
        FileChange::Cdc(file) => {
            let opts = FileReadOptions {
                apply_dv: false,
                with_row_index: false,
                extra_columns: vec![Field::new(CHANGE_TYPE_COLUMN, DataType::Utf8, true)],
            };
            tag(None, read(table, snapshot, file, &opts).await?)
        }
        FileChange::Deleted(file) => tag(
            Some(ChangeType::Delete),
            read(table, snapshot, file, &plain).await?,
        ),
        FileChange::Inserted(file) => tag(
            Some(ChangeType::Insert),
            read(table, snapshot, file, &plain).await?,
        ),
        FileChange::DvReplaced(before, after) => {
            dv_pair_changes(table, snapshot, before, after).await?
        }
    })
}

/// The change of one file whose DV went from `before`'s to `after`'s: rows live before and hidden
/// after are deleted; rows hidden before and live after are inserted.
async fn dv_pair_changes(
    table: &DeltaTable,
    snapshot: &Snapshot,
    before: &Add,
    after: &Add,
) -> Result<Vec<(Option<ChangeType>, RecordBatch)>> {
    let old_dv = load_file_dv(&table.store, &snapshot.root, before).await?;
    let new_dv = load_file_dv(&table.store, &snapshot.root, after).await?;
    let opts = FileReadOptions {
        apply_dv: false,
        with_row_index: true,
        extra_columns: Vec::new(),
    };
    let mut out = Vec::new();
    for b in read(table, snapshot, before, &opts).await? {
        let idx = b
            .column_by_name(ROW_INDEX_COLUMN)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| EngineError::Internal("row index column missing".into()))?;
        for (change, pick) in [
            (ChangeType::Delete, (false, true)),
            (ChangeType::Insert, (true, false)),
        ] {
            let mask: BooleanArray = idx
                .iter()
                .map(|i| i.map(|i| (old_dv.contains(i), new_dv.contains(i)) == pick))
                .collect();
            if mask.true_count() > 0 {
                out.push((Some(change), filter_record_batch(&b, &mask)?));
            }
        }
    }
    Ok(out)
}

/// Reads a file of the commit; a file that is gone says so.
async fn read(
    table: &DeltaTable,
    snapshot: &Snapshot,
    file: &Add,
    opts: &FileReadOptions,
) -> Result<Vec<RecordBatch>> {
    read_file(&table.store, snapshot, file, opts)
        .await
        .map_err(|e| match e {
            EngineError::Storage(s) if s.kind == StorageErrorKind::NotFound => {
                EngineError::NotFound(format!(
                    "table_changes: file {} is gone (removed by VACUUM?)",
                    file.path
                ))
            }
            other => other,
        })
}

fn file_as_add(
    path: String,
    partition_values: delta_rlc_protocol::actions::PartitionValues,
    size: i64,
    deletion_vector: Option<delta_rlc_protocol::dv::DvDescriptor>,
) -> Add {
    Add {
        path,
        partition_values,
        size,
        modification_time: 0,
        data_change: true,
        stats: None,
        tags: None,
        deletion_vector: deletion_vector.map(Box::new),
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
        extra: Default::default(),
    }
}

/// `batch` (table columns, maybe `_change_type`) shaped as `schema`.
fn with_change_columns(
    schema: &SchemaRef,
    batch: RecordBatch,
    change: Option<ChangeType>,
    version: u64,
    timestamp_ms: i64,
) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let n_table = schema.fields().len().saturating_sub(3);
    let mut cols: Vec<ArrayRef> = batch.columns().iter().take(n_table).cloned().collect();
    if cols.len() != n_table {
        return Err(EngineError::Internal(
            "table_changes: a file read lacks table columns".into(),
        ));
    }
    let change_col: ArrayRef = match change {
        Some(c) => Arc::new(StringArray::from(vec![c.as_str(); n])),
        None => {
            let c = batch.column_by_name(CHANGE_TYPE_COLUMN).ok_or_else(|| {
                EngineError::corrupt("table_changes: a change file has no _change_type column")
            })?;
            if c.null_count() > 0 {
                return Err(EngineError::corrupt(
                    "table_changes: a change file has rows without a _change_type",
                ));
            }
            Arc::clone(c)
        }
    };
    cols.push(change_col);
    let version = i64::try_from(version)
        .map_err(|_| EngineError::corrupt(format!("version {version} is out of range")))?;
    cols.push(Arc::new(Int64Array::from(vec![version; n])));
    let micros = timestamp_ms.saturating_mul(1000);
    cols.push(Arc::new(
        TimestampMicrosecondArray::from(vec![micros; n]).with_timezone("UTC"),
    ));
    Ok(RecordBatch::try_new(Arc::clone(schema), cols)?)
}
