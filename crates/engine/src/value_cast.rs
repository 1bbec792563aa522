//! Casting a column's values to another type without silently changing them.
//!
//! Two users, one rule: a value converts exactly when its type is contained in the target's
//! (`widens`), or when it is an integer that converting back gives again (an integer the target
//! holds is the same number in every wider type). Any other source — a float, a decimal, a string,
//! a date, a boolean — converts exactly only by type: `CAST(0.1 AS DECIMAL(3,1))` into a FLOAT
//! converts back to 0.1, yet the float is 0.100000001490116…, which a DOUBLE column would not hold
//! (found by a red-team pass). So:
//! - reads (`scan::read`): a file column whose type differs from the table's is cast to the
//!   table's. A widening (the file predates a type change) is always exact. Anything numeric that
//!   is not a widening — a file written under a *wider* type read through an older, narrower
//!   schema, as a conflict check of a later winner would — must convert every value exactly, or
//!   the read fails: a BIGINT 5000000000 read as INT is not NULL and 0.5 read as INT is not 0.
//!   A failed read makes every tier and reconciler decline, so the conflict stands.
//! - writes (`ops::conform`): a value written into a column is cast with overflow as an error (a
//!   value that does not fit is never NULL or wrapped); whether the cast was exact is reported, so
//!   the transaction can record that the column's content depends on the column's type (0.5
//!   written into INT is 0, into DOUBLE 0.5: a type widening by a concurrent winner changes the
//!   result of re-running the statement, `read_set::ReadSet::inexact_writes`).
//!
//! Equality for "gives it again" is Arrow's total order (`not_distinct`): -0.0 is not 0.0, NaN is
//! NaN, NULL is NULL — stricter than the statement's equality, so it can only report more
//! conversions inexact.

use arrow::array::{Array, ArrayRef};
use arrow::compute::kernels::cmp::not_distinct;
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::DataType;
use std::sync::Arc;

/// Decimal digits needed left of the point to hold every value of an integer type.
fn integer_digits(t: &DataType) -> Option<u8> {
    Some(match t {
        DataType::Int8 | DataType::UInt8 => 3,
        DataType::Int16 | DataType::UInt16 => 5,
        DataType::Int32 | DataType::UInt32 => 10,
        DataType::Int64 => 19,
        DataType::UInt64 => 20,
        _ => return None,
    })
}

fn int_bits(t: &DataType) -> Option<(u8, bool)> {
    Some(match t {
        DataType::Int8 => (8, true),
        DataType::Int16 => (16, true),
        DataType::Int32 => (32, true),
        DataType::Int64 => (64, true),
        DataType::UInt8 => (8, false),
        DataType::UInt16 => (16, false),
        DataType::UInt32 => (32, false),
        DataType::UInt64 => (64, false),
        _ => return None,
    })
}

/// Every value of `from` is a value of `to` (by type alone, no data needed).
pub fn widens(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return true;
    }
    if let (Some((fb, fs)), Some((tb, ts))) = (int_bits(from), int_bits(to)) {
        return match (fs, ts) {
            (true, true) | (false, false) => tb >= fb,
            (false, true) => tb > fb,
            (true, false) => false,
        };
    }
    match (from, to) {
        (f, DataType::Float64) if int_bits(f).is_some_and(|(b, _)| b <= 32) => true,
        (DataType::Float32, DataType::Float64) => true,
        (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)) => {
            s2 >= s1 && (*p2 as i16 - *s2 as i16) >= (*p1 as i16 - *s1 as i16)
        }
        (f, DataType::Decimal128(p, s)) => {
            integer_digits(f).is_some_and(|d| (*p as i16 - *s as i16) >= d as i16)
        }
        (DataType::Date32, DataType::Timestamp(_, None)) => true,
        _ => false,
    }
}

/// Casts `value` to `to` with overflow as an error, and tells whether every value converted
/// exactly: by type (`widens`), or an integer that converting back gives again (total order).
pub fn cast_checked(value: &ArrayRef, to: &DataType) -> Result<(ArrayRef, bool), String> {
    if value.data_type() == to {
        return Ok((value.clone(), true));
    }
    if let Some(out) = cast_nested(value, to) {
        return out;
    }
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    // A DECIMAL stored into a float column is the float nearest its exact value, as Spark
    // stores it (Arrow's cast rounds twice).
    // And a float stored into a DECIMAL column is the decimal of its shortest text, rounded
    // HALF_UP (Arrow's cast scales the binary value).
    let out = match crate::spark::decimal_float::decimal_array_to_float(value, to) {
        Some(out) => out,
        None => match crate::spark::float_decimal::float_array_to_decimal(value, to) {
            Some(out) => out?,
            // A float stored into a STRING column is written as Java writes it (Spark's text).
            None => match crate::spark::float_text::float_array_to_text(value, to) {
                Some(out) => out,
                // A TIMESTAMP_NTZ stored into a STRING column is Spark's text of it.
                None => match crate::spark::timestamp_text::timestamp_array_to_text(value, to) {
                    Some(out) => out?,
                    None => cast_with_options(value, to, &strict).map_err(|e| match to {
                        // Past the column's precision: Spark's store assignment raises this.
                        DataType::Decimal128(p, s)
                            if e.to_string().contains("too large to store") =>
                        {
                            format!("[NUMERIC_VALUE_OUT_OF_RANGE] a value cannot be represented as DECIMAL({p}, {s}): {e}")
                        }
                        _ => e.to_string(),
                    })?,
                },
            },
        },
    };
    // Only numeric and date columns can be widened later, so only there does exactness matter.
    if widens(value.data_type(), to) || !(to.is_numeric() || to == &DataType::Date32) {
        return Ok((out, true));
    }
    let integer_into_number = int_bits(value.data_type()).is_some() && to.is_numeric();
    Ok((
        out.clone(),
        integer_into_number && converts_back(value, &out),
    ))
}

