//! Reading one data file: Parquet columns matched to the table schema by name (missing columns are
//! null, differing types are cast), partition columns from the log, DV-deleted rows removed, and an
//! optional physical row index column for DML.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::column_mapping::ColumnMappingMode;
use delta_rlc_protocol::partition::parse_partition_value;
use delta_rlc_protocol::schema::DataType as DeltaType;
use delta_rlc_protocol::stats::FileStats;
use delta_rlc_storage::TableStore;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::arrow_conv::{scalar_to_datafusion, table_arrow_schema};
use crate::dv_io::load_file_dv;
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;

/// Name of the physical row index column added when requested.
pub const ROW_INDEX_COLUMN: &str = "__delta_rlc_row_index";

#[derive(Debug, Clone)]
pub struct FileReadOptions {
    /// Drop rows deleted by the file's DV (true for every normal read).
    pub apply_dv: bool,
    /// Append a UInt64 column with each row's physical index in the file.
    pub with_row_index: bool,
    /// Extra physical columns to read when present (materialized row-tracking columns).
    pub extra_columns: Vec<Field>,
}

impl Default for FileReadOptions {
    fn default() -> Self {
        FileReadOptions {
            apply_dv: true,
            with_row_index: false,
            extra_columns: Vec::new(),
        }
    }
}

fn output_schema(snapshot: &Snapshot, opts: &FileReadOptions) -> SchemaRef {
    let base = table_arrow_schema(&snapshot.schema);
    let mut fields: Vec<Field> = base.fields().iter().map(|f| f.as_ref().clone()).collect();
    for f in &opts.extra_columns {
        fields.push(f.clone());
    }
    if opts.with_row_index {
        fields.push(Field::new(ROW_INDEX_COLUMN, DataType::UInt64, false));
    }
    Arc::new(Schema::new(fields))
}

/// Reads one live file of `snapshot`.
pub async fn read_file(
    store: &TableStore,
    snapshot: &Snapshot,
    add: &Add,
    opts: &FileReadOptions,
) -> Result<Vec<RecordBatch>> {
    read_file_projected(store, snapshot, add, opts, None).await
}

