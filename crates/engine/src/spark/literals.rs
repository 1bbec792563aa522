//! Spark's reading of numeric literals and DECIMAL's default, before planning:
//! - an exponent literal (`1e3`, `1.5E-2`, `1e300`) is a DOUBLE in Spark. This engine has
//!   DataFusion read `1.5` as a DECIMAL (as Spark does), so without this step an exponent literal
//!   would be a DECIMAL with a negative scale — `1e3` a DECIMAL(1,-3), and `1e300` not a value at
//!   all. Each becomes `CAST('<its text>' AS DOUBLE)`: the text read by a correctly rounded
//!   parser, the double Spark reads;
//! - an integer literal past BIGINT is a DECIMAL of its digits in Spark; DataFusion typed one up
//!   to 2^64 - 1 as an unsigned BIGINT (and decimal arithmetic then took other types). It becomes
//!   `CAST('<its text>' AS DECIMAL(<digits>, 0))`;
//! - a literal of more than 38 digits (before and after the point) is refused, as Spark refuses
//!   it (DataFusion rounded it into a wider DECIMAL, and a write stored the rounded value);
//! - `DECIMAL` without a precision is DECIMAL(10,0) in Spark, DECIMAL(38,10) in DataFusion:
//!   `CAST(d AS DECIMAL)` gets Spark's;
//! - an integer literal in a VALUES row is an INT when it fits one, as in Spark: DataFusion typed
//!   the column BIGINT, so `x + 2147483647` over `VALUES (1)` gave 2147483648 where Spark raises,
//!   and beside a DECIMAL(10,2) the column was DECIMAL(22,2) where Spark's is DECIMAL(12,2). It
//!   becomes `CAST(<n> AS INT)` (elsewhere the rewrite types an integer literal where it is used;
//!   a VALUES column takes its type from its rows before that).
//!
//! Other literals are left as written.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self as ast, CastKind, ExactNumberInfo, ValueWithSpan, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::tokenizer::{Span, Token, TokenWithSpan};

/// Rewrites the literals and DECIMAL types of `node` (a statement or an expression) in place, as
/// Spark reads them; a literal Spark refuses is refused with a one-line reason.
pub fn spark_literals<N: VisitMut>(node: &mut N) -> Result<(), String> {
    match node.visit(&mut SparkLiterals) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(reason) => Err(reason),
    }
}

struct SparkLiterals;

/// The digits Spark's DECIMAL for a plain literal holds (its precision; a literal below 1 has as
/// many as its scale).
fn literal_digits(text: &str) -> usize {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let int = int.trim_start_matches(['-', '+']).trim_start_matches('0');
    int.len() + frac.len()
}

fn cast_text(text: &str, span: Span, data_type: ast::DataType) -> ast::Expr {
    ast::Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(ast::Expr::Value(ValueWithSpan {
            value: ast::Value::SingleQuotedString(text.to_string()),
            span,
        })),
        data_type,
        array: false,
        format: None,
    }
}

impl VisitorMut for SparkLiterals {
    type Break = String;

    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<String> {
        int_literals_in_values(q.body.as_mut());
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<String> {
        // `-9223372036854775808` is one BIGINT literal in Spark (and to DataFusion's planner):
        // the DECIMAL its digits became below goes back to the number.
        if let ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } = e
        {
            if let ast::Expr::Cast { expr: inner, .. } = expr.as_mut() {
                if let ast::Expr::Value(v) = inner.as_ref() {
                    if let ast::Value::SingleQuotedString(text) = &v.value {
                        if text == "9223372036854775808" {
                            let number = ast::Value::Number(text.clone(), false);
                            **expr = ast::Expr::Value(ValueWithSpan {
                                value: number,
                                span: v.span,
                            });
                        }
                    }
                }
            }
            return ControlFlow::Continue(());
        }
        if let ast::Expr::Cast { data_type, .. } = e {
            if let ast::DataType::Decimal(n) | ast::DataType::Numeric(n) | ast::DataType::Dec(n) =
                data_type
            {
                if *n == ExactNumberInfo::None {
                    *n = ExactNumberInfo::PrecisionAndScale(10, 0);
                }
            }
            return ControlFlow::Continue(());
        }
        let ast::Expr::Value(v) = e else {
            return ControlFlow::Continue(());
        };
        let ast::Value::Number(text, false) = &v.value else {
            return ControlFlow::Continue(());
        };
        let text = text.clone();
        if text.contains(['e', 'E']) {
            *e = cast_text(&text, v.span, ast::DataType::Double(ExactNumberInfo::None));
            return ControlFlow::Continue(());
        }
        let digits = literal_digits(&text);
        if digits > 38 {
            return ControlFlow::Break(format!(
                "the numeric literal {text} has more than 38 digits (DECIMAL's maximum, as in Spark)"
            ));
        }
        if !text.contains('.') && text.parse::<i64>().is_err() {
            let p = u64::try_from(digits.max(1)).unwrap_or(38);
            *e = cast_text(
                &text,
                v.span,
                ast::DataType::Decimal(ExactNumberInfo::PrecisionAndScale(p, 0)),
            );
        }
        ControlFlow::Continue(())
    }
}

