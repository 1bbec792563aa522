//! Reading checkpoints: classic and multi-part Parquet, UUID-named V2 (JSON or Parquet) with sidecars.
//! Parquet rows become JSON objects (one top-level struct column per action) and go through the same
//! action parser as commit files, so there is one definition of what an action is — except the
//! `add` column, decoded directly when its shape is exactly the known one (`checkpoint_adds`).

use arrow::array::{AsArray, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use bytes::Bytes;
use delta_rlc_protocol::actions::{parse_commit, Action, Add};
use delta_rlc_protocol::log_path::LOG_DIR;
use delta_rlc_protocol::table_path::check_segments;
use delta_rlc_storage::TableStore;
use futures::StreamExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::checkpoint_adds::decode_adds;
use super::segment::CheckpointFiles;
use crate::error::{EngineError, Result};

/// A checkpoint's actions: its adds (the bulk, kept apart so they are never wrapped in an
/// [`Action`] and moved again) and every other action, each in file order.
#[derive(Debug, Default)]
pub struct CheckpointActions {
    pub adds: Vec<Add>,
    pub others: Vec<Action>,
}

impl CheckpointActions {
    fn push(&mut self, a: Action) {
        match a {
            Action::Add(add) => self.adds.push(add),
            other => self.others.push(other),
        }
    }
}

/// Checkpoint parts (or sidecars) in flight at once: fetched concurrently, decoded in order. Two:
/// the next part downloads while one decodes, and memory holds at most two parts (multi-part
/// checkpoints exist because parts are large).
const CONCURRENT_PARTS: usize = 2;

/// `paths` fetched [`CONCURRENT_PARTS`] at a time, yielded in order (owned, so callers' futures
/// stay `Send`).
fn fetch_all(
    store: &TableStore,
    paths: Vec<String>,
) -> impl futures::Stream<Item = Result<(String, bytes::Bytes)>> + Send + 'static {
    let store = store.clone();
    futures::stream::iter(paths)
        .map(move |p| {
            let store = store.clone();
            async move {
                let bytes = store.get(&p).await?;
                Ok((p, bytes))
            }
        })
        .buffered(CONCURRENT_PARTS)
}

/// Reads all actions of a checkpoint, following sidecars.
pub async fn read_checkpoint(
    store: &TableStore,
    version: u64,
    files: &CheckpointFiles,
) -> Result<CheckpointActions> {
    let mut actions = CheckpointActions::default();
    match files {
        CheckpointFiles::Json(path) => {
            let bytes = store.get(path).await?;
            for a in parse_commit(version, &bytes)? {
                actions.push(a);
            }
        }
        CheckpointFiles::Parquet(parts) => {
            // Parts fetched a few at a time, concurrently, decoded in order.
            let mut fetched = fetch_all(store, parts.clone());
            while let Some(part) = fetched.next().await {
                let (p, bytes) = part?;
                parquet_into(bytes, &p, &mut actions)?;
            }
        }
    };
    let sidecars: Vec<String> = actions
        .others
        .iter()
        .filter_map(|a| match a {
            Action::Sidecar(s) => Some(s.path.clone()),
            _ => None,
        })
        .collect();
    let mut rels = Vec::with_capacity(sidecars.len());
    for sc in sidecars {
        let decoded = percent_encoding::percent_decode_str(&sc)
            .decode_utf8_lossy()
            .into_owned();
        check_segments(&decoded, &sc)?;
        if decoded.contains('/') {
            return Err(EngineError::corrupt(format!(
                "sidecar path {sc:?} must be a file name"
            )));
        }
        rels.push(format!("{LOG_DIR}/_sidecars/{decoded}"));
    }
    let mut fetched = fetch_all(store, rels);
    while let Some(sidecar) = fetched.next().await {
        let (rel, bytes) = sidecar?;
        parquet_into(bytes, &rel, &mut actions)?;
    }
    Ok(actions)
}

