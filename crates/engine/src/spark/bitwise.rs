//! Bit operations with Spark's types. Spark types an integer literal that fits an INT as an INT,
//! and computes `&`, `|`, `^` in the wider operand type and `<<`, `>>` in the left operand's type
//! (a TINYINT or SMALLINT is first widened to INT; the shift amount is cast to an INT). DataFusion reads
//! every integer literal as BIGINT and shifts in the common type of both operands, so on an INT
//! `p`, `p << 1` was a BIGINT: 2^30 << 1 was 2^31 here and -2^31 in Spark, and
//! `DELETE … WHERE p << 1 < 0` kept rows Spark deletes.
//!
//! The values of `&`, `|`, `^` do not depend on the width (sign extension commutes with them);
//! only their type does, which a CTAS stores. Shifts wrap in the left type and mask the amount by
//! its width (Java's `<<` and Rust's `wrapping_shl` agree: `1 << 33` is 2 for an INT, and a
//! negative amount is taken modulo the width). A DOUBLE or DECIMAL operand of a shift is cast to
//! INT first, as Spark casts it; `& | ^` with one are refused (Spark: DATATYPE_MISMATCH).
//! The right operand of `^` is hidden from DataFusion's simplifier, which rewrote `A ^ A` to 0
//! (NULL in Spark on a NULL A, and A's overflow raised).

use arrow::datatypes::DataType;
use datafusion::common::{plan_err, DFSchema, Result};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

use super::opaque::opaque;
use super::rewrite::{cast, is_decimal, is_float, is_integer, type_of};

/// Whether `op` is a bit operation this module types.
pub(super) fn is_bitwise(op: &Operator) -> bool {
    matches!(
        op,
        Operator::BitwiseAnd
            | Operator::BitwiseOr
            | Operator::BitwiseXor
            | Operator::BitwiseShiftLeft
            | Operator::BitwiseShiftRight
    )
}

/// `b` with Spark's operand types, or `None` to leave it to DataFusion (an operand that is not
/// an integer, which both engines refuse, or one whose type cannot be worked out).
pub(super) fn spark_bitwise(b: &BinaryExpr, schema: &DFSchema) -> Result<Option<Expr>> {
    let (Some(lt), Some(rt)) = (type_of(&b.left, schema), type_of(&b.right, schema)) else {
        return Ok(None);
    };
    let shift = matches!(
        b.op,
        Operator::BitwiseShiftLeft | Operator::BitwiseShiftRight
    );
    let fractional = |t: &DataType| is_float(t) || is_decimal(t);
    if !shift && (fractional(&lt) || fractional(&rt)) {
        // Spark's `& | ^` take integers only (DATATYPE_MISMATCH); DataFusion truncated the
        // other operand and computed.
        return plan_err!(
            "{} needs integer operands (Spark refuses {lt} and {rt}): cast the operand to an \
             integer type first",
            b.op
        );
    }
    let integral = |t: &DataType| is_integer(t) || (shift && fractional(t));
    if !(integral(&lt) && integral(&rt)) {
        return Ok(None);
    }
    let (l, r) = (narrow_literal(&b.left), narrow_literal(&b.right));
    let (lt, rt) = (literal_type(&l, lt), literal_type(&r, rt));
    let (l, r) = match b.op {
        // A DOUBLE or DECIMAL operand of a shift is cast to INT first, as Spark casts it
        // implicitly (its shift takes an INT or BIGINT on the left, an INT on the right):
        // `1.0D << 40` is 256 there.
        Operator::BitwiseShiftLeft | Operator::BitwiseShiftRight => {
            let t = match lt {
                DataType::Int64 => DataType::Int64,
                _ => DataType::Int32,
            };
            // The amount is an INT: a BIGINT one is cast to it (raising past INT, as Spark's
            // implicit cast does), then to the left type for DataFusion's kernel, which masks it
            // by that width as Java does.
            let r = to(r, &rt, &DataType::Int32);
            (to(l, &lt, &t), to(r, &DataType::Int32, &t))
        }
        _ => {
            let t = wider(&lt, &rt);
            (to(l, &lt, &t), to(r, &rt, &t))
        }
    };
    // DataFusion's simplifier rewrites `A ^ A` to 0 without regard to NULL (Spark: NULL) and
    // without evaluating A (Spark raises when A overflows): the right operand goes behind the
    // identity it cannot see through.
    let r = match (b.op, &r) {
        (Operator::BitwiseXor, Expr::Literal(..)) => r,
        (Operator::BitwiseXor, _) => opaque(r),
        _ => r,
    };
    // Unchanged operands: report no change, so the rewrite stays idempotent.
    if l == *b.left && r == *b.right {
        return Ok(None);
    }
    Ok(Some(Expr::BinaryExpr(BinaryExpr::new(
        Box::new(l),
        b.op,
        Box::new(r),
    ))))
}

/// An integer literal that fits an INT, as the INT Spark reads it.
fn narrow_literal(e: &Expr) -> Expr {
    use datafusion::common::ScalarValue;
    match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), m) => match i32::try_from(*v) {
            Ok(n) => Expr::Literal(ScalarValue::Int32(Some(n)), m.clone()),
            Err(_) => e.clone(),
        },
        other => other.clone(),
    }
}

/// `e` (of type `from`) as `t`, with no cast when it already is one.
fn to(e: Expr, from: &DataType, t: &DataType) -> Expr {
    match from == t {
        true => e,
        false => cast(e, t),
    }
}

fn literal_type(e: &Expr, t: DataType) -> DataType {
    match e {
        Expr::Literal(v, _) => v.data_type(),
        _ => t,
    }
}

fn wider(a: &DataType, b: &DataType) -> DataType {
    let rank = |t: &DataType| match t {
        DataType::Int8 => 1,
        DataType::Int16 => 2,
        DataType::Int32 => 3,
        _ => 4,
    };
    match rank(a) >= rank(b) {
        true => a.clone(),
        false => b.clone(),
    }
}