/// A struct, list or map cast child by child with [`cast_checked`] (each leaf converts as a
/// top-level value would, and the whole is exact when every leaf is). A struct's fields must
/// already carry the column's names in its order (`ops::nested_fields::align` puts them there by
/// the statement's rule): Arrow's own struct cast would match some by name and others by
/// position. `None` for any other pair of types.
fn cast_nested(value: &ArrayRef, to: &DataType) -> Option<Result<(ArrayRef, bool), String>> {
    use arrow::array::{AsArray, MapArray, StructArray};
    let children_exact = |pairs: Vec<(&ArrayRef, &DataType)>| {
        let mut exact = true;
        let mut out = Vec::with_capacity(pairs.len());
        for (child, t) in pairs {
            let (c, e) = cast_checked(child, t)?;
            exact &= e;
            out.push(c);
        }
        Ok::<_, String>((out, exact))
    };
    let text = |e: arrow::error::ArrowError| e.to_string();
    Some(match (value.data_type(), to) {
        (DataType::Struct(from), DataType::Struct(target)) => {
            let names = |f: &arrow::datatypes::Fields| -> Vec<String> {
                f.iter().map(|f| f.name().clone()).collect()
            };
            if names(from) != names(target) {
                return Some(Err(format!(
                    "nested fields {:?} do not match the column's {:?}",
                    names(from),
                    names(target)
                )));
            }
            let s = value.as_struct();
            let pairs = s
                .columns()
                .iter()
                .zip(target.iter().map(|f| f.data_type()))
                .collect();
            children_exact(pairs).and_then(|(children, exact)| {
                let out = StructArray::try_new(target.clone(), children, s.nulls().cloned());
                Ok((Arc::new(out.map_err(text)?) as ArrayRef, exact))
            })
        }
        (DataType::List(_), DataType::List(t)) => cast_list::<i32>(value, t),
        (DataType::LargeList(_), DataType::LargeList(t)) => cast_list::<i64>(value, t),
        (DataType::Map(_, sorted), DataType::Map(t, _)) => {
            let m = value.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            children_exact(vec![(&entries, t.data_type())]).and_then(|(mut v, exact)| {
                let entries = v.pop().ok_or("a map without entries")?;
                let entries = entries.as_struct().clone();
                let out = MapArray::try_new(
                    t.clone(),
                    m.offsets().clone(),
                    entries,
                    m.nulls().cloned(),
                    *sorted,
                );
                Ok((Arc::new(out.map_err(text)?) as ArrayRef, exact))
            })
        }
        _ => return None,
    })
}

/// A list (`i32` offsets) or large list (`i64`) cast element by element to the list type whose
/// element field is `t` ([`cast_nested`]).
fn cast_list<O: arrow::array::OffsetSizeTrait>(
    value: &ArrayRef,
    t: &arrow::datatypes::FieldRef,
) -> Result<(ArrayRef, bool), String> {
    use arrow::array::{AsArray, GenericListArray};
    let l = value.as_list::<O>();
    let (values, exact) = cast_checked(l.values(), t.data_type())?;
    let out =
        GenericListArray::<O>::try_new(t.clone(), l.offsets().clone(), values, l.nulls().cloned())
            .map_err(|e| e.to_string())?;
    Ok((Arc::new(out) as ArrayRef, exact))
}

/// `converted` cast back to `original`'s type equals `original` at every row (NULLs included).
fn converts_back(original: &ArrayRef, converted: &ArrayRef) -> bool {
    let lenient = CastOptions {
        safe: true,
        ..Default::default()
    };
    let Ok(back) = cast_with_options(converted, original.data_type(), &lenient) else {
        return false;
    };
    match not_distinct(&back, original) {
        Ok(same) => same.null_count() == 0 && same.true_count() == same.len(),
        Err(_) => false,
    }
}

