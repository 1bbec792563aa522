//! Spark SQL's meaning for expressions. A Delta table's CHECK constraints and generated columns
//! are Spark SQL: every writer (Delta Spark, Databricks, this engine) must evaluate them alike,
//! or a table's own rules stop holding. Our SQL is read as Spark SQL too, so a statement copied
//! from a Databricks notebook computes the same values.
//!
//! - `rewrite`: the step giving arithmetic Spark's types and ANSI errors, applied to every plan
//!   by `plan_rule` (with VALUES/UNION typing) in every planning context (`context`) and to every
//!   standalone expression (`expr_plan`).
//! - `coerced`: the steps after type coercion: `in_list` (DataFusion's physical IN list mistakes
//!   a CASE item for a constant), `extrema` (`greatest`/`least` with Spark's order of floats) and
//!   `decimal_float` (DECIMAL to DOUBLE rounded once, to the nearest).
//! - `datetime`: Spark's `year`, `month`, `day` over DATE and TIMESTAMP_NTZ.
//! - `opaque`: the identity DataFusion's simplifier and IN list cannot see through.
//! - `arith`: the operators themselves.
//! - `lexical`: text Spark's lexer would cut into other tokens (a string or comment to one, code
//!   to the other), refused in every statement and expression string.
//! - `portable`: which expressions may be stored in a table's log at all: those whose every
//!   construct evaluates here exactly as in Spark. Others are refused, never stored and then
//!   evaluated differently.
//!
//! ANSI mode (Spark 4's default) is the engine's: overflow, a zero divisor and an invalid cast
//! raise. A SQL session may turn it off (`SET spark.sql.ansi.enabled = false`, [`SparkOptions`]):
//! its statements then wrap on overflow and give NULL for a zero divisor, as Spark's legacy mode
//! does. Log-stored rules are always evaluated in ANSI mode (where legacy would store a wrapped
//! or NULL value, the write is refused instead: fail closed).

mod aggregates;
pub(crate) mod alias_case;
pub mod arith;
mod bitwise;
mod checked_sum;
pub mod coerced;
mod collections;
pub(crate) mod compound_names;
mod convert_udf;
mod date_format;
pub mod datetime;
pub mod decimal_arith;
mod decimal_avg;
pub mod decimal_float;
mod distinct_sum;
pub mod exact_cast;
pub mod extrema;
mod field_case;
pub mod float_decimal;
mod float_extrema;
mod float_frame;
mod float_keys;
mod float_plan_keys;
pub mod float_text;
mod frame_values;
pub mod function_syntax;
pub(crate) mod group_by_names;
pub mod ident_case;
pub mod in_list;
pub mod lexical;
pub mod literals;
mod logarithm;
mod moments;
pub(crate) mod natural_join;
pub mod opaque;
pub(crate) mod outer_names;
pub mod plan_rule;
pub mod portable;
mod range_frame;
pub mod rewrite;
mod rounding;
mod session_template;
mod struct_names;
mod substring;
pub(crate) mod table_aliases;
mod text_time;
pub mod timestamp_text;
pub mod trunc;
pub mod wider_decimal;
mod window_rules;

use std::any::Any;

use datafusion::common::config::{ConfigEntry, ConfigExtension, ConfigOptions, ExtensionOptions};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

/// Spark 4's `spark.sql.ansi.enabled` default.
pub const ANSI: bool = true;

/// The Spark settings a planning context carries, as a DataFusion config extension under the
/// `spark` prefix (the analyzer step reads them from the context's options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparkOptions {
    /// `spark.sql.ansi.enabled`.
    pub ansi: bool,
}

impl Default for SparkOptions {
    fn default() -> Self {
        SparkOptions { ansi: ANSI }
    }
}

/// The one key a session may set: `spark.sql.ansi.enabled` (exactly: Spark's keys are
/// case-sensitive).
pub const ANSI_KEY: &str = "spark.sql.ansi.enabled";

impl SparkOptions {
    /// `key` (with its `spark.` prefix) set to `value`; anything but the ANSI key is refused
    /// with one line, never ignored.
    pub fn set_key(&mut self, key: &str, value: &str) -> Result<(), String> {
        // Spark's keys are case-sensitive: `SPARK.SQL.ANSI.ENABLED` is another (unused) key there.
        if key != ANSI_KEY {
            return Err(format!(
                "SET {key}: not a setting of this engine (the one Spark setting it honours is {ANSI_KEY})"
            ));
        }
        self.ansi = match value.trim().to_ascii_lowercase().as_str() {
            "true" => true,
            "false" => false,
            other => {
                return Err(format!(
                    "SET {ANSI_KEY}: expected true or false, found {other:?}"
                ))
            }
        };
        Ok(())
    }

    /// The options a context was built with (the default when it carries none).
    pub fn of(config: &ConfigOptions) -> SparkOptions {
        config
            .extensions
            .get::<SparkOptions>()
            .copied()
            .unwrap_or_default()
    }

    /// The options of `ctx`'s state (read in place: `ctx.state()` would clone the whole state,
    /// and this runs for every expression planned).
    pub fn of_context(ctx: &SessionContext) -> SparkOptions {
        SparkOptions::of(ctx.state_ref().read().config_options())
    }
}

impl ConfigExtension for SparkOptions {
    const PREFIX: &'static str = "spark";
}

