//! Reading VARIANT columns (`variantType`) as JSON text. A variant is stored as a Parquet group of
//! two binaries, `metadata` (a string dictionary) and `value` (a self-describing encoding; the
//! Parquet Variant spec). This engine has no variant type of its own: a top-level VARIANT column is
//! read as a string holding the value's JSON (object fields in stored order, which the encoding
//! keeps sorted by name; dates and timestamps as quoted ISO strings, binary as quoted base64,
//! decimals exact). Writing a table with a VARIANT column is refused (`FileWriter`).
//!
//! Every offset and length is bounds-checked and nesting is limited: a malformed value is a
//! one-line "corrupt" error, never a panic or an unbounded allocation.

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, StringBuilder, StructArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use base64::Engine;

use crate::error::{EngineError, Result};

const MAX_DEPTH: usize = 128;

fn bad(what: &str) -> EngineError {
    EngineError::corrupt(format!("malformed variant value: {what}"))
}

fn read_uint(bytes: &[u8], at: usize, width: usize) -> Result<usize> {
    let end = at
        .checked_add(width)
        .ok_or_else(|| bad("offset overflow"))?;
    let s = bytes.get(at..end).ok_or_else(|| bad("truncated"))?;
    let mut v: u64 = 0;
    for (i, b) in s.iter().enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    usize::try_from(v).map_err(|_| bad("offset too large"))
}

fn fixed<const N: usize>(bytes: &[u8], at: usize) -> Result<[u8; N]> {
    let end = at.checked_add(N).ok_or_else(|| bad("offset overflow"))?;
    bytes
        .get(at..end)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| bad("truncated"))
}

/// The metadata's string dictionary.
struct Dictionary<'a> {
    bytes: &'a [u8],
    offset_size: usize,
    size: usize,
}

impl<'a> Dictionary<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self> {
        let header = *bytes.first().ok_or_else(|| bad("empty metadata"))?;
        if header & 0x0F != 1 {
            return Err(bad("unknown metadata version"));
        }
        let offset_size = usize::from((header >> 6) & 0x03) + 1;
        let size = read_uint(bytes, 1, offset_size)?;
        // Offsets must fit in the buffer: bounds the dictionary size by the data.
        if size.saturating_add(1).saturating_mul(offset_size) > bytes.len() {
            return Err(bad("dictionary larger than its metadata"));
        }
        Ok(Dictionary {
            bytes,
            offset_size,
            size,
        })
    }

    fn get(&self, id: usize) -> Result<&'a str> {
        if id >= self.size {
            return Err(bad("field id outside the dictionary"));
        }
        let offsets = 1 + self.offset_size;
        let data = offsets + (self.size + 1) * self.offset_size;
        let start = read_uint(
            self.bytes,
            offsets + id * self.offset_size,
            self.offset_size,
        )?;
        let end = read_uint(
            self.bytes,
            offsets + (id + 1) * self.offset_size,
            self.offset_size,
        )?;
        let s = self
            .bytes
            .get(data + start..data + end.max(start))
            .ok_or_else(|| bad("dictionary string out of bounds"))?;
        std::str::from_utf8(s).map_err(|_| bad("dictionary string is not UTF-8"))
    }
}

fn push_json_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::String(s.to_string()).to_string());
}

