//! The RoaringBitmapArray payload (the bytes inside a DV file entry or an inline DV).
//!
//! Portable format (the only one we write): magic 1681511377 as LE u32, then the roaring "portable
//! 64-bit" encoding — u64 LE bucket count, then per bucket ascending: u32 LE key (MSB clear) and a
//! standard 32-bit Roaring bitmap. Spark writes every bucket 0..=max key, including empty ones.
//! Native format (read only): magic 1681511376, i32 LE count, then per bucket an i32 LE byte length
//! and a 32-bit Roaring bitmap, keys implied by position.

use std::io::Cursor;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{ProtocolError, Result};

pub const MAGIC_PORTABLE: u32 = 1_681_511_377;
pub const MAGIC_NATIVE: u32 = 1_681_511_376;

/// Serializes in the portable format. Containers are run-optimized first (much smaller for ranges).
pub fn encode_bitmap(bitmap: &RoaringTreemap) -> Result<Vec<u8>> {
    if bitmap.max().is_some_and(|m| m >= 1u64 << 63) {
        return Err(ProtocolError::dv("row index does not fit in 63 bits"));
    }
    let mut optimized = bitmap.clone();
    optimized.optimize();
    let mut out = Vec::with_capacity(optimized.serialized_size() + 4);
    out.extend_from_slice(&MAGIC_PORTABLE.to_le_bytes());
    optimized
        .serialize_into(&mut out)
        .map_err(|e| ProtocolError::dv(e.to_string()))?;
    Ok(out)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| {
                ProtocolError::dv(format!(
                    "bitmap truncated at byte {} (needed {n} more)",
                    self.pos
                ))
            })?;
        let s = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| ProtocolError::dv("truncated"))?;
        self.pos = end;
        Ok(s)
    }
    fn u32_le(&mut self) -> Result<u32> {
        let b: [u8; 4] = self
            .take(4)?
            .try_into()
            .map_err(|_| ProtocolError::dv("truncated"))?;
        Ok(u32::from_le_bytes(b))
    }
    fn u64_le(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }
    /// Reads one standard 32-bit Roaring bitmap from the current position.
    fn roaring32(&mut self) -> Result<RoaringBitmap> {
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        let mut cur = Cursor::new(rest);
        let bm = RoaringBitmap::deserialize_from(&mut cur)
            .map_err(|e| ProtocolError::dv(format!("invalid 32-bit roaring bitmap: {e}")))?;
        let used = usize::try_from(cur.position()).map_err(|_| ProtocolError::dv("overflow"))?;
        self.pos = self.pos.saturating_add(used);
        Ok(bm)
    }
}

/// Decodes a payload (portable or native), rejecting trailing bytes, non-ascending or negative keys.
pub fn decode_bitmap(bytes: &[u8]) -> Result<RoaringTreemap> {
    let mut r = Reader { bytes, pos: 0 };
    let magic = r.u32_le()?;
    // (key, bucket) in strictly ascending key order: moved into the treemap whole, never
    // element by element (a DV of a quarter-million rows decoded in microseconds, not
    // milliseconds).
    let mut buckets: Vec<(u32, RoaringBitmap)> = Vec::new();
    match magic {
        MAGIC_PORTABLE => {
            let count = r.u64_le()?;
            // Each bucket needs at least 4 (key) + 8 (smallest roaring header) bytes.
            if count > (r.remaining() as u64) / 12 + 1 {
                return Err(ProtocolError::dv(format!(
                    "bucket count {count} exceeds what {} bytes can hold",
                    r.remaining()
                )));
            }
            let mut last_key: Option<u32> = None;
            for _ in 0..count {
                let key = r.u32_le()?;
                if key & 0x8000_0000 != 0 {
                    return Err(ProtocolError::dv(format!(
                        "bucket key {key} has its sign bit set"
                    )));
                }
                if last_key.is_some_and(|k| key <= k) {
                    return Err(ProtocolError::dv("bucket keys are not strictly ascending"));
                }
                last_key = Some(key);
                let bm = r.roaring32()?;
                push_bucket(&mut buckets, key, bm);
            }
        }
        MAGIC_NATIVE => {
            let count =
                i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| ProtocolError::dv("x"))?);
            let count =
                u32::try_from(count).map_err(|_| ProtocolError::dv("negative bucket count"))?;
            if u64::from(count) > (r.remaining() as u64) / 4 + 1 {
                return Err(ProtocolError::dv("native bucket count exceeds payload"));
            }
            for key in 0..count {
                let len =
                    i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| ProtocolError::dv("x"))?);
                let len = usize::try_from(len).map_err(|_| ProtocolError::dv("negative length"))?;
                let start = r.pos;
                let bm = r.roaring32()?;
                if r.pos != start.saturating_add(len) {
                    return Err(ProtocolError::dv(
                        "native bucket length does not match its bitmap",
                    ));
                }
                push_bucket(&mut buckets, key, bm);
            }
        }
        other => return Err(ProtocolError::dv(format!("invalid magic number {other}"))),
    }
    if r.remaining() != 0 {
        return Err(ProtocolError::dv(format!(
            "{} trailing bytes after the bitmap",
            r.remaining()
        )));
    }
    Ok(RoaringTreemap::from_bitmaps(buckets))
}

