//! Column names resolved as Spark resolves them: without regard to case.
//!
//! Spark matches a column name to a table's columns case-insensitively (`spark.sql.caseSensitive`
//! is false by default), and so do the expressions Spark stores in a Delta log (CHECK
//! constraints, generation expressions). DataFusion lower-cases an unquoted identifier and then
//! matches it exactly, so neither `dayofyear` nor `dayOfYear` itself would find a column spelled
//! `dayOfYear`. Before a statement or an expression is planned, each unquoted identifier that
//! names, case-insensitively, exactly one spelling among the columns in scope (nested struct
//! fields included) is spelled as the table spells it and quoted, so the planner keeps it.
//!
//! A qualified name `t.c` is looked up among the columns of `t` alone (a table in scope, or an
//! alias of one); a name on its own among the top-level columns of every table in scope; other
//! parts of `a.b.c` among all names, nested fields included.
//!
//! Never rewritten, so a rewrite can only make a name resolve that would otherwise fail, never
//! move it to another column:
//! - a quoted identifier (its case is the user's);
//! - a name that columns in scope spell in two ways (`Value` and `value`): on its own it is
//!   refused as ambiguous (as Spark refuses it; DataFusion would pick the one spelled in lower
//!   case), as a part of `a.b` it is left to the planner's exact match;
//! - a name already spelled in lower case by the table (normalisation finds it unchanged);
//! - a name equal, case-insensitively, to an alias the statement defines (a select-list alias, a
//!   table or subquery alias, a CTE name): the alias may be what it means.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use arrow::datatypes::{DataType, Field};
use datafusion::common::{DFSchema, DataFusionError, Result as DFResult};
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    self as ast, Ident, Query, SelectItem, SetExpr, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut,
};

/// The spellings of the columns in scope, by lower-cased name: `Some` when one spelling,
/// `None` when several (ambiguous). `top` holds the top-level columns (what a name on its own
/// can mean); `all` adds every nested field (what a part of `a.b.c` can mean).
#[derive(Debug, Default, Clone)]
pub struct ColumnSpellings {
    top: HashMap<String, Option<String>>,
    all: HashMap<String, Option<String>>,
    /// Each table's own top-level columns, by the table's lower-cased name: what `t.c` means.
    tables: HashMap<String, HashMap<String, Option<String>>>,
}

fn add_spelling(map: &mut HashMap<String, Option<String>>, name: &str) {
    let lower = name.to_lowercase();
    match map.get_mut(&lower) {
        None => {
            map.insert(lower, Some(name.to_string()));
        }
        Some(Some(s)) if s == name => {}
        Some(slot) => *slot = None,
    }
}

impl ColumnSpellings {
    /// Adds the top-level column `field` and, recursively, the fields of its structs (lists'
    /// and maps' too).
    pub fn add_field(&mut self, field: &Field) {
        add_spelling(&mut self.top, field.name());
        add_spelling(&mut self.all, field.name());
        self.add_nested(field.data_type());
    }

    fn add_nested(&mut self, t: &DataType) {
        match t {
            DataType::Struct(fields) => fields.iter().for_each(|f| {
                add_spelling(&mut self.all, f.name());
                self.add_nested(f.data_type());
            }),
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::Map(f, _) => self.add_nested(f.data_type()),
            _ => {}
        }
    }

    /// The columns of the table registered as `name` (a qualifier in the statement).
    pub fn add_table(&mut self, name: &str, fields: &arrow::datatypes::Fields) {
        let own = self.tables.entry(name.to_lowercase()).or_default();
        fields.iter().for_each(|f| add_spelling(own, f.name()));
        fields.iter().for_each(|f| self.add_field(f));
    }

    /// The columns of `schema` (qualified or not).
    pub fn of_schema(schema: &DFSchema) -> Self {
        let mut out = ColumnSpellings::default();
        schema.fields().iter().for_each(|f| out.add_field(f));
        out
    }

