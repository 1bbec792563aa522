//! Column paths in ALTER TABLE: `s.a` names field `a` of struct column `s`; inside an array its
//! element is `element`, inside a map its key and value are `key` and `value` (Delta Spark's
//! names: `arr.element.x`, `m.value.y`). Names match case-insensitively, as SQL does.

use delta_rlc_protocol::schema::{DataType, StructField, StructType};

use crate::error::{EngineError, Result};

/// A column path as SQL spells it (`s.a`), for messages.
pub fn display(path: &[String]) -> String {
    path.join(".")
}

/// The struct that holds the field at `path` (every segment but the last), descending through
/// struct fields, array elements and map keys and values.
pub fn parent_struct_mut<'a>(
    schema: &'a mut StructType,
    path: &[String],
) -> Result<&'a mut StructType> {
    let Some((_, parents)) = path.split_last() else {
        return Err(EngineError::invalid("an empty column path"));
    };
    let mut st = schema;
    let mut i = 0;
    while i < parents.len() {
        let name = &parents[i];
        let Some(f) = st
            .fields
            .iter_mut()
            .find(|f| f.name.eq_ignore_ascii_case(name))
        else {
            return Err(EngineError::invalid(format!(
                "no column {}",
                display(&path[..=i])
            )));
        };
        i += 1;
        let mut t = &mut f.data_type;
        st = loop {
            let next = parents.get(i).map(|s| s.to_ascii_lowercase());
            t = match (t, next.as_deref()) {
                (DataType::Struct(inner), _) => break inner,
                (DataType::Array { element, .. }, Some("element")) => element,
                (DataType::Map { key, .. }, Some("key")) => key,
                (DataType::Map { value, .. }, Some("value")) => value,
                _ => {
                    return Err(EngineError::invalid(format!(
                        "{} has no field {}",
                        display(&path[..i]),
                        path.get(i).map_or("", String::as_str)
                    )))
                }
            };
            i += 1;
        };
    }
    Ok(st)
}

/// The field at `path`.
pub fn field_mut<'a>(schema: &'a mut StructType, path: &[String]) -> Result<&'a mut StructField> {
    let parent = parent_struct_mut(schema, path)?;
    let last = path.last().map_or("", String::as_str);
    parent
        .fields
        .iter_mut()
        .find(|f| f.name.eq_ignore_ascii_case(last))
        .ok_or_else(|| EngineError::invalid(format!("no column {}", display(path))))
}

/// Whether `path` descends only through struct fields (no array element or map key/value).
pub fn through_structs_only(schema: &StructType, path: &[String]) -> bool {
    let mut st = schema;
    for (i, name) in path.iter().enumerate() {
        let Some(f) = st.fields.iter().find(|f| f.name.eq_ignore_ascii_case(name)) else {
            return false;
        };
        if i + 1 == path.len() {
            return true;
        }
        match &f.data_type {
            DataType::Struct(inner) => st = inner,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Vec<String> {
        s.split('.').map(str::to_string).collect()
    }

    fn schema() -> StructType {
        StructType::parse(
            r#"{"type":"struct","fields":[
              {"name":"id","type":"long","nullable":true,"metadata":{}},
              {"name":"s","type":{"type":"struct","fields":[
                {"name":"a","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
              {"name":"arr","type":{"type":"array","elementType":{"type":"struct","fields":[
                {"name":"x","type":"integer","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},
              {"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[
                {"name":"y","type":"integer","nullable":true,"metadata":{}}]},"valueContainsNull":true},"nullable":true,"metadata":{}}
            ]}"#,
        )
        .unwrap()
    }

    #[test]
    fn paths_descend_through_structs_arrays_and_maps() {
        let mut s = schema();
        assert_eq!(field_mut(&mut s, &path("S.A")).unwrap().name, "a");
        assert_eq!(field_mut(&mut s, &path("arr.element.x")).unwrap().name, "x");
        assert_eq!(field_mut(&mut s, &path("m.value.y")).unwrap().name, "y");
        assert_eq!(field_mut(&mut s, &path("id")).unwrap().name, "id");
        assert!(through_structs_only(&s, &path("s.a")));
        assert!(!through_structs_only(&s, &path("arr.element.x")));
    }

    #[test]
    fn bad_paths_are_errors() {
        let mut s = schema();
        for p in ["s.b", "nope.a", "id.a", "arr.x", "m.key.y", "s.a.b", ""] {
            let e = field_mut(&mut s, &path(p)).unwrap_err();
            assert!(matches!(e, EngineError::InvalidArgument(_)), "{p}: {e}");
        }
    }
}
