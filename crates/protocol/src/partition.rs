//! Partition values: typed parsing of the strings in `partitionValues` and their serialization.
//! An empty string or JSON null is the null value for every type.

use chrono::{DateTime, NaiveDate, NaiveDateTime};

use crate::error::{ProtocolError, Result};
use crate::schema::PrimitiveType;

/// A typed scalar for partition values and stats bounds.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Boolean(bool),
    Long(i64),
    Double(f64),
    String(String),
    Binary(Vec<u8>),
    /// Days since the epoch.
    Date(i32),
    /// Microseconds since the epoch (UTC for `timestamp`, wall clock for `timestamp_ntz`).
    Timestamp(i64),
    /// Unscaled value.
    Decimal(i128),
}

fn pv_err(column: &str, reason: impl Into<String>) -> ProtocolError {
    ProtocolError::PartitionValue {
        column: column.to_string(),
        reason: reason.into(),
    }
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

/// Parses one partition value of the given type.
pub fn parse_partition_value(
    column: &str,
    ty: &PrimitiveType,
    raw: Option<&str>,
) -> Result<Scalar> {
    let Some(s) = raw.filter(|s| !s.is_empty()) else {
        return Ok(Scalar::Null);
    };
    let bad = |what: &str| pv_err(column, format!("{s:?} is not a valid {what}"));
    Ok(match ty {
        PrimitiveType::String => Scalar::String(s.to_string()),
        PrimitiveType::Long
        | PrimitiveType::Integer
        | PrimitiveType::Short
        | PrimitiveType::Byte => {
            let v: i64 = s.parse().map_err(|_| bad("integer"))?;
            // The value must fit the column's type: a wider one cannot be read as it.
            let (lo, hi) = match ty {
                PrimitiveType::Byte => (i64::from(i8::MIN), i64::from(i8::MAX)),
                PrimitiveType::Short => (i64::from(i16::MIN), i64::from(i16::MAX)),
                PrimitiveType::Integer => (i64::from(i32::MIN), i64::from(i32::MAX)),
                _ => (i64::MIN, i64::MAX),
            };
            if !(lo..=hi).contains(&v) {
                return Err(bad(&ty.name()));
            }
            Scalar::Long(v)
        }
        PrimitiveType::Float | PrimitiveType::Double => {
            let v: f64 = s.parse().map_err(|_| bad("number"))?;
            // A finite value past FLOAT's range would read back as infinity.
            #[allow(clippy::cast_possible_truncation)] // the point: does it survive as f32?
            if *ty == PrimitiveType::Float && v.is_finite() && !(v as f32).is_finite() {
                return Err(bad(&ty.name()));
            }
            Scalar::Double(v)
        }
        PrimitiveType::Boolean => match s {
            "true" => Scalar::Boolean(true),
            "false" => Scalar::Boolean(false),
            _ => return Err(bad("boolean")),
        },
        PrimitiveType::Binary => Scalar::Binary(s.as_bytes().to_vec()),
        PrimitiveType::Date => {
            let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| bad("date"))?;
            Scalar::Date(i32::try_from((d - epoch()).num_days()).map_err(|_| bad("date"))?)
        }
        PrimitiveType::Timestamp | PrimitiveType::TimestampNtz => {
            Scalar::Timestamp(parse_timestamp(s).ok_or_else(|| bad("timestamp"))?)
        }
        PrimitiveType::Decimal { precision, scale } => {
            let v = parse_decimal(s, *scale).ok_or_else(|| bad("decimal"))?;
            // At most `precision` digits: a longer value does not fit the column.
            let limit = 10i128
                .checked_pow(u32::from(*precision))
                .unwrap_or(i128::MAX);
            if v.unsigned_abs() >= limit.unsigned_abs() {
                return Err(bad(&ty.name()));
            }
            Scalar::Decimal(v)
        }
        PrimitiveType::Variant | PrimitiveType::Void => {
            return Err(pv_err(
                column,
                format!("a {} column cannot be a partition column", ty.name()),
            ))
        }
    })
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` or ISO-8601 with zone (`…T…Z`).
fn parse_timestamp(s: &str) -> Option<i64> {
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Some(dt.timestamp_micros());
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S%.f",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(dt.and_utc().timestamp_micros());
        }
    }
    None
}

/// Parses a decimal string into an unscaled integer at `scale`; rejects lost precision.
pub fn parse_decimal(s: &str, scale: i8) -> Option<i128> {
    let scale = usize::try_from(scale).ok()?;
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_trim = frac.trim_end_matches('0');
    if frac_trim.len() > scale {
        return None;
    }
    let mut v: i128 = 0;
    for b in int.bytes().chain(frac_trim.bytes()) {
        v = v.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    for _ in frac_trim.len()..scale {
        v = v.checked_mul(10)?;
    }
    Some(if neg { -v } else { v })
}

/// Formats an unscaled decimal at `scale`.
pub fn format_decimal(v: i128, scale: i8) -> String {
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let scale = usize::try_from(scale).unwrap_or(0);
    let s = if scale == 0 {
        digits
    } else {
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (i, f) = padded.split_at(padded.len() - scale);
        format!("{i}.{f}")
    };
    if neg {
        format!("-{s}")
    } else {
        s
    }
}

/// Serializes a typed value the way Spark writes partition values (`None` = null).
pub fn serialize_partition_value(ty: &PrimitiveType, v: &Scalar) -> Option<String> {
    Some(match v {
        Scalar::Null => return None,
        Scalar::Boolean(b) => b.to_string(),
        Scalar::Long(i) => i.to_string(),
        Scalar::Double(d) => d.to_string(),
        Scalar::String(s) => s.clone(),
        Scalar::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        Scalar::Date(d) => (epoch() + chrono::Duration::days(i64::from(*d)))
            .format("%Y-%m-%d")
            .to_string(),
        Scalar::Timestamp(us) => {
            let dt = DateTime::from_timestamp_micros(*us)?;
            match ty {
                PrimitiveType::TimestampNtz => {
                    dt.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string()
                }
                _ => dt.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            }
        }
        Scalar::Decimal(v) => match ty {
            PrimitiveType::Decimal { scale, .. } => format_decimal(*v, *scale),
            _ => v.to_string(),
        },
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn parses_types() {
        assert_eq!(
            parse_partition_value("p", &PrimitiveType::Integer, Some("42")).unwrap(),
            Scalar::Long(42)
        );
        assert_eq!(
            parse_partition_value("p", &PrimitiveType::Integer, Some("")).unwrap(),
            Scalar::Null
        );
        assert_eq!(
            parse_partition_value("p", &PrimitiveType::Date, Some("1970-01-02")).unwrap(),
            Scalar::Date(1)
        );
        let a = parse_partition_value(
            "p",
            &PrimitiveType::Timestamp,
            Some("1970-01-01 00:00:00.123456"),
        )
        .unwrap();
        let b = parse_partition_value(
            "p",
            &PrimitiveType::Timestamp,
            Some("1970-01-01T00:00:00.123456Z"),
        )
        .unwrap();
        assert_eq!(a, b);
        assert!(parse_partition_value("p", &PrimitiveType::Long, Some("x")).is_err());
        assert_eq!(parse_decimal("12.30", 2), Some(1230));
        assert_eq!(parse_decimal("-0.5", 1), Some(-5));
        assert_eq!(parse_decimal("1.234", 2), None);
        assert_eq!(format_decimal(-5, 2), "-0.05");
        assert_eq!(format_decimal(1230, 2), "12.30");
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    /// A partition value must fit its column's type: past it, it could not be read as it.
    #[test]
    fn partition_values_past_their_types_range_are_refused() {
        let ok = |ty: PrimitiveType, s: &str| parse_partition_value("c", &ty, Some(s)).is_ok();
        assert!(ok(PrimitiveType::Integer, "2147483647"));
        assert!(!ok(PrimitiveType::Integer, "2147483648"));
        assert!(ok(PrimitiveType::Byte, "-128"));
        assert!(!ok(PrimitiveType::Byte, "300"));
        assert!(!ok(PrimitiveType::Short, "40000"));
        assert!(ok(PrimitiveType::Long, "2147483648"));
        assert!(ok(PrimitiveType::Float, "3.4e38"));
        assert!(!ok(PrimitiveType::Float, "1e40"));
        assert!(ok(PrimitiveType::Double, "1e40"));
        let dec = PrimitiveType::Decimal {
            precision: 4,
            scale: 1,
        };
        assert!(ok(dec.clone(), "999.9"));
        assert!(!ok(dec, "1000.1"));
    }
}
