//! Where OPTIMIZE's outputs stand in the table's layout: the clustering columns the log names,
//! the Z-order permutation of a bin's rows, and the add tags that mark a file as already ordered
//! (so a second OPTIMIZE of the same columns leaves it alone).

use arrow::array::{Array, RecordBatch, UInt32Array};
use delta_rlc_protocol::actions::Add;

use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;

/// The table's clustering columns by logical name (the domain metadata holds physical paths).
pub(crate) fn clustering_columns(snapshot: &Snapshot) -> Vec<String> {
    let mode = snapshot.column_mapping_mode();
    clustering_physical_columns(snapshot)
        .into_iter()
        .map(|p| {
            snapshot
                .schema
                .fields
                .iter()
                .find(|f| {
                    delta_rlc_protocol::column_mapping::physical_name(f, mode).is_ok_and(|n| n == p)
                })
                .map_or(p.clone(), |f| f.name.clone())
        })
        .collect()
}

pub(super) fn clustering_physical_columns(snapshot: &Snapshot) -> Vec<String> {
    let Some(d) = snapshot.domains.get("delta.clustering") else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&d.configuration) else {
        return Vec::new();
    };
    v.get("clusteringColumns")
        .and_then(|c| c.as_array())
        .map(|cols| {
            cols.iter()
                .filter_map(|c| match c {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Array(p) => {
                        p.last().and_then(|x| x.as_str()).map(str::to_string)
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Z-order permutation of `batch` over `cols`: per column, the dense rank of each value (nulls
/// first) scaled to 16 bits, bits interleaved; ties keep their input order.
pub(super) fn zorder_permutation(batch: &RecordBatch, cols: &[String]) -> Result<UInt32Array> {
    let n = batch.num_rows();
    let mut ranks: Vec<Vec<u64>> = Vec::new();
    for c in cols {
        let arr = batch
            .column_by_name(c)
            .ok_or_else(|| EngineError::invalid(format!("ZORDER BY: unknown column {c}")))?;
        let sorted = arrow::compute::sort_to_indices(arr, None, None)?;
        let mut rank = vec![0u64; n];
        let mut r = 0u64;
        for (pos, idx) in sorted.values().iter().enumerate() {
            if pos > 0 {
                let prev = sorted.value(pos - 1) as usize;
                let same = arrow::compute::kernels::cmp::eq(
                    &arr.slice(prev, 1),
                    &arr.slice(*idx as usize, 1),
                )?;
                let eq = (arr.is_null(prev) && arr.is_null(*idx as usize))
                    || (same.is_valid(0) && same.value(0));
                if !eq {
                    r += 1;
                }
            }
            rank[*idx as usize] = r;
        }
        let max = r.max(1);
        ranks.push(rank.into_iter().map(|x| x * 0xFFFF / max).collect());
    }
    let mut keys: Vec<(u128, u32)> = (0..n)
        .map(|i| {
            let mut z: u128 = 0;
            for bit in (0..16).rev() {
                for r in &ranks {
                    z = (z << 1) | u128::from((r[i] >> bit) & 1);
                }
            }
            (z, i as u32)
        })
        .collect();
    keys.sort();
    Ok(UInt32Array::from(
        keys.into_iter().map(|(_, i)| i).collect::<Vec<_>>(),
    ))
}

/// The provider name written on clustered outputs (Delta's liquid clustering).
pub(super) const CLUSTERING_PROVIDER: &str = "liquid";
/// The add tag naming the (physical) clustering columns an output was clustered by.
pub(super) const CLUSTERED_BY_TAG: &str = "clusteredBy";

/// Whether `f` is already clustered by `columns` (physical): written by a clustering OPTIMIZE,
/// and, when it names the columns it was clustered by, by these. A file from another engine's
/// liquid clustering names none and counts as clustered, as that engine's OPTIMIZE treats it.
pub(super) fn clustered_by(f: &Add, columns: &str) -> bool {
    f.clustering_provider.is_some()
        && f.tags
            .as_ref()
            .and_then(|t| t.get(CLUSTERED_BY_TAG))
            .is_none_or(|c| c.as_deref() == Some(columns))
}

/// The add tag naming the (physical) columns an explicit ZORDER BY ordered a file by (Delta's
/// name for it); a file carrying the same columns is not rewritten by the same ZORDER BY.
pub(super) const ZORDER_BY_TAG: &str = "ZCUBE_ZORDER_BY";

/// The `ZORDER_BY_TAG` value for `columns`: their physical names as a JSON array, so a rename
/// under column mapping keeps the files settled and a dropped-and-re-added name does not.
pub(super) fn zorder_tag_value(snapshot: &Snapshot, columns: &[String]) -> Result<String> {
    let mode = snapshot.column_mapping_mode();
    let mut physical = Vec::with_capacity(columns.len());
    for c in columns {
        let Some(f) = snapshot.schema.field(c) else {
            return Err(EngineError::invalid(format!(
                "ZORDER BY: unknown column {c}"
            )));
        };
        physical.push(delta_rlc_protocol::column_mapping::physical_name(f, mode)?.to_string());
    }
    Ok(serde_json::to_string(&physical).unwrap_or_default())
}

/// Whether `f` was written by a ZORDER BY of exactly these columns (`tag` from
/// `zorder_tag_value`); an untagged file, or one ordered by other columns, is not.
pub(super) fn zordered_by(f: &Add, tag: &str) -> bool {
    f.tags
        .as_ref()
        .and_then(|t| t.get(ZORDER_BY_TAG))
        .is_some_and(|c| c.as_deref() == Some(tag))
}
