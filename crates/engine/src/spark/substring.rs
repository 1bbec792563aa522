//! Spark's `substring` / `substr` (also `SUBSTRING(s FROM p FOR n)`), `left` and `right`, in place
//! of DataFusion's, which follow Postgres: `substring('hello', 0, 3)` is 'hel' in Spark ('he'
//! there: position 0 is before the first character), `substring('hello', -3, 2)` 'll' (''
//! there: a negative position counts from the end in Spark), `left('abc', -1)` '' ('ab' there:
//! all but the last). An `UPDATE … SET code = substring(code, 0, 3)` stored other values.
//!
//! Spark's rule (`UTF8String.substringSQL`), in characters (code points): a position p > 0 is
//! the p-th character, 0 the first, p < 0 the |p|-th from the end; the substring runs from there
//! for `len` characters (all when omitted), clipped to the string; a start past the end, or a
//! length ≤ 0, gives ''. `left(s, n)` is `substring(s, 1, n)`; `right(s, n)` is '' for n ≤ 0,
//! else `substring(s, -n)`. NULL in, NULL out. Strings only (Spark also cuts BINARY: refused
//! here by the signature, never cut otherwise).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Which of the three functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Cut {
    Substring,
    Left,
    Right,
}

/// The functions, to register in a planning context (each replaces DataFusion's of that name).
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [Cut::Substring, Cut::Left, Cut::Right]
        .into_iter()
        .map(function)
        .collect()
}

/// One of them, shared by every plan.
fn function(cut: Cut) -> Arc<ScalarUDF> {
    static ONES: [std::sync::OnceLock<Arc<ScalarUDF>>; 3] = [
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
    ];
    let i = match cut {
        Cut::Substring => 0,
        Cut::Left => 1,
        Cut::Right => 2,
    };
    let make = || {
        Arc::new(ScalarUDF::from(SparkCut {
            cut,
            signature: signature(cut),
        }))
    };
    match ONES.get(i) {
        Some(cell) => Arc::clone(cell.get_or_init(make)),
        None => make(),
    }
}

/// The SQL planner's `SUBSTRING(s FROM p FOR n)` / `substring(s, p, n)` as Spark's: first in a
/// state's expression planners (DataFusion's own builds its `substr` directly, whose signature
/// refused a SMALLINT position while the statement was planned).
#[derive(Debug)]
pub struct SubstringPlanner;

impl datafusion::logical_expr::planner::ExprPlanner for SubstringPlanner {
    fn plan_substring(
        &self,
        args: Vec<datafusion::logical_expr::Expr>,
    ) -> Result<datafusion::logical_expr::planner::PlannerResult<Vec<datafusion::logical_expr::Expr>>>
    {
        Ok(datafusion::logical_expr::planner::PlannerResult::Planned(
            datafusion::logical_expr::Expr::ScalarFunction(
                datafusion::logical_expr::expr::ScalarFunction::new_udf(
                    function(Cut::Substring),
                    args,
                ),
            ),
        ))
    }
}

/// DataFusion's `substr` (the SQL planner builds `SUBSTRING(s FROM p FOR n)` and
/// `substring(s, p, n)` with it directly, not through the registry) replaced by Spark's; None
/// when `f` is not DataFusion's.
pub fn spark_substr(f: &datafusion::logical_expr::expr::ScalarFunction) -> Option<Arc<ScalarUDF>> {
    let ours = function(Cut::Substring);
    (f.name() == "substr" && !Arc::ptr_eq(&f.func, &ours)).then_some(ours)
}

fn signature(_cut: Cut) -> Signature {
    // Arguments are typed by `coerce_types`: any string, any integer (or NULL).
    Signature::user_defined(Volatility::Immutable)
}

/// `s` cut as Spark's `substringSQL(pos, len)` cuts it, in INT arithmetic as Spark's (`len`
/// None: `Integer.MAX_VALUE`, so at the least position the end falls inside the string).
pub fn substring_sql(s: &str, pos: i32, len: Option<i32>) -> &str {
    let chars = s.chars().count() as i64;
    let pos = i64::from(pos);
    let start = match pos {
        p if p > 0 => p - 1,
        p if p < 0 => chars + p,
        _ => 0,
    };
    // Spark computes the end in a long and clamps it to an int.
    let end = (start + i64::from(len.unwrap_or(i32::MAX)))
        .clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    let (start, end) = (start.max(0), end.min(chars));
    if start >= end {
        return "";
    }
    let byte = |i: i64| {
        s.char_indices()
            .nth(usize::try_from(i).unwrap_or(usize::MAX))
            .map_or(s.len(), |(b, _)| b)
    };
    let (from, to) = (byte(start), byte(end));
    s.get(from..to).unwrap_or("")
}

