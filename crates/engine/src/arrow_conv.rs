//! Conversions between the Delta schema and Arrow, and between protocol scalars / stats JSON and
//! DataFusion scalars.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use chrono::NaiveDate;
use datafusion::common::ScalarValue;
use delta_rlc_protocol::partition::{parse_decimal, Scalar};
use delta_rlc_protocol::schema::{self as ds, PrimitiveType, StructType};
use serde_json::Value;

use crate::error::{EngineError, Result};

pub fn primitive_to_arrow(p: &PrimitiveType) -> DataType {
    match p {
        PrimitiveType::String => DataType::Utf8,
        PrimitiveType::Long => DataType::Int64,
        PrimitiveType::Integer => DataType::Int32,
        PrimitiveType::Short => DataType::Int16,
        PrimitiveType::Byte => DataType::Int8,
        PrimitiveType::Float => DataType::Float32,
        PrimitiveType::Double => DataType::Float64,
        PrimitiveType::Boolean => DataType::Boolean,
        PrimitiveType::Binary => DataType::Binary,
        PrimitiveType::Date => DataType::Date32,
        PrimitiveType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        PrimitiveType::TimestampNtz => DataType::Timestamp(TimeUnit::Microsecond, None),
        PrimitiveType::Decimal { precision, scale } => DataType::Decimal128(*precision, *scale),
        // Read as its JSON text (`variant.rs`).
        PrimitiveType::Variant => DataType::Utf8,
        PrimitiveType::Void => DataType::Null,
    }
}

pub fn delta_to_arrow_type(t: &ds::DataType) -> DataType {
    match t {
        ds::DataType::Primitive(p) => primitive_to_arrow(p),
        ds::DataType::Array {
            element,
            contains_null,
        } => DataType::List(Arc::new(Field::new(
            "element",
            delta_to_arrow_type(element),
            *contains_null,
        ))),
        ds::DataType::Map {
            key,
            value,
            value_contains_null,
        } => DataType::Map(
            Arc::new(Field::new(
                "key_value",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", delta_to_arrow_type(key), false),
                    Field::new("value", delta_to_arrow_type(value), *value_contains_null),
                ])),
                false,
            )),
            false,
        ),
        ds::DataType::Struct(s) => DataType::Struct(struct_fields(s)),
    }
}

fn struct_fields(s: &StructType) -> Fields {
    Fields::from(
        s.fields
            .iter()
            .map(|f| Field::new(&f.name, delta_to_arrow_type(&f.data_type), f.nullable))
            .collect::<Vec<_>>(),
    )
}

/// The table's Arrow schema, columns in schema order (partition columns included where they appear).
pub fn table_arrow_schema(s: &StructType) -> SchemaRef {
    Arc::new(Schema::new(struct_fields(s)))
}

/// The table's Arrow schema with each column's Delta field metadata on its Arrow field (and on the
/// fields of nested structs), as deltalake's QueryBuilder shows it: a string value as itself, any
/// other JSON value serialized. Only for query results: a schema carrying
/// `delta.generationExpression` or a column-mapping id must never reach a write.
pub fn table_arrow_schema_with_metadata(s: &StructType) -> SchemaRef {
    Arc::new(Schema::new(fields_with_metadata(s)))
}

fn fields_with_metadata(s: &StructType) -> Fields {
    s.fields
        .iter()
        .map(|f| {
            let data_type = match &f.data_type {
                ds::DataType::Struct(inner) => DataType::Struct(fields_with_metadata(inner)),
                other => delta_to_arrow_type(other),
            };
            let metadata = f
                .metadata
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect();
            Field::new(&f.name, data_type, f.nullable).with_metadata(metadata)
        })
        .collect()
}

