//! Row-level concurrency for metadata: a winner's metadata change against a loser that does not
//! change metadata itself. The loser's commit carries no metadata action, so it lands under the
//! winner's metadata unchanged; the question is only whether the loser's staged actions are valid
//! under it — as if the loser had run after the winner.
//!
//! The change is classified from the loser's read-snapshot metadata to the winner's (the whole
//! distance the loser's actions must cross, so several metadata winners compose).
//!
//! **Compatible (the loser commits):**
//! - new top-level columns, nullable, carrying nothing but a comment and column-mapping ids. The
//!   loser's files lack them, so they read NULL — exactly what they would hold had the loser run
//!   after the ALTER without naming them. The loser cannot have read or written a column that did
//!   not exist in its snapshot, and its files' stats cover only the columns they hold (a reader
//!   treats a missing stat as unknown). With column mapping a new column's physical name must not
//!   be one of the old schema's (else old data could surface under it).
//! - existing columns unchanged (name, type, nested fields, column-mapping ids) except their comment
//!   and NOT NULL → nullable; columns may be reordered (files are read by name).
//! - a top-level column widened (`type_widening::is_widening`, recorded in `delta.typeChanges`),
//!   **only where `type_change::prove` shows the loser's statement means the same under the new
//!   type** (it does not use the column, or only compares an integer column with integer
//!   literals under an integer widening): the loser's files hold the narrower type, which every
//!   reader of the feature casts, and the column's file stats stop pruning once the change is
//!   recorded (`Snapshot::stats_usable`). The checks of later winners read their files through
//!   the new metadata (`checks.rs`).
//! - NOT NULL added to a column, new or changed CHECK constraints: **checked on the loser's new
//!   rows** (every staged add's live rows, value-exact, with the winner's rules). Any violation, or
//!   any failure to read or evaluate, is a conflict.
//! - configuration keys that do not change how files must be written (retention, checkpoint and
//!   file-size settings, stats columns, user keys); `delta.appendOnly` turned on when the loser
//!   removes nothing; deletion vectors turned off when the loser adds no DV; the change data feed
//!   turned on when the loser only appends (no CDC files are needed for pure appends) or turned off;
//!   type widening turned on or off (it only allows later widenings).
//! - column mapping turned on in name mode with every existing column named as it is
//!   (`mapping_upgrade.rs`): compared without the mapping keys.
//!
//! **True conflicts (abort, naming the reason):** a renamed, dropped or retyped column; a new NOT
//! NULL column; partition columns, table id or format changed; column-mapping, isolation-level,
//! row-tracking (beyond the checker's own allow-list) or unknown `delta.*` keys changed; any rule
//! the loser's rows break. Anything not listed as compatible is a conflict.

use delta_rlc_protocol::table_properties::TableProperty;
use std::collections::{BTreeMap, BTreeSet};

use delta_rlc_protocol::actions::{Action, Metadata};
use delta_rlc_protocol::column_mapping::{ID_KEY, MAX_ID_KEY, MODE_KEY, PHYSICAL_NAME_KEY};
use delta_rlc_protocol::schema::{StructField, StructType};
use delta_rlc_protocol::type_widening::{is_widening, TYPE_CHANGES_KEY};
use delta_rlc_storage::TableStore;

use super::checks::{conflict as conflict_error, CheckInput, CheckOutcome, LoserState};
use super::summary::WinningCommit;
use super::type_change;
use super::Event;
use crate::conflict_config::Switch;
use crate::conflict_error::ConflictKind;
use crate::constraints::TableConstraints;
use crate::error::Result;
use crate::read_set::ReadSet;
use crate::snapshot::Snapshot;

/// What a compatible change requires of the loser's new rows.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to check: the loser's actions are valid under the new metadata as they are.
    Compatible,
    /// Valid if every new row of the loser satisfies the new metadata's constraints.
    CheckNewRows,
    /// A true conflict, with the reason.
    Conflict(String),
}

