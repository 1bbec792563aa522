//! Type widening (the `typeWidening` feature): which type changes keep every value already written
//! exactly representable, so files written before the change stay valid as they are, and the
//! `delta.typeChanges` record each widened field carries.

use serde_json::Value;

use crate::error::{ProtocolError, Result};
use crate::schema::{DataType, PrimitiveType, StructField, StructType};

/// The field metadata key recording a field's type changes.
pub const TYPE_CHANGES_KEY: &str = "delta.typeChanges";

/// Is `from` → `to` a widening the protocol allows (Delta 4.0's list)? Integers widen to wider
/// integers, to double, and to decimals with enough integer digits (10 for byte/short/int, 20 for
/// long); float to double; decimal(p, s) to decimal(p + k1, s + k2) with k1 ≥ k2 ≥ 0; date to
/// timestamp_ntz.
pub fn is_widening(from: &PrimitiveType, to: &PrimitiveType) -> bool {
    use PrimitiveType as P;
    let int_rank = |t: &P| match t {
        P::Byte => Some(1),
        P::Short => Some(2),
        P::Integer => Some(3),
        P::Long => Some(4),
        _ => None,
    };
    match (from, to) {
        (a, b) if a == b => false,
        (P::Float, P::Double) | (P::Date, P::TimestampNtz) => true,
        (a, P::Double) if int_rank(a).is_some_and(|r| r <= 3) => true,
        (a, b) if int_rank(a).is_some() && int_rank(b).is_some() => int_rank(a) < int_rank(b),
        (a, P::Decimal { precision, scale }) if int_rank(a).is_some() => {
            let digits = i16::from(*precision) - i16::from(*scale);
            digits >= if matches!(a, P::Long) { 20 } else { 10 }
        }
        (
            P::Decimal {
                precision: p1,
                scale: s1,
            },
            P::Decimal {
                precision: p2,
                scale: s2,
            },
        ) => {
            let (k1, k2) = (
                i16::from(*p2) - i16::from(*p1),
                i16::from(*s2) - i16::from(*s1),
            );
            k1 >= k2 && k2 >= 0 && (k1, k2) != (0, 0)
        }
        _ => false,
    }
}

/// Every `delta.typeChanges` entry of the schema is an allowed widening (readers must refuse a
/// table recording one they do not know).
pub fn validate_type_changes(schema: &StructType) -> Result<()> {
    fn walk(fields: &[StructField]) -> Result<()> {
        for f in fields {
            if let Some(changes) = f.metadata.get(TYPE_CHANGES_KEY) {
                let list = changes.as_array().ok_or_else(|| {
                    ProtocolError::Schema(format!("{}: {TYPE_CHANGES_KEY} is not a list", f.name))
                })?;
                for c in list {
                    let ty = |k: &str| {
                        c.get(k)
                            .and_then(Value::as_str)
                            .ok_or_else(|| {
                                ProtocolError::Schema(format!(
                                    "{}: a type change without {k}",
                                    f.name
                                ))
                            })
                            .and_then(PrimitiveType::parse)
                    };
                    let (from, to) = (ty("fromType")?, ty("toType")?);
                    if !is_widening(&from, &to) {
                        return Err(ProtocolError::UnsupportedReaderFeature(format!(
                            "typeWidening: {} changed from {} to {}",
                            f.name,
                            from.name(),
                            to.name()
                        )));
                    }
                }
            }
            walk_type(&f.data_type)?;
        }
        Ok(())
    }
    fn walk_type(t: &DataType) -> Result<()> {
        match t {
            DataType::Primitive(_) => Ok(()),
            DataType::Struct(st) => walk(&st.fields),
            DataType::Array { element, .. } => walk_type(element),
            DataType::Map { key, value, .. } => {
                walk_type(key)?;
                walk_type(value)
            }
        }
    }
    walk(&schema.fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrimitiveType as P;

    fn d(precision: u8, scale: i8) -> P {
        P::Decimal { precision, scale }
    }

    #[test]
    fn the_protocols_widenings_and_nothing_else() {
        for (a, b) in [
            (P::Byte, P::Short),
            (P::Short, P::Long),
            (P::Integer, P::Long),
            (P::Integer, P::Double),
            (P::Float, P::Double),
            (P::Date, P::TimestampNtz),
            (P::Integer, d(10, 0)),
            (P::Long, d(22, 2)),
            (d(10, 1), d(12, 3)),
            (d(10, 2), d(12, 2)),
        ] {
            assert!(is_widening(&a, &b), "{a:?} -> {b:?}");
        }
        for (a, b) in [
            (P::Long, P::Integer),
            (P::Long, P::Double),
            (P::Double, P::Float),
            (P::Integer, d(9, 0)),
            (P::Long, d(20, 1)),
            (d(10, 1), d(11, 3)),
            (d(10, 2), d(10, 1)),
            (P::Long, P::Long),
            (P::Date, P::Timestamp),
            (P::String, P::Binary),
            (P::Integer, P::String),
        ] {
            assert!(!is_widening(&a, &b), "{a:?} -> {b:?}");
        }
    }
}
