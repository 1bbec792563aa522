//! A set of distinct key tuples under one [`KeyEquality`]: the MERGE source's keys, which the key
//! probe tests target rows against and the value-exact conflict tier tests a winner's rows against.
//!
//! Forms (every one answers "is this tuple in the set" exactly as the encoded form would):
//! - `Int`: one 32/64-bit integer key on both sides, held as plain `i64`s. Widening is injective and
//!   keeps the value, so two integers are the same key exactly when their `i64`s are equal — the
//!   exact-number encoding's own rule. About 16 bytes per key instead of ~60.
//! - `Dense`: an `Int` set whose keys span a range at most [`DENSE_BITS_PER_KEY`] times their
//!   number, sealed into one bit per value of the range (`bit v - min`). Lookups touch one word of a
//!   small array instead of a large hash table (a 10M-key source of consecutive ids is 1.25 MB).
//! - `Encoded`: anything else, as the equality's byte encodings.
//!
//! Hashing is ahash with per-process random keys: the keys come from user data, and no caller
//! iterates the set, so its order never reaches an output.

use std::collections::HashSet;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Int32Type, Int64Type};

use crate::error::{EngineError, Result};
use crate::key_equality::KeyEquality;

type Hasher = ahash::RandomState;

/// Estimated bytes per key of the integer form (value, control byte, load-factor slack).
pub const INT_KEY_BYTES: usize = 16;
/// Estimated bytes per key of the encoded form besides the encoding: the boxed slice's pointer and
/// length, its allocation's header and rounding, the hash table's slack.
pub const ENCODED_KEY_OVERHEAD_BYTES: usize = 48;
/// An integer set is sealed into a bitmap when its range has at most this many values per key
/// (4 bytes per key at most, against [`INT_KEY_BYTES`] for the hash form).
pub const DENSE_BITS_PER_KEY: u128 = 32;

#[derive(Debug, Clone)]
pub enum KeySet {
    Int(HashSet<i64, Hasher>),
    Dense(DenseInts),
    Encoded(HashSet<Box<[u8]>, Hasher>),
}

/// Integers in `[min, min + 64 * words.len())` as bits; `len` counts the set bits.
#[derive(Debug, Clone)]
pub struct DenseInts {
    min: i64,
    words: Vec<u64>,
    len: usize,
    /// Whether the bitmap's bytes were reported to the builder's budget yet (by `insert_rows`).
    charged: bool,
}

impl DenseInts {
    /// The word index and bit of `v`, or `None` when `v` is outside the range.
    fn slot(&self, v: i64) -> Option<(usize, u64)> {
        let offset = u64::try_from(i128::from(v) - i128::from(self.min)).ok()?;
        let word = usize::try_from(offset / 64).ok()?;
        (word < self.words.len()).then_some((word, 1u64 << (offset % 64)))
    }

    fn contains(&self, v: i64) -> bool {
        self.slot(v)
            .and_then(|(w, bit)| self.words.get(w).map(|x| x & bit != 0))
            .unwrap_or(false)
    }

    /// Sets `v`'s bit; false when `v` is outside the range (nothing changed).
    fn insert(&mut self, v: i64) -> bool {
        let Some((w, bit)) = self.slot(v) else {
            return false;
        };
        if let Some(x) = self.words.get_mut(w) {
            if *x & bit == 0 {
                *x |= bit;
                self.len += 1;
            }
            return true;
        }
        false
    }

    fn to_hash(&self) -> HashSet<i64, Hasher> {
        let mut set = HashSet::with_capacity_and_hasher(self.len, Hasher::new());
        for (w, &x) in self.words.iter().enumerate() {
            let mut bits = x;
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let offset = (w as i128) * 64 + i128::from(b);
                if let Ok(v) = i64::try_from(i128::from(self.min) + offset) {
                    set.insert(v);
                }
            }
        }
        set
    }
}

/// Is `t` a type the integer form of [`KeySet`] holds exactly?
pub fn is_int_key(t: &DataType) -> bool {
    matches!(t, DataType::Int32 | DataType::Int64)
}

