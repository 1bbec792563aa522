//! The analyzer step that gives an expression Spark's meaning before DataFusion types it: every
//! arithmetic node whose operand types Spark and DataFusion evaluate differently becomes a call
//! of the matching `arith` function with its operands cast to the type Spark computes in.
//!
//! What it rewrites (Spark 4 semantics):
//! - an integer literal is INT when it fits an INT, as in Spark (DataFusion reads every integer
//!   literal as BIGINT, so `v + 1` on an INT column would be BIGINT arithmetic and never overflow);
//! - `/` with no DECIMAL operand, or with a float operand, is DOUBLE division;
//! - `+`, `-`, `*`, `%` and unary `-` on integers are checked for overflow (ANSI);
//! - `%` on integers and floats follows Java (zero divisor raises, `MIN % -1` is 0);
//! - `concat(a, b, …)` is NULL when any argument is NULL (DataFusion's skips NULLs): it becomes
//!   `a || b || …`, whose NULL rule is Spark's.
//!
//! Decimal arithmetic is left to DataFusion, whose result precision and scale follow the same
//! Hive/Spark rules, and which raises on a zero divisor. Float `+ - *` is IEEE in both.
//!
//! The rewrite is idempotent: it leaves the functions it creates alone, so it may run on an
//! expression that already went through it (a filter pushed into a scan).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::AnalyzerRule;

use super::arith::{udf, ArithOp};

/// `expr` with Spark's arithmetic; `schema` types its columns. An operand whose type cannot be
/// worked out is left to DataFusion's planner, which reports it.
pub fn spark_semantics(expr: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| rewrite_node(e, schema, ansi))
}

