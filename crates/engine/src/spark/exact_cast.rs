//! Which casts convert every value exactly (and never fail): the only ones DataFusion's simplifier
//! may see. Its unwrap of a cast in a comparison (`CAST(x AS T) = lit` becomes `x = CAST(lit AS
//! typeof x)`) is right only then. For any other cast it changes what the comparison means:
//! `CAST(d AS INT) = 1` on d = 1.25 is true in Spark (the cast truncates) and `d = 1.00` is not;
//! `CAST(d AS INT) <> 1` then deleted a row Spark keeps; `CAST(h AS TINYINT) = 2` lost the
//! overflow Spark raises. Every other cast goes behind `opaque` (`rewrite.rs`).

use arrow::datatypes::DataType;

/// Whether every value of `from` converts to `to` exactly, without an error. Unknown pairs are
/// not exact (they go behind `opaque`: a lost simplification, never another meaning).
pub fn converts_exactly(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if from == to || *from == Null {
        return true;
    }
    match (from, to) {
        (Int8 | Int16 | Int32 | Int64, Int8 | Int16 | Int32 | Int64) => {
            integer_digits(from) <= integer_digits(to)
        }
        // An integer into a DECIMAL with room for all its digits before the point.
        (Int8 | Int16 | Int32 | Int64, Decimal128(p, s)) => {
            i32::from(integer_digits(from)) <= i32::from(*p) - i32::from(*s)
        }
        // A DECIMAL into one with at least its scale and its integer digits.
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            s2 >= s1 && i32::from(*p2) - i32::from(*s2) >= i32::from(*p1) - i32::from(*s1)
        }
        // Floats hold every integer up to 2^24 (FLOAT) and 2^53 (DOUBLE) exactly.
        (Int8 | Int16 | Float32, Float32 | Float64) => true,
        (Int32, Float64) => true,
        (Date32, Date64) => true,
        (Utf8, LargeUtf8 | Utf8View) | (LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        _ => false,
    }
}

/// The decimal digits of the largest value of an integer type.
fn integer_digits(t: &DataType) -> u8 {
    match t {
        DataType::Int8 => 3,
        DataType::Int16 => 5,
        DataType::Int32 => 10,
        _ => 19,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    #[test]
    fn only_exact_conversions_pass() {
        for (from, to) in [
            (Int32, Int64),
            (Int16, Decimal128(5, 0)),
            (Int32, Decimal128(12, 2)),
            (Decimal128(10, 2), Decimal128(12, 3)),
            (Int32, Float64),
            (Float32, Float64),
            (Null, Int8),
        ] {
            assert!(converts_exactly(&from, &to), "{from} -> {to}");
        }
        for (from, to) in [
            (Int64, Int32),
            (Decimal128(10, 2), Int32),
            (Decimal128(10, 2), Int64),
            (Decimal128(10, 2), Decimal128(5, 1)),
            (Decimal128(10, 2), Decimal128(10, 3)),
            (Int32, Decimal128(9, 0)),
            (Int64, Float64),
            (Float64, Int64),
            (Float64, Decimal128(38, 10)),
            (Utf8, Int32),
            (
                Timestamp(arrow::datatypes::TimeUnit::Microsecond, None),
                Date32,
            ),
        ] {
            assert!(!converts_exactly(&from, &to), "{from} -> {to}");
        }
    }
}
