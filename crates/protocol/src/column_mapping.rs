//! Column mapping (`delta.columnMapping.mode` = `none` | `name` | `id`): with a mode other than
//! `none`, every column in the schema carries a physical name (`delta.columnMapping.physicalName`)
//! and an id (`delta.columnMapping.id`). Data files, per-file statistics and partition values name
//! columns by the physical name; the schema's names are only what users see. A column renamed keeps
//! its physical name, so a logical name can equal another column's physical name: a reader must
//! never look a logical name up where physical names are the keys.

use std::collections::BTreeMap;

use crate::error::{ProtocolError, Result};
use crate::schema::{DataType, StructField, StructType};

pub const MODE_KEY: &str = crate::table_properties::TableProperty::ColumnMappingMode.key();
pub const PHYSICAL_NAME_KEY: &str = "delta.columnMapping.physicalName";
pub const ID_KEY: &str = "delta.columnMapping.id";
pub const MAX_ID_KEY: &str = crate::table_properties::TableProperty::ColumnMappingMaxColumnId.key();

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnMappingMode {
    None,
    Name,
    Id,
}

impl ColumnMappingMode {
    /// The mode a table's configuration sets (`none` when unset); an unknown mode is an error.
    pub fn from_configuration(configuration: &BTreeMap<String, String>) -> Result<Self> {
        match configuration.get(MODE_KEY).map(|s| s.to_ascii_lowercase()) {
            None => Ok(ColumnMappingMode::None),
            Some(m) if m == "none" => Ok(ColumnMappingMode::None),
            Some(m) if m == "name" => Ok(ColumnMappingMode::Name),
            Some(m) if m == "id" => Ok(ColumnMappingMode::Id),
            Some(m) => Err(ProtocolError::Schema(format!(
                "unknown column mapping mode {m:?}"
            ))),
        }
    }
}

/// The name `field` has in data files, statistics and partition values under `mode`.
pub fn physical_name(field: &StructField, mode: ColumnMappingMode) -> Result<&str> {
    match mode {
        ColumnMappingMode::None => Ok(&field.name),
        ColumnMappingMode::Name | ColumnMappingMode::Id => field
            .metadata
            .get(PHYSICAL_NAME_KEY)
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                ProtocolError::Schema(format!(
                    "column {} has no {PHYSICAL_NAME_KEY} under column mapping",
                    field.name
                ))
            }),
    }
}

/// Checks that every column (nested ones too) has a physical name under `mode`, and that no two
/// columns of one struct share one: what readers rely on before mapping names.
pub fn validate(schema: &StructType, mode: ColumnMappingMode) -> Result<()> {
    if mode == ColumnMappingMode::None {
        return Ok(());
    }
    fn walk(st: &StructType, mode: ColumnMappingMode) -> Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for f in &st.fields {
            let p = physical_name(f, mode)?;
            if !seen.insert(p.to_ascii_lowercase()) {
                return Err(ProtocolError::Schema(format!(
                    "two columns share the physical name {p}"
                )));
            }
            walk_type(&f.data_type, mode)?;
        }
        Ok(())
    }
    fn walk_type(t: &DataType, mode: ColumnMappingMode) -> Result<()> {
        match t {
            DataType::Primitive(_) => Ok(()),
            DataType::Struct(st) => walk(st, mode),
            DataType::Array { element, .. } => walk_type(element, mode),
            DataType::Map { key, value, .. } => {
                walk_type(key, mode)?;
                walk_type(value, mode)
            }
        }
    }
    walk(schema, mode)
}