/// Field metadata a new or existing column may carry without affecting how rows are written.
const NEUTRAL_FIELD_KEYS: &[&str] = &["comment", ID_KEY, PHYSICAL_NAME_KEY];

/// Configuration keys whose change does not affect the loser's files or its validity.
pub(super) const NEUTRAL_KEYS: &[TableProperty] = &[
    TableProperty::LogRetentionDuration,
    TableProperty::DeletedFileRetentionDuration,
    TableProperty::CheckpointInterval,
    TableProperty::CheckpointRetentionDuration,
    TableProperty::TargetFileSize,
    TableProperty::TuneFileSizesForRewrites,
    TableProperty::DataSkippingNumIndexedCols,
    TableProperty::DataSkippingStatsColumns,
    TableProperty::CheckpointWriteStatsAsJson,
    TableProperty::CheckpointWriteStatsAsStruct,
    TableProperty::SetTransactionRetentionDuration,
    TableProperty::AutoOptimizeOptimizeWrite,
    TableProperty::AutoOptimizeAutoCompact,
    // Allows later ALTER COLUMN … TYPE; changes no file and no statement's meaning by itself (a
    // widening is its own metadata change, classified as such).
    TableProperty::EnableTypeWidening,
];

/// Whether `key` (as stored: matched exactly) is one of [`NEUTRAL_KEYS`].
pub(super) fn is_neutral_key(key: &str) -> bool {
    TableProperty::parse(key).is_some_and(|p| NEUTRAL_KEYS.contains(&p))
}

/// Classifies the change from `old` to `new` for a loser staging `staged` (it stages no metadata).
/// `allowed_key` is the checker's own allow-list for engine-managed keys (row tracking, in-commit
/// timestamps, …), consulted for keys this module does not know.
pub fn classify(
    old: &Metadata,
    new: &Metadata,
    staged: &[Action],
    read_set: &ReadSet,
    allowed_key: &dyn Fn(&str, Option<&String>, &str) -> bool,
) -> Result<Verdict> {
    if old.id != new.id {
        return Ok(conflict("the table was replaced (a new table id)"));
    }
    if old.format != new.format {
        return Ok(conflict("the table format changed"));
    }
    if old.extra != new.extra {
        return Ok(conflict(
            "metadata fields this engine does not know changed",
        ));
    }
    if old.partition_columns != new.partition_columns {
        return Ok(conflict("the partition columns changed"));
    }
    let old_schema = StructType::parse(&old.schema_string)?;
    let mut new_schema = StructType::parse(&new.schema_string)?;
    // Column mapping turned on with every existing column named as it is: compared without the
    // mapping keys, and the mode and id keys are not a change for this loser.
    let mapping_on = super::mapping_upgrade::stripped_if_proven(old, new, &old_schema, &new_schema);
    if let Some(stripped) = &mapping_on {
        new_schema = stripped.clone();
    }
    let mut check_rows = false;
    match schema_change(&old_schema, &new_schema) {
        Err(reason) => return Ok(Verdict::Conflict(reason)),
        Ok(tightened) => check_rows |= tightened,
    }
    // New or reordered columns hold only where the loser's statement means the same with them.
    if let Some(reason) = column_list_conflict(&old_schema, &new_schema, read_set) {
        return Ok(Verdict::Conflict(reason));
    }
    // A widening holds only where the loser's statement means the same under the new type.
    if let Err(reason) = type_change::prove(
        &type_change::widened_columns(&old_schema, &new_schema),
        read_set,
    ) {
        return Ok(Verdict::Conflict(reason));
    }
    let keys: BTreeSet<&String> = old
        .configuration
        .keys()
        .chain(new.configuration.keys())
        .collect();
    for k in keys {
        let (before, after) = (old.configuration.get(k), new.configuration.get(k));
        if before == after {
            continue;
        }
        if mapping_on.is_some() && (k == MODE_KEY || k == MAX_ID_KEY) {
            continue;
        }
        if crate::constraints::is_constraint_key(k) {
            // Removed: a looser table. Added or changed: the loser's rows must satisfy it.
            check_rows |= after.is_some();
            continue;
        }
        if let Some(reason) = config_change(k, before, after, staged, allowed_key) {
            return Ok(Verdict::Conflict(reason));
        }
    }
    Ok(if check_rows {
        Verdict::CheckNewRows
    } else {
        Verdict::Compatible
    })
}

