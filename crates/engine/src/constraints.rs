//! What every row written into a table must satisfy, checked on every data write (INSERT, the
//! library/Python write, UPDATE, MERGE, copy-on-write rewrites) before any file is written:
//! - NOT NULL columns (`nullable: false`), top-level and inside structs (a NOT NULL field of a
//!   struct must be set wherever the struct itself is);
//! - CHECK constraints: `delta.constraints.<name>` in the table's configuration (`checkConstraints`);
//! - column invariants: `delta.invariants` in a field's metadata (the legacy `invariants` feature).
//!
//! A row violates a CHECK constraint or an invariant when the expression is false *or NULL* (Delta's
//! rule, stricter than SQL's). An expression this engine cannot parse or plan refuses the write
//! (unsupported): a constraint is never skipped. OPTIMIZE rewrites rows that already satisfied the
//! constraints and does not check them again.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, StructArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::DataType as ArrowType;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;
use delta_rlc_protocol::schema::{DataType, StructField, StructType};
use serde_json::Value;

use crate::arrow_conv::table_arrow_schema;
use crate::error::{EngineError, Result};

/// The configuration key prefix of CHECK constraints.
pub const CONSTRAINT_PREFIX: &str = "delta.constraints.";
/// The field metadata key of a column invariant.
pub const INVARIANTS_KEY: &str = "delta.invariants";
/// The field metadata key of a generated column's expression (`generatedColumns`).
pub const GENERATION_KEY: &str = delta_rlc_protocol::schema::GENERATION_EXPRESSION_KEY;

/// A generated column: its position among the table's columns and its expression, planned.
struct Generated {
    index: usize,
    name: String,
    expr: Arc<dyn PhysicalExpr>,
    /// Columns the expression reads.
    reads: Vec<String>,
}

/// The constraint name of a `delta.constraints.<name>` key. The prefix matches in any case, as
/// Delta Spark matches it: a `Delta.Constraints.x` key is a constraint every Spark writer enforces.
pub fn constraint_name(key: &str) -> Option<&str> {
    key.get(..CONSTRAINT_PREFIX.len())
        .filter(|p| p.eq_ignore_ascii_case(CONSTRAINT_PREFIX))
        .and_then(|_| key.get(CONSTRAINT_PREFIX.len()..))
}

/// Whether a configuration key is a CHECK constraint's (see [`constraint_name`]).
pub fn is_constraint_key(key: &str) -> bool {
    constraint_name(key).is_some()
}

/// The CHECK constraints of a configuration: (name, SQL expression), names as stored.
pub fn check_constraints(config: &BTreeMap<String, String>) -> Vec<(String, String)> {
    config
        .iter()
        .filter_map(|(k, v)| constraint_name(k).map(|n| (n.to_string(), v.clone())))
        .collect()
}

/// A boolean rule over a row, planned against the table's columns.
struct Rule {
    /// How errors name it: `CHECK constraint positive (id > 0)`.
    label: String,
    expr: Arc<dyn PhysicalExpr>,
    /// Columns the expression reads (shown with an offending row).
    columns: Vec<String>,
    /// Columns the user's expression reads (a generated column's rule also names the column
    /// itself, which its expression does not read).
    reads: Vec<String>,
}

/// The constraints of one table version, planned once per write.
pub struct TableConstraints {
    schema: StructType,
    arrow_schema: arrow::datatypes::SchemaRef,
    rules: Vec<Rule>,
    generated: Vec<Generated>,
    has_not_null: bool,
}

