//! One Parquet file encoded on several threads: each (row group, top-level column) pair is a job,
//! taken by up to `threads` scoped threads (largest first), a window of twice `threads` row groups
//! at a time, and the encoded column chunks are appended in their order after each window.
//!
//! Invariant: the bytes are exactly those `ArrowWriter` writes for the same batches and properties.
//! The row groups are cut where `ArrowWriter` cuts them (every `max_row_group_row_count` rows,
//! batch boundaries kept inside a group), and each column writer receives the same slices in the
//! same order; only which thread runs a column writer differs, and column writers share no state.
//! Properties whose row-group cut depends on encoded sizes (`max_row_group_bytes`) or whose pages
//! depend on content-defined chunking are not reproduced: such files, and small ones, go through
//! `ArrowWriter` itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use arrow::array::RecordBatch;
use arrow::datatypes::{FieldRef, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowColumnWriter};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::error::{EngineError, Result};

/// Below this many rows a file is encoded on the calling thread: threads would cost more than
/// they save.
const PARALLEL_MIN_ROWS: usize = 64 * 1024;

/// Whether a file of `rows` rows is worth encoding (and its stats gathering) on more threads.
pub(super) fn worth_threads(rows: usize, threads: usize) -> bool {
    threads > 1 && rows >= PARALLEL_MIN_ROWS
}

/// Encodes `batches` (all of `schema`) as one Parquet file with `props`, on up to `threads`
/// threads.
pub fn encode_parquet(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    props: WriterProperties,
    threads: usize,
) -> Result<Vec<u8>> {
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let serial = !worth_threads(rows, threads)
        || schema.fields().len() < 2 && rows <= row_group_rows(&props)
        || props.max_row_group_bytes().is_some()
        || props.content_defined_chunking().is_some();
    let mut writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props.clone()))?;
    if serial {
        for b in batches {
            writer.write(b)?;
        }
        return Ok(writer.into_inner()?);
    }
    // The file writer keeps the footer metadata (the Arrow schema included) that ArrowWriter set.
    let (mut file, factory) = writer.into_serialized_writer()?;
    let leaf_roots: Vec<usize> = (0..file.schema_descr().num_columns())
        .map(|leaf| file.schema_descr().get_column_root_idx(leaf))
        .collect();
    let groups = row_groups(batches, row_group_rows(&props));
    // A window of row groups at a time: the column writers and encoded chunks held at once are
    // those of twice `threads` row groups, not of the whole file (twice: the threads wait for the
    // window's last job, and more jobs per window leave less of them idle at its end).
    let per_group = schema.fields().len();
    let window_groups = threads.saturating_mul(2);
    for (window_index, window) in groups.chunks(window_groups).enumerate() {
        let first = window_index * window_groups;
        let mut jobs: Vec<Job> = Vec::with_capacity(window.len() * per_group);
        for (offset, slices) in window.iter().enumerate() {
            let mut writers = factory.create_column_writers(first + offset)?.into_iter();
            for (field_index, field) in schema.fields().iter().enumerate() {
                let leaves = leaf_roots.iter().filter(|r| **r == field_index).count();
                jobs.push(Job {
                    field: field.clone(),
                    field_index,
                    writers: writers.by_ref().take(leaves).collect(),
                    slices: slices.clone(),
                });
            }
        }
        let mut chunks = run_jobs(jobs, threads)?.into_iter();
        for _ in window {
            let mut group = file.next_row_group()?;
            for column in chunks.by_ref().take(per_group) {
                for chunk in column {
                    chunk.append_to_row_group(&mut group)?;
                }
            }
            group.close()?;
        }
    }
    Ok(file.into_inner()?)
}

/// The rows per row group `ArrowWriter` would write with `props`.
fn row_group_rows(props: &WriterProperties) -> usize {
    props.max_row_group_row_count().unwrap_or(usize::MAX).max(1)
}

