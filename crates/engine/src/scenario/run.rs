//! Executing a scenario and judging its expectations.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::format::{expect_key_offset, line_of, parse, OUTCOMES};
use crate::conflict_config::ConflictConfig;
use crate::env::Env;
use crate::error::{EngineError, Result};
use crate::events::Event;
use crate::sql::{Prepared, SqlSession};
use crate::txn::Transaction;

#[derive(Debug, Clone)]
pub enum TxnOutcome {
    Committed {
        version: Option<u64>,
        attempts: u32,
        events: Vec<Event>,
        affected_rows: Option<u64>,
        /// Why each earlier run aborted, when re-execution ran the statement again.
        earlier_runs: Vec<String>,
    },
    Aborted {
        kind: String,
        /// The abort's reason (`AbortReason::name`).
        reason: String,
        message: String,
        /// How many times the statement ran before giving up.
        runs: u32,
    },
    Failed {
        message: String,
    },
    NotRun,
}

impl TxnOutcome {
    /// "committed", the conflict kind, "failed" or "not run".
    pub fn label(&self) -> String {
        match self {
            TxnOutcome::Committed { .. } => "committed".into(),
            TxnOutcome::Aborted { kind, .. } => kind.clone(),
            TxnOutcome::Failed { .. } => "failed".into(),
            TxnOutcome::NotRun => "not run".into(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            TxnOutcome::Committed {
                version,
                attempts,
                events,
                affected_rows,
                earlier_runs,
            } => json!({
                "outcome": "committed", "version": version, "attempts": attempts, "affectedRows": affected_rows,
                "runs": earlier_runs.len() + 1, "earlierRuns": earlier_runs,
                "events": events.iter().map(|e| json!({"name": e.name, "fields": e.fields})).collect::<Vec<_>>(),
            }),
            TxnOutcome::Aborted {
                kind,
                reason,
                message,
                runs,
            } => json!({"outcome": kind, "reason": reason, "error": message, "runs": runs}),
            TxnOutcome::Failed { message } => json!({"outcome": "failed", "error": message}),
            TxnOutcome::NotRun => json!({"outcome": "not run"}),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ScenarioReport {
    pub name: String,
    pub outcomes: Vec<(String, TxnOutcome)>,
    pub queries: Vec<(String, Vec<Vec<Value>>)>,
    /// Expectation failures; empty = the scenario passed.
    pub mismatches: Vec<String>,
}

impl ScenarioReport {
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "passed": self.passed(),
            "transactions": self.outcomes.iter().map(|(n, o)| { let mut v = o.to_json(); v["name"] = json!(n); v }).collect::<Vec<_>>(),
            "queries": self.queries.iter().map(|(q, rows)| json!({"sql": q, "rows": rows})).collect::<Vec<_>>(),
            "mismatches": self.mismatches,
        })
    }

    pub fn to_text(&self) -> String {
        let mut s = format!("scenario: {}\n", self.name);
        for (n, o) in &self.outcomes {
            match o {
                TxnOutcome::Committed {
                    version,
                    attempts,
                    events,
                    earlier_runs,
                    ..
                } => {
                    let version = version.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
                    // Nothing to commit (e.g. a re-run whose rows were gone): the version is the
                    // one it read, not one it wrote.
                    s.push_str(&match attempts {
                        0 => format!("  {n}: committed nothing (the table is unchanged at version {version})\n"),
                        _ => format!("  {n}: committed version {version} ({attempts} attempt(s))\n"),
                    });
                    for (run, why) in earlier_runs.iter().enumerate() {
                        s.push_str(&format!("      run {} aborted: {why}\n", run + 1));
                    }
                    for e in events {
                        s.push_str(&format!(
                            "      event {} {}\n",
                            e.name,
                            Value::Object(e.fields.clone())
                        ));
                    }
                }
                TxnOutcome::Aborted { message, .. } => {
                    s.push_str(&format!("  {n}: aborted: {message}\n"))
                }
                TxnOutcome::Failed { message } => {
                    s.push_str(&format!("  {n}: failed: {message}\n"))
                }
                TxnOutcome::NotRun => s.push_str(&format!("  {n}: not run\n")),
            }
        }
        for (q, rows) in &self.queries {
            s.push_str(&format!(
                "  query {q}\n    -> {}\n",
                Value::from(rows.clone())
            ));
        }
        if self.passed() {
            s.push_str("  PASS\n");
        } else {
            for m in &self.mismatches {
                s.push_str(&format!("  MISMATCH {m}\n"));
            }
        }
        s
    }
}

fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        other => json!(other.to_string()),
    }
}

