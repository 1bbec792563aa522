//! MERGE's target-side key probe: which target rows have an ON key tuple among the source's.
//!
//! It is the matching pass of a merge-on-read MERGE (deletion vectors on, no NOT MATCHED BY SOURCE
//! clause): only target rows whose equi-join key tuple (the `t.k = s.k'` conjuncts of ON) is one of
//! the source's can satisfy ON, so only they are read in full and joined; every other target row
//! would join with nothing and no clause would touch it.
//!
//! The probe must never drop a row the join would match. Target and source key values are compared
//! by the shared key equality (`crate::key_equality`, the one the conflict tiers use: -0.0 = 0.0,
//! every NaN alike, decimals by value across scales, integers across widths, NULL equal to nothing),
//! with a typed i64 set as a fast path for one 32/64-bit integer key on both sides. A key pair
//! whose types have no shared equality is refused, and so is a source batch whose key column is
//! missing, repeated or outside its key class. Refused means the MERGE reads its candidate files in
//! full.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Int32Type, Int64Type, Schema};
use datafusion::common::{DFSchema, TableReference};

use delta_rlc_protocol::actions::Add;
use serde_json::json;

use super::merge::target::{FileState, TargetFile};
use crate::error::{EngineError, Result};
use crate::events::Event;
use crate::key_equality::KeyEquality;
use crate::key_set::{is_int_key, KeySet};
use crate::read_set::SourceKeys;
use crate::scan::{match_files, RowMatcher, RowVerdict};
use crate::txn::Transaction;

/// The source's key tuples, ready to test target rows against.
pub struct KeyProbe {
    /// Target key columns (unqualified names) in tuple order, the equality and the distinct
    /// source tuples (sealed: see [`KeySet::seal`]).
    keys: Arc<SourceKeys>,
}

/// The key columns of one source batch, found by name in the batch's own schema (as the join
/// resolves ON); `None` when one is missing, ambiguous, or typed unlike the declared source key
/// `types` (its pairs' second half). A caller that gets `None` cannot build the key set.
pub(crate) fn source_key_columns(
    b: &RecordBatch,
    names: &[String],
    types: &[(DataType, DataType)],
) -> Option<Vec<ArrayRef>> {
    let schema = b.schema();
    names
        .iter()
        .zip(types)
        .map(|(name, (_, t))| {
            let mut named = schema
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| f.name() == name);
            let (i, _) = named.next()?;
            if named.next().is_some() {
                return None;
            }
            let c = b.columns().get(i)?;
            (c.data_type() == t).then(|| Arc::clone(c))
        })
        .collect()
}

/// An empty key set for the source's key columns `names`, sized for what the rows held in memory
/// say of a single integer key before any is inserted (its non-NULL values' min, max and count:
/// see [`KeySet::presized`]). A spilled source is not read an extra time: it gets the plain set.
pub(crate) fn presized_key_set(
    source: &crate::ops::merge::SourceRows,
    names: &[String],
    pairs: &[(DataType, DataType)],
    max_bytes: usize,
) -> KeySet {
    let plain = || KeySet::for_pairs(pairs);
    let one_int = matches!(pairs, [(t, s)] if is_int_key(t) && is_int_key(s));
    let (true, Some(batches)) = (one_int, source.in_memory()) else {
        return plain();
    };
    let (mut lo, mut hi, mut count) = (i64::MAX, i64::MIN, 0usize);
    for b in batches {
        let Some(cols) = source_key_columns(b, names, pairs) else {
            return plain();
        };
        let [c] = cols.as_slice() else {
            return plain();
        };
        let range = match c.data_type() {
            DataType::Int64 => {
                let a = c.as_primitive::<Int64Type>();
                arrow::compute::min(a).zip(arrow::compute::max(a))
            }
            DataType::Int32 => {
                let a = c.as_primitive::<Int32Type>();
                arrow::compute::min(a)
                    .zip(arrow::compute::max(a))
                    .map(|(a, b)| (i64::from(a), i64::from(b)))
            }
            _ => return plain(),
        };
        if let Some((a, b)) = range {
            (lo, hi) = (lo.min(a), hi.max(b));
            count += c.len() - c.null_count();
        }
    }
    match count {
        0 => plain(),
        _ => KeySet::presized(pairs, lo, hi, count, max_bytes),
    }
}

