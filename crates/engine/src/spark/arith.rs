//! Spark's arithmetic operators as DataFusion functions, where DataFusion's own operators answer
//! differently (Spark 4, `spark.sql.ansi.enabled` on by default):
//! - `/` on integers and floats is DOUBLE division (`5 / 2` is 2.5, not 2);
//! - `+`, `-`, `*` on integers raise `[ARITHMETIC_OVERFLOW]` instead of wrapping;
//! - `/` and `%` by zero raise `[DIVIDE_BY_ZERO]` (also on floats, where IEEE gives inf or NaN);
//! - `%` is Java's remainder: the dividend's sign, and `MIN % -1` is 0.
//!
//! With ANSI off (Spark's legacy mode) overflow wraps and a zero divisor gives NULL, as in Spark.
//! A zero divisor raises only when the dividend is not NULL (`NULL / 0` is NULL), as Spark
//! evaluates the divisor first and skips the dividend when it is NULL.
//!
//! The arguments arrive already cast to the type Spark computes in (see `rewrite.rs`): both
//! Float64 for division, one common integer or float type for the others.

use std::sync::Arc;

use super::decimal_arith::{result_type, DecimalOp};
use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion::common::{exec_err, DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The operators DataFusion evaluates differently from Spark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
    /// DECIMAL `+ - * /` with Spark's result type and HALF_UP rounding (`decimal_arith`).
    Decimal(DecimalOp),
    /// A float as Spark compares it: -0.0 as 0.0, every NaN as one NaN (the second operand is
    /// ignored).
    CanonicalFloat,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SparkArith {
    op: ArithOp,
    ansi: bool,
    signature: Signature,
}

/// The function computing `op` as Spark does.
pub fn udf(op: ArithOp, ansi: bool) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(SparkArith {
        op,
        ansi,
        signature: Signature::any(2, Volatility::Immutable),
    }))
}

/// The function's name: `spark_*` in ANSI mode, `legacy_*` otherwise.
fn name_of(op: ArithOp, ansi: bool) -> &'static str {
    match (op, ansi) {
        (ArithOp::Add, true) => "spark_add",
        (ArithOp::Subtract, true) => "spark_subtract",
        (ArithOp::Multiply, true) => "spark_multiply",
        (ArithOp::Divide, true) => "spark_divide",
        (ArithOp::Remainder, true) => "spark_remainder",
        (ArithOp::Decimal(DecimalOp::Add), true) => "spark_decimal_add",
        (ArithOp::Decimal(DecimalOp::Subtract), true) => "spark_decimal_subtract",
        (ArithOp::Decimal(DecimalOp::Multiply), true) => "spark_decimal_multiply",
        (ArithOp::Decimal(DecimalOp::Divide), true) => "spark_decimal_divide",
        (ArithOp::Decimal(DecimalOp::Add), false) => "legacy_decimal_add",
        (ArithOp::Decimal(DecimalOp::Subtract), false) => "legacy_decimal_subtract",
        (ArithOp::Decimal(DecimalOp::Multiply), false) => "legacy_decimal_multiply",
        (ArithOp::Decimal(DecimalOp::Divide), false) => "legacy_decimal_divide",
        (ArithOp::CanonicalFloat, _) => "spark_canonical_float",
        (ArithOp::Add, false) => "legacy_add",
        (ArithOp::Subtract, false) => "legacy_subtract",
        (ArithOp::Multiply, false) => "legacy_multiply",
        (ArithOp::Divide, false) => "legacy_divide",
        (ArithOp::Remainder, false) => "legacy_remainder",
    }
}

/// Whether `name` is one of these functions (a rewrite already applied). Exactly these: other
/// `spark_*` functions (`spark_round`, `spark_ceil`, …) are neither typed by their first operand
/// nor portable into a table's stored rules as these are.
pub fn is_spark_arith(name: &str) -> bool {
    let ops = [
        ArithOp::Add,
        ArithOp::Subtract,
        ArithOp::Multiply,
        ArithOp::Divide,
        ArithOp::Remainder,
        ArithOp::CanonicalFloat,
        ArithOp::Decimal(DecimalOp::Add),
        ArithOp::Decimal(DecimalOp::Subtract),
        ArithOp::Decimal(DecimalOp::Multiply),
        ArithOp::Decimal(DecimalOp::Divide),
    ];
    ops.into_iter()
        .any(|op| name_of(op, true) == name || name_of(op, false) == name)
}