/// Normalizes JSON values so `[[152]]` in TOML equals a count returned as a number or string.
fn norm(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "NULL".into(),
        other => other.to_string(),
    }
}

enum Phase {
    Pending,
    Started(Option<Box<Transaction>>),
    Done,
}

/// Parses and runs one scenario. `location` is the table location (a fresh folder or memory URL);
/// `overrides` are `--conf` settings applied after the file's [config].
pub async fn run_scenario(
    path: &str,
    source: &str,
    location: &str,
    overrides: &[(String, String)],
) -> Result<ScenarioReport> {
    let f = parse(path, source)?;
    let at = |offset: usize| format!("{path}:{}", line_of(source, offset));
    let mut conflict = ConflictConfig::from_env()?;
    for (k, v) in &f.config {
        let value = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        conflict
            .set(k, &value)
            .map_err(|e| EngineError::invalid(format!("{}: {e}", at(v.span().start))))?;
    }
    for (k, v) in overrides {
        conflict.set(k, v)?;
    }
    // Validate transactions, steps and expectations before running anything.
    let mut txns: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for t in &f.txn {
        if txns
            .insert(
                t.name.get_ref().clone(),
                (t.sql.get_ref().clone(), t.sql.span().start),
            )
            .is_some()
        {
            return Err(EngineError::invalid(format!(
                "{}: transaction {} is defined twice",
                at(t.name.span().start),
                t.name.get_ref()
            )));
        }
    }
    let mut seen_steps = std::collections::HashSet::new();
    let mut started = std::collections::HashSet::new();
    for s in &f.steps {
        let text = s.get_ref();
        let (name, phase) = text.split_once('.').ok_or_else(|| {
            EngineError::invalid(format!(
                "{}: step {text:?} must be NAME.start, NAME.commit or NAME.run",
                at(s.span().start)
            ))
        })?;
        if !txns.contains_key(name) {
            return Err(EngineError::invalid(format!(
                "{}: step {text:?} names unknown transaction {name}",
                at(s.span().start)
            )));
        }
        if !seen_steps.insert(text.clone()) {
            return Err(EngineError::invalid(format!(
                "{}: step {text:?} appears twice",
                at(s.span().start)
            )));
        }
        match phase {
            "start" => {
                started.insert(name.to_string());
            }
            "commit" if !started.contains(name) => {
                return Err(EngineError::invalid(format!(
                    "{}: {name}.commit before {name}.start",
                    at(s.span().start)
                )))
            }
            "commit" => {}
            "run" if started.contains(name) || seen_steps.contains(&format!("{name}.commit")) => {
                return Err(EngineError::invalid(format!(
                    "{}: {name}.run combined with start/commit",
                    at(s.span().start)
                )))
            }
            "run" => {
                started.insert(name.to_string());
            }
            other => {
                return Err(EngineError::invalid(format!(
                    "{}: unknown phase {other:?} (start, commit, run)",
                    at(s.span().start)
                )))
            }
        }
    }
    if let Some(e) = &f.expect {
        for (name, v) in &e.outcomes {
            let line = at(expect_key_offset(source, name));
            if !txns.contains_key(name) {
                return Err(EngineError::invalid(format!(
                    "{line}: expectation for unknown transaction {name}"
                )));
            }
            let Some(v) = v.as_str() else {
                return Err(EngineError::invalid(format!(
                    "{line}: the expected outcome of {name} must be a string"
                )));
            };
            if !OUTCOMES.contains(&v) {
                return Err(EngineError::invalid(format!(
                    "{line}: unknown outcome {v:?} (one of {})",
                    OUTCOMES.join(", ")
                )));
            }
        }
    }

    let mut session = SqlSession::new(Env::default(), conflict);
    session.register("t", location);
    let mut create = format!("CREATE TABLE t ({})", f.table.columns);
    if !f.table.partition_by.is_empty() {
        create.push_str(&format!(
            " PARTITIONED BY ({})",
            f.table.partition_by.join(", ")
        ));
    }
    if !f.table.cluster_by.is_empty() {
        create.push_str(&format!(" CLUSTER BY ({})", f.table.cluster_by.join(", ")));
    }
    if !f.table.properties.is_empty() {
        let props: Vec<String> = f
            .table
            .properties
            .iter()
            .map(|(k, v)| format!("'{k}' = '{}'", v.replace('\'', "''")))
            .collect();
        create.push_str(&format!(" TBLPROPERTIES ({})", props.join(", ")));
    }
    session
        .execute(&create)
        .await
        .map_err(|e| EngineError::invalid(format!("{path}: [table]: {e}")))?;
    for s in &f.table.setup {
        session
            .execute(s.get_ref())
            .await
            .map_err(|e| EngineError::invalid(format!("{}: setup: {e}", at(s.span().start))))?;
    }

    let mut phases: BTreeMap<String, Phase> =
        txns.keys().map(|k| (k.clone(), Phase::Pending)).collect();
    let mut outcomes: BTreeMap<String, TxnOutcome> = txns
        .keys()
        .map(|k| (k.clone(), TxnOutcome::NotRun))
        .collect();
    for s in &f.steps {
        let (name, phase) = s.get_ref().split_once('.').unwrap_or_default();
        let (sql, sql_at) = txns.get(name).cloned().unwrap_or_default();
        if phase == "start" || phase == "run" {
            match session.prepare(&sql).await {
                Ok(Prepared::Write(t)) => {
                    phases.insert(name.into(), Phase::Started(Some(t)));
                }
                Ok(_) => {
                    phases.insert(name.into(), Phase::Started(None));
                }
                Err(e) if is_syntax(&e) => {
                    return Err(EngineError::invalid(format!(
                        "{}: transaction {name}: {e}",
                        at(sql_at)
                    )));
                }
                Err(e) => {
                    outcomes.insert(name.into(), outcome_of_error(e));
                    phases.insert(name.into(), Phase::Done);
                }
            }
        }
        if phase == "commit" || phase == "run" {
            let state = phases.insert(name.into(), Phase::Done);
            if let Some(Phase::Started(t)) = state {
                let o = match t {
                    None => TxnOutcome::Committed {
                        version: None,
                        attempts: 0,
                        events: vec![],
                        affected_rows: None,
                        earlier_runs: vec![],
                    },
                    Some(t) => match commit_or_rerun(&session, t, &sql).await {
                        Ok((r, earlier_runs)) => TxnOutcome::Committed {
                            version: r.version,
                            attempts: r.attempts,
                            events: r.events,
                            affected_rows: r.affected_rows,
                            earlier_runs,
                        },
                        Err(e) => outcome_of_error(e),
                    },
                };
                outcomes.insert(name.into(), o);
            }
        }
    }

    let mut report = ScenarioReport {
        name: f.name.clone(),
        outcomes: outcomes.clone().into_iter().collect(),
        queries: vec![],
        mismatches: vec![],
    };
    if let Some(e) = &f.expect {
        for (name, want) in &e.outcomes {
            let want_str = want.as_str().unwrap_or_default();
            let got = outcomes
                .get(name)
                .map(TxnOutcome::label)
                .unwrap_or_default();
            let ok = match want_str {
                "aborted" => matches!(outcomes.get(name), Some(TxnOutcome::Aborted { .. })),
                w => got == w,
            };
            if !ok {
                let detail = match outcomes.get(name) {
                    Some(TxnOutcome::Aborted { message, .. })
                    | Some(TxnOutcome::Failed { message }) => format!(" ({message})"),
                    _ => String::new(),
                };
                report.mismatches.push(format!(
                    "{}: {name} expected {want_str}, got {got}{detail}",
                    at(expect_key_offset(source, name))
                ));
            }
        }
        for (name, want) in &e.runs {
            let got = match outcomes.get(name) {
                Some(TxnOutcome::Committed { earlier_runs, .. }) => earlier_runs.len() as u32 + 1,
                Some(TxnOutcome::Aborted { runs, .. }) => *runs,
                _ => 0,
            };
            if got != *want.get_ref() {
                report.mismatches.push(format!(
                    "{}: {name} expected {} run(s), got {got}",
                    at(want.span().start),
                    want.get_ref()
                ));
            }
        }
        for (name, want) in &e.reasons {
            let got = match outcomes.get(name) {
                Some(TxnOutcome::Aborted { reason, .. }) => reason.as_str(),
                _ => "none (not aborted)",
            };
            if got != want.get_ref() {
                report.mismatches.push(format!(
                    "{}: {name} expected abort reason {}, got {got}",
                    at(want.span().start),
                    want.get_ref()
                ));
            }
        }
        for (name, wanted) in &e.events {
            let fired: Vec<String> = match outcomes.get(name) {
                Some(TxnOutcome::Committed { events, .. }) => {
                    events.iter().map(|e| e.name.to_string()).collect()
                }
                _ => vec![],
            };
            for w in wanted {
                if !fired.contains(w.get_ref()) {
                    report.mismatches.push(format!(
                        "{}: {name} expected event {} (fired: {fired:?})",
                        at(w.span().start),
                        w.get_ref()
                    ));
                }
            }
        }
        for q in &e.query {
            // A query that fails is a mismatch like a wrong answer (the run's outcomes stay
            // readable, e.g. for the matrix's legacy runs, where an aborted ALTER leaves a column
            // the query names absent).
            let out = match session.execute(q.sql.get_ref()).await {
                Ok(out) => out,
                Err(err) => {
                    report.mismatches.push(format!(
                        "{}: query failed: {}",
                        at(q.sql.span().start),
                        crate::error::one_line(&err.to_string())
                    ));
                    continue;
                }
            };
            let rows = batches_to_rows(&out.batches)?;
            let want: Vec<Vec<Value>> = q
                .rows
                .iter()
                .map(|r| r.iter().map(toml_to_json).collect())
                .collect();
            let got_n: Vec<Vec<String>> =
                rows.iter().map(|r| r.iter().map(norm).collect()).collect();
            let want_n: Vec<Vec<String>> =
                want.iter().map(|r| r.iter().map(norm).collect()).collect();
            if got_n != want_n {
                report.mismatches.push(format!(
                    "{}: query returned {}, expected {}",
                    at(q.sql.span().start),
                    Value::from(rows.clone()),
                    Value::from(want)
                ));
            }
            report.queries.push((q.sql.get_ref().clone(), rows));
        }
    }
    Ok(report)
}

