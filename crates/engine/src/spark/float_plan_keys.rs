//! Float keys of a plan's own nodes compared as Spark compares them: -0.0 equals 0.0 and every
//! NaN is one NaN, whatever its bits. Spark normalizes the floats it groups, de-duplicates and
//! joins by (`NormalizeFloatingNumbers`), and its sort orders by `compareDoubles` (-0.0 ties with
//! 0.0; any NaN sorts above every number). DataFusion's kernels compare bits (Arrow's total
//! order), so before this module:
//! - `GROUP BY x` and `SELECT DISTINCT x` kept a NaN with its sign bit set apart from NaN, and a
//!   `CREATE TABLE … AS SELECT … GROUP BY` stored two groups where Spark stores one;
//! - `ORDER BY x` put a negative NaN first, below every number (`ORDER BY x DESC LIMIT 1` missed
//!   it), and ordered -0.0 before 0.0 where Spark ties them (the next key decides);
//! - `EXCEPT`, `INTERSECT` and `JOIN … USING` matched by bits (`EXCEPT` kept a NaN the other side
//!   held with other bits), and so did `x IN (SELECT …)`, so a DELETE by it missed rows.
//!
//! Each such key of a float type is wrapped in `spark_float_key` (`float_keys`), in its own type.
//! A grouped or de-duplicated key keeps its name (the column then holds the normalized value, as
//! Spark's does); a sort or join key only decides order or matching. Comparisons written as
//! `a = b` are the expression rewrite's (`rewrite.rs`); window keys and DISTINCT aggregate
//! arguments are `aggregates.rs`'s. Not covered: GROUPING SETS / ROLLUP / CUBE keys (docs/sql.md).

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, Result};
use datafusion::logical_expr::expr::InSubquery;
use datafusion::logical_expr::{
    Aggregate, Distinct, Expr, LogicalPlan, Projection, Sort, Subquery,
};

use super::float_keys::normalized;

/// `plan` with the float keys of its own node normalized (its inputs are not visited).
pub(super) fn normalize_keys(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let t = match plan {
        LogicalPlan::Sort(s) => sort(s)?,
        LogicalPlan::Aggregate(a) => aggregate(a)?,
        LogicalPlan::Distinct(Distinct::All(input)) => distinct(input)?,
        LogicalPlan::Join(mut j) => {
            let (ls, rs) = (Arc::clone(j.left.schema()), Arc::clone(j.right.schema()));
            let mut changed = false;
            for (l, r) in j.on.iter_mut() {
                let (nl, cl) = normalized(l.clone(), &ls);
                let (nr, cr) = normalized(r.clone(), &rs);
                (*l, *r) = (nl, nr);
                changed |= cl || cr;
            }
            Transformed::new_transformed(LogicalPlan::Join(j), changed)
        }
        other => Transformed::no(other),
    };
    // `x IN (SELECT …)` in any of the node's expressions (a filter's, most often).
    t.transform_data(|p| {
        let schema = in_subquery_schema(&p);
        p.map_expressions(|e| e.transform_up(|e| in_subquery(e, &schema)))
    })
}

fn sort(mut s: Sort) -> Result<Transformed<LogicalPlan>> {
    let schema = Arc::clone(s.input.schema());
    let mut changed = false;
    for k in s.expr.iter_mut() {
        let (n, c) = normalized(k.expr.clone(), &schema);
        k.expr = n;
        changed |= c;
    }
    Ok(Transformed::new_transformed(LogicalPlan::Sort(s), changed))
}

/// A grouping key normalized under its own name, so the nodes above find it as before.
fn keyed(e: Expr, schema: &DFSchema) -> (Expr, bool) {
    let (relation, name) = e.qualified_name();
    let inner = match e {
        Expr::Alias(a) => *a.expr,
        other => other,
    };
    match normalized(inner.clone(), schema) {
        (n, true) => (n.alias_qualified(relation, name), true),
        (_, false) => (inner.alias_qualified(relation, name), false),
    }
}

