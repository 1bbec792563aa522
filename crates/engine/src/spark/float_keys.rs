//! Float keys as Spark compares them: -0.0 equals 0.0 and every NaN is one NaN. Spark normalizes
//! the floats it partitions, groups and de-duplicates by (`NormalizeFloatingNumbers`) and its sort
//! ties -0.0 with 0.0; DataFusion told them apart where its own kernels compare bits. Found by red
//! team helper-42: `count(*) OVER (PARTITION BY x)` put -0.0 apart from 0.0, `rank() OVER (ORDER
//! BY x)` ranked them apart (a MERGE deleting rank 1 deleted one row where Spark deletes two), and
//! `avg(DISTINCT x)` beside another aggregate counted -0.0 and 0.0 as two values.
//!
//! `spark_float_key(x)` maps -0.0 to 0.0 and any NaN to the canonical NaN, in its argument's type;
//! it wraps a window's PARTITION BY and ORDER BY keys and a DISTINCT aggregate's arguments of a
//! float type (the values a DISTINCT aggregate then sees are normalized, as Spark's grouping by the
//! distinct argument normalizes them). ORDER BY of a query and GROUP BY of NaNs with other bit
//! patterns are `float_plan_keys`'s.

use std::sync::{Arc, OnceLock};

use arrow::array::{ArrayRef, AsArray, Float32Array, Float64Array};
use arrow::datatypes::{DataType, Field, FieldRef, Float32Type, Float64Type};
use datafusion::common::{exec_err, DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::rewrite::type_of;

pub(super) const NAME: &str = "spark_float_key";

/// `e` normalized when it is of a float type (and not normalized already); else `e`, and false.
pub(super) fn normalized(e: Expr, schema: &DFSchema) -> (Expr, bool) {
    let float = matches!(
        type_of(&e, schema),
        Some(DataType::Float32 | DataType::Float64)
    );
    let done = matches!(&e, Expr::ScalarFunction(f) if f.func.name() == NAME);
    match float && !done {
        true => (
            Expr::ScalarFunction(ScalarFunction::new_udf(udf(), vec![e])),
            true,
        ),
        false => (e, false),
    }
}

fn udf() -> Arc<ScalarUDF> {
    static F: OnceLock<Arc<ScalarUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| {
        Arc::new(ScalarUDF::from(FloatKey {
            signature: Signature::uniform(
                1,
                vec![DataType::Float32, DataType::Float64],
                Volatility::Immutable,
            ),
        }))
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatKey {
    signature: Signature,
}

impl ScalarUDFImpl for FloatKey {
    fn name(&self) -> &str {
        NAME
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t @ (DataType::Float32 | DataType::Float64)) => Ok(t.clone()),
            other => exec_err!("{NAME} of {other:?}"),
        }
    }
    /// The argument's nullability is kept: a grouped key keeps its column's field (a plan above
    /// it was built with that field, `float_plan_keys`).
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let Some(f) = args.arg_fields.first() else {
            return exec_err!("{NAME} takes one argument");
        };
        let t = self.return_type(&[f.data_type().clone()])?;
        Ok(Arc::new(Field::new(self.name(), t, f.is_nullable())))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(x) = args.args.first() else {
            return exec_err!("{NAME} takes one argument");
        };
        let a = x.to_array(args.number_rows)?;
        let out: ArrayRef = match a.data_type() {
            DataType::Float64 => Arc::new(
                a.as_primitive::<Float64Type>()
                    .iter()
                    .map(|v| v.map(|v| if v.is_nan() { f64::NAN } else { v + 0.0 }))
                    .collect::<Float64Array>(),
            ),
            DataType::Float32 => Arc::new(
                a.as_primitive::<Float32Type>()
                    .iter()
                    .map(|v| v.map(|v| if v.is_nan() { f32::NAN } else { v + 0.0 }))
                    .collect::<Float32Array>(),
            ),
            other => return exec_err!("{NAME} of {other}"),
        };
        Ok(ColumnarValue::Array(out))
    }
}
