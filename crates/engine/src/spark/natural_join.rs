//! A NATURAL JOIN whose two sides spell a column differently is refused.
//!
//! Spark finds a NATURAL JOIN's common columns without regard to case: `Key` on one side and
//! `key` on the other are joined on. DataFusion compares names exactly, so it found no common
//! column and planned a cross join — every pair of rows — without a word. Planned, the two sides'
//! columns are known: when a name on one side matches a name on the other only without regard to
//! case, the statement is refused (every join of a statement that has a NATURAL JOIN is checked;
//! an extra refusal, never other rows).

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::{self as ast, Visit, Visitor};
use std::ops::ControlFlow;

use super::ident_case::same_ignoring_case;

/// Whether `node` (a statement) has a NATURAL JOIN.
pub(crate) fn has_natural_join<N: Visit>(node: &N) -> bool {
    struct Natural;
    impl Visitor for Natural {
        type Break = ();
        fn pre_visit_table_factor(&mut self, t: &ast::TableFactor) -> ControlFlow<()> {
            let joins = match t {
                ast::TableFactor::NestedJoin {
                    table_with_joins, ..
                } => table_with_joins.joins.as_slice(),
                _ => &[],
            };
            match joins.iter().any(|j| is_natural(&j.join_operator)) {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        }
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            match natural_in(&q.body) {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        }
    }
    node.visit(&mut Natural).is_break()
}

/// Whether the SELECTs of `body` (not its nested queries, visited on their own) join NATURAL.
fn natural_in(body: &ast::SetExpr) -> bool {
    match body {
        ast::SetExpr::Select(s) => s
            .from
            .iter()
            .flat_map(|t| t.joins.iter())
            .any(|j| is_natural(&j.join_operator)),
        ast::SetExpr::SetOperation { left, right, .. } => natural_in(left) || natural_in(right),
        _ => false,
    }
}

fn is_natural(op: &ast::JoinOperator) -> bool {
    use ast::JoinOperator as J;
    let constraint = match op {
        J::Join(c)
        | J::Inner(c)
        | J::Left(c)
        | J::LeftOuter(c)
        | J::Right(c)
        | J::RightOuter(c)
        | J::FullOuter(c)
        | J::CrossJoin(c)
        | J::Semi(c)
        | J::LeftSemi(c)
        | J::RightSemi(c)
        | J::Anti(c)
        | J::LeftAnti(c)
        | J::RightAnti(c) => c,
        // Not NATURAL, or a join this engine does not run (refused by the planner).
        _ => return false,
    };
    matches!(constraint, ast::JoinConstraint::Natural)
}

/// Refuses `plan` when one of its joins has sides that spell a column differently (module
/// header); called only for a statement with a NATURAL JOIN.
pub(crate) fn refuse_case_only_differences(plan: &LogicalPlan) -> DFResult<()> {
    let mut found: Option<(String, String)> = None;
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Join(j) = node {
            let left: Vec<&String> = j.left.schema().fields().iter().map(|f| f.name()).collect();
            let right: Vec<&String> = j.right.schema().fields().iter().map(|f| f.name()).collect();
            for l in &left {
                if right.contains(l) {
                    continue;
                }
                if let Some(r) = right
                    .iter()
                    .find(|r| same_ignoring_case(r, l) && !left.contains(r))
                {
                    found = Some(((*l).clone(), (*r).clone()));
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    match found {
        Some((l, r)) => Err(DataFusionError::Plan(format!(
            "NATURAL JOIN of columns {l} and {r}, which differ only in case: Spark joins on them, this engine would not; join with ON or USING"
        ))),
        None => Ok(()),
    }
}
