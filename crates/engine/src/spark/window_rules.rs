//! Window functions Spark refuses, or that DataFusion computes otherwise than Spark where no exact
//! version is here: refused with one line before planning.
//! - DISTINCT inside a window aggregate: Spark's `DISTINCT_WINDOW_FUNCTION_UNSUPPORTED`
//!   (DataFusion computed one; red team helper-41);
//! - `nth_value(x, n)` with a constant `n` below 1: Spark's `VALUE_OUT_OF_RANGE` (DataFusion
//!   returned NULL on every row);
//! - covariance, correlation and the `regr_*` family over a frame that slides (their running
//!   moments drift; below). The variances and standard deviations are exact there (`moments`).

use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::{Expr, WindowFrameBound, WindowFunctionDefinition};

/// Refuses a window function Spark refuses or whose sliding frame would drift (module header).
pub fn refuse_unsupported_window(e: &Expr) -> Result<()> {
    let Expr::WindowFunction(wf) = e else {
        return Ok(());
    };
    if wf.params.distinct {
        return plan_err!(
            "DISTINCT is not allowed in a window function (Spark: \
             DISTINCT_WINDOW_FUNCTION_UNSUPPORTED)"
        );
    }
    if let WindowFunctionDefinition::WindowUDF(f) = &wf.fun {
        if f.name().eq_ignore_ascii_case("nth_value") {
            let n = wf.params.args.get(1);
            let below_one = matches!(n, Some(Expr::Literal(v, _)) if below_one(v));
            if below_one {
                return plan_err!(
                    "nth_value's offset must be at least 1 (Spark: VALUE_OUT_OF_RANGE)"
                );
            }
        }
    }
    refuse_drifting_window(e)
}

fn below_one(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Int8(Some(n)) => *n < 1,
        ScalarValue::Int16(Some(n)) => *n < 1,
        ScalarValue::Int32(Some(n)) => *n < 1,
        ScalarValue::Int64(Some(n)) => *n < 1,
        ScalarValue::UInt8(Some(n)) => *n < 1,
        ScalarValue::UInt16(Some(n)) => *n < 1,
        ScalarValue::UInt32(Some(n)) => *n < 1,
        ScalarValue::UInt64(Some(n)) => *n < 1,
        _ => false,
    }
}

/// Aggregates whose sliding-frame accumulators take leaving rows out of running floating-point
/// moments (DataFusion's), refused in a frame that slides: `stddev(x) OVER (… 1 PRECEDING)` gave
/// 1073741824 where Spark gives 1.414 (red team helper-40).
pub(super) const DRIFTING_IN_SLIDING_FRAMES: &[&str] = &[
    "covar",
    "covar_samp",
    "covar_pop",
    "corr",
    "regr_slope",
    "regr_intercept",
    "regr_count",
    "regr_r2",
    "regr_avgx",
    "regr_avgy",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
];

/// Refuses an aggregate of [`DRIFTING_IN_SLIDING_FRAMES`] over a frame whose start moves (any
/// start but UNBOUNDED PRECEDING: DataFusion retracts rows only then).
fn refuse_drifting_window(e: &Expr) -> Result<()> {
    let Expr::WindowFunction(wf) = e else {
        return Ok(());
    };
    let WindowFunctionDefinition::AggregateUDF(f) = &wf.fun else {
        return Ok(());
    };
    let name = f.name();
    let drifting = DRIFTING_IN_SLIDING_FRAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
        || f.aliases().iter().any(|a| {
            DRIFTING_IN_SLIDING_FRAMES
                .iter()
                .any(|n| n.eq_ignore_ascii_case(a))
        });
    let slides = !matches!(
        wf.params.window_frame.start_bound,
        WindowFrameBound::Preceding(ref v) if v.is_null()
    );
    if drifting && slides {
        return plan_err!(
            "{name} over a window frame that slides is not supported (its running moments \
             would drift from Spark's values); use a frame from UNBOUNDED PRECEDING"
        );
    }
    Ok(())
}
