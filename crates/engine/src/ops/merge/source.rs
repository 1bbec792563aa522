//! A MERGE's source rows, materialized once: in memory while they are small, else spilled to an
//! Arrow IPC file in the system's temporary directory (deleted when the last clone is dropped).
//!
//! Invariant: every pass over the source — the exact key set the read set records, the key probe,
//! the join, and the same passes again when the commit loop re-runs the MERGE on a newer
//! snapshot — sees the same rows. A source query is therefore run exactly once; re-running it (a
//! `random()` or a table that changed) could join rows the read set never recorded.

use std::fs::File;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::ipc::reader::FileReader;
use arrow::ipc::writer::FileWriter;
use arrow::record_batch::RecordBatch;
use futures::{Stream, StreamExt};

use crate::error::{EngineError, Result};

/// Source bytes kept in memory before the source spills to disk (without a memory limit).
pub const SOURCE_MEMORY_BYTES: usize = 256 << 20;

/// Bytes of source rows a MERGE keeps in memory under `env`'s memory limit (a quarter of it);
/// without a limit, all of them.
pub fn memory_budget(env: &crate::env::Env) -> usize {
    env.memory_limit.map_or(usize::MAX, |l| l / 4)
}

/// The source rows of a MERGE; cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct SourceRows {
    schema: SchemaRef,
    inner: Arc<Stored>,
}

#[derive(Debug)]
enum Stored {
    Memory(Vec<RecordBatch>),
    Spilled {
        file: tempfile::TempPath,
        rows: u64,
        bytes: u64,
    },
}

impl SourceRows {
    /// Rows already in memory.
    pub fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        SourceRows {
            schema,
            inner: Arc::new(Stored::Memory(batches)),
        }
    }

    /// Drains `stream`, keeping up to `memory_budget` bytes in memory and spilling everything to
    /// one file beyond that.
    pub async fn from_stream<S>(
        schema: SchemaRef,
        mut stream: S,
        memory_budget: usize,
    ) -> Result<Self>
    where
        S: Stream<Item = Result<RecordBatch>> + Unpin,
    {
        let mut held: Vec<RecordBatch> = Vec::new();
        let mut held_bytes = 0usize;
        let mut spill: Option<(tempfile::NamedTempFile, FileWriter<File>)> = None;
        let (mut rows, mut bytes) = (0u64, 0u64);
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            bytes += batch.get_array_memory_size() as u64;
            if let Some((_, w)) = spill.as_mut() {
                w.write(&RecordBatch::try_new(
                    Arc::clone(&schema),
                    batch.columns().to_vec(),
                )?)?;
                continue;
            }
            held_bytes += batch.get_array_memory_size();
            held.push(batch);
            if held_bytes > memory_budget {
                // Batches keep their own schema; the file takes the declared one (same columns).
                let tmp = tempfile::Builder::new()
                    .prefix("delta-rlc-merge-source-")
                    .tempfile()
                    .map_err(|e| EngineError::Internal(format!("MERGE source spill file: {e}")))?;
                let file = tmp
                    .reopen()
                    .map_err(|e| EngineError::Internal(format!("MERGE source spill file: {e}")))?;
                let mut w = FileWriter::try_new(file, &schema)?;
                for b in held.drain(..) {
                    w.write(&RecordBatch::try_new(
                        Arc::clone(&schema),
                        b.columns().to_vec(),
                    )?)?;
                }
                spill = Some((tmp, w));
            }
        }
        let inner = match spill {
            None => Stored::Memory(held),
            Some((tmp, mut w)) => {
                w.finish()?;
                Stored::Spilled {
                    file: tmp.into_temp_path(),
                    rows,
                    bytes,
                }
            }
        };
        Ok(SourceRows {
            schema,
            inner: Arc::new(inner),
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Decoded size of the rows (what holding them all would take).
    pub fn bytes(&self) -> usize {
        match self.inner.as_ref() {
            Stored::Memory(b) => b.iter().map(|b| b.get_array_memory_size()).sum(),
            Stored::Spilled { bytes, .. } => usize::try_from(*bytes).unwrap_or(usize::MAX),
        }
    }

    pub fn num_rows(&self) -> u64 {
        match self.inner.as_ref() {
            Stored::Memory(b) => b.iter().map(|b| b.num_rows() as u64).sum(),
            Stored::Spilled { rows, .. } => *rows,
        }
    }

    /// The rows held in memory, if they are.
    pub fn in_memory(&self) -> Option<&[RecordBatch]> {
        match self.inner.as_ref() {
            Stored::Memory(b) => Some(b),
            Stored::Spilled { .. } => None,
        }
    }

    /// One pass over the rows, batch by batch (a spilled source is read back from its file).
    pub fn batches(&self) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>> {
        match self.inner.as_ref() {
            Stored::Memory(b) => Ok(Box::new(b.clone().into_iter().map(Ok))),
            Stored::Spilled { file, .. } => {
                let f = File::open(file)
                    .map_err(|e| EngineError::Internal(format!("MERGE source spill file: {e}")))?;
                let reader = FileReader::try_new(f, None)?;
                Ok(Box::new(reader.map(|b| b.map_err(EngineError::from))))
            }
        }
    }
}
