//! Reading checkpoints: classic and multi-part Parquet, UUID-named V2 (JSON or Parquet) with sidecars.
//! Parquet rows become JSON objects (one top-level struct column per action) and go through the same
//! action parser as commit files, so there is one definition of what an action is.

use arrow::array::RecordBatch;
use bytes::Bytes;
use delta_rlc_protocol::actions::{parse_commit, Action};
use delta_rlc_protocol::log_path::LOG_DIR;
use delta_rlc_protocol::table_path::check_segments;
use delta_rlc_storage::TableStore;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::segment::CheckpointFiles;
use crate::error::{EngineError, Result};

/// Reads all actions of a checkpoint, following sidecars.
pub async fn read_checkpoint(
    store: &TableStore,
    version: u64,
    files: &CheckpointFiles,
) -> Result<Vec<Action>> {
    let mut actions = match files {
        CheckpointFiles::Json(path) => {
            let bytes = store.get(path).await?;
            parse_commit(version, &bytes)?
        }
        CheckpointFiles::Parquet(parts) => {
            let mut all = Vec::new();
            for p in parts {
                let bytes = store.get(p).await?;
                all.extend(parquet_to_actions(bytes, p)?);
            }
            all
        }
    };
    let sidecars: Vec<String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Sidecar(s) => Some(s.path.clone()),
            _ => None,
        })
        .collect();
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
        let rel = format!("{LOG_DIR}/_sidecars/{decoded}");
        let bytes = store.get(&rel).await?;
        actions.extend(parquet_to_actions(bytes, &rel)?);
    }
    Ok(actions)
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
        if let Some(action) = Action::from_json(value)
            .map_err(|e| EngineError::corrupt(format!("checkpoint {what}: {e}")))?
        {
            out.push(action);
        }
    }
    Ok(out)
}
