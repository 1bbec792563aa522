//! Parquet writer properties for data files.
//!
//! Columns are dictionary-encoded first (as every Parquet writer does). When a column's dictionary
//! grows too large, integer columns (INT32 / INT64 physical: integers, dates, timestamps) fall back
//! to DELTA_BINARY_PACKED instead of PLAIN: it is never much larger than PLAIN and, on the columns
//! that outgrow a dictionary in practice (ids, timestamps, counters, which are sorted or clustered),
//! several times smaller and faster to decode — every DML statement that evaluates a predicate on
//! such a column decodes it in full. Every reader we share tables with decodes it (Spark's vectorized
//! reader since 3.3, arrow-rs / delta-rs, polars, DuckDB); the interop suites read our files.
//! Decimals stored as integers keep PLAIN (some readers handle them on a separate path), and so
//! does every other physical type.
//!
//! A column whose values in the file would overflow the dictionary page — 32/64-bit integers,
//! floats, strings and binaries — is written without a dictionary at all (parquet-mr, Spark's
//! writer, drops a dictionary that does not pay off in the same way): otherwise the file's first
//! rows would sit behind a 1 MiB dictionary that every reader must decompress and look up before
//! the rest falls back anyway, and the writer would hash each row group's first values into a
//! dictionary it then throws away (a fifth of a 10M-row write's time).

use arrow::array::{AsArray, PrimitiveArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float32Type, Float64Type, Int32Type, Int64Type, Schema,
    UInt32Type, UInt64Type,
};
use datafusion::common::HashSet;
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::{Compression, Encoding, LogicalType, Type as PhysicalType};
use parquet::file::properties::WriterProperties;

pub use crate::parquet_settings::{ColumnSettings, ParquetSettings};
use parquet::schema::types::ColumnPath;

/// The writer's dictionary page size limit (parquet-rs's default, set explicitly so that the
/// overflow test below and the writer agree).
const DICTIONARY_PAGE_LIMIT: usize = 1024 * 1024;

/// Writer properties for a data file of `schema` holding `batches`: Snappy, dictionary first,
/// DELTA_BINARY_PACKED as the fallback encoding of integer leaves, and no dictionary for a
/// top-level 32/64-bit integer column whose distinct values would overflow it; then the caller's
/// `settings`, which win.
pub fn data_file_properties(
    schema: &Schema,
    batches: &[RecordBatch],
    settings: Option<&ParquetSettings>,
) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_page_size_limit(DICTIONARY_PAGE_LIMIT);
    builder = without_float_statistics(builder, schema);
    // A caller who chose the dictionary or the encoding of every column gets that choice: the
    // per-column tuning below would otherwise override it.
    if let Some(s) = settings.filter(|s| {
        s.default_column.dictionary_enabled.is_some() || s.default_column.encoding.is_some()
    }) {
        return s.apply(builder).build();
    }
    for (index, field) in schema.fields().iter().enumerate() {
        if dictionary_overflows(field.data_type(), batches, index) {
            builder = builder
                .set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), false);
        }
    }
    // The same conversion ArrowWriter performs (types not coerced). Should it fail, ArrowWriter
    // reports the error itself; the defaults are as good as any properties then.
    if let Ok(descr) = ArrowSchemaConverter::new().convert(schema) {
        for column in descr.columns() {
            let integer = matches!(
                column.physical_type(),
                PhysicalType::INT32 | PhysicalType::INT64
            );
            let decimal = matches!(column.logical_type_ref(), Some(LogicalType::Decimal { .. }));
            if integer && !decimal {
                builder = builder
                    .set_column_encoding(column.path().clone(), Encoding::DELTA_BINARY_PACKED);
            }
        }
    }
    match settings {
        Some(s) => s.apply(builder).build(),
        None => builder.build(),
    }
}

