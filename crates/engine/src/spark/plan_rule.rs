//! The analyzer rule that applies `rewrite` to every expression of a plan, and the two
//! plan-level pieces of Spark's typing no single expression holds: a VALUES or UNION column that
//! mixes DOUBLE and DECIMAL is DOUBLE (DataFusion chooses a DECIMAL(30,15), which turns 1e-20 into
//! 0). The rule runs ahead of DataFusion's type coercion.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use super::rewrite::{cast, is_decimal, is_float, spark_semantics, type_of};

/// The analyzer rule: Spark's arithmetic in every expression of a plan (SELECT lists, filters,
/// joins, aggregates, subqueries). Runs before DataFusion's type coercion, which then types the
/// rest of each expression around the rewritten nodes. Output names are kept (`5 / 2` stays the
/// column's name).
#[derive(Debug)]
pub struct SparkSemantics {
    pub ansi: bool,
}

impl AnalyzerRule for SparkSemantics {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        // The context's setting (a session's `SET spark.sql.ansi.enabled`) when it carries one.
        let ansi = match config.extensions.get::<super::SparkOptions>() {
            Some(o) => o.ansi,
            None => self.ansi,
        };
        plan.transform_up_with_subqueries(|plan| {
            let mut schema = merge_schema(&plan.inputs());
            if let LogicalPlan::TableScan(ts) = &plan {
                let source = DFSchema::try_from_qualified_schema(
                    ts.table_name.clone(),
                    &ts.source.schema(),
                )?;
                schema.merge(&source);
            }
            let plan = match plan {
                LogicalPlan::Values(v) => values_as_double(v)?,
                LogicalPlan::Union(u) => {
                    struct_fields_alike(&u)?;
                    union_as_double(u)?
                }
                LogicalPlan::Projection(p) => int_literals_selected(p)?,
                other => other,
            };
            // A VALUES node keeps its column types (DataFusion's common type per column): a row
            // whose expression the rewrite typed otherwise (`3 + 4` is INT arithmetic in Spark) is
            // cast to it, as every row must be of one type.
            let values_schema = match &plan {
                LogicalPlan::Values(v) => Some(Arc::clone(&v.schema)),
                _ => None,
            };
            let preserver = NamePreserver::new(&plan);
            let t = plan.map_expressions(|e| {
                let saved = preserver.save(&e);
                let t = spark_semantics(e, &schema, ansi)?;
                Ok(match t.transformed {
                    true => t.update_data(|e| saved.restore(e)),
                    false => t,
                })
            })?;
            let t = match (t.transformed, values_schema) {
                (true, Some(column_types)) => t.map_data(|p| match p {
                    LogicalPlan::Values(mut v) => {
                        let empty = DFSchema::empty();
                        let column_types = renamed_struct_columns(&v, column_types)?;
                        for row in v.values.iter_mut() {
                            for (e, f) in row.iter_mut().zip(column_types.fields()) {
                                if type_of(e, &empty).as_ref() != Some(f.data_type()) {
                                    *e = cast(e.clone(), f.data_type());
                                }
                            }
                        }
                        v.schema = column_types;
                        Ok(LogicalPlan::Values(v))
                    }
                    other => other.recompute_schema(),
                }),
                (true, None) => t.map_data(|p| p.recompute_schema()),
                // A node whose own expressions stayed may still sit on an input whose types
                // changed below it (a VALUES column made DOUBLE): an alias and a projection
                // take their types from it again, or `a + a` over that column kept the DECIMAL
                // type it was planned with (red team helper-38: a wrong value was stored).
                (false, _) => match t.data {
                    p @ (LogicalPlan::SubqueryAlias(_) | LogicalPlan::Projection(_)) => {
                        let before = Arc::clone(p.schema());
                        let p = p.recompute_schema()?;
                        let changed = p.schema() != &before;
                        Ok(Transformed::new_transformed(p, changed))
                    }
                    // A UNION's inputs meet in their common type again (type coercion widens
                    // them after this step): `SELECT 1 UNION ALL VALUES (2)` is INT.
                    LogicalPlan::Union(u) if union_inputs_retyped(&u) => {
                        let u =
                            datafusion::logical_expr::Union::try_new_with_loose_types(u.inputs)?;
                        Ok(Transformed::yes(LogicalPlan::Union(u)))
                    }
                    other => Ok(Transformed::no(other)),
                },
            }?;
            // Float keys of sorts, groups, joins and IN subqueries (`float_plan_keys`).
            t.transform_data(super::float_plan_keys::normalize_keys)
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "spark_semantics"
    }
}

/// Whether an input of `u` has other column types than `u` was planned with.
fn union_inputs_retyped(u: &datafusion::logical_expr::Union) -> bool {
    u.inputs.iter().any(|i| {
        i.schema()
            .fields()
            .iter()
            .zip(u.schema.fields())
            .any(|(a, b)| a.data_type() != b.data_type())
    })
}

/// An integer literal selected as a column (`SELECT 1 AS v`) is an INT when it fits, as in
/// Spark: DataFusion's BIGINT made `CREATE TABLE … AS SELECT 1 AS v` a `long` column where
/// Spark makes an `integer` one, and a UNION of it with an INT column BIGINT (red team
/// helper-38). The column keeps its name.
fn int_literals_selected(p: datafusion::logical_expr::Projection) -> Result<LogicalPlan> {
    let narrow = |v: &ScalarValue| match v {
        ScalarValue::Int64(Some(n)) => i32::try_from(*n).ok().map(|n| ScalarValue::Int32(Some(n))),
        _ => None,
    };
    let selects_wide = p.expr.iter().any(|e| match e {
        Expr::Literal(v, _) => narrow(v).is_some(),
        Expr::Alias(a) => matches!(a.expr.as_ref(), Expr::Literal(v, _) if narrow(v).is_some()),
        _ => false,
    });
    if !selects_wide {
        return Ok(LogicalPlan::Projection(p));
    }
    let exprs = p
        .expr
        .into_iter()
        .map(|e| match &e {
            Expr::Literal(v, meta) => match narrow(v) {
                Some(n) => Expr::Literal(n, meta.clone()).alias(e.schema_name().to_string()),
                None => e,
            },
            Expr::Alias(a) => match a.expr.as_ref() {
                Expr::Literal(v, meta) => match narrow(v) {
                    Some(n) => Expr::Literal(n, meta.clone())
                        .alias_qualified(a.relation.clone(), a.name.clone()),
                    None => e,
                },
                _ => e,
            },
            _ => e,
        })
        .collect();
    Ok(LogicalPlan::Projection(
        datafusion::logical_expr::Projection::try_new(exprs, p.input)?,
    ))
}

/// A VALUES column whose rows mix DOUBLE and DECIMAL is DOUBLE, as in Spark. DataFusion's planner
/// already cast every row to a DECIMAL(30,15) (1e-20 becomes 0): such casts of a float are undone
/// and the column's rows cast to DOUBLE.
/// `column_types` with each struct column whose rows the rewrite gave other field names (Spark's
/// `struct(1, 2)` is `struct<col1: int, col2: int>`, DataFusion's `struct<c0: bigint, c1:
/// bigint>`) typed as the rows now are: a struct cast between different names is no cast at all.
/// Only when every row agrees and the struct shapes are the same.
fn renamed_struct_columns(
    v: &datafusion::logical_expr::Values,
    column_types: Arc<DFSchema>,
) -> Result<Arc<DFSchema>> {
    let empty = DFSchema::empty();
    let mut fields: Vec<_> = column_types
        .iter()
        .map(|(q, f)| (q.cloned(), Arc::clone(f)))
        .collect();
    let mut changed = false;
    for (j, (_, f)) in fields.iter_mut().enumerate() {
        let row_types: Vec<Option<DataType>> = v
            .values
            .iter()
            .map(|row| row.get(j).and_then(|e| type_of(e, &empty)))
            .collect();
        let Some(Some(first)) = row_types.first().cloned() else {
            continue;
        };
        if &first != f.data_type()
            && same_struct_shape(&first, f.data_type())
            && row_types.iter().all(|t| t.as_ref() == Some(&first))
        {
            *f = Arc::new(f.as_ref().clone().with_data_type(first));
            changed = true;
        }
    }
    if !changed {
        return Ok(column_types);
    }
    let metadata = column_types.metadata().clone();
    Ok(Arc::new(DFSchema::new_with_metadata(fields, metadata)?))
}

/// Structs of the same arity at every depth (their names and leaf types may differ: the
/// rewrite gives `struct(1, 2)` Spark's names and INT fields).
fn same_struct_shape(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(p, q)| same_struct_shape(p.data_type(), q.data_type()))
        }
        (DataType::List(x), DataType::List(y))
        | (DataType::LargeList(x), DataType::LargeList(y)) => {
            same_struct_shape(x.data_type(), y.data_type())
        }
        (DataType::Struct(_), _) | (_, DataType::Struct(_)) => false,
        _ => true,
    }
}

