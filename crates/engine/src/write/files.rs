//! Writing data files: rows split by partition values (Hive-style directories), each partition's rows
//! into one Parquet file unless the target file size is exceeded, stats collected per file, and an
//! `add` action per file. Files become visible only through a commit; a failed statement leaves
//! unreferenced files that VACUUM removes.

use delta_rlc_protocol::column_mapping::{physical_name, ColumnMappingMode};
use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{cast, take_record_batch};
use arrow::datatypes::{DataType, Schema};
use bytes::Bytes;
use datafusion::common::ScalarValue;
use delta_rlc_protocol::actions::{Add, Metadata, PartitionValues};
use delta_rlc_protocol::partition::{format_decimal, serialize_partition_value, Scalar};
use delta_rlc_protocol::schema::{PrimitiveType, StructType};
use delta_rlc_storage::TableStore;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use super::encoding::data_file_properties;
use super::parallel_encode::encode_parquet;
use super::stats::{compute_stats, StatsConfig};
use crate::env::Env;
use crate::error::{EngineError, Result};

pub const DEFAULT_TARGET_FILE_SIZE: u64 = 128 * 1024 * 1024;

/// Characters Spark escapes in partition directory names (ExternalCatalogUtils).
fn needs_hive_escape(c: char) -> bool {
    matches!(
        c,
        '"' | '%'
            | '#'
            | '\''
            | '*'
            | '/'
            | ':'
            | '='
            | '?'
            | '\\'
            | '\u{7f}'
            | '{'
            | '['
            | ']'
            | '^'
    ) || ('\u{1}'..='\u{1f}').contains(&c)
}

pub fn hive_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if needs_hive_escape(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// URI-encoding for paths written to the log (readers decode once).
const LOG_PATH_ENCODE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'%')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'^')
    .add(b'[')
    .add(b']')
    .add(b'\\')
    .add(b'|');

pub fn encode_log_path(decoded: &str) -> String {
    utf8_percent_encode(decoded, LOG_PATH_ENCODE).to_string()
}

pub struct FileWriter<'a> {
    pub store: &'a TableStore,
    pub schema: &'a StructType,
    pub partition_columns: &'a [String],
    pub stats_config: StatsConfig,
    pub env: &'a Env,
    pub target_file_size: u64,
    /// Column mapping: files, stats and partition values use physical names.
    pub column_mapping: ColumnMappingMode,
    /// Checked on every batch before anything is written (None: rows already in the table, as
    /// OPTIMIZE rewrites them).
    pub constraints: Option<&'a crate::constraints::TableConstraints>,
    /// Change files (`_change_data/…/cdc-*.parquet`) instead of data files.
    pub change_data: bool,
    /// The caller's Parquet settings (None: the defaults of `encoding.rs`).
    pub parquet: Option<std::sync::Arc<super::encoding::ParquetSettings>>,
}

impl FileWriter<'_> {
    /// The caller's Parquet settings with column names (logical, as the caller gave them)
    /// resolved to the names the file stores; a name that is not a column is refused, not
    /// ignored.
    fn physical_settings(&self) -> Result<Option<super::encoding::ParquetSettings>> {
        let Some(settings) = self.parquet.as_deref() else {
            return Ok(None);
        };
        let mut out = settings.clone();
        for (name, column) in &mut out.columns {
            let Some(field) = self.schema.field(name) else {
                return Err(EngineError::invalid(format!(
                    "writer properties name column {name}, which the table does not have"
                )));
            };
            let delta_rlc_protocol::schema::DataType::Primitive(p) = &field.data_type else {
                return Err(EngineError::Unsupported(format!(
                    "writer properties for column {name}: only columns of a primitive type take them"
                )));
            };
            if let Some(e) = column.encoding {
                if !encoding_fits(e, p) {
                    return Err(EngineError::invalid(format!(
                        "writer properties: encoding {e} does not apply to column {name} ({p:?})"
                    )));
                }
            }
            *name = delta_rlc_protocol::column_mapping::physical_name(field, self.column_mapping)?
                .to_string();
        }
        Ok(Some(out))
    }
}