/// Decodes checkpoint Parquet bytes into `out` (adds apart from the other actions).
fn parquet_into(bytes: Bytes, what: &str, out: &mut CheckpointActions) -> Result<()> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    // A hint only: bounded, never trusted beyond what is read. A quarter more is reserved for the
    // later commits' files that are merged in place (`replay::merge_sorted_into`): growing a full
    // list would copy it, holding a large table's files twice. Unused capacity is address space,
    // not resident memory.
    out.adds.reserve((rows + rows / 4).min(1 << 24));
    let reader = builder
        .with_batch_size(8192)
        .build()
        .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
    for batch in reader {
        let batch = batch.map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
        for a in batch_to_actions(&batch, what)? {
            out.push(a);
        }
    }
    Ok(())
}

/// Converts checkpoint Parquet bytes into actions.
pub fn parquet_to_actions(bytes: Bytes, what: &str) -> Result<Vec<Action>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?
        .with_batch_size(8192)
        .build()
        .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
        out.extend(batch_to_actions(&batch, what)?);
    }
    Ok(out)
}

fn batch_to_actions(batch: &RecordBatch, what: &str) -> Result<Vec<Action>> {
    let typed = batch
        .column_by_name("add")
        .and_then(|c| c.as_struct_opt())
        .and_then(decode_adds);
    let Some(adds) = typed else {
        return Ok(json_rows(batch, what)?.into_iter().flatten().collect());
    };
    // Adds are decoded directly; the other rows (few: protocol, metadata, txns, tombstones) go
    // through JSON, and the row order is kept.
    let others: Vec<u32> = adds
        .iter()
        .enumerate()
        .filter(|(_, a)| a.is_none())
        .filter_map(|(i, _)| u32::try_from(i).ok())
        .collect();
    let others_len = others.len();
    let rest = if others.is_empty() {
        Vec::new()
    } else {
        json_rows(&take_record_batch(batch, &UInt32Array::from(others))?, what)?
    };
    if rest.len() != others_len {
        // Rows and JSON lines do not line up: decode the whole batch the defining way.
        return Ok(json_rows(batch, what)?.into_iter().flatten().collect());
    }
    let mut rest = rest.into_iter();
    let mut out = Vec::with_capacity(adds.len());
    for add in adds {
        match add {
            Some(a) => out.push(Action::Add(a)),
            None => out.extend(rest.next().flatten()),
        }
    }
    Ok(out)
}

/// The rows' actions through the JSON action parser: one entry per JSON line written (None for a
/// row without an action).
fn json_rows(batch: &RecordBatch, what: &str) -> Result<Vec<Option<Action>>> {
    let mut buf = Vec::new();
    {
        let mut writer = arrow::json::LineDelimitedWriter::new(&mut buf);
        writer
            .write(batch)
            .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
        writer
            .finish()
            .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
    }
    let mut out = Vec::with_capacity(batch.num_rows());
    for line in buf.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let mut value: serde_json::Value = serde_json::from_slice(line)
            .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?;
        if let Some(add) = value.get_mut("add").and_then(|a| a.as_object_mut()) {
            // Typed copies of stats/partition values are derived data; the JSON forms are canonical.
            add.remove("stats_parsed");
            add.remove("partitionValues_parsed");
        }
        out.push(
            Action::from_json(value)
                .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn checkpoints(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                checkpoints(&p, out);
            } else if p.to_string_lossy().ends_with(".checkpoint.parquet") {
                out.push(p);
            }
        }
    }

    /// The direct `add` decoding yields exactly the JSON path's actions, on Spark's checkpoints.
    #[test]
    fn typed_adds_equal_the_json_path() {
        let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden");
        let mut files = Vec::new();
        checkpoints(&golden, &mut files);
        assert!(
            files.len() >= 3,
            "golden checkpoints not found under {golden:?}"
        );
        let mut typed_rows = 0;
        for f in files {
            let bytes = Bytes::from(std::fs::read(&f).unwrap());
            let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
                .unwrap()
                .build()
                .unwrap();
            for batch in reader {
                let batch = batch.unwrap();
                let add = batch.column_by_name("add").unwrap().as_struct();
                let adds = decode_adds(add).expect("Spark's add column takes the typed path");
                typed_rows += adds.iter().flatten().count();
                let json: Vec<Action> = json_rows(&batch, "t")
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .collect();
                assert_eq!(batch_to_actions(&batch, "t").unwrap(), json, "{f:?}");
            }
        }
        assert!(typed_rows > 10);
    }
}
