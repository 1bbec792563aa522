//! Spark's logarithms in place of DataFusion's: `log(x)` is the natural logarithm in Spark (the
//! base-10 one in DataFusion: `log(100)` was 2, Spark's 4.605…), `log(b, x)` is ln(x) / ln(b),
//! and every one is NULL where Spark's asymptote is (`ln(0)`, `log10(-1)`, `log(2, 0)`,
//! `log1p(-1)`: DataFusion gave -Infinity or NaN, which an UPDATE stored). DOUBLE in, DOUBLE out
//! (integers and DECIMALs are cast by the planner), as in Spark.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// `log(x)` (natural) or `log(base, x)`.
    Log,
    Ln,
    Log10,
    Log2,
    Log1p,
}

/// The functions, to register in a planning context (each replaces DataFusion's of that name).
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [Kind::Log, Kind::Ln, Kind::Log10, Kind::Log2, Kind::Log1p]
        .into_iter()
        .map(|kind| {
            let mut forms = vec![TypeSignature::Exact(vec![DataType::Float64])];
            if kind == Kind::Log {
                forms.push(TypeSignature::Exact(vec![
                    DataType::Float64,
                    DataType::Float64,
                ]));
            }
            Arc::new(ScalarUDF::from(SparkLog {
                kind,
                signature: Signature::one_of(forms, Volatility::Immutable),
            }))
        })
        .collect()
}

/// One argument's logarithm, NULL at or below Spark's asymptote (`UnaryLogExpression`).
fn unary(kind: Kind, x: f64) -> Option<f64> {
    let (asymptote, f): (f64, fn(f64) -> f64) = match kind {
        Kind::Log | Kind::Ln => (0.0, f64::ln),
        Kind::Log10 => (0.0, f64::log10),
        Kind::Log2 => (0.0, f64::log2),
        Kind::Log1p => (-1.0, f64::ln_1p),
    };
    (x.is_nan() || x > asymptote).then(|| f(x))
}

/// `log(base, x)` as Spark's `Logarithm`: NULL when either is at or below zero.
fn with_base(base: f64, x: f64) -> Option<f64> {
    (!(base <= 0.0 || x <= 0.0)).then(|| x.ln() / base.ln())
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkLog {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for SparkLog {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Log => "log",
            Kind::Ln => "ln",
            Kind::Log10 => "log10",
            Kind::Log2 => "log2",
            Kind::Log1p => "log1p",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // All-scalar arguments give one-row arrays, and the one-row result stands for a scalar.
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let floats = |a: &ArrayRef| -> Result<Vec<Option<f64>>> {
            match a.data_type() {
                DataType::Float64 => Ok(a.as_primitive::<Float64Type>().iter().collect()),
                other => exec_err!("{}: expected a DOUBLE, found {other}", self.name()),
            }
        };
        let out: Float64Array = match arrays.as_slice() {
            [x] => floats(x)?
                .into_iter()
                .map(|x| x.and_then(|x| unary(self.kind, x)))
                .collect(),
            [base, x] => floats(base)?
                .into_iter()
                .zip(floats(x)?)
                .map(|(b, x)| with_base(b?, x?))
                .collect(),
            _ => return exec_err!("{}: one or two arguments", self.name()),
        };
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logarithms_as_spark() {
        // Spark 4: log(100D) 4.605170185988092, ln(0D) NULL, ln(-1D) NULL, log10(0D) NULL,
        // log(2D, 8D) 3.0, log(-2D, 8D) NULL, log(2D, 0D) NULL, log2(0D) NULL, log(1D, 5D) inf.
        assert_eq!(unary(Kind::Log, 100.0), Some(4.605170185988092));
        assert_eq!(unary(Kind::Ln, 0.0), None);
        assert_eq!(unary(Kind::Ln, -1.0), None);
        assert_eq!(unary(Kind::Log10, 0.0), None);
        assert_eq!(unary(Kind::Log2, 0.0), None);
        assert_eq!(unary(Kind::Log1p, -1.0), None);
        assert_eq!(unary(Kind::Log10, 1000.0), Some(3.0));
        assert!(unary(Kind::Ln, f64::NAN).is_some_and(f64::is_nan));
        assert_eq!(with_base(2.0, 8.0), Some(3.0));
        assert_eq!(with_base(-2.0, 8.0), None);
        assert_eq!(with_base(2.0, 0.0), None);
        assert_eq!(with_base(1.0, 5.0), Some(f64::INFINITY));
    }
}