/// Whether Parquet can store a column of type `p` with encoding `e` (the parquet writer panics on
/// the pairs it cannot).
fn encoding_fits(
    e: parquet::basic::Encoding,
    p: &delta_rlc_protocol::schema::PrimitiveType,
) -> bool {
    use delta_rlc_protocol::schema::PrimitiveType as P;
    use parquet::basic::Encoding as E;
    let integer = matches!(
        p,
        P::Byte | P::Short | P::Integer | P::Long | P::Date | P::Timestamp | P::TimestampNtz
    );
    match e {
        E::PLAIN => true,
        E::RLE => matches!(p, P::Boolean),
        E::DELTA_BINARY_PACKED => integer,
        E::DELTA_LENGTH_BYTE_ARRAY | E::DELTA_BYTE_ARRAY => matches!(p, P::String | P::Binary),
        E::BYTE_STREAM_SPLIT => integer || matches!(p, P::Float | P::Double),
        _ => false,
    }
}

impl<'a> FileWriter<'a> {
    /// A writer of data files for a table with this schema and metadata: its partition columns,
    /// stats settings, column mapping and `delta.targetFileSize`; no constraint check (callers
    /// that write new rows set `constraints`), data files rather than change files.
    pub fn for_table(
        store: &'a TableStore,
        env: &'a Env,
        schema: &'a StructType,
        metadata: &'a Metadata,
    ) -> Result<Self> {
        Ok(FileWriter {
            store,
            schema,
            partition_columns: &metadata.partition_columns,
            stats_config: StatsConfig::from_configuration(&metadata.configuration),
            env,
            target_file_size: metadata
                .configuration
                .get(delta_rlc_protocol::table_properties::TableProperty::TargetFileSize.key())
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_TARGET_FILE_SIZE),
            column_mapping: super::column_mapping_of(&metadata.configuration)?,
            constraints: None,
            change_data: false,
            parquet: None,
        })
    }
}

fn partition_strings(col: &ArrayRef, ty: &PrimitiveType) -> Result<Vec<Option<String>>> {
    let n = col.len();
    Ok(match ty {
        PrimitiveType::Timestamp
        | PrimitiveType::TimestampNtz
        | PrimitiveType::Decimal { .. }
        | PrimitiveType::Binary => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let sv = ScalarValue::try_from_array(col, i)?;
                let s = match sv {
                    v if v.is_null() => None,
                    ScalarValue::TimestampMicrosecond(Some(us), _) => {
                        serialize_partition_value(ty, &Scalar::Timestamp(us))
                    }
                    ScalarValue::Decimal128(Some(v), _, s) => Some(format_decimal(v, s)),
                    // A partition value is text in the log, and read back as its UTF-8 bytes:
                    // bytes that are not UTF-8 would be stored altered (replacement characters),
                    // so they are refused. Delta Spark refuses binary partition columns outright.
                    ScalarValue::Binary(Some(b)) => match std::str::from_utf8(&b) {
                        Ok(_) => serialize_partition_value(ty, &Scalar::Binary(b)),
                        Err(_) => {
                            return Err(EngineError::invalid(format!(
                                "a binary partition value that is not UTF-8 cannot be stored (row {}): Delta's partition values are text",
                                i + 1
                            )))
                        }
                    },
                    // Any other value would be written as NULL: never silently.
                    other => {
                        return Err(EngineError::Internal(format!(
                            "a partition value of type {} arrived as {}",
                            ty.name(),
                            other.data_type()
                        )))
                    }
                };
                out.push(s);
            }
            out
        }
        _ => {
            let s = cast(col, &DataType::Utf8)?;
            let s = s.as_string::<i32>();
            (0..n)
                .map(|i| {
                    if s.is_null(i) {
                        None
                    } else {
                        Some(s.value(i).to_string())
                    }
                })
                .collect()
        }
    })
}