/// The values of a 32/64-bit integer column, widened; an error for any other type.
fn int_values(c: &ArrayRef) -> Result<Box<dyn Iterator<Item = Option<i64>> + '_>> {
    Ok(match c.data_type() {
        DataType::Int64 => Box::new(c.as_primitive::<Int64Type>().iter()),
        DataType::Int32 => Box::new(
            c.as_primitive::<Int32Type>()
                .iter()
                .map(|v| v.map(i64::from)),
        ),
        other => {
            return Err(EngineError::Internal(format!(
                "integer key of type {other}"
            )))
        }
    })
}

fn single(cols: &[ArrayRef]) -> Result<&ArrayRef> {
    match cols {
        [c] => Ok(c),
        _ => Err(EngineError::Internal(
            "integer key set of several columns".into(),
        )),
    }
}

impl KeySet {
    /// An empty set: the integer form when every key pair is one 32/64-bit integer on both sides.
    pub fn for_pairs(pairs: &[(DataType, DataType)]) -> KeySet {
        match pairs {
            [(t, s)] if is_int_key(t) && is_int_key(s) => {
                KeySet::Int(HashSet::with_hasher(Hasher::new()))
            }
            _ => KeySet::encoded(),
        }
    }

    /// An empty set for `pairs` sized for what is known of the source's integer keys before they
    /// are inserted: `count` non-NULL values in `[min, max]`. A dense range gets the bitmap form
    /// at once (no hash table is built at all); otherwise the hash form reserves room for
    /// `count` keys, or as many as `max_bytes` allows. The set answers the same either way: a
    /// value outside the range turns the bitmap back into a hash set.
    pub fn presized(
        pairs: &[(DataType, DataType)],
        min: i64,
        max: i64,
        count: usize,
        max_bytes: usize,
    ) -> KeySet {
        let set = KeySet::for_pairs(pairs);
        let KeySet::Int(mut hash) = set else {
            return set;
        };
        let span = (i128::from(max) - i128::from(min) + 1).max(0) as u128;
        let words = usize::try_from(span.div_ceil(64)).ok();
        match words {
            Some(words)
                if span > 0
                    && span <= DENSE_BITS_PER_KEY.saturating_mul(count as u128)
                    && words.saturating_mul(8) <= max_bytes =>
            {
                KeySet::Dense(DenseInts {
                    min,
                    words: vec![0; words],
                    len: 0,
                    charged: false,
                })
            }
            _ => {
                hash.reserve(count.min(max_bytes / INT_KEY_BYTES));
                KeySet::Int(hash)
            }
        }
    }

    /// An empty set of the encoded form, whatever the key types.
    pub fn encoded() -> KeySet {
        KeySet::Encoded(HashSet::with_hasher(Hasher::new()))
    }

