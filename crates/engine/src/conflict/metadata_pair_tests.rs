//! Unit tests of `metadata_pair.rs` (re-application of one metadata change on another).
use super::*;

/// What a statement changing `base` into `ours` names (its diff).
fn intent(base: &Metadata, ours: &Metadata) -> MetadataIntent {
    let (b, o) = (
        StructType::parse(&base.schema_string).unwrap(),
        StructType::parse(&ours.schema_string).unwrap(),
    );
    MetadataIntent {
        keys: changed_keys(&base.configuration, &ours.configuration)
            .into_iter()
            .filter(|k| k != MAX_ID_KEY)
            .collect(),
        new_columns: o
            .fields
            .iter()
            .skip(b.fields.len())
            .map(|f| f.name.clone())
            .collect(),
        columns: Default::default(),
        name: base.name != ours.name,
        description: base.description != ours.description,
    }
}

fn meta(schema: &str, config: &[(&str, &str)]) -> Metadata {
    Metadata {
        id: "t".into(),
        name: None,
        description: None,
        format: Default::default(),
        schema_string: schema.into(),
        partition_columns: Vec::new(),
        created_time: None,
        configuration: config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        extra: Default::default(),
    }
}

fn field(name: &str, ty: &str, extra: &str) -> String {
    format!(r#"{{"name":"{name}","type":"{ty}","nullable":true,"metadata":{{{extra}}}}}"#)
}

fn schema(fields: &[String]) -> String {
    format!(r#"{{"type":"struct","fields":[{}]}}"#, fields.join(","))
}

fn mapped(name: &str, id: i64, ty: &str) -> String {
    field(
        name,
        ty,
        &format!(
            r#""delta.columnMapping.id":{id},"delta.columnMapping.physicalName":"col-{name}""#
        ),
    )
}

#[test]
fn mapped_new_column_takes_an_id_above_the_winners() {
    fn cm(max: &str) -> Vec<(&str, &str)> {
        vec![(MODE_KEY, "name"), (MAX_ID_KEY, max)]
    }
    let base = meta(&schema(&[mapped("a", 1, "long")]), &cm("1"));
    let winner = meta(
        &schema(&[mapped("a", 1, "long"), mapped("b", 2, "long")]),
        &cm("2"),
    );
    let ours = meta(
        &schema(&[mapped("a", 1, "long"), mapped("c", 2, "long")]),
        &cm("2"),
    );
    // The winner added two columns (ids 2 and 3), the loser one (id 2): it becomes 4.
    let winner2 = meta(
        &schema(&[
            mapped("a", 1, "long"),
            mapped("b", 2, "long"),
            mapped("d", 3, "long"),
        ]),
        &cm("3"),
    );
    let m2 = rebase_metadata(&base, &winner2, &ours, &intent(&base, &ours))
        .unwrap()
        .metadata
        .unwrap();
    assert_eq!(
        m2.configuration.get(MAX_ID_KEY).map(String::as_str),
        Some("4")
    );
    let s2 = StructType::parse(&m2.schema_string).unwrap();
    let id_of_c = s2.field("c").and_then(|f| f.metadata.get(ID_KEY)?.as_i64());
    assert_eq!(id_of_c, Some(4));
    let r = rebase_metadata(&base, &winner, &ours, &intent(&base, &ours)).unwrap();
    let m = r.metadata.unwrap();
    assert_eq!(
        m.configuration.get(MAX_ID_KEY).map(String::as_str),
        Some("3")
    );
    let s = StructType::parse(&m.schema_string).unwrap();
    let ids: Vec<_> = s
        .fields
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                f.metadata.get(ID_KEY).and_then(|v| v.as_i64()),
            )
        })
        .collect();
    assert_eq!(
        ids,
        vec![
            ("a".to_string(), Some(1)),
            ("b".to_string(), Some(2)),
            ("c".to_string(), Some(3))
        ]
    );
    // A nested new column has nested ids: declined.
    let nested = meta(
        &schema(&[
            mapped("a", 1, "long"),
            field(
                "s",
                r#"{"type":"struct","fields":[]}"#,
                r#""delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-s""#,
            ),
        ])
        .replace(
            r#""type":"{"type":"struct","fields":[]}""#,
            r#""type":{"type":"struct","fields":[]}"#,
        ),
        &cm("2"),
    );
    assert!(rebase_metadata(&base, &winner, &nested, &intent(&base, &nested)).is_err());
    // A physical name the winner holds: declined.
    let taken = meta(
        &schema(&[
            mapped("a", 1, "long"),
            mapped("b2", 2, "long").replace("col-b2", "col-b"),
        ]),
        &cm("2"),
    );
    assert!(rebase_metadata(&base, &winner, &taken, &intent(&base, &taken)).is_err());
}

