//! Per-file statistics (`add.stats`): numRecords, minValues, maxValues, nullCount, tightBounds.
//!
//! Values stay JSON (nested objects mirror the schema); the engine converts them to typed bounds per
//! column. Wide bounds (`tightBounds=false`) are still valid bounds; `nullCount` is then informative
//! only at 0 or numRecords.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ProtocolError, Result};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStats {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_records: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "de_map"
    )]
    pub min_values: Map<String, Value>,
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "de_map"
    )]
    pub max_values: Map<String, Value>,
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "de_map"
    )]
    pub null_count: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tight_bounds: Option<bool>,
}

/// [`FileStats`] with the bound maps checked (an object or null, as [`de_map`] accepts) but not
/// kept.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // the skipped maps are read only to check their shape
struct RecordCount {
    #[serde(default)]
    num_records: Option<i64>,
    #[serde(default)]
    min_values: SkippedMap,
    #[serde(default)]
    max_values: SkippedMap,
    #[serde(default)]
    null_count: SkippedMap,
    #[serde(default)]
    tight_bounds: Option<bool>,
}

/// A JSON object or null, its entries checked as a `Map<String, Value>` would be, then dropped.
#[derive(Default)]
struct SkippedMap;

impl<'de> Deserialize<'de> for SkippedMap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Skip;
        impl<'de> serde::de::Visitor<'de> for Skip {
            type Value = SkippedMap;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_unit<E>(self) -> Result<SkippedMap, E> {
                Ok(SkippedMap)
            }
            fn visit_none<E>(self) -> Result<SkippedMap, E> {
                Ok(SkippedMap)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<SkippedMap, A::Error> {
                // Each value built and dropped, not skipped: skipping would accept what the full
                // parse rejects (a number out of range, a lone surrogate, nesting past the limit).
                while m.next_entry::<String, Value>()?.is_some() {}
                Ok(SkippedMap)
            }
        }
        d.deserialize_any(Skip)
    }
}

fn de_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    let v: Option<Map<String, Value>> = Option::deserialize(d)?;
    Ok(v.unwrap_or_default())
}

impl FileStats {
    pub fn parse(s: &str) -> Result<FileStats> {
        let st: FileStats =
            serde_json::from_str(s).map_err(|e| ProtocolError::Stats(e.to_string()))?;
        if st.num_records.is_some_and(|n| n < 0) {
            return Err(ProtocolError::Stats("negative numRecords".into()));
        }
        Ok(st)
    }

    /// `numRecords` of `s`: exactly `FileStats::parse(s).map(|st| st.num_records)` (the same
    /// JSON and types accepted, the same errors), without keeping the bounds. Every scan of a file
    /// with a DV checks its row count, so this runs once per file per statement.
    pub fn parse_num_records(s: &str) -> Result<Option<i64>> {
        let st: RecordCount =
            serde_json::from_str(s).map_err(|e| ProtocolError::Stats(e.to_string()))?;
        if st.num_records.is_some_and(|n| n < 0) {
            return Err(ProtocolError::Stats("negative numRecords".into()));
        }
        Ok(st.num_records)
    }

    pub fn to_json_string(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }

    /// Bounds are exact unless `tightBounds` is explicitly false.
    pub fn is_tight(&self) -> bool {
        self.tight_bounds.unwrap_or(true)
    }

    fn lookup<'a>(map: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
        let (first, rest) = path.split_first()?;
        let v = map.get(*first)?;
        if rest.is_empty() {
            Some(v)
        } else {
            Self::lookup(v.as_object()?, rest)
        }
    }

    pub fn min(&self, path: &[&str]) -> Option<&Value> {
        Self::lookup(&self.min_values, path).filter(|v| !v.is_null())
    }

    pub fn max(&self, path: &[&str]) -> Option<&Value> {
        Self::lookup(&self.max_values, path).filter(|v| !v.is_null())
    }

    /// The null count if it is informative: always with tight bounds; with wide bounds only when it
    /// says "no valid row is null" (0) or "every row is null" (== numRecords).
    pub fn informative_null_count(&self, path: &[&str]) -> Option<i64> {
        let n = Self::lookup(&self.null_count, path)?.as_i64()?;
        if self.is_tight() || n == 0 || Some(n) == self.num_records {
            Some(n)
        } else {
            None
        }
    }

    /// Makes the bounds wide (what DV-writing DML does to a file's existing stats).
    pub fn widen(&mut self) {
        self.tight_bounds = Some(false);
    }
}

