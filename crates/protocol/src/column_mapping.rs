//! Column mapping (`delta.columnMapping.mode` = `none` | `name` | `id`): with a mode other than
//! `none`, every column in the schema carries a physical name (`delta.columnMapping.physicalName`)
//! and an id (`delta.columnMapping.id`). Data files, per-file statistics and partition values name
//! columns by the physical name; the schema's names are only what users see. A column renamed keeps
//! its physical name, so a logical name can equal another column's physical name: a reader must
//! never look a logical name up where physical names are the keys.

use std::collections::BTreeMap;

use crate::error::{ProtocolError, Result};
use crate::schema::{DataType, StructField, StructType};

pub const MODE_KEY: &str = "delta.columnMapping.mode";
pub const PHYSICAL_NAME_KEY: &str = "delta.columnMapping.physicalName";
pub const ID_KEY: &str = "delta.columnMapping.id";
pub const MAX_ID_KEY: &str = "delta.columnMapping.maxColumnId";

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
}
