//! Two tables of one FROM under names that differ only in case are refused.
//!
//! Spark compares table aliases without regard to case: in `FROM a t JOIN b T`, `t.x` matches
//! both tables and is an AMBIGUOUS_REFERENCE. DataFusion lower-cased both aliases to `t` and
//! took the first table for every `t.x` (`FROM a A1 JOIN b a1 ON a1.x = 5` filtered on `a`; red
//! team helper-52). Without the references' resolution at hand here, any such FROM is refused,
//! also where Spark would find no reference through the name (an extra refusal, never other
//! rows). Tables named by their own name, without an alias, are left as they are.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{self as ast, Visit, Visitor};

use super::ident_case::same_ignoring_case;

/// `Err` naming the alias when a FROM of `node` gives two tables names that differ only in case
/// (at least one of them an alias).
pub(crate) fn refuse_case_only_alias_pairs<N: Visit>(node: &N) -> Result<(), String> {
    match node.visit(&mut Aliases) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(name) => Err(format!(
            "two tables of one FROM are named {name} without regard to case: Spark reads a name qualified by it as ambiguous; give them distinct aliases"
        )),
    }
}

struct Aliases;

/// A table factor's name in its FROM: (name, whether it is an alias).
fn name_of(t: &ast::TableFactor) -> Option<(String, bool)> {
    let alias = match t {
        ast::TableFactor::Table { alias, .. }
        | ast::TableFactor::Derived { alias, .. }
        | ast::TableFactor::Function { alias, .. }
        | ast::TableFactor::UNNEST { alias, .. }
        | ast::TableFactor::NestedJoin { alias, .. } => alias.as_ref(),
        _ => None,
    };
    match (alias, t) {
        (Some(a), _) => Some((a.name.value.clone(), true)),
        (None, ast::TableFactor::Table { name, .. }) => name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| (i.value.clone(), false)),
        _ => None,
    }
}

fn names_in(body: &ast::SetExpr, out: &mut Vec<Vec<(String, bool)>>) {
    match body {
        ast::SetExpr::Select(s) => {
            let mut names = Vec::new();
            for t in &s.from {
                names.extend(name_of(&t.relation));
                names.extend(t.joins.iter().filter_map(|j| name_of(&j.relation)));
            }
            out.push(names);
        }
        ast::SetExpr::SetOperation { left, right, .. } => {
            names_in(left, out);
            names_in(right, out);
        }
        _ => {}
    }
}

impl Visitor for Aliases {
    type Break = String;

    fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<String> {
        let mut scopes = Vec::new();
        names_in(&q.body, &mut scopes);
        for names in scopes {
            for (i, (a, a_alias)) in names.iter().enumerate() {
                for (b, b_alias) in names.iter().skip(i + 1) {
                    if (*a_alias || *b_alias) && same_ignoring_case(a, b) {
                        return ControlFlow::Break(b.clone());
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}