impl ExtensionOptions for SparkOptions {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(*self)
    }

    fn set(&mut self, key: &str, value: &str) -> datafusion::common::Result<()> {
        self.set_key(&format!("spark.{key}"), value)
            .map_err(|e| datafusion::common::DataFusionError::Configuration(e))
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        vec![ConfigEntry {
            key: ANSI_KEY.to_string(),
            value: Some(self.ansi.to_string()),
            description: "Spark's ANSI mode: overflow, a zero divisor and an invalid cast raise",
        }]
    }
}

/// `state` with Spark's expression semantics in its analyzer, ahead of type coercion.
pub fn with_spark_semantics(state: SessionState) -> SessionState {
    let rules = analyzer_rules(state.analyzer().rules.clone());
    SessionStateBuilder::new_from_existing(state)
        .with_analyzer_rules(rules)
        .build()
}

/// `rules` with the Spark step ahead of type coercion and the post-coercion step right after it.
fn analyzer_rules(
    mut rules: Vec<std::sync::Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>>,
) -> Vec<std::sync::Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> {
    let at = rules
        .iter()
        .position(|r| r.name() == "type_coercion")
        .unwrap_or(0);
    rules.insert(at, plan_rule::rule(ANSI));
    // After coercion (now at `at + 1`): IN lists are typed to their common type by then.
    let after = (at + 2).min(rules.len());
    rules.insert(after, coerced::rule());
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

/// [`context`] with Spark's settings `options` (a SQL session's `SET spark.sql.ansi.enabled`).
pub fn context_for(options: SparkOptions) -> SessionContext {
    context_with(SessionConfig::new().with_option_extension(options))
}

/// [`context_for`] whose queries run in `runtime` (a session's memory pool and spill files).
pub fn context_in(
    options: SparkOptions,
    runtime: std::sync::Arc<datafusion::execution::runtime_env::RuntimeEnv>,
) -> SessionContext {
    build(
        SessionConfig::new().with_option_extension(options),
        Some(runtime),
    )
}

/// [`context`] with `config` (whose [`SparkOptions`], if any, are kept).
pub fn context_with(config: SessionConfig) -> SessionContext {
    build(config, None)
}

fn build(
    mut config: SessionConfig,
    runtime: Option<std::sync::Arc<datafusion::execution::runtime_env::RuntimeEnv>>,
) -> SessionContext {
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    // Where each column reference was written: `ident_case` respells the one that failed.
    config.options_mut().sql_parser.collect_spans = true;
    // NULL is the smallest value in an ORDER BY, as in Spark (ASC NULLS FIRST, DESC NULLS LAST);
    // DataFusion's default is Postgres's, the largest. `ORDER BY x LIMIT n` and
    // `row_number() OVER (ORDER BY x)` pick and number other rows otherwise.
    config.options_mut().sql_parser.default_null_ordering = "nulls_min".to_string();
    if config.options().extensions.get::<SparkOptions>().is_none() {
        config = config.with_option_extension(SparkOptions::default());
    }
    SessionContext::new_with_state(session_template::state(config, runtime))
}

/// A state with DataFusion's defaults, Spark's analyzer steps and functions, built from nothing:
/// what [`session_template`] keeps one of per runtime.
fn build_state(
    config: SessionConfig,
    runtime: Option<std::sync::Arc<datafusion::execution::runtime_env::RuntimeEnv>>,
) -> SessionState {
    let rules = analyzer_rules(datafusion::optimizer::Analyzer::new().rules);
    let mut state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_analyzer_rules(rules);
    // Spark's SUBSTRING syntax ahead of DataFusion's planner for it.
    // Struct fields found without regard to case, as Spark finds them (`field_case`).
    if let Some(planners) = state.expr_planners() {
        planners.insert(0, std::sync::Arc::new(substring::SubstringPlanner));
        planners.insert(0, field_case::planner());
    }
    match runtime
        .map(Ok)
        .unwrap_or_else(crate::env::unlimited_runtime)
    {
        Ok(runtime) => state = state.with_runtime_env(runtime),
        // Building a runtime without a memory pool or disk settings does not fail. Were it to,
        // DataFusion's default runtime serves: contexts without a runtime of their own plan
        // expressions and read Delta tables through the engine's scan, never a listing table
        // (folders of data files are read only in a SQL session's runtime).
        Err(e) => tracing::warn!("default query runtime: {e}"),
    }
    let mut state = state.build();
    use datafusion::execution::FunctionRegistry;
    // Spark's names DataFusion lacks (`year(d)` in a generated column), Spark's
    // `trunc(date, fmt)` (Spark has no numeric `trunc`: DataFusion's is replaced), and Spark's
    // `substring`/`left`/`right` (Postgres's positions there) and logarithms (`log(x)` natural,
    // NULL at the asymptotes) in place of DataFusion's. Registering
    // into a fresh state cannot fail; an error would only leave DataFusion's function in place,
    // which the tests of these functions would catch.
    let ours = datetime::functions()
        .into_iter()
        .chain([trunc::function()])
        .map(std::sync::Arc::new)
        .chain(substring::functions())
        .chain(logarithm::functions());
    for f in ours {
        let _ = state.register_udf(f);
    }
    // Spark's `array(…)` is DataFusion's `make_array(…)` (same element typing: the arguments'
    // common type).
    let make_array = datafusion::functions_nested::make_array::make_array_udf();
    let aliased = make_array.as_ref().clone().with_aliases(["array"]);
    let _ = state.register_udf(std::sync::Arc::new(aliased));
    state
}