fn rewrite_node(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    match e {
        Expr::BinaryExpr(b) if arith_op(&b.op).is_some() => {
            let (Some(lt), Some(rt)) = (type_of(&b.left, schema), type_of(&b.right, schema)) else {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            };
            match binary(&b, &lt, &rt, ansi) {
                Some(e) => Ok(Transformed::yes(e)),
                None => Ok(Transformed::no(Expr::BinaryExpr(b))),
            }
        }
        Expr::Negative(inner) => {
            let Some(t) = type_of(&inner, schema) else {
                return Ok(Transformed::no(Expr::Negative(inner)));
            };
            let t = spark_literal_type(&inner, &t);
            match zero_of(&t) {
                Some(zero) if is_integer(&t) => Ok(Transformed::yes(call(
                    ArithOp::Subtract,
                    ansi,
                    Expr::Literal(zero, None),
                    cast(*inner, &t),
                ))),
                _ => Ok(Transformed::no(Expr::Negative(inner))),
            }
        }
        Expr::ScalarFunction(f) if f.name().eq_ignore_ascii_case("concat") => {
            let mut strings = Vec::with_capacity(f.args.len());
            for a in &f.args {
                match a.get_type(schema) {
                    Ok(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
                        strings.push(a.clone())
                    }
                    Ok(t) if is_integer(&t) || matches!(t, DataType::Date32 | DataType::Boolean | DataType::Null) => {
                        strings.push(cast(a.clone(), &DataType::Utf8))
                    }
                    // Arrays, floats, timestamps: not rewritten (and refused in stored rules).
                    _ => return Ok(Transformed::no(Expr::ScalarFunction(f))),
                }
            }
            let mut args = strings.into_iter();
            let Some(first) = args.next() else {
                return Ok(Transformed::no(Expr::ScalarFunction(f)));
            };
            let chained = args.fold(first, |acc, a| {
                Expr::BinaryExpr(BinaryExpr::new(Box::new(acc), Operator::StringConcat, Box::new(a)))
            });
            // A single argument: Spark's concat(x) is x as a string.
            let chained = match &chained {
                Expr::BinaryExpr(_) => chained,
                _ => Expr::Cast(Cast::new(Box::new(chained), DataType::Utf8)),
            };
            Ok(Transformed::yes(chained))
        }
        // Spark types an integer literal that fits as INT wherever it stands (`coalesce(i, -1)`
        // is INT arithmetic's operand, `abs(2)` an INT); comparisons and IN lists compare values
        // and are left alone.
        Expr::ScalarFunction(mut f)
            if NUMERIC_PASS_THROUGH.contains(&f.name()) && f.args.iter().any(is_wide_int_literal) =>
        {
            f.args = f.args.into_iter().map(narrow_literal).collect();
            Ok(Transformed::yes(Expr::ScalarFunction(f)))
        }
        Expr::Case(mut c)
            if c.when_then_expr.iter().any(|(_, t)| is_wide_int_literal(t))
                || c.else_expr.as_deref().is_some_and(is_wide_int_literal) =>
        {
            c.when_then_expr = c
                .when_then_expr
                .into_iter()
                .map(|(w, t)| (w, Box::new(narrow_literal(*t))))
                .collect();
            c.else_expr = c.else_expr.map(|e| Box::new(narrow_literal(*e)));
            Ok(Transformed::yes(Expr::Case(c)))
        }
        // Spark compares 0.0 and -0.0 as equal; Arrow orders -0.0 below 0.0. Only a comparison
        // with a zero (or between two computed values) can tell them apart: such float operands
        // get `+ 0.0`, which turns -0.0 into 0.0 and leaves every other value (NaN included).
        Expr::BinaryExpr(b) if is_comparison(&b.op) => {
            let (Some(lt), Some(rt)) = (type_of(&b.left, schema), type_of(&b.right, schema)) else {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            };
            if !(is_float(&lt) || is_float(&rt)) || !(may_be_zero(&b.left) && may_be_zero(&b.right)) {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            }
            let norm = |e: Box<Expr>, t: &DataType| -> Box<Expr> {
                match (&*e, is_float(t)) {
                    (Expr::Literal(..), _) | (_, false) => e,
                    _ => plus_zero(e),
                }
            };
            let left = norm(normalize_zero_literal(b.left), &lt);
            let right = norm(normalize_zero_literal(b.right), &rt);
            Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(left, b.op, right))))
        }
        Expr::InList(mut l) if float_near_zero(&l.expr, &l.list, schema) => {
            l.expr = plus_zero(l.expr);
            l.list = l.list.into_iter().map(|x| *normalize_zero_literal(Box::new(x))).collect();
            Ok(Transformed::yes(Expr::InList(l)))
        }
        Expr::Between(mut b)
            if float_near_zero(&b.expr, &[(*b.low).clone(), (*b.high).clone()], schema) =>
        {
            b.expr = plus_zero(b.expr);
            b.low = normalize_zero_literal(b.low);
            b.high = normalize_zero_literal(b.high);
            Ok(Transformed::yes(Expr::Between(b)))
        }
        other => Ok(Transformed::no(other)),
    }
}

/// A float `e` set against values of which one may be a zero (IN, BETWEEN).
fn float_near_zero(e: &Expr, others: &[Expr], schema: &DFSchema) -> bool {
    !matches!(e, Expr::Literal(..))
        && type_of(e, schema).is_some_and(|t| is_float(&t))
        && others.iter().any(may_be_zero)
}

/// `e + 0.0` as a DOUBLE: -0.0 becomes 0.0, every other value (NaN included) stays. A call, not
/// a `+`: DataFusion's simplifier drops `x + 0.0` (and with it the normalization).
fn plus_zero(e: Box<Expr>) -> Box<Expr> {
    let f = DataType::Float64;
    Box::new(call(
        ArithOp::Add,
        true,
        cast(*e, &f),
        Expr::Literal(ScalarValue::Float64(Some(0.0)), None),
    ))
}

/// Functions whose result type is their arguments' common type (so an INT literal keeps INT
/// arithmetic INT). Constructors (`named_struct`, `make_array`) are not here: their literals
/// would change the built type (Spark casts it on insert; the writer here compares shapes).
const NUMERIC_PASS_THROUGH: &[&str] = &["abs", "coalesce", "nullif", "greatest", "least", "nvl", "ifnull"];

fn is_comparison(op: &Operator) -> bool {
    matches!(
        op,
        Operator::Eq | Operator::NotEq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
            | Operator::IsDistinctFrom | Operator::IsNotDistinctFrom
    )
}

