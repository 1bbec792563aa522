//! DOUBLE / FLOAT to STRING as Spark writes them: Java's `Double.toString` / `Float.toString` —
//! the shortest digits that read back to the same value, positional with at least one fractional
//! digit when 10^-3 ≤ |x| < 10^7 (`100.0`, `0.001`), else `d.dddE±n` (`1.0E20`, `1.23456789E7`,
//! `1.0E-4`); `NaN`, `Infinity`, `-Infinity`, `-0.0`. Arrow writes `1e20`, `12345678.9` and
//! `inf` (red team helper-34), so a string computed from a float differed from Spark's.
//!
//! Applied after type coercion (`super::coerced`) to every such cast, written or implied
//! (`x || ''`), and to every float stored into a STRING column (`value_cast::cast_checked`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, LargeStringArray, StringArray, StringViewArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::logical_expr::Expr;

/// `CAST(e AS to)` with Spark's text, when `from` is a float and `to` a string type.
pub fn spark_float_to_text(e: Expr, from: &DataType, to: &DataType) -> Option<Expr> {
    if !matches!(from, DataType::Float64 | DataType::Float32) || !is_text(to) {
        return None;
    }
    Some(super::convert_udf::convert_call(
        "spark_float_to_string",
        e,
        to,
        |a, to| float_array_to_text(a, to).map(Ok),
    ))
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// A float array as the string type `to`, each value as Java writes it; None when `a` is not a
/// float or `to` not a string type.
pub fn float_array_to_text(a: &ArrayRef, to: &DataType) -> Option<ArrayRef> {
    let texts: Vec<Option<String>> = match a.data_type() {
        DataType::Float64 => a
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(|v| java_text(format!("{v:e}"), v.is_nan(), v.is_infinite())))
            .collect(),
        DataType::Float32 => a
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(|v| java_text(format!("{v:e}"), v.is_nan(), v.is_infinite())))
            .collect(),
        _ => return None,
    };
    Some(match to {
        DataType::Utf8 => Arc::new(texts.into_iter().collect::<StringArray>()),
        DataType::LargeUtf8 => Arc::new(texts.into_iter().collect::<LargeStringArray>()),
        DataType::Utf8View => Arc::new(texts.into_iter().collect::<StringViewArray>()),
        _ => return None,
    })
}

/// Java's text of a float from Rust's shortest scientific text (`-1.2345e7`, `5e-324`, `0e0`).
fn java_text(sci: String, nan: bool, infinite: bool) -> String {
    if nan {
        return "NaN".into();
    }
    let negative = sci.starts_with('-');
    let sign = if negative { "-" } else { "" };
    if infinite {
        return format!("{sign}Infinity");
    }
    let body = sci.trim_start_matches('-');
    let (mantissa, exp) = body.split_once('e').unwrap_or((body, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = match digits.trim_end_matches('0') {
        "" => "0".to_string(),
        d => d.to_string(),
    };
    if digits == "0" {
        return format!("{sign}0.0");
    }
    if (-3..7).contains(&exp) {
        // Positional: the point after digit exp+1 (left-padded with zeros when exp < 0).
        let point = exp + 1;
        let text = if point <= 0 {
            let zeros = "0".repeat(usize::try_from(-point).unwrap_or(0));
            format!("0.{zeros}{digits}")
        } else {
            let point = usize::try_from(point).unwrap_or(0);
            let int = format!("{digits:0<point$}");
            let (int, frac) = int.split_at(point.min(int.len()));
            let frac = match frac {
                "" => "0",
                f => f,
            };
            format!("{int}.{frac}")
        };
        return format!("{sign}{text}");
    }
    let (first, rest) = digits.split_at(1);
    let rest = if rest.is_empty() { "0" } else { rest };
    format!("{sign}{first}.{rest}E{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: f64) -> String {
        java_text(format!("{v:e}"), v.is_nan(), v.is_infinite())
    }

    fn f(v: f32) -> String {
        java_text(format!("{v:e}"), v.is_nan(), v.is_infinite())
    }

    #[test]
    fn doubles_as_java_writes_them() {
        for (v, want) in [
            (1e20, "1.0E20"),
            (12345678.9, "1.23456789E7"),
            (1234567.0, "1234567.0"),
            (1e7, "1.0E7"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
            (123.456, "123.456"),
        ] {
            assert_eq!(d(v), want, "{v:e}");
        }
    }

    #[test]
    fn floats_as_java_writes_them() {
        assert_eq!(f(1e10), "1.0E10");
        assert_eq!(f(1.1), "1.1");
        assert_eq!(f(f32::INFINITY), "Infinity");
        assert_eq!(f(3.4028235e38), "3.4028235E38");
    }
}
