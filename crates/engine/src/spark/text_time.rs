//! String and date/time functions, and implicit coercions around strings, as Spark 4 (ANSI) means
//! them — or refused with one line where DataFusion would compute another value and no exact
//! version is here yet (an extra refusal only costs a rewrite of the statement; a wrong value is
//! stored silently). Found by red team helper-44 on twin tables against Spark:
//! - `nvl2(a, b, c)` is `CASE WHEN a IS NOT NULL THEN b ELSE c END` (typed by `b` and `c` only;
//!   DataFusion took `a`'s type into the common type: a BIGINT beside a DOUBLE lost digits);
//! - `regexp_replace(s, p, r)` replaces every match (DataFusion's, without the `g` flag, the
//!   first); a replacement holding `$` or `\` is refused (Java's group syntax is not Rust's);
//! - `lpad`/`rpad` with a negative length give '' (DataFusion panicked on a negative column);
//! - a TIMESTAMP made a string (CAST, `concat`, `||`) is Spark's text (`timestamp_text`);
//! - a string made a TIMESTAMP keeps microseconds, as Spark's (more digits are truncated).
//! (`ltrim`/`rtrim`'s argument order is settled on the AST: `function_syntax`.)
//!
//! Refused: `extract` of DOW (Spark's is 1–7 with Sunday 1, DataFusion's 0–6), of SECOND from a
//! timestamp (Spark's has the fraction, a DECIMAL(8,6)), of EPOCH or sub-second fields (not
//! Spark's); `initcap` (Spark capitalizes after spaces only); `from_unixtime` (Spark's patterns);
//! `TRY_CAST` of a string to a date, timestamp, boolean or fractional number and `CAST` of a
//! string to BOOLEAN (Spark's parsers accept other texts than Arrow's: `TRY_CAST('2024' AS DATE)`
//! is a date in Spark, NULL here; 'on' is true here, an error there); a DATE plus an interval with
//! a time part (a TIMESTAMP in Spark); DATE − DATE (an INTERVAL in Spark); a STRING compared with
//! a DECIMAL (DataFusion rounds the string to the literal's scale); and a CASE/COALESCE whose
//! results mix strings and numbers (Spark's common type is numeric).
//!
//! Each rewrite is idempotent: a statement's expressions may pass through here more than once.

use arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{plan_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Case, ScalarFunction};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

use super::rewrite::type_of;

/// `Ok(Ok(t))`: `e` rewritten; `Ok(Err(e))`: not this module's (handed back); `Err`: refused.
pub(super) fn spark_text_time(
    e: Expr,
    schema: &DFSchema,
) -> Result<std::result::Result<Transformed<Expr>, Expr>> {
    let ty = |x: &Expr| type_of(x, schema);
    match e {
        Expr::ScalarFunction(f) => function(f, schema),
        Expr::TryCast(c) if is_text(ty(&c.expr)) && fragile_target(c.field.data_type()) => {
            plan_err!(
                "TRY_CAST of a string to {} is not supported: Spark's parser accepts other texts \
                 than this engine's (use CAST, which fails instead of returning NULL)",
                c.field.data_type()
            )
        }
        Expr::Cast(c) if is_text(ty(&c.expr)) && c.field.data_type() == &DataType::Boolean => {
            plan_err!(
                "CAST of a string to BOOLEAN is not supported: Spark accepts only t/true/y/yes/1 \
                 and f/false/n/no/0 (compare the string instead)"
            )
        }
        Expr::Cast(c)
            if is_timestamp(ty(&c.expr)) && is_text(Some(c.field.data_type().clone())) =>
        {
            let to = c.field.data_type().clone();
            let text = timestamp_text(*c.expr);
            Ok(Ok(Transformed::yes(match to {
                DataType::Utf8 => text,
                other => super::rewrite::cast(text, &other),
            })))
        }
        // Spark's TIMESTAMP holds microseconds: a string with more digits is truncated to them
        // (DataFusion's nanosecond TIMESTAMP kept them, so `CAST(s AS TIMESTAMP) > ts` held for a
        // value Spark reads as equal). The type stays DataFusion's.
        Expr::Cast(c)
            if is_text(ty(&c.expr))
                && matches!(
                    c.field.data_type(),
                    DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, _)
                ) =>
        {
            let DataType::Timestamp(_, zone) = c.field.data_type().clone() else {
                return Ok(Err(Expr::Cast(c)));
            };
            let micros = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone);
            let to = c.field.data_type().clone();
            Ok(Ok(Transformed::yes(super::rewrite::cast(
                super::rewrite::cast(*c.expr, &micros),
                &to,
            ))))
        }
        Expr::BinaryExpr(b) => binary(b, schema),
        Expr::Case(c) => case(c, schema),
        other => Ok(Err(other)),
    }
}

