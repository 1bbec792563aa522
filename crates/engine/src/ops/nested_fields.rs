//! How a struct value's fields meet a struct column's fields when a statement writes it, as Spark
//! assigns them (checked against Spark 4 with Delta on twin tables):
//! - **INSERT** (positional or with a column list; VALUES or a query): nested fields by position.
//!   The value's field names are ignored: `named_struct('b', 1, 'a', 2)` into `STRUCT<a, b>`
//!   stores `a = 1`, and `struct(1, 2)` (fields `col1`, `col2`) is accepted. A different number
//!   of fields is refused (Spark: DELTA_INSERT_COLUMN_ARITY_MISMATCH, or a metadata mismatch).
//!   Except, as in Delta: an INSERT without a column list whose query's columns are named as the
//!   table's, in its order, with the table's types but for the order of struct fields
//!   ([`same_fields_by_name`]), is written by name (`INSERT INTO t SELECT * FROM u`, `u` holding
//!   `STRUCT<b, a>`: Delta's `needsSchemaAdjustmentByOrdinal` is false, and the write is a
//!   DataFrame's; red team helper-51).
//! - **UPDATE, MERGE** (SET and INSERT clauses) and **DataFrame writes** (Rust, Python): by
//!   name, without regard to case, and every field of the column matched by exactly one field
//!   of the value (Spark: "Cannot cast struct<x,y> to struct<a,b>. All nested columns must
//!   match"; deltalake's schema check).
//!
//! Arrays' elements and maps' values follow the same rule; a map's entries are (key, value) by
//! position whatever they are called. Arrow's own struct cast mixes the two rules — by name when
//! every target name exists (dropping the value's other fields), else by position — so a write
//! aligns with [`align`] first and the checked cast (`value_cast::cast_checked`) refuses any
//! struct whose fields still differ from the column's.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, LargeListArray, ListArray, MapArray, StructArray};
use arrow::datatypes::{DataType, Field, FieldRef, Fields};

use crate::error::{EngineError, Result};

/// The rule by which a struct value's fields are matched to a struct column's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NestedFields {
    /// INSERT: the i-th field of the value is the i-th field of the column.
    ByPosition,
    /// UPDATE, MERGE and DataFrame writes: fields matched by name, without regard to case.
    ByName,
    /// A DataFrame write that evolves the schema (deltalake's `schema_mode="merge"`): by name,
    /// and a nullable field of the column the value lacks is NULL (the value may not hold a
    /// field the column lacks: the evolution added those first).
    ByNameFillingMissing,
}

/// `value` with every nested struct's fields named and ordered as `to`'s (leaf types are the
/// value's own; the checked cast converts them). `path` names the column in errors. A value
/// that is not nested, or whose type already equals `to`, is returned as it is.
pub fn align(value: &ArrayRef, to: &DataType, how: NestedFields, path: &str) -> Result<ArrayRef> {
    if value.data_type() == to || !is_nested(value.data_type()) {
        return Ok(Arc::clone(value));
    }
    match (value.data_type(), to) {
        (DataType::Struct(from), DataType::Struct(target)) => {
            let s = value.as_struct();
            let picks = pick_fields(from, target, how, path)?;
            let mut fields = Vec::with_capacity(target.len());
            let mut children = Vec::with_capacity(target.len());
            for (t, i) in target.iter().zip(picks) {
                let child = match i {
                    Some(i) => Arc::clone(s.column(i)),
                    None => arrow::array::new_null_array(t.data_type(), s.len()),
                };
                let child = align(&child, t.data_type(), how, &format!("{path}.{}", t.name()))?;
                fields.push(Field::new(t.name(), child.data_type().clone(), true));
                children.push(child);
            }
            let out = StructArray::try_new(Fields::from(fields), children, s.nulls().cloned())?;
            Ok(Arc::new(out))
        }
        (DataType::List(_), DataType::List(t)) => {
            let l = value.as_list::<i32>();
            let values = align(l.values(), t.data_type(), how, &format!("{path}.element"))?;
            let field = element_field(t, &values);
            let out = ListArray::try_new(field, l.offsets().clone(), values, l.nulls().cloned())?;
            Ok(Arc::new(out))
        }
        (DataType::LargeList(_), DataType::LargeList(t)) => {
            let l = value.as_list::<i64>();
            let values = align(l.values(), t.data_type(), how, &format!("{path}.element"))?;
            let field = element_field(t, &values);
            let out =
                LargeListArray::try_new(field, l.offsets().clone(), values, l.nulls().cloned())?;
            Ok(Arc::new(out))
        }
        (DataType::Map(_, sorted), DataType::Map(t, _)) => {
            // A map's entries are (key, value) by position, whatever each side calls them; the
            // key's and the value's own structs take the statement's rule.
            let m = value.as_map();
            let DataType::Struct(target) = t.data_type() else {
                return Err(EngineError::Internal(format!(
                    "column {path}: a map type without entries"
                )));
            };
            let (Some(kf), Some(vf)) = (target.first(), target.get(1)) else {
                return Err(EngineError::Internal(format!(
                    "column {path}: a map type without key and value"
                )));
            };
            let keys = align(m.keys(), kf.data_type(), how, &format!("{path}.key"))?;
            let values = align(m.values(), vf.data_type(), how, &format!("{path}.value"))?;
            let fields = Fields::from(vec![
                Field::new(kf.name(), keys.data_type().clone(), false),
                Field::new(vf.name(), values.data_type().clone(), true),
            ]);
            let entries =
                StructArray::try_new(fields, vec![keys, values], m.entries().nulls().cloned())?;
            let field = Arc::new(Field::new(t.name(), entries.data_type().clone(), false));
            let out = MapArray::try_new(
                field,
                m.offsets().clone(),
                entries,
                m.nulls().cloned(),
                *sorted,
            )?;
            Ok(Arc::new(out))
        }
        // Another list encoding (a large list, a fixed-size list) becomes the column's first,
        // with the value's own element type; its elements are then aligned as above.
        (
            DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::List(f),
            DataType::List(_) | DataType::LargeList(_),
        ) => {
            let same_elements = match to {
                DataType::List(_) => DataType::List(Arc::clone(f)),
                _ => DataType::LargeList(Arc::clone(f)),
            };
            let relisted = arrow::compute::cast(value, &same_elements)?;
            align(&relisted, to, how, path)
        }
        (from, _) => Err(EngineError::invalid(format!(
            "column {path}: cannot write {} into {}",
            type_text(from),
            type_text(to)
        ))),
    }
}

