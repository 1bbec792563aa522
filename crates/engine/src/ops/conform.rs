//! One rule for a value written into a column, shared by INSERT, UPDATE and MERGE: cast to the
//! column's type without loss (a value that does not fit is an error, never NULL or wrapped),
//! and no NULL in a NOT NULL column. Both are the user's input, so both are bad-input errors.
//!
//! UPDATE and MERGE may opt into [`CastFailure::Null`] (deltalake's
//! `error_on_type_mismatch=False`, Spark's legacy store assignment): a value that does not fit a
//! nullable column is written as NULL instead. Each value that does fit is still the exact cast,
//! and a NOT NULL column still refuses the statement (as a NOT NULL violation). Neither operation's conflict rules rest on
//! the cast being exact: a winner that widens an assigned column conflicts with them whatever
//! they wrote.

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::Field;

use super::nested_fields::{align, NestedFields};
use crate::error::{EngineError, Result};

/// What an assigned value that cannot be cast to its column's type does to the statement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CastFailure {
    /// The statement fails (the default, and Spark's ANSI store assignment).
    #[default]
    Error,
    /// The value is written as NULL when the column is nullable; a NOT NULL column still fails.
    Null,
}

/// `value` as the column `field` stores it.
pub fn conform_column(value: ArrayRef, field: &Field) -> Result<ArrayRef> {
    conform_column_exact(value, field).map(|(v, _)| v)
}

/// Rows cast together under [`CastFailure::Null`] before a failing chunk is cast row by row.
const NULL_ON_FAILURE_CHUNK: usize = 1024;

/// `value` as the column `field` stores it, a value that does not cast handled by `on_failure`.
pub fn conform_column_with(
    value: ArrayRef,
    field: &Field,
    on_failure: CastFailure,
) -> Result<ArrayRef> {
    // A struct whose fields do not match the column's by name is refused whatever the policy: it
    // is not a value that fails to cast (`nested_fields`).
    let value = by_name(&value, field)?;
    let strict = conform_aligned(value.clone(), field).map(|(v, _)| v);
    match (strict, on_failure) {
        (Ok(v), _) => Ok(v),
        (Err(e), CastFailure::Error) => Err(e),
        // A NULL inside a NOT NULL child is a constraint violation, not a value that does not
        // cast: it fails the statement rather than make the whole struct or list NULL.
        (Err(e), CastFailure::Null)
            if crate::constraints::nested_null_violation(&value, field).is_some() =>
        {
            Err(e)
        }
        (Err(_), CastFailure::Null) => {
            // Value by value: each that casts keeps its exact cast, each that does not is NULL.
            // Only a statement that has already failed its strict cast pays for this, and only
            // in the chunks where a value failed: a chunk that casts whole is one cast.
            let mut parts: Vec<ArrayRef> = Vec::new();
            let cast = |a: &ArrayRef| crate::value_cast::cast_checked(a, field.data_type());
            for start in (0..value.len()).step_by(NULL_ON_FAILURE_CHUNK) {
                let chunk = value.slice(start, NULL_ON_FAILURE_CHUNK.min(value.len() - start));
                if let Ok((v, _)) = cast(&chunk) {
                    parts.push(v);
                    continue;
                }
                for i in 0..chunk.len() {
                    parts.push(match cast(&chunk.slice(i, 1)) {
                        Ok((v, _)) => v,
                        Err(_) => arrow::array::new_null_array(field.data_type(), 1),
                    });
                }
            }
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            let out = match refs.is_empty() {
                true => arrow::array::new_empty_array(field.data_type()),
                false => arrow::compute::concat(&refs)?,
            };
            // A NOT NULL column refuses the NULLs that stand for values that did not cast,
            // reported as the NOT NULL violation they are (deltalake's wording).
            conform_column(out, field)
        }
    }
}

/// `value` with its structs' fields matched to `field`'s by name (`nested_fields`).
fn by_name(value: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    align(value, field.data_type(), NestedFields::ByName, field.name())
}

/// `value` as the column `field` stores it, and whether every value converted exactly (0.5 into
/// an INT column is 0: inexact, so re-running the write under a wider type would store another
/// value; see `value_cast`).
///
/// A struct value's fields are matched to the column's by name (UPDATE, MERGE, DataFrame
/// writes); an INSERT aligns its values by position before (`nested_fields`).
pub fn conform_column_exact(value: ArrayRef, field: &Field) -> Result<(ArrayRef, bool)> {
    conform_aligned(by_name(&value, field)?, field)
}

/// [`conform_column_exact`] of a value whose struct fields are already aligned to `field`'s.
fn conform_aligned(value: ArrayRef, field: &Field) -> Result<(ArrayRef, bool)> {
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
        return Err(crate::constraints::invalid_data(
            value.null_count(),
            &format!("NOT NULL constraint violated for column {}", field.name()),
        ));
    }
    Ok((value, exact))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::DataType;
    use std::sync::Arc;

    /// Across chunk boundaries: each value that casts keeps its cast, each that does not is NULL,
    /// NULLs stay NULL; a NOT NULL column still refuses; the default policy refuses.
    #[test]
    fn null_on_failure_nulls_exactly_the_values_that_do_not_cast() {
        let n = NULL_ON_FAILURE_CHUNK * 2 + 5;
        let text: Vec<Option<String>> = (0..n)
            .map(|i| match i % 700 {
                3 => Some("x".into()),
                4 => None,
                _ => Some(i.to_string()),
            })
            .collect();
        let value: ArrayRef = Arc::new(StringArray::from(text.clone()));
        let field = Field::new("v", DataType::Int32, true);
        let out = conform_column_with(value.clone(), &field, CastFailure::Null).unwrap();
        let out = out.as_any().downcast_ref::<Int32Array>().unwrap();
        for (i, t) in text.iter().enumerate() {
            let want = t.as_deref().and_then(|s| s.parse::<i32>().ok());
            assert_eq!(out.is_valid(i).then(|| out.value(i)), want, "row {i}");
        }
        assert!(conform_column_with(value.clone(), &field, CastFailure::Error).is_err());
        let not_null = Field::new("v", DataType::Int32, false);
        assert!(conform_column_with(value, &not_null, CastFailure::Null).is_err());
    }
}
