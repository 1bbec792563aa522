//! `greatest` and `least` over floats, as Spark orders them: -0.0 equals 0.0, NaN is above every
//! other value, NULLs are skipped, and of equal values the first is kept (Spark replaces its
//! running best only by a strictly greater — or smaller — value). DataFusion orders -0.0 below
//! 0.0, so `greatest(f, 0)` on f = -0.0 gave 0.0 where Spark stores -0.0: a generated column
//! held another value depending on which engine wrote the row (found by the Spark interop test).
//!
//! Applied after type coercion (`super::coerced`): every argument has the call's float type then.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float32Type, Float64Type};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Extremum {
    Greatest,
    Least,
}

/// `f` (a coerced `greatest` / `least` call) with Spark's float ordering; `None` when it is not
/// such a call over floats.
pub fn spark_extremum(f: &ScalarFunction, return_type: &DataType) -> Option<Expr> {
    let which = match f.func.name() {
        "greatest" => Extremum::Greatest,
        "least" => Extremum::Least,
        _ => return None,
    };
    if !matches!(return_type, DataType::Float32 | DataType::Float64) {
        return None;
    }
    Some(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(SparkExtremum {
            which,
            signature: Signature::variadic_any(Volatility::Immutable),
        })),
        f.args.clone(),
    )))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkExtremum {
    which: Extremum,
    signature: Signature,
}

impl ScalarUDFImpl for SparkExtremum {
    fn name(&self) -> &str {
        match self.which {
            Extremum::Greatest => "spark_greatest",
            Extremum::Least => "spark_least",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) if arg_types.iter().all(|a| a == t) => Ok(t.clone()),
            _ => exec_err!("{}: arguments of one float type expected", self.name()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let out = match arrays.first().map(|a| a.data_type()) {
            Some(DataType::Float64) => extremum::<Float64Type>(&arrays, self.which, |v| v, |v| v),
            // An f32 widens to f64 exactly, and back without rounding (it is one of the inputs).
            Some(DataType::Float32) => {
                extremum::<Float32Type>(&arrays, self.which, f64::from, |v| v as f32)
            }
            _ => None,
        };
        match out {
            Some(out) => Ok(ColumnarValue::Array(out)),
            None => exec_err!("{}: arguments of one float type expected", self.name()),
        }
    }
}

/// The extremum of `arrays` (all of type `T`; `None` otherwise) per row.
fn extremum<T: ArrowPrimitiveType>(
    arrays: &[ArrayRef],
    which: Extremum,
    widen: fn(T::Native) -> f64,
    narrow: fn(f64) -> T::Native,
) -> Option<ArrayRef> {
    let cols = arrays
        .iter()
        .map(|a| a.as_primitive_opt::<T>())
        .collect::<Option<Vec<_>>>()?;
    let picked = pick(&cols, which, |a, i| widen(a.value(i)));
    Some(Arc::new(
        picked
            .into_iter()
            .map(|v| v.map(narrow))
            .collect::<PrimitiveArray<T>>(),
    ))
}

/// Per row, the first non-NULL value no other value beats (strictly) under Spark's order.
fn pick<A: Array>(
    cols: &[&A],
    which: Extremum,
    value: impl Fn(&A, usize) -> f64,
) -> Vec<Option<f64>> {
    let n = cols.first().map_or(0, |c| c.len());
    (0..n)
        .map(|row| {
            let mut best: Option<f64> = None;
            for c in cols {
                if c.is_null(row) {
                    continue;
                }
                let v = value(c, row);
                best = match best {
                    None => Some(v),
                    Some(b) => {
                        let beats = match which {
                            Extremum::Greatest => spark_cmp(v, b) == Ordering::Greater,
                            Extremum::Least => spark_cmp(v, b) == Ordering::Less,
                        };
                        Some(if beats { v } else { b })
                    }
                };
            }
            best
        })
        .collect()
}

/// Spark's order of doubles: -0.0 equals 0.0, every NaN equals every NaN and is above the rest.
fn spark_cmp(a: f64, b: f64) -> Ordering {
    let key = |x: f64| if x.is_nan() { f64::NAN } else { x + 0.0 };
    key(a).total_cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Float64Array;

    #[test]
    fn first_of_equals_is_kept_and_nan_is_greatest() {
        let a = Float64Array::from(vec![Some(-0.0), Some(0.0), None, Some(f64::NAN), Some(1.0)]);
        let b = Float64Array::from(vec![Some(0.0), Some(-0.0), Some(2.0), Some(5.0), None]);
        let v = |a: &Float64Array, i: usize| a.value(i);
        let g = pick(&[&a, &b], Extremum::Greatest, v);
        assert_eq!(g[0].map(f64::to_bits), Some((-0.0f64).to_bits()));
        assert_eq!(g[1].map(f64::to_bits), Some(0.0f64.to_bits()));
        assert_eq!(g[2], Some(2.0));
        assert!(g[3].is_some_and(f64::is_nan));
        assert_eq!(g[4], Some(1.0));
        let l = pick(&[&a, &b], Extremum::Least, v);
        assert_eq!(l[0].map(f64::to_bits), Some((-0.0f64).to_bits()));
        assert_eq!(l[3], Some(5.0));
        assert_eq!(spark_cmp(-f64::NAN, f64::INFINITY), Ordering::Greater);
    }
}
