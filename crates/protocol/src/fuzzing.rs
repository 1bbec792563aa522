//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the corpus replay test. Each must
//! return without panicking and without allocating in proportion to a length field, whatever the
//! input.

use crate::dv::{decode_bitmap, decode_dv_file_entry, z85, DvDescriptor};
use crate::partition::parse_partition_value;
use crate::schema::PrimitiveType;
use crate::stats::FileStats;
use crate::table_path::TableRoot;

pub fn dv_decode(data: &[u8]) {
    let _ = decode_bitmap(data);
    if let Some((head, rest)) = data.split_first() {
        let _ = decode_dv_file_entry(rest, u64::from(*head), usize::from(*head) * 4);
    }
    let text = String::from_utf8_lossy(data);
    let _ = z85::decode_truncated(&text, data.len());
    let d = DvDescriptor {
        storage_type: "u".into(),
        path_or_inline_dv: text.into_owned(),
        offset: Some(1),
        size_in_bytes: 4,
        cardinality: 1,
        max_row_index: None,
    };
    let _ = d.location();
}

pub fn commit_json(data: &[u8]) {
    let _ = crate::actions::parse_commit(0, data);
}

pub fn stats_json(data: &[u8]) {
    let _ = FileStats::parse(&String::from_utf8_lossy(data));
}

pub fn partition_value(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    for ty in [
        PrimitiveType::Long,
        PrimitiveType::Double,
        PrimitiveType::Date,
        PrimitiveType::Timestamp,
        PrimitiveType::Boolean,
        PrimitiveType::Decimal {
            precision: 38,
            scale: 10,
        },
    ] {
        let _ = parse_partition_value("p", &ty, Some(&s));
    }
}

pub fn path_resolve(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    if let Ok(root) = TableRoot::parse("s3://bucket/table") {
        if let Ok(rel) = root.resolve(&s) {
            assert!(
                !rel.split('/')
                    .any(|seg| seg.is_empty() || seg == "." || seg == ".."),
                "escape: {rel:?}"
            );
        }
    }
}

pub fn log_listing(data: &[u8]) {
    for name in String::from_utf8_lossy(data).split('\n') {
        let _ = crate::log_path::parse_log_file_name(name);
    }
}
