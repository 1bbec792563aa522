//! Check M of the oracle: the table's metadata at every version is what the committed ALTERs,
//! replayed in commit order, give — the columns in order (ADD COLUMNS appends, RENAME renames),
//! the `sim.*` properties, the CHECK constraints — and with column mapping every column's id and
//! physical name are distinct and within `maxColumnId`. Two concurrent metadata changes that both
//! commit (a loser re-applied on the winner's metadata) must leave exactly the serial result.

use std::collections::{BTreeMap, BTreeSet};

use delta_rlc_engine::DeltaTable as Table;
use delta_rlc_protocol::column_mapping::{ID_KEY, MAX_ID_KEY, PHYSICAL_NAME_KEY};

use crate::added_values::{columns_after, Column};
use crate::model::Op;
use crate::oracle::{Anomaly, TxnRecord};

/// What the metadata replay expects at one version.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    columns: Vec<String>,
    /// `sim.*` properties and `delta.constraints.*`.
    keys: BTreeMap<String, String>,
}

fn tracked(key: &str) -> bool {
    key.starts_with("sim.") || key.starts_with("delta.constraints.")
}

async fn actual(table: &Table, version: u64) -> Result<(Expected, Option<String>), String> {
    let s = table
        .snapshot(Some(version))
        .await
        .map_err(|e| e.to_string())?;
    let keys = s
        .metadata
        .configuration
        .iter()
        .filter(|(k, _)| tracked(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let columns = s.schema.fields.iter().map(|f| f.name.clone()).collect();
    // Column mapping: ids and physical names distinct, ids within the high-water mark.
    let mut problem = None;
    if s.metadata
        .configuration
        .get("delta.columnMapping.mode")
        .is_some_and(|m| m != "none")
    {
        let max = s
            .metadata
            .configuration
            .get(MAX_ID_KEY)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(-1);
        let mut ids = BTreeSet::new();
        let mut names = BTreeSet::new();
        for f in &s.schema.fields {
            let id = f.metadata.get(ID_KEY).and_then(|v| v.as_i64());
            let name = f.metadata.get(PHYSICAL_NAME_KEY).and_then(|v| v.as_str());
            let ok = id.is_some_and(|i| i <= max && ids.insert(i))
                && name.is_some_and(|n| names.insert(n.to_lowercase()));
            if !ok {
                problem = Some(format!(
                    "column {} has a missing, repeated or out-of-range id ({id:?}, max {max}) or physical name ({name:?})",
                    f.name
                ));
            }
        }
    }
    Ok((Expected { columns, keys }, problem))
}

/// Check M over versions `base_version + 1 ..= latest`.
pub async fn check(
    table: &Table,
    base_version: u64,
    latest: u64,
    by_version: &BTreeMap<u64, &TxnRecord>,
) -> Vec<Anomaly> {
    let anomaly = |detail: String| Anomaly { check: "M", detail };
    let mut want = match actual(table, base_version).await {
        Ok((e, _)) => e,
        Err(e) => return vec![anomaly(format!("v{base_version} unreadable: {e}"))],
    };
    for v in base_version + 1..=latest {
        let Some(rec) = by_version.get(&v) else {
            continue;
        };
        match &rec.op {
            op @ (Op::AlterAddColumn(_) | Op::AlterRenameAdded(_)) => {
                let mut cols: Vec<Column> = want
                    .columns
                    .iter()
                    .map(|c| Column {
                        name: c.clone(),
                        origin: c.clone(),
                        added: false,
                    })
                    .collect();
                columns_after(op, &mut cols);
                want.columns = cols.into_iter().map(|c| c.name).collect();
            }
            Op::AlterSetProperty(n) => {
                let (key, value) = crate::model::property_of(*n);
                want.keys.insert(key, value);
            }
            Op::AlterAddConstraint { n, bound } => {
                want.keys
                    .insert(format!("delta.constraints.c{n}"), format!("v < {bound}"));
            }
            _ => {}
        }
        match actual(table, v).await {
            Ok((got, _)) if got != want => {
                return vec![anomaly(format!(
                    "v{v} after {}: metadata {got:?}, serial replay {want:?}",
                    rec.op.sql()
                ))]
            }
            Ok((_, Some(problem))) => {
                return vec![anomaly(format!("v{v} after {}: {problem}", rec.op.sql()))]
            }
            Ok(_) => {}
            Err(e) => return vec![anomaly(format!("v{v} unreadable: {e}"))],
        }
    }
    Vec::new()
}