#[test]
fn declines_what_it_cannot_re_apply() {
    let base = meta(
        &schema(&[field("a", "long", ""), field("b", "long", "")]),
        &[],
    );
    let plus_c = meta(
        &schema(&[
            field("a", "long", ""),
            field("b", "long", ""),
            field("c", "long", ""),
        ]),
        &[],
    );
    let stats = meta(
        &base.schema_string,
        &[("delta.dataSkippingStatsColumns", "a")],
    );
    let renamed = meta(
        &schema(&[field("a", "long", ""), field("z", "long", "")]),
        &[],
    );
    let moved = meta(
        &schema(&[field("b", "long", ""), field("a", "long", "")]),
        &[],
    );
    let unknown = meta(&base.schema_string, &[("delta.somethingNew", "1")]);
    let mode = meta(&base.schema_string, &[(MODE_KEY, "name")]);
    // Stats columns name columns: not combined with a schema change.
    assert!(rebase_metadata(&base, &plus_c, &stats, &intent(&base, &stats)).is_err());
    assert!(rebase_metadata(&base, &stats, &plus_c, &intent(&base, &plus_c)).is_ok());
    // The loser renames or moves a column, or sets an unknown delta key.
    assert!(rebase_metadata(&base, &plus_c, &renamed, &intent(&base, &renamed)).is_err());
    assert!(rebase_metadata(&base, &plus_c, &moved, &intent(&base, &moved)).is_err());
    assert!(rebase_metadata(&base, &plus_c, &unknown, &intent(&base, &unknown)).is_err());
    // The winner changed the column-mapping mode while the loser adds a column.
    assert!(rebase_metadata(&base, &mode, &plus_c, &intent(&base, &plus_c)).is_err());
    // A new NOT NULL column.
    let not_null = meta(
        &plus_c.schema_string.replace(
            r#""c","type":"long","nullable":true"#,
            r#""c","type":"long","nullable":false"#,
        ),
        &[],
    );
    assert!(rebase_metadata(&base, &stats, &not_null, &intent(&base, &not_null)).is_err());
    // Name and description: one side each is fine, both is a conflict.
    let mut named = base.clone();
    named.name = Some("x".into());
    let mut named2 = base.clone();
    named2.name = Some("y".into());
    assert_eq!(
        rebase_metadata(&base, &plus_c, &named, &intent(&base, &named))
            .unwrap()
            .metadata
            .unwrap()
            .name
            .as_deref(),
        Some("x")
    );
    assert!(rebase_metadata(&base, &named2, &named, &intent(&base, &named)).is_err());
}

#[test]
fn a_named_key_is_re_applied_even_when_its_value_did_not_change() {
    let base = meta(&schema(&[field("a", "long", "")]), &[("k", "x")]);
    let winner = meta(&base.schema_string, &[("k", "y")]);
    // SET TBLPROPERTIES ('k' = 'x', 'owner' = 'a') at base: k did not change, but is named.
    let ours = meta(&base.schema_string, &[("k", "x"), ("owner", "a")]);
    let mut named = intent(&base, &ours);
    assert!(rebase_metadata(&base, &winner, &ours, &named).is_ok());
    named.keys.insert("k".into());
    assert!(rebase_metadata(&base, &winner, &ours, &named).is_err());
    // A key changed but not named (a side effect): declined.
    let unnamed = MetadataIntent::default();
    assert!(rebase_metadata(&base, &winner, &ours, &unnamed).is_err());
}

#[test]
fn protocol_features_are_added_to_the_winners() {
    let base = Protocol {
        min_reader_version: 1,
        min_writer_version: 2,
        reader_features: None,
        writer_features: None,
    };
    let winner = base.with_feature("changeDataFeed");
    let ours = base.with_feature("checkConstraints");
    let merged = rebase_protocol(&base, &winner, &ours, &MetadataIntent::default()).unwrap();
    assert!(merged.has_writer_feature("changeDataFeed"));
    assert!(merged.has_writer_feature("checkConstraints"));
    assert!(merged.has_writer_feature("appendOnly"));
    // A feature outside the list (row tracking obliges writers from the moment it is listed).
    let tracked = base.with_feature("rowTracking");
    assert!(rebase_protocol(&base, &winner, &tracked, &MetadataIntent::default()).is_err());
    // A statement naming a protocol version: declined.
    let mut versioned = MetadataIntent::default();
    versioned.keys.insert("Delta.MinWriterVersion".into());
    assert!(rebase_protocol(&base, &winner, &ours, &versioned).is_err());
    // Dropping a feature.
    assert!(rebase_protocol(&winner, &winner, &base, &MetadataIntent::default()).is_err());
}
