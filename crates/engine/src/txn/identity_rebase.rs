//! Moves a losing transaction's identity values past the winners' before its next attempt, by
//! the shifts the checker proved (`conflict/identity_rebase.rs`). Each staged new file is read,
//! each shifted column's values are checked to be exactly the generated ones (`after + step, …,
//! last`, no NULL, as many as were generated) and moved, every table rule of the metadata the
//! commit will carry is checked on the moved rows (a CHECK on the identity column may no longer
//! hold), a column generated from a moved one is computed again from the moved value (as a serial
//! run would have), and the rows are written as new files that replace the old ones in the staged
//! actions. Any failure is returned as the reason to abort.
//!
//! The old files were never committed; they stay unreferenced, like any aborted write's, for
//! VACUUM. Files are rewritten from their current values, once per attempt, whatever the number
//! of winners (the shifts were added up).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use delta_rlc_protocol::actions::{Action, Add, Metadata};
use delta_rlc_protocol::schema::StructType;
use delta_rlc_storage::TableStore;

use crate::conflict::identity_rebase::Shift;
use crate::conflict::LoserState;
use crate::constraints::TableConstraints;
use crate::env::Env;
use crate::error::one_line;
use crate::scan::{read_file, FileReadOptions};
use crate::snapshot::Snapshot;
use crate::write::FileWriter;

type Reason = String;

/// Whether `v` is one of the values generated after `s.after` up to `s.last`.
fn generated(s: &Shift, v: i64) -> bool {
    let inside = if s.step > 0 {
        s.after < v && v <= s.last
    } else {
        s.last <= v && v < s.after
    };
    inside && (i128::from(v) - i128::from(s.after)) % i128::from(s.step) == 0
}

/// `batch` with each shifted column's values moved and the columns in `recompute` (generated from
/// a moved one) set to NULL, which the writer computes; counts the values seen per column.
fn shifted(
    batch: &RecordBatch,
    shifts: &BTreeMap<String, Shift>,
    recompute: &[&str],
    seen: &mut BTreeMap<String, i128>,
) -> Result<RecordBatch, Reason> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for (name, s) in shifts {
        let i = batch
            .schema()
            .index_of(name)
            .map_err(|_| format!("a new file lacks column {name}"))?;
        let values = columns
            .get(i)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .ok_or_else(|| format!("column {name} is not BIGINT in a new file"))?;
        let mut out = Vec::with_capacity(values.len());
        for v in values.iter() {
            let v = v.ok_or_else(|| format!("a new row has no {name}"))?;
            if !generated(s, v) {
                return Err(format!(
                    "{name} = {v} is not one of the values this transaction generated"
                ));
            }
            out.push(
                v.checked_add(s.by)
                    .ok_or_else(|| format!("{name} = {v} moved overflows BIGINT"))?,
            );
        }
        *seen.entry(name.clone()).or_default() += values.len() as i128;
        if let Some(slot) = columns.get_mut(i) {
            *slot = Arc::new(Int64Array::from(out));
        }
    }
    let mut fields: Vec<arrow::datatypes::Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for name in recompute {
        let i = batch
            .schema()
            .index_of(name)
            .map_err(|_| format!("a new file lacks column {name}"))?;
        if let Some(slot) = columns.get_mut(i) {
            *slot = arrow::array::new_null_array(slot.data_type(), slot.len());
        }
        // NULL until the writer computes it, even in a NOT NULL column (checked after).
        if let Some(f) = fields.get_mut(i) {
            *f = f.clone().with_nullable(true);
        }
    }
    let schema =
        arrow::datatypes::Schema::new_with_metadata(fields, batch.schema().metadata().clone());
    RecordBatch::try_new(Arc::new(schema), columns).map_err(|e| e.to_string())
}

/// Rewrites the loser's staged files with its pending shifts applied, reading them under the
/// checker's view of the table; clears the shifts.
pub(super) async fn apply(
    store: &TableStore,
    env: &Env,
    parquet: Option<Arc<crate::write::encoding::ParquetSettings>>,
    read_snapshot: &Snapshot,
    state: &mut LoserState,
) -> Result<(), Reason> {
    let shifts = std::mem::take(&mut state.identity_shifts);
    if shifts.values().all(|s| s.by == 0) {
        return Ok(());
    }
    let metadata: Metadata = state
        .staged
        .iter()
        .find_map(Action::as_metadata)
        .cloned()
        .ok_or("no metadata action")?;
    let err = |e: crate::error::EngineError| one_line(&e.to_string());
    let schema = StructType::parse(&metadata.schema_string).map_err(|e| e.to_string())?;
    let rules = TableConstraints::new(&schema, &metadata.configuration).map_err(err)?;
    let recompute: Vec<&str> = shifts
        .keys()
        .flat_map(|c| rules.generated_reading(c))
        .collect();
    let mut writer = FileWriter::for_table(store, env, &schema, &metadata).map_err(err)?;
    writer.constraints = Some(&rules);
    // The caller's Parquet settings, as the statement's own files had them.
    writer.parquet = parquet;
    let view = state.view(read_snapshot);
    let read = FileReadOptions {
        apply_dv: false,
        ..Default::default()
    };
    let mut seen = BTreeMap::new();
    let mut staged = Vec::with_capacity(state.staged.len());
    for a in &state.staged {
        let Action::Add(add) = a else {
            staged.push(a.clone());
            continue;
        };
        let batches = read_file(store, view, add, &read).await.map_err(err)?;
        let moved = batches
            .iter()
            .map(|b| shifted(b, &shifts, &recompute, &mut seen))
            .collect::<Result<Vec<_>, _>>()?;
        for new in writer.write(&moved, true).await.map_err(err)? {
            staged.push(Action::Add(Add {
                tags: add.tags.clone(),
                clustering_provider: add.clustering_provider.clone(),
                ..new
            }));
        }
    }
    for (name, s) in &shifts {
        let expected = (i128::from(s.last) - i128::from(s.after)) / i128::from(s.step);
        let found = seen.get(name).copied().unwrap_or(0);
        if found != expected {
            return Err(format!(
                "{name}: {found} values in the new files, {expected} generated"
            ));
        }
    }
    state.staged = staged;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_generated_values_qualify() {
        let up = Shift {
            after: 10,
            last: 16,
            step: 2,
            by: 4,
        };
        assert!(generated(&up, 12) && generated(&up, 16));
        assert!(!generated(&up, 10) && !generated(&up, 13) && !generated(&up, 18));
        let down = Shift {
            after: -1,
            last: -4,
            step: -1,
            by: -3,
        };
        assert!(generated(&down, -2) && generated(&down, -4));
        assert!(!generated(&down, -1) && !generated(&down, -5) && !generated(&down, 0));
        let batch = RecordBatch::try_from_iter([(
            "id",
            Arc::new(Int64Array::from(vec![12, 14])) as ArrayRef,
        )])
        .expect("batch");
        let mut seen = BTreeMap::new();
        let shifts = BTreeMap::from([("id".to_string(), up)]);
        let out = shifted(&batch, &shifts, &[], &mut seen).expect("moved");
        let ids = out
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ids");
        assert_eq!(ids.values().to_vec(), vec![16, 18]);
        assert_eq!(seen["id"], 2);
        let stray = RecordBatch::try_from_iter([(
            "id",
            Arc::new(Int64Array::from(vec![Some(12), None])) as ArrayRef,
        )])
        .expect("batch");
        assert!(shifted(&stray, &shifts, &[], &mut seen).is_err());
    }
}