/// No Parquet min/max statistics on FLOAT/DOUBLE leaves. parquet-rs leaves NaN out of them (the
/// format's newer rule), and parquet-mr readers (Spark) then skip a row group for `x = NaN`: on a
/// table this engine wrote, Spark's `DELETE … WHERE x IN (NaN)` and `MERGE … ON t.x = NaN`
/// touched no row (red team helper-42). Files written by parquet-mr put NaN into max, so Spark
/// keeps the row group. Delta's own statistics (in the log) are unaffected and already carry no
/// bound for a column holding NaN; only row-group pruning on float columns is lost.
fn without_float_statistics(
    mut builder: parquet::file::properties::WriterPropertiesBuilder,
    schema: &Schema,
) -> parquet::file::properties::WriterPropertiesBuilder {
    if let Ok(descr) = ArrowSchemaConverter::new().convert(schema) {
        for column in descr.columns() {
            if matches!(
                column.physical_type(),
                PhysicalType::FLOAT | PhysicalType::DOUBLE
            ) {
                builder = builder.set_column_statistics_enabled(
                    column.path().clone(),
                    parquet::file::properties::EnabledStatistics::None,
                );
            }
        }
    }
    builder
}

/// Whether column `index` of `batches`, of type `data_type`, has at least as many distinct non-null
/// values as a dictionary page of [`DICTIONARY_PAGE_LIMIT`] holds (the writer's own fallback test:
/// entries × width ≥ limit; for strings and binaries, their bytes plus a 4-byte length each).
/// Counting stops at that bound, so memory stays within one dictionary. Other types (narrower
/// integers cannot overflow; decimals, booleans, nested columns) answer false and keep the
/// writer's default.
fn dictionary_overflows(data_type: &DataType, batches: &[RecordBatch], index: usize) -> bool {
    let width = match data_type {
        DataType::Int32 | DataType::UInt32 | DataType::Time32(_) | DataType::Float32 => 4,
        DataType::Int64
        | DataType::UInt64
        | DataType::Float64
        | DataType::Timestamp(_, _)
        | DataType::Time64(_)
        | DataType::Duration(_) => 8,
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => return bytes_overflow(batches, index),
        _ => return false,
    };
    let bound = DICTIONARY_PAGE_LIMIT / width;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows < bound {
        return false;
    }
    let mut seen: HashSet<i64> = HashSet::with_capacity(bound);
    for batch in batches {
        let Some(column) = batch.columns().get(index) else {
            return false;
        };
        // Every value maps injectively to an i64 (unsigned 64-bit ones by reinterpretation).
        let reached = match column.data_type() {
            DataType::Int32 => insert_until(
                &mut seen,
                bound,
                column.as_primitive_opt::<Int32Type>(),
                i64::from,
            ),
            DataType::UInt32 => insert_until(
                &mut seen,
                bound,
                column.as_primitive_opt::<UInt32Type>(),
                i64::from,
            ),
            DataType::UInt64 => insert_until(
                &mut seen,
                bound,
                column.as_primitive_opt::<UInt64Type>(),
                |v| v as i64,
            ),
            // Floats by their bits (the dictionary's own notion of a distinct value).
            DataType::Float32 => insert_until(
                &mut seen,
                bound,
                column.as_primitive_opt::<Float32Type>(),
                |v| i64::from(v.to_bits()),
            ),
            DataType::Float64 => insert_until(
                &mut seen,
                bound,
                column.as_primitive_opt::<Float64Type>(),
                |v| v.to_bits() as i64,
            ),
            _ => match cast(column, &DataType::Int64) {
                Ok(ints) => insert_until(
                    &mut seen,
                    bound,
                    ints.as_primitive_opt::<Int64Type>(),
                    |v| v,
                ),
                Err(_) => return false,
            },
        };
        match reached {
            Some(true) => return true,
            Some(false) => {}
            None => return false,
        }
    }
    false
}

/// [`dictionary_overflows`] for a string or binary column: its distinct values' bytes, plus a
/// 4-byte length each, reach [`DICTIONARY_PAGE_LIMIT`].
fn bytes_overflow(batches: &[RecordBatch], index: usize) -> bool {
    // Borrowed from the batches: counting allocates nothing per value.
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut bytes = 0usize;
    for batch in batches {
        let Some(column) = batch.columns().get(index) else {
            return false;
        };
        let values: Box<dyn Iterator<Item = Option<&[u8]>>> = match column.data_type() {
            DataType::Utf8 => Box::new(
                column
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(str::as_bytes)),
            ),
            DataType::LargeUtf8 => Box::new(
                column
                    .as_string::<i64>()
                    .iter()
                    .map(|v| v.map(str::as_bytes)),
            ),
            DataType::Utf8View => {
                Box::new(column.as_string_view().iter().map(|v| v.map(str::as_bytes)))
            }
            DataType::Binary => Box::new(column.as_binary::<i32>().iter()),
            DataType::LargeBinary => Box::new(column.as_binary::<i64>().iter()),
            DataType::BinaryView => Box::new(column.as_binary_view().iter()),
            _ => return false,
        };
        for v in values.flatten() {
            if seen.insert(v) {
                bytes += v.len() + 4;
                if bytes >= DICTIONARY_PAGE_LIMIT {
                    return true;
                }
            }
        }
    }
    false
}