impl TableConstraints {
    /// Plans the constraints of a table with this schema and configuration.
    pub fn new(schema: &StructType, config: &BTreeMap<String, String>) -> Result<Self> {
        let arrow_schema = table_arrow_schema(schema);
        let has_rules = config.keys().any(|k| is_constraint_key(k))
            || schema.fields.iter().any(|f| {
                generation_of(f).is_some()
                    || f.metadata.contains_key(INVARIANTS_KEY)
                    || matches!(&f.data_type, DataType::Struct(_))
            });
        if !has_rules {
            // Every write builds this: without expressions to plan, no planning context.
            return Ok(TableConstraints {
                schema: schema.clone(),
                arrow_schema,
                rules: Vec::new(),
                generated: Vec::new(),
                has_not_null: schema.fields.iter().any(has_not_null),
            });
        }
        let df_schema = DFSchema::try_from(arrow_schema.as_ref().clone())?;
        let ctx = crate::spark::rules_context();
        let mut rules = Vec::new();
        for (name, sql) in check_constraints(config) {
            let label = format!("CHECK constraint {name} ({sql})");
            rules.push(plan_rule(&ctx, &df_schema, label, &sql)?);
        }
        let mut generated = Vec::new();
        for (index, f) in schema.fields.iter().enumerate() {
            if let Some(sql) = invariant_of(f)? {
                let label = format!("invariant on column {} ({sql})", f.name);
                rules.push(plan_rule(&ctx, &df_schema, label, &sql)?);
            }
            if let Some(sql) = generation_of(f) {
                // The protocol's rule: the stored value is not distinct from the expression's.
                let label = format!("generated column {} ({sql})", f.name);
                // Backticks: Spark's identifier quotes (a double-quoted name is a string there).
                let quoted = format!("`{}`", f.name.replace('`', "``"));
                let rule_sql = format!("{quoted} IS NOT DISTINCT FROM ({sql})");
                let mut rule = plan_rule(&ctx, &df_schema, label.clone(), &rule_sql)?;
                let cannot = |e: String| {
                    EngineError::Unsupported(format!(
                        "cannot compute {label}: {}",
                        crate::error::one_line(&e)
                    ))
                };
                let logical = crate::spark::ident_case::parse_sql_expr(&ctx, sql, &df_schema)
                    .map_err(|e| cannot(e.to_string()))?;
                if let Some(why) = not_as_spark(sql, &logical, &df_schema) {
                    return Err(cannot(why));
                }
                if let Some(g) = logical.column_refs().iter().find(|c| {
                    schema
                        .field(&c.name)
                        .is_some_and(|x| generation_of(x).is_some())
                }) {
                    return Err(cannot(format!("it reads generated column {}", g.name)));
                }
                let expr = crate::expr_plan::plan_physical(&ctx, &logical, &df_schema)
                    .map_err(|e| cannot(e.to_string()))?;
                rule.columns.push(f.name.clone());
                rule.reads = logical
                    .column_refs()
                    .into_iter()
                    .map(|c| c.name.clone())
                    .collect();
                let reads = rule.reads.clone();
                rules.push(rule);
                generated.push(Generated {
                    index,
                    name: f.name.clone(),
                    expr,
                    reads,
                });
            }
        }
        Ok(TableConstraints {
            schema: schema.clone(),
            arrow_schema,
            rules,
            generated,
            has_not_null: schema.fields.iter().any(has_not_null),
        })
    }