fn decimal_text(unscaled: i128, scale: u8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

fn micros_text(us: i64, utc: bool) -> Result<String> {
    let t =
        chrono::DateTime::from_timestamp_micros(us).ok_or_else(|| bad("timestamp out of range"))?;
    Ok(match utc {
        true => t.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string(),
        false => t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string(),
    })
}

/// The header of an object or array at `body`: `n` elements, their field ids at `ids` (objects;
/// `id_size` 0 for arrays), then `n + 1` offsets, then the values. Checked to fit in `bytes`.
struct Container {
    n: usize,
    ids: usize,
    offsets: usize,
    offset_size: usize,
    values: usize,
}

impl Container {
    fn parse(
        bytes: &[u8],
        body: usize,
        offset_bits: u8,
        large: bool,
        id_size: usize,
    ) -> Result<Self> {
        let offset_size = usize::from(offset_bits) + 1;
        let count_size = if large { 4 } else { 1 };
        let n = read_uint(bytes, body, count_size)?;
        let overflow = || bad("size overflow");
        let ids = body + count_size;
        let offsets = ids
            .checked_add(n.checked_mul(id_size).ok_or_else(overflow)?)
            .ok_or_else(overflow)?;
        let values = offsets
            .checked_add(
                n.checked_add(1)
                    .ok_or_else(overflow)?
                    .checked_mul(offset_size)
                    .ok_or_else(overflow)?,
            )
            .ok_or_else(overflow)?;
        if values > bytes.len() {
            return Err(bad("object or array header out of bounds"));
        }
        Ok(Container {
            n,
            ids,
            offsets,
            offset_size,
            values,
        })
    }

    /// Where element `i`'s value starts.
    fn value_at(&self, bytes: &[u8], i: usize) -> Result<usize> {
        let off = read_uint(bytes, self.offsets + i * self.offset_size, self.offset_size)?;
        self.values
            .checked_add(off)
            .ok_or_else(|| bad("size overflow"))
    }
}

/// Appends the JSON of the value at `bytes[at..]` to `out`.
fn value_json(
    dict: &Dictionary,
    bytes: &[u8],
    at: usize,
    depth: usize,
    out: &mut String,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(bad("nested too deeply"));
    }
    let header = *bytes.get(at).ok_or_else(|| bad("truncated"))?;
    let (basic, vh) = (header & 0x03, header >> 2);
    let body = at + 1;
    match basic {
        0 => primitive_json(vh, bytes, body, out),
        1 => {
            let s = bytes
                .get(body..body + usize::from(vh))
                .ok_or_else(|| bad("short string out of bounds"))?;
            push_json_string(
                out,
                std::str::from_utf8(s).map_err(|_| bad("string is not UTF-8"))?,
            );
            Ok(())
        }
        2 => {
            let id_size = usize::from((vh >> 2) & 0x03) + 1;
            let c = Container::parse(bytes, body, vh & 0x03, (vh >> 4) & 1 == 1, id_size)?;
            out.push('{');
            for i in 0..c.n {
                if i > 0 {
                    out.push(',');
                }
                let key = dict.get(read_uint(bytes, c.ids + i * id_size, id_size)?)?;
                push_json_string(out, key);
                out.push(':');
                value_json(dict, bytes, c.value_at(bytes, i)?, depth + 1, out)?;
            }
            out.push('}');
            Ok(())
        }
        _ => {
            let c = Container::parse(bytes, body, vh & 0x03, (vh >> 2) & 1 == 1, 0)?;
            out.push('[');
            for i in 0..c.n {
                if i > 0 {
                    out.push(',');
                }
                value_json(dict, bytes, c.value_at(bytes, i)?, depth + 1, out)?;
            }
            out.push(']');
            Ok(())
        }
    }
}

fn primitive_json(id: u8, bytes: &[u8], at: usize, out: &mut String) -> Result<()> {
    let text = match id {
        0 => "null".to_string(),
        1 => "true".to_string(),
        2 => "false".to_string(),
        3 => i8::from_le_bytes(fixed(bytes, at)?).to_string(),
        4 => i16::from_le_bytes(fixed(bytes, at)?).to_string(),
        5 => i32::from_le_bytes(fixed(bytes, at)?).to_string(),
        6 => i64::from_le_bytes(fixed(bytes, at)?).to_string(),
        7 => float_json(f64::from_le_bytes(fixed(bytes, at)?)),
        14 => float_json(f64::from(f32::from_le_bytes(fixed(bytes, at)?))),
        8 | 9 | 10 => {
            let scale = *bytes.get(at).ok_or_else(|| bad("truncated"))?;
            let unscaled = match id {
                8 => i128::from(i32::from_le_bytes(fixed(bytes, at + 1)?)),
                9 => i128::from(i64::from_le_bytes(fixed(bytes, at + 1)?)),
                _ => i128::from_le_bytes(fixed(bytes, at + 1)?),
            };
            if scale > 38 {
                return Err(bad("decimal scale above 38"));
            }
            decimal_text(unscaled, scale)
        }
        11 => {
            let days = i32::from_le_bytes(fixed(bytes, at)?);
            let d = chrono::NaiveDate::from_num_days_from_ce_opt(days.saturating_add(719_163))
                .ok_or_else(|| bad("date out of range"))?;
            format!("\"{}\"", d.format("%Y-%m-%d"))
        }
        12 | 13 => format!(
            "\"{}\"",
            micros_text(i64::from_le_bytes(fixed(bytes, at)?), id == 12)?
        ),
        15 | 16 => {
            let len = read_uint(bytes, at, 4)?;
            let s = bytes
                .get(at + 4..at + 4 + len)
                .ok_or_else(|| bad("string or binary out of bounds"))?;
            if id == 16 {
                let mut o = String::new();
                push_json_string(
                    &mut o,
                    std::str::from_utf8(s).map_err(|_| bad("string is not UTF-8"))?,
                );
                o
            } else {
                format!("\"{}\"", base64::engine::general_purpose::STANDARD.encode(s))
            }
        }
        other => {
            return Err(EngineError::Unsupported(format!(
                "variant values of primitive type {other} (time, nanosecond timestamps, UUID) are not read yet"
            )))
        }
    };
    out.push_str(&text);
    Ok(())
}

