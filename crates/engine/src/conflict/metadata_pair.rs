//! Two metadata changes at once (switch `metadataPair`): a loser whose own commit changes only the
//! table's metadata (an ALTER TABLE: properties, ADD COLUMNS, comments, NOT NULL, constraints) is
//! **re-applied on the winner's metadata** when the two changes touch different things. The
//! loser's new metadata becomes `winner + (loser − base)`, where `base` is the metadata both
//! started from (the read snapshot's, or the previous metadata winner's once the loser was rebased
//! on it).
//!
//! **What it proves.** Delta's serial order is the commit order: the result must be what the
//! loser's ALTER would have written had it run after the winner. An ALTER of the allowed kinds
//! depends on the metadata it started from only through what it names:
//! - a property key it sets or unsets: the result holds the winner's keys and the loser's change
//!   of its own keys. A key changed by both is a true conflict (which value wins is the question).
//! - a new top-level column: it needs its name to be free (a name the winner also added, or any
//!   name in the winner's schema, is a conflict) and, with column mapping, a fresh id and physical
//!   name: the id is re-assigned above the winner's `maxColumnId` (a primitive column has one
//!   id), the physical name must be unused in both schemas. It must be nullable with no rules, as
//!   the metadata-change rule for losers without metadata requires.
//! - a comment or a NOT NULL change of an existing column: that column must be exactly as in the
//!   base in the winner's schema (the winner did not touch it).
//! - a new or changed CHECK constraint: every column it reads must be exactly as in the base in the
//!   winner's schema (not renamed, dropped, retyped or widened), so it means in the result what
//!   the loser's ALTER checked. The loser checked every row of its snapshot; rows a winner added
//!   are the file-level checks' concern (ADD CONSTRAINT and SET NOT NULL register a whole-table
//!   read, so any winner add not proven row-free aborts them).
//! - the result's rules are planned again as a whole: any rule that does not plan is a conflict.
//!
//! **Declines (a true conflict, naming why):** the loser changes anything else (a rename, a drop,
//! a type change, column order, partition columns, the table id or format, unknown fields, a
//! `delta.*` key outside the list below, column-mapping keys but the id high-water mark); a nested
//! new column under column mapping; the winner changed the column-mapping mode while the loser
//! changes the schema; the winner changed the schema while the loser sets
//! `delta.dataSkippingStatsColumns` (it names columns); the change data feed turned on or off by
//! one and the schema changed by the other (the feed reserves column names); any parse or planning
//! failure.
//!
//! The protocol is rebased the same way: features the loser added (only those in
//! `REBASABLE_FEATURES`, each safe to list whatever the winner did) are added to the winner's
//! protocol; the loser must drop none.

use std::collections::{BTreeMap, BTreeSet};

use delta_rlc_protocol::actions::{Metadata, Protocol};
use delta_rlc_protocol::column_mapping::{ID_KEY, MAX_ID_KEY, MODE_KEY, PHYSICAL_NAME_KEY};
use delta_rlc_protocol::schema::{DataType, StructField, StructType};

use super::metadata_change::{is_neutral_key, neutral_metadata};
use crate::constraints::{is_constraint_key, TableConstraints};
use crate::metadata_intent::MetadataIntent;
use delta_rlc_protocol::table_properties::TableProperty;

/// `delta.*` keys (beside `NEUTRAL_KEYS` and constraints) a loser may change and be rebased: each
/// is a switch whose meaning does not depend on anything else in the metadata.
const REBASABLE_KEYS: &[TableProperty] = &[
    TableProperty::AppendOnly,
    TableProperty::EnableChangeDataFeed,
    TableProperty::EnableDeletionVectors,
];

/// Table features a loser may have added: listing them obliges writers to nothing the winner's
/// metadata could make false.
const REBASABLE_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "deletionVectors",
    "timestampNtz",
];

/// What the loser re-applied on the winner's metadata (for the event).
#[derive(Debug, Default)]
pub struct Rebased {
    pub metadata: Option<Metadata>,
    pub keys: Vec<String>,
    pub columns: Vec<String>,
}