impl FileWriter<'_> {
    /// Writes `batches` (table schema, partition columns included) and returns one add per file.
    pub async fn write(&self, batches: &[RecordBatch], data_change: bool) -> Result<Vec<Add>> {
        // Variant columns are read as JSON text, which is not their stored form; void columns are
        // not stored at all. Neither is written (nothing is, on such a table).
        if let Some(f) = self.schema.fields.iter().find(|f| {
            f.data_type
                .any_primitive(&|p| matches!(p, PrimitiveType::Variant | PrimitiveType::Void))
        }) {
            return Err(EngineError::Unsupported(format!(
                "writing a table with a VARIANT or VOID column ({}) is not supported; it can be read",
                f.name
            )));
        }
        let mut groups: Vec<(PartitionValues, Vec<RecordBatch>)> = Vec::new();
        let mut index: HashMap<Vec<Option<String>>, usize> = HashMap::new();
        // Generated columns computed where not given, then every rule checked, before anything
        // is written.
        let filled: Vec<RecordBatch>;
        let batches = match self.constraints {
            Some(c) => {
                filled = batches
                    .iter()
                    .map(|b| c.fill_generated(b))
                    .collect::<Result<_>>()?;
                for batch in &filled {
                    c.check(batch)?;
                }
                &filled[..]
            }
            None => batches,
        };
        for batch in batches {
            super::check_decimal_range(batch)?;
        }
        for batch in batches {
            if batch.num_rows() == 0 {
                continue;
            }
            if self.partition_columns.is_empty() {
                if groups.is_empty() {
                    groups.push((PartitionValues::new(), Vec::new()));
                }
                if let Some(g) = groups.first_mut() {
                    g.1.push(batch.clone());
                }
                continue;
            }
            let mut keys: Vec<Vec<Option<String>>> = vec![Vec::new(); batch.num_rows()];
            for pc in self.partition_columns {
                let col = batch.column_by_name(pc).ok_or_else(|| {
                    EngineError::Internal(format!("partition column {pc} missing from batch"))
                })?;
                let ty = match self.schema.field(pc).map(|f| &f.data_type) {
                    Some(delta_rlc_protocol::schema::DataType::Primitive(p)) => p.clone(),
                    _ => {
                        return Err(EngineError::invalid(format!(
                            "partition column {pc} must be a primitive column"
                        )))
                    }
                };
                for (k, v) in keys.iter_mut().zip(partition_strings(col, &ty)?) {
                    k.push(v);
                }
            }
            let mut rows_by_group: Vec<(usize, Vec<u32>)> = Vec::new();
            let mut local: HashMap<usize, usize> = HashMap::new();
            for (row, key) in keys.into_iter().enumerate() {
                let g = match index.get(&key) {
                    Some(g) => *g,
                    None => {
                        let pv: PartitionValues = self
                            .partition_columns
                            .iter()
                            .cloned()
                            .zip(key.iter().cloned())
                            .collect();
                        groups.push((pv, Vec::new()));
                        index.insert(key, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                let slot = *local.entry(g).or_insert_with(|| {
                    rows_by_group.push((g, Vec::new()));
                    rows_by_group.len() - 1
                });
                if let Some(r) = rows_by_group.get_mut(slot) {
                    r.1.push(row as u32);
                }
            }
            for (g, rows) in rows_by_group {
                let taken = take_record_batch(batch, &UInt32Array::from(rows))?;
                if let Some(group) = groups.get_mut(g) {
                    group.1.push(taken);
                }
            }
        }
        let mut adds = Vec::new();
        for (pv, group) in groups {
            let mut current: Vec<RecordBatch> = Vec::new();
            let mut current_size = 0usize;
            for b in group {
                let b = self.drop_partition_columns(&b)?;
                let size = b.get_array_memory_size();
                if !current.is_empty() && (current_size + size) as u64 > self.target_file_size {
                    adds.push(
                        self.write_one(&pv, std::mem::take(&mut current), data_change)
                            .await?,
                    );
                    current_size = 0;
                }
                current_size += size;
                current.push(b);
            }
            if !current.is_empty() {
                adds.push(self.write_one(&pv, current, data_change).await?);
            }
        }
        Ok(adds)
    }

    fn drop_partition_columns(&self, b: &RecordBatch) -> Result<RecordBatch> {
        if self.partition_columns.is_empty() {
            return Ok(b.clone());
        }
        let keep: Vec<usize> = b
            .schema()
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| !self.partition_columns.contains(f.name()))
            .map(|(i, _)| i)
            .collect();
        Ok(b.project(&keep)?)
    }

    async fn write_one(
        &self,
        pv: &PartitionValues,
        batches: Vec<RecordBatch>,
        data_change: bool,
    ) -> Result<Add> {
        // Column mapping: the file stores physical names (and field ids); stats and partition
        // values are keyed by them too.
        let mode = self.column_mapping;
        let batches: Vec<RecordBatch> = batches
            .iter()
            .map(|b| crate::column_mapping::to_physical(self.schema, mode, b))
            .collect::<Result<_>>()?;
        let schema: Arc<Schema> = match batches.first() {
            Some(b) => b.schema(),
            None => return Err(EngineError::Internal("empty file".into())),
        };
        let settings = self.physical_settings()?;
        let props = data_file_properties(&schema, &batches, settings.as_ref());
        // Stats over table columns only (not materialized row-tracking columns).
        let table_cols: Vec<usize> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                self.schema
                    .fields
                    .iter()
                    .any(|tf| physical_name(tf, mode).is_ok_and(|p| p == f.name()))
            })
            .map(|(i, _)| i)
            .collect();
        let projected: Vec<RecordBatch> = batches
            .iter()
            .map(|b| b.project(&table_cols))
            .collect::<Result<_, _>>()?;
        let mut stats_config = self.stats_config.clone();
        if let Some(cols) = stats_config.stats_columns.as_mut() {
            for c in cols.iter_mut() {
                if let Some(p) = crate::column_mapping::physical_path(self.schema, mode, c) {
                    *c = p;
                }
            }
        }
        // The file's columns are encoded on the statement's threads and its stats gathered
        // beside them; both are pure functions of the rows, so the file is the same either way.
        let threads = self.env.parallelism.max(1);
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let (buf, stats) = if super::parallel_encode::worth_threads(rows, threads) {
            std::thread::scope(|scope| {
                let stats = scope.spawn(|| compute_stats(&projected, &stats_config));
                let buf = encode_parquet(&schema, &batches, props, threads);
                let stats = stats
                    .join()
                    .map_err(|_| EngineError::Internal("computing a file's stats panicked".into()));
                (buf, stats)
            })
        } else {
            (
                encode_parquet(&schema, &batches, props, threads),
                Ok(compute_stats(&projected, &stats_config)),
            )
        };
        let (buf, stats) = (buf?, stats?);
        let pv: PartitionValues = pv
            .iter()
            .map(|(k, v)| {
                let physical = self
                    .schema
                    .field(k)
                    .and_then(|f| physical_name(f, mode).ok())
                    .unwrap_or(k);
                (physical.to_string(), v.clone())
            })
            .collect();
        let uuid = self.env.ids.uuid();
        let mut dir = String::new();
        for pc in self.partition_columns {
            let pc = self
                .schema
                .field(pc)
                .and_then(|f| physical_name(f, mode).ok())
                .unwrap_or(pc);
            let v = pv.get(pc).cloned().flatten();
            let v = match v {
                Some(s) if !s.is_empty() => hive_escape(&s),
                _ => "__HIVE_DEFAULT_PARTITION__".to_string(),
            };
            dir.push_str(&format!("{}={}/", hive_escape(pc), v));
        }
        let rel = match self.change_data {
            true => format!(
                "{}/{dir}cdc-00000-{uuid}.c000.snappy.parquet",
                super::change_data::CHANGE_DATA_DIR
            ),
            false => format!("{dir}part-00000-{uuid}-c000.snappy.parquet"),
        };
        let size = buf.len() as i64;
        self.store.put(&rel, Bytes::from(buf)).await?;
        Ok(Add {
            // Staged paths are decoded; the commit encodes them for the log.
            path: rel,
            partition_values: pv.clone(),
            size,
            modification_time: self.env.clock.now_ms(),
            data_change,
            stats: Some(stats.to_json_string()),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
            extra: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UTF-8 bytes are the partition value's text; other bytes are refused, never stored as
    /// replacement characters (helper-49).
    #[test]
    fn binary_partition_values_are_their_utf8_text_or_refused() {
        let ok: ArrayRef = Arc::new(arrow::array::BinaryArray::from(vec![
            Some(b"ok".as_ref()),
            None,
        ]));
        assert_eq!(
            partition_strings(&ok, &PrimitiveType::Binary).unwrap(),
            vec![Some("ok".to_string()), None]
        );
        let bad: ArrayRef = Arc::new(arrow::array::BinaryArray::from(vec![
            Some(b"ok".as_ref()),
            Some([0xff, 0xfe].as_ref()),
        ]));
        let e = partition_strings(&bad, &PrimitiveType::Binary).unwrap_err();
        assert!(
            e.to_string().contains("not UTF-8 cannot be stored (row 2)"),
            "{e}"
        );
    }

    #[test]
    fn hive_escaping_and_log_encoding_match_spark() {
        assert_eq!(hive_escape("a:b"), "a%3Ab");
        assert_eq!(
            encode_log_path(&format!("p={}/f", hive_escape("a:b"))),
            "p=a%253Ab/f"
        );
        assert_eq!(
            encode_log_path(&format!("p={}/f", hive_escape("a b"))),
            "p=a%20b/f"
        );
        assert_eq!(
            encode_log_path(&format!("p={}/f", hive_escape("a/c"))),
            "p=a%252Fc/f"
        );
        assert_eq!(
            encode_log_path(&format!("p={}/f", hive_escape("a%c"))),
            "p=a%2525c/f"
        );
    }
}
