//! Names of three or more parts (`t.s.id`) read as Spark reads them. Spark takes the first part as
//! a table's alias (or name) when one in scope has it, the second as that table's column and the
//! rest as fields of it; otherwise the first part is a column and the rest are its fields. Its
//! two-part qualifiers (`db.table`) match only tables named with two parts, which no statement of
//! this engine has (tables are names or paths).
//!
//! DataFusion tries `schema.table.column` first and matches a qualifier `(t, s)` against a table
//! known only as `s`: in a MERGE `ON t.s.id = s.id`, with `t` the target holding a struct column
//! `s`, it read the source's `s.id` (`s.id = s.id`, every target row updated), and it took
//! `zzz.s.id` as `s.id` too (red team helper-49). Here every such name is rewritten, before
//! planning, into the one form that has a single reading: `t.s['id']` (the table's column, then
//! its field) or `c['f']['g']` (a column's fields), fields by a string literal.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{self as ast, Visit, VisitMut, Visitor, VisitorMut};

/// Rewrites every name of three or more parts in `node` whose first part is one of `qualifiers`
/// (lower-cased table aliases and names in scope) into the table's column with field access, and
/// every other into a column with field access.
pub(crate) fn settle<N: VisitMut>(node: &mut N, qualifiers: &BTreeSet<String>) {
    let _ = node.visit(&mut Settle { qualifiers });
}

/// [`settle`] for a statement, with the aliases and names of the tables it reads (any table,
/// subquery, table function or CTE) as the qualifiers.
pub(crate) fn settle_statement(statement: &mut ast::Statement) {
    let mut names = Qualifiers(BTreeSet::new());
    let _ = Visit::visit(&*statement, &mut names);
    settle(statement, &names.0);
}

struct Qualifiers(BTreeSet<String>);

impl Visitor for Qualifiers {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &ast::TableFactor) -> ControlFlow<()> {
        use ast::TableFactor;
        let alias = match t {
            TableFactor::Table { name, alias, .. } => {
                if let Some(last) = name.0.last().and_then(|p| p.as_ident()) {
                    self.0.insert(last.value.to_lowercase());
                }
                alias
            }
            TableFactor::Derived { alias, .. }
            | TableFactor::TableFunction { alias, .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::NestedJoin { alias, .. } => alias,
            _ => &None,
        };
        if let Some(a) = alias {
            self.0.insert(a.name.value.to_lowercase());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.0.insert(cte.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }
}

struct Settle<'a> {
    qualifiers: &'a BTreeSet<String>,
}

/// `name` as a field subscript: `['name']`.
fn field(name: &ast::Ident) -> ast::AccessExpr {
    ast::AccessExpr::Subscript(ast::Subscript::Index {
        index: ast::Expr::value(ast::Value::SingleQuotedString(name.value.clone())),
    })
}

impl VisitorMut for Settle<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::CompoundIdentifier(parts) = e else {
            return ControlFlow::Continue(());
        };
        if parts.len() < 3 {
            return ControlFlow::Continue(());
        }
        let Some(first) = parts.first() else {
            return ControlFlow::Continue(());
        };
        let split = match self.qualifiers.contains(&first.value.to_lowercase()) {
            true => 2,
            false => 1,
        };
        let (root, fields) = parts.split_at(split);
        let root = match root {
            [one] => ast::Expr::Identifier(one.clone()),
            more => ast::Expr::CompoundIdentifier(more.to_vec()),
        };
        *e = ast::Expr::CompoundFieldAccess {
            root: Box::new(root),
            access_chain: fields.iter().map(field).collect(),
        };
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn settled(sql: &str) -> String {
        let mut st = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .pop()
            .unwrap();
        settle_statement(&mut st);
        st.to_string()
    }

    #[test]
    fn three_part_names_take_spark_reading() {
        assert_eq!(
            settled("SELECT t.s.id, s.id, x.y.z FROM t JOIN u AS s ON t.s.id = s.id"),
            "SELECT t.s['id'], s.id, x['y']['z'] FROM t JOIN u AS s ON t.s['id'] = s.id"
        );
        // A MERGE's target and source alias; a name whose first part is no table is a column.
        assert_eq!(
            settled("MERGE INTO t USING (SELECT 1 AS id) s ON t.s.id = s.id WHEN MATCHED THEN UPDATE SET v = zzz.s.id"),
            "MERGE INTO t USING (SELECT 1 AS id) s ON t.s['id'] = s.id WHEN MATCHED THEN UPDATE SET v = zzz['s']['id']"
        );
        // Case of the qualifier does not matter; a CTE is a qualifier.
        assert_eq!(
            settled("WITH c AS (SELECT 1) SELECT C.a.b FROM c"),
            "WITH c AS (SELECT 1) SELECT C.a['b'] FROM c"
        );
    }
}