/// Each integer literal of a VALUES row in `body` (or its set operations' sides) that fits an INT
/// as `CAST(<n> AS INT)`: a row's literal, a signed one (`-2147483648`, `+5`) and those of
/// arithmetic on literals (`1 + 1`), as Spark types them.
fn int_literals_in_values(body: &mut ast::SetExpr) {
    match body {
        ast::SetExpr::Values(values) => {
            for e in values.rows.iter_mut().flat_map(|r| r.content.iter_mut()) {
                int_literals(e);
            }
        }
        ast::SetExpr::SetOperation { left, right, .. } => {
            int_literals_in_values(left);
            int_literals_in_values(right);
        }
        _ => {}
    }
}

/// `e`'s integer literals that fit an INT as INTs, through signs, parentheses and arithmetic
/// (not into function arguments, whose literals keep the form their functions read).
fn int_literals(e: &mut ast::Expr) {
    let as_int = |e: &ast::Expr| ast::Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e.clone()),
        data_type: ast::DataType::Int(None),
        array: false,
        format: None,
    };
    let number = |e: &ast::Expr| match e {
        ast::Expr::Value(ValueWithSpan {
            value: ast::Value::Number(text, false),
            ..
        }) => Some(text.clone()),
        _ => None,
    };
    match e {
        ast::Expr::Value(_) => {
            if number(e).is_some_and(|t| t.parse::<i32>().is_ok()) {
                *e = as_int(e);
            }
        }
        ast::Expr::UnaryOp { op, expr } => {
            let signed = match (&op, number(expr)) {
                (ast::UnaryOperator::Minus, Some(t)) => format!("-{t}").parse::<i32>().is_ok(),
                (ast::UnaryOperator::Plus, Some(t)) => t.parse::<i32>().is_ok(),
                _ => false,
            };
            if signed {
                *e = as_int(e);
            } else if matches!(op, ast::UnaryOperator::Minus | ast::UnaryOperator::Plus) {
                int_literals(expr);
            }
        }
        ast::Expr::BinaryOp { left, op, right }
            if matches!(
                op,
                ast::BinaryOperator::Plus
                    | ast::BinaryOperator::Minus
                    | ast::BinaryOperator::Multiply
                    | ast::BinaryOperator::Divide
                    | ast::BinaryOperator::Modulo
            ) =>
        {
            int_literals(left);
            int_literals(right);
        }
        ast::Expr::Nested(inner) => int_literals(inner),
        _ => {}
    }
}

/// Whether `word`, written directly after a number, is the suffix of one of Spark's typed numeric
/// literals (`L`, `S`, `Y`, `D`, `F`, `BD`, either case). The one list the lexical check, the
/// literal reader and the stored-rule check share.
pub fn is_typed_suffix(word: &str) -> bool {
    ["L", "S", "Y", "D", "F", "BD"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k))
}

