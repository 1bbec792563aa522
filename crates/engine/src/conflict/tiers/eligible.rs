//! Which part of a read predicate the stats tier may use. Mirrors scan-time skipping: volatile
//! (non-deterministic) expressions, subqueries and unknown columns are replaced by TRUE inside
//! AND/OR trees (a NOT over such a thing becomes TRUE as a whole). Replacing a sub-predicate by TRUE
//! can only make the predicate match more files, so the result over-approximates the read.

use datafusion::common::tree_node::TreeNode;
use datafusion::logical_expr::{lit, BinaryExpr, Expr, Operator};

fn ineligible(e: &Expr) -> bool {
    let mut bad = false;
    let _ = e.apply(|n| {
        if matches!(
            n,
            Expr::ScalarSubquery(_)
                | Expr::Exists(_)
                | Expr::InSubquery(_)
                | Expr::OuterReferenceColumn(..)
                | Expr::Placeholder(_)
        ) || n.is_volatile_node()
        {
            bad = true;
            return Ok(datafusion::common::tree_node::TreeNodeRecursion::Stop);
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    bad
}

fn widen(e: &Expr) -> Expr {
    match e {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => widen(left).and(widen(right)),
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => widen(left).or(widen(right)),
        other if ineligible(other) => lit(true),
        other => other.clone(),
    }
}

/// The usable, over-approximating form of `e`; `None` if it reduces to TRUE (skips nothing).
pub fn eligible_filter(e: &Expr) -> Option<Expr> {
    let w = widen(e);
    let simplified = simplify_true(w);
    match simplified {
        Expr::Literal(datafusion::common::ScalarValue::Boolean(Some(true)), _) => None,
        other => Some(other),
    }
}

fn is_true(e: &Expr) -> bool {
    matches!(e, Expr::Literal(v, _) if *v == datafusion::common::ScalarValue::Boolean(Some(true)))
}

fn simplify_true(e: Expr) -> Expr {
    match e {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            let (l, r) = (simplify_true(*left), simplify_true(*right));
            match (is_true(&l), is_true(&r)) {
                (true, _) => r,
                (_, true) => l,
                _ => l.and(r),
            }
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let (l, r) = (simplify_true(*left), simplify_true(*right));
            if is_true(&l) || is_true(&r) {
                lit(true)
            } else {
                l.or(r)
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::col;

    use super::*;

    #[test]
    fn volatile_parts_become_true() {
        let random = datafusion::functions::math::expr_fn::random();
        let e = col("x").gt(lit(5)).and(random.clone().lt(lit(0.5)));
        assert_eq!(eligible_filter(&e), Some(col("x").gt(lit(5))));
        let e = col("x").gt(lit(5)).or(random.clone().lt(lit(0.5)));
        assert_eq!(eligible_filter(&e), None);
        let e = Expr::Not(Box::new(random.lt(lit(0.5))));
        assert_eq!(eligible_filter(&e), None);
    }
}
