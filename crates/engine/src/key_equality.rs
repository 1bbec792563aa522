//! One definition of "the same key value", shared by every place that decides it outside DataFusion's
//! own evaluation: the MERGE key probe (which target rows can match the source), the MERGE source-key
//! read marker and the value-exact conflict tier that evaluates it (which of a winner's rows a
//! MERGE's ON clause reads).
//!
//! Contract (the one-way safety rule): for a key column pair (target type, source type) that
//! [`KeyEquality::for_pairs`] accepts, if the statement's `target = source` holds for two values then
//! their encodings are equal. The converse may fail (an encoding may call two values equal that the
//! statement does not — a spurious conflict or an extra row read, never a missed one). A type pair
//! whose equality is not modelled here is refused, and every caller then falls back to the safe
//! path (read the whole target; keep the conflict).
//!
//! The statement's equality is DataFusion's equi-join: both sides coerced to a common type, NULL
//! equal to nothing, `-0.0 = 0.0` (its joins normalise zeros), NaN equal to NaN. Encodings here:
//! - exact numbers (all integer widths, signed and unsigned, and decimals of any precision and
//!   scale) by value: the decimal is normalised (trailing zeros stripped), so `1.50` (scale 2),
//!   `1.5` (scale 1) and the integer-valued `2` and `2.000` encode alike;
//! - floats (FLOAT and DOUBLE, compared as f64 — FLOAT widens exactly) with every zero as `0.0` and
//!   every NaN as one NaN; floats are not comparable with exact numbers (the join would round the
//!   exact side to f64: `2^53 + 1 = 2^53` there);
//! - strings (any string encoding) and binary byte-exact, each its own class;
//! - booleans; dates (DATE32/DATE64 as milliseconds);
//! - timestamps by value in nanoseconds, across units (the join coerces to the finer unit, which is
//!   exact): by instant when both sides carry a time zone (any zone: arrow stores UTC instants), as
//!   local values when neither does, and a zone-less side against `UTC`/`+00:00` only (the
//!   coercion reads the local value in that zone; any other zone shifts it and is refused);
//! - dictionary-encoded columns as their values.
//!
//! Everything else (structs, lists, maps, intervals, times, nulls) is refused.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{
    i256, DataType, Date32Type, Date64Type, Decimal128Type, Decimal256Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};

use crate::error::{EngineError, Result};

/// The comparison domain of one key column: values of any type in the same class compare by the
/// class's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyClass {
    ExactNumber,
    Float,
    Utf8,
    Binary,
    Boolean,
    Date,
    /// Timestamps, compared by raw value in nanoseconds (see `timestamp_zones_compare`).
    Timestamp,
}

fn class_of(t: &DataType) -> Option<KeyClass> {
    use DataType::*;
    Some(match t {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => KeyClass::ExactNumber,
        Decimal128(_, _) | Decimal256(_, _) => KeyClass::ExactNumber,
        Float32 | Float64 => KeyClass::Float,
        Utf8 | LargeUtf8 | Utf8View => KeyClass::Utf8,
        Binary | LargeBinary | BinaryView => KeyClass::Binary,
        Boolean => KeyClass::Boolean,
        Date32 | Date64 => KeyClass::Date,
        Timestamp(_, _) => KeyClass::Timestamp,
        Dictionary(_, values) => return class_of(values),
        _ => return None,
    })
}

/// Whether the statement compares `a` and `b` only after rounding: two exact numbers whose common
/// DECIMAL would need more than 38 digits meet in Spark 4's type, scale given way
/// (`spark/wider_decimal.rs`), so DECIMAL(38,18) 1.005 equals DECIMAL(38,2) 1.01 there while their
/// values differ (red team helper-48: a MERGE's key read cleared a winner's 1.005 row its join
/// matched, and the key probe dropped the file, so the MERGE inserted a second row).
fn rounds_to_compare(a: &DataType, b: &DataType) -> bool {
    let values = |t: &DataType| match t {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        other => other.clone(),
    };
    crate::spark::wider_decimal::spark_wider(&[values(a), values(b)]).is_some()
}

