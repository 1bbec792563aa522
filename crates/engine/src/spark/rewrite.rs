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
//! - `sum` raises on overflow (ANSI) and `avg` of a DECIMAL rounds HALF_UP (`aggregates`);
//! - `round` of a float rounds its decimal text HALF_UP; `ceil`/`floor` are BIGINT or integral
//!   DECIMALs (`rounding`);
//! - `concat(a, b, …)` is NULL when any argument is NULL (DataFusion's skips NULLs): it becomes
//!   `a || b || …`, whose NULL rule is Spark's.
//!
//! - DECIMAL `+ - * /` (with integers, not floats) take Spark's result type and round HALF_UP to
//!   it (`decimal_arith`); DataFusion keeps the scale Spark gives away past 38 digits.
//!
//! DECIMAL `%` is left to DataFusion. Float `+ - *` is IEEE in both.
//!
//! The rewrite is idempotent: it leaves the functions it creates alone, so it may run on an
//! expression that already went through it (a filter pushed into a scan).

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, ExprSchemable, Operator};

use super::arith::{udf, ArithOp};
use super::decimal_arith::{result_type, DecimalOp};
use super::opaque::{is_opaque, is_opaque_call, opaque};
use super::wider_decimal::Coercion::{Common, Comparison};

/// `expr` with Spark's arithmetic; `schema` types its columns. An operand whose type cannot be
/// worked out is left to DataFusion's planner, which reports it.
pub fn spark_semantics(expr: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| rewrite_node(e, schema, ansi))
}

