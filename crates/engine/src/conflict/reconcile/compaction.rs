//! Compaction tags on a source's `remove` (Databricks' layout, which our OPTIMIZE writes):
//! `compactedInto` = JSON list with the output path, `compactionInfo` = JSON list of
//! `{rowOffsetInTarget, sourceNumPhysicalRecords[, …]}`. Only a single-run entry is remappable:
//! the source's live rows landed contiguously, in order, starting at `rowOffsetInTarget`. Unknown
//! fields are tolerated; anything else (several entries, malformed JSON, missing tags, an output
//! outside the root) is "not remappable".

use delta_rlc_protocol::actions::Remove;
use delta_rlc_protocol::dv::DvDescriptor;
use delta_rlc_protocol::table_path::TableRoot;
use roaring::RoaringTreemap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composition {
    /// Output path, decoded and relative to the root.
    pub output: String,
    pub row_offset: u64,
    pub physical_records: u64,
    /// `sourceDeletionVector`: the DV the compaction applied to this source. `None` when the tag
    /// does not say (then the tombstone's own DV is the read-time DV, as long as nobody re-pointed
    /// it); `Some(None)` when the source had no DV.
    pub read_dv: Option<Option<DvDescriptor>>,
}

pub fn parse(rm: &Remove, root: &TableRoot) -> Option<Composition> {
    let tags = rm.tags.as_ref()?;
    let into: Vec<String> = serde_json::from_str(tags.get("compactedInto")?.as_deref()?).ok()?;
    let info: Vec<serde_json::Value> =
        serde_json::from_str(tags.get("compactionInfo")?.as_deref()?).ok()?;
    let ([output], [entry]) = (into.as_slice(), info.as_slice()) else {
        return None;
    };
    let row_offset = entry.get("rowOffsetInTarget")?.as_u64()?;
    let physical_records = entry.get("sourceNumPhysicalRecords")?.as_u64()?;
    let read_dv = match entry.get("sourceDeletionVector") {
        None => None,
        Some(serde_json::Value::Null) => Some(None),
        Some(v) => Some(Some(
            serde_json::from_value::<DvDescriptor>(v.clone()).ok()?,
        )),
    };
    Some(Composition {
        output: root.resolve(output).ok()?,
        row_offset,
        physical_records,
        read_dv,
    })
}

/// Maps physical row indexes `rows` of a source (none of them in `read_dv`, the DV the compaction
/// applied) to positions in the output: `row_offset + liveRank`. None if any is out of range.
pub fn remap(c: &Composition, read_dv: &RoaringTreemap, rows: &RoaringTreemap) -> Option<Vec<u64>> {
    let live_count = c.physical_records.checked_sub(read_dv.len())?;
    let mut out = Vec::with_capacity(rows.len() as usize);
    for i in rows.iter() {
        if read_dv.contains(i) || i >= c.physical_records {
            return None;
        }
        // rank(i) counts elements <= i; i is not in read_dv, so this is the count below i.
        let live_rank = i.checked_sub(read_dv.rank(i))?;
        if live_rank >= live_count {
            return None;
        }
        out.push(c.row_offset.checked_add(live_rank)?);
    }
    Some(out)
}

/// The DV the compaction applied to a source: from the tag when recorded, else the tombstone's.
pub fn read_time_dv<'a>(c: &'a Composition, tombstone: &'a Remove) -> Option<&'a DvDescriptor> {
    match &c.read_dv {
        Some(recorded) => recorded.as_ref(),
        None => tombstone.deletion_vector.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn rm(into: &str, info: &str) -> Remove {
        let mut tags = BTreeMap::new();
        tags.insert("compactedInto".to_string(), Some(into.to_string()));
        tags.insert("compactionInfo".to_string(), Some(info.to_string()));
        Remove {
            path: "src.parquet".into(),
            deletion_timestamp: None,
            data_change: false,
            extended_file_metadata: None,
            partition_values: None,
            size: None,
            stats: None,
            tags: Some(tags),
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn parser_accepts_single_runs_and_tolerates_unknown_fields() {
        let root = TableRoot::parse("file:///t").unwrap();
        let c = parse(&rm(r#"["out.parquet"]"#, r#"[{"rowOffsetInTarget":100,"sourceNumPhysicalRecords":90,"sourceDeletionVector":null,"x":1}]"#), &root).unwrap();
        assert_eq!(
            c,
            Composition {
                output: "out.parquet".into(),
                row_offset: 100,
                physical_records: 90,
                read_dv: Some(None)
            }
        );
        assert!(parse(
            &rm(
                r#"["a","b"]"#,
                r#"[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1}]"#
            ),
            &root
        )
        .is_none());
        assert!(parse(&rm(r#"["a"]"#, r#"[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1},{"rowOffsetInTarget":1,"sourceNumPhysicalRecords":1}]"#), &root).is_none());
        assert!(parse(&rm(r#"not json"#, r#"[]"#), &root).is_none());
        assert!(parse(
            &rm(
                r#"["../x"]"#,
                r#"[{"rowOffsetInTarget":0,"sourceNumPhysicalRecords":1}]"#
            ),
            &root
        )
        .is_none());
    }

    #[test]
    fn live_rank_skips_read_time_gaps() {
        let c = Composition {
            output: "o".into(),
            row_offset: 0,
            physical_records: 100,
            read_dv: None,
        };
        let read: RoaringTreemap = [0u64, 1, 5].into_iter().collect();
        let rows: RoaringTreemap = [50u64].into_iter().collect();
        assert_eq!(remap(&c, &read, &rows), Some(vec![47]));
        let c2 = Composition {
            output: "o".into(),
            row_offset: 199,
            physical_records: 100,
            read_dv: None,
        };
        assert_eq!(
            remap(&c2, &RoaringTreemap::new(), &[50u64].into_iter().collect()),
            Some(vec![249])
        );
        assert_eq!(
            remap(&c, &read, &[5u64].into_iter().collect()),
            None,
            "already deleted at read time"
        );
        assert_eq!(
            remap(&c, &read, &[100u64].into_iter().collect()),
            None,
            "out of range"
        );
    }
}