    /// What an unquoted `ident` becomes: `Ok(Some)` a new spelling, `Ok(None)` unchanged, `Err`
    /// a name on its own that columns in scope spell in several ways (Spark's ambiguous
    /// reference: never resolved to one of them silently).
    fn respelled(
        &self,
        ident: &Ident,
        aliases: &HashSet<String>,
        alone: bool,
        within: Option<&HashMap<String, Option<String>>>,
    ) -> Result<Option<String>, String> {
        if ident.quote_style.is_some() {
            return Ok(None);
        }
        let lower = ident.value.to_lowercase();
        if aliases.contains(&lower) {
            return Ok(None);
        }
        let map = match (within, alone) {
            (Some(table), _) => table,
            (None, true) => &self.top,
            (None, false) => &self.all,
        };
        match map.get(&lower) {
            Some(Some(s)) if *s != lower => Ok(Some(s.clone())),
            Some(None) if alone => Err(format!(
                "column reference {} is ambiguous: the tables in scope spell it in several ways (qualify it with its table, or quote it)",
                ident.value
            )),
            _ => Ok(None),
        }
    }

    /// `e` with its column names spelled as the columns in scope spell them.
    pub fn respell_expr(&self, e: &mut ast::Expr) -> DFResult<()> {
        self.respell(e, HashSet::new(), HashMap::new())
    }

    /// `statement` with its column names spelled as the columns in scope spell them.
    pub fn respell_statement(&self, statement: &mut ast::Statement) -> DFResult<()> {
        let mut aliases = Aliases::default();
        let _ = Visit::visit(&*statement, &mut aliases);
        self.respell(statement, aliases.names, aliases.tables)
    }

    fn respell<N: VisitMut>(
        &self,
        node: &mut N,
        aliases: HashSet<String>,
        alias_of: HashMap<String, String>,
    ) -> DFResult<()> {
        if self.all.is_empty() {
            return Ok(());
        }
        let mut r = Respeller {
            spellings: self,
            aliases,
            alias_of,
        };
        match node.visit(&mut r) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(e) => Err(DataFusionError::Plan(e)),
        }
    }
}

struct Respeller<'a> {
    spellings: &'a ColumnSpellings,
    aliases: HashSet<String>,
    /// Table aliases (lower-cased) and the table each stands for.
    alias_of: HashMap<String, String>,
}

impl Respeller<'_> {
    fn fix(
        &self,
        ident: &mut Ident,
        alone: bool,
        within: Option<&HashMap<String, Option<String>>>,
    ) -> Result<(), String> {
        if let Some(s) = self
            .spellings
            .respelled(ident, &self.aliases, alone, within)?
        {
            ident.value = s;
            ident.quote_style = Some('"');
        }
        Ok(())
    }

    /// The columns of the table `qualifier` names (directly or by its alias), if it names one.
    fn table(&self, qualifier: &Ident) -> Option<&HashMap<String, Option<String>>> {
        let name = match qualifier.quote_style {
            Some(_) => qualifier.value.clone(),
            None => qualifier.value.to_lowercase(),
        };
        let name = self.alias_of.get(&name).unwrap_or(&name);
        self.spellings.tables.get(name)
    }

    /// `t.c…`: `c` is looked up among `t`'s own columns when `t` is a table in scope; every
    /// other part among all names.
    fn fix_compound(&self, parts: &mut [Ident]) -> Result<(), String> {
        let own = match parts {
            [q, _, ..] => self.table(q).cloned(),
            _ => None,
        };
        for (i, p) in parts.iter_mut().enumerate() {
            match (&own, i) {
                // The qualifier itself names the table: never a column.
                (Some(_), 0) => {}
                (Some(t), 1) => self.fix(p, false, Some(t))?,
                _ => self.fix(p, false, None)?,
            }
        }
        Ok(())
    }
}