impl KeyProbe {
    /// The probe for ON key pairs `keys` (target column, source column) over the source rows, or
    /// `None` when a key pair's types have no shared equality or holding the keys would take more
    /// than `max_key_bytes` (then the MERGE reads its candidate files in full, streamed).
    pub fn build(
        keys: &[(String, String)],
        target_schema: &Schema,
        source: &crate::ops::merge::SourceRows,
        source_df: &DFSchema,
        source_alias: &str,
        max_key_bytes: usize,
    ) -> Result<Option<KeyProbe>> {
        if keys.is_empty() {
            return Ok(None);
        }
        let mut types = Vec::with_capacity(keys.len());
        let mut source_idx = Vec::with_capacity(keys.len());
        for (t, s) in keys {
            let Ok(tf) = target_schema.field_with_name(t) else {
                return Ok(None);
            };
            let Some(si) = source_df
                .index_of_column_by_name(Some(&TableReference::bare(source_alias)), s)
                .or_else(|| source_df.index_of_column_by_name(None, s))
            else {
                return Ok(None);
            };
            let source_type = source_df.field(si).data_type();
            types.push((tf.data_type().clone(), source_type.clone()));
            source_idx.push(si);
        }
        let Some(equality) = KeyEquality::for_pairs(&types) else {
            return Ok(None);
        };
        let columns: Vec<String> = keys.iter().map(|(t, _)| t.clone()).collect();
        let source_names: Vec<String> = source_idx
            .iter()
            .map(|&i| source_df.field(i).name().clone())
            .collect();
        let mut set = presized_key_set(source, &source_names, &types, max_key_bytes);
        let mut key_bytes = 0usize;
        for b in source.batches()? {
            let Some(cols) = source_key_columns(&b?, &source_names, &types) else {
                return Ok(None);
            };
            let Ok(added) = set.insert_rows(&equality, &cols) else {
                return Ok(None);
            };
            key_bytes += added;
            if key_bytes > max_key_bytes {
                return Ok(None);
            }
        }
        Ok(Some(KeyProbe::from_keys(Arc::new(SourceKeys {
            columns,
            equality,
            tuples: set.seal(),
        }))))
    }

    /// The probe over a key set already built (the MERGE's source-key read holds the same one).
    pub fn from_keys(keys: Arc<SourceKeys>) -> KeyProbe {
        KeyProbe { keys }
    }

    /// Target key columns (unqualified names), in tuple order.
    pub fn columns(&self) -> &[String] {
        &self.keys.columns
    }