fn rewrite_node(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    // String and date/time functions and coercions (`text_time`); a rewritten node is rewritten
    // again here (`nvl2` became a CASE).
    let e = match super::text_time::spark_text_time(e, schema)? {
        Ok(t) => return rewrite_node(t.data, schema, ansi).map(|r| Transformed::yes(r.data)),
        Err(e) => e,
    };
    // Arrays, maps, structs and a few math functions (`collections`).
    let e = match super::collections::spark_collections(e, schema)? {
        Ok(t) => return rewrite_node(t.data, schema, ansi).map(|r| Transformed::yes(r.data)),
        Err(e) => e,
    };
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
        // `& | ^ << >>` in Spark's types: a shift wraps in its left operand's (`bitwise`).
        Expr::BinaryExpr(b) if super::bitwise::is_bitwise(&b.op) => {
            match super::bitwise::spark_bitwise(&b, schema)? {
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
                    Ok(t)
                        if is_integer(&t)
                            || matches!(
                                t,
                                DataType::Date32 | DataType::Boolean | DataType::Null
                            ) =>
                    {
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
                Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(acc),
                    Operator::StringConcat,
                    Box::new(a),
                ))
            });
            // A single argument: Spark's concat(x) is x as a string.
            let chained = match &chained {
                Expr::BinaryExpr(_) => chained,
                _ => Expr::Cast(Cast::new(Box::new(chained), DataType::Utf8)),
            };
            Ok(Transformed::yes(chained))
        }
        // A cast that is not exact (it narrows, truncates, rounds or can fail) keeps its meaning
        // only behind `opaque`: DataFusion's simplifier unwraps a cast in a comparison
        // (`CAST(d AS INT) = 1` becomes `d = 1`, false on 1.25 where Spark's is true;
        // `CAST(l AS INT) = 5` never raises CAST_OVERFLOW). See `exact_cast`. Once: a second
        // pass finds it wrapped already.
        Expr::Cast(c)
            if type_of(&c.expr, schema).is_some_and(|from| {
                !super::exact_cast::converts_exactly(&from, c.field.data_type())
            }) =>
        {
            Ok(Transformed::yes(opaque(Expr::Cast(c))))
        }
        Expr::TryCast(c)
            if type_of(&c.expr, schema).is_some_and(|from| {
                !super::exact_cast::converts_exactly(&from, c.field.data_type())
            }) =>
        {
            Ok(Transformed::yes(opaque(Expr::TryCast(c))))
        }
        Expr::ScalarFunction(mut f)
            if is_opaque_call(&f) && f.args.len() == 1 && f.args.first().is_some_and(is_opaque) =>
        {
            match f.args.pop() {
                Some(inner) => Ok(Transformed::yes(inner)),
                None => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        // Aggregates and window functions Spark computes otherwise: see `aggregates`.
        e @ (Expr::AggregateFunction(_) | Expr::WindowFunction(_)) => {
            super::aggregates::spark_aggregate_or_window(e, schema, ansi)
        }
        // `SUBSTRING(s FROM p FOR n)` and `substring(s, p, n)` are planned with DataFusion's
        // `substr` (Postgres's positions), not the registry's: Spark's takes its place.
        Expr::ScalarFunction(mut f) if super::substring::spark_substr(&f).is_some() => {
            match super::substring::spark_substr(&f) {
                Some(ours) => {
                    f.func = ours;
                    Ok(Transformed::yes(Expr::ScalarFunction(f)))
                }
                None => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        // `date_format(ts, 'yyyy-MM-dd')` reads Spark's pattern (`date_format`).
        Expr::ScalarFunction(f) if f.name() == "to_char" => {
            match super::date_format::spark_date_format(f, schema)? {
                Ok(e) => Ok(Transformed::yes(e)),
                Err(f) => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        // `round` of a float, `ceil` and `floor`: Spark's rounding and types (`rounding`).
        Expr::ScalarFunction(f)
            if ["round", "ceil", "floor"]
                .iter()
                .any(|n| f.name().eq_ignore_ascii_case(n)) =>
        {
            match super::rounding::spark_rounding(f, schema) {
                Ok(e) => Ok(Transformed::yes(e)),
                Err(f) => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        // `nvl(a, b)` and `ifnull(a, b)` are `coalesce(a, b)` in Spark (the common type: a
        // DECIMAL stays one); DataFusion's took DOUBLE beside an integer, so
        // `SET e = nvl(e, 0)` rounded a 38-digit DECIMAL.
        Expr::ScalarFunction(f)
            if (f.name().eq_ignore_ascii_case("nvl")
                || f.name().eq_ignore_ascii_case("ifnull"))
                && f.args.len() == 2 =>
        {
            // The `coalesce` rules below apply to it too: this node is not visited again.
            let coalesce = datafusion::functions::core::expr_fn::coalesce(f.args);
            Ok(Transformed::yes(rewrite_node(coalesce, schema, ansi)?.data))
        }
        // `nullif(a, b)` has `a`'s type in Spark (`CASE WHEN a = b THEN NULL ELSE a END`; a SMALLINT
        // stays SMALLINT and overflows as one); DataFusion's has the operands' common type.
        Expr::ScalarFunction(f)
            if f.name().eq_ignore_ascii_case("nullif")
                && f.args.len() == 2
                && !f.args.iter().any(Expr::is_volatile) =>
        {
            let mut args = f.args.clone().into_iter().map(narrow_literal);
            let (Some(a), Some(b)) = (args.next(), args.next()) else {
                return Ok(Transformed::no(Expr::ScalarFunction(f)));
            };
            let Some(t) = type_of(&a, schema).filter(|t| *t != DataType::Null) else {
                return Ok(Transformed::no(Expr::ScalarFunction(f)));
            };
            let Ok(null) = ScalarValue::try_from(&t) else {
                return Ok(Transformed::no(Expr::ScalarFunction(f)));
            };
            // The equality gets Spark's comparison (this node is not visited again).
            let equal = rewrite_node(
                Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(a.clone()),
                    Operator::Eq,
                    Box::new(b),
                )),
                schema,
                ansi,
            )?
            .data;
            Ok(Transformed::yes(Expr::Case(
                datafusion::logical_expr::expr::Case::new(
                    None,
                    vec![(Box::new(equal), Box::new(Expr::Literal(null, None)))],
                    Some(Box::new(a)),
                ),
            )))
        }
        // DECIMALs of two shapes past 38 digits meet in Spark's common type, integer digits first
        // (`wider_decimal`): in `coalesce`, a CASE's results and a comparison.
        Expr::ScalarFunction(mut f)
            if f.name().eq_ignore_ascii_case("coalesce")
                && super::wider_decimal::of_exprs(f.args.iter(), schema, type_of, Common)
                    .is_some() =>
        {
            match super::wider_decimal::of_exprs(f.args.iter(), schema, type_of, Common) {
                Some(t) => {
                    f.args = f.args.into_iter().map(|a| narrowed(a, &t)).collect();
                    Ok(Transformed::yes(Expr::ScalarFunction(f)))
                }
                None => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        // A simple CASE (`CASE x WHEN v THEN …`) is `x = v` comparisons in Spark, each coerced on
        // its own: past 38 digits it is written as a searched CASE of them.
        Expr::Case(c)
            if c.expr.as_deref().is_some_and(|x| {
                c.when_then_expr.iter().any(|(w, _)| {
                    super::wider_decimal::of_exprs(
                        [x, w.as_ref()].into_iter(),
                        schema,
                        type_of,
                        Comparison,
                    )
                    .is_some()
                })
            }) =>
        {
            let Some(x) = c.expr else {
                return Ok(Transformed::no(Expr::Case(c)));
            };
            let mut when_then = Vec::with_capacity(c.when_then_expr.len());
            for (w, t) in c.when_then_expr {
                let equal = Expr::BinaryExpr(BinaryExpr::new(x.clone(), Operator::Eq, w));
                when_then.push((Box::new(rewrite_node(equal, schema, ansi)?.data), t));
            }
            let searched = datafusion::logical_expr::expr::Case::new(None, when_then, c.else_expr);
            Ok(Transformed::yes(
                rewrite_node(Expr::Case(searched), schema, ansi)?.data,
            ))
        }
        Expr::Case(mut c)
            if super::wider_decimal::of_exprs(
                c.when_then_expr
                    .iter()
                    .map(|(_, t)| t.as_ref())
                    .chain(c.else_expr.as_deref()),
                schema,
                type_of,
                Common,
            )
            .is_some() =>
        {
            let results = c
                .when_then_expr
                .iter()
                .map(|(_, t)| t.as_ref())
                .chain(c.else_expr.as_deref());
            let Some(t) = super::wider_decimal::of_exprs(results, schema, type_of, Common) else {
                return Ok(Transformed::no(Expr::Case(c)));
            };
            c.when_then_expr = c
                .when_then_expr
                .into_iter()
                .map(|(w, r)| (w, Box::new(narrowed(*r, &t))))
                .collect();
            c.else_expr = c.else_expr.map(|e| Box::new(narrowed(*e, &t)));
            Ok(Transformed::yes(Expr::Case(c)))
        }
        Expr::BinaryExpr(mut b)
            if is_comparison(&b.op)
                && super::wider_decimal::of_exprs(
                    [b.left.as_ref(), b.right.as_ref()].into_iter(),
                    schema,
                    type_of,
                    Comparison,
                )
                .is_some() =>
        {
            let sides = [b.left.as_ref(), b.right.as_ref()].into_iter();
            let Some(t) = super::wider_decimal::of_exprs(sides, schema, type_of, Comparison) else {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            };
            b.left = Box::new(narrowed(*b.left, &t));
            b.right = Box::new(narrowed(*b.right, &t));
            Ok(Transformed::yes(Expr::BinaryExpr(b)))
        }
        // DOUBLE beside DECIMAL widens to DOUBLE in Spark (`coalesce(d, 2.5)` on a DOUBLE d is a
        // DOUBLE); DataFusion picks a DECIMAL(30,15), which turns 1e-20 into 0.
        Expr::ScalarFunction(mut f)
            if NUMERIC_PASS_THROUGH.contains(&f.name())
                && widens_to_double(f.args.iter(), schema, ansi) =>
        {
            f.args = f
                .args
                .into_iter()
                .map(|a| decimal_as_double(a, schema))
                .collect();
            Ok(Transformed::yes(Expr::ScalarFunction(f)))
        }
        Expr::Case(mut c)
            if widens_to_double(
                c.when_then_expr
                    .iter()
                    .map(|(_, t)| t.as_ref())
                    .chain(c.else_expr.as_deref()),
                schema,
                ansi,
            ) =>
        {
            c.when_then_expr = c
                .when_then_expr
                .into_iter()
                .map(|(w, t)| (w, Box::new(decimal_as_double(*t, schema))))
                .collect();
            c.else_expr = c.else_expr.map(|e| Box::new(decimal_as_double(*e, schema)));
            Ok(Transformed::yes(Expr::Case(c)))
        }
        // Spark types an integer literal that fits as INT wherever it stands (`coalesce(i, -1)`
        // is INT arithmetic's operand, `abs(2)` an INT); comparisons and IN lists compare values
        // and are left alone.
        Expr::ScalarFunction(mut f)
            if NUMERIC_PASS_THROUGH.contains(&f.name())
                && f.args.iter().any(is_wide_int_literal) =>
        {
            f.args = f.args.into_iter().map(narrow_literal).collect();
            Ok(Transformed::yes(Expr::ScalarFunction(f)))
        }
        Expr::Case(mut c)
            if (c.when_then_expr.iter().any(|(_, t)| is_wide_int_literal(t))
                || c.else_expr.as_deref().is_some_and(is_wide_int_literal))
                && c.when_then_expr
                    .iter()
                    .map(|(_, t)| t.as_ref())
                    .chain(c.else_expr.as_deref())
                    .all(|t| {
                        is_wide_int_literal(t)
                            || type_of(t, schema)
                                .is_some_and(|t| is_integer(&t) && integer_rank(&t) <= 3)
                    }) =>
        {
            // Only when every result is INT-sized: DataFusion types an uncoerced CASE by its
            // first branch, so one narrowed literal beside a BIGINT would narrow the whole CASE.
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
        Expr::BinaryExpr(mut b) if is_comparison(&b.op) => {
            let (Some(mut lt), Some(mut rt)) =
                (type_of(&b.left, schema), type_of(&b.right, schema))
            else {
                return Ok(Transformed::no(Expr::BinaryExpr(b)));
            };
            // DECIMAL against a float compares as DOUBLE in Spark (DataFusion casts the float to a
            // DECIMAL, which fails for 1e308).
            let f = DataType::Float64;
            if is_decimal(&lt) && is_float(&rt) {
                b.left = Box::new(cast(*b.left, &f));
                lt = f.clone();
            } else if is_float(&lt) && is_decimal(&rt) {
                b.right = Box::new(cast(*b.right, &f));
                rt = f.clone();
            }
            // A FLOAT against an integer (or a DECIMAL, cast above) compares as DOUBLE in ANSI
            // mode (`CAST(l AS FLOAT) = 16777216` is false for 16777217).
            let float32_beside =
                |a: &DataType, b: &DataType| is_float32(a) && ((ansi && is_integer(b)) || b == &f);
            if float32_beside(&lt, &rt) || float32_beside(&rt, &lt) {
                b.left = Box::new(cast(*b.left, &f));
                b.right = Box::new(cast(*b.right, &f));
                (lt, rt) = (f.clone(), f.clone());
            }
            if !(is_float(&lt) || is_float(&rt)) || !(may_be_zero(&b.left) && may_be_zero(&b.right))
            {
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
            Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                left, b.op, right,
            ))))
        }
        // DECIMALs of two shapes past 38 digits in an IN list: Spark's common type of them all.
        Expr::InList(mut l)
            if super::wider_decimal::of_exprs(
                std::iter::once(l.expr.as_ref()).chain(l.list.iter()),
                schema,
                type_of,
                Common,
            )
            .is_some() =>
        {
            let all = std::iter::once(l.expr.as_ref()).chain(l.list.iter());
            let Some(t) = super::wider_decimal::of_exprs(all, schema, type_of, Common) else {
                return Ok(Transformed::no(Expr::InList(l)));
            };
            l.expr = Box::new(narrowed(*l.expr, &t));
            l.list = l.list.into_iter().map(|x| narrowed(x, &t)).collect();
            Ok(Transformed::yes(Expr::InList(l)))
        }
        // BETWEEN is two comparisons in Spark, each coerced on its own: past 38 digits it is
        // written as them (each then gets Spark's common type above).
        Expr::Between(b)
            if [b.low.as_ref(), b.high.as_ref()].into_iter().any(|bound| {
                super::wider_decimal::of_exprs(
                    [b.expr.as_ref(), bound].into_iter(),
                    schema,
                    type_of,
                    Comparison,
                )
                .is_some()
            }) =>
        {
            let compare = |op: Operator, bound: Expr| {
                rewrite_node(
                    Expr::BinaryExpr(BinaryExpr::new(b.expr.clone(), op, Box::new(bound))),
                    schema,
                    ansi,
                )
                .map(|t| t.data)
            };
            let both = compare(Operator::GtEq, (*b.low).clone())?
                .and(compare(Operator::LtEq, (*b.high).clone())?);
            Ok(Transformed::yes(match b.negated {
                true => Expr::Not(Box::new(both)),
                false => both,
            }))
        }
        // DECIMAL beside a float compares as DOUBLE (as in comparisons above).
        Expr::InList(mut l)
            if widens_to_double(
                std::iter::once(l.expr.as_ref()).chain(l.list.iter()),
                schema,
                ansi,
            ) =>
        {
            l.expr = Box::new(decimal_as_double(*l.expr, schema));
            l.list = l
                .list
                .into_iter()
                .map(|x| decimal_as_double(x, schema))
                .collect();
            Ok(Transformed::yes(Expr::InList(l)))
        }
        Expr::Between(mut b)
            if widens_to_double(
                [b.expr.as_ref(), b.low.as_ref(), b.high.as_ref()].into_iter(),
                schema,
                ansi,
            ) =>
        {
            b.expr = Box::new(decimal_as_double(*b.expr, schema));
            b.low = Box::new(decimal_as_double(*b.low, schema));
            b.high = Box::new(decimal_as_double(*b.high, schema));
            Ok(Transformed::yes(Expr::Between(b)))
        }
        Expr::InList(mut l) if float_near_zero(&l.expr, &l.list, schema) => {
            l.expr = plus_zero(l.expr);
            l.list = l
                .list
                .into_iter()
                .map(|x| match x {
                    Expr::Literal(..) => *normalize_zero_literal(Box::new(x)),
                    x if type_of(&x, schema).is_some_and(|t| is_float(&t)) => {
                        *plus_zero(Box::new(x))
                    }
                    x => x,
                })
                .collect();
            Ok(Transformed::yes(Expr::InList(l)))
        }
        Expr::Between(mut b)
            if float_near_zero(&b.expr, &[(*b.low).clone(), (*b.high).clone()], schema) =>
        {
            b.expr = plus_zero(b.expr);
            let bound = |x: Box<Expr>| match &*x {
                Expr::Literal(..) => normalize_zero_literal(x),
                e if type_of(e, schema).is_some_and(|t| is_float(&t)) => plus_zero(x),
                _ => x,
            };
            b.low = bound(b.low);
            b.high = bound(b.high);
            Ok(Transformed::yes(Expr::Between(b)))
        }
        other => Ok(Transformed::no(other)),
    }
}

/// Whether operands of these types meet as DOUBLE in Spark: a DECIMAL beside a float, or (ANSI)
/// a FLOAT beside an integer (Spark's ANSI coercion widens it: a FLOAT cannot hold every INT).
fn widens_to_double<'a>(es: impl Iterator<Item = &'a Expr>, schema: &DFSchema, ansi: bool) -> bool {
    let (mut dec, mut float, mut float32, mut int) = (false, false, false, false);
    for e in es {
        match type_of(e, schema) {
            Some(t) if is_decimal(&t) => dec = true,
            Some(t) if is_float32(&t) => (float, float32) = (true, true),
            Some(t) if is_float(&t) => float = true,
            Some(t) if is_integer(&t) => int = true,
            _ => {}
        }
    }
    (dec && float) || (ansi && float32 && int)
}

/// `e` as DOUBLE when it is a DECIMAL or a FLOAT (the operands [`widens_to_double`] widens; the
/// others are DOUBLE or integers, which DataFusion then widens to DOUBLE itself).
fn decimal_as_double(e: Expr, schema: &DFSchema) -> Expr {
    match type_of(&e, schema) {
        Some(t) if is_decimal(&t) || is_float32(&t) => cast(e, &DataType::Float64),
        _ => e,
    }
}

fn is_float32(t: &DataType) -> bool {
    matches!(t, DataType::Float32 | DataType::Float16)
}

/// A float `e` set against values of which one may be a zero (IN, BETWEEN).
fn float_near_zero(e: &Expr, others: &[Expr], schema: &DFSchema) -> bool {
    !matches!(e, Expr::Literal(..))
        && type_of(e, schema).is_some_and(|t| is_float(&t))
        && others.iter().any(may_be_zero)
}

/// `e` as a DOUBLE compared as Spark compares: -0.0 becomes 0.0 and every NaN one NaN (Arrow's
/// total order puts -0.0 below 0.0 and a negative NaN apart from NaN). A call: DataFusion's
/// simplifier would drop an `x + 0.0`.
fn plus_zero(e: Box<Expr>) -> Box<Expr> {
    let f = DataType::Float64;
    Box::new(call(
        ArithOp::CanonicalFloat,
        true,
        cast(*e, &f),
        Expr::Literal(ScalarValue::Float64(Some(0.0)), None),
    ))
}

/// Functions whose result type is their arguments' common type (so an INT literal keeps INT
/// arithmetic INT). Constructors (`named_struct`, `make_array`) are not here: their literals
/// would change the built type (Spark casts it on insert; the writer here compares shapes).
const NUMERIC_PASS_THROUGH: &[&str] = &[
    "abs", "coalesce", "nullif", "greatest", "least", "nvl", "ifnull",
];

pub(super) fn is_comparison(op: &Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}

/// Whether `e` may evaluate to a (signed) zero or a NaN: anything but another literal.
fn may_be_zero(e: &Expr) -> bool {
    match e {
        Expr::Literal(v, _) => match v {
            ScalarValue::Float64(Some(x)) => *x == 0.0 || x.is_nan(),
            ScalarValue::Float32(Some(x)) => *x == 0.0 || x.is_nan(),
            v => {
                v.is_null()
                    || v.clone()
                        .cast_to(&DataType::Float64)
                        .ok()
                        .is_none_or(|x| x == ScalarValue::Float64(Some(0.0)))
            }
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
pub(super) fn type_of(e: &Expr, schema: &DFSchema) -> Option<DataType> {
    match e {
        Expr::Literal(v, _) => Some(v.data_type()),
        Expr::Cast(c) => Some(c.field.data_type().clone()),
        Expr::ScalarFunction(f) if super::arith::is_spark_arith(f.name()) => {
            if f.name().contains("_decimal_") {
                // The result type from the operands' (casts or literals, typed at their top).
                let op = super::decimal_arith::op_of_function(f.name());
                let top = |a: Option<&Expr>| match a {
                    Some(Expr::Cast(c)) => Some(c.field.data_type().clone()),
                    Some(Expr::Literal(v, _)) => Some(v.data_type()),
                    _ => None,
                };
                return match (op, top(f.args.first()), top(f.args.get(1))) {
                    (
                        Some(op),
                        Some(DataType::Decimal128(p1, s1)),
                        Some(DataType::Decimal128(p2, s2)),
                    ) => {
                        let (p, s) = result_type(op, p1, s1, p2, s2);
                        Some(DataType::Decimal128(p, s))
                    }
                    _ => e.get_type(schema).ok(),
                };
            }
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
    // A FLOAT beside a DECIMAL, or (ANSI) beside an integer, is DOUBLE arithmetic in Spark
    // (`f * 1.5`, `f + i`); DataFusion keeps FLOAT.
    let widen =
        |a: &DataType, b: &DataType| is_float32(a) && (is_decimal(b) || (ansi && is_integer(b)));
    if !matches!(op, ArithOp::Divide) && (widen(&lt, &rt) || widen(&rt, &lt)) {
        let f = DataType::Float64;
        return Some(match op {
            ArithOp::Remainder => call(op, ansi, cast(l, &f), cast(r, &f)),
            _ => Expr::BinaryExpr(BinaryExpr::new(
                Box::new(cast(l, &f)),
                b.op,
                Box::new(cast(r, &f)),
            )),
        });
    }
    match op {
        ArithOp::Divide => {
            let numeric = |t: &DataType| is_integer(t) || is_float(t) || is_decimal(t);
            if !(numeric(&lt) && numeric(&rt)) {
                return None;
            }
            if any_decimal && !any_float {
                // Spark's decimal division: integers as their DECIMAL (INT is DECIMAL(10,0)),
                // the quotient at Spark's precision and scale, rounded HALF_UP.
                let (Some(ld), Some(rd)) = (as_decimal(&l, &lt), as_decimal(&r, &rt)) else {
                    return None;
                };
                return Some(call(
                    ArithOp::Decimal(DecimalOp::Divide),
                    ansi,
                    cast(l, &ld),
                    cast(r, &rd),
                ));
            }
            let f = DataType::Float64;
            Some(call(op, ansi, cast(l, &f), cast(r, &f)))
        }
        ArithOp::Add | ArithOp::Subtract | ArithOp::Multiply if any_decimal && !any_float => {
            // Spark's DECIMAL `+ - *`: integers as their DECIMAL (an integer literal as a DECIMAL
            // of just its digits, Spark's `DecimalType.fromLiteral`), the result at Spark's
            // precision and scale, rounded HALF_UP (`decimal_arith`).
            let (Some(ld), Some(rd)) = (as_decimal(&l, &lt), as_decimal(&r, &rt)) else {
                return None;
            };
            let dop = match op {
                ArithOp::Add => DecimalOp::Add,
                ArithOp::Subtract => DecimalOp::Subtract,
                _ => DecimalOp::Multiply,
            };
            Some(call(
                ArithOp::Decimal(dop),
                ansi,
                cast(l, &ld),
                cast(r, &rd),
            ))
        }
        _ if any_decimal && !any_float => {
            // An integer literal in decimal arithmetic is a DECIMAL of just its digits (Spark's
            // `DecimalType.fromLiteral`); DataFusion widens it to DECIMAL(20,0), which changes the
            // result's precision and, through it, the scale of a later division.
            let lit_dec = |e: Expr, t: &DataType| match (&e, is_integer(t)) {
                (Expr::Literal(..), true) => {
                    as_decimal(&e, t).map(|d| cast(e.clone(), &d)).unwrap_or(e)
                }
                _ => e,
            };
            let (nl, nr) = (lit_dec(l.clone(), &lt), lit_dec(r.clone(), &rt));
            if nl == l && nr == r {
                return None;
            }
            Some(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(nl),
                b.op,
                Box::new(nr),
            )))
        }
        _ if is_integer(&lt) && is_integer(&rt) => {
            let t = wider_integer(&lt, &rt);
            Some(call(op, ansi, cast(l, &t), cast(r, &t)))
        }
        ArithOp::Remainder if any_float => {
            let numeric = |t: &DataType| is_integer(t) || is_float(t) || is_decimal(t);
            if !(numeric(&lt) && numeric(&rt)) {
                return None;
            }
            let t = match (&lt, &rt) {
                (DataType::Float32, r) if !is_decimal(r) && *r != DataType::Float64 => {
                    DataType::Float32
                }
                (l, DataType::Float32) if !is_decimal(l) && *l != DataType::Float64 => {
                    DataType::Float32
                }
                _ => DataType::Float64,
            };
            Some(call(op, ansi, cast(l, &t), cast(r, &t)))
        }
        _ => None,
    }
}

/// The call computing `l op r`; between two literals its value, computed now (a chain of
/// literals, `1+1+…+1`, would otherwise be a call nested thousands deep, which DataFusion names
/// and types in quadratic time). A literal operation that raises stays a call, to raise when run.
/// The DECIMAL Spark reads an integer or decimal operand as: an integer literal as just its
/// digits (`3` is DECIMAL(1,0)), an integer column by its type's width.
fn as_decimal(e: &Expr, t: &DataType) -> Option<DataType> {
    use super::wider_decimal::literal_decimal;
    match (e, t) {
        (Expr::Literal(ScalarValue::Int64(Some(v)), _), _) => Some(literal_decimal(i128::from(*v))),
        (Expr::Literal(ScalarValue::Int32(Some(v)), _), _) => Some(literal_decimal(i128::from(*v))),
        _ => as_decimal_type(t),
    }
}

fn as_decimal_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Decimal128(..) => Some(t.clone()),
        DataType::Int8 => Some(DataType::Decimal128(3, 0)),
        DataType::Int16 => Some(DataType::Decimal128(5, 0)),
        DataType::Int32 => Some(DataType::Decimal128(10, 0)),
        DataType::Int64 => Some(DataType::Decimal128(20, 0)),
        _ => None,
    }
}

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

/// `e` as the DECIMAL `t` Spark's common type gives it (`wider_decimal`): a NULL literal as it is,
/// a cast that is not exact behind `opaque` (the simplifier would unwrap it in a comparison).
fn narrowed(e: Expr, t: &DataType) -> Expr {
    if matches!(&e, Expr::Literal(ScalarValue::Null, _)) {
        return e;
    }
    match cast(e, t) {
        c @ Expr::Cast(_) => opaque(c),
        other => other,
    }
}

/// `e` as type `t`: a literal converted in place, anything else cast (no cast when the type is
/// already `t`, which the caller knows only for literals; DataFusion drops a no-op cast).
pub(super) fn cast(e: Expr, t: &DataType) -> Expr {
    if let Expr::Literal(v, meta) = &e {
        // A DECIMAL literal becomes the float nearest its exact value (Arrow's cast rounds
        // twice: 103.24600000000001 came out 103.246).
        if let Some(c) = super::decimal_float::decimal_literal_to_float(v, t) {
            return Expr::Literal(c, meta.clone());
        }
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

pub(super) fn is_integer(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

pub(super) fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

pub(super) fn is_decimal(t: &DataType) -> bool {
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
