//! What a MERGE reads from the target, registered in the transaction, and the scan of those
//! rows. The registered reads cover every target row the MERGE's outcome depends on: the rows
//! whose keys can match a source row (with the exact key set when the key equality allows) and,
//! with NOT MATCHED BY SOURCE clauses, the rows their conditions select (Case 6); otherwise the
//! whole table. The scan itself is the target stream (`target.rs`); this step only decides which
//! files it reads and how (with a key probe: a first pass over the key columns picks the rows).

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use serde_json::json;

use super::target::{TargetFile, TargetPlan};
use super::{ClauseKind, MergeSpec};
use crate::error::{EngineError, Result};
use crate::ops::dml::{register_candidates, register_reads, Reads};
use crate::ops::merge_probe::{match_key_rows, KeyProbe};
use crate::read_set::split_predicate;
use crate::scan::RowMatcher;
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

/// Registers the MERGE's reads in `txn` and returns the target files it joins and how each is read.
pub(super) async fn plan_target(
    txn: &mut Transaction,
    spec: &MergeSpec,
    snapshot: &Arc<Snapshot>,
) -> Result<TargetPlan> {
    txn.read_set
        .used_columns(expression_columns(spec, &snapshot.schema));
    if let ((names, false), false) = (referenced_names(spec), spec.source_names_tables) {
        txn.read_set.names_columns(names);
    }
    let has = |k: ClauseKind| spec.clauses.iter().any(|c| c.kind == k);
    let needs_target_only = has(ClauseKind::NotMatchedBySource);
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    // Target: every candidate file, live rows with row index. NOT MATCHED BY SOURCE reads everything.
    // What the MERGE reads from the target: the source-key predicate when possible.
    let source_df = DFSchema::try_from_qualified_schema(
        spec.source_alias.to_ascii_lowercase().as_str(),
        spec.source.schema().as_ref(),
    )?;
    let on_expr = spec.on.clone();
    // Case 6: with NOT MATCHED BY SOURCE clauses, the MERGE also reads the target rows their
    // conditions can touch; an unconditional one reads everything.
    let nmbs_conditions: Option<Vec<Expr>> = if needs_target_only
        && txn
            .table
            .conflict
            .enabled(crate::conflict_config::Switch::MergeNotMatchedBySource)
    {
        let mut conds = Vec::new();
        for c in spec
            .clauses
            .iter()
            .filter(|c| c.kind == ClauseKind::NotMatchedBySource)
        {
            let Some(e) = c.condition.clone() else {
                conds.clear();
                break;
            };
            let target_only = e.column_refs().iter().all(|col| {
                col.relation
                    .as_ref()
                    .is_none_or(|r| r.table().eq_ignore_ascii_case(&spec.target_alias))
            });
            if !target_only {
                return Err(EngineError::invalid(
                    "MERGE: a NOT MATCHED BY SOURCE condition may only reference the target",
                ));
            }
            conds.push(crate::expr_plan::strip_qualifiers(e));
        }
        (!conds.is_empty()).then_some(conds)
    } else {
        None
    };
    let key_read_allowed = txn
        .table
        .conflict
        .enabled(crate::conflict_config::Switch::MergeSourceKey)
        && (!needs_target_only || nmbs_conditions.is_some());
    // Each key set (the read set's exact keys, the probe's) may take a share of the memory limit.
    let key_budget = super::source::memory_budget(&txn.table.env);
    let (on_keys, on_target_only) =
        crate::ops::merge_keys::analyze_on(&on_expr, &spec.target_alias, &spec.source_alias);
    let read = if !key_read_allowed {
        None
    } else {
        let (keys, target_only) = (&on_keys, on_target_only);
        if keys.is_empty() {
            None
        } else {
            Some(crate::ops::merge_keys::target_read(
                keys,
                target_only,
                table_schema.as_ref(),
                &spec.source,
                &source_df,
                &spec.source_alias.to_ascii_lowercase(),
                txn.table.conflict.in_set_threshold,
                key_budget,
            )?)
        }
    };
    // The source-key read: its predicate with the exact key set attached.
    let parts = &snapshot.metadata.partition_columns;
    let key_read = |p: &Expr| {
        let mut kp = split_predicate(p, parts, p.to_string());
        kp.exact_keys = read.as_ref().and_then(|r| r.keys.clone());
        kp
    };
    let whole = |files: Vec<delta_rlc_protocol::actions::Add>| -> Vec<TargetFile> {
        files
            .into_iter()
            .map(|add| TargetFile {
                add,
                only_rows: None,
                known_state: None,
            })
            .collect()
    };
    // Candidate files whose key columns the probe read (it drops those without a match).
    let mut probed = 0usize;
    let files: Vec<TargetFile> = match (&read, &nmbs_conditions) {
        (Some(r), None) => {
            // No NOT MATCHED BY SOURCE clause: only target rows whose keys occur in the source can
            // join. With DVs, read just those (a key-probe pass, then their full rows).
            let source_alias = spec.source_alias.to_ascii_lowercase();
            // The probe tests target rows against the read's own exact key set when there is
            // one (built once, under the same equality); otherwise it builds its own.
            let probe = match snapshot.deletion_vectors_enabled() && !needs_target_only {
                true if r.keys.is_some() => r.keys.clone().map(KeyProbe::from_keys),
                true => KeyProbe::build(
                    &on_keys,
                    table_schema.as_ref(),
                    &spec.source,
                    &source_df,
                    &source_alias,
                    key_budget,
                )?,
                false => None,
            };
            let matcher = probe.and_then(|p| {
                let columns = p.columns().to_vec();
                RowMatcher::with_verdict(Arc::clone(snapshot), columns, Arc::new(p))
            });
            let reads = match &r.predicate {
                Some(p) => Reads::Predicates(vec![key_read(p)]),
                None => Reads::WholeTable,
            };
            let files = register_reads(txn, snapshot, r.predicate.as_ref(), reads)?;
            probed = files.len();
            let s = match matcher {
                Some(m) => match_key_rows(txn, m, files).await?,
                None => whole(files),
            };
            if let Some(e) = &r.event {
                txn.events.push(e.clone());
            }
            s
        }
        (Some(r), Some(conds)) => {
            // Two reads, OR-ed: the source-key read and the NMBS conditions.
            let nmbs = conds
                .iter()
                .cloned()
                .reduce(|a, b| a.or(b))
                .ok_or_else(|| EngineError::Internal("no NMBS condition".into()))?;
            // Without a key pre-filter (a declined key set, no target-only ON conjunct) the
            // matched rows can be any row: the key read is `true`, never dropped.
            let key_pred = r
                .predicate
                .clone()
                .unwrap_or_else(|| datafusion::logical_expr::lit(true));
            let scan_pred = key_pred.clone().or(nmbs.clone());
            let reads = Reads::Predicates(vec![
                key_read(&key_pred),
                split_predicate(&nmbs, parts, nmbs.to_string()),
            ]);
            let s = whole(register_reads(txn, snapshot, Some(&scan_pred), reads)?);
            if let Some(e) = &r.event {
                txn.events.push(e.clone());
            }
            txn.events.push(crate::events::Event::new(
                crate::events::EventName::MergeNotMatchedBySourceReadPredicate,
                json!({"numClauses": conds.len(), "predicate": nmbs.to_string()}),
            ));
            s
        }
        _ => whole(register_candidates(txn, snapshot, None)?),
    };
    let scanned = probed.max(files.len());
    Ok(TargetPlan { files, scanned })
}

