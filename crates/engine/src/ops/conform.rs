//! One rule for a value written into a column, shared by INSERT, UPDATE and MERGE: cast to the
//! column's type without loss (a value that does not fit is an error, never NULL or wrapped),
//! and no NULL in a NOT NULL column. Both are the user's input, so both are bad-input errors.

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::Field;

use crate::error::{EngineError, Result};

/// `value` as the column `field` stores it.
pub fn conform_column(value: ArrayRef, field: &Field) -> Result<ArrayRef> {
    conform_column_exact(value, field).map(|(v, _)| v)
}

/// `value` as the column `field` stores it, and whether every value converted exactly (0.5 into
/// an INT column is 0: inexact, so re-running the write under a wider type would store another
/// value; see `value_cast`).
pub fn conform_column_exact(value: ArrayRef, field: &Field) -> Result<(ArrayRef, bool)> {
    let (value, exact) =
        crate::value_cast::cast_checked(&value, field.data_type()).map_err(|e| {
            if let Some(at) = crate::constraints::nested_null_violation(&value, field) {
                return EngineError::invalid(format!("NOT NULL constraint violated for {at}"));
            }
            EngineError::invalid(format!(
                "column {}: cannot cast {} to {}: {e}",
                field.name(),
                value.data_type(),
                field.data_type()
            ))
        })?;
    if !field.is_nullable() && value.null_count() > 0 {
        return Err(EngineError::invalid(format!(
            "NOT NULL constraint violated for column {}",
            field.name()
        )));
    }
    Ok((value, exact))
}