/// The same set with every run container turned into an array or bitmap container.
///
/// Why: roaring's run-container set operations insert or remove one interval at a time into a
/// sorted `Vec`, which is quadratic in the number of runs. A DV of rows deleted a few at a time
/// across a file (one UPDATE after another) has hundreds of runs per container, and a Case 2
/// merge of 40 such files spent tens of milliseconds in `|`, `&`, `-` and `is_subset`. Array and
/// bitmap containers make every operation linear. The result holds at most 8 KiB per 65,536
/// rows of the range the set spans: callers expand only a set whose rows they have bounded (e.g.
/// validated against the file's numRecords).
pub fn without_run_containers(bitmap: &RoaringTreemap) -> RoaringTreemap {
    RoaringTreemap::from_bitmaps(bitmap.bitmaps().map(|(key, bucket)| {
        let mut bucket = bucket.clone();
        bucket.remove_run_compression();
        (key, bucket)
    }))
}

/// Keeps a non-empty bucket (an empty one holds no row; kept, it would make two equal sets
/// compare unequal). Callers push keys in strictly ascending order.
fn push_bucket(buckets: &mut Vec<(u32, RoaringBitmap)>, key: u32, bm: RoaringBitmap) {
    if !bm.is_empty() {
        buckets.push((key, bm));
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn verified_vector_from_reference() {
        // Rows 3, 4, 7, 11, 18, 29 in the portable format (reference §3.6).
        let hex = "d1d339640100000000000000000000003a3000000100000000000500100000000300040007000b0012001d00";
        let hex: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(bytes.len(), 44);
        let bm = decode_bitmap(&bytes).unwrap();
        assert_eq!(bm.iter().collect::<Vec<_>>(), vec![3, 4, 7, 11, 18, 29]);
        assert_eq!(encode_bitmap(&bm).unwrap(), bytes);
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode_bitmap(&[]).is_err());
        assert!(decode_bitmap(&[1, 2, 3, 4, 5]).is_err());
        let mut huge = MAGIC_PORTABLE.to_le_bytes().to_vec();
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_bitmap(&huge).is_err());
    }

    #[test]
    fn expanding_runs_keeps_the_set_and_its_encoding() {
        let mut bm = RoaringTreemap::new();
        for period in 0..100u64 {
            bm.insert_range(period * 2000..period * 2000 + 37);
            bm.insert(period * 2000 + 40);
        }
        bm.insert_range((2u64 << 32)..(2u64 << 32) + 70_000);
        let bytes = encode_bitmap(&bm).unwrap();
        let decoded = decode_bitmap(&bytes).unwrap();
        let expanded = without_run_containers(&decoded);
        assert_eq!(expanded, bm);
        assert_eq!(expanded.len(), 100 * 38 + 70_000);
        // Encoding re-optimizes: the bytes do not depend on the in-memory container kinds.
        assert_eq!(encode_bitmap(&expanded).unwrap(), bytes);
        let mut other = expanded.clone();
        other.remove(40);
        assert!(other.is_subset(&expanded) && !expanded.is_subset(&other));
    }

    #[test]
    fn empty_buckets_and_high_keys() {
        let mut bm = RoaringTreemap::new();
        bm.insert(5);
        bm.insert((3u64 << 32) + 9);
        let bytes = encode_bitmap(&bm).unwrap();
        assert_eq!(decode_bitmap(&bytes).unwrap(), bm);
    }
}
