//! MERGE source-key read predicate (Case 1). Switch `mergeSourceKey`.
//!
//! For the equi-join keys of ON (`target.k = source.k'` conjuncts), the MERGE reads only target rows
//! whose key tuple is one of the source's key tuples (plus the target-only conjuncts of ON). It
//! registers that read as: a pre-filter the stats tier can use (per key column an IN list when there
//! are at most `inSetThreshold` distinct tuples, always a min/max range) and an exact marker — the
//! set of distinct key tuples — that the row-level tiers evaluate as a semi-join.
//! Why this is the true read set: a target row whose key tuple is not among the source's can match
//! no source row under ON, so no clause can touch it and no NOT MATCHED decision depends on it.
//! Key tuples are encoded by the shared key equality (`crate::key_equality`: -0.0 = 0.0, decimals
//! by value, NULL equal to nothing), which the value-exact tier uses again on the winner's rows.
//! The pre-filter compares in the target's types and is left out for float key columns (IEEE total
//! order puts -0.0 below 0.0) and for a column some source batch could not be cast in.
//! Not attempted (the MERGE reads the whole target) when: the switch is off, ON has no equi-join
//! key, or a NOT MATCHED BY SOURCE clause exists (Case 6 handles those). Declined (whole target,
//! event `delta.dml.merge.sourceKeyReadDeclined`) when a key pair's types have no shared equality.
//! Event: `delta.dml.merge.sourceKeyReadPredicate` (preFilter inSet|range, numDistinctKeys,
//! numKeyColumns).

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Schema};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::Accumulator;
use datafusion::logical_expr::{col, lit, BinaryExpr, Expr, Operator};
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::events::Event;
use crate::key_equality::KeyEquality;
use crate::read_set::SourceKeys;

/// What a MERGE reads from its target.
pub struct TargetRead {
    /// Pre-filter AND target-only ON conjuncts (unqualified), or None = whole target.
    pub predicate: Option<Expr>,
    pub keys: Option<Arc<SourceKeys>>,
    pub event: Option<Event>,
}

fn side(e: &Expr, alias: &str) -> Option<String> {
    match e {
        Expr::Column(c)
            if c.relation
                .as_ref()
                .is_some_and(|r| r.table().eq_ignore_ascii_case(alias)) =>
        {
            Some(c.name.clone())
        }
        _ => None,
    }
}

fn refs_only(e: &Expr, alias: &str) -> bool {
    let cols = e.column_refs();
    !cols.is_empty()
        && cols.iter().all(|c| {
            c.relation
                .as_ref()
                .is_some_and(|r| r.table().eq_ignore_ascii_case(alias))
        })
}

/// Splits ON into (target column, source column) key pairs and target-only conjuncts.
pub fn analyze_on(on: &Expr, target: &str, source: &str) -> (Vec<(String, String)>, Vec<Expr>) {
    let mut keys = Vec::new();
    let mut target_only = Vec::new();
    for c in split_conjunction(on) {
        if let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) = c
        {
            match (
                side(left, target),
                side(right, source),
                side(left, source),
                side(right, target),
            ) {
                (Some(t), Some(s), _, _) | (_, _, Some(s), Some(t)) => {
                    keys.push((t, s));
                    continue;
                }
                _ => {}
            }
        }
        if refs_only(c, target) {
            target_only.push(crate::expr_plan::strip_qualifiers(c.clone()));
        }
    }
    (keys, target_only)
}

