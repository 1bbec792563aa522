//! One shape for the casts Spark converts otherwise than Arrow (`decimal_float`, `float_decimal`,
//! `float_text`): a one-argument function of fixed result type whose values come from a
//! converter over the whole array.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Converts an array to the given type: None when the argument is not of the kind it converts,
/// an error for a value that has no result (out of range).
pub type Converter = fn(&ArrayRef, &DataType) -> Option<Result<ArrayRef, String>>;

/// `name(e)`, of type `to`, computed by `convert`.
pub fn convert_call(name: &'static str, e: Expr, to: &DataType, convert: Converter) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(ConvertUdf {
            name,
            to: to.clone(),
            convert,
            signature: Signature::any(1, Volatility::Immutable),
        })),
        vec![e],
    ))
}

/// Equal by name and result type: each name has one converter (function pointers have no
/// meaningful equality).
#[derive(Debug)]
struct ConvertUdf {
    name: &'static str,
    to: DataType,
    convert: Converter,
    signature: Signature,
}

impl PartialEq for ConvertUdf {
    fn eq(&self, other: &Self) -> bool {
        (self.name, &self.to) == (other.name, &other.to)
    }
}

impl Eq for ConvertUdf {}

impl std::hash::Hash for ConvertUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.name, &self.to).hash(state);
    }
}

impl ScalarUDFImpl for ConvertUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.to.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(a) = arrays.first() else {
            return exec_err!("{} takes one argument", self.name);
        };
        match (self.convert)(a, &self.to) {
            Some(Ok(out)) => Ok(ColumnarValue::Array(out)),
            Some(Err(e)) => exec_err!("{e}"),
            None => exec_err!("{}: an argument of another type expected", self.name),
        }
    }
}
