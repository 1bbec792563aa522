//! A winner that turned column mapping on (`delta.columnMapping.mode` from none to `name`) against
//! a loser that changes no metadata: reconciled when the winner named every existing column as it
//! is — the physical name of each column and nested field equals its name, and it carries a
//! column id — which is what this engine (`ALTER … SET TBLPROPERTIES`) and Delta Spark write when
//! they upgrade a table.
//!
//! **What it proves.** In name mode a reader finds a column in a file by its physical name, and
//! stats and partition values are keyed by physical names. The loser planned and wrote without
//! mapping: its files, stats and partition values use the logical names — the physical names the
//! winner declared. So every file the loser adds reads back exactly under the new metadata, its
//! predicates name the same logical columns, and nothing else of the metadata changed (checked by
//! the metadata-change rules on the schema without the mapping keys).
//!
//! **Declines:** id mode (files written without field ids cannot be read by id); a physical name
//! that differs from the name (even by case), a missing id, or any other key added to an existing
//! field; the mode changed in any other way (a conflict in `metadata_change`).

use delta_rlc_protocol::actions::Metadata;
use delta_rlc_protocol::column_mapping::{ID_KEY, MODE_KEY, PHYSICAL_NAME_KEY};
use delta_rlc_protocol::schema::{DataType, StructField, StructType};

/// The new schema with the mapping keys removed from every field that existed before, when the
/// change from `old` to `new` turns name mapping on and names every existing field as it is;
/// None otherwise (no upgrade, or one this does not prove).
pub fn stripped_if_proven(
    old: &Metadata,
    new: &Metadata,
    old_schema: &StructType,
    new_schema: &StructType,
) -> Option<StructType> {
    let mode = |m: &Metadata| {
        m.configuration
            .get(MODE_KEY)
            .map(|v| v.to_ascii_lowercase())
    };
    let was_off = mode(old).is_none_or(|m| m == "none");
    if !was_off || mode(new).as_deref() != Some("name") {
        return None;
    }
    strip_struct(old_schema, new_schema)
}

fn strip_struct(old: &StructType, new: &StructType) -> Option<StructType> {
    let mut out = new.clone();
    for f in &mut out.fields {
        if let Some(o) = old.fields.iter().find(|o| o.name == f.name) {
            strip_field(o, f)?;
        }
    }
    Some(out)
}

/// Removes the mapping keys of `new` (the same field as `old`) after checking them.
fn strip_field(old: &StructField, new: &mut StructField) -> Option<()> {
    let physical = new.metadata.get(PHYSICAL_NAME_KEY)?.as_str()?;
    if physical != new.name || !new.metadata.get(ID_KEY)?.is_i64() {
        return None;
    }
    new.metadata.remove(PHYSICAL_NAME_KEY);
    new.metadata.remove(ID_KEY);
    strip_type(&old.data_type, &mut new.data_type)
}

fn strip_type(old: &DataType, new: &mut DataType) -> Option<()> {
    match (old, new) {
        (DataType::Struct(o), DataType::Struct(n)) => {
            *n = strip_struct(o, n)?;
            Some(())
        }
        (DataType::Array { element: o, .. }, DataType::Array { element: n, .. }) => {
            strip_type(o, n)
        }
        (
            DataType::Map {
                key: ok, value: ov, ..
            },
            DataType::Map {
                key: nk, value: nv, ..
            },
        ) => {
            strip_type(ok, nk)?;
            strip_type(ov, nv)
        }
        // A primitive, or a type the other side changed (compared by the caller).
        _ => Some(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(mode: Option<&str>) -> Metadata {
        let mut m: Metadata = serde_json::from_value(serde_json::json!({
            "id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": "", "partitionColumns": [], "configuration": {}
        }))
        .unwrap();
        if let Some(mode) = mode {
            m.configuration.insert(MODE_KEY.into(), mode.into());
        }
        m
    }

    fn schema(json: &str) -> StructType {
        StructType::parse(json).unwrap()
    }

    const OLD: &str = r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}"#;

    fn mapped(x_physical: &str) -> String {
        format!(
            r#"{{"type":"struct","fields":[{{"name":"a","type":"long","nullable":true,"metadata":{{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"a"}}}},{{"name":"s","type":{{"type":"struct","fields":[{{"name":"x","type":"long","nullable":true,"metadata":{{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"{x_physical}"}}}}]}},"nullable":true,"metadata":{{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"s"}}}}]}}"#
        )
    }

    #[test]
    fn proven_only_for_name_mode_with_every_name_kept() {
        let old = schema(OLD);
        let ok = schema(&mapped("x"));
        let stripped = stripped_if_proven(&meta(None), &meta(Some("name")), &old, &ok);
        assert_eq!(stripped, Some(old.clone()));
        // A nested field renamed physically: declined.
        let renamed = schema(&mapped("col-x"));
        assert_eq!(
            stripped_if_proven(&meta(None), &meta(Some("name")), &old, &renamed),
            None
        );
        // Id mode, or a table already mapped: declined.
        assert_eq!(
            stripped_if_proven(&meta(None), &meta(Some("id")), &old, &ok),
            None
        );
        assert_eq!(
            stripped_if_proven(&meta(Some("name")), &meta(Some("name")), &old, &ok),
            None
        );
        // From an explicit "none".
        assert!(stripped_if_proven(&meta(Some("none")), &meta(Some("name")), &old, &ok).is_some());
    }
}