fn conflict(reason: &str) -> Verdict {
    Verdict::Conflict(reason.to_string())
}

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// None when a change of `key` from `before` to `after` is compatible with the loser, else the
/// reason it is not.
fn config_change(
    key: &str,
    before: Option<&String>,
    after: Option<&String>,
    staged: &[Action],
    allowed_key: &dyn Fn(&str, Option<&String>, &str) -> bool,
) -> Option<String> {
    let removes_rows = staged
        .iter()
        .any(|a| matches!(a, Action::Remove(r) if r.data_change));
    let adds_dv = staged
        .iter()
        .any(|a| matches!(a, Action::Add(a) if a.deletion_vector.is_some()));
    let ok = if !key.starts_with("delta.") || is_neutral_key(key) {
        true
    } else {
        match TableProperty::parse(key) {
            Some(TableProperty::AppendOnly) => !is_true(after) || !removes_rows,
            Some(TableProperty::EnableDeletionVectors) => is_true(after) || !adds_dv,
            // Pure appends write no change data (as in Delta); anything else would need CDC files.
            Some(TableProperty::EnableChangeDataFeed) => {
                !is_true(after) || is_true(before) || !removes_rows
            }
            // The column-id high-water mark rises when columns are added (checked above).
            Some(TableProperty::ColumnMappingMaxColumnId) => {
                let n = |v: Option<&String>| v.and_then(|v| v.parse::<i64>().ok());
                matches!((n(before), n(after)), (Some(b), Some(a)) if a >= b)
            }
            _ => after.is_some_and(|v| allowed_key(key, before, v)),
        }
    };
    (!ok).then(|| {
        format!(
            "{key} changed from {} to {}",
            before.map_or("unset", String::as_str),
            after.map_or("unset", String::as_str)
        )
    })
}

/// Why a column list `new` that differs from `old` by added or reordered columns would change
/// what the loser's statement does, if it may: it declared no names (a `*` over the target, an
/// INSERT by position or a query reading the target mean something else with more columns, or
/// with the same columns in another order: `CREATE OR REPLACE TABLE t (b, a)` beside a loser's
/// `INSERT INTO t VALUES (1, 2)` puts 1 in `b` in serial order; red team helper-47), or it names
/// an added column, which would now be ambiguous or bind to the target.
fn column_list_conflict(old: &StructType, new: &StructType, read_set: &ReadSet) -> Option<String> {
    let old_names: Vec<String> = old.fields.iter().map(|f| f.name.to_lowercase()).collect();
    let added: Vec<&str> = new
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| !old_names.contains(&n.to_lowercase()))
        .collect();
    let kept_in_order: Vec<String> = new
        .fields
        .iter()
        .map(|f| f.name.to_lowercase())
        .filter(|n| old_names.contains(n))
        .collect();
    let reordered = kept_in_order != old_names;
    let Some(names) = &read_set.column_names else {
        return match added.first() {
            Some(first) => Some(format!(
                "column {first} was added and this statement may depend on the table's column \
                 list (`*`, an INSERT by position, or a query reading the table)"
            )),
            None if reordered => Some(
                "the columns were reordered and this statement may depend on the table's column \
                 order (`*`, an INSERT by position, or a query reading the table)"
                    .to_string(),
            ),
            None => None,
        };
    };
    added
        .iter()
        .find(|n| names.contains(&n.to_lowercase()))
        .map(|n| format!("column {n} was added and this statement names {n}"))
}