/// Spark's typed numeric literals, read as Spark's lexer reads them: a number written directly
/// before `L`, `S`, `Y` (BIGINT, SMALLINT, TINYINT), `D`, `F` (DOUBLE, FLOAT) or `BD` (DECIMAL),
/// in either case, is one literal of that type. sqlparser reads only `10L` so; `1.5D` would be
/// `1.5` aliased `D` in a select list and a syntax error elsewhere. Each becomes, in the token
/// stream the parser then reads, `CAST('<its digits>' AS <type>)`: the text read by the type's
/// own parser (the correctly rounded double or float, the exact integer or decimal), the value
/// Spark's literal has. Out of the type's range is an error, as in Spark. No SQL text is built:
/// the tokens are handed to the parser.
pub fn typed_literal_tokens(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, String> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut it = tokens.into_iter().peekable();
    while let Some(t) = it.next() {
        let Token::Number(digits, long) = &t.token else {
            out.push(t);
            continue;
        };
        let suffix = match (long, it.peek().map(|n| &n.token)) {
            (true, _) => Some("L".to_string()),
            (false, Some(Token::Word(w))) if w.quote_style.is_none() => {
                is_typed_suffix(&w.value).then(|| w.value.to_ascii_uppercase())
            }
            _ => None,
        };
        let Some(suffix) = suffix else {
            out.push(t);
            continue;
        };
        // The literal's place in the text is the number and its suffix: an expression's text
        // taken between token spans (what the log stores for a rule) keeps the suffix.
        let mut span = t.span;
        if !long {
            if let Some(word) = it.next() {
                span = Span::new(t.span.start, word.span.end);
            }
        }
        let data_type = literal_type(digits, &suffix)?;
        out.extend(cast_tokens(digits, data_type, span));
    }
    Ok(out)
}

/// The tokens of `data_type` a typed literal `digits<suffix>` is cast to, after Spark's checks.
fn literal_type(digits: &str, suffix: &str) -> Result<Vec<Token>, String> {
    let word = |w: &str| Token::make_word(w, None);
    let integral = |name: &str, max: i128| -> Result<Vec<Token>, String> {
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "the numeric literal {digits}{suffix}: a {} literal is a whole number",
                name.to_ascii_lowercase()
            ));
        }
        match digits.parse::<i128>().is_ok_and(|v| v <= max) {
            true => Ok(vec![word(name)]),
            // `-128Y` fits in Spark, whose literal takes the sign; here the sign is an operator.
            false => Err(format!(
                "the numeric literal {digits}{suffix} does not fit in range [{}, {max}] for type {} (for the least value write CAST(-{} AS {name}))",
                -max - 1,
                name.to_ascii_lowercase(),
                max + 1
            )),
        }
    };
    match suffix {
        "L" => integral("BIGINT", i128::from(i64::MAX)),
        "S" => integral("SMALLINT", i128::from(i16::MAX)),
        "Y" => integral("TINYINT", i128::from(i8::MAX)),
        "D" | "F" => {
            let value: f64 = digits
                .parse()
                .map_err(|_| format!("{digits}{suffix} is not a number"))?;
            let (max, name) = match suffix {
                "D" => (f64::MAX, "DOUBLE"),
                _ => (f64::from(f32::MAX), "FLOAT"),
            };
            if !value.is_finite() || value > max {
                return Err(format!(
                    "the numeric literal {digits}{suffix} does not fit in range for type {}",
                    name.to_ascii_lowercase()
                ));
            }
            Ok(vec![word(name)])
        }
        _ => {
            // BD: the literal's own precision and scale, as Spark's BigDecimal gives them.
            let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
            if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "the numeric literal {digits}BD: write a DECIMAL literal without an exponent"
                ));
            }
            let significant = format!("{int}{frac}");
            let significant = significant.trim_start_matches('0');
            let scale = frac.len();
            let precision = significant.len().max(scale).max(1);
            if precision > 38 {
                return Err(format!(
                    "the numeric literal {digits}BD has more than 38 digits (DECIMAL's maximum)"
                ));
            }
            Ok(vec![
                word("DECIMAL"),
                Token::LParen,
                Token::Number(precision.to_string(), false),
                Token::Comma,
                Token::Number(scale.to_string(), false),
                Token::RParen,
            ])
        }
    }
}

/// `CAST('<digits>' AS <data_type>)`, every token at `span` (the literal's place in the text).
fn cast_tokens(digits: &str, data_type: Vec<Token>, span: Span) -> Vec<TokenWithSpan> {
    let mut tokens = vec![
        Token::make_keyword("CAST"),
        Token::LParen,
        Token::SingleQuotedString(digits.to_string()),
        Token::make_keyword("AS"),
    ];
    tokens.extend(data_type);
    tokens.push(Token::RParen);
    tokens
        .into_iter()
        .map(|token| TokenWithSpan { token, span })
        .collect()
}