/// Every name by which the MERGE's text reaches a column, whatever its qualifier (a source
/// column's name too: were the target to gain a column of that name, an unqualified reference
/// would become ambiguous), and whether an action takes the target's column list as it is
/// (`UPDATE SET *`, `INSERT *`, `INSERT VALUES` without a column list).
fn referenced_names(spec: &MergeSpec) -> (Vec<String>, bool) {
    use super::ClauseAction;
    let refs = |e: &Expr| {
        e.column_refs()
            .into_iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    };
    let (mut out, mut whole_list) = (refs(&spec.on), false);
    for c in &spec.clauses {
        if let Some(cond) = &c.condition {
            out.extend(refs(cond));
        }
        match &c.action {
            ClauseAction::Delete => {}
            ClauseAction::Update(None) | ClauseAction::Insert(None) => whole_list = true,
            ClauseAction::Update(Some(sets)) => {
                for (col, value) in sets {
                    out.push(col.clone());
                    out.extend(refs(value));
                }
            }
            ClauseAction::Insert(Some((cols, values))) => {
                whole_list |= cols.is_empty();
                out.extend(cols.iter().cloned());
                for v in values {
                    out.extend(refs(v));
                }
            }
        }
    }
    (out, whole_list)
}

/// Every column a MERGE's expressions read or write besides its registered reads (for the
/// type-change proof, `conflict::type_change`): the ON condition's columns (its keys too —
/// coarser than needed, never missing one), every clause condition's, each assigned or inserted
/// column and the columns its value reads; `UPDATE SET *`, `INSERT *` and an INSERT without a
/// column list write every column. Names of source columns are included as well: a superset.
fn expression_columns(
    spec: &MergeSpec,
    schema: &delta_rlc_protocol::schema::StructType,
) -> Vec<String> {
    let (mut out, whole_list) = referenced_names(spec);
    if whole_list {
        out.extend(schema.fields.iter().map(|f| f.name.clone()));
    }
    out
}
