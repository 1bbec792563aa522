//! CONVERT TO DELTA: a directory of Parquet files becomes a Delta table whose version 0 adds every
//! file where it lies (Delta Spark's `CONVERT TO DELTA parquet.`path` [PARTITIONED BY (…)]`,
//! deltalake's `convert_to_deltalake`). Nothing is rewritten or moved.
//!
//! What is checked, so the log never says more than the files hold:
//! - every file's schema (from its footer) is the same Delta schema; files that differ are
//!   refused, not merged;
//! - a file below directories is below hive partition directories (`k=v`, values hive-escaped,
//!   `__HIVE_DEFAULT_PARTITION__` for NULL) naming exactly the partition columns given, in order;
//!   each value parses as its column's type; without a partition schema no file may be below one;
//! - a partition column is not also a column of the files;
//! - column mapping is refused (the files' column names are the physical names, which a mapped
//!   table would not use).
//!
//! Statistics: `numRecords` from each footer; no bounds (none are claimed, so data skipping and
//! the conflict tiers treat the files as unbounded, which is the safe reading). Hidden paths (a
//! segment starting with `_` or `.`, other than a partition directory) and files that are not
//! `.parquet` are not part of the table.

use std::collections::BTreeMap;

use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::partition::parse_partition_value;
use delta_rlc_protocol::schema::{DataType, StructField, StructType};
use futures::{StreamExt, TryStreamExt};
use serde_json::json;

use super::create::{create_table_txn, CreateTableSpec};
use crate::error::{EngineError, Result};
use crate::table::DeltaTable;
use crate::txn::Transaction;

/// What CONVERT is given besides the directory.
#[derive(Debug, Clone, Default)]
pub struct ConvertSpec {
    /// The partition columns, in directory order, with their types.
    pub partition_columns: Vec<StructField>,
    pub properties: BTreeMap<String, String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub defaults: super::create::CreateDefaults,
}

/// Footers read at once.
const FOOTERS_IN_FLIGHT: usize = 16;
/// The tail read first for a footer; a larger footer takes a second read.
const FOOTER_GUESS: u64 = 64 << 10;
/// The hive name of a NULL partition value.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// A transaction creating the table at version 0 with an add for every Parquet file under it.
pub async fn convert_txn(table: &DeltaTable, spec: &ConvertSpec) -> Result<Transaction> {
    if spec
        .properties
        .keys()
        .any(|k| k.eq_ignore_ascii_case(delta_rlc_protocol::column_mapping::MODE_KEY))
    {
        return Err(EngineError::Unsupported(
            "CONVERT TO DELTA with column mapping (the files name their columns themselves)".into(),
        ));
    }
    let listing = table.store.list("").await?;
    // A Delta table below the directory: its files are that table's, never rows of this one.
    if let Some(root) =
        crate::vacuum::nested_table_roots(listing.iter().map(|o| o.path.as_str())).first()
    {
        return Err(EngineError::invalid(format!(
            "CONVERT TO DELTA: {root} below the directory is a Delta table (its files are not this table's)"
        )));
    }
    let files: Vec<_> = listing
        .into_iter()
        .filter(|o| o.path.ends_with(".parquet") && !hidden(&o.path))
        .collect();
    if files.is_empty() {
        return Err(EngineError::invalid(
            "CONVERT TO DELTA: no Parquet file in the directory (the schema comes from the files)",
        ));
    }
    let names: Vec<String> = spec
        .partition_columns
        .iter()
        .map(|f| f.name.clone())
        .collect();
    let mut partitions = Vec::with_capacity(files.len());
    for f in &files {
        partitions.push(partition_values(&f.path, &spec.partition_columns)?);
    }
    let located: Vec<(String, u64)> = files.iter().map(|f| (f.path.clone(), f.size)).collect();
    let schemas: Vec<(u64, StructType)> = futures::stream::iter(located)
        .map(|(path, size)| {
            let store = table.store.clone();
            async move { footer(&store, &path, size).await }
        })
        .buffered(FOOTERS_IN_FLIGHT)
        .try_collect()
        .await?;
    let (_, first) = schemas
        .first()
        .ok_or_else(|| EngineError::Internal("no footer read".into()))?;
    for ((_, s), f) in schemas.iter().zip(&files) {
        if s != first {
            return Err(EngineError::invalid(format!(
                "CONVERT TO DELTA: {} has another schema than {} (files are not merged)",
                f.path,
                files.first().map_or("", |f| f.path.as_str())
            )));
        }
    }
    if let Some(p) = names
        .iter()
        .find(|p| first.fields.iter().any(|c| c.name.eq_ignore_ascii_case(p)))
    {
        return Err(EngineError::invalid(format!(
            "CONVERT TO DELTA: partition column {p} is also a column of the files"
        )));
    }
    let mut fields = first.fields.clone();
    fields.extend(spec.partition_columns.iter().cloned());
    let create = CreateTableSpec {
        schema: StructType { fields },
        partition_by: names,
        cluster_by: Vec::new(),
        properties: spec.properties.clone(),
        name: spec.name.clone(),
        description: spec.description.clone(),
        defaults: spec.defaults,
    };
    let mut txn = create_table_txn(table, &create).await?;
    txn.operation = crate::txn::Operation::Convert;
    for ((f, values), (rows, _)) in files.iter().zip(partitions).zip(&schemas) {
        txn.add_file(Add {
            path: f.path.clone(),
            partition_values: values,
            size: i64::try_from(f.size).unwrap_or(i64::MAX),
            modification_time: f.last_modified_ms,
            data_change: true,
            stats: Some(json!({ "numRecords": rows }).to_string()),
            ..Add::default()
        });
    }
    txn.operation_parameters
        .insert("numFiles".into(), json!(files.len().to_string()));
    txn.operation_parameters.insert(
        "partitionedBy".into(),
        json!(json!(create.partition_by).to_string()),
    );
    txn.operation_parameters
        .insert("collectStats".into(), json!("false"));
    Ok(txn)
}