/// Like [`read_file`], but decodes only the table columns in `columns` (others come back as
/// NULL-filled columns of their type, so the output schema is unchanged).
pub async fn read_file_projected(
    store: &TableStore,
    snapshot: &Snapshot,
    add: &Add,
    opts: &FileReadOptions,
    projection: Option<&[String]>,
) -> Result<Vec<RecordBatch>> {
    let dv = if opts.apply_dv {
        match load_file_dv(store, &snapshot.root, add).await {
            Ok(dv) => Some(dv),
            Err(EngineError::Storage(e)) => {
                let what = format!("the deletion vector of {}", add.path);
                return Err(super::vanished::read_error(store, snapshot.version, &what, e).await);
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let reader = open_reader(store, snapshot, add, projection, &opts.extra_columns, false).await?;
    let reader = reader
        .with_batch_size(8192)
        .build()
        .map_err(|e| EngineError::corrupt(format!("data file {}: {e}", add.path)))?;
    let mut out_schema = output_schema(snapshot, opts);
    if let Some(cols) = projection {
        // Columns that are not decoded come back NULL, so they must be nullable in this output.
        let relaxed: Vec<Field> = out_schema
            .fields()
            .iter()
            .map(|f| {
                let kept = cols.iter().any(|c| c.eq_ignore_ascii_case(f.name()))
                    || f.name() == ROW_INDEX_COLUMN
                    || partition_cols_of(snapshot).contains(f.name());
                if kept {
                    f.as_ref().clone()
                } else {
                    f.as_ref().clone().with_nullable(true)
                }
            })
            .collect();
        out_schema = Arc::new(Schema::new(relaxed));
    }
    let partition_cols = &snapshot.metadata.partition_columns;
    let mut out = Vec::new();
    let mut offset: u64 = 0;
    let mut dv_iter = dv.as_ref().map(|d| d.iter().peekable());
    for batch in reader {
        let batch =
            batch.map_err(|e| EngineError::corrupt(format!("data file {}: {e}", add.path)))?;
        let batch = crate::column_mapping::to_logical(snapshot, batch, &opts.extra_columns)?;
        let n = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(out_schema.fields().len());
        for field in out_schema.fields() {
            let name = field.name();
            if name == ROW_INDEX_COLUMN {
                columns.push(Arc::new(UInt64Array::from_iter_values(
                    offset..offset + n as u64,
                )));
                continue;
            }
            if projection.is_some_and(|cols| !cols.iter().any(|c| c.eq_ignore_ascii_case(name)))
                && !opts.extra_columns.iter().any(|f| f.name() == name)
                && !partition_cols.iter().any(|p| p == name)
            {
                columns.push(new_null_array(field.data_type(), n));
                continue;
            }
            let col = table_column(snapshot, add, field, &batch)?;
            columns.push(col);
        }
        let rb = RecordBatch::try_new(out_schema.clone(), columns)?;
        let rb = match dv_iter.as_mut() {
            Some(it) => {
                let end = offset + n as u64;
                let mut keep: Option<Vec<bool>> = None;
                while let Some(idx) = it.next_if(|i| *i < end) {
                    let k = keep.get_or_insert_with(|| vec![true; n]);
                    if let Some(slot) = idx.checked_sub(offset).and_then(|i| k.get_mut(i as usize))
                    {
                        *slot = false;
                    }
                }
                match keep {
                    Some(k) => filter_record_batch(&rb, &BooleanArray::from(k))?,
                    None => rb,
                }
            }
            None => rb,
        };
        offset += n as u64;
        if rb.num_rows() > 0 {
            out.push(rb);
        }
    }
    if let Some(dv) = &dv {
        if let Some(max) = dv.max() {
            if max >= offset {
                return Err(EngineError::corrupt(format!(
                    "deletion vector of {} deletes row {max} but the file has {offset} rows",
                    add.path
                )));
            }
        }
    }
    Ok(out)
}

fn partition_cols_of(snapshot: &Snapshot) -> &[String] {
    &snapshot.metadata.partition_columns
}

/// Opens one data file for reading: checks `numRecords` against the file when a DV refers to its
/// rows, and restricts decoding to the `projection` columns (plus `extra` physical columns).
/// `selective`: the caller reads only some rows (a row selection), so the file's page index is
/// loaded when present and pages without a selected row are skipped, not decompressed.
pub(crate) async fn open_reader(
    store: &TableStore,
    snapshot: &Snapshot,
    add: &Add,
    projection: Option<&[String]>,
    extra: &[Field],
    selective: bool,
) -> Result<ParquetRecordBatchReaderBuilder<Bytes>> {
    // Files name columns physically (column mapping); the projection is logical.
    let physical =
        projection.map(|cols| crate::column_mapping::physical_projection(snapshot, cols));
    let projection = physical.as_deref();
    let bytes = match store.get(&add.path).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return Err(super::vanished::read_error(store, snapshot.version, &add.path, e).await)
        }
    };
    let options = parquet::arrow::arrow_reader::ArrowReaderOptions::new().with_page_index_policy(
        match selective {
            true => parquet::file::metadata::PageIndexPolicy::Optional,
            false => parquet::file::metadata::PageIndexPolicy::Skip,
        },
    );
    let corrupt = |e: parquet::errors::ParquetError| {
        EngineError::corrupt(format!("data file {}: {e}", add.path))
    };
    use parquet::arrow::arrow_reader::ArrowReaderMetadata;
    let meta = ArrowReaderMetadata::load(&bytes, options.clone()).map_err(corrupt)?;
    let meta = match int96_as_micros(&meta) {
        Some(schema) => {
            ArrowReaderMetadata::try_new(Arc::clone(meta.metadata()), options.with_schema(schema))
                .map_err(corrupt)?
        }
        None => meta,
    };
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(bytes, meta);
    let physical_rows = reader.metadata().file_metadata().num_rows();
    if let (Some(stats), Some(_)) = (&add.stats, &add.deletion_vector) {
        if let Ok(Some(n)) = FileStats::parse_num_records(stats) {
            if n != physical_rows {
                return Err(EngineError::corrupt(format!(
                    "data file {}: numRecords {n} but the file has {physical_rows} rows",
                    add.path
                )));
            }
        }
    }
    Ok(match projection {
        None => reader,
        Some(cols) => {
            let wanted = |name: &str| {
                cols.iter().any(|c| c.eq_ignore_ascii_case(name))
                    || extra.iter().any(|f| f.name() == name)
            };
            let roots: Vec<usize> = reader
                .parquet_schema()
                .root_schema()
                .get_fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| wanted(f.name()))
                .map(|(i, _)| i)
                .collect();
            let mask = parquet::arrow::ProjectionMask::roots(reader.parquet_schema(), roots);
            reader.with_projection(mask)
        }
    })
}