fn values_as_double(mut v: datafusion::logical_expr::Values) -> Result<LogicalPlan> {
    let empty = DFSchema::empty();
    let float_inner = |e: &Expr| match e {
        Expr::Cast(c) if is_decimal(c.field.data_type()) => {
            type_of(&c.expr, &empty).is_some_and(|t| is_float(&t))
        }
        _ => false,
    };
    let width = v.schema.fields().len();
    let mut changed = false;
    let mut fields: Vec<arrow::datatypes::FieldRef> = v.schema.fields().iter().cloned().collect();
    for j in 0..width {
        if !v
            .values
            .iter()
            .any(|row| row.get(j).is_some_and(float_inner))
        {
            continue;
        }
        changed = true;
        for row in v.values.iter_mut() {
            if let Some(e) = row.get_mut(j) {
                let inner = match std::mem::replace(e, Expr::Literal(ScalarValue::Null, None)) {
                    Expr::Cast(c) if is_decimal(c.field.data_type()) => *c.expr,
                    other => other,
                };
                *e = cast(inner, &DataType::Float64);
            }
        }
        if let Some(f) = fields.get_mut(j) {
            *f = Arc::new(f.as_ref().clone().with_data_type(DataType::Float64));
        }
    }
    if !changed {
        return Ok(LogicalPlan::Values(v));
    }
    let qualified: Vec<_> = v
        .schema
        .iter()
        .zip(fields)
        .map(|((q, _), f)| (q.cloned(), f))
        .collect();
    let schema = DFSchema::new_with_metadata(qualified, v.schema.metadata().clone())?;
    Ok(LogicalPlan::Values(datafusion::logical_expr::Values {
        schema: Arc::new(schema),
        values: v.values,
    }))
}