    /// The label of a rule (CHECK constraint, invariant, generation expression) whose expression
    /// reads top-level column `column`, if any.
    pub fn reading(&self, column: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| r.reads.iter().any(|c| c.eq_ignore_ascii_case(column)))
            .map(|r| r.label.as_str())
    }

    /// The generated columns whose expression reads top-level column `column`.
    pub fn generated_reading(&self, column: &str) -> Vec<&str> {
        self.generated
            .iter()
            .filter(|g| g.reads.iter().any(|c| c.eq_ignore_ascii_case(column)))
            .map(|g| g.name.as_str())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && !self.has_not_null
    }

    /// `batch` with each generated column computed where it is NULL (not given: an INSERT that
    /// omits it, or an UPDATE / MERGE that reset it because it did not assign it). Given values
    /// are kept and then checked by [`TableConstraints::check`].
    pub fn fill_generated(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        if self.generated.is_empty() || batch.num_rows() == 0 {
            return Ok(batch.clone());
        }
        let table_batch = self.table_batch(batch)?;
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        for g in &self.generated {
            let Some(pos) = batch.schema().index_of(&g.name).ok() else {
                return Err(EngineError::Internal(format!(
                    "generated column {} missing from the rows written",
                    g.name
                )));
            };
            let target = self.arrow_schema.field(g.index).data_type().clone();
            let computed = g
                .expr
                .evaluate(&table_batch)?
                .into_array(batch.num_rows())?;
            let opts = arrow::compute::CastOptions {
                safe: false,
                ..Default::default()
            };
            let computed = arrow::compute::cast_with_options(&computed, &target, &opts)
                .map_err(|e| EngineError::invalid(format!("generated column {}: {e}", g.name)))?;
            let Some(given) = cols.get(pos) else { continue };
            let missing = arrow::compute::is_null(given)?;
            let given = arrow::compute::cast_with_options(given, &target, &opts)?;
            let filled = arrow::compute::kernels::zip::zip(&missing, &computed, &given)?;
            if let Some(c) = cols.get_mut(pos) {
                *c = filled;
            }
        }
        let fields: Vec<arrow::datatypes::Field> = batch
            .schema()
            .fields()
            .iter()
            .zip(&cols)
            .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
            .collect();
        Ok(RecordBatch::try_new(
            Arc::new(arrow::datatypes::Schema::new(fields)),
            cols,
        )?)
    }

    /// The table's columns of `batch`, by name, as one batch of the table's shape (nullable).
    fn table_batch(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.arrow_schema.fields().len());
        for f in self.arrow_schema.fields() {
            let c = batch.column_by_name(f.name()).ok_or_else(|| {
                EngineError::Internal(format!(
                    "constraint check: column {} missing from the rows written",
                    f.name()
                ))
            })?;
            cols.push(Arc::clone(c));
        }
        Ok(RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::new(
                self.arrow_schema
                    .fields()
                    .iter()
                    .zip(&cols)
                    .map(|(f, c)| {
                        f.as_ref()
                            .clone()
                            .with_data_type(c.data_type().clone())
                            .with_nullable(true)
                    })
                    .collect::<Vec<_>>(),
            )),
            cols,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?)
    }

    /// Fails on the first row of `batch` that violates a constraint, naming the constraint and the
    /// row. `batch` holds the table's columns by name (extra columns are ignored; a missing one
    /// is an error, never a pass).
    pub fn check(&self, batch: &RecordBatch) -> Result<()> {
        match self.first_violation(batch)? {
            Some((rows, detail)) => Err(invalid_data(rows, &detail)),
            None => Ok(()),
        }
    }

    /// The first constraint `batch` violates: how many of its rows violate it, and the rule with
    /// the first such row.
    pub fn first_violation(&self, batch: &RecordBatch) -> Result<Option<(usize, String)>> {
        if self.is_empty() || batch.num_rows() == 0 {
            return Ok(None);
        }
        // Evaluated against the table's own shape (the written rows may carry other
        // nullability or metadata); the columns are the same arrays.
        let table_batch = self.table_batch(batch)?;
        let cols = table_batch.columns();
        for (field, col) in self.schema.fields.iter().zip(cols) {
            if let Some(row) = first_not_null_violation(field, col, &field.name, None)? {
                // A NULL in the column itself counts each such row; a NULL nested deeper is
                // reported by its first row.
                let rows = col.null_count().max(1);
                return Ok(Some((
                    rows,
                    format!(
                        "NOT NULL constraint violated for column {}: row {}",
                        row.0,
                        show_row(&self.schema, cols, row.1, None)
                    ),
                )));
            }
        }
        for rule in &self.rules {
            let v = rule
                .expr
                .evaluate(&table_batch)?
                .into_array(table_batch.num_rows())?;
            let mask = v.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| {
                EngineError::Unsupported(format!("{} is not a boolean expression", rule.label))
            })?;
            let failing = |i: &usize| !(mask.is_valid(*i) && mask.value(*i));
            if let Some(i) = (0..mask.len()).find(failing) {
                let rows = (0..mask.len()).filter(failing).count();
                return Ok(Some((
                    rows,
                    format!(
                        "{} violated by row {}",
                        rule.label,
                        show_row(&self.schema, cols, i, Some(&rule.columns))
                    ),
                )));
            }
        }
        Ok(None)
    }
}

/// Rows a write would store that break one of the table's rules. The message starts with
/// deltalake's words (callers match on them), then names the rule and the first such row.
pub fn invalid_data(rows: usize, detail: &str) -> EngineError {
    EngineError::invalid(format!(
        "Invalid data found: {rows} rows failed validation check. {detail}"
    ))
}

impl TableConstraints {
    /// [`TableConstraints::check`] for rows written under an older schema: a column they lack
    /// (added since, nullable) is NULL, as a reader sees it.
    pub fn check_filling_missing(&self, batch: &RecordBatch) -> Result<()> {
        let mut fields = Vec::new();
        let mut cols: Vec<ArrayRef> = Vec::new();
        for f in self.arrow_schema.fields() {
            match batch.column_by_name(f.name()) {
                Some(c) => cols.push(Arc::clone(c)),
                None => cols.push(arrow::array::new_null_array(
                    f.data_type(),
                    batch.num_rows(),
                )),
            }
            fields.push(f.as_ref().clone().with_nullable(true));
        }
        let filled = RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::new(fields)),
            cols,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        self.check(&filled)
    }
}