fn aggregate(a: Aggregate) -> Result<Transformed<LogicalPlan>> {
    let schema = Arc::clone(a.input.schema());
    let grouping_sets = a
        .group_expr
        .iter()
        .any(|e| matches!(e, Expr::GroupingSet(_)));
    let changes = |e: &Expr| !grouping_sets && normalized(e.clone(), &schema).1;
    if !a.group_expr.iter().any(|e| match e {
        Expr::Alias(al) => changes(&al.expr),
        e => changes(e),
    }) {
        return Ok(Transformed::no(LogicalPlan::Aggregate(a)));
    }
    let group: Vec<Expr> = a
        .group_expr
        .into_iter()
        .map(|e| match keyed(e.clone(), &schema) {
            (n, true) => n,
            (_, false) => e,
        })
        .collect();
    let a = Aggregate::try_new(a.input, group, a.aggr_expr)?;
    Ok(Transformed::yes(LogicalPlan::Aggregate(a)))
}

/// `SELECT DISTINCT` over float columns: the aggregate DataFusion's optimizer would make of it
/// (`ReplaceDistinctWithAggregate`), grouping by the normalized columns.
fn distinct(input: Arc<LogicalPlan>) -> Result<Transformed<LogicalPlan>> {
    let schema = Arc::clone(input.schema());
    let columns: Vec<Expr> = schema
        .iter()
        .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
        .collect();
    if !columns.iter().any(|c| normalized(c.clone(), &schema).1) {
        return Ok(Transformed::no(LogicalPlan::Distinct(Distinct::All(input))));
    }
    let group = columns
        .into_iter()
        .map(|c| match keyed(c.clone(), &schema) {
            (n, true) => n,
            (_, false) => c,
        })
        .collect();
    let a = Aggregate::try_new(input, group, vec![])?;
    Ok(Transformed::yes(LogicalPlan::Aggregate(a)))
}

/// The schema a node's expressions are written over (its inputs' columns).
fn in_subquery_schema(p: &LogicalPlan) -> DFSchema {
    datafusion::logical_expr::utils::merge_schema(&p.inputs())
}

/// `x IN (SELECT y …)` with float `x` or `y`: both sides normalized (the subquery through a
/// projection of its one column, under its name).
fn in_subquery(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::InSubquery(q) = e else {
        return Ok(Transformed::no(e));
    };
    let (expr, expr_changed) = normalized(*q.expr.clone(), schema);
    let sub = Arc::clone(&q.subquery.subquery);
    let sub_schema = Arc::clone(sub.schema());
    let (plan, sub_changed) = match sub_schema.iter().next() {
        Some((qual, f)) if sub_schema.fields().len() == 1 && !is_key_projection(&sub) => {
            let c = Expr::Column(Column::new(qual.cloned(), f.name()));
            match normalized(c, &sub_schema) {
                (n, true) => {
                    let p = Projection::try_new(
                        vec![n.alias_qualified(qual.cloned(), f.name())],
                        Arc::clone(&sub),
                    )?;
                    (Arc::new(LogicalPlan::Projection(p)), true)
                }
                (_, false) => (sub, false),
            }
        }
        _ => (sub, false),
    };
    if !(expr_changed || sub_changed) {
        return Ok(Transformed::no(Expr::InSubquery(q)));
    }
    Ok(Transformed::yes(Expr::InSubquery(InSubquery::new(
        Box::new(expr),
        Subquery {
            subquery: plan,
            outer_ref_columns: q.subquery.outer_ref_columns.clone(),
            spans: q.subquery.spans.clone(),
        },
        q.negated,
    ))))
}

/// Whether `p` is the projection `in_subquery` put over a subquery already.
fn is_key_projection(p: &LogicalPlan) -> bool {
    matches!(p, LogicalPlan::Projection(pr) if pr.expr.iter().all(|e| match e {
        Expr::Alias(a) => matches!(a.expr.as_ref(), Expr::ScalarFunction(f) if f.func.name() == super::float_keys::NAME),
        _ => false,
    }))
}
