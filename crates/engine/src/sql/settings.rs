//! `SET key = value`: the session settings a SQL session honours. The one key is Spark's
//! `spark.sql.ansi.enabled` ([`crate::spark::SparkOptions`]); any other key is refused with one
//! line, never accepted and ignored (a script that relies on a setting must not run without it).
//! The statement is read from sqlparser's AST, never from its text.

use datafusion::sql::sqlparser::ast::{Expr, Set, Statement, Value};

use crate::error::{EngineError, Result};
use crate::spark::SparkOptions;

/// The session's options after `stmt` (a parsed `SET …`), from its `current` options.
pub fn read_set(stmt: &Statement, current: SparkOptions) -> Result<SparkOptions> {
    let Statement::Set(set) = stmt else {
        return Err(EngineError::invalid("not a SET statement"));
    };
    let (key, values) = match set {
        Set::SingleAssignment {
            variable, values, ..
        } => (variable.to_string(), values),
        _ => {
            return Err(EngineError::Unsupported(format!(
                "SET: only `SET {} = true|false` is supported",
                crate::spark::ANSI_KEY
            )))
        }
    };
    // The key first: an unknown one is refused whatever its value.
    current
        .clone()
        .set_key(&key, "true")
        .map_err(EngineError::invalid)?;
    let value = match values.as_slice() {
        [v] => value_text(v)?,
        _ => {
            return Err(EngineError::invalid(format!(
                "SET {key}: expected one value"
            )))
        }
    };
    let mut options = current;
    options
        .set_key(&key, &value)
        .map_err(EngineError::invalid)?;
    Ok(options)
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