/// Inserts the non-null values of `array` into `seen` until it holds `bound` values: `Some(true)`
/// then, `Some(false)` when the array ends first, `None` when the array is not of type `T`.
fn insert_until<T: ArrowPrimitiveType>(
    seen: &mut HashSet<i64>,
    bound: usize,
    array: Option<&PrimitiveArray<T>>,
    to_i64: impl Fn(T::Native) -> i64,
) -> Option<bool> {
    for v in array?.iter().flatten() {
        seen.insert(to_i64(v));
        if seen.len() >= bound {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        ArrayRef, Float64Array, Int16Array, Int64Array, StringArray, TimestampMicrosecondArray,
    };
    use arrow::datatypes::{Field, TimeUnit};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    use std::sync::Arc;

    fn path(name: &str) -> ColumnPath {
        ColumnPath::from(name)
    }

    #[test]
    fn integer_leaves_fall_back_to_delta_binary_packed() {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("small", DataType::Int16, true),
            Field::new("d", DataType::Date32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("s", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
            Field::new("dec", DataType::Decimal128(10, 2), true),
        ]);
        let props = data_file_properties(&schema, &[], None);
        for int in ["id", "small", "d", "ts"] {
            assert_eq!(
                props.encoding(&path(int)),
                Some(Encoding::DELTA_BINARY_PACKED),
                "{int}"
            );
            assert!(props.dictionary_enabled(&path(int)), "{int}");
        }
        for other in ["s", "x", "dec"] {
            assert_eq!(props.encoding(&path(other)), None, "{other}");
        }
        assert_eq!(props.compression(&path("s")), Compression::SNAPPY);
    }

    /// Writes `batch` with the data-file properties and returns (encodings, has dictionary page)
    /// per column, after checking the rows read back equal.
    fn write_and_inspect(batch: &RecordBatch) -> Vec<(Vec<Encoding>, bool)> {
        let props = data_file_properties(&batch.schema(), std::slice::from_ref(batch), None);
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
        let builder = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(buf)).unwrap();
        let rg = builder.metadata().row_group(0).clone();
        let read: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
        let read = arrow::compute::concat_batches(&batch.schema(), &read).unwrap();
        assert_eq!(&read, batch);
        rg.columns()
            .iter()
            .map(|c| {
                (
                    c.encodings().collect(),
                    c.dictionary_page_offset().is_some(),
                )
            })
            .collect()
    }

    /// Float leaves carry no Parquet min/max (parquet-rs leaves NaN out of them, and Spark's
    /// row-group filter then skipped a group holding NaN); other leaves keep theirs.
    #[test]
    fn float_columns_carry_no_parquet_statistics() {
        use arrow::array::{Float32Array, Float64Array, Int64Array};
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("x", DataType::Float64, true),
            Field::new("f", DataType::Float32, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Float64Array::from(vec![f64::NAN, 1.5])),
                Arc::new(Float32Array::from(vec![2.5, f32::NAN])),
            ],
        )
        .unwrap();
        let props = data_file_properties(&schema, std::slice::from_ref(&batch), None);
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let meta = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(buf))
            .unwrap()
            .metadata()
            .clone();
        let stats: Vec<bool> = meta
            .row_group(0)
            .columns()
            .iter()
            .map(|c| c.statistics().is_some_and(|s| s.min_bytes_opt().is_some()))
            .collect();
        assert_eq!(stats, vec![true, false, false]);
    }

    #[test]
    fn a_column_that_would_overflow_its_dictionary_gets_none() {
        let n = 200_000i64; // more distinct values than a 1 MiB dictionary of i64 holds (131,072)
        let cols: Vec<(&str, ArrayRef)> = vec![
            ("id", Arc::new(Int64Array::from_iter_values(0..n))),
            (
                "few",
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 1000))),
            ),
            (
                "tiny",
                Arc::new(Int16Array::from_iter_values(
                    (0..n).map(|i| (i % 30_000) as i16),
                )),
            ),
            (
                "ts",
                Arc::new(TimestampMicrosecondArray::from_iter_values(
                    (0..n).map(|i| i * 7),
                )),
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("r{i}")),
                )),
            ),
            (
                "nulls",
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| (i % 2 == 0).then_some(i % 10)),
                )),
            ),
        ];
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let cols = write_and_inspect(&batch);
        let [id, few, tiny, ts, s, nulls] = cols.as_slice() else {
            panic!("six columns expected, got {cols:?}");
        };
        for (name, (enc, dict)) in [("id", id), ("ts", ts)] {
            assert!(!dict, "{name}: no dictionary page");
            assert!(
                enc.contains(&Encoding::DELTA_BINARY_PACKED),
                "{name}: {enc:?}"
            );
        }
        // 200,000 distinct strings (about 2.2 MB with their lengths) overflow too: no dictionary.
        assert!(!s.1, "s: no dictionary page");
        assert!(enc_plain(&s.0), "s: {:?}", s.0);
        for (name, (enc, dict)) in [("few", few), ("tiny", tiny), ("nulls", nulls)] {
            assert!(dict, "{name}: dictionary kept");
            assert!(enc.contains(&Encoding::RLE_DICTIONARY), "{name}: {enc:?}");
        }
    }

    fn enc_plain(enc: &[Encoding]) -> bool {
        enc.contains(&Encoding::PLAIN) && !enc.contains(&Encoding::RLE_DICTIONARY)
    }

    /// Floats and strings: many distinct values lose the dictionary, few keep it; the rows read
    /// back equal either way (`write_and_inspect`).
    #[test]
    fn floats_and_strings_that_would_overflow_get_none() {
        let n = 200_000i64;
        let cols: Vec<(&str, ArrayRef)> = vec![
            (
                "x",
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|i| i as f64 * 0.5),
                )),
            ),
            (
                "few_x",
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|i| (i % 100) as f64),
                )),
            ),
            (
                "few_s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("k{}", i % 50)),
                )),
            ),
            (
                "long_s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("{i:0>64}")),
                )),
            ),
        ];
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let cols = write_and_inspect(&batch);
        let [x, few_x, few_s, long_s] = cols.as_slice() else {
            panic!("four columns expected, got {cols:?}");
        };
        for (name, (enc, dict)) in [("x", x), ("long_s", long_s)] {
            assert!(!dict && enc_plain(enc), "{name}: {enc:?}");
        }
        for (name, (enc, dict)) in [("few_x", few_x), ("few_s", few_s)] {
            assert!(
                *dict && enc.contains(&Encoding::RLE_DICTIONARY),
                "{name}: {enc:?}"
            );
        }
        // The string bound: distinct bytes plus 4 each, counted to the limit.
        let just = RecordBatch::try_from_iter(vec![(
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..1024).map(|i| format!("{i:0>1020}")),
            )) as ArrayRef,
        )])
        .unwrap();
        assert!(bytes_overflow(std::slice::from_ref(&just), 0));
        assert!(!bytes_overflow(&[just.slice(0, 1023)], 0));
    }

    #[test]
    fn counting_stops_at_the_dictionary_bound() {
        let batch = RecordBatch::try_from_iter(vec![(
            "id",
            Arc::new(Int64Array::from_iter_values(0..131_072)) as ArrayRef,
        )])
        .unwrap();
        let just_below = batch.slice(0, 131_071);
        assert!(dictionary_overflows(
            &DataType::Int64,
            std::slice::from_ref(&batch),
            0
        ));
        assert!(!dictionary_overflows(&DataType::Int64, &[just_below], 0));
        assert!(
            !dictionary_overflows(&DataType::Int64, std::slice::from_ref(&batch), 1),
            "no such column"
        );
        assert!(!dictionary_overflows(&DataType::Boolean, &[batch], 0));
    }
}
