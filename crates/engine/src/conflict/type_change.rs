//! A winner's type widening against a loser that planned under the narrower type.
//!
//! Delta's serial order is the commit order, so a loser committing after `ALTER COLUMN c TYPE W`
//! must do what it would have done had it run after it. Two things can differ:
//! 1. what its expressions mean: `v / 10 = 4` over INT is integer division (40…49 match), over
//!    DOUBLE it is not (only 40); `v + 1` overflows in INT, not in BIGINT; `CAST(v AS STRING)` is
//!    '45' or '45.0'; 0.5 written into INT is 0, into DOUBLE 0.5;
//! 2. what the conflict checks read: a later winner's files hold W-typed values, which the checks
//!    must read as W (the checker's table view takes the newest metadata, `checks.rs`; a read
//!    through an older schema fails rather than truncate, `value_cast`).
//!
//! **Proves** (the loser commits): for each widened column `c` (N → W) the loser's outcome is the
//! same under both types, by one of
//! - `untouched`: no read predicate, MERGE key, assignment, value or condition of the loser reads
//!   `c`, and every value it wrote into `c` converted exactly (`value_cast`: by type, or an
//!   integer that fits — a value of N is the same value in W ⊇ N, while `CAST(0.1 AS DECIMAL)`
//!   into FLOAT is not 0.1 in DOUBLE) — rows it copies keep their N values, which every reader
//!   widens, exactly as they would read had it run after the change;
//! - `integerLiteralComparison`: N and W are both integer types, and every use of `c` is in a read
//!   predicate as `c <op> literal`, `c IN (literals)`, `c BETWEEN literal AND literal` or
//!   `c IS [NOT] NULL` with integer literals (combined by AND/OR/NOT), or a key of the exact
//!   source-key read (a MERGE declares its ON columns as used by its expressions too, so today a
//!   MERGE whose key is widened aborts: coarser than this rule). For every
//!   value N can hold, an integer comparison with an integer literal answers the same whatever the
//!   integer width it is evaluated in; rows holding values only W can hold were written by winners
//!   after the change, and the checker evaluates the predicate over them as W.
//!
//! **Declines** (MetadataChanged, naming the column and why): the loser read the table through a
//! query or as a whole table, or its operation did not declare the columns its expressions use
//! (`ReadSet::expression_columns`: then every column counts); `c` is assigned, read by a value or
//! condition, or written with an inexact conversion; any other use of `c` in a predicate
//! (arithmetic, functions, casts, non-integer literals); a non-integer widening of a column the
//! loser uses at all.

use std::collections::BTreeSet;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use delta_rlc_protocol::schema::PrimitiveType;

use crate::read_set::ReadSet;

/// One top-level column whose type a winner widened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widened {
    pub column: String,
    pub from: PrimitiveType,
    pub to: PrimitiveType,
}

/// The proofs used (one per widened column, for the event), or the reason none holds.
pub fn prove(widened: &[Widened], read_set: &ReadSet) -> Result<Vec<&'static str>, String> {
    let Some(first) = widened.first() else {
        return Ok(Vec::new());
    };
    let Some(dependent) = read_set.type_dependent_columns() else {
        let why = if read_set.whole_table {
            "it read the whole table"
        } else if read_set.query_reads {
            "it read the table through a query"
        } else {
            "its statement does not declare which columns its expressions use"
        };
        return Err(format!(
            "column {} changed type ({}), and this transaction may depend on it: {why}",
            first.column,
            describe(first)
        ));
    };
    let mut proofs = Vec::with_capacity(widened.len());
    for w in widened {
        if dependent.iter().any(|c| c.eq_ignore_ascii_case(&w.column)) {
            return Err(format!(
                "column {} changed type ({}) and this transaction computed with or wrote it (an assignment, a value or an inexact conversion)",
                w.column,
                describe(w)
            ));
        }
        proofs.push(prove_predicates(w, read_set)?);
    }
    Ok(proofs)
}

fn describe(w: &Widened) -> String {
    format!("{} to {}", w.from.name(), w.to.name())
}

fn is_integer(t: &PrimitiveType) -> bool {
    matches!(
        t,
        PrimitiveType::Byte | PrimitiveType::Short | PrimitiveType::Integer | PrimitiveType::Long
    )
}

fn prove_predicates(w: &Widened, read_set: &ReadSet) -> Result<&'static str, String> {
    let integer = is_integer(&w.from) && is_integer(&w.to);
    let mut used = false;
    for p in &read_set.predicates {
        for e in [&p.partition, &p.data].into_iter().flatten() {
            if !references(e, &w.column) {
                continue;
            }
            used = true;
            if !integer || !literal_comparisons_only(e, &w.column) {
                return Err(format!(
                    "column {} changed type ({}) and the predicate {} reads it in a way whose result may change with the type",
                    w.column,
                    describe(w),
                    p.text
                ));
            }
        }
        if let Some(keys) = &p.exact_keys {
            if keys
                .columns
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&w.column))
            {
                used = true;
                if !integer {
                    return Err(format!(
                        "column {} changed type ({}) and is a key of this MERGE",
                        w.column,
                        describe(w)
                    ));
                }
            }
        }
    }
    Ok(if used {
        "integerLiteralComparison"
    } else {
        "untouched"
    })
}