/// Whether `e` may evaluate to a (signed) zero: anything but a non-zero literal.
fn may_be_zero(e: &Expr) -> bool {
    match e {
        Expr::Literal(v, _) => match v {
            ScalarValue::Float64(Some(x)) => *x == 0.0,
            ScalarValue::Float32(Some(x)) => *x == 0.0,
            v => v.is_null() || v.clone().cast_to(&DataType::Float64).ok().is_none_or(|x| x == ScalarValue::Float64(Some(0.0))),
        },
        _ => true,
    }
}

/// A `-0.0` literal as `0.0`.
fn normalize_zero_literal(e: Box<Expr>) -> Box<Expr> {
    match &*e {
        Expr::Literal(ScalarValue::Float64(Some(x)), m) if *x == 0.0 => {
            Box::new(Expr::Literal(ScalarValue::Float64(Some(0.0)), m.clone()))
        }
        Expr::Literal(ScalarValue::Float32(Some(x)), m) if *x == 0.0 => {
            Box::new(Expr::Literal(ScalarValue::Float32(Some(0.0)), m.clone()))
        }
        _ => e,
    }
}

fn is_wide_int_literal(e: &Expr) -> bool {
    matches!(e, Expr::Literal(ScalarValue::Int64(Some(v)), _) if i32::try_from(*v).is_ok())
}

fn narrow_literal(e: Expr) -> Expr {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), m) => match i32::try_from(v) {
            Ok(n) => Expr::Literal(ScalarValue::Int32(Some(n)), m),
            Err(_) => Expr::Literal(ScalarValue::Int64(Some(v)), m),
        },
        other => other,
    }
}

/// The type of an operand. The nodes this rewrite creates carry their type at the top (a call
/// whose operands are casts or literals), read without walking the subtree: `get_type` on a chain
/// of n additions is O(n) per node, O(n²) for the chain (`SELECT 1+1+…+1`).
fn type_of(e: &Expr, schema: &DFSchema) -> Option<DataType> {
    match e {
        Expr::Literal(v, _) => Some(v.data_type()),
        Expr::Cast(c) => Some(c.field.data_type().clone()),
        Expr::ScalarFunction(f) if super::arith::is_spark_arith(f.name()) => {
            if f.name().ends_with("_divide") {
                return Some(DataType::Float64);
            }
            match f.args.first() {
                Some(Expr::Cast(c)) => Some(c.field.data_type().clone()),
                Some(Expr::Literal(v, _)) => Some(v.data_type()),
                _ => e.get_type(schema).ok(),
            }
        }
        _ => e.get_type(schema).ok(),
    }
}

fn arith_op(op: &Operator) -> Option<ArithOp> {
    match op {
        Operator::Plus => Some(ArithOp::Add),
        Operator::Minus => Some(ArithOp::Subtract),
        Operator::Multiply => Some(ArithOp::Multiply),
        Operator::Divide => Some(ArithOp::Divide),
        Operator::Modulo => Some(ArithOp::Remainder),
        _ => None,
    }
}

/// The Spark form of one arithmetic node, or `None` where DataFusion already agrees.
fn binary(b: &BinaryExpr, lt: &DataType, rt: &DataType, ansi: bool) -> Option<Expr> {
    let op = arith_op(&b.op)?;
    let lt = spark_literal_type(&b.left, lt);
    let rt = spark_literal_type(&b.right, rt);
    let (l, r) = ((*b.left).clone(), (*b.right).clone());
    let any_float = is_float(&lt) || is_float(&rt);
    let any_decimal = is_decimal(&lt) || is_decimal(&rt);
    match op {
        ArithOp::Divide => {
            let numeric = |t: &DataType| is_integer(t) || is_float(t) || is_decimal(t);
            if !(numeric(&lt) && numeric(&rt)) || (any_decimal && !any_float) {
                return None;
            }
            let f = DataType::Float64;
            Some(call(op, ansi, cast(l, &f), cast(r, &f)))
        }
        _ if is_integer(&lt) && is_integer(&rt) => {
            let t = wider_integer(&lt, &rt);
            Some(call(op, ansi, cast(l, &t), cast(r, &t)))
        }
        ArithOp::Remainder if any_float && !any_decimal => {
            let numeric = |t: &DataType| is_integer(t) || is_float(t);
            if !(numeric(&lt) && numeric(&rt)) {
                return None;
            }
            let t = match (&lt, &rt) {
                (DataType::Float64, _) | (_, DataType::Float64) => DataType::Float64,
                _ => DataType::Float32,
            };
            Some(call(op, ansi, cast(l, &t), cast(r, &t)))
        }
        _ => None,
    }
}