fn cut_one(cut: Cut, s: &str, a: i32, b: Option<i32>) -> &str {
    match cut {
        Cut::Substring => substring_sql(s, a, b),
        Cut::Left => substring_sql(s, 1, Some(a)),
        Cut::Right if a <= 0 => "",
        // Spark's `UnaryMinus` of an INT: -(-2147483648) is out of range, but a <= 0 is taken above.
        Cut::Right => substring_sql(s, a.wrapping_neg(), None),
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkCut {
    cut: Cut,
    signature: Signature,
}

impl ScalarUDFImpl for SparkCut {
    fn name(&self) -> &str {
        match self.cut {
            Cut::Substring => "substr",
            Cut::Left => "left",
            Cut::Right => "right",
        }
    }
    fn aliases(&self) -> &[String] {
        static SUBSTRING: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        match self.cut {
            Cut::Substring => SUBSTRING.get_or_init(|| vec!["substring".to_string()]),
            _ => &[],
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    /// A string, then one integer (two for `substring`'s length), cast to STRING and BIGINT.
    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let arity = match self.cut {
            Cut::Substring => 2..=3,
            Cut::Left | Cut::Right => 2..=2,
        };
        if !arity.contains(&args.len()) {
            return plan_err!(
                "{} takes a string and {} integers",
                self.name(),
                arity.end() - 1
            );
        }
        args.iter()
            .enumerate()
            .map(|(i, t)| match (i, t) {
                (_, DataType::Null) => Ok(if i == 0 {
                    DataType::Utf8
                } else {
                    DataType::Int64
                }),
                (0, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
                    Ok(DataType::Utf8)
                }
                // Spark's positions are INTs: a BIGINT is cast (past INT: CAST_OVERFLOW).
                (1.., t) if t.is_integer() => Ok(DataType::Int32),
                (_, t) => plan_err!(
                    "{}: argument {} of type {t} (a string, then integers)",
                    self.name(),
                    i + 1
                ),
            })
            .collect()
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // All-scalar arguments give one-row arrays, and the one-row result stands for a scalar.
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let (Some(s), Some(a)) = (arrays.first(), arrays.get(1)) else {
            return exec_err!("{}: too few arguments", self.name());
        };
        let s = arrow::compute::cast(s, &DataType::Utf8)?;
        let s = s.as_string::<i32>();
        let ints = |x: &ArrayRef| -> Result<Vec<Option<i32>>> {
            match x.data_type() {
                DataType::Int32 => Ok(x.as_primitive::<Int32Type>().iter().collect()),
                other => exec_err!("{}: an INT position expected, found {other}", self.name()),
            }
        };
        let a = ints(a)?;
        let b = arrays.get(2).map(ints).transpose()?;
        let out: StringArray = (0..s.len())
            .map(|i| {
                let text = s.is_valid(i).then(|| s.value(i))?;
                let first = a.get(i).copied().flatten()?;
                let second = match &b {
                    Some(b) => Some(b.get(i).copied().flatten()?),
                    None => None,
                };
                Some(cut_one(self.cut, text, first, second).to_string())
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_as_spark() {
        // Spark 4's results.
        assert_eq!(substring_sql("hello", 0, Some(3)), "hel");
        assert_eq!(substring_sql("hello", -3, Some(2)), "ll");
        assert_eq!(substring_sql("hello", -3, None), "llo");
        assert_eq!(substring_sql("hello", 2, None), "ello");
        assert_eq!(substring_sql("hello", 0, None), "hello");
        assert_eq!(substring_sql("hello", -10, Some(3)), "");
        assert_eq!(substring_sql("hello", 2, Some(-1)), "");
        assert_eq!(substring_sql("hello", -7, Some(4)), "he");
        assert_eq!(substring_sql("héllo", 2, Some(2)), "él");
        assert_eq!(substring_sql("hello", 9, Some(2)), "");
        assert_eq!(substring_sql("hello", i32::MAX, Some(i32::MAX)), "");
        assert_eq!(substring_sql("hello", i32::MIN, Some(i32::MIN)), "");
        // Spark 4: the default length is Integer.MAX_VALUE, so from the least position the end
        // is 2147483647 characters on: substr('héllo', -2147483648) is 'héll' (helper-39).
        assert_eq!(substring_sql("héllo", i32::MIN, None), "héll");
        assert_eq!(cut_one(Cut::Left, "abc", -1, None), "");
        assert_eq!(cut_one(Cut::Right, "abc", -1, None), "");
        assert_eq!(cut_one(Cut::Left, "abc", 0, None), "");
        assert_eq!(cut_one(Cut::Right, "abc", 5, None), "abc");
        assert_eq!(cut_one(Cut::Left, "abc", 5, None), "abc");
        assert_eq!(cut_one(Cut::Right, "abc", 2, None), "bc");
        assert_eq!(cut_one(Cut::Right, "abc", i32::MIN, None), "");
    }
}