/// The batches cut into row groups of at most `max_rows` rows, as `ArrowWriter` cuts them.
fn row_groups(batches: &[RecordBatch], max_rows: usize) -> Vec<Vec<RecordBatch>> {
    let mut groups: Vec<Vec<RecordBatch>> = Vec::new();
    let mut current: Vec<RecordBatch> = Vec::new();
    let mut buffered = 0usize;
    for batch in batches {
        let mut offset = 0usize;
        while offset < batch.num_rows() {
            let take = (batch.num_rows() - offset).min(max_rows - buffered);
            current.push(batch.slice(offset, take));
            offset += take;
            buffered += take;
            if buffered >= max_rows {
                groups.push(std::mem::take(&mut current));
                buffered = 0;
            }
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// One top-level column of one row group: its leaf writers and the row group's slices.
struct Job {
    field: FieldRef,
    field_index: usize,
    writers: Vec<ArrowColumnWriter>,
    slices: Vec<RecordBatch>,
}

impl Job {
    /// The bytes of this job's column in its slices (its share of the work, roughly).
    fn bytes(&self) -> usize {
        self.slices
            .iter()
            .filter_map(|s| s.columns().get(self.field_index))
            .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
            .sum()
    }

    fn run(mut self) -> Result<Vec<ArrowColumnChunk>> {
        for slice in &self.slices {
            let column = slice.columns().get(self.field_index).ok_or_else(|| {
                EngineError::Internal(format!("batch lacks column {}", self.field.name()))
            })?;
            let leaves = compute_leaves(&self.field, column)?;
            if leaves.len() != self.writers.len() {
                return Err(EngineError::Internal(format!(
                    "column {}: {} leaves for {} writers",
                    self.field.name(),
                    leaves.len(),
                    self.writers.len()
                )));
            }
            for (writer, leaf) in self.writers.iter_mut().zip(&leaves) {
                writer.write(leaf)?;
            }
        }
        self.writers.into_iter().map(|w| Ok(w.close()?)).collect()
    }
}

/// Runs `jobs` on up to `threads` scoped threads, largest first (by their columns' in-memory
/// bytes, so a long job does not start last and leave the other threads idle); the results in
/// the jobs' order.
fn run_jobs(jobs: Vec<Job>, threads: usize) -> Result<Vec<Vec<ArrowColumnChunk>>> {
    let count = jobs.len();
    let mut order: Vec<(usize, usize)> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.bytes(), i))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let queue: Vec<Mutex<Option<Job>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<Result<Vec<ArrowColumnChunk>>>>> =
        (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(count) {
            scope.spawn(|| loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(_, i)) = order.get(n) else { break };
                let Some(slot) = queue.get(i) else { break };
                let job = slot.lock().ok().and_then(|mut j| j.take());
                let outcome = match job {
                    Some(job) => job.run(),
                    None => Err(EngineError::Internal("an encoding job ran twice".into())),
                };
                if let Some(Ok(mut r)) = results.get(i).map(|r| r.lock()) {
                    *r = Some(outcome);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(EngineError::Internal("an encoding job did not run".into())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Float64Array, Int64Array, ListArray, StringArray, StructArray};
    use arrow::datatypes::{DataType, Field, Int64Type};
    use std::sync::Arc;

    fn batch(start: i64, rows: usize) -> RecordBatch {
        let ids: Vec<i64> = (start..start + rows as i64).collect();
        let id: ArrayRef = Arc::new(Int64Array::from(ids.clone()));
        let v: ArrayRef = Arc::new(Float64Array::from_iter(
            ids.iter().map(|i| (i % 7 != 0).then_some(*i as f64 * 0.5)),
        ));
        let s: ArrayRef = Arc::new(StringArray::from_iter(
            ids.iter()
                .map(|i| (i % 5 != 0).then(|| format!("s{}", i * 7))),
        ));
        let nested: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(Int64Array::from_iter(ids.iter().map(|i| Some(i % 3)))) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Utf8, true)),
                Arc::new(StringArray::from_iter(
                    ids.iter().map(|i| Some(format!("{}", i % 11))),
                )) as ArrayRef,
            ),
        ]));
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
            ids.iter()
                .map(|i| (i % 4 != 0).then(|| vec![Some(*i), None, Some(i + 1)])),
        ));
        RecordBatch::try_from_iter(vec![
            ("id", id),
            ("v", v),
            ("s", s),
            ("nested", nested),
            ("list", list),
        ])
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn serial(schema: &SchemaRef, batches: &[RecordBatch], props: WriterProperties) -> Vec<u8> {
        let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))
            .unwrap_or_else(|e| panic!("{e}"));
        for b in batches {
            w.write(b).unwrap_or_else(|e| panic!("{e}"));
        }
        w.into_inner().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parallel_bytes_equal_arrow_writers_across_row_group_and_batch_boundaries() {
        // Batches that straddle row groups of 50,000 rows, nested and nullable columns.
        let batches = vec![batch(0, 70_000), batch(70_000, 1), batch(70_001, 95_000)];
        let schema: SchemaRef = batches[0].schema();
        let props = || {
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(50_000))
                .build()
        };
        let expected = serial(&schema, &batches, props());
        for threads in [2, 3, 8] {
            let got = encode_parquet(&schema, &batches, props(), threads)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got, expected, "{threads} threads");
        }
        // Four row groups: 50,000 × 3 and the rest.
        let reader = parquet::file::reader::SerializedFileReader::new(bytes::Bytes::from(expected))
            .unwrap_or_else(|e| panic!("{e}"));
        use parquet::file::reader::FileReader;
        let md = reader.metadata();
        assert_eq!(md.num_row_groups(), 4);
        assert_eq!(md.file_metadata().num_rows(), 165_001);
    }

    /// The table's own properties (`data_file_properties`) with every knob a caller can turn
    /// set small, bloom filters and page statistics on, over map, struct, list and
    /// dictionary-typed columns: the same bytes.
    #[test]
    fn parallel_bytes_equal_arrow_writers_under_the_tables_properties() {
        use arrow::array::{DictionaryArray, Int32Array, MapBuilder, StringBuilder};
        use arrow::datatypes::Int32Type;
        use parquet::file::properties::EnabledStatistics;
        let rows = 90_000usize;
        let base = batch(0, rows);
        let mut map = MapBuilder::new(
            None,
            StringBuilder::new(),
            arrow::array::Int64Builder::new(),
        );
        for i in 0..rows {
            if i % 9 == 0 {
                map.append(false).unwrap_or_else(|e| panic!("{e}"));
                continue;
            }
            map.keys().append_value(format!("k{}", i % 13));
            map.values().append_value(i as i64);
            map.append(true).unwrap_or_else(|e| panic!("{e}"));
        }
        let map: ArrayRef = Arc::new(map.finish());
        let keys = Int32Array::from_iter_values((0..rows).map(|i| (i % 5) as i32));
        let dict: ArrayRef = Arc::new(
            DictionaryArray::<Int32Type>::try_new(
                keys,
                Arc::new(StringArray::from(vec!["a", "b", "c", "d", "e"])),
            )
            .unwrap_or_else(|e| panic!("{e}")),
        );
        let mut columns: Vec<(String, ArrayRef)> = base
            .schema()
            .fields()
            .iter()
            .zip(base.columns())
            .map(|(f, c)| (f.name().clone(), c.clone()))
            .collect();
        columns.push(("map".into(), map));
        columns.push(("dict".into(), dict));
        let whole = RecordBatch::try_from_iter(columns).unwrap_or_else(|e| panic!("{e}"));
        let batches = vec![whole.slice(0, 40_000), whole.slice(40_000, rows - 40_000)];
        let schema = whole.schema();
        let settings = crate::parquet_settings::ParquetSettings {
            max_row_group_size: Some(30_000),
            data_page_size_limit: Some(16 * 1024),
            dictionary_page_size_limit: Some(8 * 1024),
            data_page_row_count_limit: Some(5_000),
            write_batch_size: Some(777),
            statistics_truncate_length: Some(8),
            default_column: crate::parquet_settings::ColumnSettings {
                statistics_enabled: Some(EnabledStatistics::Page),
                bloom_filter: Some((Some(0.01), Some(1_000))),
                ..Default::default()
            },
            ..Default::default()
        };
        let props =
            || crate::write::encoding::data_file_properties(&schema, &batches, Some(&settings));
        let expected = serial(&schema, &batches, props());
        for threads in [2, 5] {
            let got = encode_parquet(&schema, &batches, props(), threads)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got, expected, "{threads} threads");
        }
    }

    #[test]
    fn small_files_and_size_cut_row_groups_go_through_arrow_writer() {
        let small = vec![batch(0, 10)];
        let schema = small[0].schema();
        let got = encode_parquet(&schema, &small, WriterProperties::default(), 2)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, serial(&schema, &small, WriterProperties::default()));
        let big = vec![batch(0, 100_000)];
        let by_bytes = || {
            WriterProperties::builder()
                .set_max_row_group_bytes(Some(256 * 1024))
                .build()
        };
        let got = encode_parquet(&schema, &big, by_bytes(), 2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, serial(&schema, &big, by_bytes()));
    }
}
