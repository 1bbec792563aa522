//! DECIMAL to DOUBLE / FLOAT as Spark converts it: the nearest float to the decimal's exact value
//! (Java's `BigDecimal.doubleValue`). Arrow divides the unscaled integer, itself rounded to a
//! float, by a power of ten: two roundings, and another float for large values
//! (`CAST(461168601367125200758675793.91 AS DOUBLE)` was 4.6116860136712524e26, Spark's is
//! 4.611686013671252e26; found by the Spark campaign).
//!
//! Applied after type coercion (`super::coerced`) to every such cast, written or implied.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float32Array, Float64Array};
use arrow::datatypes::{DataType, Decimal128Type};
use datafusion::logical_expr::Expr;

/// `CAST(e AS to)` with Spark's conversion, when `from` is a DECIMAL and `to` a float.
pub fn spark_decimal_to_float(e: Expr, from: &DataType, to: &DataType) -> Option<Expr> {
    if !matches!(from, DataType::Decimal128(..)) {
        return None;
    }
    let name = match to {
        DataType::Float64 => "spark_decimal_to_double",
        DataType::Float32 => "spark_decimal_to_float",
        _ => return None,
    };
    Some(super::convert_udf::convert_call(name, e, to, |a, to| {
        decimal_array_to_float(a, to).map(Ok)
    }))
}

/// A DECIMAL array as `to` (DOUBLE or FLOAT), each value the float nearest its exact value; None
/// when `a` is not a DECIMAL or `to` not a float. Every conversion of a decimal to a float — a
/// cast in a plan, a literal converted in place, a value stored into a float column — goes
/// through here, so `x = 103.24600000000001` and `SET x = 103.24600000000001` mean the double
/// Spark means.
pub fn decimal_array_to_float(a: &ArrayRef, to: &DataType) -> Option<ArrayRef> {
    let DataType::Decimal128(_, scale) = a.data_type() else {
        return None;
    };
    let scale = *scale;
    let d = a.as_primitive_opt::<Decimal128Type>()?;
    Some(match to {
        DataType::Float32 => Arc::new(
            d.iter()
                .map(|v| v.map(|v| to_f32(v, scale)))
                .collect::<Float32Array>(),
        ),
        DataType::Float64 => Arc::new(
            d.iter()
                .map(|v| v.map(|v| to_f64(v, scale)))
                .collect::<Float64Array>(),
        ),
        _ => return None,
    })
}

/// A DECIMAL literal as the float `to`, as [`decimal_array_to_float`] converts it.
pub fn decimal_literal_to_float(
    v: &datafusion::common::ScalarValue,
    to: &DataType,
) -> Option<datafusion::common::ScalarValue> {
    let a = v.to_array().ok()?;
    let out = decimal_array_to_float(&a, to)?;
    datafusion::common::ScalarValue::try_from_array(&out, 0).ok()
}

/// The double nearest `unscaled × 10^-scale`. When both the integer and the power of ten are
/// exact doubles, one division rounds once, correctly; otherwise Rust's parser (correctly
/// rounded) reads the exact decimal.
fn to_f64(unscaled: i128, scale: i8) -> f64 {
    if unscaled.unsigned_abs() < (1u128 << 53) && (0..=22).contains(&scale) {
        return unscaled as f64 / 10f64.powi(i32::from(scale));
    }
    format!("{unscaled}e{}", -i32::from(scale))
        .parse()
        .unwrap_or(f64::NAN)
}

/// As [`to_f64`], straight to the nearest FLOAT (not through a double: two roundings).
fn to_f32(unscaled: i128, scale: i8) -> f32 {
    if unscaled.unsigned_abs() < (1u128 << 24) && (0..=10).contains(&scale) {
        return unscaled as f32 / 10f32.powi(i32::from(scale));
    }
    format!("{unscaled}e{}", -i32::from(scale))
        .parse()
        .unwrap_or(f32::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_float_to_the_exact_decimal() {
        assert_eq!(
            to_f64(46116860136712520075867579391, 2),
            4.611686013671252e26
        );
        assert_eq!(to_f64(125, 2), 1.25);
        assert_eq!(to_f64(-1, 1), -0.1);
        assert_eq!(to_f64(1, 38), 1e-38);
        assert_eq!(to_f32(1, 1), 0.1f32);
        assert_eq!(to_f32(16777217, 0), 16777216.0f32);
    }
}
