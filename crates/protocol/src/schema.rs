//! The Delta table schema (`metaData.schemaString`): Spark's JSON schema format.

use serde_json::{json, Map, Value};

use crate::error::{ProtocolError, Result};

/// Identity column field metadata (the protocol's "Identity Columns").
pub const IDENTITY_START_KEY: &str = "delta.identity.start";
pub const IDENTITY_STEP_KEY: &str = "delta.identity.step";
pub const IDENTITY_HIGH_WATER_MARK_KEY: &str = "delta.identity.highWaterMark";
pub const IDENTITY_ALLOW_EXPLICIT_INSERT_KEY: &str = "delta.identity.allowExplicitInsert";
/// The prefix every identity column metadata key shares.
pub const IDENTITY_KEY_PREFIX: &str = "delta.identity.";
/// Generated column field metadata (the protocol's "Generated Columns"): the Spark SQL expression.
pub const GENERATION_EXPRESSION_KEY: &str = "delta.generationExpression";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrimitiveType {
    String,
    Long,
    Integer,
    Short,
    Byte,
    Float,
    Double,
    Boolean,
    Binary,
    Date,
    Timestamp,
    TimestampNtz,
    Decimal {
        precision: u8,
        scale: i8,
    },
    /// `variant` (`variantType`): read as JSON text; tables with one are not written.
    Variant,
    /// `void`: a column of NULLs that data files do not store.
    Void,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DataType {
    Primitive(PrimitiveType),
    Array {
        element: Box<DataType>,
        contains_null: bool,
    },
    Map {
        key: Box<DataType>,
        value: Box<DataType>,
        value_contains_null: bool,
    },
    Struct(StructType),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructField {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    pub metadata: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructType {
    pub fields: Vec<StructField>,
}

fn err(msg: impl Into<String>) -> ProtocolError {
    ProtocolError::Schema(msg.into())
}

impl PrimitiveType {
    pub fn name(&self) -> String {
        match self {
            PrimitiveType::String => "string".into(),
            PrimitiveType::Long => "long".into(),
            PrimitiveType::Integer => "integer".into(),
            PrimitiveType::Short => "short".into(),
            PrimitiveType::Byte => "byte".into(),
            PrimitiveType::Float => "float".into(),
            PrimitiveType::Double => "double".into(),
            PrimitiveType::Boolean => "boolean".into(),
            PrimitiveType::Binary => "binary".into(),
            PrimitiveType::Date => "date".into(),
            PrimitiveType::Timestamp => "timestamp".into(),
            PrimitiveType::TimestampNtz => "timestamp_ntz".into(),
            PrimitiveType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            PrimitiveType::Variant => "variant".into(),
            PrimitiveType::Void => "void".into(),
        }
    }

    pub fn parse(s: &str) -> Result<PrimitiveType> {
        Ok(match s {
            "string" => PrimitiveType::String,
            "long" => PrimitiveType::Long,
            "integer" => PrimitiveType::Integer,
            "short" => PrimitiveType::Short,
            "byte" => PrimitiveType::Byte,
            "float" => PrimitiveType::Float,
            "double" => PrimitiveType::Double,
            "boolean" => PrimitiveType::Boolean,
            "binary" => PrimitiveType::Binary,
            "date" => PrimitiveType::Date,
            "timestamp" => PrimitiveType::Timestamp,
            "timestamp_ntz" => PrimitiveType::TimestampNtz,
            "variant" => PrimitiveType::Variant,
            "void" => PrimitiveType::Void,
            "decimal" => PrimitiveType::Decimal {
                precision: 10,
                scale: 0,
            },
            other => {
                let inner = other
                    .strip_prefix("decimal(")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| err(format!("unsupported type {other:?}")))?;
                let (p, s) = inner
                    .split_once(',')
                    .ok_or_else(|| err(format!("bad decimal {other:?}")))?;
                let precision: u8 = p
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("bad decimal {other:?}")))?;
                let scale: i8 = s
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("bad decimal {other:?}")))?;
                if precision == 0 || precision > 38 || scale < 0 || scale as u8 > precision {
                    return Err(err(format!("decimal out of range {other:?}")));
                }
                PrimitiveType::Decimal { precision, scale }
            }
        })
    }
}