/// Whether a value of type `value` is `column`'s type but for the order and nullability of
/// struct fields: every struct field matched by name exactly once, the same leaf types. Delta's
/// `SchemaUtils.isReadCompatible`, which decides that an INSERT whose query names the table's
/// columns is written as a DataFrame is, by name (Delta's `needsSchemaAdjustmentByOrdinal`). It
/// finds a field without regard to case and then requires the same spelling ("we know the name
/// matches modulo case - now verify exact match"): `named_struct('B', 1, 'A', 2)` into
/// `STRUCT<a, b>` is not read-compatible, and goes by position (red team helper-52).
pub fn same_fields_by_name(value: &DataType, column: &DataType) -> bool {
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let bytes = |t: &DataType| {
        matches!(
            t,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        )
    };
    match (value, column) {
        (DataType::Struct(from), DataType::Struct(target)) => {
            from.len() == target.len()
                && target.iter().all(|t| {
                    let mut found = from
                        .iter()
                        .filter(|f| f.name().eq_ignore_ascii_case(t.name()));
                    match (found.next(), found.next()) {
                        (Some(f), None) => {
                            f.name() == t.name()
                                && same_fields_by_name(f.data_type(), t.data_type())
                        }
                        _ => false,
                    }
                })
        }
        (
            DataType::List(a) | DataType::LargeList(a),
            DataType::List(b) | DataType::LargeList(b),
        ) => same_fields_by_name(a.data_type(), b.data_type()),
        (DataType::Map(a, _), DataType::Map(b, _)) => match (a.data_type(), b.data_type()) {
            (DataType::Struct(x), DataType::Struct(y)) if x.len() == 2 && y.len() == 2 => x
                .iter()
                .zip(y.iter())
                .all(|(p, q)| same_fields_by_name(p.data_type(), q.data_type())),
            _ => false,
        },
        (a, b) => a == b || (text(a) && text(b)) || (bytes(a) && bytes(b)),
    }
}

/// The list's element field: the column's name, the aligned values' type, nullable (the checked
/// cast applies the column's nullability).
fn element_field(t: &FieldRef, values: &ArrayRef) -> FieldRef {
    Arc::new(Field::new(t.name(), values.data_type().clone(), true))
}

/// For each of `target`'s fields, the index of the value's field that fills it (`None`: NULL,
/// only under [`NestedFields::ByNameFillingMissing`]).
fn pick_fields(
    from: &Fields,
    target: &Fields,
    how: NestedFields,
    path: &str,
) -> Result<Vec<Option<usize>>> {
    let mismatch = |why: &str| {
        EngineError::invalid(format!(
            "column {path}: cannot write {} into {}: {why}",
            type_text(&DataType::Struct(from.clone())),
            type_text(&DataType::Struct(target.clone())),
        ))
    };
    match how {
        NestedFields::ByPosition => match from.len().cmp(&target.len()) {
            std::cmp::Ordering::Equal => Ok((0..target.len()).map(Some).collect()),
            std::cmp::Ordering::Less => Err(mismatch(
                "not enough nested fields (INSERT assigns a struct's fields by position)",
            )),
            std::cmp::Ordering::Greater => Err(mismatch(
                "too many nested fields (INSERT assigns a struct's fields by position)",
            )),
        },
        NestedFields::ByName | NestedFields::ByNameFillingMissing => {
            let all_match = "every nested field must match by name (UPDATE, MERGE and DataFrame writes assign a struct's fields by name)";
            let fill = how == NestedFields::ByNameFillingMissing;
            let mut picks = Vec::with_capacity(target.len());
            for t in target.iter() {
                let mut found = from
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.name().eq_ignore_ascii_case(t.name()));
                match (found.next(), found.next()) {
                    (Some((i, _)), None) => picks.push(Some(i)),
                    (None, _) if fill && t.is_nullable() => picks.push(None),
                    _ => return Err(mismatch(all_match)),
                }
            }
            // Every field of the value is used: none is dropped.
            if picks.iter().flatten().count() != from.len() {
                return Err(mismatch(all_match));
            }
            Ok(picks)
        }
    }
}

fn is_nested(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Struct(_)
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Map(..)
    )
}

/// `struct<a: Int32, b: Utf8>`: a type as an error names it.
fn type_text(t: &DataType) -> String {
    match t {
        DataType::Struct(fields) => format!(
            "struct<{}>",
            fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), type_text(f.data_type())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            format!("array<{}>", type_text(f.data_type()))
        }
        other => other.to_string(),
    }
}
