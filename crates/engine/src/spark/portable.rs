//! Which expressions a table's log may hold: a CHECK constraint, an invariant or a generation
//! expression is stored only when every construct in it evaluates here exactly as Delta Spark
//! evaluates it (after `rewrite`). Anything else is refused at CREATE / ALTER with a one-line
//! error naming the construct, and a table that already holds one (written by Spark) stays
//! readable while writes that must evaluate it are refused with the same error: a rule is never
//! evaluated with other semantics than the table's other writers use.
//!
//! The list is deliberately short; it grows only with a construct proven equal (the Spark corpus
//! in `tests/data/spark_expressions.tsv` holds the evidence for each).
//!
//! Refused, with the reason:
//! - casts from strings to numbers, dates or timestamps (Spark trims and accepts forms Arrow
//!   refuses), from floats or timestamps to strings (`1.0E10` against `10000000000`), and between
//!   TIMESTAMP and DATE (the result depends on the Spark session's time zone);
//! - comparing a string with a number (Spark casts the string to the number, DataFusion the
//!   number to a string: `'10' > 9`);
//! - regular expressions (Java's and Rust's engines differ), LIKE with an escape;
//! - `lower` / `upper` (Spark maps one character to one: `upper('ß')` is 'ß'; Rust's full
//!   Unicode mapping gives 'SS');
//! - functions outside the list below, aggregates, windows, subqueries.

use std::collections::BTreeSet;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::DFSchema;
use datafusion::logical_expr::{Expr, ExprSchemable, Operator};

use super::decimal_arith::DecimalOp;

/// Functions whose DataFusion implementation gives Spark's results for every input the engine
/// accepts (NULL in, NULL out; the same characters for strings).
const SAME_AS_SPARK: &[&str] = &[
    "abs",
    "coalesce",
    "nullif",
    "btrim",
    "ltrim",
    "rtrim",
    "character_length",
    "get_field",
    "greatest",
    "least",
];

/// `None` when `expr` evaluates here as in Spark; else the construct that does not, as the user
/// wrote it where possible.
pub fn unportable(expr: &Expr, schema: &DFSchema) -> Option<String> {
    let allowed: BTreeSet<&str> = SAME_AS_SPARK
        .iter()
        .chain(super::datetime::NAMES)
        .chain(super::trunc::NAMES)
        .copied()
        .collect();
    let mut found = None;
    let _ = expr.apply(|e| {
        let verdict = check_node(e, schema, &allowed);
        match verdict {
            Some(why) => {
                found = Some(why);
                Ok(TreeNodeRecursion::Stop)
            }
            None => Ok(TreeNodeRecursion::Continue),
        }
    });
    found
}

fn check_node(e: &Expr, schema: &DFSchema, allowed: &BTreeSet<&str>) -> Option<String> {
    let ty = |x: &Expr| x.get_type(schema).ok();
    match e {
        Expr::Column(_) | Expr::Literal(..) | Expr::Alias(_) | Expr::Not(_) | Expr::Negative(_) => {
            None
        }
        Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsTrue(_)
        | Expr::IsFalse(_)
        | Expr::IsUnknown(_)
        | Expr::IsNotTrue(_)
        | Expr::IsNotFalse(_)
        | Expr::IsNotUnknown(_)
        | Expr::Case(_) => None,
        Expr::BinaryExpr(b) => {
            use Operator::*;
            match b.op {
                Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom => {
                    string_against_number(ty(&b.left), ty(&b.right))
                }
                Plus | Minus | Multiply => decimal_past_38(&b.op, ty(&b.left), ty(&b.right)),
                Divide | Modulo | And | Or | StringConcat | BitwiseAnd | BitwiseOr | BitwiseXor => {
                    None
                }
                ref op => Some(format!("the operator {op}")),
            }
        }
        Expr::Between(b) => string_against_number(ty(&b.expr), ty(&b.low))
            .or_else(|| string_against_number(ty(&b.expr), ty(&b.high))),
        Expr::InList(l) => l
            .list
            .iter()
            .find_map(|x| string_against_number(ty(&l.expr), ty(x))),
        Expr::Like(l) => {
            let plain = l.escape_char.is_none()
                && !l.case_insensitive
                && matches!(&*l.pattern, Expr::Literal(v, _) if !v.to_string().contains('\\'));
            match plain {
                true => None,
                false => Some("LIKE with an escape, a computed pattern or ILIKE".into()),
            }
        }
        Expr::Cast(c) => cast_verdict(ty(&c.expr), c.field.data_type()),
        Expr::TryCast(c) => cast_verdict(ty(&c.expr), c.field.data_type()),
        Expr::ScalarFunction(f) => {
            let name = f.name();
            // Spark's DECIMAL arithmetic (`decimal_arith`) past 38 digits, where the scale gives
            // way: evaluated as Spark does in statements, not yet proven against Spark in rules.
            if let Some(op) = super::decimal_arith::op_of_function(name) {
                if let (Some(DataType::Decimal128(p1, s1)), Some(DataType::Decimal128(p2, s2))) =
                    (f.args.first().and_then(&ty), f.args.get(1).and_then(&ty))
                {
                    if op != DecimalOp::Divide
                        && super::decimal_arith::passes_38_digits(op, p1, s1, p2, s2)
                    {
                        return Some(format!("DECIMAL arithmetic past 38 digits ({})", op.name()));
                    }
                }
            }
            // `spark_value` is the identity (its argument is checked on its own).
            let ours = super::arith::is_spark_arith(name) || super::opaque::is_opaque_call(f);
            match allowed.contains(name) || ours {
                true => None,
                false => Some(format!("the function {name}()")),
            }
        }
        Expr::AggregateFunction(_) => Some("an aggregate function".into()),
        Expr::WindowFunction(_) => Some("a window function".into()),
        Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_) => {
            Some("a subquery".into())
        }
        Expr::SimilarTo(_) => Some("SIMILAR TO".into()),
        other => Some(format!("{}", other.variant_name())),
    }
}