impl ScalarUDFImpl for SparkArith {
    fn name(&self) -> &str {
        name_of(self.op, self.ansi)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match (self.op, arg_types) {
            (ArithOp::Divide, _) => Ok(DataType::Float64),
            (
                ArithOp::Decimal(op),
                [DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)],
            ) => {
                let (p, s) = result_type(op, *p1, *s1, *p2, *s2);
                Ok(DataType::Decimal128(p, s))
            }
            (_, [t, ..]) => Ok(t.clone()),
            _ => exec_err!("{} takes two arguments", self.name()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [l, r] = arrays.as_slice() else {
            return exec_err!("{} takes two arguments", self.name());
        };
        if l.data_type() != r.data_type()
            && !matches!(self.op, ArithOp::Decimal(_) | ArithOp::CanonicalFloat)
        {
            return exec_err!(
                "{}: operands of different types ({} and {})",
                self.name(),
                l.data_type(),
                r.data_type()
            );
        }
        Ok(ColumnarValue::Array(evaluate(self.op, self.ansi, l, r)?))
    }
}

/// `l op r` as Spark computes it, element-wise (operands of one type).
pub fn evaluate(op: ArithOp, ansi: bool, l: &ArrayRef, r: &ArrayRef) -> Result<ArrayRef> {
    match op {
        ArithOp::Add | ArithOp::Subtract | ArithOp::Multiply => checked(op, ansi, l, r),
        ArithOp::Divide => divide(l, r, ansi),
        ArithOp::Remainder => remainder(l, r, ansi),
        ArithOp::Decimal(op) => super::decimal_arith::evaluate(op, l, r, ansi),
        ArithOp::CanonicalFloat => canonical_float(l),
    }
}

fn canonical_float(l: &ArrayRef) -> Result<ArrayRef> {
    match l.data_type() {
        DataType::Float64 => {
            let a = l.as_primitive::<Float64Type>();
            let out: PrimitiveArray<Float64Type> =
                a.unary(|x| if x.is_nan() { f64::NAN } else { x + 0.0 });
            Ok(Arc::new(out))
        }
        other => exec_err!("spark_canonical_float: expected DOUBLE, got {other}"),
    }
}

fn checked(op: ArithOp, ansi: bool, l: &ArrayRef, r: &ArrayRef) -> Result<ArrayRef> {
    {
        use arrow::compute::kernels::numeric as n;
        let out = match (op, ansi) {
            (ArithOp::Add, true) => n::add(l, r),
            (ArithOp::Subtract, true) => n::sub(l, r),
            (ArithOp::Multiply, true) => n::mul(l, r),
            (ArithOp::Add, false) => n::add_wrapping(l, r),
            (ArithOp::Subtract, false) => n::sub_wrapping(l, r),
            (ArithOp::Multiply, false) => n::mul_wrapping(l, r),
            _ => return exec_err!("{op:?}: not an additive operator"),
        };
        out.map_err(|e| match e {
            arrow::error::ArrowError::ArithmeticOverflow(m) => DataFusionError::Execution(format!(
                "[ARITHMETIC_OVERFLOW] {m}. Use 'try_add'/'try_multiply' or set spark.sql.ansi.enabled to false to tolerate overflow"
            )),
            other => DataFusionError::ArrowError(Box::new(other), None),
        })
    }
}

fn by_zero(op: ArithOp) -> DataFusionError {
    DataFusionError::Execution(match op {
        ArithOp::Remainder => "[REMAINDER_BY_ZERO] Remainder by zero. Use 'try_mod' to tolerate a zero divisor and return NULL instead",
        _ => "[DIVIDE_BY_ZERO] Division by zero. Use 'try_divide' to tolerate a zero divisor and return NULL instead",
    }.to_string())
}

/// Element-wise `f` where both sides are set; a zero divisor raises (ANSI) or gives NULL.
fn by_divisor<T: ArrowPrimitiveType>(
    l: &ArrayRef,
    r: &ArrayRef,
    ansi: bool,
    op: ArithOp,
    is_zero: impl Fn(T::Native) -> bool,
    f: impl Fn(T::Native, T::Native) -> T::Native,
) -> Result<ArrayRef> {
    let l = l.as_primitive::<T>();
    let r = r.as_primitive::<T>();
    if l.len() != r.len() {
        return exec_err!("{op:?}: operands of different lengths");
    }
    // The common case, no zero divisor beside a set dividend: one vectorized pass (`binary`
    // computes every slot, set or not; an unset slot's divisor may be 0 and is never divided by).
    let zero_divisor = (0..r.len()).any(|i| l.is_valid(i) && r.is_valid(i) && is_zero(r.value(i)));
    if !zero_divisor {
        let out: PrimitiveArray<T> =
            arrow::compute::binary(l, r, |a, b| if is_zero(b) { a } else { f(a, b) })?;
        return Ok(Arc::new(out));
    }
    let out = l
        .iter()
        .zip(r.iter())
        .map(|pair| match pair {
            (Some(_), Some(b)) if is_zero(b) => match ansi {
                true => Err(by_zero(op)),
                false => Ok(None),
            },
            (Some(a), Some(b)) => Ok(Some(f(a, b))),
            _ => Ok(None),
        })
        .collect::<Result<PrimitiveArray<T>>>()?;
    Ok(Arc::new(out))
}

fn divide(l: &ArrayRef, r: &ArrayRef, ansi: bool) -> Result<ArrayRef> {
    match l.data_type() {
        DataType::Float64 => {
            by_divisor::<Float64Type>(l, r, ansi, ArithOp::Divide, |b| b == 0.0, |a, b| a / b)
        }
        other => exec_err!("spark_divide: expected DOUBLE operands, got {other}"),
    }
}

fn remainder(l: &ArrayRef, r: &ArrayRef, ansi: bool) -> Result<ArrayRef> {
    match l.data_type() {
        DataType::Int8 => {
            by_divisor::<Int8Type>(l, r, ansi, ArithOp::Remainder, |b| b == 0, i8::wrapping_rem)
        }
        DataType::Int16 => by_divisor::<Int16Type>(
            l,
            r,
            ansi,
            ArithOp::Remainder,
            |b| b == 0,
            i16::wrapping_rem,
        ),
        DataType::Int32 => by_divisor::<Int32Type>(
            l,
            r,
            ansi,
            ArithOp::Remainder,
            |b| b == 0,
            i32::wrapping_rem,
        ),
        DataType::Int64 => by_divisor::<Int64Type>(
            l,
            r,
            ansi,
            ArithOp::Remainder,
            |b| b == 0,
            i64::wrapping_rem,
        ),
        DataType::Float32 => {
            by_divisor::<Float32Type>(l, r, ansi, ArithOp::Remainder, |b| b == 0.0, |a, b| a % b)
        }
        DataType::Float64 => {
            by_divisor::<Float64Type>(l, r, ansi, ArithOp::Remainder, |b| b == 0.0, |a, b| a % b)
        }
        other => exec_err!("spark_remainder: unexpected operand type {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int32Array};

    #[test]
    fn remainder_follows_java() {
        let l: ArrayRef = Arc::new(Int32Array::from(vec![Some(-7), Some(i32::MIN), None]));
        let r: ArrayRef = Arc::new(Int32Array::from(vec![Some(2), Some(-1), Some(0)]));
        let out = remainder(&l, &r, true).unwrap();
        let out = out.as_primitive::<Int32Type>();
        assert_eq!(
            out.iter().collect::<Vec<_>>(),
            vec![Some(-1), Some(0), None]
        );
    }

    #[test]
    fn the_vectorized_pass_never_divides_by_an_unset_zero() {
        use arrow::array::Int64Array;
        let l: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(7),
            None,
            Some(i64::MIN),
            Some(-7),
            Some(5),
        ]));
        let r: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(3),
            Some(0),
            Some(-1),
            Some(3),
            None,
        ]));
        let out = remainder(&l, &r, true).unwrap();
        let out = out.as_primitive::<Int64Type>();
        assert_eq!(
            out.iter().collect::<Vec<_>>(),
            vec![Some(1), None, Some(0), Some(-1), None]
        );
    }

    #[test]
    fn zero_divisor_raises_only_for_a_set_dividend() {
        let l: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0)]));
        let r: ArrayRef = Arc::new(Float64Array::from(vec![Some(-0.0)]));
        assert!(divide(&l, &r, true).is_err());
        assert_eq!(divide(&l, &r, false).unwrap().null_count(), 1);
        let l: ArrayRef = Arc::new(Float64Array::from(vec![None::<f64>]));
        assert_eq!(divide(&l, &r, true).unwrap().null_count(), 1);
    }
}