    /// Number of distinct source key tuples.
    pub fn len(&self) -> usize {
        self.keys.tuples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// For each row of `batch` (which holds the target key columns by name): does its key tuple
    /// occur in the source? NULL keys answer false.
    pub fn contains(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let cols: Vec<ArrayRef> = self
            .keys
            .columns
            .iter()
            .map(|c| {
                batch.column_by_name(c).cloned().ok_or_else(|| {
                    EngineError::Internal(format!("MERGE key column {c} not decoded"))
                })
            })
            .collect::<Result<_>>()?;
        let keys = &self.keys;
        Ok(BooleanArray::from(
            keys.tuples.contains_rows(&keys.equality, &cols)?,
        ))
    }
}

/// The matching pass of a merge-on-read MERGE over candidate `files` (already registered as
/// read): for each file with live rows `matcher` (a [`KeyProbe`]) selects, those rows, its DV at
/// read time and its live row count — so removing its rows never mistakes them for the whole
/// file. The MERGE's target stream then reads every column of only those rows.
pub(crate) async fn match_key_rows(
    txn: &mut Transaction,
    matcher: RowMatcher,
    files: Vec<Add>,
) -> Result<Vec<TargetFile>> {
    let parallelism = txn.table.env.parallelism;
    let candidates = files.len();
    let matches = match_files(&txn.table.store, Arc::new(matcher), files, parallelism).await?;
    let targets: Vec<TargetFile> = matches
        .into_iter()
        .filter(|m| !m.matched.is_empty())
        .map(|m| TargetFile {
            known_state: Some(FileState {
                old_dv: m.old_dv,
                live_rows: m.live_rows,
            }),
            only_rows: Some(m.matched),
            add: m.add,
        })
        .collect();
    let rows_read: u64 = targets
        .iter()
        .filter_map(|t| t.only_rows.as_ref().map(|r| r.len()))
        .sum();
    txn.events.push(Event::new(
        crate::events::EventName::MergeKeyProbeRead,
        json!({"numCandidateFiles": candidates, "numFilesWithKeys": targets.len(), "numTargetRowsRead": rows_read}),
    ));
    Ok(targets)
}

impl RowVerdict for KeyProbe {
    fn verdict(&self, rows: &RecordBatch) -> Result<BooleanArray> {
        self.contains(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::merge::SourceRows;
    use arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field};

    fn source(cols: Vec<(&str, ArrayRef)>) -> (SourceRows, DFSchema) {
        let b = RecordBatch::try_from_iter(cols).unwrap();
        let df = DFSchema::try_from_qualified_schema("s", b.schema().as_ref()).unwrap();
        (rows_of(&[b]), df)
    }

    fn rows_of(batches: &[RecordBatch]) -> SourceRows {
        SourceRows::from_batches(batches[0].schema(), batches.to_vec())
    }

    #[test]
    fn integer_and_tuple_keys_match_exactly_and_nulls_never() {
        let target = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]);
        let (src, df) = source(vec![
            (
                "k",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(5)])) as ArrayRef,
            ),
            (
                "n",
                Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])),
            ),
        ]);
        let t = RecordBatch::try_new(
            Arc::new(target.clone()),
            vec![
                Arc::new(Int64Array::from(vec![
                    Some(1),
                    Some(2),
                    None,
                    Some(5),
                    Some(1),
                ])),
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    Some("b"),
                    Some("b"),
                    None,
                    Some("x"),
                ])),
            ],
        )
        .unwrap();
        let one = KeyProbe::build(
            &[("id".into(), "k".into())],
            &target,
            &src,
            &df,
            "s",
            usize::MAX,
        )
        .unwrap()
        .unwrap();
        assert_eq!(one.len(), 2);
        // Keys past the memory budget: no probe (the MERGE reads its candidates in full). Two
        // keys take at least a bitmap word (8 bytes) or two hash entries.
        let over = KeyProbe::build(&[("id".into(), "k".into())], &target, &src, &df, "s", 7);
        assert!(over.unwrap().is_none());
        let got: Vec<bool> = one
            .contains(&t)
            .unwrap()
            .iter()
            .map(|v| v.unwrap())
            .collect();
        assert_eq!(got, vec![true, false, false, true, true]);
        let two = KeyProbe::build(
            &[("id".into(), "k".into()), ("name".into(), "n".into())],
            &target,
            &src,
            &df,
            "s",
            usize::MAX,
        )
        .unwrap()
        .unwrap();
        assert_eq!(two.len(), 1, "only (1, 'a') has no NULL");
        let got: Vec<bool> = two
            .contains(&t)
            .unwrap()
            .iter()
            .map(|v| v.unwrap())
            .collect();
        assert_eq!(got, vec![true, false, false, false, false]);
    }

    #[test]
    fn float_zeros_match_and_coercible_types_probe_by_value() {
        let target = Schema::new(vec![
            Field::new("f", DataType::Float64, true),
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let (src, df) = source(vec![
            (
                "f",
                Arc::new(Float64Array::from(vec![0.0, f64::NAN])) as ArrayRef,
            ),
            ("i32", Arc::new(Int32Array::from(vec![1, 7]))),
        ]);
        let build = |t: &str, s: &str| {
            KeyProbe::build(&[(t.into(), s.into())], &target, &src, &df, "s", usize::MAX).unwrap()
        };
        let t = RecordBatch::try_new(
            Arc::new(target.clone()),
            vec![
                Arc::new(Float64Array::from(vec![-0.0, 0.5, f64::NAN])),
                Arc::new(Int64Array::from(vec![7, 2, 1])),
                Arc::new(StringArray::from(vec!["1", "7", "x"])),
            ],
        )
        .unwrap();
        let got = |p: KeyProbe| -> Vec<bool> {
            p.contains(&t).unwrap().iter().map(|v| v.unwrap()).collect()
        };
        assert_eq!(
            got(build("f", "f").unwrap()),
            vec![true, false, true],
            "-0.0 = 0.0 and NaN = NaN, as the join decides"
        );
        assert_eq!(got(build("i", "i32").unwrap()), vec![true, false, true]);
        assert!(build("s", "i32").is_none(), "string vs integer");
        assert!(build("i", "f").is_none(), "integer vs float");
        assert!(build("nope", "f").is_none(), "unknown target column");
        assert!(build("i", "nope").is_none(), "unknown source column");
    }

    #[test]
    fn source_key_columns_are_found_by_name_in_each_batch() {
        let target = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
        // The declared source schema is (k, n); the rows arrive as (n, k).
        let declared = Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("n", DataType::Int64, true),
        ]);
        let df = DFSchema::try_from_qualified_schema("s", &declared).unwrap();
        let rows = RecordBatch::try_from_iter(vec![
            ("n", Arc::new(Int64Array::from(vec![100, 200])) as ArrayRef),
            ("k", Arc::new(Int64Array::from(vec![1, 2]))),
        ])
        .unwrap();
        let keys = [("id".to_string(), "k".to_string())];
        let probe = KeyProbe::build(
            &keys,
            &target,
            &rows_of(std::slice::from_ref(&rows)),
            &df,
            "s",
            usize::MAX,
        )
        .unwrap()
        .unwrap();
        let t = RecordBatch::try_from_iter(vec![(
            "id",
            Arc::new(Int64Array::from(vec![1, 2, 100])) as ArrayRef,
        )])
        .unwrap();
        let got: Vec<bool> = probe
            .contains(&t)
            .unwrap()
            .iter()
            .map(|v| v.unwrap())
            .collect();
        assert_eq!(got, vec![true, true, false]);
        // A batch without the key column, or with it twice, or typed otherwise: no probe.
        let missing = rows.project(&[0]).unwrap();
        assert!(
            KeyProbe::build(&keys, &target, &rows_of(&[missing]), &df, "s", usize::MAX)
                .unwrap()
                .is_none()
        );
        let twice = RecordBatch::try_from_iter(vec![
            ("k", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
            ("k", Arc::new(Int64Array::from(vec![2]))),
        ])
        .unwrap();
        assert!(
            KeyProbe::build(&keys, &target, &rows_of(&[twice]), &df, "s", usize::MAX)
                .unwrap()
                .is_none()
        );
        let typed = RecordBatch::try_from_iter(vec![(
            "k",
            Arc::new(Int32Array::from(vec![1])) as ArrayRef,
        )])
        .unwrap();
        assert!(
            KeyProbe::build(&keys, &target, &rows_of(&[typed]), &df, "s", usize::MAX)
                .unwrap()
                .is_none()
        );
    }
}