/// `ours` (the loser's staged metadata, a change of `base`) re-applied on `winner` (also a change
/// of `base`); Err(reason) for a true conflict.
pub fn rebase_metadata(
    base: &Metadata,
    winner: &Metadata,
    ours: &Metadata,
    intent: &MetadataIntent,
) -> Result<Rebased, String> {
    if ours.id != base.id || winner.id != base.id {
        return Err("the table was replaced (a new table id)".into());
    }
    if ours.format != base.format || winner.format != base.format {
        return Err("the table format changed".into());
    }
    if ours.extra != base.extra || winner.extra != base.extra {
        return Err("metadata fields this engine does not know changed".into());
    }
    if ours.partition_columns != base.partition_columns
        || winner.partition_columns != base.partition_columns
    {
        return Err("the partition columns changed".into());
    }
    let mut merged = winner.clone();
    merged.name = pick("name", intent.name, &base.name, &winner.name, &ours.name)?;
    merged.description = pick(
        "description",
        intent.description,
        &base.description,
        &winner.description,
        &ours.description,
    )?;

    let parse = |m: &Metadata| {
        StructType::parse(&m.schema_string).map_err(|e| format!("cannot read a schema: {e}"))
    };
    let (base_s, win_s, our_s) = (parse(base)?, parse(winner)?, parse(ours)?);
    let schema_by_winner = base_s != win_s;
    let columns = our_schema_change(&base_s, &our_s)?;
    let schema_by_us =
        !columns.new.is_empty() || !columns.changed.is_empty() || !intent.columns.is_empty();

    let our_keys = changed_keys(&base.configuration, &ours.configuration);
    let win_keys = changed_keys(&base.configuration, &winner.configuration);
    let derived = |k: &String| k == MAX_ID_KEY && !columns.new.is_empty();
    if let Some(k) = our_keys
        .iter()
        .find(|k| !intent.keys.contains(*k) && !derived(k))
    {
        return Err(format!(
            "this transaction changes {k}, which its statement does not name"
        ));
    }
    // Every key the statement names, changed or not: run after the winner it would set (or
    // remove) it over the winner's value.
    let named: BTreeSet<String> = intent.keys.iter().chain(our_keys.iter()).cloned().collect();
    for k in &named {
        // `delta.` keys are matched in any case (protocol requests such as
        // 'Delta.MinWriterVersion' are taken out of the configuration case-insensitively).
        let rebasable = !k.to_ascii_lowercase().starts_with("delta.")
            || is_neutral_key(k)
            || TableProperty::parse(k).is_some_and(|p| REBASABLE_KEYS.contains(&p))
            || is_constraint_key(k)
            || derived(k);
        if !rebasable {
            return Err(format!(
                "this transaction changes {k}, which is not re-applied on another metadata change"
            ));
        }
        if win_keys.contains(k) && k != MAX_ID_KEY {
            return Err(format!("both transactions change {k}"));
        }
        if k == TableProperty::DataSkippingStatsColumns.key() && schema_by_winner {
            return Err(format!(
                "{} names columns, and the schema changed",
                TableProperty::DataSkippingStatsColumns
            ));
        }
        if k == MAX_ID_KEY {
            // Re-assigned below, above the winner's.
            continue;
        }
        match ours.configuration.get(k) {
            Some(v) => merged.configuration.insert(k.clone(), v.clone()),
            None => merged.configuration.remove(k),
        };
    }
    let mode = |m: &Metadata| m.configuration.get(MODE_KEY).cloned();
    if schema_by_us && mode(base) != mode(winner) {
        return Err("the column-mapping mode changed".into());
    }
    // The change data feed reserves column names: its enablement and a schema change by the
    // other transaction are not combined.
    const FEED: &str = TableProperty::EnableChangeDataFeed.key();
    if (schema_by_us && win_keys.contains(FEED)) || (schema_by_winner && named.contains(FEED)) {
        return Err("the change data feed's enablement meets a schema change".into());
    }
    check_rules_unchanged(
        &base_s,
        &win_s,
        &base.configuration,
        &ours.configuration,
        &our_keys,
    )?;

    // The schema: the winner's, with the loser's changed columns and new columns.
    let mut schema = win_s.clone();
    if let Some(c) = columns
        .changed
        .iter()
        .find(|c| !intent.columns.contains(*c))
    {
        return Err(format!(
            "this transaction changes column {c}, which its statement does not name"
        ));
    }
    let new_names: Vec<&String> = columns.new.iter().map(|f| &f.name).collect();
    if new_names != intent.new_columns.iter().collect::<Vec<_>>() {
        return Err("the new columns are not the ones the statement names".into());
    }
    for named in &intent.columns {
        let Some(name) = find_ci(&base_s, named).map(|f| f.name.clone()) else {
            return Err(format!("column {named} is missing"));
        };
        let (Some(b), Some(w), Some(o)) = (
            find(&base_s, &name),
            schema.fields.iter_mut().find(|f| f.name == name),
            find(&our_s, &name),
        ) else {
            return Err(format!("column {name} is missing"));
        };
        if b != &*w {
            return Err(format!("both transactions change column {name}"));
        }
        *w = o.clone();
    }
    let mapped = mode(base).is_some_and(|m| m != "none");
    let mut next_id = if mapped && !columns.new.is_empty() {
        winner
            .configuration
            .get(MAX_ID_KEY)
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| format!("{MAX_ID_KEY} is missing or not a number"))?
    } else {
        0
    };
    let taken: BTreeSet<String> = base_s
        .fields
        .iter()
        .chain(&win_s.fields)
        .flat_map(|f| [f.name.to_lowercase(), physical_name(f).to_lowercase()])
        .collect();
    for f in &columns.new {
        if find_ci(&win_s, &f.name).is_some() {
            return Err(format!("both transactions add a column {}", f.name));
        }
        if !f.nullable || !neutral_metadata(f) {
            return Err(format!(
                "new column {} is NOT NULL or carries rules",
                f.name
            ));
        }
        let mut f = f.clone();
        if mapped {
            if !matches!(f.data_type, DataType::Primitive(_)) {
                return Err(format!(
                    "new column {} is nested (its column-mapping ids are not re-assigned)",
                    f.name
                ));
            }
            if taken.contains(&physical_name(&f).to_lowercase()) {
                return Err(format!("new column {}'s physical name is taken", f.name));
            }
            next_id = next_id
                .checked_add(1)
                .ok_or_else(|| "column id overflow".to_string())?;
            f.metadata.insert(ID_KEY.into(), serde_json::json!(next_id));
        }
        schema.fields.push(f);
    }
    if mapped && !columns.new.is_empty() {
        merged
            .configuration
            .insert(MAX_ID_KEY.into(), next_id.to_string());
    }
    merged.schema_string = schema.to_schema_string();
    // The result's rules, planned as a whole: a rule that no longer plans is a conflict.
    TableConstraints::new(&schema, &merged.configuration)
        .map_err(|e| format!("the combined table rules do not plan: {e}"))?;
    Ok(Rebased {
        metadata: Some(merged),
        keys: our_keys.into_iter().collect(),
        columns: columns
            .new
            .iter()
            .map(|f| f.name.clone())
            .chain(columns.changed)
            .collect(),
    })
}