/// The call computing `l op r`; between two literals its value, computed now (a chain of
/// literals, `1+1+…+1`, would otherwise be a call nested thousands deep, which DataFusion names
/// and types in quadratic time). A literal operation that raises stays a call, to raise when run.
fn call(op: ArithOp, ansi: bool, l: Expr, r: Expr) -> Expr {
    if let (Expr::Literal(a, _), Expr::Literal(b, _)) = (&l, &r) {
        let folded = a.to_array().and_then(|a| {
            let b = b.to_array()?;
            let out = super::arith::evaluate(op, ansi, &a, &b)?;
            ScalarValue::try_from_array(&out, 0)
        });
        if let Ok(v) = folded {
            return Expr::Literal(v, None);
        }
    }
    Expr::ScalarFunction(ScalarFunction::new_udf(udf(op, ansi), vec![l, r]))
}

/// `e` as type `t`: a literal converted in place, anything else cast (no cast when the type is
/// already `t`, which the caller knows only for literals; DataFusion drops a no-op cast).
fn cast(e: Expr, t: &DataType) -> Expr {
    if let Expr::Literal(v, meta) = &e {
        if let Ok(c) = v.cast_to(t) {
            return Expr::Literal(c, meta.clone());
        }
    }
    Expr::Cast(Cast::new(Box::new(e), t.clone()))
}

/// The type Spark gives `e`: an integer literal that fits an INT is an INT.
fn spark_literal_type(e: &Expr, t: &DataType) -> DataType {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), _) if i32::try_from(*v).is_ok() => {
            DataType::Int32
        }
        _ => t.clone(),
    }
}

fn is_integer(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

fn integer_rank(t: &DataType) -> u8 {
    match t {
        DataType::Int8 => 1,
        DataType::Int16 => 2,
        DataType::Int32 => 3,
        _ => 4,
    }
}

fn wider_integer(a: &DataType, b: &DataType) -> DataType {
    if integer_rank(a) >= integer_rank(b) {
        a.clone()
    } else {
        b.clone()
    }
}

fn zero_of(t: &DataType) -> Option<ScalarValue> {
    ScalarValue::new_zero(t).ok()
}

/// The analyzer rule: Spark's arithmetic in every expression of a plan (SELECT lists, filters,
/// joins, aggregates, subqueries). Runs before DataFusion's type coercion, which then types the
/// rest of each expression around the rewritten nodes. Output names are kept (`5 / 2` stays the
/// column's name).
#[derive(Debug)]
pub struct SparkSemantics {
    pub ansi: bool,
}

impl AnalyzerRule for SparkSemantics {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let ansi = self.ansi;
        plan.transform_up_with_subqueries(|plan| {
            let mut schema = merge_schema(&plan.inputs());
            if let LogicalPlan::TableScan(ts) = &plan {
                let source =
                    DFSchema::try_from_qualified_schema(ts.table_name.clone(), &ts.source.schema())?;
                schema.merge(&source);
            }
            let preserver = NamePreserver::new(&plan);
            let t = plan.map_expressions(|e| {
                let saved = preserver.save(&e);
                let t = spark_semantics(e, &schema, ansi)?;
                Ok(match t.transformed {
                    true => t.update_data(|e| saved.restore(e)),
                    false => t,
                })
            })?;
            match t.transformed {
                true => t.map_data(|p| p.recompute_schema()),
                false => Ok(t),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "spark_semantics"
    }
}

/// Shared by the rule's users: an `Arc` of the rule for a session's analyzer.
pub fn rule(ansi: bool) -> Arc<dyn AnalyzerRule + Send + Sync> {
    Arc::new(SparkSemantics { ansi })
}
