//! The concurrency matrix (`delta-rlc scenario matrix`, docs/concurrency.md): every scenario file
//! whose two transactions overlap (the loser started before the winner committed) becomes one row —
//! the loser's and the winner's statement kinds, the isolation level, this engine's outcome (the
//! file's own expectation, which the test suite checks), open-source Delta's (the same scenario
//! run with `legacy=true`, which reproduces OSS Delta's checks), Databricks' documented rule for
//! the two kinds, and the file. Generated from the files, so it cannot drift from them
//! (`engine/tests/it/scenarios.rs` compares it with docs/concurrency.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::format::parse;
use super::run::run_scenario;
use crate::error::{EngineError, Result};

/// One overlapping pair of transactions in one scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    pub loser: String,
    pub winner: String,
    pub isolation: String,
    pub ours: String,
    pub oss: String,
    pub file: String,
    pub name: String,
}

/// Every `.toml` file under `dir`, sorted.
fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| EngineError::invalid(format!("{}: {e}", dir.display())))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            scenario_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
    out.sort();
    Ok(())
}

/// The statement kind a matrix row names (a label for people; the statement itself is planned
/// from its AST when the scenario runs).
pub fn statement_kind(sql: &str) -> String {
    let s = sql.to_ascii_uppercase();
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let has = |w: &str| s.contains(w);
    if s.starts_with("INSERT OVERWRITE") || has(" REPLACE WHERE ") {
        return "INSERT OVERWRITE".into();
    }
    if s.starts_with("INSERT") {
        return if has(" FROM T") {
            "INSERT … SELECT (reads t)"
        } else {
            "INSERT"
        }
        .into();
    }
    if s.starts_with("MERGE WITH SCHEMA EVOLUTION") {
        return "MERGE (schema evolution)".into();
    }
    for k in ["DELETE", "UPDATE", "MERGE", "RESTORE"] {
        if s.starts_with(k) {
            return k.into();
        }
    }
    if s.starts_with("OPTIMIZE") {
        return if has("ZORDER") {
            "OPTIMIZE ZORDER"
        } else {
            "OPTIMIZE"
        }
        .into();
    }
    if s.starts_with("ALTER TABLE") {
        const FEATURES: &[(&str, &str)] = &[
            ("DELTA.COLUMNMAPPING.MODE", "column mapping"),
            ("DELTA.ENABLECHANGEDATAFEED", "change data feed"),
            ("DELTA.ENABLEDELETIONVECTORS", "deletion vectors"),
            ("DELTA.ENABLEROWTRACKING", "row tracking"),
            ("DELTA.ENABLEINCOMMITTIMESTAMPS", "in-commit timestamps"),
            ("DELTA.ENABLETYPEWIDENING", "type widening"),
            ("DELTA.APPENDONLY", "append-only"),
        ];
        if has("SET TBLPROPERTIES") {
            if let Some((_, f)) = FEATURES.iter().find(|(k, _)| has(k)) {
                return format!("ALTER: {f} on/off");
            }
            return "ALTER: SET TBLPROPERTIES".into();
        }
        for (k, label) in [
            ("ADD COLUMN", "ALTER: ADD COLUMNS"),
            ("ADD CONSTRAINT", "ALTER: ADD CONSTRAINT"),
            ("DROP CONSTRAINT", "ALTER: DROP CONSTRAINT"),
            ("RENAME COLUMN", "ALTER: RENAME COLUMN"),
            ("DROP COLUMN", "ALTER: DROP COLUMN"),
            (" TYPE ", "ALTER: widen a column"),
            ("SET NOT NULL", "ALTER: SET NOT NULL"),
            ("DROP NOT NULL", "ALTER: DROP NOT NULL"),
            ("CLUSTER BY", "ALTER: CLUSTER BY"),
            ("UNSET TBLPROPERTIES", "ALTER: UNSET TBLPROPERTIES"),
        ] {
            if has(k) {
                return label.into();
            }
        }
        return "ALTER".into();
    }
    s.split(' ').next().unwrap_or("?").to_string()
}

/// Appended to the statement kinds of a scenario whose table has an identity column.
const IDENTITY_TABLE: &str = " (identity table)";

/// Databricks' documented outcome for two statement kinds (row-level concurrency on, deletion
/// vectors on; "Isolation levels and write conflicts", 2026), as a category.
pub fn databricks_documented(loser: &str, winner: &str, isolation: &str) -> &'static str {
    // "Row-level concurrency … does not support concurrent transactions on tables with
    // identity columns".
    if loser.ends_with(IDENTITY_TABLE) || winner.ends_with(IDENTITY_TABLE) {
        return "conflict (identity column: no concurrent transactions)";
    }
    let metadata =
        |k: &str| k.starts_with("ALTER") || k.contains("schema evolution") || k == "RESTORE";
    let append = |k: &str| k == "INSERT";
    let optimize = |k: &str| k.starts_with("OPTIMIZE");
    if metadata(winner) {
        return "conflict (metadata change)";
    }
    if metadata(loser) {
        // The metadata change loses: only what it read can conflict.
        let reads_rows = loser.contains("CONSTRAINT")
            || loser.contains("NOT NULL")
            || loser == "RESTORE"
            || loser.contains("schema evolution");
        return if append(winner) && !reads_rows {
            "no conflict"
        } else {
            "can conflict"
        };
    }
    if loser == "INSERT OVERWRITE" || winner == "INSERT OVERWRITE" {
        return "can conflict";
    }
    if append(loser) {
        return "no conflict";
    }
    if append(winner) {
        return if isolation == "Serializable" {
            "can conflict"
        } else {
            "no conflict"
        };
    }
    if optimize(loser) && optimize(winner) {
        return "can conflict";
    }
    if optimize(loser) || optimize(winner) {
        return if loser.contains("ZORDER") || winner.contains("ZORDER") {
            "can conflict"
        } else {
            "no conflict (row-level)"
        };
    }
    "conflict only on the same rows"
}