fn hidden(path: &str) -> bool {
    path.split('/')
        .any(|seg| (seg.starts_with('_') || seg.starts_with('.')) && !seg.contains('='))
}

/// The partition values of the file at `path`: its directories, each `column=value`, naming
/// `columns` in order.
fn partition_values(
    path: &str,
    columns: &[StructField],
) -> Result<delta_rlc_protocol::actions::PartitionValues> {
    let dirs: Vec<&str> = path.split('/').collect();
    let dirs = dirs.get(..dirs.len().saturating_sub(1)).unwrap_or_default();
    if !dirs.is_empty() && columns.is_empty() {
        return Err(EngineError::invalid(format!(
            "The schema of partition columns must be provided to convert a Parquet table to a Delta table ({path} is in a directory)"
        )));
    }
    if dirs.len() != columns.len() {
        return Err(EngineError::invalid(format!(
            "CONVERT TO DELTA: {path} is not below {} partition directories ({})",
            columns.len(),
            columns
                .iter()
                .map(|c| format!("{}=…", c.name))
                .collect::<Vec<_>>()
                .join("/")
        )));
    }
    let mut out = BTreeMap::new();
    for (dir, col) in dirs.iter().zip(columns) {
        let Some((k, raw)) = dir.split_once('=') else {
            return Err(EngineError::invalid(format!(
                "CONVERT TO DELTA: {dir} in {path} is not a hive partition directory (column=value)"
            )));
        };
        if !k.eq_ignore_ascii_case(&col.name) {
            return Err(EngineError::invalid(format!(
                "CONVERT TO DELTA: {path} is partitioned by {k}, expected {}",
                col.name
            )));
        }
        let value = match raw {
            HIVE_NULL => None,
            v => Some(
                percent_encoding::percent_decode_str(v)
                    .decode_utf8()
                    .map_err(|_| {
                        EngineError::invalid(format!(
                            "CONVERT TO DELTA: {dir} is not valid UTF-8 once unescaped"
                        ))
                    })?
                    .into_owned(),
            ),
        };
        let DataType::Primitive(ty) = &col.data_type else {
            return Err(EngineError::invalid(format!(
                "partition column {} must have a primitive type",
                col.name
            )));
        };
        parse_partition_value(&col.name, ty, value.as_deref())
            .map_err(|e| EngineError::invalid(format!("CONVERT TO DELTA: {path}: {e}")))?;
        out.insert(col.name.clone(), value);
    }
    Ok(out)
}