/// DECIMAL `+ - *` whose Spark result precision passes 38: Spark then gives up scale (rounding
/// HALF_UP). The rewrite turns these into `decimal_arith` calls (checked above); a node it left
/// as DataFusion's is checked here.
fn decimal_past_38(op: &Operator, a: Option<DataType>, b: Option<DataType>) -> Option<String> {
    let (Some(DataType::Decimal128(p1, s1)), Some(DataType::Decimal128(p2, s2))) = (a, b) else {
        return None;
    };
    let dop = match op {
        Operator::Multiply => DecimalOp::Multiply,
        _ => DecimalOp::Add,
    };
    super::decimal_arith::passes_38_digits(dop, p1, s1, p2, s2)
        .then(|| format!("DECIMAL arithmetic past 38 digits ({op})"))
}

/// A construct refused from the rule's text: text Spark's lexer would cut elsewhere
/// (`lexical`), a numeric literal written with an exponent (`1e3`: DOUBLE in Spark, DECIMAL
/// here), a double-quoted name, a backslash or a doubled quote in a string (Spark reads all three
/// differently), or a regular-expression operator.
pub fn unportable_syntax(sql: &str) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    if let Some(reason) = super::lexical::spark_cuts_differently(&tokens) {
        return Some(reason);
    }
    let tokens: Vec<Token> = tokens.into_iter().map(|t| t.token).collect();
    let typed = tokens.windows(2).find_map(|pair| match pair {
        [Token::Number(n, false), Token::Word(w)]
            if w.quote_style.is_none() && super::literals::is_typed_suffix(&w.value) =>
        {
            Some(format!(
                "the typed literal {n}{} (Spark reads one literal, other engines a number and a name: write CAST({n} AS <type>))",
                w.value
            ))
        }
        _ => None,
    });
    if typed.is_some() {
        return typed;
    }
    tokens.iter().find_map(|t| match t {
        Token::Number(n, _) if n.contains(['e', 'E']) => Some(format!(
            "the exponent literal {n} (write the number without an exponent)"
        )),
        // `1.5L` is a number and a name in Spark, a BIGINT-flagged number here.
        Token::Number(n, true) if !n.bytes().all(|b| b.is_ascii_digit()) => {
            Some(format!("the literal {n}L (write the number without the L)"))
        }
        // Spark reads "x" as a string literal (ANSI identifiers are off by default); here it names
        // a column.
        Token::Word(w) if w.quote_style == Some('"') => Some(format!(
            "the double-quoted {w} (a string in Spark, a column name here: write `{}` or '{}')",
            w.value, w.value
        )),
        // Spark reads a backslash in a string literal as an escape; here it is a character.
        Token::SingleQuotedString(s) if s.contains('\\') => Some(format!(
            "a backslash in the string literal '{s}' (an escape in Spark, a plain character here)"
        )),
        // `'it''s'` is one string holding a quote here; Spark has no doubled-quote escape and
        // reads two adjacent literals, joined: `its`.
        Token::SingleQuotedString(s) if s.contains('\'') => Some(format!(
            "a quote doubled inside the string literal '{}' (one quote here; in Spark two adjacent literals, joined without it)",
            s.replace('\'', "''")
        )),
        // Regular expressions DataFusion's SQL planner cannot even plan (`s RLIKE '…'`): named
        // here, before the planner's own message.
        Token::Word(w)
            if w.quote_style.is_none()
                && ["RLIKE", "REGEXP", "SIMILAR"]
                    .iter()
                    .any(|k| w.value.eq_ignore_ascii_case(k)) =>
        {
            Some(format!(
                "the regular expression operator {} (Java's and Rust's regex engines differ)",
                w.value.to_ascii_uppercase()
            ))
        }
        _ => None,
    })
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_number(t: &DataType) -> bool {
    t.is_numeric()
}

fn string_against_number(a: Option<DataType>, b: Option<DataType>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b))
            if (is_string(&a) && is_number(&b)) || (is_number(&a) && is_string(&b)) =>
        {
            Some(format!(
                "comparing a {a} with a {b} (Spark casts the string to a number)"
            ))
        }
        (None, _) | (_, None) => Some("an expression whose type cannot be worked out".into()),
        _ => None,
    }
}

fn cast_verdict(from: Option<DataType>, to: &DataType) -> Option<String> {
    let Some(from) = from else {
        return Some("a cast from a value whose type cannot be worked out".into());
    };
    use DataType::*;
    let exact = match (&from, to) {
        (a, b) if a == b => true,
        (Null, _) => true,
        // Integer widenings only: a narrowing cast compared with a value is unwrapped by
        // DataFusion's simplifier (`CAST(l AS INT) = 5` becomes `l = 5`), which never raises
        // the CAST_OVERFLOW Spark raises.
        (a, b) if a.is_integer() && b.is_integer() => a.primitive_width() <= b.primitive_width(),
        (a, b) if a.is_integer() && (b.is_floating() || matches!(b, Decimal128(..))) => true,
        (Boolean, b) if b.is_integer() => true,
        (a, Boolean) if a.is_integer() => true,
        (a, b) if is_string(b) => a.is_integer() || matches!(a, Boolean | Date32) || is_string(a),
        (Decimal128(..), Float64) => true,
        (Float32, Float64) => true,
        _ => false,
    };
    match exact {
        true => None,
        false => Some(format!("CAST from {from} to {to}")),
    }
}