/// Gives every column (nested ones too) that has none a column id (counting up from `max_id`) and a
/// physical name `col-<uuid>` (from `uuid`), as Delta Spark names new columns. Returns the new
/// largest id (`delta.columnMapping.maxColumnId`).
pub fn assign_physical_names(
    schema: &mut StructType,
    max_id: i64,
    uuid: &mut dyn FnMut() -> String,
) -> i64 {
    fn walk(st: &mut StructType, next: &mut i64, uuid: &mut dyn FnMut() -> String) {
        for f in &mut st.fields {
            if !f.metadata.contains_key(PHYSICAL_NAME_KEY) {
                *next += 1;
                f.metadata.insert(ID_KEY.into(), serde_json::json!(*next));
                f.metadata.insert(
                    PHYSICAL_NAME_KEY.into(),
                    serde_json::json!(format!("col-{}", uuid())),
                );
            }
            walk_type(&mut f.data_type, next, uuid);
        }
    }
    fn walk_type(t: &mut DataType, next: &mut i64, uuid: &mut dyn FnMut() -> String) {
        match t {
            DataType::Primitive(_) => {}
            DataType::Struct(st) => walk(st, next, uuid),
            DataType::Array { element, .. } => walk_type(element, next, uuid),
            DataType::Map { key, value, .. } => {
                walk_type(key, next, uuid);
                walk_type(value, next, uuid);
            }
        }
    }
    let mut next = max_id;
    walk(schema, &mut next, uuid);
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str, physical: Option<&str>) -> StructField {
        let mut metadata = serde_json::Map::new();
        if let Some(p) = physical {
            metadata.insert(PHYSICAL_NAME_KEY.into(), json!(p));
        }
        StructField {
            name: name.into(),
            data_type: DataType::Primitive(crate::schema::PrimitiveType::Long),
            nullable: true,
            metadata,
        }
    }

    #[test]
    fn modes_and_physical_names() {
        let mut conf = BTreeMap::new();
        assert_eq!(
            ColumnMappingMode::from_configuration(&conf).ok(),
            Some(ColumnMappingMode::None)
        );
        conf.insert(MODE_KEY.to_string(), "Name".to_string());
        assert_eq!(
            ColumnMappingMode::from_configuration(&conf).ok(),
            Some(ColumnMappingMode::Name)
        );
        conf.insert(MODE_KEY.to_string(), "id".to_string());
        assert_eq!(
            ColumnMappingMode::from_configuration(&conf).ok(),
            Some(ColumnMappingMode::Id)
        );
        conf.insert(MODE_KEY.to_string(), "fancy".to_string());
        assert!(ColumnMappingMode::from_configuration(&conf).is_err());

        let renamed = field("b", Some("a"));
        assert_eq!(
            physical_name(&renamed, ColumnMappingMode::None).ok(),
            Some("b")
        );
        assert_eq!(
            physical_name(&renamed, ColumnMappingMode::Name).ok(),
            Some("a")
        );
        assert!(physical_name(&field("c", None), ColumnMappingMode::Id).is_err());

        let ok = StructType {
            fields: vec![field("a", Some("col-1")), field("b", Some("a"))],
        };
        assert!(validate(&ok, ColumnMappingMode::Name).is_ok());
        let clash = StructType {
            fields: vec![field("a", Some("x")), field("b", Some("X"))],
        };
        assert!(validate(&clash, ColumnMappingMode::Name).is_err());
        let missing = StructType {
            fields: vec![field("a", None)],
        };
        assert!(validate(&missing, ColumnMappingMode::Name).is_err());
        assert!(validate(&missing, ColumnMappingMode::None).is_ok());
    }

    #[test]
    fn new_columns_get_ids_and_physical_names_nested_too() {
        let inner = StructType {
            fields: vec![field("x", None)],
        };
        let mut schema = StructType {
            fields: vec![
                field("kept", Some("col-old")),
                StructField {
                    data_type: DataType::Struct(inner),
                    ..field("s", None)
                },
            ],
        };
        let mut n = 0;
        let max = assign_physical_names(&mut schema, 3, &mut || {
            n += 1;
            format!("u{n}")
        });
        assert_eq!(max, 5);
        assert_eq!(
            physical_name(&schema.fields[0], ColumnMappingMode::Name).ok(),
            Some("col-old")
        );
        assert_eq!(
            physical_name(&schema.fields[1], ColumnMappingMode::Name).ok(),
            Some("col-u1")
        );
        let DataType::Struct(st) = &schema.fields[1].data_type else {
            panic!("struct")
        };
        assert_eq!(
            physical_name(&st.fields[0], ColumnMappingMode::Id).ok(),
            Some("col-u2")
        );
        assert_eq!(st.fields[0].metadata.get(ID_KEY), Some(&json!(5)));
        assert!(validate(&schema, ColumnMappingMode::Name).is_ok());
    }
}