/// Whether raw timestamp values of `a` and `b` compare as the join compares them: both zoned (UTC
/// instants), both zone-less, or zone-less against a zero-offset zone. True for non-timestamps.
fn timestamp_zones_compare(a: &DataType, b: &DataType) -> bool {
    let zone = |t: &DataType| match t {
        DataType::Dictionary(_, v) => match v.as_ref() {
            DataType::Timestamp(_, z) => Some(z.clone()),
            _ => None,
        },
        DataType::Timestamp(_, z) => Some(z.clone()),
        _ => None,
    };
    let utc = |z: &str| matches!(z, "UTC" | "+00:00" | "Z");
    match (zone(a), zone(b)) {
        (Some(Some(_)), Some(Some(_))) | (Some(None), Some(None)) => true,
        (Some(Some(z)), Some(None)) | (Some(None), Some(Some(z))) => utc(&z),
        _ => true,
    }
}

/// Key equality for a tuple of key columns.
#[derive(Debug, Clone)]
pub struct KeyEquality {
    classes: Vec<KeyClass>,
}

impl KeyEquality {
    /// The equality for key column pairs `(target type, source type)`, or `None` when some pair's
    /// equality is not modelled (the caller must take its safe path).
    pub fn for_pairs(pairs: &[(DataType, DataType)]) -> Option<KeyEquality> {
        if pairs.is_empty() {
            return None;
        }
        let mut classes = Vec::with_capacity(pairs.len());
        for (t, s) in pairs {
            let (ct, cs) = (class_of(t)?, class_of(s)?);
            if ct != cs || !timestamp_zones_compare(t, s) || rounds_to_compare(t, s) {
                return None;
            }
            classes.push(ct);
        }
        Some(KeyEquality { classes })
    }

    pub fn width(&self) -> usize {
        self.classes.len()
    }

    /// One encoding per row of `columns` (in key order), `None` where any key is NULL: a NULL key
    /// equals nothing. An error when a column's type is outside its key's class (callers decline).
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Vec<Option<Box<[u8]>>>> {
        if columns.len() != self.classes.len() {
            return Err(EngineError::Internal(format!(
                "key of {} columns encoded with {} columns",
                self.classes.len(),
                columns.len()
            )));
        }
        let rows = columns.first().map_or(0, |c| c.len());
        let mut out: Vec<Option<Vec<u8>>> = vec![Some(Vec::new()); rows];
        for (c, class) in columns.iter().zip(&self.classes) {
            if c.len() != rows {
                return Err(EngineError::Internal(
                    "key columns of unequal length".into(),
                ));
            }
            let c = match c.data_type() {
                DataType::Dictionary(_, values) => cast(c, values)?,
                _ => c.clone(),
            };
            if class_of(c.data_type()) != Some(*class) {
                return Err(EngineError::Internal(format!(
                    "key column of type {} compared as {class:?}",
                    c.data_type()
                )));
            }
            append_column(&c, &mut out)?;
        }
        Ok(out
            .into_iter()
            .map(|o| o.map(Vec::into_boxed_slice))
            .collect())
    }
}

