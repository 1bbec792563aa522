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
    fields.push(Field::new(CHANGE_TYPE_COLUMN, DataType::Utf8, false));
    fields.push(Field::new(COMMIT_VERSION_COLUMN, DataType::Int64, false));
    fields.push(Field::new(
        COMMIT_TIMESTAMP_COLUMN,
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        false,
    ));
    Arc::new(Schema::new(fields))
}

/// The changes of versions `start..=end` (`end` None: the latest).
pub async fn read_changes(
    table: &DeltaTable,
    start: ChangeBound,
    end: Option<ChangeBound>,
) -> Result<RecordBatch> {
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
            "table_changes: start version {start_v} is after the latest version {}",
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
    // The configuration in force before the range: the state at start - 1.
    let mut metadata: Option<Metadata> = match start_v {
        0 => None,
        v => Some(table.snapshot(Some(v - 1)).await?.metadata.clone()),
    };
    let schema = changes_schema(&end_snapshot);
    let mut out: Vec<RecordBatch> = Vec::new();
    for v in start_v..=end_v {
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
            metadata = Some(m.clone());
        }
        let changes_data = actions.iter().any(|a| match a {
            Action::Add(a) => a.data_change,
            Action::Remove(r) => r.data_change,
            Action::Cdc(_) => true,
            _ => false,
        });
        if !changes_data {
            continue;
        }
        let recorded = metadata.as_ref().is_some_and(|m| {
            m.configuration
                .get(CDF_PROPERTY)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        });
        if !recorded {
            return Err(EngineError::invalid(format!(
                "table_changes: change data was not recorded for version {v} ({CDF_PROPERTY} was not true then)"
            )));
        }
        let timestamp_ms = commit_timestamp_ms(table, &actions, &path).await?;
        for (change, batch) in commit_changes(table, &end_snapshot, &actions).await? {
            out.push(with_change_columns(
                &schema,
                batch,
                change,
                v,
                timestamp_ms,
            )?);
        }
    }
    Ok(concat_batches(&schema, &out)?)
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

/// The rows one commit changed, each batch with its change type (`None`: the batch carries its own
/// `_change_type` column, read from a change file). Batches have the table columns of `snapshot`
/// first.
async fn commit_changes(
    table: &DeltaTable,
    snapshot: &Snapshot,
    actions: &[Action],
) -> Result<Vec<(Option<ChangeType>, RecordBatch)>> {
    let root = &snapshot.root;
    let mut out = Vec::new();
    if actions.iter().any(|a| matches!(a, Action::Cdc(_))) {
        let opts = FileReadOptions {
            apply_dv: false,
            with_row_index: false,
            extra_columns: vec![Field::new(CHANGE_TYPE_COLUMN, DataType::Utf8, true)],
        };
        for a in actions {
            if let Action::Cdc(c) = a {
                let file = file_as_add(
                    root.resolve(&c.path)?,
                    c.partition_values.clone(),
                    c.size,
                    None,
                );
                for b in read(table, snapshot, &file, &opts).await? {
                    out.push((None, b));
                }
            }
        }
        return Ok(out);
    }
    // Without change files: adds are inserts, removes deletes — except a remove and an add of the
    // same file (a deletion vector replaced), whose change is the rows one DV hides and the other
    // does not (Delta's rule for DV commits without change data).
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
    let plain = FileReadOptions::default();
    for rm in &removed {
        match added.iter().find(|a| a.path == rm.path) {
            Some(add) => out.extend(dv_pair_changes(table, snapshot, rm, add).await?),
            None => {
                for b in read(table, snapshot, rm, &plain).await? {
                    out.push((Some(ChangeType::Delete), b));
                }
            }
        }
    }
    for add in &added {
        if removed.iter().any(|r| r.path == add.path) {
            continue;
        }
        for b in read(table, snapshot, add, &plain).await? {
            out.push((Some(ChangeType::Insert), b));
        }
    }
    Ok(out)
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