/// Builds the target read for the given key pairs over the source rows. The exact key set is
/// declined (a coarser read registered) when holding it would take more than `max_key_bytes`.
#[allow(clippy::too_many_arguments)] // each input is one fact of the read; a struct would only rename them
pub fn target_read(
    keys: &[(String, String)],
    target_only: Vec<Expr>,
    target_schema: &Schema,
    source: &crate::ops::merge::SourceRows,
    source_df: &DFSchema,
    source_alias: &str,
    in_set_threshold: usize,
    max_key_bytes: usize,
) -> Result<TargetRead> {
    let extra = target_only.into_iter().reduce(|a, b| a.and(b));
    if keys.is_empty() {
        return Ok(TargetRead {
            predicate: extra,
            keys: None,
            event: None,
        });
    }
    let decline = |reason: &str| TargetRead {
        predicate: extra.clone(),
        keys: None,
        event: Some(Event::new(
            crate::events::EventName::MergeSourceKeyReadDeclined,
            json!({"reason": reason}),
        )),
    };
    // Resolve each key pair's types; the shared key equality decides whether they compare safely.
    let mut target_types = Vec::with_capacity(keys.len());
    let mut source_names = Vec::with_capacity(keys.len());
    let mut pairs = Vec::with_capacity(keys.len());
    for (t, s) in keys {
        let tf = target_schema
            .field_with_name(t)
            .map_err(|_| EngineError::invalid(format!("MERGE ON: unknown target column {t}")))?;
        let si = source_df
            .index_of_column_by_name(
                Some(&datafusion::common::TableReference::bare(source_alias)),
                s,
            )
            .or_else(|| source_df.index_of_column_by_name(None, s))
            .ok_or_else(|| EngineError::invalid(format!("MERGE ON: unknown source column {s}")))?;
        let sf = source_df.field(si);
        pairs.push((tf.data_type().clone(), sf.data_type().clone()));
        target_types.push(tf.data_type().clone());
        source_names.push(sf.name().clone());
    }
    let Some(equality) = KeyEquality::for_pairs(&pairs) else {
        return Ok(decline("key types without a shared equality"));
    };
    let mut tuples =
        crate::ops::merge_probe::presized_key_set(source, &source_names, &pairs, max_key_bytes);
    let mut key_bytes = 0usize;
    // A type without a min/max accumulator gets no range (no pre-filter on that column).
    let mut columns_min_max: Vec<Option<(MinAccumulator, MaxAccumulator)>> = target_types
        .iter()
        .map(|t| {
            Some((
                MinAccumulator::try_new(t).ok()?,
                MaxAccumulator::try_new(t).ok()?,
            ))
        })
        .collect();
    let mut in_lists: Vec<HashSet<ScalarValue>> = vec![HashSet::new(); keys.len()];
    let mut cast_incomplete = vec![false; keys.len()];
    // Float keys get no pre-filter: `=`/BETWEEN on floats order -0.0 below 0.0 (IEEE total
    // order), while the join calls them equal.
    let prefilter_column: Vec<bool> = target_types
        .iter()
        .map(|t| !matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64))
        .collect();
    for b in source.batches()? {
        let b = b?;
        // By name in the batch's own schema, as the join resolves ON: a missing, repeated or
        // retyped key column leaves the source's keys unknown, so the read is coarser.
        let Some(cols) = crate::ops::merge_probe::source_key_columns(&b, &source_names, &pairs)
        else {
            return Ok(decline("source key column missing, repeated or retyped"));
        };
        // The pre-filter compares in the target's types (a value that does not cast equals no
        // target value, so dropping it loses nothing).
        let mut cast_cols: Vec<Option<ArrayRef>> = Vec::with_capacity(keys.len());
        for (k, (c, t)) in cols.iter().zip(&target_types).enumerate() {
            let casted = match prefilter_column[k] {
                true => cast(c, t).ok(),
                false => None,
            };
            cast_incomplete[k] |= casted.is_none();
            cast_cols.push(casted);
        }
        let Ok(added) = tuples.insert_rows(&equality, &cols) else {
            return Ok(decline("source key column outside its key class"));
        };
        key_bytes += added;
        if key_bytes > max_key_bytes {
            // A coarser read (the ON's target-only part) is safe; holding the keys is not.
            return Ok(decline("source keys exceed the memory budget"));
        }
        // The IN lists matter only while the distinct tuples stay within the threshold (the set
        // only grows, so a batch that ends within it was within it all along). Values of rows
        // whose tuple has a NULL elsewhere only widen the list: a broader pre-filter.
        if tuples.len() <= in_set_threshold {
            for (k, c) in cast_cols.iter().enumerate() {
                let Some(c) = c else {
                    continue;
                };
                for r in 0..c.len() {
                    let v = ScalarValue::try_from_array(c, r)?;
                    if !v.is_null() {
                        in_lists[k].insert(v);
                    }
                }
            }
        }
        // Ranges per batch, over every non-NULL value (a row whose tuple has a NULL elsewhere
        // only widens the range: a broader pre-filter, still a superset of the read).
        for (k, c) in cast_cols.iter().enumerate() {
            let Some(c) = c else {
                continue;
            };
            let Some(Some((lo, hi))) = columns_min_max.get_mut(k) else {
                continue;
            };
            lo.update_batch(std::slice::from_ref(c))?;
            hi.update_batch(std::slice::from_ref(c))?;
        }
    }
    let n = tuples.len();
    let in_set = n <= in_set_threshold;
    let mut pre: Option<Expr> = if n == 0 { Some(lit(false)) } else { None };
    if n > 0 {
        for (k, ((t, _), range)) in keys.iter().zip(columns_min_max.iter_mut()).enumerate() {
            let Some((lo, hi)) = range else {
                continue;
            };
            let (lo, hi) = (lo.evaluate()?, hi.evaluate()?);
            if lo.is_null() || hi.is_null() {
                continue;
            }
            // A pre-filter needs every distinct tuple's value in this column (a cast that failed
            // for some row would leave it out of the range).
            if cast_incomplete[k] {
                continue;
            }
            let mut e = col(datafusion::common::Column::new_unqualified(t))
                .between(lit(lo.clone()), lit(hi.clone()));
            if in_set {
                let mut list: Vec<ScalarValue> = in_lists[k].iter().cloned().collect();
                list.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
                e = col(datafusion::common::Column::new_unqualified(t))
                    .in_list(list.into_iter().map(lit).collect(), false)
                    .and(e);
            }
            pre = Some(match pre {
                Some(p) => p.and(e),
                None => e,
            });
        }
    }
    let predicate = match (pre, extra) {
        (Some(p), Some(x)) => Some(p.and(x)),
        (p, x) => p.or(x),
    };
    // No pre-filter (float keys only): still a predicate read, so the exact key set attaches to
    // it; a missing predicate would register a whole-table read, which no tier refines.
    let predicate = predicate.or_else(|| Some(lit(true)));
    let event = Event::new(
        crate::events::EventName::MergeSourceKeyReadPredicate,
        json!({"preFilter": if in_set { "inSet" } else { "range" }, "numDistinctKeys": n, "numKeyColumns": keys.len()}),
    );
    let columns = keys.iter().map(|(t, _)| t.clone()).collect();
    Ok(TargetRead {
        predicate,
        keys: Some(Arc::new(SourceKeys {
            columns,
            equality,
            tuples: tuples.seal(),
        })),
        event: Some(event),
    })
}