/// Ok(true) when a column became NOT NULL (the loser's rows must be checked), Ok(false) when the
/// change needs nothing, Err(reason) for a true conflict.
fn schema_change(old: &StructType, new: &StructType) -> std::result::Result<bool, String> {
    let mut tightened = false;
    let new_by_name: BTreeMap<&str, &StructField> =
        new.fields.iter().map(|f| (f.name.as_str(), f)).collect();
    for o in &old.fields {
        let Some(n) = new_by_name.get(o.name.as_str()) else {
            return Err(format!("column {} was renamed or dropped", o.name));
        };
        if o.data_type != n.data_type && !widened(o, n) {
            return Err(format!("column {} changed type", o.name));
        }
        if without_comment(o) != without_comment(n) {
            return Err(format!("column {} changed its metadata", o.name));
        }
        if o.nullable && !n.nullable {
            tightened = true;
        }
    }
    let old_names: BTreeSet<&str> = old.fields.iter().map(|f| f.name.as_str()).collect();
    let old_physical: BTreeSet<String> = old
        .fields
        .iter()
        .map(|f| physical_name(f).to_lowercase())
        .collect();
    for n in &new.fields {
        if old_names.contains(n.name.as_str()) {
            continue;
        }
        if !n.nullable {
            return Err(format!("new column {} is NOT NULL", n.name));
        }
        if !neutral_metadata(n) {
            return Err(format!(
                "new column {} carries rules (generated, identity, default or invariant)",
                n.name
            ));
        }
        if old_physical.contains(&physical_name(n).to_lowercase()) {
            return Err(format!(
                "new column {} reuses a physical name of the old schema",
                n.name
            ));
        }
    }
    Ok(tightened)
}

fn physical_name(f: &StructField) -> &str {
    f.metadata
        .get(PHYSICAL_NAME_KEY)
        .and_then(|v| v.as_str())
        .unwrap_or(&f.name)
}

/// The column's metadata but for its comment and its type-change record (compared separately).
/// A column's metadata without what may change under a loser: its comment, its recorded type
/// changes (checked by `widened`), and an identity column's high-water mark — the values a winner
/// generated lie above the mark the loser read: a loser that generated none cannot collide with
/// them, and one that did has its values moved past them (`identity_rebase`).
fn without_comment(f: &StructField) -> serde_json::Map<String, serde_json::Value> {
    let mut m = f.metadata.clone();
    m.remove("comment");
    m.remove(TYPE_CHANGES_KEY);
    m.remove(delta_rlc_protocol::schema::IDENTITY_HIGH_WATER_MARK_KEY);
    m
}

/// A top-level primitive widened as the protocol allows, recorded as such: the loser's files hold
/// the narrower type, which readers cast (and whose stats no longer prune the column).
fn widened(old: &StructField, new: &StructField) -> bool {
    use delta_rlc_protocol::schema::DataType;
    let (DataType::Primitive(a), DataType::Primitive(b)) = (&old.data_type, &new.data_type) else {
        return false;
    };
    let recorded = |f: &StructField| {
        f.metadata
            .get(TYPE_CHANGES_KEY)
            .and_then(|v| v.as_array())
            .map_or(0, Vec::len)
    };
    is_widening(a, b) && recorded(new) > recorded(old)
}

/// Only neutral keys, at every depth of the field's type.
pub(super) fn neutral_metadata(f: &StructField) -> bool {
    use delta_rlc_protocol::schema::DataType;
    fn type_ok(t: &DataType) -> bool {
        match t {
            DataType::Primitive(_) => true,
            DataType::Struct(st) => st.fields.iter().all(neutral_metadata),
            DataType::Array { element, .. } => type_ok(element),
            DataType::Map { key, value, .. } => type_ok(key) && type_ok(value),
        }
    }
    f.metadata
        .keys()
        // Nested column-mapping ids of array elements and map keys/values.
        .all(|k| NEUTRAL_FIELD_KEYS.contains(&k.as_str()) || k == "delta.columnMapping.nested.ids")
        && type_ok(&f.data_type)
}

