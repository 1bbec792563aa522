//! IN lists whose items are not all constants, evaluated per row.
//!
//! DataFusion 55 decides that an IN list is constant by evaluating its items on an empty batch
//! (`try_evaluate_constant_list` in its physical `InListExpr`). An item that answers with a scalar
//! there — a CASE does — is taken for a constant, and every row is matched against that one
//! value: `1 IN (CASE WHEN b THEN 7 ELSE sm END, 46341)` was false on every row, instead of NULL
//! where the CASE is NULL and true where it is 1 (found by the Spark campaign; under NOT, a DELETE
//! removed the wrong rows).
//!
//! Each item that is not a constant is wrapped, **after type coercion**, in `spark_value`
//! (`super::opaque`): the identity, answering with one value per row even on an empty batch, so the IN list compares
//! every row with its own items. The IN keeps its meaning otherwise (one common type, Spark's
//! three-valued logic). It is not rewritten into `x = a OR x = b`: the simplifier would then fold
//! equalities of constants and drop an operand beside them that raises, as Spark would.

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::Expr;

use super::opaque::{is_opaque, opaque};

/// `expr` with every computed item of its IN lists evaluated per row.
pub fn expand_computed_in_lists(expr: Expr) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match e {
        Expr::InList(mut l) if needs_wrapping(&l) => {
            l.list = l.list.into_iter().map(per_row).collect();
            Ok(Transformed::yes(Expr::InList(l)))
        }
        other => Ok(Transformed::no(other)),
    })
}

fn per_row(item: Expr) -> Expr {
    match is_constant(&item) || is_opaque(&item) {
        true => item,
        false => opaque(item),
    }
}

fn needs_wrapping(l: &InList) -> bool {
    l.list
        .iter()
        .any(|item| !is_constant(item) && !is_opaque(item))
}

/// An item with no column, subquery or volatile call: it evaluates to one value, so DataFusion's
/// constant path reads it right (`NOT (NOT true)`, `CAST(2 AS BIGINT)`). Such lists are left as
/// they are: written as equalities, the simplifier could fold away an operand that raises (as
/// Spark would) in the probe.
fn is_constant(e: &Expr) -> bool {
    !e.is_volatile()
        && !e.any_column_refs()
        && !e
            .exists(|n| {
                Ok(matches!(
                    n,
                    Expr::ScalarSubquery(_)
                        | Expr::Exists(_)
                        | Expr::InSubquery(_)
                        | Expr::OuterReferenceColumn(..)
                        | Expr::Placeholder(_)
                ))
            })
            .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;
    use datafusion::logical_expr::{col, lit, when};

    #[test]
    fn computed_items_are_per_row_constants_stay() {
        let case = when(col("b"), lit(7)).otherwise(col("sm")).unwrap();
        let e = lit(1).in_list(vec![case.clone(), lit(46341)], false);
        let out = expand_computed_in_lists(e).unwrap();
        assert!(out.transformed);
        let Expr::InList(l) = &out.data else {
            panic!("{}", out.data)
        };
        assert!(is_opaque(&l.list[0]) && l.list[1] == lit(46341));
        // Idempotent.
        assert!(
            !expand_computed_in_lists(out.data.clone())
                .unwrap()
                .transformed
        );

        let as_bigint = datafusion::logical_expr::cast(lit(2), DataType::Int64);
        let literals = col("x").in_list(vec![lit(1), as_bigint], false);
        assert!(!expand_computed_in_lists(literals).unwrap().transformed);
        let constants = col("x").in_list(vec![lit(false), Expr::Not(Box::new(lit(true)))], false);
        assert!(!expand_computed_in_lists(constants).unwrap().transformed);
    }
}
