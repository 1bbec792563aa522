//! Spark functions whose two-argument forms take their arguments in another order than
//! DataFusion's functions of the same name, rewritten in the parsed statement before planning into
//! a form with one meaning: Spark's `ltrim(trimStr, str)` / `rtrim(trimStr, str)` take the
//! characters first and become `TRIM(LEADING trimStr FROM str)` / `TRIM(TRAILING trimStr FROM
//! str)`, which DataFusion plans as its `ltrim(str, trimStr)`. Before, `ltrim('x', s)` trimmed the
//! characters of `s` off 'x' and an UPDATE stored '' (red team helper-44). On the AST, so the
//! planner's own `TRIM(LEADING …)` is told apart, and a rewritten call is no longer a call of that
//! name (a second pass changes nothing).
//!
//! An array subscript `a[i]` is refused here: Spark counts from 0 and raises out of range
//! (`INVALID_ARRAY_INDEX`), DataFusion counts from 1 and returns NULL, so `UPDATE … SET n = a[1]`
//! stored the first element where Spark stores the second (red team helper-45). Only the syntax
//! tells an array's subscript from a map's or a struct's: a subscript by a string literal
//! (`m['k']`, `s['f']`) is kept, any other is refused.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self as ast, FunctionArg, FunctionArgExpr, FunctionArguments, TrimWhereField, VisitMut,
    VisitorMut,
};

/// Rewrites the calls of `node` (a statement or an expression) in place, or refuses a subscript
/// (module header).
pub fn spark_function_syntax<N: VisitMut>(node: &mut N) -> Result<(), String> {
    match node.visit(&mut Syntax) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(reason) => Err(reason),
    }
}

struct Syntax;

/// Whether `s` subscripts by a string literal (a map's key or a struct's field).
fn by_name(s: &ast::Subscript) -> bool {
    matches!(
        s,
        ast::Subscript::Index {
            index: ast::Expr::Value(ast::ValueWithSpan {
                value: ast::Value::SingleQuotedString(_) | ast::Value::DoubleQuotedString(_),
                ..
            })
        }
    )
}

impl VisitorMut for Syntax {
    type Break = String;

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<String> {
        if let ast::Expr::CompoundFieldAccess { access_chain, .. } = e {
            let array_subscript = access_chain.iter().any(|a| match a {
                ast::AccessExpr::Subscript(s) => !by_name(s),
                ast::AccessExpr::Dot(_) => false,
            });
            if array_subscript {
                return ControlFlow::Break(
                    "an array subscript a[i] is not supported: Spark counts from 0 and raises out \
                     of range (INVALID_ARRAY_INDEX), this engine counts from 1"
                        .into(),
                );
            }
            return ControlFlow::Continue(());
        }
        // `struct(…)`'s fields named as Spark names them (`spark::struct_names`).
        if super::struct_names::name_struct_fields(e) {
            return ControlFlow::Continue(());
        }
        let ast::Expr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        let side = match f.name.to_string().to_ascii_lowercase().as_str() {
            "ltrim" => TrimWhereField::Leading,
            "rtrim" => TrimWhereField::Trailing,
            _ => return ControlFlow::Continue(()),
        };
        let FunctionArguments::List(list) = &f.args else {
            return ControlFlow::Continue(());
        };
        if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
            return ControlFlow::Continue(());
        }
        let [FunctionArg::Unnamed(FunctionArgExpr::Expr(chars)), FunctionArg::Unnamed(FunctionArgExpr::Expr(text))] =
            list.args.as_slice()
        else {
            return ControlFlow::Continue(());
        };
        *e = ast::Expr::Trim {
            expr: Box::new(text.clone()),
            trim_where: Some(side),
            trim_what: Some(Box::new(chars.clone())),
            trim_characters: None,
        };
        ControlFlow::Continue(())
    }
}