pub fn arrow_to_delta_type(t: &DataType) -> Result<ds::DataType> {
    use ds::DataType as D;
    Ok(match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            D::Primitive(PrimitiveType::String)
        }
        // An unsigned 64-bit column has no wider Delta integer: it is stored as LONG (as
        // deltalake and delta-kernel do) and a value past i64::MAX fails the write's checked cast.
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => D::Primitive(PrimitiveType::Long),
        DataType::Int32 | DataType::UInt16 => D::Primitive(PrimitiveType::Integer),
        DataType::Int16 | DataType::UInt8 => D::Primitive(PrimitiveType::Short),
        DataType::Int8 => D::Primitive(PrimitiveType::Byte),
        DataType::Float32 | DataType::Float16 => D::Primitive(PrimitiveType::Float),
        DataType::Float64 => D::Primitive(PrimitiveType::Double),
        DataType::Boolean => D::Primitive(PrimitiveType::Boolean),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            D::Primitive(PrimitiveType::Binary)
        }
        DataType::Date32 | DataType::Date64 => D::Primitive(PrimitiveType::Date),
        DataType::Timestamp(_, Some(_)) => D::Primitive(PrimitiveType::Timestamp),
        DataType::Timestamp(_, None) => D::Primitive(PrimitiveType::TimestampNtz),
        DataType::Decimal128(p, s) => D::Primitive(PrimitiveType::Decimal {
            precision: *p,
            scale: *s,
        }),
        DataType::Dictionary(_, values) => arrow_to_delta_type(values)?,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => D::Array {
            element: Box::new(arrow_to_delta_type(f.data_type())?),
            contains_null: f.is_nullable(),
        },
        // Arrow names a map's entries and their fields as it likes ("entries", "key_value");
        // Delta has only the key type, the value type and whether values may be NULL.
        DataType::Map(entries, _) => {
            let unsupported = || {
                EngineError::Unsupported(format!(
                    "map entries of type {} (a map's entries are a key and a value)",
                    entries.data_type()
                ))
            };
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(unsupported());
            };
            let [key, value] = &kv[..] else {
                return Err(unsupported());
            };
            D::Map {
                key: Box::new(arrow_to_delta_type(key.data_type())?),
                value: Box::new(arrow_to_delta_type(value.data_type())?),
                value_contains_null: value.is_nullable(),
            }
        }
        DataType::Struct(fields) => D::Struct(StructType {
            fields: fields
                .iter()
                .map(|f| {
                    Ok(ds::StructField {
                        name: f.name().clone(),
                        data_type: arrow_to_delta_type(f.data_type())?,
                        nullable: f.is_nullable(),
                        metadata: Default::default(),
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        }),
        other => {
            return Err(EngineError::Unsupported(format!(
                "column type {other} has no Delta equivalent"
            )))
        }
    })
}

/// Field metadata an Arrow field may carry into a new table's schema, as deltalake takes it from
/// the data: a generated column's expression and a column comment. Nothing else (column mapping
/// ids, identity state, writer-private keys) is taken from data: the engine assigns those.
pub const CARRIED_FIELD_METADATA: [&str; 2] = ["delta.generationExpression", "comment"];

/// A top-level Arrow field of the data a table is created from, as the table's column.
pub fn arrow_field_to_delta(f: &Field) -> Result<ds::StructField> {
    let metadata = CARRIED_FIELD_METADATA
        .iter()
        .filter_map(|k| {
            let v = f.metadata().get(*k)?;
            Some((k.to_string(), Value::String(v.clone())))
        })
        .collect();
    Ok(ds::StructField {
        name: f.name().clone(),
        data_type: arrow_to_delta_type(f.data_type())?,
        nullable: f.is_nullable(),
        metadata,
    })
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

/// A protocol scalar (partition value) as a DataFusion scalar of `dt`.
pub fn scalar_to_datafusion(v: &Scalar, dt: &DataType) -> Result<ScalarValue> {
    let null = ScalarValue::try_from(dt)?;
    let out = match (v, dt) {
        (Scalar::Null, _) => null,
        (Scalar::Boolean(b), DataType::Boolean) => ScalarValue::Boolean(Some(*b)),
        (Scalar::Long(i), _) => ScalarValue::Int64(Some(*i)).cast_to(dt)?,
        (Scalar::Double(d), _) => ScalarValue::Float64(Some(*d)).cast_to(dt)?,
        (Scalar::String(s), DataType::Utf8) => ScalarValue::Utf8(Some(s.clone())),
        (Scalar::Binary(b), DataType::Binary) => ScalarValue::Binary(Some(b.clone())),
        (Scalar::Date(d), DataType::Date32) => ScalarValue::Date32(Some(*d)),
        (Scalar::Timestamp(us), DataType::Timestamp(TimeUnit::Microsecond, tz)) => {
            ScalarValue::TimestampMicrosecond(Some(*us), tz.clone())
        }
        (Scalar::Decimal(x), DataType::Decimal128(p, s)) => {
            ScalarValue::Decimal128(Some(*x), *p, *s)
        }
        (other, dt) => {
            return Err(EngineError::corrupt(format!(
                "value {other:?} does not fit type {dt}"
            )))
        }
    };
    Ok(out)
}

/// A stats JSON value as a DataFusion scalar of `dt`; `None` when it cannot be used as a bound.
/// `is_max` widens millisecond-truncated timestamps and drops string maxima that may be truncated
/// without a tie-breaker. Boolean bounds are never used: Delta Spark neither writes nor reads
/// them (its skipping types are numbers, dates, timestamps and strings), and some writers'
/// boolean bounds are wrong (delta-rs #4490), so trusting one could prune live rows — a wrong
/// answer in a scan, a skipped true conflict in the checker (tier 1 prunes through here).
pub fn stats_value_to_scalar(v: &Value, dt: &DataType, is_max: bool) -> Option<ScalarValue> {
    Some(match dt {
        DataType::Int8 => ScalarValue::Int8(Some(i8::try_from(v.as_i64()?).ok()?)),
        DataType::Int16 => ScalarValue::Int16(Some(i16::try_from(v.as_i64()?).ok()?)),
        DataType::Int32 => ScalarValue::Int32(Some(i32::try_from(v.as_i64()?).ok()?)),
        DataType::Int64 => ScalarValue::Int64(Some(v.as_i64()?)),
        DataType::Float32 => ScalarValue::Float32(Some(v.as_f64()? as f32)),
        DataType::Float64 => ScalarValue::Float64(Some(v.as_f64()?)),
        DataType::Utf8 => {
            let s = v.as_str()?;
            let n = s.chars().count();
            if is_max && n >= 32 && !s.ends_with('\u{10FFFF}') && !s.ends_with('\u{7F}') {
                return None;
            }
            ScalarValue::Utf8(Some(s.to_string()))
        }
        DataType::Date32 => {
            let d = NaiveDate::parse_from_str(v.as_str()?, "%Y-%m-%d").ok()?;
            ScalarValue::Date32(Some(i32::try_from((d - epoch()).num_days()).ok()?))
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let s = v.as_str()?;
            let us = chrono::DateTime::parse_from_rfc3339(s)
                .map(|d| d.timestamp_micros())
                .ok()
                .or_else(|| {
                    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                        .ok()
                        .map(|d| d.and_utc().timestamp_micros())
                })?;
            // Writers truncate timestamps to milliseconds: a max must be widened to stay a bound.
            let us = if is_max { us.checked_add(999)? } else { us };
            ScalarValue::TimestampMicrosecond(Some(us), tz.clone())
        }
        DataType::Decimal128(p, s) => {
            // A JSON number is parsed into an i64, a u64 or else an f64. An integer is exact; an
            // f64 is exact only when the decimal had at most 15 significant digits (what every
            // value of a precision-15 column has): longer ones were rounded, up or down, and
            // a min rounded up or a max rounded down would prune live rows. No bound then.
            let text = match v {
                Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                Value::Number(n) if *p <= 15 => n.to_string(),
                Value::String(s) => s.clone(),
                _ => return None,
            };
            ScalarValue::Decimal128(Some(parse_decimal(&text, *s)?), *p, *s)
        }
        _ => return None,
    })
}

/// The fields of `schema` that `keep` selects, as nullable Delta columns (schema evolution:
/// a write's or a MERGE source's new columns).
pub fn nullable_fields(
    schema: &arrow::datatypes::Schema,
    keep: impl Fn(&arrow::datatypes::Field) -> bool,
) -> Result<Vec<ds::StructField>> {
    schema
        .fields()
        .iter()
        .filter(|f| keep(f))
        .map(|f| {
            // A new column the data declares generated or identity (Delta's field metadata)
            // cannot be added by evolution: rows already written have no value for it, and
            // adding it as a plain column would silently drop what the data says it is.
            use delta_rlc_protocol::schema::{GENERATION_EXPRESSION_KEY, IDENTITY_KEY_PREFIX};
            if let Some(k) = f.metadata().keys().find(|k| {
                k.as_str() == GENERATION_EXPRESSION_KEY || k.starts_with(IDENTITY_KEY_PREFIX)
            }) {
                // deltalake's words first (callers match on them).
                let what = match k.starts_with(IDENTITY_KEY_PREFIX) {
                    true => "Schema evolved fields cannot be identity columns",
                    false => "Schema evolved fields cannot have generated expressions",
                };
                return Err(EngineError::SchemaMismatch(format!(
                    "{what}. Recreate the table to achieve this: {} has no value in the rows already written",
                    f.name(),
                )));
            }
            Ok(ds::StructField {
                name: f.name().clone(),
                data_type: arrow_to_delta_type(f.data_type())?,
                nullable: true,
                metadata: Default::default(),
            })
        })
        .collect()
}