/// Spark's string truncation for stats: a 32-character prefix; a truncated max gets a tie-breaker
/// appended so it stays an upper bound. Returns `None` when no bound can be kept.
pub fn truncate_min_string(s: &str, prefix_len: usize) -> String {
    s.chars().take(prefix_len).collect()
}

pub fn truncate_max_string(s: &str, prefix_len: usize) -> Option<String> {
    if s.chars().count() <= prefix_len {
        return Some(s.to_string());
    }
    let prefix: String = s.chars().take(prefix_len).collect();
    // U+10FFFF is the largest code point, so prefix + U+10FFFF sorts above every string that starts
    // with `prefix` (UTF-8 byte order equals code point order), unless the next character of the
    // original is itself U+10FFFF — then we cannot bound it and drop the max (Spark does the same).
    let next = s.chars().nth(prefix_len)?;
    if next == '\u{10FFFF}' {
        return None;
    }
    Some(format!("{prefix}\u{10FFFF}"))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn parse_nested_and_wide() {
        let s = r#"{"numRecords":10,"minValues":{"a":1,"s":{"x":"b"}},"maxValues":{"a":9,"s":{"x":"q"}},"nullCount":{"a":3,"s":{"x":0}},"tightBounds":false}"#;
        let st = FileStats::parse(s).unwrap();
        assert_eq!(st.min(&["s", "x"]), Some(&Value::String("b".into())));
        assert_eq!(st.informative_null_count(&["a"]), None);
        assert_eq!(st.informative_null_count(&["s", "x"]), Some(0));
        assert_eq!(FileStats::parse(&st.to_json_string()).unwrap(), st);
        assert!(FileStats::parse("{").is_err());
        assert!(FileStats::parse(r#"{"numRecords":-1}"#).is_err());
        // The row count alone: the same answer as the full parse on every input.
        for s in [
            r#"{"numRecords":10,"minValues":{"a":1,"s":{"x":"b"}},"maxValues":{"a":9},"nullCount":{"a":3},"tightBounds":false}"#,
            r#"{"numRecords":7}"#,
            r#"{"minValues":{"a":1}}"#,
            r#"{"numRecords":5,"minValues":null,"other":[1,{"x":2}]}"#,
            r#"{"numRecords":-1}"#,
            r#"{"numRecords":"5"}"#,
            r#"{"numRecords":5,"minValues":3}"#,
            r#"{"numRecords":5,"minValues":[1]}"#,
            r#"{"numRecords":5,"tightBounds":"yes"}"#,
            r#"{"numRecords":5,"numRecords":6}"#,
            r#"{"numRecords":5"#,
            r#"{"numRecords":5,"minValues":{"a":1e400}}"#,
            r#"{"numRecords":5,"minValues":{"a":"\ud800"}}"#,
            "[]",
            "",
        ] {
            let full = FileStats::parse(s).map(|st| st.num_records).ok();
            assert_eq!(FileStats::parse_num_records(s).ok(), full, "{s}");
        }
        let deep = format!(
            r#"{{"numRecords":5,"maxValues":{{"a":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(FileStats::parse(&deep).is_err());
        assert!(FileStats::parse_num_records(&deep).is_err());
        for bad in [
            r#"{"numRecords":5,"minValues":{"a":1e400}}"#,
            r#"{"numRecords":5,"minValues":{"a":"\ud800"}}"#,
        ] {
            assert!(FileStats::parse_num_records(bad).is_err(), "{bad}");
        }
        assert_eq!(
            FileStats::parse_num_records(r#"{"numRecords":7}"#).unwrap(),
            Some(7)
        );
    }

    #[test]
    fn truncation_bounds() {
        let long = "a".repeat(40);
        let max = truncate_max_string(&long, 32).unwrap();
        assert!(max.as_str() > long.as_str());
        assert!(truncate_min_string(&long, 32).as_str() <= long.as_str());
        assert_eq!(truncate_max_string("short", 32).unwrap(), "short");
    }
}
