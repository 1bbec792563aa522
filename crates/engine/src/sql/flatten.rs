//! Long boolean chains, as generated SQL writes them (`id = 1 OR id = 2 OR …` with thousands of
//! terms), made shallow before planning. A parser builds such a chain as a tree as deep as it is
//! long, and planning and optimizing it costs time quadratic in its length (and stack linear in
//! it). Here every OR/AND chain of at least [`MIN_CHAIN_TERMS`] terms is flattened into its terms;
//! in an OR chain the terms `c = literal` (either side) on the same column become one
//! `c IN (literals)`; the remaining terms are combined as a balanced tree (depth log n).
//!
//! Why the result is the same statement: AND and OR are associative and commutative in SQL's
//! three-valued logic, and `c IN (v1, …, vn)` is defined as `c = v1 OR … OR c = vn` (NULL where no
//! term is true and some is NULL, exactly as the chain). Shorter chains and statements of fewer
//! than [`MIN_STATEMENT_TOKENS`] tokens are left byte for byte as written, so ordinary statements
//! (and their result headers) never change.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, VisitMut, VisitorMut};

/// Statements shorter than this many tokens are never rewritten.
pub const MIN_STATEMENT_TOKENS: usize = 512;
/// Chains of fewer terms are left as written.
pub const MIN_CHAIN_TERMS: usize = 32;

/// Flattens a parsed statement's long chains in place (statements of at least
/// [`MIN_STATEMENT_TOKENS`] tokens only, so ordinary statements keep their result headers).
pub fn flatten_statement(st: &mut datafusion::sql::parser::Statement, tokens: usize) {
    use datafusion::sql::parser::{CopyToSource, Statement as DFStatement};
    if tokens < MIN_STATEMENT_TOKENS {
        return;
    }
    let mut v = Flattener { changed: false };
    match st {
        DFStatement::Statement(s) => {
            let _ = s.visit(&mut v);
        }
        DFStatement::CopyTo(c) => {
            if let CopyToSource::Query(q) = &mut c.source {
                let _ = q.visit(&mut v);
            }
        }
        DFStatement::Explain(e) => flatten_statement(&mut e.statement, tokens),
        _ => {}
    }
}

/// Visits expressions root first, so a chain is replaced as a whole before its links are visited
/// (the balanced links that replace it are short chains of two).
struct Flattener {
    changed: bool,
}

impl VisitorMut for Flattener {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(new) = flatten_chain(e) {
            *e = new;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

fn chain_op(e: &Expr) -> Option<BinaryOperator> {
    match e {
        Expr::BinaryOp {
            op: op @ (BinaryOperator::Or | BinaryOperator::And),
            ..
        } => Some(op.clone()),
        _ => None,
    }
}

/// If `e` roots a long OR/AND chain, its flattened form.
fn flatten_chain(e: &mut Expr) -> Option<Expr> {
    let op = chain_op(e)?;
    if count_terms(e, &op) < MIN_CHAIN_TERMS {
        return None;
    }
    let owned = std::mem::replace(
        e,
        Expr::Value(datafusion::sql::sqlparser::ast::Value::Null.into()),
    );
    let mut terms = Vec::new();
    // Iterative: the chain may be far deeper than any stack.
    let mut stack = vec![owned];
    while let Some(x) = stack.pop() {
        match x {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                stack.push(*right);
                stack.push(*left);
            }
            other => terms.push(other),
        }
    }
    if op == BinaryOperator::Or {
        terms = equalities_to_in_lists(terms);
    }
    Some(balanced(terms, op))
}

fn count_terms(e: &Expr, op: &BinaryOperator) -> usize {
    let mut n = 0;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match x {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                stack.push(right);
                stack.push(left);
            }
            _ => n += 1,
        }
        if n >= MIN_CHAIN_TERMS {
            break;
        }
    }
    n
}

fn is_column(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
}

fn is_literal(e: &Expr) -> bool {
    match e {
        Expr::Value(_) => true,
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => matches!(expr.as_ref(), Expr::Value(_)),
        _ => false,
    }
}

/// The class of a literal whose values an IN list keeps exact together: integers (no `.`, no
/// exponent), other numbers, strings; None for anything else (kept as an equality).
fn literal_class(e: &Expr) -> Option<&'static str> {
    use datafusion::sql::sqlparser::ast::Value;
    let v = match e {
        Expr::Value(v) => &v.value,
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) if matches!(v.value, Value::Number(..)) => &v.value,
            _ => return None,
        },
        _ => return None,
    };
    match v {
        Value::Number(n, _) if n.chars().all(|c| c.is_ascii_digit()) => Some("integer"),
        Value::Number(..) => Some("number"),
        Value::SingleQuotedString(_) => Some("string"),
        _ => None,
    }
}

