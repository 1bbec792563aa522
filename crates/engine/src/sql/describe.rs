//! DESCRIBE, DESCRIBE HISTORY, DESCRIBE DETAIL, SHOW TBLPROPERTIES, and VACUUM output as batches.

use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::error::{EngineError, Result};
use crate::table::DeltaTable;
use crate::vacuum::VacuumResult;

fn strings(v: Vec<Option<String>>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

fn batch(fields: Vec<(&str, DataType)>, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(
        fields
            .into_iter()
            .map(|(n, t)| Field::new(n, t, true))
            .collect::<Vec<_>>(),
    ));
    Ok(RecordBatch::try_new(schema, cols)?)
}

/// What a DESCRIBE-family statement shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Describe {
    /// `DESCRIBE t`: each column's name, type and nullability.
    Columns,
    /// `DESCRIBE HISTORY t [LIMIT n]`: each version's commitInfo, newest first.
    History,
    /// `DESCRIBE DETAIL t`: one row of table facts.
    Detail,
    /// `SHOW TBLPROPERTIES t`: the table properties.
    Properties,
}

pub async fn run(
    table: &DeltaTable,
    what: Describe,
    version: Option<u64>,
    limit: Option<usize>,
) -> Result<Vec<RecordBatch>> {
    if !table.exists().await? {
        return Err(EngineError::NotFound(format!(
            "no Delta table at {}",
            table.store.root_uri()
        )));
    }
    let snap = table.snapshot(version).await?;
    match what {
        Describe::History => history(table, snap.version, limit).await.map(|b| vec![b]),
        Describe::Properties => {
            let (k, v): (Vec<_>, Vec<_>) = snap
                .metadata
                .configuration
                .iter()
                .map(|(k, v)| (Some(k.clone()), Some(v.clone())))
                .unzip();
            Ok(vec![batch(
                vec![("key", DataType::Utf8), ("value", DataType::Utf8)],
                vec![strings(k), strings(v)],
            )?])
        }
        Describe::Detail => {
            let clustering = snap
                .domains
                .get("delta.clustering")
                .map(|d| d.configuration.clone());
            let features = {
                let mut f = snap.protocol.writer_feature_set();
                f.extend(snap.protocol.reader_feature_set());
                f.sort();
                f.dedup();
                f.join(",")
            };
            let size: i64 = snap.files.iter().map(|f| f.size).sum();
            let b = batch(
                vec![
                    ("format", DataType::Utf8),
                    ("id", DataType::Utf8),
                    ("location", DataType::Utf8),
                    ("version", DataType::Int64),
                    ("numFiles", DataType::Int64),
                    ("sizeInBytes", DataType::Int64),
                    ("partitionColumns", DataType::Utf8),
                    ("clusteringColumns", DataType::Utf8),
                    ("minReaderVersion", DataType::Int64),
                    ("minWriterVersion", DataType::Int64),
                    ("tableFeatures", DataType::Utf8),
                ],
                vec![
                    strings(vec![Some("delta".into())]),
                    strings(vec![Some(snap.metadata.id.clone())]),
                    strings(vec![Some(table.store.root_uri().to_string())]),
                    Arc::new(Int64Array::from(vec![snap.version as i64])),
                    Arc::new(Int64Array::from(vec![snap.files.len() as i64])),
                    Arc::new(Int64Array::from(vec![size])),
                    strings(vec![Some(snap.metadata.partition_columns.join(","))]),
                    strings(vec![clustering]),
                    Arc::new(Int64Array::from(vec![i64::from(
                        snap.protocol.min_reader_version,
                    )])),
                    Arc::new(Int64Array::from(vec![i64::from(
                        snap.protocol.min_writer_version,
                    )])),
                    strings(vec![Some(features)]),
                ],
            )?;
            Ok(vec![b])
        }
        Describe::Columns => {
            let mut names = Vec::new();
            let mut types = Vec::new();
            let mut nullable = Vec::new();
            for f in &snap.schema.fields {
                names.push(Some(f.name.clone()));
                let t = f.data_type.type_text();
                let t = if snap.metadata.partition_columns.contains(&f.name) {
                    format!("{t} (partition)")
                } else {
                    t
                };
                types.push(Some(t));
                nullable.push(Some(f.nullable));
            }
            Ok(vec![batch(
                vec![
                    ("col_name", DataType::Utf8),
                    ("data_type", DataType::Utf8),
                    ("nullable", DataType::Boolean),
                ],
                vec![
                    strings(names),
                    strings(types),
                    Arc::new(BooleanArray::from(nullable)),
                ],
            )?])
        }
    }
}

