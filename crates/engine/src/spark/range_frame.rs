//! RANGE window frames with an offset over an integer key, as Spark bounds them.
//!
//! Spark computes each row's frame bounds as `key - n` and `key + n` in the key's own type, so a
//! key within `n` of its type's limit raises `[ARITHMETIC_OVERFLOW]` in ANSI mode, and in legacy
//! mode the bound wraps and the frame comes out otherwise (empty, where the bound wrapped past
//! the rows). DataFusion's bounds are exact, so `sum(i) OVER (ORDER BY i RANGE BETWEEN 1
//! PRECEDING AND 1 FOLLOWING)` with `i` = 2147483647 committed a value where Spark raises (red
//! team helper-40).
//!
//! The frame's ORDER BY key goes through `spark_range_key(key, minus, plus)`: the identity, which
//! raises when any row's `key - minus` or `key + plus` leaves the key's type (`minus` and `plus`
//! are the amounts the frame's bounds subtract and add, by the sort direction). In legacy mode it
//! raises too: fail-closed, where Spark would compute a frame from a wrapped bound.

use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Int16Type, Int32Type, Int64Type, Int8Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::expr::{ScalarFunction, WindowFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
    WindowFrameBound, WindowFrameUnits,
};

const NAME: &str = "spark_range_key";

/// A RANGE frame over a DATE key with a number for an offset, as Spark reads it: that many days.
/// DataFusion cast the number to an interval of months (`1 PRECEDING` reached a month back; red
/// team helper-41). A number over any other non-numeric key (a TIMESTAMP, a string) is refused:
/// Spark asks for an interval there. `Ok(None)`: nothing to change.
pub(super) fn day_offsets(
    wf: &WindowFunction,
    key_type: Option<&DataType>,
) -> datafusion::common::Result<Option<WindowFunction>> {
    let frame = &wf.params.window_frame;
    if frame.units != WindowFrameUnits::Range {
        return Ok(None);
    }
    let Some(key) = key_type else {
        return Ok(None);
    };
    let numeric_key = key.is_numeric();
    let has_number = |b: &WindowFrameBound| match b {
        WindowFrameBound::Preceding(v) | WindowFrameBound::Following(v) => {
            !v.is_null() && offset(v).is_some()
        }
        WindowFrameBound::CurrentRow => false,
    };
    if numeric_key || !(has_number(&frame.start_bound) || has_number(&frame.end_bound)) {
        return Ok(None);
    }
    if *key != DataType::Date32 {
        return datafusion::common::plan_err!(
            "a RANGE frame over a {key} key takes an INTERVAL offset, not a number (as in Spark)"
        );
    }
    let days = |b: &WindowFrameBound| -> WindowFrameBound {
        let to_days = |v: &ScalarValue| match offset(v).and_then(|n| i32::try_from(n).ok()) {
            Some(n) => ScalarValue::IntervalMonthDayNano(Some(
                arrow::datatypes::IntervalMonthDayNano::new(0, n, 0),
            )),
            None => v.clone(),
        };
        match b {
            WindowFrameBound::Preceding(v) if !v.is_null() => {
                WindowFrameBound::Preceding(to_days(v))
            }
            WindowFrameBound::Following(v) if !v.is_null() => {
                WindowFrameBound::Following(to_days(v))
            }
            other => other.clone(),
        }
    };
    let mut out = wf.clone();
    out.params.window_frame.start_bound = days(&frame.start_bound);
    out.params.window_frame.end_bound = days(&frame.end_bound);
    Ok(Some(out))
}

/// `wf` with its ORDER BY key guarded, when its frame is a RANGE frame with an integer offset
/// over one integer key; `None` otherwise (or when it is guarded already).
pub(super) fn guard(wf: &WindowFunction, key_type: Option<DataType>) -> Option<WindowFunction> {
    let frame = &wf.params.window_frame;
    if frame.units != WindowFrameUnits::Range || wf.params.order_by.len() != 1 {
        return None;
    }
    let sort = wf.params.order_by.first()?;
    if matches!(&sort.expr, Expr::ScalarFunction(f) if f.func.name() == NAME) {
        return None;
    }
    if !matches!(
        key_type?,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    ) {
        return None;
    }
    // (amount subtracted, amount added) by one bound: PRECEDING moves against the sort order.
    let moves = |b: &WindowFrameBound| -> Option<(i128, i128)> {
        match b {
            WindowFrameBound::CurrentRow => Some((0, 0)),
            WindowFrameBound::Preceding(v) if v.is_null() => Some((0, 0)),
            WindowFrameBound::Following(v) if v.is_null() => Some((0, 0)),
            WindowFrameBound::Preceding(v) => offset(v).map(|n| match sort.asc {
                true => (n, 0),
                false => (0, n),
            }),
            WindowFrameBound::Following(v) => offset(v).map(|n| match sort.asc {
                true => (0, n),
                false => (n, 0),
            }),
        }
    };
    let (s_minus, s_plus) = moves(&frame.start_bound)?;
    let (e_minus, e_plus) = moves(&frame.end_bound)?;
    let (minus, plus) = (s_minus.max(e_minus), s_plus.max(e_plus));
    if minus == 0 && plus == 0 {
        return None;
    }
    let mut out = wf.clone();
    if let Some(s) = out.params.order_by.first_mut() {
        let key = std::mem::replace(&mut s.expr, Expr::Literal(ScalarValue::Null, None));
        s.expr = Expr::ScalarFunction(ScalarFunction::new_udf(
            udf(),
            vec![
                key,
                Expr::Literal(ScalarValue::Decimal128(Some(minus), 38, 0), None),
                Expr::Literal(ScalarValue::Decimal128(Some(plus), 38, 0), None),
            ],
        ));
    }
    Some(out)
}

