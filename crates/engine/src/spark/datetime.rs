//! Spark's `year`, `month`, `day` / `dayofmonth` over a DATE or a TIMESTAMP_NTZ: the fields of the
//! civil date, as INT. Neither input depends on a time zone, so the answer is Spark's whatever the
//! Spark session's zone (a TIMESTAMP with a zone is not accepted: Spark reads it in its session's
//! zone, which a table's log does not record). DataFusion has no functions of these names; the
//! generated column `y INT GENERATED ALWAYS AS (year(d))`, Delta's usual partition column, needs
//! them.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array};
use arrow::datatypes::{DataType, Date32Type, Int64Type, TimeUnit};
use chrono::{Datelike, NaiveDate};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Field {
    Year,
    Month,
    Day,
}

/// The functions, to register in a planning context (`day` and `dayofmonth` are one).
pub fn functions() -> Vec<ScalarUDF> {
    [
        (Field::Year, "year", vec![]),
        (Field::Month, "month", vec![]),
        (Field::Day, "day", vec!["dayofmonth"]),
    ]
    .into_iter()
    .map(|(field, name, aliases)| {
        ScalarUDF::from(DateField {
            field,
            name,
            signature: Signature::one_of(
                std::iter::once(TypeSignature::Exact(vec![DataType::Date32]))
                    .chain(UNITS.iter().map(|(unit, _)| {
                        TypeSignature::Exact(vec![DataType::Timestamp(*unit, None)])
                    }))
                    .collect(),
                Volatility::Immutable,
            ),
        })
        .with_aliases(aliases)
    })
    .collect()
}

/// Timestamp units without a zone, with their ticks per day.
const UNITS: [(TimeUnit, i64); 4] = [
    (TimeUnit::Second, 86_400),
    (TimeUnit::Millisecond, 86_400_000),
    (TimeUnit::Microsecond, 86_400_000_000),
    (TimeUnit::Nanosecond, 86_400_000_000_000),
];

/// Names a stored rule may use (see `super::portable`).
pub const NAMES: &[&str] = &["year", "month", "day", "dayofmonth"];

#[derive(Debug, PartialEq, Eq, Hash)]
struct DateField {
    field: Field,
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for DateField {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(a) = arrays.first() else {
            return exec_err!("{}() takes one argument", self.name);
        };
        let field = self.field;
        let pick = move |d: NaiveDate| match field {
            Field::Year => d.year(),
            Field::Month => d.month() as i32,
            Field::Day => d.day() as i32,
        };
        let out: Int32Array = match a.data_type() {
            DataType::Date32 => a
                .as_primitive::<Date32Type>()
                .iter()
                .map(|v| v.and_then(|days| civil_date(i64::from(days))).map(pick))
                .collect(),
            DataType::Timestamp(unit, None) => {
                let Some((_, per_day)) = UNITS.iter().find(|(u, _)| u == unit) else {
                    return exec_err!("{}(): unexpected unit {unit:?}", self.name);
                };
                // Every unit's values are i64 ticks since the epoch.
                let ticks = arrow::compute::cast(a, &DataType::Int64)?;
                ticks
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.and_then(|t| civil_date(t.div_euclid(*per_day))).map(pick))
                    .collect()
            }
            _ => return exec_err!("{}() takes a DATE or a TIMESTAMP_NTZ", self.name),
        };
        // A day outside chrono's range would be NULL silently: refuse instead.
        if out.null_count() != a.null_count() {
            return exec_err!("{}(): a date outside the supported range", self.name);
        }
        Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Spark's calendar since 3.0).
fn civil_date(days: i64) -> Option<NaiveDate> {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    epoch.checked_add_signed(chrono::Duration::try_days(days)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_fields() {
        let d = civil_date(19_782).unwrap(); // 2024-02-29
        assert_eq!((d.year(), d.month(), d.day()), (2024, 2, 29));
        let before = civil_date(-1).unwrap();
        assert_eq!(
            (before.year(), before.month(), before.day()),
            (1969, 12, 31)
        );
        assert_eq!(civil_date(2_932_896).map(|d| d.year()), Some(9999));
    }
}