fn is_column(e: &Expr, column: &str) -> bool {
    matches!(e, Expr::Column(c) if c.name.eq_ignore_ascii_case(column))
}

fn references(e: &Expr, column: &str) -> bool {
    e.column_refs()
        .iter()
        .any(|c| c.name.eq_ignore_ascii_case(column))
}

fn is_integer_literal(e: &Expr) -> bool {
    match e {
        Expr::Literal(v, _) => matches!(
            v,
            ScalarValue::Null
                | ScalarValue::Int8(_)
                | ScalarValue::Int16(_)
                | ScalarValue::Int32(_)
                | ScalarValue::Int64(_)
                | ScalarValue::UInt8(_)
                | ScalarValue::UInt16(_)
                | ScalarValue::UInt32(_)
                | ScalarValue::UInt64(_)
        ),
        Expr::Negative(x) => is_integer_literal(x),
        _ => false,
    }
}

fn is_comparison(op: &Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}

/// Every use of `column` in `e` is an integer-literal comparison (see the module header).
fn literal_comparisons_only(e: &Expr, column: &str) -> bool {
    if !references(e, column) {
        return true;
    }
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::And | Operator::Or) =>
        {
            literal_comparisons_only(left, column) && literal_comparisons_only(right, column)
        }
        Expr::Not(x) => literal_comparisons_only(x, column),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if is_comparison(op) => {
            (is_column(left, column) && is_integer_literal(right))
                || (is_integer_literal(left) && is_column(right, column))
        }
        Expr::InList(l) => is_column(&l.expr, column) && l.list.iter().all(is_integer_literal),
        Expr::Between(b) => {
            is_column(&b.expr, column) && is_integer_literal(&b.low) && is_integer_literal(&b.high)
        }
        Expr::IsNull(x) | Expr::IsNotNull(x) => is_column(x, column),
        _ => false,
    }
}

/// The top-level columns widened from `old` to `new` (names as in `new`).
pub fn widened_columns(
    old: &delta_rlc_protocol::schema::StructType,
    new: &delta_rlc_protocol::schema::StructType,
) -> Vec<Widened> {
    use delta_rlc_protocol::schema::DataType;
    let mut out = Vec::new();
    let names: BTreeSet<&str> = old.fields.iter().map(|f| f.name.as_str()).collect();
    for n in &new.fields {
        if !names.contains(n.name.as_str()) {
            continue;
        }
        let Some(o) = old.field(&n.name) else {
            continue;
        };
        if let (DataType::Primitive(a), DataType::Primitive(b)) = (&o.data_type, &n.data_type) {
            if a != b {
                out.push(Widened {
                    column: n.name.clone(),
                    from: a.clone(),
                    to: b.clone(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_set::split_predicate;
    use datafusion::prelude::{col, lit};

    fn widened(from: PrimitiveType, to: PrimitiveType) -> Vec<Widened> {
        vec![Widened {
            column: "v".into(),
            from,
            to,
        }]
    }

    fn deleting(pred: Expr) -> ReadSet {
        let mut rs = ReadSet::default();
        rs.used_columns([]);
        rs.add_predicate(split_predicate(&pred, &[], pred.to_string()));
        rs
    }

    #[test]
    fn integer_literal_comparisons_survive_integer_widening_only() {
        let int_to_long = widened(PrimitiveType::Integer, PrimitiveType::Long);
        let int_to_double = widened(PrimitiveType::Integer, PrimitiveType::Double);
        let cmp = deleting(
            col("v")
                .gt(lit(3_000_000_000i64))
                .or(col("id").eq(lit(5i64))),
        );
        assert_eq!(
            prove(&int_to_long, &cmp),
            Ok(vec!["integerLiteralComparison"])
        );
        assert!(prove(&int_to_double, &cmp).is_err());
        let division = deleting((col("v") / lit(10i64)).eq(lit(4i64)));
        assert!(prove(&int_to_long, &division).is_err());
        assert!(prove(&int_to_double, &division).is_err());
        let fraction = deleting(col("v").gt(lit(0.5f64)));
        assert!(prove(&int_to_long, &fraction).is_err());
        let other = deleting(col("id").eq(lit(5i64)));
        assert_eq!(prove(&int_to_double, &other), Ok(vec!["untouched"]));
    }

    #[test]
    fn undeclared_query_reads_and_assignments_decline() {
        let w = widened(PrimitiveType::Integer, PrimitiveType::Long);
        let mut undeclared = ReadSet::default();
        undeclared.add_predicate(split_predicate(
            &col("id").eq(lit(1i64)),
            &[],
            "id = 1".into(),
        ));
        assert!(prove(&w, &undeclared).is_err());
        let mut query = deleting(col("id").eq(lit(1i64)));
        query.read_by_query();
        assert!(prove(&w, &query).is_err());
        let mut assigned = deleting(col("id").eq(lit(1i64)));
        assigned.used_columns(["V".to_string()]);
        assert!(prove(&w, &assigned).is_err());
        let mut inexact = deleting(col("id").eq(lit(1i64)));
        inexact.inexact_writes.insert("v".into());
        assert!(prove(&w, &inexact).is_err());
        let mut append = ReadSet::default();
        append.used_columns([]);
        assert_eq!(prove(&w, &append), Ok(vec!["untouched"]));
    }
}