/// Checks every new row the loser stages (the live rows of each data-changing add, read under
/// the new schema) against `new`'s constraints; a column the loser's files lack (added
/// by the winner, nullable) is NULL. Ok(None) when all hold, Ok(Some(reason)) for a violation;
/// read or evaluation failures are errors (the caller keeps the conflict).
pub async fn check_new_rows(
    store: &TableStore,
    read_snapshot: &Snapshot,
    new: &Metadata,
    staged: &[Action],
) -> Result<Option<String>> {
    let schema = StructType::parse(&new.schema_string)?;
    let rules = TableConstraints::new(&schema, &new.configuration)?;
    // The rows as the new schema reads them (a widened column cast to its new type, an added one
    // NULL): the rules are evaluated over the table as it is when this transaction lands.
    let view;
    let read_snapshot = if new.schema_string == read_snapshot.metadata.schema_string {
        read_snapshot
    } else {
        view = read_snapshot.with_metadata(new)?;
        &view
    };
    for a in staged {
        let Action::Add(add) = a else { continue };
        if !add.data_change {
            continue;
        }
        // An empty string written as a partition value reads back as NULL, while the statement
        // checked (and serial order checks) the empty string: a rule can hold for one and not the
        // other (`s IS NULL OR length(s) > 0`; red team helper-47), so the row cannot be checked.
        if let Some(col) = add
            .partition_values
            .iter()
            .find_map(|(c, v)| v.as_deref().is_some_and(str::is_empty).then_some(c))
        {
            return Ok(Some(format!(
                "a new row's partition value of {col} is an empty string, which reads back as NULL: \
                 the rule cannot be checked on the value the statement wrote"
            )));
        }
        for batch in super::rows::live_rows(store, read_snapshot, add).await? {
            match rules.check_filling_missing(&batch) {
                Ok(()) => {}
                Err(crate::error::EngineError::InvalidArgument(m)) => {
                    return Ok(Some(format!("a new row of this transaction breaks {m}")))
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(None)
}

// The checker's side: classify a winner's change for this loser and report it.

/// Configuration keys a concurrent winner may change without conflicting with a data transaction.
pub(super) fn allowed_config_change(key: &str, old: Option<&String>, new: &str) -> bool {
    use TableProperty::*;
    match TableProperty::parse(key) {
        Some(EnableDeletionVectors | EnableRowTracking | EnableInCommitTimestamps) => {
            new.eq_ignore_ascii_case("true")
        }
        Some(
            MaterializedRowIdColumnName
            | MaterializedRowCommitVersionColumnName
            | InCommitTimestampEnablementVersion
            | InCommitTimestampEnablementTimestamp,
        ) => old.is_none(),
        Some(CheckpointPolicy) => new == "v2",
        _ => false,
    }
}

/// A metadata change outside the OSS allow-list: reconciled only when `metadata_change` proves
/// the loser's actions valid under the winner's metadata (rows checked where rules were added);
/// otherwise, in legacy mode, or on any error, MetadataChanged naming the reason.
pub(super) async fn check_metadata_change(
    input: &CheckInput<'_>,
    state: &LoserState,
    w: &WinningCommit,
    new: &Metadata,
    out: &mut CheckOutcome,
) -> Result<()> {
    let abort = |reason: String| {
        conflict_error(
            ConflictKind::MetadataChanged,
            w,
            vec![],
            Some(reason),
            Some("metadataChange"),
        )
    };
    if !input.config.enabled(Switch::MetadataChange) {
        return Err(abort("the table's metadata changed".into()));
    }
    let old = &input.read_snapshot.metadata;
    let verdict = classify(
        old,
        new,
        &state.staged,
        &state.read_set,
        &allowed_config_change,
    )
    .map_err(|e| abort(format!("cannot classify the change: {e}")))?;
    let rows_checked = match verdict {
        Verdict::Conflict(reason) => return Err(abort(reason)),
        Verdict::Compatible => false,
        Verdict::CheckNewRows => {
            match check_new_rows(input.store, input.read_snapshot, new, &state.staged).await {
                Ok(None) => true,
                Ok(Some(reason)) => return Err(abort(reason)),
                Err(e) => {
                    return Err(abort(format!(
                        "cannot check this transaction's rows against the new rules: {}",
                        crate::error::one_line(&e.to_string())
                    )))
                }
            }
        }
    };
    let widened = crate::conflict::type_change::widened_columns(
        &input.read_snapshot.schema,
        &delta_rlc_protocol::schema::StructType::parse(&new.schema_string)
            .map_err(|e| abort(format!("cannot read the new schema: {e}")))?,
    );
    let proofs: Vec<serde_json::Value> = widened
        .iter()
        .zip(
            crate::conflict::type_change::prove(&widened, &state.read_set)
                .map_err(abort)?,
        )
        .map(|(w, proof)| serde_json::json!({"column": w.column, "from": w.from.name(), "to": w.to.name(), "proof": proof}))
        .collect();
    out.events.push(Event::new(
        crate::events::EventName::MetadataChangeReconciled,
        serde_json::json!({
            "winningVersion": w.version,
            "winningOperation": w.operation(),
            "newRowsChecked": rows_checked,
            "typeChanges": proofs,
        }),
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(fields: serde_json::Value, config: &[(&str, &str)]) -> Metadata {
        serde_json::from_value(json!({
            "id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": json!({"type": "struct", "fields": fields}).to_string(),
            "partitionColumns": [],
            "configuration": config.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        }))
        .unwrap()
    }

    fn col(name: &str, nullable: bool, md: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "type": "long", "nullable": nullable, "metadata": md})
    }

    fn verdict(old: &Metadata, new: &Metadata, staged: &[Action]) -> Verdict {
        let mut appends = ReadSet::default();
        appends.used_columns([]);
        appends.names_columns([]);
        classify(old, new, staged, &appends, &|_, _, _| false).unwrap()
    }

    fn is_conflict(v: Verdict) -> bool {
        matches!(v, Verdict::Conflict(_))
    }

    #[test]
    fn added_columns_compatible_only_when_plain_and_nullable() {
        let old = meta(json!([col("a", true, json!({}))]), &[]);
        let plain = meta(
            json!([
                col("a", true, json!({})),
                col("b", true, json!({"comment": "x"}))
            ]),
            &[],
        );
        assert_eq!(verdict(&old, &plain, &[]), Verdict::Compatible);
        for bad in [
            col("b", false, json!({})),
            col("b", true, json!({"delta.generationExpression": "a + 1"})),
            col("b", true, json!({"delta.identity.start": 1})),
            col("b", true, json!({"CURRENT_DEFAULT": "0"})),
        ] {
            let new = meta(json!([col("a", true, json!({})), bad]), &[]);
            assert!(is_conflict(verdict(&old, &new, &[])));
        }
    }

    /// A loser reconciles a new column only when it declared the names by which it reaches
    /// columns and the new one is not among them (red team helper-43: `INSERT *`, an INSERT by
    /// position, a MERGE naming the source's `c` unqualified).
    #[test]
    fn added_columns_need_the_losers_declared_names() {
        let old = meta(json!([col("a", true, json!({}))]), &[]);
        let new = meta(
            json!([col("a", true, json!({})), col("Cee", true, json!({}))]),
            &[],
        );
        let judged = |rs: &ReadSet| classify(&old, &new, &[], rs, &|_, _, _| false).unwrap();
        let mut undeclared = ReadSet::default();
        undeclared.used_columns([]);
        assert!(is_conflict(judged(&undeclared)));
        let mut other_names = undeclared.clone();
        other_names.names_columns(["a".to_string(), "b".to_string()]);
        assert_eq!(judged(&other_names), Verdict::Compatible);
        let mut names_it = undeclared.clone();
        names_it.names_columns(["CEE".to_string()]);
        assert!(is_conflict(judged(&names_it)));
        // A schema without new columns needs no declaration.
        assert_eq!(
            classify(&old, &old, &[], &undeclared, &|_, _, _| false).unwrap(),
            Verdict::Compatible
        );
    }

    /// The same columns in another order (CREATE OR REPLACE TABLE keeps the table id) change
    /// what a positional INSERT or a `*` means: only a loser that declared its names reconciles
    /// (red team helper-47).
    #[test]
    fn reordered_columns_need_the_losers_declared_names() {
        let old = meta(
            json!([col("a", true, json!({})), col("b", true, json!({}))]),
            &[],
        );
        let new = meta(
            json!([col("b", true, json!({})), col("a", true, json!({}))]),
            &[],
        );
        let judged = |rs: &ReadSet| classify(&old, &new, &[], rs, &|_, _, _| false).unwrap();
        let mut undeclared = ReadSet::default();
        undeclared.used_columns([]);
        assert!(matches!(judged(&undeclared), Verdict::Conflict(r) if r.contains("reordered")));
        let mut declared = undeclared.clone();
        declared.names_columns(["a".to_string(), "b".to_string()]);
        assert_eq!(judged(&declared), Verdict::Compatible);
    }

    #[test]
    fn column_mapping_names_must_stay_and_not_be_reused() {
        let cm = |id: i64, p: &str| json!({"delta.columnMapping.id": id, "delta.columnMapping.physicalName": p});
        let old = meta(
            json!([col("a", true, cm(1, "col-1"))]),
            &[("delta.columnMapping.maxColumnId", "1")],
        );
        let added = meta(
            json!([
                col("a", true, cm(1, "col-1")),
                col("b", true, cm(2, "col-2"))
            ]),
            &[("delta.columnMapping.maxColumnId", "2")],
        );
        assert_eq!(verdict(&old, &added, &[]), Verdict::Compatible);
        // A renamed column's old name reused by a new column: `a` now maps elsewhere.
        let reused = meta(
            json!([
                col("z", true, cm(1, "col-1")),
                col("a", true, cm(2, "col-2"))
            ]),
            &[("delta.columnMapping.maxColumnId", "2")],
        );
        assert!(is_conflict(verdict(&old, &reused, &[])));
        let collides = meta(
            json!([
                col("a", true, cm(1, "col-1")),
                col("b", true, cm(2, "COL-1"))
            ]),
            &[("delta.columnMapping.maxColumnId", "2")],
        );
        assert!(is_conflict(verdict(&old, &collides, &[])));
        let lowered = meta(
            json!([col("a", true, cm(1, "col-1"))]),
            &[("delta.columnMapping.maxColumnId", "0")],
        );
        assert!(is_conflict(verdict(&old, &lowered, &[])));
    }

    #[test]
    fn unknown_keys_fields_and_tightening() {
        let old = meta(
            json!([col("a", true, json!({}))]),
            &[("delta.constraints.x", "a > 0")],
        );
        let unknown = meta(
            json!([col("a", true, json!({}))]),
            &[
                ("delta.constraints.x", "a > 0"),
                ("delta.somethingNew", "1"),
            ],
        );
        assert!(is_conflict(verdict(&old, &unknown, &[])));
        let user = meta(
            json!([col("a", true, json!({}))]),
            &[("delta.constraints.x", "a > 0"), ("owner", "me")],
        );
        assert_eq!(verdict(&old, &user, &[]), Verdict::Compatible);
        let dropped_rule = meta(json!([col("a", true, json!({}))]), &[]);
        assert_eq!(verdict(&old, &dropped_rule, &[]), Verdict::Compatible);
        let changed_rule = meta(
            json!([col("a", true, json!({}))]),
            &[("delta.constraints.x", "a > 5")],
        );
        assert_eq!(verdict(&old, &changed_rule, &[]), Verdict::CheckNewRows);
        let not_null = meta(
            json!([col("a", false, json!({}))]),
            &[("delta.constraints.x", "a > 0")],
        );
        assert_eq!(verdict(&old, &not_null, &[]), Verdict::CheckNewRows);
        let mut extra = old.clone();
        extra.extra.insert("somethingNew".into(), json!(1));
        assert!(is_conflict(verdict(&old, &extra, &[])));
        let mut parts = old.clone();
        parts.partition_columns = vec!["a".into()];
        assert!(is_conflict(verdict(&old, &parts, &[])));
    }
}
