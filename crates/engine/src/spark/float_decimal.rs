//! DOUBLE / FLOAT to DECIMAL as Spark converts it: the decimal of the float's shortest text
//! (`Decimal(d)` is `BigDecimal(Double.toString(d))`; a FLOAT is widened to a double first), then
//! rounded HALF_UP to the target scale. Arrow multiplies the binary value by a power of ten and
//! rounds that, so `CAST(1.005D AS DECIMAL(5,2))` was 1.00 (Spark: 1.01) and
//! `CAST(1e18D AS DECIMAL(38,18))` gained the binary tail `…42.420637374017961984` (found by the
//! red team, helper-34). Out of the target's range, NaN and the infinities raise, as Spark's ANSI
//! cast does.
//!
//! Applied after type coercion (`super::coerced`) to every such cast, written or implied, and to
//! every value stored into a DECIMAL column (`value_cast::cast_checked`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::logical_expr::Expr;

/// `CAST(e AS to)` with Spark's conversion, when `from` is a float and `to` a DECIMAL.
pub fn spark_float_to_decimal(e: Expr, from: &DataType, to: &DataType) -> Option<Expr> {
    if !matches!(from, DataType::Float64 | DataType::Float32) {
        return None;
    }
    let DataType::Decimal128(_, scale) = to else {
        return None;
    };
    if *scale < 0 {
        return None;
    }
    Some(super::convert_udf::convert_call(
        "spark_float_to_decimal",
        e,
        to,
        float_array_to_decimal,
    ))
}

/// A float array as the DECIMAL `to`, each value as Spark converts it; None when `a` is not a
/// float or `to` not a DECIMAL of scale ≥ 0; an error for a value out of range, NaN or infinite.
pub fn float_array_to_decimal(a: &ArrayRef, to: &DataType) -> Option<Result<ArrayRef, String>> {
    let DataType::Decimal128(p, s) = to else {
        return None;
    };
    let (p, s) = (*p, u8::try_from(*s).ok()?);
    let values: Vec<Option<f64>> = match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().iter().collect(),
        DataType::Float32 => a
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(f64::from))
            .collect(),
        _ => return None,
    };
    let out: Result<Vec<Option<i128>>, String> = values
        .into_iter()
        .map(|v| v.map(|v| to_unscaled(v, p, s)).transpose())
        .collect();
    Some(out.and_then(|v| {
        Decimal128Array::from(v)
            .with_precision_and_scale(p, s as i8)
            .map(|d| Arc::new(d) as ArrayRef)
            .map_err(|e| e.to_string())
    }))
}

/// `v`'s shortest decimal text rounded HALF_UP to `scale` digits, as an unscaled integer of at
/// most `precision` digits.
fn to_unscaled(v: f64, precision: u8, scale: u8) -> Result<i128, String> {
    let out_of_range = || {
        format!("[NUMERIC_VALUE_OUT_OF_RANGE] {v:?} cannot be represented as DECIMAL({precision}, {scale})")
    };
    if !v.is_finite() {
        return Err(out_of_range());
    }
    // Rust's `Display` of a double is its shortest round-trip text, positional (no exponent):
    // the digits of Java's `Double.toString`.
    let text = format!("{}", v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int.trim_start_matches('0');
    let scale_digits = usize::from(scale);
    if int.len() + scale_digits > usize::from(precision) {
        return Err(out_of_range());
    }
    let kept: String = frac
        .chars()
        .chain(std::iter::repeat('0'))
        .take(scale_digits)
        .collect();
    let round_up = frac
        .as_bytes()
        .get(scale_digits)
        .is_some_and(|d| *d >= b'5');
    let digits = format!("{int}{kept}");
    let mut unscaled: i128 = match digits.is_empty() {
        true => 0,
        false => digits.parse().map_err(|_| out_of_range())?,
    };
    if round_up {
        unscaled += 1;
    }
    let limit = 10i128
        .checked_pow(u32::from(precision))
        .unwrap_or(i128::MAX);
    if unscaled >= limit {
        return Err(out_of_range());
    }
    Ok(if v.is_sign_negative() {
        -unscaled
    } else {
        unscaled
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_text_rounded_half_up() {
        assert_eq!(to_unscaled(1.005, 5, 2), Ok(101));
        assert_eq!(to_unscaled(-1.005, 5, 2), Ok(-101));
        assert_eq!(to_unscaled(1e18, 38, 18), Ok(10i128.pow(36)));
        assert_eq!(to_unscaled(0.1, 38, 30), Ok(10i128.pow(29)));
        assert_eq!(
            to_unscaled(123456789.123456789, 38, 18),
            Ok(123456789123456790000000000)
        );
        assert_eq!(to_unscaled(0.0, 5, 2), Ok(0));
        assert_eq!(to_unscaled(-0.0, 5, 2), Ok(0));
        assert_eq!(to_unscaled(0.004, 5, 2), Ok(0));
        assert_eq!(to_unscaled(0.005, 5, 2), Ok(1));
        // 999.995 rounds up past DECIMAL(5,2).
        assert!(to_unscaled(999.995, 5, 2).is_err());
        assert!(to_unscaled(f64::NAN, 5, 2).is_err());
        assert!(to_unscaled(f64::INFINITY, 38, 0).is_err());
        assert!(to_unscaled(1e38, 38, 0).is_err());
        assert_eq!(to_unscaled(9.9e37, 38, 0), Ok(99 * 10i128.pow(36)));
    }

    #[test]
    fn a_float_is_widened_to_a_double_first() {
        let a: ArrayRef = Arc::new(arrow::array::Float32Array::from(vec![Some(1.1f32), None]));
        let out = float_array_to_decimal(&a, &DataType::Decimal128(20, 15))
            .unwrap()
            .unwrap();
        let d = out.as_primitive::<arrow::datatypes::Decimal128Type>();
        // 1.1f is 1.100000023841858 as a double.
        assert_eq!(d.value(0), 1_100_000_023_841_858);
        assert!(d.is_null(1));
    }
}
