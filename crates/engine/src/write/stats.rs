//! Per-file statistics computed from the Arrow data being written: numRecords, and for the indexed
//! leaf columns minValues / maxValues / nullCount (tight bounds). Strings are truncated like Spark
//! (32-character prefix; a truncated max gets a tie-breaker so it stays an upper bound); timestamps
//! are truncated to milliseconds (readers widen maxima by 999 µs). Types whose bounds we cannot write
//! exactly (decimals, binary, booleans, nested lists/maps) get a nullCount only.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::kernels::aggregate as agg;
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, TimeUnit, TimestampMicrosecondType,
};
use chrono::{DateTime, NaiveDate};
use delta_rlc_protocol::stats::{truncate_max_string, truncate_min_string, FileStats};
use serde_json::{Map, Number, Value};

pub const STRING_PREFIX_LEN: usize = 32;

/// Which columns get stats: `delta.dataSkippingStatsColumns` if set, else the first
/// `delta.dataSkippingNumIndexedCols` (default 32, -1 = all) leaf columns.
#[derive(Debug, Clone)]
pub struct StatsConfig {
    pub num_indexed_cols: i64,
    pub stats_columns: Option<Vec<String>>,
}

impl StatsConfig {
    pub fn from_configuration(conf: &std::collections::BTreeMap<String, String>) -> Self {
        let num_indexed_cols = conf
            .get(
                delta_rlc_protocol::table_properties::TableProperty::DataSkippingNumIndexedCols
                    .key(),
            )
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(32);
        let stats_columns = conf
            .get(
                delta_rlc_protocol::table_properties::TableProperty::DataSkippingStatsColumns.key(),
            )
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().trim_matches('`').to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            });
        StatsConfig {
            num_indexed_cols,
            stats_columns,
        }
    }
}

struct Acc {
    min: Map<String, Value>,
    max: Map<String, Value>,
    nulls: Map<String, Value>,
    leaves_left: i64,
}

/// Computes stats over `batches` (all with the same schema, partition columns excluded).
pub fn compute_stats(batches: &[RecordBatch], config: &StatsConfig) -> FileStats {
    let num_records: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut acc = Acc {
        min: Map::new(),
        max: Map::new(),
        nulls: Map::new(),
        leaves_left: if config.num_indexed_cols < 0 {
            i64::MAX
        } else {
            config.num_indexed_cols
        },
    };
    if let Some(first) = batches.first() {
        let schema = first.schema();
        for (i, field) in schema.fields().iter().enumerate() {
            let cols: Vec<ArrayRef> = batches.iter().map(|b| b.column(i).clone()).collect();
            let (mut mn, mut mx, mut nc) = (Map::new(), Map::new(), Map::new());
            let selected = match &config.stats_columns {
                Some(list) => list
                    .iter()
                    .any(|c| c == field.name() || c.starts_with(&format!("{}.", field.name()))),
                None => true,
            };
            if !selected {
                continue;
            }
            collect(
                field.name(),
                &cols,
                &mut mn,
                &mut mx,
                &mut nc,
                &mut acc.leaves_left,
                config.stats_columns.is_some(),
            );
            acc.min.extend(mn);
            acc.max.extend(mx);
            acc.nulls.extend(nc);
        }
    }
    FileStats {
        num_records: Some(num_records as i64),
        min_values: acc.min,
        max_values: acc.max,
        null_count: acc.nulls,
        tight_bounds: None,
    }
}

