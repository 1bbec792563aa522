//! The aggregates Spark computes otherwise than DataFusion, swapped for ours by the rewrite
//! (`rewrite::rewrite_node`), in a GROUP BY and in a window (`… OVER (…)`) alike:
//! - `sum` of integers raises on overflow in ANSI mode, and of DECIMALs is exact until its result,
//!   which raises (ANSI) or is NULL (legacy) past its type (`checked_sum`; DataFusion's wraps;
//!   Spark's legacy mode wraps integers too, so they are left there);
//! - `avg` of a DECIMAL rounds HALF_UP where DataFusion's truncates, in both modes
//!   (`decimal_avg`);
//! - in a window, `sum` of floats and `avg` of integers and floats add DOUBLEs in the frame's
//!   order, a sliding frame afresh per row (`float_frame`; DataFusion's subtracted the rows
//!   leaving the frame, and its sums drifted);
//! - in a GROUP BY, `max`/`min` of floats order NaN above every value (`float_extrema`);
//! - `sum(DISTINCT x)` is checked as `sum` is (`distinct_sum`);
//! - the variances and standard deviations are Spark's arithmetic (`moments`, exact over sliding
//!   frames too); covariance, correlation and `regr_*` run over their arguments cast to DOUBLE
//!   (`window_rules` refuses them over a sliding frame).
//!
//! DISTINCT forms are left to DataFusion (and are not refused: they are rare, and a wrapped
//! DISTINCT sum is the next gap on this list).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::{AggregateUDF, Expr, WindowFunctionDefinition};

use super::rewrite::{is_integer, type_of};

/// Our function in place of the aggregate `name` over one argument of type `arg`, if Spark's
/// differs.
/// `grouped`: a GROUP BY or whole-table aggregate (not a window).
fn spark_aggregate(
    name: &str,
    arg: Option<DataType>,
    ansi: bool,
    grouped: bool,
) -> Option<Arc<AggregateUDF>> {
    let arg = arg?;
    let decimal = matches!(arg, DataType::Decimal128(..));
    if name.eq_ignore_ascii_case("sum") {
        return match (decimal, is_integer(&arg) && ansi) {
            (true, _) => Some(super::checked_sum::checked_decimal_sum(ansi, grouped)),
            (false, true) => Some(super::checked_sum::checked_sum()),
            _ => None,
        };
    }
    let float = matches!(arg, DataType::Float32 | DataType::Float64);
    if grouped && float && name.eq_ignore_ascii_case("max") {
        return Some(super::float_extrema::float_max());
    }
    if grouped && float && name.eq_ignore_ascii_case("min") {
        return Some(super::float_extrema::float_min());
    }
    if (name.eq_ignore_ascii_case("avg") || name.eq_ignore_ascii_case("mean")) && decimal {
        return Some(super::decimal_avg::decimal_avg(ansi));
    }
    None
}

/// Our function in place of the aggregate `name` in a window, where the frame's order makes
/// floating-point sums Spark's to the last digit.
fn spark_window_aggregate(name: &str, arg: Option<DataType>) -> Option<Arc<AggregateUDF>> {
    let arg = arg?;
    let float = matches!(
        arg,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    );
    if name.eq_ignore_ascii_case("sum") && float {
        return Some(super::float_frame::window_float_sum());
    }
    if (name.eq_ignore_ascii_case("avg") || name.eq_ignore_ascii_case("mean"))
        && (float || is_integer(&arg))
    {
        return Some(super::float_frame::window_float_avg());
    }
    None
}

/// Covariance, correlation and `regr_*`: Spark computes them over the arguments cast to DOUBLE.
fn is_variance(name: &str) -> bool {
    super::window_rules::DRIFTING_IN_SLIDING_FRAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
}

/// `args` cast to DOUBLE where they are not, as Spark's `CentralMomentAgg` and `Covariance` cast
/// them: DataFusion's `var_samp` of INTs near 2^31 came out at FLOAT precision
/// (0.3333333730697632 where Spark gives 0.33333333333333337; red team helper-41). Whether any
/// argument changed.
fn as_doubles(args: &mut [Expr], schema: &DFSchema) -> bool {
    let mut changed = false;
    for a in args.iter_mut() {
        if let Some(t) = type_of(a, schema) {
            if t != DataType::Float64 {
                let e = std::mem::replace(a, Expr::Literal(ScalarValue::Null, None));
                *a = super::rewrite::cast(e, &DataType::Float64);
                changed = true;
            }
        }
    }
    changed
}