/// Why `logical` would not evaluate here as Delta Spark evaluates it, if it would not: the rule
/// is then refused, never evaluated with other semantics (see `crate::spark::portable`).
fn not_as_spark(
    sql: &str,
    logical: &datafusion::logical_expr::Expr,
    df_schema: &DFSchema,
) -> Option<String> {
    if let Some(c) = crate::spark::portable::unportable_syntax(sql) {
        return Some(format!(
            "it uses {c}, which this engine cannot evaluate exactly as Spark does"
        ));
    }
    let spark = match crate::spark::rewrite::spark_semantics(logical.clone(), df_schema, true) {
        Ok(t) => t.data,
        Err(e) => return Some(crate::error::one_line(&e.to_string())),
    };
    crate::spark::portable::unportable(&spark, df_schema)
        .map(|c| format!("it uses {c}, which this engine cannot evaluate exactly as Spark does"))
}

fn plan_rule(ctx: &SessionContext, df_schema: &DFSchema, label: String, sql: &str) -> Result<Rule> {
    let cannot = |e: String| {
        EngineError::Unsupported(format!(
            "cannot enforce {label}: {}",
            crate::error::one_line(&e)
        ))
    };
    let logical = crate::spark::ident_case::parse_sql_expr(ctx, sql, df_schema).map_err(|e| {
        // A construct refused by name (`RLIKE`), rather than the planner's message about it.
        match crate::spark::portable::unportable_syntax(sql) {
            Some(c) => cannot(format!(
                "it uses {c}, which this engine cannot evaluate exactly as Spark does"
            )),
            None => cannot(e.to_string()),
        }
    })?;
    if let Some(why) = not_as_spark(sql, &logical, df_schema) {
        return Err(cannot(why));
    }
    let mut columns: Vec<String> = logical
        .column_refs()
        .into_iter()
        .map(|c| c.name.clone())
        .collect();
    columns.sort();
    let expr = crate::expr_plan::plan_physical(ctx, &logical, df_schema)
        .map_err(|e| cannot(e.to_string()))?;
    if expr.data_type(df_schema.as_arrow())? != ArrowType::Boolean {
        return Err(cannot("not a boolean expression".into()));
    }
    Ok(Rule {
        label,
        expr,
        reads: columns.clone(),
        columns,
    })
}

/// A field's invariant expression: metadata `delta.invariants` is a JSON string
/// `{"expression": {"expression": "<sql>"}}`. Nested invariants are refused (not enforced here).
fn invariant_of(f: &StructField) -> Result<Option<String>> {
    if let DataType::Struct(st) = &f.data_type {
        if st
            .fields
            .iter()
            .any(|c| c.metadata.contains_key(INVARIANTS_KEY))
        {
            return Err(EngineError::Unsupported(format!(
                "invariants on nested fields of {} are not enforced by this engine",
                f.name
            )));
        }
    }
    let Some(v) = f.metadata.get(INVARIANTS_KEY) else {
        return Ok(None);
    };
    let parsed: Value = match v {
        Value::String(s) => serde_json::from_str(s)
            .map_err(|e| EngineError::corrupt(format!("invariant on {}: {e}", f.name)))?,
        other => other.clone(),
    };
    parsed
        .get("expression")
        .and_then(|e| e.get("expression"))
        .and_then(Value::as_str)
        .map(|s| Some(s.to_string()))
        .ok_or_else(|| EngineError::corrupt(format!("invariant on {} has no expression", f.name)))
}

/// A field's generation expression, if it is a generated column.
pub fn generation_of(f: &StructField) -> Option<&str> {
    f.metadata.get(GENERATION_KEY).and_then(Value::as_str)
}

/// A NOT NULL field at any depth of struct nesting (what Spark's `Invariants.getFromSchema`
/// finds: arrays and maps are not looked into).
pub(crate) fn has_not_null(f: &StructField) -> bool {
    !f.nullable
        || match &f.data_type {
            DataType::Struct(st) => st.fields.iter().any(has_not_null),
            _ => false,
        }
}