/// A TIMESTAMP `e` as Spark's text of it (`timestamp_text`: a zoned one in UTC).
fn timestamp_text(e: Expr) -> Expr {
    super::timestamp_text::call(e)
}

/// `args` with each TIMESTAMP among them made Spark's text (a string function's arguments).
fn timestamps_as_text(args: Vec<Expr>, schema: &DFSchema) -> Result<Vec<Expr>> {
    args.into_iter()
        .map(|a| match is_timestamp(type_of(&a, schema)) {
            true => Ok(timestamp_text(a)),
            false => Ok(a),
        })
        .collect()
}

fn function(
    mut f: ScalarFunction,
    schema: &DFSchema,
) -> Result<std::result::Result<Transformed<Expr>, Expr>> {
    let name = f.name().to_ascii_lowercase();
    let ty = |x: &Expr| type_of(x, schema);
    match (name.as_str(), f.args.len()) {
        ("nvl2", 3) => {
            let mut args = std::mem::take(&mut f.args).into_iter();
            let (Some(a), Some(b), Some(c)) = (args.next(), args.next(), args.next()) else {
                return plan_err!("nvl2 takes three arguments");
            };
            let case = Expr::Case(Case::new(
                None,
                vec![(Box::new(a.is_not_null()), Box::new(b))],
                Some(Box::new(c)),
            ));
            Ok(Ok(Transformed::yes(case)))
        }
        // Java writes a group `$1` and escapes with `\`; Rust's replacement reads `$1a` as the
        // group named `1a`: only a replacement without either means the same in both.
        ("regexp_replace", 3)
            if !matches!(f.args.get(2), Some(Expr::Literal(ScalarValue::Utf8(Some(r)), _))
                if !r.contains(['$', '\\'])) =>
        {
            plan_err!(
                "regexp_replace is supported with a literal replacement without $ or \\ (group \
                 references: Java's and this engine's syntax differ)"
            )
        }
        ("regexp_replace", 3) => {
            f.args
                .push(Expr::Literal(ScalarValue::Utf8(Some("g".into())), None));
            Ok(Ok(Transformed::yes(Expr::ScalarFunction(f))))
        }
        // Rewritten already (a statement's expression is planned more than once).
        ("regexp_replace", 4) if matches!(f.args.get(3), Some(Expr::Literal(ScalarValue::Utf8(Some(g)), _)) if g == "g") => {
            Ok(Err(Expr::ScalarFunction(f)))
        }
        ("regexp_replace", _) => plan_err!(
            "regexp_replace with a fourth argument is not supported (Spark's is a position)"
        ),
        ("lpad" | "rpad", 2 | 3)
            if !matches!(f.args.get(1), Some(Expr::Literal(..)))
                && !matches!(f.args.get(1), Some(Expr::ScalarFunction(g)) if g.name() == "greatest") =>
        {
            let len = f.args.remove(1);
            let zero = Expr::Literal(ScalarValue::Int64(Some(0)), None);
            let floor = datafusion::functions::expr_fn::greatest(vec![len, zero]);
            f.args.insert(1, floor);
            Ok(Ok(Transformed::yes(Expr::ScalarFunction(f))))
        }
        ("coalesce" | "nvl" | "ifnull", _) if mixes_text_and_numbers(&f.args, schema) => {
            plan_err!(
                "{name} of strings and numbers is not supported: Spark's result is numeric (a \
                 string that is no number fails), cast the arguments to one type"
            )
        }
        ("initcap", _) => plan_err!(
            "initcap is not supported: Spark capitalizes only after spaces, this engine after \
             any non-letter"
        ),
        ("from_unixtime", _) => {
            plan_err!("from_unixtime is not supported: Spark's takes its own patterns")
        }
        ("concat" | "concat_ws", _) if f.args.iter().any(|a| is_timestamp(ty(a))) => {
            f.args = timestamps_as_text(std::mem::take(&mut f.args), schema)?;
            Ok(Ok(Transformed::yes(Expr::ScalarFunction(f))))
        }
        ("date_part" | "datepart", 2) => {
            let field = match f.args.first() {
                Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => s.to_ascii_lowercase(),
                _ => return plan_err!("extract / date_part needs a literal field"),
            };
            let of_timestamp = f.args.get(1).is_some_and(|x| is_timestamp(ty(x)));
            match field.as_str() {
                "dow" => plan_err!(
                    "extract of DOW is not supported: Spark's is 1-7 with Sunday 1, this \
                     engine's 0-6"
                ),
                "second" | "seconds" | "s" | "sec" | "secs" if of_timestamp => plan_err!(
                    "extract of SECOND from a timestamp is not supported: Spark's has the \
                     fraction (a DECIMAL(8,6)), this engine's is whole seconds"
                ),
                "epoch" | "millisecond" | "milliseconds" | "microsecond" | "microseconds"
                | "nanosecond" | "nanoseconds" | "isodow" | "doy_iso" => {
                    plan_err!("extract of {field} is not a Spark field")
                }
                _ => Ok(Err(Expr::ScalarFunction(f))),
            }
        }
        _ => Ok(Err(Expr::ScalarFunction(f))),
    }
}

