//! Decoding a checkpoint's `add` column straight from Arrow into [`Add`]s — the bulk of a large
//! checkpoint — instead of through JSON. Exactness first: the fast path only accepts the `add`
//! struct when every field is one it knows with the type it expects (the typed `stats_parsed` /
//! `partitionValues_parsed` copies are ignored, as on the JSON path), and a row missing a required
//! field declines too. Declining hands the whole batch to the JSON path, which is the definition.

use std::collections::BTreeMap;

use arrow::array::{
    Array, AsArray, BooleanArray, Int32Array, Int64Array, MapArray, StringArray, StructArray,
};
use arrow::datatypes::DataType;
use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::dv::DvDescriptor;

const ADD_FIELDS: &[&str] = &[
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "stats",
    "tags",
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
    "clusteringProvider",
    "stats_parsed",
    "partitionValues_parsed",
];
const DV_FIELDS: &[&str] = &[
    "storageType",
    "pathOrInlineDv",
    "offset",
    "sizeInBytes",
    "cardinality",
    "maxRowIndex",
];

/// One entry per row: the row's add (None where the row holds another action). `None` overall when
/// the column's shape or a row is not one this decoder reproduces exactly.
pub fn decode_adds(add: &StructArray) -> Option<Vec<Option<Add>>> {
    let names = add.fields().iter().map(|f| f.name().as_str());
    if names.clone().any(|n| !ADD_FIELDS.contains(&n)) {
        return None;
    }
    let path = string(add, "path")?;
    let size = int64(add, "size")?;
    let mtime = int64(add, "modificationTime")?;
    let data_change = boolean(add, "dataChange")?;
    let stats = optional(add, "stats", string)?;
    let pvs = optional(add, "partitionValues", map)?;
    let tags = optional(add, "tags", map)?;
    let dv = optional(add, "deletionVector", |a, n| {
        a.column_by_name(n)?.as_struct_opt().cloned()
    })?;
    if let Some(dv) = &dv {
        if dv
            .fields()
            .iter()
            .any(|f| !DV_FIELDS.contains(&f.name().as_str()))
        {
            return None;
        }
    }
    let base_row_id = optional(add, "baseRowId", int64)?;
    let default_version = optional(add, "defaultRowCommitVersion", int64)?;
    let clustering = optional(add, "clusteringProvider", string)?;
    let mut out = Vec::with_capacity(add.len());
    for i in 0..add.len() {
        if add.is_null(i) {
            out.push(None);
            continue;
        }
        if path.is_null(i) || size.is_null(i) || mtime.is_null(i) || data_change.is_null(i) {
            return None; // the JSON path reports the missing field
        }
        let deletion_vector = match &dv {
            Some(d) if d.is_valid(i) => Some(descriptor(d, i)?),
            _ => None,
        };
        out.push(Some(Add {
            path: path.value(i).to_string(),
            partition_values: match &pvs {
                Some(m) if m.is_valid(i) => entries(m, i)?,
                _ => BTreeMap::new(),
            },
            size: size.value(i),
            modification_time: mtime.value(i),
            data_change: data_change.value(i),
            stats: opt_string(stats.as_ref(), i),
            tags: match &tags {
                Some(m) if m.is_valid(i) => Some(entries(m, i)?),
                _ => None,
            },
            deletion_vector: deletion_vector.map(Box::new),
            base_row_id: opt_int64(base_row_id.as_ref(), i),
            default_row_commit_version: opt_int64(default_version.as_ref(), i),
            clustering_provider: opt_string(clustering.as_ref(), i),
            extra: Default::default(),
        }));
    }
    Some(out)
}

fn descriptor(d: &StructArray, i: usize) -> Option<DvDescriptor> {
    let storage = string(d, "storageType")?;
    let path = string(d, "pathOrInlineDv")?;
    let size = int32(d, "sizeInBytes")?;
    let card = int64(d, "cardinality")?;
    if storage.is_null(i) || path.is_null(i) || size.is_null(i) || card.is_null(i) {
        return None;
    }
    let offset = optional(d, "offset", int32)?;
    let max_row_index = optional(d, "maxRowIndex", int64)?;
    Some(DvDescriptor {
        storage_type: storage.value(i).to_string(),
        path_or_inline_dv: path.value(i).to_string(),
        offset: offset
            .as_ref()
            .filter(|a| a.is_valid(i))
            .map(|a| a.value(i)),
        size_in_bytes: size.value(i),
        cardinality: card.value(i),
        max_row_index: opt_int64(max_row_index.as_ref(), i),
    })
}

/// A string → string map entry list as the log's `{k: v | null}` object.
fn entries(m: &MapArray, i: usize) -> Option<BTreeMap<String, Option<String>>> {
    let entry = m.value(i);
    let keys = entry.column(0).as_string_opt::<i32>()?;
    let values = entry.column(1).as_string_opt::<i32>()?;
    let mut out = BTreeMap::new();
    for j in 0..entry.len() {
        if keys.is_null(j) {
            return None;
        }
        let v = values.is_valid(j).then(|| values.value(j).to_string());
        out.insert(keys.value(j).to_string(), v);
    }
    Some(out)
}

/// `Some(None)` when the field is absent, `Some(Some(array))` when present with the right type,
/// `None` (decline) when present with another type.
fn optional<T>(
    s: &StructArray,
    name: &str,
    get: impl Fn(&StructArray, &str) -> Option<T>,
) -> Option<Option<T>> {
    match s.column_by_name(name) {
        None => Some(None),
        Some(_) => get(s, name).map(Some),
    }
}

fn string(s: &StructArray, name: &str) -> Option<StringArray> {
    let c = s.column_by_name(name)?;
    (c.data_type() == &DataType::Utf8).then(|| c.as_string::<i32>().clone())
}

fn int64(s: &StructArray, name: &str) -> Option<Int64Array> {
    s.column_by_name(name)?
        .as_primitive_opt::<arrow::datatypes::Int64Type>()
        .cloned()
}

fn int32(s: &StructArray, name: &str) -> Option<Int32Array> {
    s.column_by_name(name)?
        .as_primitive_opt::<arrow::datatypes::Int32Type>()
        .cloned()
}

fn boolean(s: &StructArray, name: &str) -> Option<BooleanArray> {
    s.column_by_name(name)?.as_boolean_opt().cloned()
}

fn map(s: &StructArray, name: &str) -> Option<MapArray> {
    s.column_by_name(name)?.as_map_opt().cloned()
}

fn opt_string(a: Option<&StringArray>, i: usize) -> Option<String> {
    a.filter(|a| a.is_valid(i)).map(|a| a.value(i).to_string())
}

fn opt_int64(a: Option<&Int64Array>, i: usize) -> Option<i64> {
    a.filter(|a| a.is_valid(i)).map(|a| a.value(i))
}
