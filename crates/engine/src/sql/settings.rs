//! `SET key = value`: the session settings a SQL session honours. Two keys: Spark's
//! `spark.sql.ansi.enabled` ([`crate::spark::SparkOptions`]) and `rlc.retryOnConflict`, how many
//! times a statement that aborted on a true conflict is run again
//! ([`crate::txn::reexecute`]). Any other key is refused with one line, never accepted and
//! ignored (a script that relies on a setting must not run without it). The statement is read
//! from sqlparser's AST, never from its text.

use datafusion::sql::sqlparser::ast::{Expr, Set, Statement, Value};

use crate::error::{EngineError, Result};
use crate::spark::SparkOptions;

/// `SET rlc.retryOnConflict = n`: re-runs of a statement after a true conflict (0 = off).
pub const RETRY_ON_CONFLICT_KEY: &str = "rlc.retryOnConflict";

/// What `SET` changed in a session (shared by its clones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSettings {
    pub spark: SparkOptions,
    /// Overrides the session's conflict configuration (`retryOnConflict`) once set.
    pub retry_on_conflict: Option<u32>,
}

/// The session's settings after `stmt` (a parsed `SET …`), from its `current` settings, and
/// the line that reports them.
pub fn read_set(stmt: &Statement, current: SessionSettings) -> Result<(SessionSettings, String)> {
    let Statement::Set(set) = stmt else {
        return Err(EngineError::invalid("not a SET statement"));
    };
    let (key, values) = match set {
        Set::SingleAssignment {
            variable, values, ..
        } => (variable.to_string(), values),
        _ => {
            return Err(EngineError::Unsupported(format!(
            "SET: only `SET {} = true|false` and `SET {RETRY_ON_CONFLICT_KEY} = n` are supported",
            crate::spark::ANSI_KEY
        )))
        }
    };
    let mut settings = current;
    if key == RETRY_ON_CONFLICT_KEY {
        let n = match values.as_slice() {
            [Expr::Value(v)] => match &v.value {
                Value::Number(n, _) => crate::txn::reexecute::Reexecution::parse_reruns(n)?,
                other => {
                    return Err(EngineError::invalid(format!(
                        "SET {key}: expected a count of re-runs, found {other}"
                    )))
                }
            },
            _ => {
                return Err(EngineError::invalid(format!(
                    "SET {key}: expected one count of re-runs"
                )))
            }
        };
        settings.retry_on_conflict = Some(n);
        return Ok((settings, format!("{RETRY_ON_CONFLICT_KEY} = {n}")));
    }
    // The key first: an unknown one is refused whatever its value.
    let mut probe = current.spark;
    probe
        .set_key(&key, "true")
        .map_err(|e| EngineError::invalid(format!("{e} (or {RETRY_ON_CONFLICT_KEY})")))?;
    let value = match values.as_slice() {
        [v] => value_text(v)?,
        _ => {
            return Err(EngineError::invalid(format!(
                "SET {key}: expected one value"
            )))
        }
    };
    settings
        .spark
        .set_key(&key, &value)
        .map_err(EngineError::invalid)?;
    Ok((
        settings,
        format!("{} = {}", crate::spark::ANSI_KEY, settings.spark.ansi),
    ))
}

/// A value as Spark reads it: an unquoted `true` / `false` (a quoted `'false'` is the text with
/// its quotes in Spark, an invalid boolean: refused here too).
fn value_text(v: &Expr) -> Result<String> {
    match v {
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Ok(b.to_string()),
            other => Err(EngineError::invalid(format!(
                "SET: expected true or false (unquoted), found {other}"
            ))),
        },
        Expr::Identifier(i) if i.quote_style.is_none() => Ok(i.value.clone()),
        other => Err(EngineError::invalid(format!(
            "SET: expected true or false (unquoted), found {other}"
        ))),
    }
}