/// Appends each row's encoding of `c` to `out`; a NULL turns the row's tuple into `None`.
fn append_column(c: &ArrayRef, out: &mut [Option<Vec<u8>>]) -> Result<()> {
    macro_rules! each {
        ($arr:expr, $enc:expr) => {{
            let arr = $arr;
            for (i, slot) in out.iter_mut().enumerate() {
                if arr.is_null(i) {
                    *slot = None;
                } else if let Some(buf) = slot.as_mut() {
                    #[allow(clippy::redundant_closure_call)]
                    $enc(buf, arr.value(i));
                }
            }
        }};
    }
    use DataType::*;
    match c.data_type() {
        Int8 => each!(c.as_primitive::<Int8Type>(), |b, v: i8| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        Int16 => each!(c.as_primitive::<Int16Type>(), |b, v: i16| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        Int32 => each!(c.as_primitive::<Int32Type>(), |b, v: i32| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        Int64 => each!(c.as_primitive::<Int64Type>(), |b, v: i64| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        UInt8 => each!(c.as_primitive::<UInt8Type>(), |b, v: u8| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        UInt16 => each!(c.as_primitive::<UInt16Type>(), |b, v: u16| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        UInt32 => each!(c.as_primitive::<UInt32Type>(), |b, v: u32| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        UInt64 => each!(c.as_primitive::<UInt64Type>(), |b, v: u64| exact(
            b,
            i256::from_i128(i128::from(v)),
            0
        )),
        Decimal128(_, scale) => {
            let s = i32::from(*scale);
            each!(c.as_primitive::<Decimal128Type>(), |b, v: i128| exact(
                b,
                i256::from_i128(v),
                s
            ))
        }
        Decimal256(_, scale) => {
            let s = i32::from(*scale);
            each!(c.as_primitive::<Decimal256Type>(), |b, v: i256| exact(
                b, v, s
            ))
        }
        Float32 => each!(c.as_primitive::<Float32Type>(), |b, v: f32| float(
            b,
            f64::from(v)
        )),
        Float64 => each!(c.as_primitive::<Float64Type>(), float),
        Utf8 => each!(c.as_string::<i32>(), |b, v: &str| bytes(b, 4, v.as_bytes())),
        LargeUtf8 => each!(c.as_string::<i64>(), |b, v: &str| bytes(b, 4, v.as_bytes())),
        Utf8View => each!(c.as_string_view(), |b, v: &str| bytes(b, 4, v.as_bytes())),
        Binary => each!(c.as_binary::<i32>(), |b, v: &[u8]| bytes(b, 5, v)),
        LargeBinary => each!(c.as_binary::<i64>(), |b, v: &[u8]| bytes(b, 5, v)),
        BinaryView => each!(c.as_binary_view(), |b, v: &[u8]| bytes(b, 5, v)),
        Boolean => each!(c.as_boolean(), |b: &mut Vec<u8>, v: bool| {
            b.push(6);
            b.push(u8::from(v));
        }),
        Date32 => each!(c.as_primitive::<Date32Type>(), |b, v: i32| int_tagged(
            b,
            7,
            i128::from(v) * 86_400_000
        )),
        Date64 => each!(c.as_primitive::<Date64Type>(), |b, v: i64| int_tagged(
            b,
            7,
            i128::from(v)
        )),
        // Raw values in nanoseconds (exact in i128): the join's coercion to the finer unit.
        Timestamp(TimeUnit::Second, _) => {
            each!(c.as_primitive::<TimestampSecondType>(), |b, v| ts(
                b,
                v,
                1_000_000_000
            ))
        }
        Timestamp(TimeUnit::Millisecond, _) => {
            each!(c.as_primitive::<TimestampMillisecondType>(), |b, v| ts(
                b, v, 1_000_000
            ))
        }
        Timestamp(TimeUnit::Microsecond, _) => {
            each!(c.as_primitive::<TimestampMicrosecondType>(), |b, v| ts(
                b, v, 1_000
            ))
        }
        Timestamp(TimeUnit::Nanosecond, _) => {
            each!(c.as_primitive::<TimestampNanosecondType>(), |b, v| ts(
                b, v, 1
            ))
        }
        other => {
            return Err(EngineError::Internal(format!(
                "no key equality for type {other}"
            )))
        }
    }
    Ok(())
}

/// An exact number `mantissa × 10^-scale`, normalised so equal values encode alike: tag 1, the
/// exponent (i32) and the mantissa (i256) with trailing decimal zeros moved into the exponent.
fn exact(buf: &mut Vec<u8>, mantissa: i256, scale: i32) {
    let ten = i256::from_i128(10);
    let zero = i256::ZERO;
    let (mut m, mut exp) = (mantissa, -i64::from(scale));
    if m == zero {
        exp = 0;
    } else {
        // Bounded: an i256 has at most 77 decimal digits.
        while m.wrapping_rem(ten) == zero {
            m = m.wrapping_div(ten);
            exp += 1;
        }
    }
    buf.push(1);
    buf.extend_from_slice(&exp.to_be_bytes());
    buf.extend_from_slice(&m.to_be_bytes());
}

/// A float: tag 2 and the f64 bits, with -0.0 as 0.0 and every NaN as the canonical NaN.
fn float(buf: &mut Vec<u8>, v: f64) {
    let v = if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    };
    buf.push(2);
    buf.extend_from_slice(&v.to_bits().to_be_bytes());
}

/// Length-prefixed bytes under `tag` (4 strings, 5 binary), so tuples stay unambiguous.
fn bytes(buf: &mut Vec<u8>, tag: u8, v: &[u8]) {
    buf.push(tag);
    buf.extend_from_slice(&(v.len() as u64).to_be_bytes());
    buf.extend_from_slice(v);
}

fn int_tagged(buf: &mut Vec<u8>, tag: u8, v: i128) {
    buf.push(tag);
    buf.extend_from_slice(&v.to_be_bytes());
}

fn ts(buf: &mut Vec<u8>, v: i64, nanos_per_unit: i128) {
    int_tagged(buf, 8, i128::from(v) * nanos_per_unit)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array, Float64Array,
        Int32Array, Int64Array, Int8Array, StringArray, StringViewArray, TimestampMicrosecondArray,
        TimestampNanosecondArray, UInt64Array,
    };
    use arrow::datatypes::Int32Type as K;

    use super::*;

    fn enc(eq: &KeyEquality, cols: Vec<ArrayRef>) -> Vec<Option<Box<[u8]>>> {
        eq.encode(&cols).unwrap()
    }

    fn one(t: DataType, s: DataType) -> KeyEquality {
        KeyEquality::for_pairs(&[(t, s)]).unwrap()
    }

    #[test]
    fn float_zeros_and_nans_are_one_value_each() {
        let eq = one(DataType::Float64, DataType::Float32);
        let d = enc(
            &eq,
            vec![Arc::new(Float64Array::from(vec![
                0.0,
                -0.0,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1.5,
            ]))],
        );
        let f = enc(
            &eq,
            vec![Arc::new(Float32Array::from(vec![
                -0.0f32,
                0.0,
                f32::NAN,
                1.5,
            ]))],
        );
        assert_eq!(d[0], d[1]);
        assert_eq!(d[2], d[3]);
        assert_ne!(d[4], d[5]);
        assert_ne!(d[0], d[4]);
        assert_eq!(f[0], d[0]);
        assert_eq!(f[1], d[1]);
        assert_eq!(f[2], d[2]);
        assert_eq!(f[3], d[6]);
    }

    #[test]
    fn exact_numbers_compare_by_value_across_widths_and_scales() {
        let eq = one(DataType::Decimal128(10, 2), DataType::Int64);
        let dec = Decimal128Array::from(vec![150, 200, 0, -100])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let dec4 = Decimal128Array::from(vec![15000, 20000, 0, -10000])
            .with_precision_and_scale(20, 4)
            .unwrap();
        let d = enc(&eq, vec![Arc::new(dec)]);
        let d4 = enc(&eq, vec![Arc::new(dec4)]);
        let i = enc(&eq, vec![Arc::new(Int64Array::from(vec![2, 0, -1, 1]))]);
        let i8s = enc(&eq, vec![Arc::new(Int8Array::from(vec![2i8]))]);
        let u = enc(&eq, vec![Arc::new(UInt64Array::from(vec![u64::MAX, 2]))]);
        assert_eq!(d, d4, "1.50 = 1.5000 across scales");
        assert_eq!(d[1], i[0], "2.00 = 2");
        assert_eq!(d[2], i[1], "0.00 = 0");
        assert_eq!(d[3], i[2], "-1.00 = -1");
        assert_ne!(d[0], i[3], "1.50 != 1");
        assert_eq!(i8s[0], i[0]);
        assert_eq!(u[1], i[0]);
        assert_ne!(
            u[0],
            enc(&eq, vec![Arc::new(Int64Array::from(vec![-1]))])[0]
        );
    }

    #[test]
    fn nulls_never_equal_and_tuples_are_unambiguous() {
        let eq = KeyEquality::for_pairs(&[
            (DataType::Utf8, DataType::Utf8View),
            (DataType::Utf8, DataType::Utf8),
        ])
        .unwrap();
        let a = enc(
            &eq,
            vec![
                Arc::new(StringArray::from(vec![Some("ab"), Some("a"), None])),
                Arc::new(StringArray::from(vec![Some("c"), Some("bc"), Some("x")])),
            ],
        );
        assert_ne!(a[0], a[1], "('ab','c') vs ('a','bc')");
        assert_eq!(a[2], None);
        let v = enc(
            &eq,
            vec![
                Arc::new(StringViewArray::from(vec!["ab"])),
                Arc::new(StringArray::from(vec!["c"])),
            ],
        );
        assert_eq!(v[0], a[0], "string encodings are equal");
        let dict: DictionaryArray<K> = vec!["ab"].into_iter().collect();
        let dv = enc(
            &eq,
            vec![Arc::new(dict), Arc::new(StringArray::from(vec!["c"]))],
        );
        assert_eq!(dv[0], a[0], "dictionary = plain");
    }

    #[test]
    fn refused_pairs() {
        let refuse = |t: DataType, s: DataType| KeyEquality::for_pairs(&[(t, s)]).is_none();
        assert!(
            refuse(DataType::Int64, DataType::Float64),
            "2^53+1 = 2^53 as f64"
        );
        assert!(refuse(DataType::Decimal128(10, 2), DataType::Float64));
        // Exact numbers whose common type rounds (past 38 digits, Spark gives the scale way).
        assert!(refuse(
            DataType::Decimal128(38, 18),
            DataType::Decimal128(38, 2)
        ));
        assert!(refuse(DataType::Int64, DataType::Decimal128(38, 20)));
        assert!(refuse(
            DataType::Decimal128(10, 4),
            DataType::Decimal128(38, 2)
        ));
        assert!(!refuse(
            DataType::Decimal128(20, 4),
            DataType::Decimal128(18, 2)
        ));
        assert!(!refuse(DataType::Int64, DataType::Decimal128(38, 18)));
        assert!(
            refuse(DataType::Utf8, DataType::Int32),
            "'01' = 1 after coercion"
        );
        assert!(refuse(DataType::Utf8, DataType::Binary));
        let us_utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let us = DataType::Timestamp(TimeUnit::Microsecond, None);
        let ns_paris = DataType::Timestamp(TimeUnit::Nanosecond, Some("Europe/Paris".into()));
        assert!(!refuse(us_utc.clone(), us.clone()), "local read in UTC");
        assert!(
            refuse(ns_paris.clone(), us.clone()),
            "local read in another zone"
        );
        assert!(!refuse(us_utc, ns_paris), "instants across zones and units");
        assert!(refuse(DataType::Date32, us));
        assert!(KeyEquality::for_pairs(&[]).is_none());
    }

    #[test]
    fn other_values_are_exact() {
        let eq = one(DataType::Boolean, DataType::Boolean);
        let b = enc(
            &eq,
            vec![Arc::new(BooleanArray::from(vec![true, false, true]))],
        );
        assert_eq!(b[0], b[2]);
        assert_ne!(b[0], b[1]);
        let eq = one(DataType::Date32, DataType::Date64);
        let d = enc(&eq, vec![Arc::new(Date32Array::from(vec![1, 2]))]);
        assert_ne!(d[0], d[1]);
        let tz = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let eq = one(tz.clone(), tz);
        let t = enc(
            &eq,
            vec![Arc::new(
                TimestampMicrosecondArray::from(vec![1, 1, 2]).with_timezone("UTC"),
            )],
        );
        assert_eq!(t[0], t[1]);
        assert_ne!(t[0], t[2]);
        let ns = enc(
            &eq,
            vec![Arc::new(
                TimestampNanosecondArray::from(vec![1000, 1500]).with_timezone("+01:00"),
            )],
        );
        assert_eq!(ns[0], t[0], "1 µs = 1000 ns");
        assert_ne!(ns[1], t[0], "1.5 µs is no microsecond");
        // A column outside its class is an error, not a guess.
        assert!(eq.encode(&[Arc::new(Int32Array::from(vec![1]))]).is_err());
    }
}
