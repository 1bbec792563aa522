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

/// A value as written: `false`, `'false'`, `"false"` or a bare word.
fn value_text(v: &Expr) -> Result<String> {
    match v {
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Ok(b.to_string()),
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Ok(s.clone()),
            Value::Number(n, _) => Ok(n.to_string()),
            other => Err(EngineError::invalid(format!(
                "SET: unexpected value {other}"
            ))),
        },
        Expr::Identifier(i) => Ok(i.value.clone()),
        other => Err(EngineError::invalid(format!(
            "SET: unexpected value {other}"
        ))),
    }
}