/// The first row (and the column path) where a NOT NULL field is null, a NULL struct above it
/// counting as its NULL (`parents`: the rows where every struct above is set). Delta Spark checks
/// `s.a IS NOT NULL`, which a NULL `s` fails (DELTA_NOT_NULL_CONSTRAINT_VIOLATED, red team
/// helper-51). Arrays and maps are not looked into (their element nullability is not a
/// constraint here, nor in Spark's invariants).
fn first_not_null_violation(
    f: &StructField,
    col: &ArrayRef,
    path: &str,
    parents: Option<&NullBuffer>,
) -> Result<Option<(String, usize)>> {
    let unset = |i: usize| col.is_null(i) || parents.is_some_and(|p| p.is_null(i));
    if !f.nullable && (col.null_count() > 0 || parents.is_some_and(|p| p.null_count() > 0)) {
        if let Some(i) = (0..col.len()).find(|&i| unset(i)) {
            return Ok(Some((path.to_string(), i)));
        }
    }
    if let DataType::Struct(st) = &f.data_type {
        if !st.fields.iter().any(has_not_null) {
            return Ok(None);
        }
        let s = col
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| EngineError::Internal(format!("column {path} is not a struct array")))?;
        let here = NullBuffer::union(parents, s.nulls());
        for child in &st.fields {
            let Some(c) = s.column_by_name(&child.name) else {
                return Err(EngineError::Internal(format!(
                    "field {path}.{} missing from the rows written",
                    child.name
                )));
            };
            let child_path = format!("{path}.{}", child.name);
            if let Some(v) = first_not_null_violation(child, c, &child_path, here.as_ref())? {
                return Ok(Some(v));
            }
        }
    }
    Ok(None)
}

/// For a value that cannot take a column's type: the first NOT NULL struct field (by the target
/// `field`) that is null in `value` where its parents are set, as `s.a (row i)`. Arrow's cast
/// refuses such a value with an opaque message; this names the constraint instead.
pub fn nested_null_violation(value: &ArrayRef, field: &arrow::datatypes::Field) -> Option<String> {
    fn walk(
        value: &ArrayRef,
        target: &arrow::datatypes::Field,
        path: &str,
        parents: Option<&NullBuffer>,
    ) -> Option<String> {
        let set = |i: usize| parents.is_none_or(|p| p.is_valid(i));
        if !target.is_nullable() {
            // Logical nulls: a NULL literal's array (type Null) has no null buffer.
            let nulls = value.logical_nulls();
            let is_null = |i: usize| nulls.as_ref().is_some_and(|n| n.is_null(i));
            if let Some(i) = (0..value.len()).find(|&i| is_null(i) && set(i)) {
                return Some(format!("{path} (row {})", i + 1));
            }
        }
        let (ArrowType::Struct(children), Some(s)) = (
            target.data_type(),
            value.as_any().downcast_ref::<StructArray>(),
        ) else {
            return None;
        };
        let here = NullBuffer::union(parents, s.nulls());
        children.iter().find_map(|c| {
            s.column_by_name(c.name())
                .and_then(|v| walk(v, c, &format!("{path}.{}", c.name()), here.as_ref()))
        })
    }
    walk(value, field, field.name(), None)
}

/// `{a: 1, b: 'x'}` for row `i`, limited to `only` when given.
fn show_row(schema: &StructType, cols: &[ArrayRef], i: usize, only: Option<&[String]>) -> String {
    let mut parts = Vec::new();
    for (f, c) in schema.fields.iter().zip(cols) {
        if only.is_some_and(|o| !o.iter().any(|n| n.eq_ignore_ascii_case(&f.name))) {
            continue;
        }
        let v = ScalarValue::try_from_array(c, i)
            .map(|s| {
                if s.is_null() {
                    "NULL".to_string()
                } else if matches!(s, ScalarValue::Utf8(_) | ScalarValue::LargeUtf8(_)) {
                    format!("'{s}'")
                } else {
                    s.to_string()
                }
            })
            .unwrap_or_else(|_| "?".into());
        parts.push(format!("{}: {v}", f.name));
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraint_keys_match_in_any_case() {
        let config: BTreeMap<String, String> = [
            ("Delta.Constraints.pos".to_string(), "a > 0".to_string()),
            ("delta.constraints.neg".to_string(), "a < 9".to_string()),
            ("delta.constraint".to_string(), "x".to_string()),
            ("délta.constraints.z".to_string(), "x".to_string()),
        ]
        .into_iter()
        .collect();
        let mut found = check_constraints(&config);
        found.sort();
        assert_eq!(
            found,
            vec![
                ("neg".to_string(), "a < 9".to_string()),
                ("pos".to_string(), "a > 0".to_string())
            ]
        );
    }
}