/// A file column's values as the table's type `to`. Numeric values must convert exactly unless
/// the cast is a widening; other casts (string and timestamp encodings of other writers) are
/// Arrow's strict cast.
pub fn cast_for_read(value: &ArrayRef, to: &DataType) -> Result<ArrayRef, String> {
    let numeric = |t: &DataType| t.is_numeric();
    if numeric(value.data_type()) && numeric(to) {
        let (out, exact) = cast_checked(value, to)?;
        if !exact {
            return Err(format!(
                "the file holds {} values that are not exactly {to} (written under a wider type than the schema read with)",
                value.data_type()
            ));
        }
        return Ok(out);
    }
    let lenient = CastOptions {
        safe: true,
        ..Default::default()
    };
    cast_with_options(value, to, &lenient).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int32Array, Int64Array};
    use std::sync::Arc;

    #[test]
    fn a_wider_file_value_is_never_read_as_a_narrower_one() {
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![Some(7), None, Some(5_000_000_000)]));
        assert!(cast_for_read(&wide, &DataType::Int32).is_err());
        let fits: ArrayRef = Arc::new(Int64Array::from(vec![Some(7), None, Some(-3)]));
        let read = cast_for_read(&fits, &DataType::Int32).unwrap();
        assert_eq!(
            read.as_ref(),
            &Int32Array::from(vec![Some(7), None, Some(-3)]) as &dyn Array
        );
        let fraction: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 0.5]));
        assert!(cast_for_read(&fraction, &DataType::Int32).is_err());
        let negative_zero: ArrayRef = Arc::new(Float64Array::from(vec![-0.0]));
        assert!(cast_for_read(&negative_zero, &DataType::Int32).is_err());
        let narrow: ArrayRef = Arc::new(Int32Array::from(vec![i32::MIN, i32::MAX]));
        assert!(cast_for_read(&narrow, &DataType::Float64).is_ok());
        assert!(cast_for_read(&narrow, &DataType::Int64).is_ok());
    }

    #[test]
    fn only_integers_convert_exactly_by_value() {
        use arrow::array::{BooleanArray, Date32Array, Decimal128Array, StringArray};
        // Red-team cases: each converts back to itself, yet a wider column would hold another
        // value (or the statement would fail there).
        let tenth: ArrayRef = Arc::new(
            Decimal128Array::from(vec![1i128])
                .with_precision_and_scale(3, 1)
                .unwrap(),
        );
        assert!(!cast_checked(&tenth, &DataType::Float32).unwrap().1);
        let text: ArrayRef = Arc::new(StringArray::from(vec!["0.1"]));
        assert!(!cast_checked(&text, &DataType::Float32).unwrap().1);
        let double: ArrayRef = Arc::new(Float64Array::from(vec![549_755_813_888.06]));
        assert!(
            !cast_checked(&double, &DataType::Decimal128(14, 2))
                .unwrap()
                .1
        );
        let day: ArrayRef = Arc::new(Date32Array::from(vec![7]));
        assert!(!cast_checked(&day, &DataType::Int32).unwrap().1);
        let yes: ArrayRef = Arc::new(BooleanArray::from(vec![true]));
        assert!(!cast_checked(&yes, &DataType::Int32).unwrap().1);
        let number: ArrayRef = Arc::new(Int32Array::from(vec![19725]));
        assert!(!cast_checked(&number, &DataType::Date32).unwrap().1);
        let big: ArrayRef = Arc::new(Int64Array::from(vec![16_777_217]));
        assert!(!cast_checked(&big, &DataType::Float32).unwrap().1);
        let small: ArrayRef = Arc::new(Int64Array::from(vec![7, -3]));
        assert!(cast_checked(&small, &DataType::Float32).unwrap().1);
        assert!(cast_checked(&small, &DataType::Decimal128(6, 2)).unwrap().1);
    }

    #[test]
    fn writes_report_inexact_conversions() {
        let half: ArrayRef = Arc::new(Float64Array::from(vec![2.0, 0.5]));
        let (v, exact) = cast_checked(&half, &DataType::Int32).unwrap();
        assert!(!exact);
        assert_eq!(v.as_ref(), &Int32Array::from(vec![2, 0]) as &dyn Array);
        // A float source is exact only by type, even when its values are whole.
        let whole: ArrayRef = Arc::new(Float64Array::from(vec![Some(2.0), None]));
        assert!(!cast_checked(&whole, &DataType::Int32).unwrap().1);
        let literal: ArrayRef = Arc::new(Int64Array::from(vec![7]));
        assert!(cast_checked(&literal, &DataType::Int32).unwrap().1);
        let too_big: ArrayRef = Arc::new(Int64Array::from(vec![5_000_000_000]));
        assert!(cast_checked(&too_big, &DataType::Int32).is_err());
        assert!(widens(&DataType::Int32, &DataType::Decimal128(10, 0)));
        assert!(!widens(&DataType::Int32, &DataType::Decimal128(10, 1)));
        assert!(!widens(&DataType::Int64, &DataType::Float64));
        assert!(widens(
            &DataType::Decimal128(5, 2),
            &DataType::Decimal128(7, 3)
        ));
        assert!(!widens(
            &DataType::Decimal128(5, 2),
            &DataType::Decimal128(7, 5)
        ));
    }
}