/// Features the loser added to `base` re-applied on the winner's protocol. A statement that names
/// protocol versions or features (`delta.minReaderVersion`, `delta.minWriterVersion`,
/// `delta.feature.*`, in any case) is not re-applied: a version implies features the winner's
/// protocol may already settle differently (raising the writer version to 3 on a table-features
/// protocol changes nothing serially, but would list `checkConstraints` here).
pub fn rebase_protocol(
    base: &Protocol,
    winner: &Protocol,
    ours: &Protocol,
    intent: &MetadataIntent,
) -> Result<Protocol, String> {
    if let Some(k) = intent.keys.iter().find(|k| {
        let k = k.to_ascii_lowercase();
        k == "delta.minreaderversion"
            || k == "delta.minwriterversion"
            || k.starts_with("delta.feature.")
    }) {
        return Err(format!("this transaction names {k}, a protocol request"));
    }
    let (b, o) = (base.writer_feature_set(), ours.writer_feature_set());
    if b.iter().any(|f| !o.contains(f))
        || base
            .reader_feature_set()
            .iter()
            .any(|f| !ours.has_reader_feature(f))
    {
        return Err("this transaction removes a table feature".into());
    }
    let mut merged = winner.clone();
    for f in o.iter().filter(|f| !b.contains(f)) {
        if !REBASABLE_FEATURES.contains(&f.as_str()) {
            return Err(format!(
                "this transaction adds table feature {f}, which is not re-applied on another protocol change"
            ));
        }
        merged = merged.with_feature(f);
    }
    let covers = o.iter().all(|f| merged.has_writer_feature(f))
        && ours
            .reader_feature_set()
            .iter()
            .all(|f| merged.has_reader_feature(f))
        && merged.min_reader_version >= ours.min_reader_version
        && merged.min_writer_version >= ours.min_writer_version;
    if !covers {
        return Err("the combined protocol does not hold both transactions' features".into());
    }
    Ok(merged)
}