/// The rows of every overlapping scenario under `dir`; each file that is not itself a legacy
/// twin is also run with `legacy=true` (in a folder under `work`) for the OSS column.
pub async fn matrix(dir: &Path, work: &Path) -> Result<Vec<MatrixRow>> {
    let mut files = Vec::new();
    scenario_files(dir, &mut files)?;
    let mut rows = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let source = std::fs::read_to_string(path)
            .map_err(|e| EngineError::invalid(format!("{}: {e}", path.display())))?;
        let shown = path.strip_prefix(dir).unwrap_or(path).display().to_string();
        let f = parse(&shown, &source)?;
        let Some((loser, winner)) = overlapping_pair(&f) else {
            continue;
        };
        let sql = |n: &str| {
            f.txn
                .iter()
                .find(|t| t.name.get_ref() == n)
                .map(|t| t.sql.get_ref().clone())
                .unwrap_or_default()
        };
        let config = |k: &str| {
            f.config.get(k).map(|v| match v.get_ref() {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        let legacy = config("legacy").is_some_and(|v| v == "true");
        let isolation = config("isolation").unwrap_or_else(|| "WriteSerializable".into());
        let expected = f
            .expect
            .as_ref()
            .and_then(|e| e.outcomes.get(&loser))
            .and_then(|v| v.as_str())
            .unwrap_or("—")
            .to_string();
        let oss = if legacy {
            expected.clone()
        } else {
            let location = work.join(format!("{i:04}"));
            let overrides = [("legacy".to_string(), "true".to_string())];
            let report =
                run_scenario(&shown, &source, &location.display().to_string(), &overrides).await?;
            report
                .outcomes
                .iter()
                .find(|(n, _)| *n == loser)
                .map(|(_, o)| o.label())
                .unwrap_or_else(|| "—".into())
        };
        let identity = f.table.columns.to_ascii_uppercase().contains(" IDENTITY");
        let kind = |n: &str| {
            let k = statement_kind(&sql(n));
            if identity {
                format!("{k}{IDENTITY_TABLE}")
            } else {
                k
            }
        };
        rows.push(MatrixRow {
            loser: kind(&loser),
            winner: kind(&winner),
            isolation: if legacy {
                "legacy (OSS checks)".into()
            } else {
                isolation
            },
            ours: expected,
            oss,
            file: shown,
            name: f.name.clone(),
        });
    }
    rows.sort_by(|a, b| {
        (&a.loser, &a.winner, &a.isolation, &a.file).cmp(&(
            &b.loser,
            &b.winner,
            &b.isolation,
            &b.file,
        ))
    });
    Ok(rows)
}

/// (loser, winner): the second transaction to commit and the first, when the second started
/// before the first committed.
fn overlapping_pair(f: &super::ScenarioFile) -> Option<(String, String)> {
    let mut started: BTreeMap<String, usize> = BTreeMap::new();
    let mut commits: Vec<(String, usize)> = Vec::new();
    for (i, s) in f.steps.iter().enumerate() {
        let (name, phase) = s.get_ref().split_once('.')?;
        if phase == "start" || phase == "run" {
            started.entry(name.to_string()).or_insert(i);
        }
        if phase == "commit" || phase == "run" {
            commits.push((name.to_string(), i));
        }
    }
    let (winner, won_at) = commits.first()?.clone();
    let (loser, _) = commits.get(1)?.clone();
    (started.get(&loser)? < &won_at).then_some((loser, winner))
}

/// The matrix as markdown (docs/concurrency.md).
pub fn to_markdown(rows: &[MatrixRow]) -> String {
    let mut out = String::from(
        "# Concurrency matrix\n\n\
Generated by `delta-rlc scenario matrix tests/scenarios > docs/concurrency.md` from the scenario\n\
files (a test fails when this file is out of date). One row per scenario in which two\n\
transactions overlap: the **loser** started before the **winner** committed and commits after\n\
it. *delta-rlc* is the loser's outcome the scenario expects (checked by the test suite); *OSS\n\
Delta* is the same scenario run with `legacy=true` (open-source Delta's checks); *Databricks*\n\
is the rule its documentation states for the two statement kinds with row-level concurrency and\n\
deletion vectors on (a category, not a run). A `Twin` in the scenario's name marks a true\n\
conflict that must still abort.\n\n\
| loser | winner | isolation | delta-rlc | OSS Delta | Databricks (documented) | scenario |\n\
|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let twin = if r.name.to_ascii_lowercase().contains("twin") {
            " (twin)"
        } else {
            ""
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | [{}](../tests/scenarios/{}){} |\n",
            r.loser,
            r.winner,
            r.isolation,
            r.ours,
            r.oss,
            databricks_documented(&r.loser, &r.winner, &r.isolation),
            r.file,
            r.file,
            twin
        ));
    }
    let rescued = rows
        .iter()
        .filter(|r| r.ours == "committed" && r.oss != "committed")
        .count();
    out.push_str(&format!(
        "\n{} overlapping scenarios; in {rescued} the loser commits where OSS Delta aborts it.\n",
        rows.len()
    ));
    out
}
