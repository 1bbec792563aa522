//! The last check before rows are written: every DECIMAL(p, s) value has at most p digits.
//! Arrow's decimal arithmetic computes in 128 bits and does not check the result's precision, so
//! `d + 1` on DECIMAL(38,0)'s largest value gives 10^38, which DECIMAL(38,0) cannot hold; written,
//! it is a value no reader reads back (Spark raises NUMERIC_VALUE_OUT_OF_RANGE on the store, and
//! in ANSI mode on the addition). Refused here, before any file exists, for every write.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Decimal128Type};

use crate::error::{EngineError, Result};

/// Refuses `batch` when a DECIMAL value (at any depth of structs) has more digits than its type.
pub fn check_decimal_range(batch: &RecordBatch) -> Result<()> {
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        check_column(field.name(), column)?;
    }
    Ok(())
}

fn check_column(name: &str, column: &ArrayRef) -> Result<()> {
    match column.data_type() {
        DataType::Decimal128(p, s) => {
            let limit = 10i128.checked_pow(u32::from(*p)).unwrap_or(i128::MAX);
            let values = column.as_primitive::<Decimal128Type>();
            match values
                .iter()
                .flatten()
                .find(|v| v.unsigned_abs() >= limit.unsigned_abs())
            {
                None => Ok(()),
                Some(v) => Err(EngineError::invalid(format!(
                    "[NUMERIC_VALUE_OUT_OF_RANGE] column {name}: {} does not fit DECIMAL({p},{s})",
                    unscaled_text(v, *s)
                ))),
            }
        }
        DataType::Struct(fields) => {
            let s = column.as_struct();
            for (f, c) in fields.iter().zip(s.columns()) {
                check_column(&format!("{name}.{}", f.name()), c)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `v` scaled by 10^-scale as decimal text (no precision is assumed: the value may exceed it).
fn unscaled_text(v: i128, scale: i8) -> String {
    let digits = v.unsigned_abs().to_string();
    let sign = if v < 0 { "-" } else { "" };
    let Ok(scale) = usize::try_from(scale) else {
        return format!("{sign}{digits}E{}", -i32::from(scale));
    };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal128Array, StructArray};
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    fn batch(values: Vec<Option<i128>>, p: u8, s: i8) -> RecordBatch {
        let a = Decimal128Array::from(values)
            .with_precision_and_scale(p, s)
            .unwrap();
        let schema = Schema::new(vec![Field::new("d", DataType::Decimal128(p, s), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(a)]).unwrap()
    }

    #[test]
    fn a_value_past_its_precision_is_refused_with_its_digits() {
        let max = 10i128.pow(38) - 1;
        assert!(check_decimal_range(&batch(vec![Some(max), None, Some(-max)], 38, 0)).is_ok());
        let e = check_decimal_range(&batch(vec![Some(1), Some(max + 1)], 38, 0)).unwrap_err();
        assert!(
            e.to_string()
                .contains("d: 100000000000000000000000000000000000000 does not fit DECIMAL(38,0)"),
            "{e}"
        );
        let e = check_decimal_range(&batch(vec![Some(-12_345)], 4, 2)).unwrap_err();
        assert!(
            e.to_string().contains("-123.45 does not fit DECIMAL(4,2)"),
            "{e}"
        );
        assert!(check_decimal_range(&batch(vec![Some(9_999)], 4, 2)).is_ok());
    }

    #[test]
    fn nested_decimals_are_checked() {
        let inner = batch(vec![Some(100)], 2, 0);
        let s = StructArray::from(vec![(
            Arc::new(Field::new("x", DataType::Decimal128(2, 0), true)),
            inner.column(0).clone(),
        )]);
        let schema = Schema::new(vec![Field::new("s", s.data_type().clone(), true)]);
        let b = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(s)]).unwrap();
        let e = check_decimal_range(&b).unwrap_err();
        assert!(
            e.to_string().contains("s.x: 100 does not fit DECIMAL(2,0)"),
            "{e}"
        );
    }
}
