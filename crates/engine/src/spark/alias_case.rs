//! An output column keeps the spelling of its alias, as in Spark: `SELECT 1 AS MyCol` is a column
//! `MyCol`, and `CREATE TABLE … AS SELECT 1 AS MyCol` stores `MyCol`.
//!
//! DataFusion lower-cases an unquoted identifier, aliases included, so the table stored `mycol`
//! (Spark and the Delta log keep `MyCol`), and INSERT's by-name rule (Delta's
//! `needsSchemaAdjustmentByOrdinal`, which compares names exactly) saw `AS ID` as the table's
//! `id` where Spark sees another name and assigns by position.
//!
//! How: before planning, each unquoted SELECT alias is marked backquoted. A backquote only
//! delimits, as in Spark; DataFusion then takes the alias as written. In ORDER BY and GROUP BY,
//! a bare name that matches an alias of its query
//! block without regard to case is spelled as the alias, so it means what it meant when both
//! were lower-cased: `SELECT -v AS V … ORDER BY v` sorts by the alias, as in Spark, not by the
//! column `v`. (`spark::group_by_names` then takes a GROUP BY name as the column first.)
//! HAVING is left as written: there Spark reads `sum(v)` as the input column's sum, and a
//! respelled `V` would have summed the alias. An ORDER BY name that two output columns match
//! without regard to case is refused (Spark then reads the input's column, which DataFusion
//! cannot be told to); beside a wildcard no name is respelled, and DataFusion's reading is
//! Spark's. An
//! outer query's `mycol` is matched to a subquery's `MyCol` without regard to case by
//! `spark::ident_case`, as a mixed-case table column is. A column read
//! under its own name is named as the query writes it, as in Spark: `SELECT NAME FROM t` is a
//! column `NAME` even where `t` spells it `Name` (an item that is a bare name becomes that name
//! aliased as written).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{self as ast, VisitMut, VisitorMut};

use super::ident_case::same_ignoring_case;

/// Marks every unquoted SELECT alias of `node` (a statement or a query, at any depth) so that
/// planning keeps its spelling, and spells the references to it in its query block's ORDER BY
/// and GROUP BY as it is written; an ORDER BY name two outputs match is the `Err` (module header).
pub(crate) fn keep_alias_spelling<N: VisitMut>(node: &mut N) -> Result<(), String> {
    match node.visit(&mut Aliases) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(reason) => Err(reason),
    }
}

struct Aliases;

/// The aliases of `select`, after they are marked.
fn aliases_of(select: &ast::Select) -> Vec<String> {
    select
        .projection
        .iter()
        .filter_map(|item| match item {
            ast::SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            _ => None,
        })
        .collect()
}

/// The SELECT list whose names a query's output carries (the first of a set operation).
fn output_select(body: &ast::SetExpr) -> Option<&ast::Select> {
    match body {
        ast::SetExpr::Select(s) => Some(s),
        ast::SetExpr::SetOperation { left, .. } => output_select(left),
        _ => None,
    }
}

/// Marks the aliases of the SELECT lists of `body` (not of nested queries: each is visited as a
/// query of its own), and spells the references of their GROUP BY.
fn keep(body: &mut ast::SetExpr) {
    match body {
        ast::SetExpr::Select(select) => {
            name_as_written(&mut select.projection);
            for item in &mut select.projection {
                if let ast::SelectItem::ExprWithAlias { alias, .. } = item {
                    if alias.quote_style.is_none() {
                        alias.quote_style = Some('`');
                    }
                }
            }
            let aliases = aliases_of(select);
            // As DataFusion read them before: `spark::group_by_names` then takes the column (in
            // Spark, a name inside a GROUP BY expression is never an alias).
            if let ast::GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
                refer(exprs, &aliases);
            }
            // Not in HAVING: a name there that DataFusion does not find is matched without
            // regard to case by `spark::ident_case`, and one it finds exactly stays what
            // DataFusion reads (`sum(v)` beside an alias `V` is the input's `v`, as in Spark;
            // spelled as the alias it summed the alias, red team helper-52).
        }
        ast::SetExpr::SetOperation { left, right, .. } => {
            keep(left);
            keep(right);
        }
        _ => {}
    }
}

