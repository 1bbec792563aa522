//! Spark's DECIMAL arithmetic (`+ - * /` with `spark.sql.decimalOperations.allowPrecisionLoss`
//! on, Spark's default): the result type Spark gives, and the exact result rounded HALF_UP to its
//! scale. Past the result's precision the value raises `[NUMERIC_VALUE_OUT_OF_RANGE]` (ANSI) or
//! is NULL (legacy mode), as Spark's `CheckOverflow`.
//!
//! Why not DataFusion's: its result type keeps the full scale and only caps the precision at 38
//! (DECIMAL(38,10) + DECIMAL(38,10) is DECIMAL(38,10) there, DECIMAL(38,9) in Spark, so
//! `UPDATE … SET a = a + b` stored a 10th digit Spark rounds away), and a product past 38 digits
//! raised where Spark rounds the scale down (DECIMAL(38,18) * DECIMAL(38,18) is DECIMAL(38,6)).
//!
//! Every result is computed exactly in 256 bits: both operands are below 10^38, an operand is
//! scaled by at most 10^38 to align it, so a sum, a product or a scaled dividend stays below
//! 2·10^76 < 2^255.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use arrow::datatypes::{i256, DataType, Decimal128Type};
use datafusion::common::{exec_err, DataFusionError, Result};

/// A DECIMAL operator Spark types and rounds otherwise than DataFusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecimalOp {
    Add,
    Subtract,
    Multiply,
    Divide,
}

impl DecimalOp {
    pub fn name(self) -> &'static str {
        match self {
            DecimalOp::Add => "add",
            DecimalOp::Subtract => "subtract",
            DecimalOp::Multiply => "multiply",
            DecimalOp::Divide => "divide",
        }
    }
}

const MAX_PRECISION: i32 = 38;
/// The scale an adjusted result keeps at least (Spark's `MINIMUM_ADJUSTED_SCALE`).
const MINIMUM_ADJUSTED_SCALE: i32 = 6;

/// Spark's result type of DECIMAL(p1,s1) `op` DECIMAL(p2,s2) (`DecimalPrecision`):
/// - `+ -`: scale max(s1, s2), precision max(p1 - s1, p2 - s2) + scale + 1;
/// - `*`: precision p1 + p2 + 1, scale s1 + s2;
/// - `/`: scale max(6, s1 + p2 + 1), precision p1 - s1 + s2 + scale;
///
/// then, past 38 digits, the integer digits are kept and the scale gives way, down to 6 (or the
/// scale itself when smaller): `DecimalType.adjustPrecisionScale`.
pub fn result_type(op: DecimalOp, p1: u8, s1: i8, p2: u8, s2: i8) -> (u8, i8) {
    let (precision, scale) = unadjusted(op, p1, s1, p2, s2);
    let (p, s) = if precision <= MAX_PRECISION {
        (precision, scale)
    } else {
        let int_digits = precision - scale;
        let min_scale = scale.min(MINIMUM_ADJUSTED_SCALE);
        (MAX_PRECISION, (MAX_PRECISION - int_digits).max(min_scale))
    };
    (
        p.clamp(1, MAX_PRECISION) as u8,
        s.clamp(0, MAX_PRECISION) as i8,
    )
}

/// Whether Spark's unadjusted result precision of `op` passes 38 digits, so that the result's
/// scale gives way ([`result_type`]'s second step). Rules stored in the log still refuse it.
pub fn passes_38_digits(op: DecimalOp, p1: u8, s1: i8, p2: u8, s2: i8) -> bool {
    unadjusted(op, p1, s1, p2, s2).0 > MAX_PRECISION
}

/// Spark's precision and scale of `op` before the 38-digit adjustment ([`result_type`]'s first
/// step).
fn unadjusted(op: DecimalOp, p1: u8, s1: i8, p2: u8, s2: i8) -> (i32, i32) {
    let (p1, s1, p2, s2) = (i32::from(p1), i32::from(s1), i32::from(p2), i32::from(s2));
    match op {
        DecimalOp::Add | DecimalOp::Subtract => {
            let scale = s1.max(s2);
            ((p1 - s1).max(p2 - s2) + scale + 1, scale)
        }
        DecimalOp::Multiply => (p1 + p2 + 1, s1 + s2),
        DecimalOp::Divide => {
            let scale = (s1 + p2 + 1).max(MINIMUM_ADJUSTED_SCALE);
            (p1 - s1 + s2 + scale, scale)
        }
    }
}

/// The operator of one of the `spark_decimal_*` / `legacy_decimal_*` functions, by its name.
pub fn op_of_function(name: &str) -> Option<DecimalOp> {
    let rest = name
        .strip_prefix("spark_decimal_")
        .or_else(|| name.strip_prefix("legacy_decimal_"))?;
    [
        DecimalOp::Add,
        DecimalOp::Subtract,
        DecimalOp::Multiply,
        DecimalOp::Divide,
    ]
    .into_iter()
    .find(|op| op.name() == rest)
}