/// A UNION column that is DOUBLE in one input and DECIMAL in another is DOUBLE, as in Spark: the
/// DECIMAL inputs are projected to DOUBLE before DataFusion coerces the union (to a DECIMAL).
/// A UNION whose inputs hold, at one position, structs with fields named otherwise or in another
/// order is refused: Spark keeps the first input's names and matches fields by position,
/// DataFusion matches them by name (`SELECT named_struct('a', 1, 'b', 2) UNION ALL SELECT
/// named_struct('b', 3, 'a', 4)`: Spark's second row is {a: 3, b: 4}, DataFusion's {a: 4, b: 3};
/// red team helper-51). Names that differ only in case are alike.
fn struct_fields_alike(u: &datafusion::logical_expr::Union) -> Result<()> {
    fn differ(a: &DataType, b: &DataType) -> bool {
        match (a, b) {
            (DataType::Struct(x), DataType::Struct(y)) => {
                x.len() != y.len()
                    || x.iter().zip(y.iter()).any(|(p, q)| {
                        !p.name().eq_ignore_ascii_case(q.name())
                            || differ(p.data_type(), q.data_type())
                    })
            }
            (
                DataType::List(x) | DataType::LargeList(x),
                DataType::List(y) | DataType::LargeList(y),
            ) => differ(x.data_type(), y.data_type()),
            (DataType::Map(x, _), DataType::Map(y, _)) => differ(x.data_type(), y.data_type()),
            _ => false,
        }
    }
    let Some(first) = u.inputs.first() else {
        return Ok(());
    };
    for input in u.inputs.iter().skip(1) {
        for (f, g) in first.schema().fields().iter().zip(input.schema().fields()) {
            if differ(f.data_type(), g.data_type()) {
                return Err(datafusion::common::DataFusionError::Plan(format!(
                    "UNION of column {} whose struct fields are named or ordered differently in its inputs ({} and {}): Spark matches them by position and DataFusion by name, so it is refused; name and order the fields alike",
                    f.name(),
                    f.data_type(),
                    g.data_type()
                )));
            }
        }
    }
    Ok(())
}

fn union_as_double(u: datafusion::logical_expr::Union) -> Result<LogicalPlan> {
    let width = u.schema.fields().len();
    let mut to_double = vec![false; width];
    for (j, flag) in to_double.iter_mut().enumerate() {
        let types: Vec<DataType> = u
            .inputs
            .iter()
            .filter_map(|i| i.schema().fields().get(j).map(|f| f.data_type().clone()))
            .collect();
        *flag = types.iter().any(is_float) && types.iter().any(is_decimal);
    }
    if !to_double.iter().any(|b| *b) {
        return Ok(LogicalPlan::Union(u));
    }
    let mut inputs = Vec::with_capacity(u.inputs.len());
    for input in u.inputs {
        let exprs: Vec<Expr> = input
            .schema()
            .iter()
            .enumerate()
            .map(|(j, (q, f))| {
                let col = Expr::Column(datafusion::common::Column::new(q.cloned(), f.name()));
                match to_double.get(j).copied().unwrap_or(false) && is_decimal(f.data_type()) {
                    true => cast(col, &DataType::Float64).alias(f.name()),
                    false => col,
                }
            })
            .collect();
        let projected = datafusion::logical_expr::Projection::try_new(exprs, input)?;
        inputs.push(Arc::new(LogicalPlan::Projection(projected)));
    }
    Ok(LogicalPlan::Union(
        datafusion::logical_expr::Union::try_new_with_loose_types(inputs)?,
    ))
}

/// Shared by the rule's users: an `Arc` of the rule for a session's analyzer.
pub fn rule(ansi: bool) -> Arc<dyn AnalyzerRule + Send + Sync> {
    Arc::new(SparkSemantics { ansi })
}