/// A column read by name is named as its name is written, as in Spark (`SELECT NAME FROM t`, with
/// `t`'s column `Name`, is a column `NAME`; `SELECT s.A` is `A`): the item takes its last name
/// part as its alias (and a literal its text, [`spark_name`]). DataFusion named it after the
/// column it found (`CAST(v AS STRING)` was `a.v`, `1` was `Int64(1)`).
///
/// Spark allows two output columns of one name; DataFusion refuses them. So where the names as
/// written would repeat one another (`SELECT name, s.name`), or a wildcard's columns are unknown
/// here, the items keep DataFusion's names.
fn name_as_written(projection: &mut [ast::SelectItem]) {
    fn written(item: &ast::SelectItem) -> Option<ast::Ident> {
        match item {
            ast::SelectItem::UnnamedExpr(e) => spark_name(e),
            _ => None,
        }
    }
    let wildcard = projection.iter().any(|item| {
        matches!(
            item,
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
        )
    });
    if wildcard {
        return;
    }
    let names: Vec<String> = projection
        .iter()
        .filter_map(|item| match item {
            ast::SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            other => written(other).map(|i| i.value),
        })
        .collect();
    for item in projection.iter_mut() {
        let Some(name) = written(item) else {
            continue;
        };
        if names.iter().filter(|n| **n == name.value).count() > 1 {
            continue;
        }
        if let ast::SelectItem::UnnamedExpr(expr) = item {
            *item = ast::SelectItem::ExprWithAlias {
                expr: expr.clone(),
                alias: name,
            };
        }
    }
}

/// The name Spark gives an unaliased item, where this engine can tell it: a name read as written
/// (its last part), through parentheses and a CAST of a name (`CAST(v AS STRING)` is `v`); an
/// integer, decimal, string or boolean literal as Spark prints it (`1`, `1.50`, `a`, `true`).
/// Other expressions keep DataFusion's name.
pub(crate) fn spark_name(e: &ast::Expr) -> Option<ast::Ident> {
    fn name(e: &ast::Expr) -> Option<ast::Ident> {
        match e {
            ast::Expr::Identifier(ident) => Some(ident.clone()),
            ast::Expr::CompoundIdentifier(parts) => parts.last().cloned(),
            ast::Expr::Nested(inner) => name(inner),
            ast::Expr::Cast { expr, .. } => name(expr),
            _ => None,
        }
    }
    if let Some(n) = name(e) {
        return Some(n);
    }
    let value = match e {
        ast::Expr::Nested(inner) => return spark_name(inner),
        ast::Expr::Value(v) => &v.value,
        _ => return None,
    };
    let text = match value {
        // Digits only (a suffix, an exponent or a sign is another literal or an expression).
        ast::Value::Number(n, false) if n.chars().all(|c| c.is_ascii_digit()) => {
            n.parse::<i128>().ok()?.to_string()
        }
        ast::Value::Number(n, false)
            if n.split_once('.').is_some_and(|(i, f)| {
                !i.is_empty() && i.chars().chain(f.chars()).all(|c| c.is_ascii_digit())
            }) =>
        {
            n.clone()
        }
        ast::Value::SingleQuotedString(s) => s.clone(),
        ast::Value::Boolean(b) => b.to_string(),
        _ => return None,
    };
    Some(ast::Ident::new(text))
}

/// `ident` spelled as the one alias it names without regard to case, as DataFusion matched it
/// when both were lower-cased; a double-quoted name is exact by choice.
fn spell_as_alias(ident: &mut ast::Ident, aliases: &[String]) {
    if ident.quote_style == Some('"') {
        return;
    }
    let mut matching = aliases
        .iter()
        .filter(|a| same_ignoring_case(a, &ident.value));
    if let (Some(alias), None) = (matching.next(), matching.next()) {
        ident.value = alias.clone();
        ident.quote_style = Some('`');
    }
}