fn float_json(v: f64) -> String {
    match serde_json::Number::from_f64(v) {
        Some(n) => n.to_string(),
        // JSON has no NaN or infinity: as strings, as Spark's to_json writes them.
        None => format!("\"{v}\""),
    }
}

/// One variant (metadata, value) as JSON text.
pub fn to_json(metadata: &[u8], value: &[u8]) -> Result<String> {
    let dict = Dictionary::parse(metadata)?;
    let mut out = String::new();
    value_json(&dict, value, 0, 0, &mut out)?;
    Ok(out)
}

/// A file's variant column (a struct of `metadata` and `value` binaries) as JSON strings.
pub fn column_to_json(col: &ArrayRef) -> Result<ArrayRef> {
    let s: &StructArray = col
        .as_struct_opt()
        .ok_or_else(|| bad("the stored column is not a (metadata, value) group"))?;
    let child = |name: &str| -> Result<BinaryArray> {
        let c = s
            .column_by_name(name)
            .ok_or_else(|| bad(&format!("no {name} field")))?;
        let c = cast(c, &DataType::Binary)?;
        Ok(c.as_binary::<i32>().clone())
    };
    let (metadata, value) = (child("metadata")?, child("value")?);
    let mut b = StringBuilder::new();
    for i in 0..s.len() {
        if s.is_null(i) || value.is_null(i) || metadata.is_null(i) {
            b.append_null();
        } else {
            b.append_value(to_json(metadata.value(i), value.value(i))?);
        }
    }
    Ok(std::sync::Arc::new(b.finish()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Metadata with keys ["a", "b"] (sorted), 1-byte offsets.
    fn meta_ab() -> Vec<u8> {
        vec![0b0001_0001, 2, 0, 1, 2, b'a', b'b']
    }

    #[test]
    fn primitives_objects_and_arrays() {
        let empty = vec![0x01, 0, 0];
        // int8 5, short string "hi", true, null
        assert_eq!(to_json(&empty, &[3 << 2, 5]).unwrap(), "5");
        assert_eq!(
            to_json(&empty, &[(2 << 2) | 1, b'h', b'i']).unwrap(),
            "\"hi\""
        );
        assert_eq!(to_json(&empty, &[1 << 2]).unwrap(), "true");
        assert_eq!(to_json(&empty, &[0]).unwrap(), "null");
        // decimal4 scale 2, unscaled -150 → -1.50
        let mut d = vec![8 << 2, 2];
        d.extend((-150i32).to_le_bytes());
        assert_eq!(to_json(&empty, &d).unwrap(), "-1.50");
        // date 19723 (2024-01-01)
        let mut date = vec![11 << 2];
        date.extend(19723i32.to_le_bytes());
        assert_eq!(to_json(&empty, &date).unwrap(), "\"2024-01-01\"");
        // {"a": 1, "b": [true, "x"]}: object of 2 fields, 1-byte ids and offsets.
        let arr = vec![0b11, 2, 0, 1, 2, 1 << 2, (1 << 2) | 1, b'x'];
        let mut obj = vec![0b10, 2, 0, 1, 0, 2, 2 + arr.len() as u8, 3 << 2, 1];
        obj.extend(&arr);
        assert_eq!(
            to_json(&meta_ab(), &obj).unwrap(),
            r#"{"a":1,"b":[true,"x"]}"#
        );
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        let empty = vec![0x01, 0, 0];
        for bad_value in [
            vec![],
            vec![6 << 2, 1, 2],
            vec![(5 << 2) | 1, b'a'],
            vec![0b10, 200, 0],
            vec![0b11, 3, 0, 1],
            vec![16 << 2, 255, 255, 255, 255],
        ] {
            assert!(to_json(&empty, &bad_value).is_err(), "{bad_value:?}");
        }
        assert!(to_json(&[2, 0, 0], &[0]).is_err(), "version 2");
        assert!(
            to_json(&[0x01, 255], &[0]).is_err(),
            "dictionary past the end"
        );
        // An object whose field id is outside the dictionary.
        assert!(to_json(&meta_ab(), &[0b10, 1, 7, 0, 1, 0]).is_err());
        // Deep nesting: arrays of one array, 200 deep.
        let mut v = Vec::new();
        for _ in 0..200 {
            v.extend([0b11, 1, 0, 0]);
        }
        v.push(0);
        assert!(to_json(&empty, &v).is_err());
    }
}
