//! Property tests: DV codec (bitmap ⇄ file ⇄ inline), z85, stats and action JSON round trips, and
//! decoders never panicking on arbitrary bytes.

use std::collections::BTreeMap;

use delta_rlc_protocol::actions::{parse_commit, serialize_commit, Action, Add, Remove};
use delta_rlc_protocol::dv::{
    decode_bitmap, decode_dv_file_entry, encode_bitmap, encode_dv_file, z85, DvDescriptor,
    DvLocation,
};
use delta_rlc_protocol::stats::FileStats;
use delta_rlc_protocol::table_path::TableRoot;
use proptest::prelude::*;
use roaring::RoaringTreemap;
use serde_json::json;

fn bitmap_strategy() -> impl Strategy<Value = RoaringTreemap> {
    prop_oneof![
        prop::collection::vec(0u64..100_000, 0..200),
        prop::collection::vec(0u64..(1u64 << 40), 0..50),
        (0u64..1_000_000, 0u64..70_000).prop_map(|(s, n)| (s..s + n).collect::<Vec<_>>()),
    ]
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn dv_bitmap_file_inline_round_trip(bm in bitmap_strategy()) {
        let payload = encode_bitmap(&bm).unwrap();
        prop_assert_eq!(&decode_bitmap(&payload).unwrap(), &bm);
        let (file, offsets) = encode_dv_file(&[&payload, &payload]).unwrap();
        for off in offsets {
            let got = decode_dv_file_entry(&file, off as u64, payload.len()).unwrap();
            prop_assert_eq!(&decode_bitmap(got).unwrap(), &bm);
        }
        let inline = DvDescriptor::inline(&payload, bm.len() as i64).unwrap();
        let DvLocation::Inline(bytes) = inline.location().unwrap() else { panic!("not inline") };
        prop_assert_eq!(&bytes, &payload);
    }

    #[test]
    fn z85_round_trip(data in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = z85::encode_padded(&data);
        prop_assert_eq!(text.len() % 5, 0);
        prop_assert_eq!(z85::decode_truncated(&text, data.len()).unwrap(), data);
    }

    #[test]
    fn decoders_never_panic(data in prop::collection::vec(any::<u8>(), 0..400), off in 0u64..500, size in 0usize..500) {
        let _ = decode_bitmap(&data);
        let _ = decode_dv_file_entry(&data, off, size);
        let text = String::from_utf8_lossy(&data).into_owned();
        let _ = z85::decode_truncated(&text, size);
        let _ = parse_commit(0, &data);
        let _ = FileStats::parse(&text);
        let _ = delta_rlc_protocol::schema::StructType::parse(&text);
        let root = TableRoot::parse("file:///t").unwrap();
        if let Ok(rel) = root.resolve(&text) {
            prop_assert!(!rel.split('/').any(|s| s == ".." || s == "." || s.is_empty()));
        }
    }

    #[test]
    fn stats_round_trip(n in proptest::option::of(0i64..1_000_000), lo in any::<i64>(), hi in any::<i64>(), s in "[a-z]{0,40}", nulls in 0i64..100, tight in proptest::option::of(any::<bool>())) {
        let st = FileStats {
            num_records: n,
            min_values: json!({"a": lo, "s": {"x": s}}).as_object().unwrap().clone(),
            max_values: json!({"a": hi}).as_object().unwrap().clone(),
            null_count: json!({"a": nulls}).as_object().unwrap().clone(),
            tight_bounds: tight,
        };
        prop_assert_eq!(FileStats::parse(&st.to_json_string()).unwrap(), st);
    }

    #[test]
    fn action_json_round_trip(path in "[a-z0-9=/_.-]{1,30}", size in 0i64..1<<40, dc in any::<bool>(), pv in proptest::option::of("[a-z0-9]{0,5}"), base in proptest::option::of(0i64..1000), card in 0i64..100, extra in "[a-z]{1,8}") {
        let mut pvs = BTreeMap::new();
        pvs.insert("p".to_string(), pv.clone());
        let mut extra_map = serde_json::Map::new();
        extra_map.insert(format!("x_{extra}"), json!({"k": [1, 2]}));
        let add = Add {
            path: path.clone(),
            partition_values: pvs.clone(),
            size,
            modification_time: 5,
            data_change: dc,
            stats: Some("{\"numRecords\":3}".into()),
            tags: None,
            deletion_vector: Some(Box::new(DvDescriptor::inline(&[1, 2, 3, 4, 5], card).unwrap())),
            base_row_id: base,
            default_row_commit_version: base,
            clustering_provider: None,
            extra: extra_map.into(),
        };
        let rm = Remove {
            path,
            deletion_timestamp: Some(7),
            data_change: dc,
            extended_file_metadata: Some(true),
            partition_values: Some(pvs),
            size: Some(size),
            stats: None,
            tags: None,
            deletion_vector: None,
            base_row_id: base,
            default_row_commit_version: None,
            extra: Default::default(),
        };
        let actions = vec![Action::Add(add), Action::Remove(rm)];
        let bytes = serialize_commit(&actions).unwrap();
        prop_assert_eq!(parse_commit(1, &bytes).unwrap(), actions);
    }
}