fn collect(
    name: &str,
    cols: &[ArrayRef],
    min: &mut Map<String, Value>,
    max: &mut Map<String, Value>,
    nulls: &mut Map<String, Value>,
    leaves_left: &mut i64,
    explicit: bool,
) {
    let Some(first) = cols.first() else { return };
    if let DataType::Struct(fields) = first.data_type() {
        let (mut mn, mut mx, mut nc) = (Map::new(), Map::new(), Map::new());
        for (i, f) in fields.iter().enumerate() {
            let children: Vec<ArrayRef> = cols
                .iter()
                .map(|c| c.as_struct().column(i).clone())
                .collect();
            collect(
                f.name(),
                &children,
                &mut mn,
                &mut mx,
                &mut nc,
                leaves_left,
                explicit,
            );
        }
        if !mn.is_empty() {
            min.insert(name.to_string(), Value::Object(mn));
        }
        if !mx.is_empty() {
            max.insert(name.to_string(), Value::Object(mx));
        }
        if !nc.is_empty() {
            nulls.insert(name.to_string(), Value::Object(nc));
        }
        return;
    }
    if !explicit {
        if *leaves_left <= 0 {
            return;
        }
        *leaves_left -= 1;
    }
    let null_count: usize = cols.iter().map(|c| c.null_count()).sum();
    nulls.insert(name.to_string(), Value::from(null_count as u64));
    let (lo, hi) = match float_bounds(cols) {
        Some(split) => split,
        None => bounds(cols).map_or((None, None), |(lo, hi)| (Some(lo), Some(hi))),
    };
    if let Some(lo) = lo {
        min.insert(name.to_string(), lo);
    }
    if let Some(hi) = hi {
        max.insert(name.to_string(), hi);
    }
}

/// A float column's bounds, each on its own: an infinite bound has no JSON number and is left
/// out while the other, finite one is kept (a lower bound alone still prunes `x < c`; a missing
/// bound prunes nothing). No bounds when any value is NaN (NaN sorts above every number in Spark,
/// so min/max over the rest would mislead). None for other types.
fn float_bounds(cols: &[ArrayRef]) -> Option<(Option<Value>, Option<Value>)> {
    fn of<T: arrow::datatypes::ArrowPrimitiveType>(
        cols: &[ArrayRef],
    ) -> (Option<Value>, Option<Value>)
    where
        T::Native: Into<f64> + PartialOrd + Copy + arrow::datatypes::ArrowNativeType,
    {
        if cols.iter().any(|c| {
            c.as_primitive::<T>()
                .iter()
                .flatten()
                .any(|v| v.into().is_nan())
        }) {
            return (None, None);
        }
        let lo = fold(cols, |c| agg::min(c.as_primitive::<T>()), |a, b| a < b);
        let hi = fold(cols, |c| agg::max(c.as_primitive::<T>()), |a, b| a > b);
        (
            lo.and_then(|v| float_value(v.into())),
            hi.and_then(|v| float_value(v.into())),
        )
    }
    match cols.first()?.data_type() {
        DataType::Float32 => Some(of::<Float32Type>(cols)),
        DataType::Float64 => Some(of::<Float64Type>(cols)),
        _ => None,
    }
}

fn fold<T, F: Fn(&ArrayRef) -> Option<T>>(
    cols: &[ArrayRef],
    f: F,
    better: impl Fn(&T, &T) -> bool,
) -> Option<T> {
    let mut best: Option<T> = None;
    for c in cols {
        if let Some(v) = f(c) {
            best = match best {
                Some(b) if !better(&v, &b) => Some(b),
                _ => Some(v),
            };
        }
    }
    best
}

fn int_bounds<T: arrow::datatypes::ArrowPrimitiveType>(cols: &[ArrayRef]) -> Option<(Value, Value)>
where
    T::Native: Into<i64> + PartialOrd + Copy,
{
    let lo = fold(cols, |c| agg::min(c.as_primitive::<T>()), |a, b| a < b)?;
    let hi = fold(cols, |c| agg::max(c.as_primitive::<T>()), |a, b| a > b)?;
    Some((Value::from(lo.into()), Value::from(hi.into())))
}

/// A decimal bound as a JSON number every reader parses back to exactly this value: an integer
/// (scale 0, within i64), or — for a column of precision at most 15, whose values have at most 15
/// significant digits — the f64 nearest to it, which prints as the same number. Wider decimals
/// would be rounded by readers that parse JSON numbers as doubles (ours among them): no bound.
fn decimal_value(unscaled: i128, precision: u8, scale: i8) -> Option<Value> {
    if scale < 0 {
        return None;
    }
    if scale == 0 {
        if let Ok(v) = i64::try_from(unscaled) {
            return Some(Value::from(v));
        }
    }
    if precision > 15 {
        return None;
    }
    let text = delta_rlc_protocol::partition::format_decimal(unscaled, scale);
    float_value(text.parse::<f64>().ok()?)
}