/// `ours` unless it differs from `base`, then the winner must not have changed it too.
fn pick(
    what: &str,
    named: bool,
    base: &Option<String>,
    winner: &Option<String>,
    ours: &Option<String>,
) -> Result<Option<String>, String> {
    if !named {
        if ours != base {
            return Err(format!(
                "this transaction changes the table's {what}, which its statement does not name"
            ));
        }
        return Ok(winner.clone());
    }
    if winner != base {
        return Err(format!("both transactions change the table's {what}"));
    }
    Ok(ours.clone())
}

fn changed_keys(
    base: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    base.keys()
        .chain(new.keys())
        .filter(|k| base.get(*k) != new.get(*k))
        .cloned()
        .collect()
}

struct OurColumns {
    /// Existing columns whose comment or nullability the loser changed.
    changed: Vec<String>,
    /// New top-level columns, in order.
    new: Vec<StructField>,
}

/// The loser's schema change, if it is of a kind that can be re-applied: the base's columns in
/// order (only comments and nullability changed), then new columns.
fn our_schema_change(base: &StructType, ours: &StructType) -> Result<OurColumns, String> {
    let mut changed = Vec::new();
    for (i, b) in base.fields.iter().enumerate() {
        let Some(o) = ours.fields.get(i).filter(|o| o.name == b.name) else {
            return Err(format!(
                "this transaction renames, drops or moves column {}",
                b.name
            ));
        };
        if o == b {
            continue;
        }
        let strip = |f: &StructField| {
            let mut m = f.metadata.clone();
            m.remove("comment");
            (f.data_type.clone(), m)
        };
        if strip(o) != strip(b) {
            return Err(format!(
                "this transaction changes column {}'s type or rules",
                b.name
            ));
        }
        changed.push(b.name.clone());
    }
    let new = ours
        .fields
        .get(base.fields.len()..)
        .unwrap_or_default()
        .to_vec();
    Ok(OurColumns { changed, new })
}

/// Every CHECK constraint the loser added or changed reads only columns the winner left as they
/// were in the base.
fn check_rules_unchanged(
    base_s: &StructType,
    win_s: &StructType,
    base_config: &BTreeMap<String, String>,
    our_config: &BTreeMap<String, String>,
    our_keys: &BTreeSet<String>,
) -> Result<(), String> {
    let ours: BTreeMap<String, String> = our_keys
        .iter()
        .filter(|k| is_constraint_key(k))
        .filter_map(|k| our_config.get(k).map(|v| (k.clone(), v.clone())))
        .filter(|(k, v)| base_config.get(k) != Some(v))
        .collect();
    if ours.is_empty() {
        return Ok(());
    }
    let rules = TableConstraints::new(base_s, &ours)
        .map_err(|e| format!("cannot plan this transaction's constraint: {e}"))?;
    for b in &base_s.fields {
        if find(win_s, &b.name) == Some(b) {
            continue;
        }
        if let Some(rule) = rules.reading(&b.name) {
            return Err(format!(
                "{rule} reads column {}, which the other change altered",
                b.name
            ));
        }
    }
    Ok(())
}

fn find<'a>(s: &'a StructType, name: &str) -> Option<&'a StructField> {
    s.fields.iter().find(|f| f.name == name)
}

fn find_ci<'a>(s: &'a StructType, name: &str) -> Option<&'a StructField> {
    s.fields.iter().find(|f| f.name.eq_ignore_ascii_case(name))
}

fn physical_name(f: &StructField) -> &str {
    f.metadata
        .get(PHYSICAL_NAME_KEY)
        .and_then(|v| v.as_str())
        .unwrap_or(&f.name)
}

#[cfg(test)]
#[path = "metadata_pair_tests.rs"]
mod tests;
