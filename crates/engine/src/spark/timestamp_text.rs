//! A TIMESTAMP as Spark writes it as a string: `yyyy-MM-dd HH:mm:ss`, then the fraction of a
//! second without trailing zeros when it is not zero (`2024-02-29 12:34:56.5`); Arrow's cast
//! wrote ISO 8601 (`2024-02-29T12:34:56.500`), so `UPDATE t SET s = ts` stored another text than
//! Spark stores (red team helper-44). Used by the store assignment of a STRING column
//! (`value_cast::cast_checked`) and by `CAST(ntz AS STRING)` and `concat` (`text_time`).
//!
//! A TIMESTAMP (with a time zone) is written in UTC, as a Spark session whose time zone is UTC
//! (Databricks' default) writes it; this engine reads every zoned value in UTC (`extract(HOUR …)`
//! too). A TIMESTAMP_NTZ has no zone. Stored rules never make a timestamp a string
//! (`portable.rs`). Years outside 1–9999 are refused (Spark writes a sign).

use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{
    DataType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use chrono::{DateTime, Datelike};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Spark's text of a timestamp of `us` microseconds since the epoch (UTC for a zoned one).
pub fn text_of_micros(us: i64) -> std::result::Result<String, String> {
    let t = DateTime::from_timestamp_micros(us)
        .ok_or_else(|| format!("timestamp {us} µs is out of range"))?
        .naive_utc();
    if !(1..=9999).contains(&t.year()) {
        return Err(format!(
            "year {} has no text here (Spark writes a sign)",
            t.year()
        ));
    }
    let mut s = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let fraction = us.rem_euclid(1_000_000);
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        s.push('.');
        s.push_str(digits.trim_end_matches('0'));
    }
    Ok(s)
}

/// `value` (a TIMESTAMP) as Spark's text when `to` is a string type; `None` when this is not that
/// cast.
pub fn timestamp_array_to_text(
    value: &ArrayRef,
    to: &DataType,
) -> Option<std::result::Result<ArrayRef, String>> {
    if !matches!(
        to,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return None;
    }
    let DataType::Timestamp(unit, _) = value.data_type() else {
        return None;
    };
    Some(texts(value, unit).and_then(|a| arrow::compute::cast(&a, to).map_err(|e| e.to_string())))
}

fn texts(value: &ArrayRef, unit: &TimeUnit) -> std::result::Result<ArrayRef, String> {
    let micros: Vec<Option<i64>> = match unit {
        TimeUnit::Second => value
            .as_primitive::<TimestampSecondType>()
            .iter()
            .map(|v| v.and_then(|s| s.checked_mul(1_000_000)))
            .collect(),
        TimeUnit::Millisecond => value
            .as_primitive::<TimestampMillisecondType>()
            .iter()
            .map(|v| v.and_then(|s| s.checked_mul(1_000)))
            .collect(),
        TimeUnit::Microsecond => value
            .as_primitive::<TimestampMicrosecondType>()
            .iter()
            .collect(),
        // Spark keeps microseconds: a finer value is truncated toward the past, as Spark reads it.
        TimeUnit::Nanosecond => value
            .as_primitive::<TimestampNanosecondType>()
            .iter()
            .map(|v| v.map(|n| n.div_euclid(1_000)))
            .collect(),
    };
    let out: StringArray = micros
        .iter()
        .enumerate()
        .map(|(i, m)| match (m, value.is_null(i)) {
            (_, true) => Ok(None),
            (Some(us), false) => text_of_micros(*us).map(Some),
            (None, false) => Err("a timestamp out of range".to_string()),
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(Arc::new(out))
}

/// `spark_timestamp_text(ts)`: [`text_of_micros`] as a function (a STRING).
pub fn call(ts: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(udf(), vec![ts]))
}

fn udf() -> Arc<ScalarUDF> {
    static F: OnceLock<Arc<ScalarUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| {
        Arc::new(ScalarUDF::from(TimestampText {
            signature: Signature::any(1, Volatility::Immutable),
        }))
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TimestampText {
    signature: Signature,
}

const NAME: &str = "spark_timestamp_text";

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        NAME
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Timestamp(..)] => Ok(DataType::Utf8),
            other => exec_err!("{NAME} of {other:?}"),
        }
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(x) = args.args.first() else {
            return exec_err!("{NAME} takes one argument");
        };
        let a = x.to_array(args.number_rows)?;
        match timestamp_array_to_text(&a, &DataType::Utf8) {
            Some(Ok(out)) => Ok(ColumnarValue::Array(out)),
            Some(Err(e)) => exec_err!("{e}"),
            None => exec_err!("{NAME} of {}", a.data_type()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_lose_trailing_zeros_and_whole_seconds_have_none() {
        let at = |us: i64| text_of_micros(us).unwrap();
        assert_eq!(at(0), "1970-01-01 00:00:00");
        assert_eq!(at(1_709_210_096_500_000), "2024-02-29 12:34:56.5");
        assert_eq!(at(1_709_210_096_000_123), "2024-02-29 12:34:56.000123");
        assert_eq!(at(-1), "1969-12-31 23:59:59.999999");
        assert!(text_of_micros(-62_135_596_800_000_001).is_err()); // before year 1
    }
}