fn float_value(v: f64) -> Option<Value> {
    Number::from_f64(v).map(Value::Number)
}

fn bounds(cols: &[ArrayRef]) -> Option<(Value, Value)> {
    let first = cols.first()?;
    match first.data_type() {
        DataType::Int8 => int_bounds::<Int8Type>(cols),
        DataType::Int16 => int_bounds::<Int16Type>(cols),
        DataType::Int32 => int_bounds::<Int32Type>(cols),
        DataType::Int64 => int_bounds::<Int64Type>(cols),
        DataType::Decimal128(precision, scale) => {
            let lo = fold(
                cols,
                |c| agg::min(c.as_primitive::<Decimal128Type>()),
                |a, b| a < b,
            )?;
            let hi = fold(
                cols,
                |c| agg::max(c.as_primitive::<Decimal128Type>()),
                |a, b| a > b,
            )?;
            Some((
                decimal_value(lo, *precision, *scale)?,
                decimal_value(hi, *precision, *scale)?,
            ))
        }
        DataType::Utf8 => {
            let lo = fold(
                cols,
                |c| agg::min_string(c.as_string::<i32>()).map(str::to_string),
                |a, b| a < b,
            )?;
            let hi = fold(
                cols,
                |c| agg::max_string(c.as_string::<i32>()).map(str::to_string),
                |a, b| a > b,
            )?;
            let hi = truncate_max_string(&hi, STRING_PREFIX_LEN)?;
            Some((
                Value::String(truncate_min_string(&lo, STRING_PREFIX_LEN)),
                Value::String(hi),
            ))
        }
        DataType::Date32 => {
            let lo = fold(
                cols,
                |c| agg::min(c.as_primitive::<Date32Type>()),
                |a, b| a < b,
            )?;
            let hi = fold(
                cols,
                |c| agg::max(c.as_primitive::<Date32Type>()),
                |a, b| a > b,
            )?;
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
            let f = |d: i32| {
                (epoch + chrono::Duration::days(i64::from(d)))
                    .format("%Y-%m-%d")
                    .to_string()
            };
            Some((Value::String(f(lo)), Value::String(f(hi))))
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let lo = fold(
                cols,
                |c| agg::min(c.as_primitive::<TimestampMicrosecondType>()),
                |a, b| a < b,
            )?;
            let hi = fold(
                cols,
                |c| agg::max(c.as_primitive::<TimestampMicrosecondType>()),
                |a, b| a > b,
            )?;
            let f = |us: i64| -> Option<String> {
                let ms = us.div_euclid(1000);
                let dt = DateTime::from_timestamp_millis(ms)?;
                Some(if tz.is_some() {
                    dt.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
                } else {
                    dt.naive_utc().format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
                })
            };
            Some((Value::String(f(lo)?), Value::String(f(hi)?)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn stats_for_ints_and_strings() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(5), None, Some(-3)])),
                Arc::new(StringArray::from(vec![
                    Some("b"),
                    Some(&"z".repeat(40)[..]),
                    None,
                ])),
            ],
        )
        .unwrap();
        let st = compute_stats(
            &[b],
            &StatsConfig {
                num_indexed_cols: 32,
                stats_columns: None,
            },
        );
        assert_eq!(st.num_records, Some(3));
        assert_eq!(st.min(&["id"]), Some(&Value::from(-3)));
        assert_eq!(st.max(&["id"]), Some(&Value::from(5)));
        assert_eq!(st.informative_null_count(&["id"]), Some(1));
        let max_s = st.max(&["s"]).unwrap().as_str().unwrap();
        assert!(max_s > "z".repeat(40).as_str());
        let st1 = compute_stats(
            &[],
            &StatsConfig {
                num_indexed_cols: 1,
                stats_columns: None,
            },
        );
        assert_eq!(st1.num_records, Some(0));
    }
}