fn out_of_range(p: u8, s: i8) -> DataFusionError {
    DataFusionError::Execution(format!(
        "[NUMERIC_VALUE_OUT_OF_RANGE] the result cannot be represented as DECIMAL({p}, {s}). If necessary set spark.sql.ansi.enabled to false to bypass this error"
    ))
}

fn divide_by_zero() -> DataFusionError {
    DataFusionError::Execution(
        "[DIVIDE_BY_ZERO] Division by zero. Use 'try_divide' to tolerate a zero divisor and return NULL instead".to_string(),
    )
}

fn pow10(n: i32) -> Option<i256> {
    u32::try_from(n)
        .ok()
        .filter(|n| *n <= 76)
        .map(|n| i256::from_i128(10).wrapping_pow(n))
}

/// `num / den` rounded HALF_UP (a tie goes away from zero); `den` is not zero.
fn div_half_up(num: i256, den: i256) -> i256 {
    let q = num.wrapping_div(den);
    let rem = num.wrapping_rem(den);
    match rem.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= den.wrapping_abs() {
        true if (num < i256::ZERO) != (den < i256::ZERO) => q.wrapping_sub(i256::ONE),
        true => q.wrapping_add(i256::ONE),
        false => q,
    }
}

/// `l op r` element-wise as Spark computes it; `l` and `r` are DECIMALs (of any precision and
/// scale), the result of [`result_type`].
pub fn evaluate(op: DecimalOp, l: &ArrayRef, r: &ArrayRef, ansi: bool) -> Result<ArrayRef> {
    let (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)) =
        (l.data_type(), r.data_type())
    else {
        return exec_err!("spark_decimal_{}: expected DECIMAL operands", op.name());
    };
    if l.len() != r.len() {
        return exec_err!("spark_decimal_{}: operands of different lengths", op.name());
    }
    let (p, s) = result_type(op, *p1, *s1, *p2, *s2);
    let (s1, s2, s) = (i32::from(*s1), i32::from(*s2), i32::from(s));
    // Each operator as an exact i256 numerator at `exact` scale over an optional divisor.
    // + -: both operands aligned to max(s1, s2); *: the product at s1 + s2; /: the dividend
    // scaled so that the quotient lands at the result scale.
    let (lf, rf, exact) = match op {
        DecimalOp::Add | DecimalOp::Subtract => {
            let e = s1.max(s2);
            (pow10(e - s1), pow10(e - s2), e)
        }
        DecimalOp::Multiply => (pow10(0), pow10(0), s1 + s2),
        // The dividend (below 10^38) times at most 10^38 stays in 256 bits; a larger shift
        // (DECIMAL(38,0) / DECIMAL(38,38)) is refused below.
        DecimalOp::Divide => (
            pow10(s - s1 + s2).filter(|_| s - s1 + s2 <= 38),
            pow10(0),
            s,
        ),
    };
    // Down from the exact scale to the result's (never up: the result scale is at most it).
    let (Some(lf), Some(rf), Some(down)) = (lf, rf, pow10(exact - s)) else {
        return exec_err!(
            "spark_decimal_{}: DECIMAL({p1},{s1}) and DECIMAL({p2},{s2}) are not supported",
            op.name()
        );
    };
    let limit = i256::from_i128(10).wrapping_pow(u32::from(p));
    let la = l.as_primitive::<Decimal128Type>();
    let ra = r.as_primitive::<Decimal128Type>();
    let out = la
        .iter()
        .zip(ra.iter())
        .map(|pair| {
            let (Some(a), Some(b)) = pair else {
                return Ok(None);
            };
            let (a, b) = (
                i256::from_i128(a).wrapping_mul(lf),
                i256::from_i128(b).wrapping_mul(rf),
            );
            let v = match op {
                DecimalOp::Add => div_half_up(a.wrapping_add(b), down),
                DecimalOp::Subtract => div_half_up(a.wrapping_sub(b), down),
                DecimalOp::Multiply => div_half_up(a.wrapping_mul(b), down),
                DecimalOp::Divide if b == i256::ZERO => {
                    return match ansi {
                        true => Err(divide_by_zero()),
                        false => Ok(None),
                    }
                }
                DecimalOp::Divide => div_half_up(a, b),
            };
            match (v.wrapping_abs() < limit, v.to_i128()) {
                (true, Some(v)) => Ok(Some(v)),
                _ if ansi => Err(out_of_range(p, s as i8)),
                _ => Ok(None),
            }
        })
        .collect::<Result<Decimal128Array>>()?;
    Ok(Arc::new(out.with_precision_and_scale(p, s as i8)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(values: Vec<Option<i128>>, p: u8, s: i8) -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(p, s)
                .unwrap(),
        )
    }

    fn values(a: &ArrayRef) -> Vec<Option<i128>> {
        a.as_primitive::<Decimal128Type>().iter().collect()
    }

    #[test]
    fn result_types_are_sparks() {
        use DecimalOp::*;
        // Spark 4: `SELECT typeof(CAST(1 AS DECIMAL(p1,s1)) <op> CAST(1 AS DECIMAL(p2,s2)))`.
        assert_eq!(result_type(Add, 10, 2, 5, 3), (12, 3));
        assert_eq!(result_type(Add, 38, 10, 38, 10), (38, 9));
        assert_eq!(result_type(Subtract, 38, 0, 38, 0), (38, 0));
        assert_eq!(result_type(Multiply, 10, 2, 10, 2), (21, 4));
        assert_eq!(result_type(Multiply, 38, 18, 38, 18), (38, 6));
        assert_eq!(result_type(Multiply, 38, 2, 38, 2), (38, 4));
        assert_eq!(result_type(Multiply, 20, 0, 10, 0), (31, 0));
        assert_eq!(result_type(Divide, 10, 2, 10, 2), (23, 13));
        assert_eq!(result_type(Divide, 38, 10, 38, 10), (38, 6));
    }

    #[test]
    fn sums_round_half_up_to_the_adjusted_scale() {
        // DECIMAL(38,10) + DECIMAL(38,10) is DECIMAL(38,9): 0.0000000005 + 0 rounds to 0.000000001,
        // -0.0000000005 to -0.000000001, 0.0000000004 to 0.
        let l = dec(vec![Some(5), Some(-5), Some(4), None], 38, 10);
        let r = dec(vec![Some(0), Some(0), Some(0), Some(1)], 38, 10);
        let out = evaluate(DecimalOp::Add, &l, &r, true).unwrap();
        assert_eq!(out.data_type(), &DataType::Decimal128(38, 9));
        assert_eq!(values(&out), vec![Some(1), Some(-1), Some(0), None]);
    }

    #[test]
    fn products_round_and_overflow_as_in_spark() {
        // 1.5 * 1.5 in DECIMAL(38,18) each: DECIMAL(38,6), 2.250000.
        let e18 = 10i128.pow(18);
        let l = dec(vec![Some(15 * e18 / 10)], 38, 18);
        let out = evaluate(DecimalOp::Multiply, &l, &l, true).unwrap();
        assert_eq!(out.data_type(), &DataType::Decimal128(38, 6));
        assert_eq!(values(&out), vec![Some(2_250_000)]);
        // 0.0000005 * 1 (DECIMAL(38,18) * DECIMAL(38,18)) rounds HALF_UP to 0.000001.
        let small = dec(vec![Some(5 * 10i128.pow(11))], 38, 18);
        let one = dec(vec![Some(e18)], 38, 18);
        let out = evaluate(DecimalOp::Multiply, &small, &one, true).unwrap();
        assert_eq!(values(&out), vec![Some(1)]);
        // The largest DECIMAL(38,0) plus 1 is past 38 digits: an error in ANSI, NULL in legacy.
        let max = dec(vec![Some(10i128.pow(38) - 1)], 38, 0);
        let one = dec(vec![Some(1)], 38, 0);
        let e = evaluate(DecimalOp::Add, &max, &one, true).unwrap_err();
        assert!(e.to_string().contains("NUMERIC_VALUE_OUT_OF_RANGE"), "{e}");
        let out = evaluate(DecimalOp::Add, &max, &one, false).unwrap();
        assert_eq!(values(&out), vec![None]);
        // A product beyond i128 itself (9e37 * 9e37) is out of range, not wrapped.
        let big = dec(vec![Some(9 * 10i128.pow(37))], 38, 0);
        assert!(evaluate(DecimalOp::Multiply, &big, &big, true).is_err());
        assert_eq!(
            values(&evaluate(DecimalOp::Multiply, &big, &big, false).unwrap()),
            vec![None]
        );
    }

    #[test]
    fn products_and_quotients_round_once() {
        // Spark 4 rounds the exact result once (checked against Spark: a review expected
        // Decimal's 38-digit MathContext to round first, which would give ...500001 and 1E-10).
        let l = dec(vec![Some(10000000000000000000500000499999999999)], 38, 18);
        let r = dec(vec![Some(1000000000000000001)], 38, 18);
        let out = evaluate(DecimalOp::Multiply, &l, &r, true).unwrap();
        assert_eq!(out.data_type(), &DataType::Decimal128(38, 6));
        assert_eq!(values(&out), vec![Some(10000000000000000010500000)]);
        let l = dec(vec![Some(99999999999999999999999999999)], 38, 10);
        let r = dec(vec![Some(200000000000000000000000000000)], 30, 0);
        let out = evaluate(DecimalOp::Divide, &l, &r, true).unwrap();
        assert_eq!(values(&out), vec![Some(0)]);
    }

    #[test]
    fn quotients_round_half_up_and_a_zero_divisor_raises() {
        // 1.00 / 3 (DECIMAL(1,0)): scale max(6, 2 + 1 + 1) = 6 -> 0.333333; 2.00 / 3 -> 0.666667.
        let l = dec(vec![Some(100), Some(200), Some(-200), Some(1)], 3, 2);
        let r = dec(vec![Some(3), Some(3), Some(3), Some(0)], 1, 0);
        assert!(evaluate(DecimalOp::Divide, &l, &r, true).is_err());
        let out = evaluate(DecimalOp::Divide, &l, &r, false).unwrap();
        assert_eq!(
            values(&out),
            vec![Some(333_333), Some(666_667), Some(-666_667), None]
        );
    }
}
