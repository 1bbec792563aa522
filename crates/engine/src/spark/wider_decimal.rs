//! The common type Spark 4 gives DECIMALs of two shapes — in a comparison, a CASE's results and
//! `coalesce` (`DecimalPrecision.widerDecimalType`, integral digits first): scale max(s1, s2),
//! integer digits max(p1 - s1, p2 - s2); past 38 digits the integer digits keep their place and
//! the scale gives way (`DecimalType.boundedPreferIntegralDigits`), values rounded HALF_UP into it.
//! DataFusion keeps the scale instead (and errors when the integer digits do not fit). The two
//! agree up to 38 digits; past them, `a = b` on DECIMAL(38,18) and DECIMAL(38,2) compares `a`
//! rounded to 2 places in Spark, and `coalesce(e, CAST(0 AS DECIMAL(38,0)))` on a DECIMAL(38,10)
//! is a DECIMAL(38,0) (red team helper-36). Only then are the operands cast here, to Spark's type.
//! An integer is the DECIMAL that holds it (INT is DECIMAL(10,0)), an integer literal the DECIMAL
//! of its digits.

use arrow::datatypes::DataType;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::Expr;

/// Spark's common DECIMAL type of `types` when it differs from DataFusion's (more than 38 digits
/// at full scale); `None` otherwise, or when a type is not a DECIMAL or an integer (a float widens
/// to DOUBLE, handled apart), or when no DECIMAL is among them.
pub fn spark_wider(types: &[DataType]) -> Option<DataType> {
    let mut any_decimal = false;
    let (mut int_digits, mut scale) = (0i32, 0i32);
    for t in types {
        let (p, s) = match t {
            DataType::Null => continue,
            DataType::Decimal128(p, s) => {
                any_decimal = true;
                (i32::from(*p), i32::from(*s))
            }
            DataType::Int8 => (3, 0),
            DataType::Int16 => (5, 0),
            DataType::Int32 => (10, 0),
            DataType::Int64 => (20, 0),
            _ => return None,
        };
        int_digits = int_digits.max(p - s);
        scale = scale.max(s);
    }
    let precision = int_digits + scale;
    if !any_decimal || precision <= 38 {
        return None;
    }
    let scale = (scale - (precision - 38)).max(0);
    Some(DataType::Decimal128(38, scale as i8))
}

/// Where the operands meet, which decides how Spark types an integer literal among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coercion {
    /// A comparison (`DecimalPrecision`): an integer literal is the DECIMAL of just its digits
    /// (`DecimalType.fromLiteral`).
    Comparison,
    /// `coalesce`, CASE results, IN (`findWiderCommonType`): an integer literal is an INT when it
    /// fits (DECIMAL(10,0)), else a BIGINT (DECIMAL(20,0)).
    Common,
}

/// The type Spark reads `e` (of type `t`) as in DECIMAL coercion at `at`.
pub fn operand_type(e: &Expr, t: DataType, at: Coercion) -> DataType {
    let literal = match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), _) => i128::from(*v),
        Expr::Literal(ScalarValue::Int32(Some(v)), _) => i128::from(*v),
        _ => return t,
    };
    match at {
        Coercion::Comparison => literal_decimal(literal),
        Coercion::Common if i32::try_from(literal).is_ok() => DataType::Int32,
        Coercion::Common => DataType::Int64,
    }
}

/// The DECIMAL of just an integer literal's digits (Spark's `DecimalType.fromLiteral`).
pub fn literal_decimal(v: i128) -> DataType {
    let digits = v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
    DataType::Decimal128(u8::try_from(digits).unwrap_or(38), 0)
}

/// Spark's common type of `exprs` past 38 digits (see [`spark_wider`]), typed by `type_of`.
pub fn of_exprs<'a>(
    exprs: impl Iterator<Item = &'a Expr>,
    schema: &DFSchema,
    type_of: impl Fn(&Expr, &DFSchema) -> Option<DataType>,
    at: Coercion,
) -> Option<DataType> {
    let types: Option<Vec<DataType>> = exprs
        .map(|e| type_of(e, schema).map(|t| operand_type(e, t, at)))
        .collect();
    spark_wider(&types?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    #[test]
    fn integral_digits_first_past_38() {
        assert_eq!(
            spark_wider(&[Decimal128(38, 10), Decimal128(38, 0)]),
            Some(Decimal128(38, 0))
        );
        assert_eq!(
            spark_wider(&[Decimal128(38, 37), Int32]),
            Some(Decimal128(38, 28))
        );
        assert_eq!(
            spark_wider(&[Decimal128(38, 18), Decimal128(38, 2)]),
            Some(Decimal128(38, 2))
        );
        // Up to 38 digits both engines agree: nothing to do.
        assert_eq!(spark_wider(&[Decimal128(38, 18), Int64]), None);
        assert_eq!(spark_wider(&[Decimal128(10, 2), Decimal128(12, 4)]), None);
        assert_eq!(spark_wider(&[Int64, Int32]), None);
        assert_eq!(spark_wider(&[Decimal128(38, 10), Float64]), None);
    }
}