fn binary(
    b: BinaryExpr,
    schema: &DFSchema,
) -> Result<std::result::Result<Transformed<Expr>, Expr>> {
    let (lt, rt) = (type_of(&b.left, schema), type_of(&b.right, schema));
    let is = |t: &Option<DataType>, f: fn(&DataType) -> bool| t.as_ref().is_some_and(f);
    let date = |t: &DataType| matches!(t, DataType::Date32 | DataType::Date64);
    let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
    match b.op {
        Operator::Plus | Operator::Minus if is(&lt, date) && is(&rt, date) => {
            plan_err!("DATE - DATE is not supported: Spark's is an INTERVAL (use datediff)")
        }
        Operator::Plus | Operator::Minus
            if is(&lt, date)
                && is(&rt, |t| matches!(t, DataType::Interval(_)))
                && !whole_days(&b.right) =>
        {
            plan_err!(
                "a DATE plus an interval with a time part is not supported: Spark's is a \
                 TIMESTAMP (cast the date to TIMESTAMP first)"
            )
        }
        Operator::StringConcat if is_timestamp(lt.clone()) || is_timestamp(rt.clone()) => {
            let mut sides = timestamps_as_text(vec![*b.left, *b.right], schema)?.into_iter();
            let (Some(l), Some(r)) = (sides.next(), sides.next()) else {
                return plan_err!("|| takes two operands");
            };
            Ok(Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(l),
                Operator::StringConcat,
                Box::new(r),
            )))))
        }
        op if super::rewrite::is_comparison(&op)
            && ((is_text(lt.clone()) && is(&rt, decimal))
                || (is(&lt, decimal) && is_text(rt.clone()))) =>
        {
            plan_err!(
                "a STRING compared with a DECIMAL is not supported: cast the string to the \
                 type you mean (this engine rounded it to the DECIMAL's scale)"
            )
        }
        _ => Ok(Err(Expr::BinaryExpr(b))),
    }
}

/// Whether `e` is an interval literal of whole days and months (no time part).
fn whole_days(e: &Expr) -> bool {
    match e {
        Expr::Literal(ScalarValue::IntervalYearMonth(_), _) => true,
        Expr::Literal(ScalarValue::IntervalDayTime(Some(v)), _) => v.milliseconds == 0,
        Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) => v.nanoseconds == 0,
        _ => false,
    }
}

fn case(c: Case, schema: &DFSchema) -> Result<std::result::Result<Transformed<Expr>, Expr>> {
    let results = c
        .when_then_expr
        .iter()
        .map(|(_, t)| t.as_ref())
        .chain(c.else_expr.as_deref());
    if mixes_text_and_numbers(results, schema) {
        return plan_err!(
            "a CASE whose results mix strings and numbers is not supported: Spark's result is \
             numeric (a string that is no number fails), cast the branches to one type"
        );
    }
    Ok(Err(Expr::Case(c)))
}

/// Whether some of `exprs` are strings and some numbers.
fn mixes_text_and_numbers<'a>(
    exprs: impl IntoIterator<Item = &'a Expr>,
    schema: &DFSchema,
) -> bool {
    let (mut text, mut number) = (false, false);
    for e in exprs {
        match type_of(e, schema) {
            Some(t) if is_text(Some(t.clone())) => text = true,
            Some(t) if t.is_numeric() => number = true,
            _ => {}
        }
    }
    text && number
}

fn is_text(t: Option<DataType>) -> bool {
    matches!(
        t,
        Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
    )
}

fn is_timestamp(t: Option<DataType>) -> bool {
    matches!(t, Some(DataType::Timestamp(..)))
}

/// Targets whose string parsers differ between Spark and Arrow (helper-44's TRY_CAST table).
fn fragile_target(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(..)
            | DataType::Boolean
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}
