//! `spark_value(x)`: the identity, which DataFusion's planner cannot see through.
//!
//! Two DataFusion shortcuts give an expression another meaning than Spark's, and both stop at a
//! function they do not know:
//! - the simplifier unwraps a cast in a comparison (`CAST(l AS INT) = 5` becomes `l = 5`), so a
//!   narrowing cast that raises `CAST_OVERFLOW` in Spark never runs;
//! - the physical IN list takes an item that answers with a scalar on an empty batch (a CASE) for
//!   a constant (`super::in_list`).
//!
//! `spark_value` answers with one value per row (an array, never a scalar), has its argument's
//! type and is immutable (a constant argument is still folded).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

const NAME: &str = "spark_value";

/// `e` behind the identity (once: an expression already behind it is returned as it is).
pub fn opaque(e: Expr) -> Expr {
    match is_opaque(&e) {
        true => e,
        false => Expr::ScalarFunction(ScalarFunction::new_udf(udf(), vec![e])),
    }
}

/// Whether `e` is a `spark_value` call.
pub fn is_opaque(e: &Expr) -> bool {
    matches!(e, Expr::ScalarFunction(f) if is_opaque_call(f))
}

/// Whether `f` is `spark_value`.
pub fn is_opaque_call(f: &ScalarFunction) -> bool {
    f.func.name() == NAME
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkValue {
    signature: Signature,
}

fn udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(SparkValue {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}

impl ScalarUDFImpl for SparkValue {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t] => Ok(t.clone()),
            _ => exec_err!("{NAME} takes one argument"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        match args.args.into_iter().next() {
            Some(v) => Ok(ColumnarValue::Array(v.into_array(n)?)),
            None => exec_err!("{NAME} takes one argument"),
        }
    }
}