async fn history(table: &DeltaTable, latest: u64, limit: Option<usize>) -> Result<RecordBatch> {
    let mut cols: [Vec<Option<String>>; 7] = Default::default();
    let mut versions = Vec::new();
    let mut timestamps = Vec::new();
    let mut blind = Vec::new();
    let infos = crate::snapshot::history::commit_infos(&table.store, latest, limit).await?;
    // Each commit's time as Spark shows it (and `TIMESTAMP AS OF` reads it): its in-commit
    // timestamp, else its file's modification time made increasing — not the writer's clock in
    // `commitInfo.timestamp`. In-commit timestamps run from the newest commit back.
    let listed: Vec<(u64, i64)> =
        crate::snapshot::as_of::listed_commits(&crate::snapshot::list_log(&table.store).await?)
            .into_iter()
            .map(|(v, _, mtime)| (v, mtime))
            .collect();
    let ict: std::collections::BTreeMap<u64, i64> = infos
        .iter()
        .map_while(|(v, ci)| ci.in_commit_timestamp.map(|t| (*v, t)))
        .collect();
    let times: std::collections::HashMap<u64, i64> =
        crate::snapshot::as_of::spark_commit_times(&listed, &ict)
            .into_iter()
            .collect();
    for (v, ci) in infos {
        versions.push(v as i64);
        timestamps.push(
            times
                .get(&v)
                .copied()
                .or(ci.in_commit_timestamp)
                .or(ci.timestamp),
        );
        blind.push(ci.is_blind_append);
        let js = |m: &Option<serde_json::Map<String, serde_json::Value>>| {
            m.as_ref()
                .map(|m| serde_json::Value::Object(m.clone()).to_string())
        };
        cols[0].push(ci.operation.clone());
        cols[1].push(js(&ci.operation_parameters));
        cols[2].push(ci.read_version.map(|r| r.to_string()));
        cols[3].push(ci.isolation_level.clone());
        cols[4].push(js(&ci.operation_metrics));
        cols[5].push(ci.engine_info.clone());
        cols[6].push(ci.txn_id.clone());
    }
    let [op, params, readv, iso, metrics, engine, txn] = cols;
    batch(
        vec![
            ("version", DataType::Int64),
            // A timestamp, as Spark shows it (commitInfo holds epoch milliseconds).
            (
                "timestamp",
                DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, Some("UTC".into())),
            ),
            ("operation", DataType::Utf8),
            ("operationParameters", DataType::Utf8),
            ("readVersion", DataType::Utf8),
            ("isolationLevel", DataType::Utf8),
            ("isBlindAppend", DataType::Boolean),
            ("operationMetrics", DataType::Utf8),
            ("engineInfo", DataType::Utf8),
            ("txnId", DataType::Utf8),
        ],
        vec![
            Arc::new(Int64Array::from(versions)),
            Arc::new(
                arrow::array::TimestampMillisecondArray::from(timestamps).with_timezone("UTC"),
            ),
            strings(op),
            strings(params),
            strings(readv),
            strings(iso),
            Arc::new(BooleanArray::from(blind)),
            strings(metrics),
            strings(engine),
            strings(txn),
        ],
    )
}

pub fn vacuum_batch(res: &VacuumResult) -> Result<RecordBatch> {
    let files: Vec<Option<String>> = res.files.iter().cloned().map(Some).collect();
    let label = if res.dry_run {
        "would_delete"
    } else {
        "deleted"
    };
    batch(vec![(label, DataType::Utf8)], vec![strings(files)])
}

/// INSERT with a column list: place each given column at its table position, NULL elsewhere.
pub fn reorder_columns(
    batches: &[RecordBatch],
    cols: &[String],
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let mut positions = Vec::with_capacity(cols.len());
    for c in cols {
        let idx = schema
            .fields()
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(c))
            .ok_or_else(|| {
                EngineError::invalid(format!("unknown column {c} in INSERT column list"))
            })?;
        positions.push(idx);
    }
    let mut out = Vec::new();
    for b in batches {
        if b.num_columns() != cols.len() {
            return Err(EngineError::invalid(format!(
                "INSERT lists {} columns but the query returns {}",
                cols.len(),
                b.num_columns()
            )));
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        let mut fields = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            match positions.iter().position(|p| *p == i) {
                Some(src) => {
                    arrays.push(b.column(src).clone());
                    fields.push(Field::new(
                        f.name(),
                        b.column(src).data_type().clone(),
                        true,
                    ));
                }
                None => {
                    arrays.push(new_null_array(f.data_type(), b.num_rows()));
                    fields.push(Field::new(f.name(), f.data_type().clone(), true));
                }
            }
        }
        out.push(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?);
    }
    Ok(out)
}