/// `e` with Spark's aggregate in place of DataFusion's, or `e` itself (Err) when Spark's is the
/// same.
pub fn spark_aggregates(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Expr, Expr> {
    match e {
        // The variances and standard deviations: Spark's arithmetic (`moments`).
        Expr::AggregateFunction(mut af)
            if super::moments::spark_moment(af.func.name()).is_some() =>
        {
            match super::moments::spark_moment(af.func.name()) {
                Some(f) => {
                    af.func = f;
                    Ok(Expr::AggregateFunction(af))
                }
                None => Err(Expr::AggregateFunction(af)),
            }
        }
        Expr::WindowFunction(mut wf) if matches!(&wf.fun, WindowFunctionDefinition::AggregateUDF(f) if super::moments::spark_moment(f.name()).is_some()) =>
        {
            let found = match &wf.fun {
                WindowFunctionDefinition::AggregateUDF(f) => super::moments::spark_moment(f.name()),
                _ => None,
            };
            match found {
                Some(f) => {
                    wf.fun = WindowFunctionDefinition::AggregateUDF(f);
                    Ok(Expr::WindowFunction(wf))
                }
                None => Err(Expr::WindowFunction(wf)),
            }
        }
        Expr::AggregateFunction(mut af) if is_variance(af.func.name()) => {
            match as_doubles(&mut af.params.args, schema) {
                true => Ok(Expr::AggregateFunction(af)),
                false => Err(Expr::AggregateFunction(af)),
            }
        }
        Expr::WindowFunction(mut wf) if matches!(&wf.fun, WindowFunctionDefinition::AggregateUDF(f) if is_variance(f.name())) => {
            match as_doubles(&mut wf.params.args, schema) {
                true => Ok(Expr::WindowFunction(wf)),
                false => Err(Expr::WindowFunction(wf)),
            }
        }
        // DISTINCT: only `sum`, whose overflow DataFusion's distinct sum wrapped (`distinct_sum`).
        Expr::AggregateFunction(mut af)
            if af.params.args.len() == 1
                && (!af.params.distinct || af.func.name().eq_ignore_ascii_case("sum")) =>
        {
            let arg = af.params.args.first().and_then(|a| type_of(a, schema));
            match spark_aggregate(af.func.name(), arg, ansi, true) {
                Some(f) => {
                    af.func = f;
                    Ok(Expr::AggregateFunction(af))
                }
                None => Err(Expr::AggregateFunction(af)),
            }
        }
        Expr::WindowFunction(mut wf) if !wf.params.distinct && wf.params.args.len() == 1 => {
            let WindowFunctionDefinition::AggregateUDF(f) = &wf.fun else {
                return Err(Expr::WindowFunction(wf));
            };
            let arg = wf.params.args.first().and_then(|a| type_of(a, schema));
            let found = spark_aggregate(f.name(), arg.clone(), ansi, false)
                .or_else(|| spark_window_aggregate(f.name(), arg));
            match found {
                Some(f) => {
                    wf.fun = WindowFunctionDefinition::AggregateUDF(f);
                    Ok(Expr::WindowFunction(wf))
                }
                None => Err(Expr::WindowFunction(wf)),
            }
        }
        other => Err(other),
    }
}

/// An aggregate or window function with Spark's meaning: refused when Spark refuses it
/// (`window_rules`), its RANGE frame's bounds as Spark computes them (`range_frame`), and
/// Spark's function in place of DataFusion's where they differ.
pub fn spark_aggregate_or_window(
    e: Expr,
    schema: &DFSchema,
    ansi: bool,
) -> datafusion::common::Result<Transformed<Expr>> {
    super::window_rules::refuse_unsupported_window(&e)?;
    let framed = match &e {
        Expr::WindowFunction(wf) => {
            let key = wf
                .params
                .order_by
                .first()
                .and_then(|s| type_of(&s.expr, schema));
            match super::range_frame::day_offsets(wf, key.as_ref())? {
                Some(days) => Some(Expr::WindowFunction(Box::new(days))),
                None => {
                    super::range_frame::guard(wf, key).map(|g| Expr::WindowFunction(Box::new(g)))
                }
            }
        }
        _ => None,
    };
    let mut changed = framed.is_some();
    let e = framed.unwrap_or(e);
    // Float keys and DISTINCT arguments compared as Spark compares them (`float_keys`).
    let e = match e {
        Expr::WindowFunction(mut wf) => {
            for k in wf.params.partition_by.iter_mut() {
                let (n, c) = super::float_keys::normalized(k.clone(), schema);
                *k = n;
                changed |= c;
            }
            for s in wf.params.order_by.iter_mut() {
                let (n, c) = super::float_keys::normalized(s.expr.clone(), schema);
                s.expr = n;
                changed |= c;
            }
            Expr::WindowFunction(wf)
        }
        Expr::AggregateFunction(mut af) if af.params.distinct => {
            for a in af.params.args.iter_mut() {
                let (n, c) = super::float_keys::normalized(a.clone(), schema);
                *a = n;
                changed |= c;
            }
            Expr::AggregateFunction(af)
        }
        other => other,
    };
    Ok(match spark_aggregates(e, schema, ansi) {
        Ok(e) => Transformed::yes(e),
        Err(e) if changed => Transformed::yes(e),
        Err(e) => Transformed::no(e),
    })
}