/// The file's schema with its INT96 timestamps (Spark's default TIMESTAMP encoding) decoded to
/// microseconds, when it has any. The reader's default is nanoseconds, whose 64 bits hold only
/// 1677-2262: Spark's `0999-03-04 05:06:07.089` was read as 2168-04-12 and an UPDATE wrote that
/// back (red team helper-39). Delta's TIMESTAMP is microseconds: every INT96 value fits.
/// (Top-level columns; an INT96 inside a struct keeps the reader's default.)
fn int96_as_micros(
    meta: &parquet::arrow::arrow_reader::ArrowReaderMetadata,
) -> Option<arrow::datatypes::SchemaRef> {
    use arrow::datatypes::{DataType, TimeUnit};
    let roots = meta.parquet_schema().root_schema().get_fields();
    let is_int96 = |name: &str| {
        roots.iter().any(|r| {
            r.name() == name
                && r.is_primitive()
                && r.get_physical_type() == parquet::basic::Type::INT96
        })
    };
    let mut changed = false;
    let fields: Vec<arrow::datatypes::FieldRef> = meta
        .schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Timestamp(TimeUnit::Nanosecond, None) if is_int96(f.name()) => {
                changed = true;
                Arc::new(
                    f.as_ref()
                        .clone()
                        .with_data_type(DataType::Timestamp(TimeUnit::Microsecond, None)),
                )
            }
            _ => Arc::clone(f),
        })
        .collect();
    changed.then(|| {
        Arc::new(arrow::datatypes::Schema::new_with_metadata(
            fields,
            meta.schema().metadata().clone(),
        ))
    })
}

/// The value of table column `field` for the `n` rows of `batch` (decoded from `add`): the
/// partition value from the log for partition columns, else the file's column matched by name
/// (cast to the table type), else NULLs (a column the file predates).
pub(crate) fn table_column(
    snapshot: &Snapshot,
    add: &Add,
    field: &Field,
    batch: &RecordBatch,
) -> Result<ArrayRef> {
    let name = field.name();
    let n = batch.num_rows();
    if snapshot
        .metadata
        .partition_columns
        .iter()
        .any(|p| p == name)
    {
        let ty = match snapshot.schema.field(name).map(|f| &f.data_type) {
            Some(DeltaType::Primitive(p)) => p.clone(),
            _ => {
                return Err(EngineError::corrupt(format!(
                    "partition column {name} is not primitive"
                )))
            }
        };
        let raw = add
            .partition_values
            .get(snapshot.physical_name(name))
            .cloned()
            .flatten();
        let v = parse_partition_value(name, &ty, raw.as_deref())?;
        let sv = scalar_to_datafusion(&v, field.data_type())?;
        return Ok(sv.to_array_of_size(n)?);
    }
    let col = batch
        .column_by_name(name)
        .or_else(|| {
            let idx = batch
                .schema()
                .fields()
                .iter()
                .position(|f| f.name().eq_ignore_ascii_case(name))?;
            Some(batch.column(idx))
        })
        .cloned();
    let variant = matches!(
        snapshot.schema.field(name).map(|f| &f.data_type),
        Some(DeltaType::Primitive(
            delta_rlc_protocol::schema::PrimitiveType::Variant
        ))
    );
    Ok(match col {
        None => new_null_array(field.data_type(), n),
        Some(c) if variant && c.data_type() != field.data_type() => {
            crate::variant::column_to_json(&c).map_err(|e| {
                EngineError::corrupt(format!("data file {}: column {name}: {e}", add.path))
            })?
        }
        Some(c) if c.data_type() == field.data_type() => c,
        Some(c) => {
            // Without column mapping a file's structs are matched to the table's by field name
            // first (a file that predates a nested field's addition lacks it: NULL); with column
            // mapping `to_logical` has done so.
            let c = match snapshot.schema.field(name) {
                Some(tf)
                    if snapshot.column_mapping_mode() == ColumnMappingMode::None
                        && !matches!(tf.data_type, DeltaType::Primitive(_)) =>
                {
                    crate::column_mapping::conform_nested(&c, &tf.data_type)?
                }
                _ => c,
            };
            match c.data_type() == field.data_type() {
                true => c,
                // A numeric value that is not exactly the table's type fails the read (a file
                // of a later, wider schema read through an older one): never NULL or truncated.
                false => crate::value_cast::cast_for_read(&c, field.data_type()).map_err(|e| {
                    EngineError::corrupt(format!("data file {}: column {name}: {e}", add.path))
                })?,
            }
        }
    })
}