    pub fn len(&self) -> usize {
        match self {
            KeySet::Int(s) => s.len(),
            KeySet::Dense(d) => d.len,
            KeySet::Encoded(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the tuples of `cols` (key order; NULL tuples are skipped); returns the bytes the new
    /// distinct keys take (an estimate). An error when a column is outside its key class (or, in
    /// an integer form, not a 32/64-bit integer).
    pub fn insert_rows(&mut self, equality: &KeyEquality, cols: &[ArrayRef]) -> Result<usize> {
        // Bytes the set took before this call that were not reported yet (a bitmap turned
        // back into a hash set reports the hash set's size less the bitmap's it reported).
        let mut unreported = 0;
        if let KeySet::Dense(d) = self {
            // A bitmap takes values inside its range in place; anything else unseals it.
            let c = single(cols)?;
            let mut outside = false;
            for v in int_values(c)?.flatten() {
                outside |= !d.insert(v);
            }
            let reported = if d.charged { d.words.len() * 8 } else { 0 };
            if !outside {
                // The bitmap never grows: its bytes are reported once.
                d.charged = true;
                return Ok(d.words.len() * 8 - reported);
            }
            let hash = d.to_hash();
            unreported = (hash.len() * INT_KEY_BYTES).saturating_sub(reported);
            *self = KeySet::Int(hash);
        }
        match self {
            KeySet::Int(set) => {
                let c = single(cols)?;
                let before = set.len();
                set.reserve(c.len() - c.null_count());
                set.extend(int_values(c)?.flatten());
                Ok((set.len() - before) * INT_KEY_BYTES + unreported)
            }
            KeySet::Encoded(set) => {
                let mut bytes = 0;
                for t in equality.encode(cols)?.into_iter().flatten() {
                    let size = t.len() + ENCODED_KEY_OVERHEAD_BYTES;
                    if set.insert(t) {
                        bytes += size;
                    }
                }
                Ok(bytes)
            }
            KeySet::Dense(_) => Err(EngineError::Internal("dense key set not unsealed".into())),
        }
    }

    /// The same set, in its fastest form for lookups: an integer set whose keys are dense enough
    /// becomes a bitmap over their range. Call once the set is built.
    pub fn seal(self) -> KeySet {
        let KeySet::Int(set) = self else {
            return self;
        };
        let (Some(&min), Some(&max)) = (set.iter().min(), set.iter().max()) else {
            return KeySet::Int(set);
        };
        let span = (i128::from(max) - i128::from(min) + 1) as u128;
        if span > DENSE_BITS_PER_KEY.saturating_mul(set.len() as u128) {
            return KeySet::Int(set);
        }
        let Ok(words) = usize::try_from(span.div_ceil(64)) else {
            return KeySet::Int(set);
        };
        let mut dense = DenseInts {
            min,
            words: vec![0; words],
            len: 0,
            charged: true, // the hash form's bytes were
        };
        for &v in &set {
            dense.insert(v);
        }
        KeySet::Dense(dense)
    }

    /// For each row of `cols` (key order): is its tuple in the set? NULL tuples are not. An error
    /// when a column is outside its key class — callers then cannot decide and keep the conflict.
    pub fn contains_rows(&self, equality: &KeyEquality, cols: &[ArrayRef]) -> Result<Vec<bool>> {
        match self {
            KeySet::Int(set) => Ok(int_values(single(cols)?)?
                .map(|v| v.is_some_and(|v| set.contains(&v)))
                .collect()),
            KeySet::Dense(d) => Ok(int_values(single(cols)?)?
                .map(|v| v.is_some_and(|v| d.contains(v)))
                .collect()),
            KeySet::Encoded(set) => Ok(equality
                .encode(cols)?
                .into_iter()
                .map(|t| t.is_some_and(|t| set.contains(&t)))
                .collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, StringArray};

    use super::*;

    /// The integer and dense forms answer exactly as the encoded form, across widths and NULLs.
    #[test]
    fn integer_key_sets_agree_with_encoded_ones() {
        let pairs = [(DataType::Int64, DataType::Int32)];
        let equality = KeyEquality::for_pairs(&pairs).expect("ints compare");
        let source: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(1),
            None,
            Some(-7),
            Some(i32::MAX),
        ]));
        let mut int = KeySet::for_pairs(&pairs);
        let mut encoded = KeySet::encoded();
        assert!(matches!(int, KeySet::Int(_)));
        int.insert_rows(&equality, std::slice::from_ref(&source))
            .unwrap();
        encoded
            .insert_rows(&equality, std::slice::from_ref(&source))
            .unwrap();
        assert_eq!((int.len(), encoded.len()), (3, 3));
        let target: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(1),
            None,
            Some(-7),
            Some(i64::from(i32::MAX)),
            Some(i64::from(i32::MAX) + 1),
            Some(0),
        ]));
        let a = int
            .contains_rows(&equality, std::slice::from_ref(&target))
            .unwrap();
        let b = encoded
            .contains_rows(&equality, std::slice::from_ref(&target))
            .unwrap();
        assert_eq!(a, vec![true, false, true, true, false, false]);
        assert_eq!(a, b);
        // A column of another type is an error (callers keep the conflict), never a guess.
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["1"]));
        assert!(int.contains_rows(&equality, &[strings]).is_err());
    }

    /// A dense set (sealed) answers as the hash set at and around its range's ends, at the
    /// extremes of i64, and after inserts inside and outside its range.
    #[test]
    fn dense_sets_answer_as_hash_sets() {
        let pairs = [(DataType::Int64, DataType::Int64)];
        let eq = KeyEquality::for_pairs(&pairs).expect("ints compare");
        let col = |v: Vec<Option<i64>>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let keys = col((100..=227).map(Some).chain([None]).collect());
        let mut hash = KeySet::for_pairs(&pairs);
        hash.insert_rows(&eq, std::slice::from_ref(&keys)).unwrap();
        let mut dense = hash.clone().seal();
        assert!(
            matches!(dense, KeySet::Dense(_)),
            "128 keys over 128 values"
        );
        assert_eq!(dense.len(), 128);
        let probe = col(vec![
            Some(99),
            Some(100),
            Some(227),
            Some(228),
            Some(i64::MIN),
            Some(i64::MAX),
            None,
            Some(164),
        ]);
        let want = vec![false, true, true, false, false, false, false, true];
        assert_eq!(
            dense
                .contains_rows(&eq, std::slice::from_ref(&probe))
                .unwrap(),
            want
        );
        assert_eq!(
            hash.contains_rows(&eq, std::slice::from_ref(&probe))
                .unwrap(),
            want
        );
        // Inside the range: stays dense. Outside (both extremes): becomes a hash set again.
        dense
            .insert_rows(&eq, &[col(vec![Some(101), Some(130)])])
            .unwrap();
        assert!(matches!(dense, KeySet::Dense(_)));
        assert_eq!(dense.len(), 128, "101 and 130 were there");
        dense
            .insert_rows(&eq, &[col(vec![Some(i64::MIN), Some(i64::MAX)])])
            .unwrap();
        assert!(matches!(dense, KeySet::Int(_)));
        assert_eq!(dense.len(), 130);
        let want = vec![false, true, true, false, true, true, false, true];
        assert_eq!(
            dense
                .contains_rows(&eq, std::slice::from_ref(&probe))
                .unwrap(),
            want
        );
        // A sparse set stays a hash set; a set spanning all of i64 does not overflow.
        let mut sparse = KeySet::for_pairs(&pairs);
        sparse
            .insert_rows(&eq, &[col(vec![Some(i64::MIN), Some(0), Some(i64::MAX)])])
            .unwrap();
        assert!(matches!(sparse.seal(), KeySet::Int(_)));
        let mut one = KeySet::for_pairs(&pairs);
        one.insert_rows(&eq, &[col(vec![Some(i64::MAX)])]).unwrap();
        let one = one.seal();
        assert!(matches!(one, KeySet::Dense(_)));
        assert_eq!(
            one.contains_rows(&eq, &[col(vec![Some(i64::MAX), Some(i64::MAX - 1)])])
                .unwrap(),
            vec![true, false]
        );
    }

    /// A set presized from the source's range starts as a bitmap when the range is dense and
    /// within budget, reports its bytes once, and turns into a hash set (reporting the difference)
    /// when a value falls outside the range; it always answers as a plain hash set would.
    #[test]
    fn presized_sets_answer_as_hash_sets_and_report_their_bytes() {
        let pairs = [(DataType::Int64, DataType::Int64)];
        let eq = KeyEquality::for_pairs(&pairs).expect("ints compare");
        let col = |v: Vec<Option<i64>>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let keys = col((0..100).map(Some).chain([None]).collect());
        let mut dense = KeySet::presized(&pairs, 0, 99, 100, usize::MAX);
        assert!(matches!(dense, KeySet::Dense(_)));
        assert_eq!(
            dense.insert_rows(&eq, std::slice::from_ref(&keys)).unwrap(),
            16
        );
        assert_eq!(
            dense.insert_rows(&eq, std::slice::from_ref(&keys)).unwrap(),
            0
        );
        assert_eq!(dense.len(), 100);
        let added = dense.insert_rows(&eq, &[col(vec![Some(-5)])]).unwrap();
        assert!(matches!(dense, KeySet::Int(_)));
        assert_eq!(added, 101 * INT_KEY_BYTES - 16);
        let probe = col(vec![Some(-5), Some(-1), Some(0), Some(99), Some(100), None]);
        let want = vec![true, false, true, true, false, false];
        assert_eq!(
            dense
                .contains_rows(&eq, std::slice::from_ref(&probe))
                .unwrap(),
            want
        );
        // Over budget, or a sparse range: the hash form.
        assert!(matches!(
            KeySet::presized(&pairs, 0, 99, 100, 8),
            KeySet::Int(_)
        ));
        assert!(matches!(
            KeySet::presized(&pairs, 0, 1 << 40, 2, usize::MAX),
            KeySet::Int(_)
        ));
        assert!(matches!(
            KeySet::presized(&pairs, i64::MIN, i64::MAX, 2, usize::MAX),
            KeySet::Int(_)
        ));
        // Other key types are not presized.
        let strings = [(DataType::Utf8, DataType::Utf8)];
        assert!(matches!(
            KeySet::presized(&strings, 0, 9, 10, usize::MAX),
            KeySet::Encoded(_)
        ));
    }
}