/// Spells the bare names of `node` that name an alias (not those of nested queries).
fn refer<N: VisitMut>(node: &mut N, aliases: &[String]) {
    struct Refer<'a> {
        aliases: &'a [String],
        depth: usize,
    }
    impl VisitorMut for Refer<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.depth = self.depth.saturating_sub(1);
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            if let (0, ast::Expr::Identifier(ident)) = (self.depth, e) {
                spell_as_alias(ident, self.aliases);
            }
            ControlFlow::Continue(())
        }
    }
    if !aliases.is_empty() {
        let _ = node.visit(&mut Refer { aliases, depth: 0 });
    }
}

impl VisitorMut for Aliases {
    type Break = String;

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<String> {
        keep(&mut query.body);
        // ORDER BY reads the query's output first: Spark takes an alias before an input column.
        // With a wildcard in the list, its columns are unknown here: DataFusion's reading stands
        // (it also reads the output first, and a wildcard's `v` matches `v` exactly).
        let Some(select) = output_select(&query.body) else {
            return ControlFlow::Continue(());
        };
        let wildcard = select.projection.iter().any(|item| {
            matches!(
                item,
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
            )
        });
        let aliases = aliases_of(select);
        if let (Some(order_by), false) = (&mut query.order_by, wildcard) {
            // A name two output columns match without regard to case is one Spark reads as
            // neither (it takes the input's column); refused (red team helper-53).
            if let Some(name) = ambiguous_output(order_by, &aliases) {
                return ControlFlow::Break(format!(
                    "ORDER BY {name} matches more than one output column without regard to case; name the column once or use its position"
                ));
            }
            refer(order_by, &aliases);
        }
        ControlFlow::Continue(())
    }
}

/// A bare name in `node` (not in nested queries) that two of `outputs` match without regard to
/// case.
fn ambiguous_output<N: VisitMut>(node: &mut N, outputs: &[String]) -> Option<String> {
    struct Two<'a> {
        outputs: &'a [String],
        depth: usize,
    }
    impl VisitorMut for Two<'_> {
        type Break = String;
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<String> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<String> {
            self.depth = self.depth.saturating_sub(1);
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<String> {
            if let (0, ast::Expr::Identifier(ident)) = (self.depth, e) {
                let n = self
                    .outputs
                    .iter()
                    .filter(|o| same_ignoring_case(o, &ident.value))
                    .count();
                if n > 1 && ident.quote_style != Some('"') {
                    return ControlFlow::Break(ident.value.clone());
                }
            }
            ControlFlow::Continue(())
        }
    }
    match node.visit(&mut Two { outputs, depth: 0 }) {
        ControlFlow::Break(name) => Some(name),
        ControlFlow::Continue(()) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn unquoted_aliases_are_kept_as_written_at_any_depth() {
        let sql = "SELECT a AS MyCol, `b` AS `Q`, \"c\" AS \"D\", Name, t.Other FROM (SELECT 1 AS Inner1) \
                   UNION ALL SELECT 2 AS Other, 3, 4 WHERE EXISTS (SELECT 5 AS Deep)";
        let mut st = Parser::parse_sql(&GenericDialect {}, sql).unwrap_or_default();
        assert_eq!(st.len(), 1);
        assert_eq!(keep_alias_spelling(&mut st), Ok(()));
        let text = st.first().map(|s| s.to_string()).unwrap_or_default();
        for kept in [
            "AS `MyCol`",
            "AS `Q`",
            "AS \"D\"",
            "AS `Inner1`",
            "AS `Other`",
            "AS `Deep`",
        ] {
            assert!(text.contains(kept), "{kept} in {text}");
        }
        // A column read by name is named as written.
        assert!(
            text.contains("Name AS `Name`, t.Other AS `Other`"),
            "{text}"
        );
    }
}
