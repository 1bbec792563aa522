//! Spark's `trunc(date, fmt)`: the DATE truncated to the first day of its year (`'YEAR'`,
//! `'YYYY'`, `'YY'`), quarter (`'QUARTER'`), month (`'MONTH'`, `'MM'`, `'MON'`) or week (`'WEEK'`,
//! the Monday on or before it); the format is read case-insensitively and any other format gives
//! NULL, as in Spark. A DATE or a TIMESTAMP_NTZ (its civil date, no time zone involved) is
//! accepted; a TIMESTAMP with a zone is not (Spark reads it in the session's zone, which a
//! table's log does not record). Spark has no numeric `trunc`, so this replaces DataFusion's:
//! `event_year DATE GENERATED ALWAYS AS (TRUNC(event_date, 'YEAR'))` is a common Spark rule.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Date32Array, StringArray};
use arrow::datatypes::{DataType, Date32Type, Int64Type, TimeUnit};
use chrono::{Datelike, NaiveDate};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

/// Names a stored rule may use (see `super::portable`).
pub const NAMES: &[&str] = &["trunc"];

/// The function, to register in a planning context.
pub fn function() -> ScalarUDF {
    let dates = std::iter::once(DataType::Date32)
        .chain(UNITS.iter().map(|(u, _)| DataType::Timestamp(*u, None)));
    ScalarUDF::from(SparkTrunc {
        signature: Signature::one_of(
            dates
                .map(|d| TypeSignature::Exact(vec![d, DataType::Utf8]))
                .collect(),
            Volatility::Immutable,
        ),
    })
}

/// Timestamp units without a zone, with their ticks per day.
const UNITS: [(TimeUnit, i64); 4] = [
    (TimeUnit::Second, 86_400),
    (TimeUnit::Millisecond, 86_400_000),
    (TimeUnit::Microsecond, 86_400_000_000),
    (TimeUnit::Nanosecond, 86_400_000_000_000),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Year,
    Quarter,
    Month,
    Week,
}

/// Spark's `TruncDate` formats; anything else is None (the result is NULL).
fn level(fmt: &str) -> Option<Level> {
    match fmt.to_ascii_uppercase().as_str() {
        "YEAR" | "YYYY" | "YY" => Some(Level::Year),
        "QUARTER" => Some(Level::Quarter),
        "MONTH" | "MM" | "MON" => Some(Level::Month),
        "WEEK" => Some(Level::Week),
        _ => None,
    }
}

fn truncate(d: NaiveDate, level: Level) -> Option<NaiveDate> {
    match level {
        Level::Year => NaiveDate::from_ymd_opt(d.year(), 1, 1),
        Level::Quarter => NaiveDate::from_ymd_opt(d.year(), (d.month() - 1) / 3 * 3 + 1, 1),
        Level::Month => NaiveDate::from_ymd_opt(d.year(), d.month(), 1),
        Level::Week => d.checked_sub_signed(chrono::Duration::try_days(i64::from(
            d.weekday().num_days_from_monday(),
        ))?),
    }
}

fn epoch() -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(1970, 1, 1)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Spark's calendar since 3.0).
fn civil_date(days: i64) -> Option<NaiveDate> {
    epoch()?.checked_add_signed(chrono::Duration::try_days(days)?)
}

fn days_of(d: NaiveDate) -> Option<i32> {
    i32::try_from(d.signed_duration_since(epoch()?).num_days()).ok()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkTrunc {
    signature: Signature,
}

impl ScalarUDFImpl for SparkTrunc {
    fn name(&self) -> &str {
        "trunc"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Date32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [date, fmt] = args.args.as_slice() else {
            return exec_err!("trunc() takes a date and a format");
        };
        // The format: one for every row (a literal, as Spark rules hold it) or one per row.
        let rows = args.number_rows;
        let formats: Vec<Option<Level>> = match fmt {
            ColumnarValue::Scalar(ScalarValue::Utf8(f)) => {
                vec![f.as_deref().and_then(level); rows.max(1)]
            }
            ColumnarValue::Scalar(s) if s.is_null() => vec![None; rows.max(1)],
            ColumnarValue::Array(a) => match a.as_any().downcast_ref::<StringArray>() {
                Some(s) => s.iter().map(|f| f.and_then(level)).collect(),
                None => return exec_err!("trunc(): the format must be a string"),
            },
            _ => return exec_err!("trunc(): the format must be a string"),
        };
        let a = date.to_array(rows.max(1))?;
        let days: Vec<Option<i64>> = match a.data_type() {
            DataType::Date32 => a
                .as_primitive::<Date32Type>()
                .iter()
                .map(|v| v.map(i64::from))
                .collect(),
            DataType::Timestamp(unit, None) => {
                let Some((_, per_day)) = UNITS.iter().find(|(u, _)| u == unit) else {
                    return exec_err!("trunc(): unexpected unit {unit:?}");
                };
                let ticks = arrow::compute::cast(&a, &DataType::Int64)?;
                ticks
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(|t| t.div_euclid(*per_day)))
                    .collect()
            }
            _ => return exec_err!("trunc() takes a DATE or a TIMESTAMP_NTZ"),
        };
        let mut out = Vec::with_capacity(days.len());
        for (i, d) in days.iter().enumerate() {
            let f = formats.get(i).copied().flatten();
            out.push(match (d, f) {
                (Some(d), Some(f)) => {
                    let Some(t) = civil_date(*d)
                        .and_then(|c| truncate(c, f))
                        .and_then(days_of)
                    else {
                        // Outside chrono's range: refuse rather than NULL silently.
                        return exec_err!("trunc(): a date outside the supported range");
                    };
                    Some(t)
                }
                _ => None,
            });
        }
        let out = Date32Array::from(out);
        Ok(match date {
            ColumnarValue::Scalar(_) if matches!(fmt, ColumnarValue::Scalar(_)) => {
                ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
            }
            _ => ColumnarValue::Array(Arc::new(out) as ArrayRef),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn truncates_as_spark() {
        let x = d(2021, 8, 20); // a Friday
        assert_eq!(truncate(x, Level::Year), Some(d(2021, 1, 1)));
        assert_eq!(truncate(x, Level::Quarter), Some(d(2021, 7, 1)));
        assert_eq!(truncate(x, Level::Month), Some(d(2021, 8, 1)));
        assert_eq!(truncate(x, Level::Week), Some(d(2021, 8, 16)));
        assert_eq!(truncate(d(2021, 8, 16), Level::Week), Some(d(2021, 8, 16)));
        assert_eq!(truncate(d(1969, 12, 31), Level::Year), Some(d(1969, 1, 1)));
        assert_eq!(level("yy"), Some(Level::Year));
        assert_eq!(level("mon"), Some(Level::Month));
        assert_eq!(level("DAY"), None, "Spark's trunc has no DAY: NULL");
        assert_eq!(days_of(d(1970, 1, 2)), Some(1));
    }
}
