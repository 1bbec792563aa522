//! `round`, `ceil` and `floor` as Spark computes and types them (`RoundBase`, `Ceil`, `Floor`):
//! - `round(x, d)` of a DOUBLE or FLOAT rounds the float's shortest decimal text HALF_UP
//!   (`BigDecimal(d).setScale(d, HALF_UP).toDouble`): `round(1.255D, 2)` is 1.26 and
//!   `round(1.005D, 2)` 1.01 in Spark, where DataFusion's `(x · 100).round() / 100` gave 1.25 and
//!   1.0 (the binary value is a hair below the tie). A zero result is +0.0, NaN and the
//!   infinities stay. The scale must be an integer literal, as in Spark; another scale is left
//!   to DataFusion.
//! - `ceil(x)` / `floor(x)` of a DOUBLE, FLOAT or integer is a BIGINT (Java's `(long)` of
//!   `Math.ceil`: saturating, NaN is 0); of a DECIMAL(p,s) with s > 0, a DECIMAL(p - s + 1, 0).
//!   DataFusion kept DOUBLE and the DECIMAL's scale, so `ceil(x) || ''` was '2.0' where Spark
//!   writes '2', and a CTAS stored another column type.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Float32Array, Float64Array, Int64Array,
};
use arrow::datatypes::{DataType, Decimal128Type, Float32Type, Float64Type};
use datafusion::common::{exec_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::convert_udf::{convert_call, Converter};
use super::rewrite::{cast, is_integer, type_of};

/// What a `round`, `ceil` or `floor` call becomes.
enum Plan {
    /// Spark's `round` of a float at this scale.
    RoundFloat(i32),
    /// A converter to this type (`ceil`/`floor` of a float or a DECIMAL).
    Convert(&'static str, Converter, DataType),
    /// `ceil`/`floor` of an integer: the integer as a BIGINT.
    AsBigint,
}

fn plan(f: &ScalarFunction, schema: &DFSchema) -> Option<Plan> {
    let name = f.name().to_ascii_lowercase();
    let t = type_of(f.args.first()?, schema)?;
    let ceil = name == "ceil";
    match (name.as_str(), f.args.len()) {
        ("round", 1 | 2) if matches!(t, DataType::Float64 | DataType::Float32) => {
            match f.args.get(1) {
                None => Some(Plan::RoundFloat(0)),
                Some(Expr::Literal(v, _)) => literal_i32(v).map(Plan::RoundFloat),
                Some(_) => None,
            }
        }
        ("ceil" | "floor", 1) => match t {
            DataType::Float64 | DataType::Float32 => Some(match ceil {
                true => Plan::Convert("spark_ceil", float_ceil, DataType::Int64),
                false => Plan::Convert("spark_floor", float_floor, DataType::Int64),
            }),
            t if is_integer(&t) => Some(Plan::AsBigint),
            DataType::Decimal128(p, s) if s > 0 => {
                let to =
                    DataType::Decimal128((i16::from(p) - i16::from(s) + 1).clamp(1, 38) as u8, 0);
                Some(match ceil {
                    true => Plan::Convert("spark_ceil", decimal_ceil, to),
                    false => Plan::Convert("spark_floor", decimal_floor, to),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// `f` with Spark's meaning when it is `round`, `ceil` or `floor` of an argument Spark computes
/// or types otherwise; `f` itself (Err) when not.
pub fn spark_rounding(f: ScalarFunction, schema: &DFSchema) -> Result<Expr, ScalarFunction> {
    let Some(plan) = plan(&f, schema) else {
        return Err(f);
    };
    let Some(x) = f.args.first().cloned() else {
        return Err(f);
    };
    Ok(match plan {
        Plan::RoundFloat(scale) => Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::new(ScalarUDF::from(SparkRound {
                scale,
                signature: Signature::any(1, Volatility::Immutable),
            })),
            vec![x],
        )),
        // A FLOAT's ceil/floor is of the FLOAT widened to a DOUBLE (Spark's implicit cast).
        Plan::Convert(name, convert, DataType::Int64) => {
            convert_call(name, cast(x, &DataType::Float64), &DataType::Int64, convert)
        }
        Plan::Convert(name, convert, to) => convert_call(name, x, &to, convert),
        Plan::AsBigint => cast(x, &DataType::Int64),
    })
}

fn literal_i32(v: &ScalarValue) -> Option<i32> {
    match v {
        ScalarValue::Int8(Some(v)) => Some(i32::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i32::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(*v),
        ScalarValue::Int64(Some(v)) => i32::try_from(*v).ok(),
        _ => None,
    }
}

/// `x` rounded HALF_UP at `scale` decimal places (negative: left of the point) from its
/// shortest decimal text, as Java's `BigDecimal.valueOf(x).setScale(scale, HALF_UP)
/// .doubleValue()`.
pub fn round_half_up(x: f64, scale: i32) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Rust's `{:e}` is the shortest round-trip digits, as Java's `Double.toString`:
    // `d.ddde±n`.
    let text = format!("{:e}", x.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let Ok(exp) = exp.parse::<i64>() else {
        return x;
    };
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    // Digits kept: those left of the point (exp + 1) and `scale` more.
    let kept = exp + 1 + i64::from(scale);
    if kept >= digits.len() as i64 {
        // Nothing dropped: the value itself (a BigDecimal has no -0).
        return if x == 0.0 { 0.0 } else { x };
    }
    let Ok(k) = usize::try_from(kept) else {
        return 0.0; // every digit dropped, the first of them a zero (so rounding down)
    };
    let mut unscaled: u64 = digits
        .get(..k)
        .unwrap_or(&[])
        .iter()
        .fold(0, |acc, d| acc * 10 + u64::from(d - b'0'));
    if digits.get(k).is_some_and(|d| *d >= b'5') {
        unscaled += 1;
    }
    if unscaled == 0 {
        return 0.0;
    }
    // unscaled · 10^-scale, parsed (correctly rounded, as `doubleValue`).
    let v: f64 = format!("{unscaled}e{}", -i64::from(scale))
        .parse()
        .unwrap_or(x.abs());
    if x < 0.0 {
        -v
    } else {
        v
    }
}

/// Spark's `round(x, scale)` of a DOUBLE or FLOAT (a FLOAT widened to a double first, then
/// narrowed back).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkRound {
    scale: i32,
    signature: Signature,
}

impl ScalarUDFImpl for SparkRound {
    fn name(&self) -> &str {
        "spark_round"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.first() {
            Some(t @ (DataType::Float64 | DataType::Float32)) => Ok(t.clone()),
            other => exec_err!("spark_round over {other:?}: expected a DOUBLE or FLOAT"),
        }
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(x) = args.args.into_iter().next() else {
            return exec_err!("spark_round takes one argument");
        };
        let scalar = matches!(x, ColumnarValue::Scalar(_));
        let a = x.into_array(args.number_rows)?;
        let out: ArrayRef = match a.data_type() {
            DataType::Float64 => Arc::new(
                a.as_primitive::<Float64Type>()
                    .iter()
                    .map(|v| v.map(|v| round_half_up(v, self.scale)))
                    .collect::<Float64Array>(),
            ),
            DataType::Float32 => Arc::new(
                a.as_primitive::<Float32Type>()
                    .iter()
                    .map(|v| v.map(|v| round_half_up(f64::from(v), self.scale) as f32))
                    .collect::<Float32Array>(),
            ),
            other => return exec_err!("spark_round over {other}"),
        };
        Ok(match scalar {
            true => ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?),
            false => ColumnarValue::Array(out),
        })
    }
}

/// Java's `(long)` of a double: saturating at BIGINT's ends, NaN is 0 (Rust's `as` is the same).
fn float_to_long(a: &ArrayRef, round: fn(f64) -> f64) -> Option<Result<ArrayRef, String>> {
    let values: Vec<Option<f64>> = match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().iter().collect(),
        _ => return None,
    };
    let out: Int64Array = values
        .into_iter()
        .map(|v| v.map(|v| round(v) as i64))
        .collect();
    Some(Ok(Arc::new(out)))
}

fn float_ceil(a: &ArrayRef, _to: &DataType) -> Option<Result<ArrayRef, String>> {
    float_to_long(a, f64::ceil)
}

fn float_floor(a: &ArrayRef, _to: &DataType) -> Option<Result<ArrayRef, String>> {
    float_to_long(a, f64::floor)
}

/// A DECIMAL(p,s) array to the integral DECIMAL `to`, each value rounded up (`up`) or down.
fn decimal_to_integral(a: &ArrayRef, to: &DataType, up: bool) -> Option<Result<ArrayRef, String>> {
    let (DataType::Decimal128(_, s), DataType::Decimal128(p, 0)) = (a.data_type(), to) else {
        return None;
    };
    let unit = 10i128.checked_pow(u32::try_from(*s).ok()?)?;
    let out = a
        .as_primitive::<Decimal128Type>()
        .iter()
        .map(|v| {
            v.map(|v| {
                let (q, r) = (v / unit, v % unit);
                match (up, r) {
                    (true, r) if r > 0 => q + 1,
                    (false, r) if r < 0 => q - 1,
                    _ => q,
                }
            })
        })
        .collect::<Decimal128Array>()
        .with_precision_and_scale(*p, 0);
    Some(
        out.map(|d| Arc::new(d) as ArrayRef)
            .map_err(|e| e.to_string()),
    )
}

fn decimal_ceil(a: &ArrayRef, to: &DataType) -> Option<Result<ArrayRef, String>> {
    decimal_to_integral(a, to, true)
}

fn decimal_floor(a: &ArrayRef, to: &DataType) -> Option<Result<ArrayRef, String>> {
    decimal_to_integral(a, to, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_the_shortest_text_half_up_as_spark() {
        // Spark 4: round(1.255D, 2) 1.26, round(1.005D, 2) 1.01, round(0.125D, 2) 0.13,
        // round(2.5D) 3.0, round(-2.5D) -3.0, round(1e300D, -300) 1e300.
        assert_eq!(round_half_up(1.255, 2), 1.26);
        assert_eq!(round_half_up(1.005, 2), 1.01);
        assert_eq!(round_half_up(0.125, 2), 0.13);
        assert_eq!(round_half_up(2.5, 0), 3.0);
        assert_eq!(round_half_up(-2.5, 0), -3.0);
        assert_eq!(round_half_up(1e300, -300), 1e300);
        assert_eq!(round_half_up(1234.5, -2), 1200.0);
        assert_eq!(round_half_up(-1250.0, -2), -1300.0);
        assert_eq!(round_half_up(0.0004, 3), 0.0);
        assert_eq!(round_half_up(0.0005, 3), 0.001);
        assert!(round_half_up(-0.4, 0).is_sign_positive());
        assert!(round_half_up(-0.0, 2).is_sign_positive());
        assert!(round_half_up(f64::NAN, 1).is_nan());
        assert_eq!(round_half_up(f64::INFINITY, 1), f64::INFINITY);
        assert_eq!(round_half_up(0.1 + 0.2, 15), 0.3);
    }

    #[test]
    fn ceil_and_floor_of_decimals_and_floats() {
        let d: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(150), Some(-150), Some(100), None])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        let to = DataType::Decimal128(9, 0);
        let up = decimal_ceil(&d, &to).unwrap().unwrap();
        let down = decimal_floor(&d, &to).unwrap().unwrap();
        let vals = |a: &ArrayRef| {
            a.as_primitive::<Decimal128Type>()
                .iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(vals(&up), vec![Some(2), Some(-1), Some(1), None]);
        assert_eq!(vals(&down), vec![Some(1), Some(-2), Some(1), None]);
        let f: ArrayRef = Arc::new(Float64Array::from(vec![1.5, f64::NAN, 1e300, -1e300]));
        let up = float_ceil(&f, &DataType::Int64).unwrap().unwrap();
        let longs: Vec<i64> = up
            .as_primitive::<arrow::datatypes::Int64Type>()
            .values()
            .to_vec();
        assert_eq!(longs, vec![2, 0, i64::MAX, i64::MIN]);
    }
}
