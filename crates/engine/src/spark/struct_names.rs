//! `struct(…)`'s fields named as Spark names them: a name read is named as written (`struct(name,
//! s.A)` has fields `name` and `A`, whatever the table's spelling), `x AS z` is `z`, and any
//! other expression `col<i>` (one-based). Checked against Spark 4.
//!
//! DataFusion names the fields of a `struct(…)` that has an `AS` inside `c0`, `c1`, … (0-based)
//! before any later step sees the call, so `struct(a, b + 1, id AS z)` was `struct<c0, c1, z>`
//! where Spark has `struct<a, col2, z>`, and a CREATE TABLE AS SELECT stored those names. Here
//! the call is rewritten, in the parsed statement, into `named_struct` with Spark's names.

use datafusion::sql::sqlparser::ast::{
    self as ast, FunctionArg, FunctionArgExpr, FunctionArguments,
};

/// The name Spark gives the `i`th (0-based) field of `struct(…)` holding `value`.
fn field_name(i: usize, value: &ast::Expr) -> String {
    match value {
        ast::Expr::Identifier(ident) => ident.value.clone(),
        ast::Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(last) => last.value.clone(),
            None => format!("col{}", i + 1),
        },
        ast::Expr::Named { name, .. } => name.value.clone(),
        _ => format!("col{}", i + 1),
    }
}

fn text(s: String) -> ast::Expr {
    ast::Expr::Value(ast::Value::SingleQuotedString(s).into())
}

/// `named_struct(…)` of `values` with Spark's field names.
fn named_struct(values: Vec<ast::Expr>) -> ast::Expr {
    let mut args = Vec::with_capacity(values.len() * 2);
    for (i, v) in values.into_iter().enumerate() {
        let name = field_name(i, &v);
        let value = match v {
            ast::Expr::Named { expr, .. } => *expr,
            other => other,
        };
        args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(text(name))));
        args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(value)));
    }
    ast::Expr::Function(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new("named_struct")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// Rewrites `e` when it is a `struct(…)` call (or the struct literal DataFusion parses when an
/// argument has `AS`): `true` when it did. A `struct(*)` or a typed struct literal is left as
/// it is.
pub(super) fn name_struct_fields(e: &mut ast::Expr) -> bool {
    let values = match e {
        ast::Expr::Struct { values, fields } if fields.is_empty() => std::mem::take(values),
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("struct") => {
            let FunctionArguments::List(list) = &f.args else {
                return false;
            };
            if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                return false;
            }
            let mut values = Vec::with_capacity(list.args.len());
            for a in &list.args {
                match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(v)) => values.push(v.clone()),
                    _ => return false,
                }
            }
            if f.filter.is_some() || f.over.is_some() || values.is_empty() {
                return false;
            }
            values
        }
        _ => return false,
    };
    *e = named_struct(values);
    true
}