/// A type (at any depth) whose values the Delta column it maps to would not read back as the
/// file holds them: UInt64 past LONG, half floats, nanosecond timestamps (Delta's are
/// microseconds). Writes convert such values and check them; CONVERT adds the files as they are.
fn not_read_exactly(t: &arrow::datatypes::DataType) -> Option<String> {
    use arrow::datatypes::{DataType as A, TimeUnit};
    match t {
        A::UInt64 | A::Float16 | A::Timestamp(TimeUnit::Nanosecond, _) => Some(t.to_string()),
        A::List(f) | A::LargeList(f) | A::FixedSizeList(f, _) | A::Map(f, _) => {
            not_read_exactly(f.data_type())
        }
        A::Struct(fields) => fields.iter().find_map(|f| not_read_exactly(f.data_type())),
        A::Dictionary(_, v) => not_read_exactly(v),
        _ => None,
    }
}

/// The row count and Delta schema of the Parquet file at `path` (`size` bytes), from its footer.
#[allow(clippy::single_range_in_vec_init)] // one range each: the tail, then the footer
async fn footer(
    store: &delta_rlc_storage::TableStore,
    path: &str,
    size: u64,
) -> Result<(u64, StructType)> {
    use parquet::file::metadata::ParquetMetaDataReader;
    let bad = |why: &str| EngineError::invalid(format!("CONVERT TO DELTA: {path}: {why}"));
    if size < 12 {
        return Err(bad("too short to be a Parquet file"));
    }
    let tail_len = size.min(FOOTER_GUESS);
    let tail = store
        .get_ranges(path, &[size - tail_len..size])
        .await?
        .pop()
        .ok_or_else(|| bad("no bytes read"))?;
    let n = tail.len();
    let end = tail
        .get(n.saturating_sub(8)..)
        .ok_or_else(|| bad("no footer"))?;
    if end.get(4..) != Some(b"PAR1".as_slice()) {
        return Err(bad("not a Parquet file (no PAR1 magic)"));
    }
    let len_bytes: [u8; 4] = end
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("no footer length"))?;
    let meta_len = u64::from(u32::from_le_bytes(len_bytes));
    if meta_len + 8 > size {
        return Err(bad("its footer length exceeds the file"));
    }
    let meta_bytes = if meta_len + 8 <= tail_len {
        let start = usize::try_from(tail_len - 8 - meta_len).map_err(|_| bad("footer"))?;
        tail.slice(start..n - 8)
    } else {
        store
            .get_ranges(path, &[size - 8 - meta_len..size - 8])
            .await?
            .pop()
            .ok_or_else(|| bad("no footer read"))?
    };
    let meta = ParquetMetaDataReader::decode_metadata(&meta_bytes)
        .map_err(|e| bad(&format!("unreadable footer: {e}")))?;
    let file = meta.file_metadata();
    let rows = u64::try_from(file.num_rows()).map_err(|_| bad("negative row count"))?;
    let arrow =
        parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
            .map_err(|e| bad(&format!("schema: {e}")))?;
    let mut fields = Vec::with_capacity(arrow.fields().len());
    for f in arrow.fields() {
        if let Some(t) = not_read_exactly(f.data_type()) {
            return Err(bad(&format!(
                "column {} holds {t}, which a Delta column cannot read back exactly (the files are added as they are, never rewritten)",
                f.name()
            )));
        }
        fields.push(crate::arrow_conv::arrow_field_to_delta(f)?);
    }
    Ok((rows, StructType { fields }))
}