/// `c = lit` terms on the same column (two or more) become `c IN (lits)`, at the position of the
/// first; every other term is kept as it is.
fn equalities_to_in_lists(terms: Vec<Expr>) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::with_capacity(terms.len());
    let mut lists: HashMap<String, usize> = HashMap::new();
    for t in terms {
        let (col, value) = match t {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } if is_column(&left) && is_literal(&right) => (*left, *right),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } if is_literal(&left) && is_column(&right) => (*right, *left),
            other => {
                out.push(other);
                continue;
            }
        };
        // One list per column *and literal class*: an IN list coerces its values to one type, so
        // `id = 9007199254740993 OR id = 0.5` must not become `id IN (9007199254740993, 0.5)`
        // (compared as DOUBLE, it matches 9007199254740992 too; found by a red-team pass).
        let Some(class) = literal_class(&value) else {
            out.push(Expr::BinaryOp {
                left: Box::new(col),
                op: BinaryOperator::Eq,
                right: Box::new(value),
            });
            continue;
        };
        let key = format!("{class}:{col}");
        match lists.get(&key).and_then(|&i| out.get_mut(i)) {
            Some(Expr::InList { list, .. }) => list.push(value),
            _ => {
                lists.insert(key, out.len());
                out.push(Expr::InList {
                    expr: Box::new(col),
                    list: vec![value],
                    negated: false,
                });
            }
        }
    }
    // A one-element list is the equality it came from.
    out.into_iter()
        .map(|t| match t {
            Expr::InList {
                expr,
                mut list,
                negated: false,
            } if list.len() == 1 => match list.pop() {
                Some(v) => Expr::BinaryOp {
                    left: expr,
                    op: BinaryOperator::Eq,
                    right: Box::new(v),
                },
                None => Expr::InList {
                    expr,
                    list,
                    negated: false,
                },
            },
            other => other,
        })
        .collect()
}

/// The terms joined by `op` as a balanced tree, each link parenthesised so the printed SQL parses
/// back to the same shape.
fn balanced(mut terms: Vec<Expr>, op: BinaryOperator) -> Expr {
    while terms.len() > 1 {
        let mut next = Vec::with_capacity(terms.len().div_ceil(2));
        let mut it = terms.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => Expr::Nested(Box::new(Expr::BinaryOp {
                    left: Box::new(a),
                    op: op.clone(),
                    right: Box::new(b),
                })),
                None => a,
            });
        }
        terms = next;
    }
    terms.pop().unwrap_or(Expr::Value(
        datafusion::sql::sqlparser::ast::Value::Boolean(true).into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statement flattened and printed (for inspection only), `None` when nothing changed.
    fn flatten_long_chains(sql: &str) -> Option<String> {
        let crate::sql::statement::ParsedStatement::Sql(mut st) =
            crate::sql::statement::parse(sql).ok()?.statement
        else {
            return None;
        };
        let before = st.clone();
        flatten_statement(&mut st, usize::MAX);
        (st != before).then(|| st.to_string())
    }

    fn chain(n: usize, op: &str) -> String {
        (0..n)
            .map(|i| format!("id = {i}"))
            .collect::<Vec<_>>()
            .join(&format!(" {op} "))
    }

    #[test]
    fn long_or_chains_become_in_lists_and_the_rest_is_balanced() {
        let sql = format!(
            "DELETE FROM t WHERE {} OR name = 'x' OR 7 = id OR -3 = other",
            chain(40, "OR")
        );
        let out = flatten_long_chains(&sql).unwrap();
        assert!(out.contains("id IN (0, 1, 2"), "{out}");
        assert!(out.contains(", 39, 7)"), "{out}");
        assert!(out.contains("name = 'x'"), "{out}");
        assert!(out.contains("other = -3"), "{out}");
        assert!(!out.contains("id = "), "{out}");
    }

    #[test]
    fn long_and_chains_are_balanced_and_short_ones_untouched() {
        let and = format!("SELECT * FROM t WHERE {}", chain(64, "AND"));
        let out = flatten_long_chains(&and).unwrap();
        assert!(
            out.contains("((id = 0 AND id = 1) AND (id = 2 AND id = 3))"),
            "{out}"
        );
        assert!(
            flatten_long_chains(&format!("SELECT * FROM t WHERE {}", chain(5, "OR"))).is_none()
        );
        assert!(flatten_long_chains("OPTIMIZE t").is_none());
    }

    #[test]
    fn a_chain_deeper_than_any_stack_flattens() {
        // Parsed on a thread with room for the parser's tree; the flattening itself is iterative.
        let sql = format!("SELECT * FROM t WHERE {}", chain(20_000, "OR"));
        let out = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || flatten_long_chains(&sql))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert!(
            out.starts_with("SELECT * FROM t WHERE id IN (0, 1, 2"),
            "{}",
            &out[..80]
        );
        assert!(out.len() < 200_000);
    }
}