/// An integer offset's amount (a negative one is Spark's error, left to DataFusion's).
fn offset(v: &ScalarValue) -> Option<i128> {
    let n: i128 = match v {
        ScalarValue::Int8(Some(n)) => (*n).into(),
        ScalarValue::Int16(Some(n)) => (*n).into(),
        ScalarValue::Int32(Some(n)) => (*n).into(),
        ScalarValue::Int64(Some(n)) => (*n).into(),
        ScalarValue::UInt8(Some(n)) => (*n).into(),
        ScalarValue::UInt16(Some(n)) => (*n).into(),
        ScalarValue::UInt32(Some(n)) => (*n).into(),
        ScalarValue::UInt64(Some(n)) => (*n).into(),
        // Before type coercion DataFusion keeps a RANGE offset as its text ("1", or "1 DAY" for
        // an interval, which is not a number).
        ScalarValue::Utf8(Some(t)) => t.trim().parse::<i128>().ok()?,
        _ => return None,
    };
    (n >= 0).then_some(n)
}

fn udf() -> Arc<ScalarUDF> {
    static F: OnceLock<Arc<ScalarUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| {
        Arc::new(ScalarUDF::from(RangeKey {
            signature: Signature::any(3, Volatility::Immutable),
        }))
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RangeKey {
    signature: Signature,
}

impl ScalarUDFImpl for RangeKey {
    fn name(&self) -> &str {
        NAME
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) => Ok(t.clone()),
            None => exec_err!("{NAME} takes a key"),
        }
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let amount = |i: usize| match args.args.get(i) {
            Some(ColumnarValue::Scalar(ScalarValue::Decimal128(Some(n), ..))) => Ok(*n),
            _ => exec_err!("{NAME}: the frame's amounts are constants"),
        };
        let (minus, plus) = (amount(1)?, amount(2)?);
        let Some(key) = args.args.first() else {
            return exec_err!("{NAME} takes a key");
        };
        let keys = key.to_array(args.number_rows)?;
        let Some((lo, hi, min, max)) = extent(&keys) else {
            return Ok(key.clone());
        };
        if lo - minus < min || hi + plus > max {
            return exec_err!(
                "[ARITHMETIC_OVERFLOW] a RANGE window frame's bound (key - {minus} or key + \
                 {plus}) overflows {}, as in Spark. Use a ROWS frame or a wider key type",
                keys.data_type()
            );
        }
        Ok(key.clone())
    }
}

/// The smallest and largest non-NULL key, and the range of the key's type; `None` when every key
/// is NULL (a NULL key's frame has no bound to compute).
fn extent(a: &ArrayRef) -> Option<(i128, i128, i128, i128)> {
    fn span<I: Iterator<Item = Option<i128>>>(it: I) -> Option<(i128, i128)> {
        it.flatten().fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
    }
    let (span, min, max) = match a.data_type() {
        DataType::Int8 => (
            span(
                a.as_primitive::<Int8Type>()
                    .iter()
                    .map(|v| v.map(i128::from)),
            ),
            i8::MIN.into(),
            i8::MAX.into(),
        ),
        DataType::Int16 => (
            span(
                a.as_primitive::<Int16Type>()
                    .iter()
                    .map(|v| v.map(i128::from)),
            ),
            i16::MIN.into(),
            i16::MAX.into(),
        ),
        DataType::Int32 => (
            span(
                a.as_primitive::<Int32Type>()
                    .iter()
                    .map(|v| v.map(i128::from)),
            ),
            i32::MIN.into(),
            i32::MAX.into(),
        ),
        DataType::Int64 => (
            span(
                a.as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(i128::from)),
            ),
            i64::MIN.into(),
            i64::MAX.into(),
        ),
        _ => return None,
    };
    let (lo, hi) = span?;
    Some((lo, hi, min, max))
}