/// Commits the started transaction `t`; with re-execution on (`[config] retryOnConflict`), a
/// true conflict runs `sql` again from the latest version, as `SqlSession::execute` would.
async fn commit_or_rerun(
    session: &SqlSession,
    t: Box<Transaction>,
    sql: &str,
) -> Result<(crate::txn::CommitResult, Vec<String>)> {
    let mut started = Some(t);
    crate::txn::reexecute::run_statement(&session.reexecution(), &session.env, |_| {
        let first = started.take();
        async move {
            let t = match first {
                Some(t) => t,
                None => match session.prepare(sql).await? {
                    Prepared::Write(t) => t,
                    _ => {
                        return Err(EngineError::Internal(
                            "a re-run statement no longer writes".into(),
                        ))
                    }
                },
            };
            t.commit().await
        }
    })
    .await
}

fn is_syntax(e: &EngineError) -> bool {
    e.to_string().contains("SQL syntax error")
        || matches!(e, EngineError::DataFusion(d) if matches!(d.as_ref(), datafusion::error::DataFusionError::SQL(..)))
}

fn outcome_of_error(e: EngineError) -> TxnOutcome {
    match &e {
        EngineError::Conflict(c) => TxnOutcome::Aborted {
            kind: c.kind.name().to_string(),
            reason: c.reason.name().to_string(),
            message: e.to_string(),
            runs: c.statement_runs,
        },
        _ => TxnOutcome::Failed {
            message: e.to_string(),
        },
    }
}

fn batches_to_rows(batches: &[arrow::array::RecordBatch]) -> Result<Vec<Vec<Value>>> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let opts = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<std::result::Result<_, _>>()?;
        for r in 0..b.num_rows() {
            rows.push(
                fmts.iter()
                    .map(|f| {
                        let s = f.value(r).to_string();
                        s.parse::<i64>()
                            .map(Value::from)
                            .unwrap_or(Value::String(s))
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}
