//! One rule for a value written into a column, shared by INSERT, UPDATE and MERGE: cast to the
//! column's type without loss (a value that does not fit is an error, never NULL or wrapped),
//! and no NULL in a NOT NULL column. Both are the user's input, so both are bad-input errors.

use arrow::array::{Array, ArrayRef};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::Field;

use crate::error::{EngineError, Result};

/// `value` as the column `field` stores it.
pub fn conform_column(value: ArrayRef, field: &Field) -> Result<ArrayRef> {
    let value = if value.data_type() == field.data_type() {
        value
    } else {
        let opts = CastOptions {
            safe: false,
            ..Default::default()
        };
        cast_with_options(&value, field.data_type(), &opts).map_err(|e| {
            if let Some(at) = crate::constraints::nested_null_violation(&value, field) {
                return EngineError::invalid(format!("NOT NULL constraint violated for {at}"));
            }
            EngineError::invalid(format!(
                "column {}: cannot cast {} to {}: {e}",
                field.name(),
                value.data_type(),
                field.data_type()
            ))
        })?
    };
    if !field.is_nullable() && value.null_count() > 0 {
        return Err(EngineError::invalid(format!(
            "NOT NULL constraint violated for column {}",
            field.name()
        )));
    }
    Ok(value)
}