impl DataType {
    /// The type as one line, in the log's type names with Spark's `<>` nesting:
    /// `array<long>`, `map<string,variant>`, `struct<a:integer,b:array<string>>`.
    pub fn type_text(&self) -> String {
        match self {
            DataType::Primitive(p) => p.name(),
            DataType::Array { element, .. } => format!("array<{}>", element.type_text()),
            DataType::Map { key, value, .. } => {
                format!("map<{},{}>", key.type_text(), value.type_text())
            }
            DataType::Struct(st) => format!(
                "struct<{}>",
                st.fields
                    .iter()
                    .map(|f| format!("{}:{}", f.name, f.data_type.type_text()))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }

    fn from_json(v: &Value) -> Result<DataType> {
        match v {
            Value::String(s) => Ok(DataType::Primitive(PrimitiveType::parse(s)?)),
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("struct") => Ok(DataType::Struct(StructType::from_json(v)?)),
                Some("array") => Ok(DataType::Array {
                    element: Box::new(DataType::from_json(
                        o.get("elementType")
                            .ok_or_else(|| err("array without elementType"))?,
                    )?),
                    contains_null: o
                        .get("containsNull")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                }),
                Some("map") => Ok(DataType::Map {
                    key: Box::new(DataType::from_json(
                        o.get("keyType").ok_or_else(|| err("map without keyType"))?,
                    )?),
                    value: Box::new(DataType::from_json(
                        o.get("valueType")
                            .ok_or_else(|| err("map without valueType"))?,
                    )?),
                    value_contains_null: o
                        .get("valueContainsNull")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                }),
                other => Err(err(format!("unsupported complex type {other:?}"))),
            },
            _ => Err(err("a type must be a string or an object")),
        }
    }

    /// Whether this type is, or nests, a primitive type `pred` selects.
    pub fn any_primitive(&self, pred: &dyn Fn(&PrimitiveType) -> bool) -> bool {
        match self {
            DataType::Primitive(p) => pred(p),
            DataType::Array { element, .. } => element.any_primitive(pred),
            DataType::Map { key, value, .. } => {
                key.any_primitive(pred) || value.any_primitive(pred)
            }
            DataType::Struct(s) => s.fields.iter().any(|f| f.data_type.any_primitive(pred)),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            DataType::Primitive(p) => Value::String(p.name()),
            DataType::Array {
                element,
                contains_null,
            } => json!({
                "type": "array", "elementType": element.to_json(), "containsNull": contains_null
            }),
            DataType::Map {
                key,
                value,
                value_contains_null,
            } => json!({
                "type": "map", "keyType": key.to_json(), "valueType": value.to_json(),
                "valueContainsNull": value_contains_null
            }),
            DataType::Struct(s) => s.to_json(),
        }
    }
}

impl StructType {
    /// The table features its column types need, at any depth (a struct's field, a list's
    /// element, a map's key or value): `timestampNtz` for TIMESTAMP_NTZ, `variantType` for
    /// VARIANT. A table holding such a column must list them, or readers that do not know the
    /// type would misread it.
    pub fn type_features(&self) -> Vec<&'static str> {
        fn walk(t: &DataType, out: &mut Vec<&'static str>) {
            match t {
                DataType::Primitive(PrimitiveType::TimestampNtz) => out.push("timestampNtz"),
                DataType::Primitive(PrimitiveType::Variant) => out.push("variantType"),
                DataType::Primitive(_) => {}
                DataType::Struct(st) => st.fields.iter().for_each(|f| walk(&f.data_type, out)),
                DataType::Array { element, .. } => walk(element, out),
                DataType::Map { key, value, .. } => {
                    walk(key, out);
                    walk(value, out);
                }
            }
        }
        let mut out = Vec::new();
        for f in &self.fields {
            walk(&f.data_type, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    pub fn parse(schema_string: &str) -> Result<StructType> {
        let v: Value = serde_json::from_str(schema_string).map_err(|e| err(e.to_string()))?;
        StructType::from_json(&v)
    }

    fn from_json(v: &Value) -> Result<StructType> {
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| err("struct without fields"))?;
        let mut out = Vec::with_capacity(fields.len().min(10_000));
        for f in fields {
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| err("field without name"))?
                .to_string();
            let data_type =
                DataType::from_json(f.get("type").ok_or_else(|| err("field without type"))?)
                    .map_err(|e| err(format!("field {name:?}: {e}")))?;
            let nullable = f.get("nullable").and_then(Value::as_bool).unwrap_or(true);
            let metadata = f
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            out.push(StructField {
                name,
                data_type,
                nullable,
                metadata,
            });
        }
        Ok(StructType { fields: out })
    }

    pub fn to_json(&self) -> Value {
        let fields: Vec<Value> = self
            .fields
            .iter()
            .map(|f| {
                json!({"name": f.name, "type": f.data_type.to_json(), "nullable": f.nullable,
                       "metadata": Value::Object(f.metadata.clone())})
            })
            .collect();
        json!({"type": "struct", "fields": fields})
    }

    pub fn to_schema_string(&self) -> String {
        self.to_json().to_string()
    }

    pub fn field(&self, name: &str) -> Option<&StructField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let s = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"d","type":"decimal(10,2)","nullable":false,"metadata":{}},{"name":"a","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}},{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}"#;
        let st = StructType::parse(s).unwrap();
        assert_eq!(st.fields.len(), 4);
        assert_eq!(StructType::parse(&st.to_schema_string()).unwrap(), st);
        let v = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}},{"name":"n","type":"void","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        assert_eq!(StructType::parse(&v.to_schema_string()).unwrap(), v);
        assert!(StructType::parse(
            r#"{"type":"struct","fields":[{"name":"v","type":"geometry"}]}"#
        )
        .is_err());
        let texts: Vec<String> = st.fields.iter().map(|f| f.data_type.type_text()).collect();
        assert_eq!(
            texts,
            [
                "long",
                "decimal(10,2)",
                "array<string>",
                "struct<x:integer>"
            ]
        );
    }

    #[test]
    fn type_features_look_inside_nested_types() {
        let v = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        assert_eq!(v.type_features(), vec!["variantType"]);
        let nested = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}},{"name":"v","type":"variant","nullable":true,"metadata":{}}]},"containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{}},{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        assert_eq!(nested.type_features(), vec!["timestampNtz", "variantType"]);
        let plain = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"t","type":"timestamp","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        assert!(plain.type_features().is_empty());
    }
}
