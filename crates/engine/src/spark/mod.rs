//! Spark SQL's meaning for expressions. A Delta table's CHECK constraints and generated columns
//! are Spark SQL: every writer (Delta Spark, Databricks, this engine) must evaluate them alike,
//! or a table's own rules stop holding. Our SQL is read as Spark SQL too, so a statement copied
//! from a Databricks notebook computes the same values.
//!
//! - `rewrite`: the analyzer step giving arithmetic Spark's types and ANSI errors, used by every
//!   planning context (`context`) and by every standalone expression (`expr_plan`).
//! - `arith`: the operators themselves.
//! - `portable`: which expressions may be stored in a table's log at all: those whose every
//!   construct evaluates here exactly as in Spark. Others are refused, never stored and then
//!   evaluated differently.
//!
//! ANSI mode (Spark 4's default) is the engine's: overflow, a zero divisor and an invalid cast
//! raise. Log-stored rules are always evaluated in ANSI mode.

pub mod arith;
pub mod portable;
pub mod rewrite;

use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

/// Spark 4's `spark.sql.ansi.enabled` default.
pub const ANSI: bool = true;

/// `state` with Spark's expression semantics in its analyzer, ahead of type coercion.
pub fn with_spark_semantics(state: SessionState) -> SessionState {
    let rules = analyzer_rules(state.analyzer().rules.clone());
    SessionStateBuilder::new_from_existing(state)
        .with_analyzer_rules(rules)
        .build()
}

/// `rules` with the Spark step ahead of type coercion.
fn analyzer_rules(
    mut rules: Vec<std::sync::Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>>,
) -> Vec<std::sync::Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> {
    let at = rules
        .iter()
        .position(|r| r.name() == "type_coercion")
        .unwrap_or(0);
    rules.insert(at, rewrite::rule(ANSI));
    rules
}

/// A planning context that reads expressions as Spark does: the one every part of the engine
/// plans queries and expressions with.
/// `2.5` is read as DECIMAL(2,1), as Spark reads it (so `v * 1.1` is exact decimal arithmetic,
/// as when Spark computed the rows already in a table); `2.5e0` is a DOUBLE.
pub fn context() -> SessionContext {
    context_with(SessionConfig::new())
}

/// The context a table's stored rules (CHECK constraints, invariants, generation expressions) are
/// planned in: [`context`], with `2.5` read as DECIMAL(2,1) as Spark reads it (so `v * 1.1` is
/// exact decimal arithmetic, as when Spark computed the rows already in the table).
pub fn rules_context() -> SessionContext {
    context()
}

/// [`context`] with `config`.
pub fn context_with(mut config: SessionConfig) -> SessionContext {
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    // One build (a state is built per statement): the default analyzer's rules plus ours.
    let rules = analyzer_rules(datafusion::optimizer::Analyzer::new().rules);
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_analyzer_rules(rules)
        .build();
    SessionContext::new_with_state(state)
}