impl VisitorMut for Respeller<'_> {
    type Break = String;

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<String> {
        let fixed = match e {
            ast::Expr::Identifier(ident) => self.fix(ident, true, None),
            ast::Expr::CompoundIdentifier(parts) => self.fix_compound(parts),
            _ => Ok(()),
        };
        match fixed {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

/// Every name a statement defines for itself, lower-cased; and each table alias's table.
#[derive(Default)]
struct Aliases {
    names: HashSet<String>,
    tables: HashMap<String, String>,
}

impl Visitor for Aliases {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.names.insert(cte.alias.name.value.to_lowercase());
                for c in &cte.alias.columns {
                    self.names.insert(c.name.value.to_lowercase());
                }
            }
        }
        if let SetExpr::Select(select) = q.body.as_ref() {
            for item in &select.projection {
                if let SelectItem::ExprWithAlias { alias, .. } = item {
                    self.names.insert(alias.value.to_lowercase());
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        let alias = match t {
            TableFactor::Table { alias, .. }
            | TableFactor::Derived { alias, .. }
            | TableFactor::TableFunction { alias, .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::NestedJoin { alias, .. } => alias.as_ref(),
            _ => None,
        };
        if let (TableFactor::Table { name, .. }, Some(a)) = (t, alias) {
            if let Some(table) = name.0.last().and_then(|p| p.as_ident()) {
                self.tables
                    .insert(a.name.value.to_lowercase(), table.value.to_lowercase());
            }
        }
        if let Some(a) = alias {
            self.names.insert(a.name.value.to_lowercase());
            for c in &a.columns {
                self.names.insert(c.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }
}

/// `sql` parsed in `ctx`'s dialect and planned against `schema`, its column names resolved as
/// Spark resolves them (the replacement for `SessionContext::parse_sql_expr`).
pub fn parse_sql_expr(ctx: &SessionContext, sql: &str, schema: &DFSchema) -> DFResult<Expr> {
    let state = ctx.state();
    let dialect = state.config().options().sql_parser.dialect;
    let mut parsed = state.sql_to_expr_with_alias(sql, &dialect)?;
    ColumnSpellings::of_schema(schema).respell_expr(&mut parsed.expr)?;
    state.create_logical_expr_from_sql_expr(parsed, schema)
}

/// A parsed expression planned against `schema`, its column names resolved as Spark resolves
/// them.
pub fn plan_parsed(ctx: &SessionContext, e: &ast::Expr, schema: &DFSchema) -> DFResult<Expr> {
    let mut e = e.clone();
    ColumnSpellings::of_schema(schema).respell_expr(&mut e)?;
    ctx.state().create_logical_expr_from_sql_expr(
        ast::ExprWithAlias {
            expr: e,
            alias: None,
        },
        schema,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn spellings(names: &[&str]) -> ColumnSpellings {
        let mut s = ColumnSpellings::default();
        names
            .iter()
            .for_each(|n| s.add_field(&Field::new(*n, DataType::Int32, true)));
        s
    }

    fn respelled(names: &[&str], sql: &str) -> String {
        let mut st = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .remove(0);
        match spellings(names).respell_statement(&mut st) {
            Ok(()) => st.to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn unquoted_names_take_the_tables_spelling_and_nothing_else_moves() {
        assert_eq!(
            respelled(
                &["dayOfYear", "v"],
                "SELECT DAYOFYEAR, v, t.dayofyear FROM t WHERE dayOfYear > 1"
            ),
            r#"SELECT "dayOfYear", v, t."dayOfYear" FROM t WHERE "dayOfYear" > 1"#
        );
        // Quoted: the user's case. A qualified name two tables spell differently is left to
        // the planner (it matches exactly within its table); on its own it is refused.
        assert_eq!(
            respelled(
                &["Value", "value", "Id"],
                r#"SELECT "ID", t.value, u.VALUE FROM t, u"#
            ),
            r#"SELECT "ID", t.value, u.VALUE FROM t, u"#
        );
        assert!(respelled(&["Value", "value"], "SELECT VALUE FROM t, u").contains("ambiguous"));
        // A nested field's name never makes a top-level name ambiguous.
        let mut s = spellings(&["Value"]);
        s.add_field(&Field::new(
            "st",
            DataType::Struct(vec![Field::new("value", DataType::Int32, true)].into()),
            true,
        ));
        let mut st = Parser::parse_sql(&GenericDialect {}, "SELECT VALUE, st.VALUE FROM t")
            .unwrap()
            .remove(0);
        s.respell_statement(&mut st).unwrap();
        assert_eq!(st.to_string(), r#"SELECT "Value", st.VALUE FROM t"#);
        // An alias the statement defines is not respelled, wherever it appears.
        assert_eq!(
            respelled(
                &["Total", "dayOfYear"],
                "SELECT x AS total FROM t AS dayofyear ORDER BY total"
            ),
            "SELECT x AS total FROM t AS dayofyear ORDER BY total"
        );
    }
}
