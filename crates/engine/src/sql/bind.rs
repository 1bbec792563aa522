//! Binding a parsed statement's relations to tables. A relation is `'./path'` (a Delta table, or a
//! data file by its extension), ``delta.`s3://bucket/t` ``, a registered name (`t` in scenarios),
//! a session view (expanded in place as a derived table) or external table, or a
//! `read_parquet|read_csv|read_json('path', option => value)` call. Each becomes a plain
//! identifier in the AST and a [`TableRef`] the session registers under it; `VERSION AS OF n` /
//! `TIMESTAMP AS OF '…'` after a relation pins its reference. The AST is changed in place and
//! planned as it is: no text is rebuilt.

use std::ops::ControlFlow;

use datafusion::sql::parser::{CopyToSource, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, Query, SetExpr,
    Statement, TableAlias, TableFactor, TableVersion, Value, VisitMut, VisitorMut,
};

use super::file_tables::FileSource;
use super::session_objects::SessionObjects;
use crate::error::{EngineError, Result};

/// A table a statement reads or writes, registered in its plan under `ident`.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRef {
    /// The identifier the bound statement uses.
    pub ident: String,
    pub location: String,
    pub version: Option<u64>,
    /// `TIMESTAMP AS OF '…'` as written; the session resolves it to `version` before planning.
    pub timestamp: Option<String>,
    /// A data file (or directory or glob) read in this format, not a Delta table.
    pub file: Option<FileSource>,
}

/// Session views expanded in one statement, at most (a view naming itself would never end).
const MAX_VIEW_EXPANSIONS: usize = 64;

/// What binding needs from the session.
pub struct Scope<'a> {
    /// Registered names → locations.
    pub named: &'a [(String, String)],
    /// Registered names read at a fixed version unless the statement says `VERSION AS OF`.
    pub pinned: &'a [(String, u64)],
    pub objects: SessionObjects,
    /// The statement's words and whether each is only ever a qualifier ([`super::statement::Parsed::word_uses`]).
    pub words: Vec<(String, bool)>,
}

/// Binds the relations of one statement; returns the references it registered.
pub struct Binder<'a> {
    scope: Scope<'a>,
    refs: Vec<TableRef>,
    ctes: Vec<String>,
    expansions: usize,
}

impl<'a> Binder<'a> {
    pub fn new(scope: Scope<'a>) -> Self {
        Binder {
            scope,
            refs: Vec::new(),
            ctes: Vec::new(),
            expansions: 0,
        }
    }

    pub fn into_refs(self) -> Vec<TableRef> {
        self.refs
    }

    /// Binds every relation of a statement DataFusion will plan.
    pub fn bind_statement(&mut self, st: &mut DFStatement) -> Result<()> {
        match st {
            DFStatement::Statement(s) => self.visit(s.as_mut()),
            DFStatement::CopyTo(c) => match &mut c.source {
                CopyToSource::Relation(name) => {
                    let ident = self.bind_name(name, None, false)?;
                    if let Some(i) = ident {
                        *name = ObjectName::from(vec![Ident::new(i)]);
                    }
                    Ok(())
                }
                CopyToSource::Query(q) => self.visit(q.as_mut()),
            },
            DFStatement::Explain(e) => self.bind_statement(e.statement.as_mut()),
            // Planned by DataFusion as written (CREATE EXTERNAL TABLE, RESET): no relations.
            _ => Ok(()),
        }
    }

    pub fn bind_query(&mut self, q: &mut Query) -> Result<()> {
        self.visit(q)
    }

    /// Binds a relation named outside a FROM (an INSERT's target): the identifier it is
    /// registered under, or `None` when it names nothing known.
    pub fn bind_target(&mut self, name: &ObjectName) -> Result<Option<String>> {
        self.bind_name(name, None, true)
    }

    /// [`Binder::bind_target`] with time travel (DESCRIBE of a past version).
    pub fn bind_target_as_of(
        &mut self,
        name: &ObjectName,
        version: Option<&TableVersion>,
    ) -> Result<Option<String>> {
        self.bind_name(name, version, true)
    }

    /// A registered name's reference (`CREATE TABLE t` where `t` is registered), if it is one.
    pub fn bind_registered(&mut self, name: &str) -> Result<Option<TableRef>> {
        let Some((n, loc)) = self
            .scope
            .named
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .cloned()
        else {
            return Ok(None);
        };
        let ident = self.delta_ref(&loc, None, None, Some(n.to_ascii_lowercase()));
        Ok(self.refs.iter().find(|r| r.ident == ident).cloned())
    }

    pub fn refs(&self) -> &[TableRef] {
        &self.refs
    }

    fn visit<T: VisitMut>(&mut self, node: &mut T) -> Result<()> {
        match node.visit(self) {
            ControlFlow::Break(e) => Err(e),
            ControlFlow::Continue(()) => Ok(()),
        }
    }

    /// The identifier a relation name is registered under: a quoted path, ``delta.`uri` ``, a
    /// session external table or a registered name. `None`: not one of those (a CTE, a table
    /// DataFusion knows, or an unknown name DataFusion reports). A path written to (`target`) is
    /// a Delta table whatever its extension.
    fn bind_name(
        &mut self,
        name: &ObjectName,
        version: Option<&TableVersion>,
        target: bool,
    ) -> Result<Option<String>> {
        let parts: Vec<&Ident> = name
            .0
            .iter()
            .filter_map(|p| match p {
                ObjectNamePart::Identifier(i) => Some(i),
                _ => None,
            })
            .collect();
        if parts.len() != name.0.len() {
            return Ok(None);
        }
        let location = match parts.as_slice() {
            [p] if p.quote_style == Some('\'') => {
                // A path with time travel is a Delta table whatever its extension (a data file
                // has no versions; one that is not a table says so when it is opened).
                if let Some(src) =
                    FileSource::from_extension(&p.value).filter(|_| !target && version.is_none())
                {
                    return Ok(Some(self.file_ref(&p.value, src)));
                }
                p.value.clone()
            }
            [d, p]
                if d.quote_style.is_none()
                    && d.value.eq_ignore_ascii_case("delta")
                    && p.quote_style == Some('`') =>
            {
                p.value.clone()
            }
            [p] if p.quote_style.is_none() && !self.is_cte(&p.value) => {
                if let Some((path, src)) = self.scope.objects.file(&p.value) {
                    refuse_version(version, &p.value)?;
                    let ident = p.value.to_ascii_lowercase();
                    if !self.refs.iter().any(|r| r.ident == ident) {
                        self.refs.push(TableRef {
                            ident: ident.clone(),
                            location: path.to_string(),
                            version: None,
                            timestamp: None,
                            file: Some(src.clone()),
                        });
                    }
                    return Ok(Some(ident));
                }
                match self
                    .scope
                    .named
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&p.value))
                {
                    Some((n, loc)) => {
                        let (mut version, timestamp) = as_of(version)?;
                        if version.is_none() && timestamp.is_none() {
                            version = self
                                .scope
                                .pinned
                                .iter()
                                .find(|(p, _)| p.eq_ignore_ascii_case(n))
                                .map(|(_, v)| *v);
                        }
                        let ident = n.to_ascii_lowercase();
                        return Ok(Some(self.delta_ref(loc, version, timestamp, Some(ident))));
                    }
                    None => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let (version, timestamp) = as_of(version)?;
        Ok(Some(self.delta_ref(&location, version, timestamp, None)))
    }

    fn is_cte(&self, name: &str) -> bool {
        self.ctes.iter().any(|c| c.eq_ignore_ascii_case(name))
    }

    /// The reference to a Delta table at `location` (as of a version): an existing one for the
    /// same location and version, or a new one named `ident`, a readable name, or `__delta_tN`.
    fn delta_ref(
        &mut self,
        location: &str,
        version: Option<u64>,
        timestamp: Option<String>,
        ident: Option<String>,
    ) -> String {
        if let Some(r) = self.refs.iter().find(|r| {
            r.file.is_none()
                && r.location == location
                && r.version == version
                && r.timestamp == timestamp
                && ident.as_ref().is_none_or(|i| *i == r.ident)
        }) {
            return r.ident.clone();
        }
        let ident = ident
            .filter(|i| !self.refs.iter().any(|r| r.ident == *i))
            .or_else(|| self.readable_name(location))
            .unwrap_or_else(|| format!("__delta_t{}", self.refs.len()));
        self.refs.push(TableRef {
            ident: ident.clone(),
            location: location.to_string(),
            version,
            timestamp,
            file: None,
        });
        ident
    }

    fn file_ref(&mut self, path: &str, src: FileSource) -> String {
        if let Some(r) = self
            .refs
            .iter()
            .find(|r| r.location == path && r.file.as_ref() == Some(&src))
        {
            return r.ident.clone();
        }
        let stem = path
            .rsplit(['/', '\\'])
            .next()
            .and_then(|f| f.split('.').next())
            .unwrap_or("");
        let ident = self
            .readable_name(stem)
            .unwrap_or_else(|| format!("__file_t{}", self.refs.len()));
        self.refs.push(TableRef {
            ident: ident.clone(),
            location: path.to_string(),
            version: None,
            timestamp: None,
            file: Some(src),
        });
        ident
    }

    /// The name a path reference is planned under, as users see it in headers and errors
    /// (`sum(orders.amount)`): the path's last segment, lowercased, when it is a plain identifier
    /// that is no SQL keyword, names no other reference and appears nowhere in the statement.
    /// Otherwise a generated one: `orders.id` over `'./orders'` could mean the field `id` of a
    /// struct column `orders`, as it does in Spark, so the path never becomes a qualifier.
    fn readable_name(&self, location: &str) -> Option<String> {
        let last = plain_name(location)?;
        let clash = self
            .refs
            .iter()
            .any(|r| r.ident.eq_ignore_ascii_case(&last))
            || self.is_cte(&last)
            // Any use of the word, a qualifier included: `s.id` may be a struct column's field.
            || self.scope.words.iter().any(|(w, _)| *w == last);
        (!clash).then_some(last)
    }

    /// A session view named in FROM: its query as a derived table under the view's name (or the
    /// statement's alias for it).
    fn expand_view(
        &mut self,
        name: &ObjectName,
        alias: &Option<TableAlias>,
    ) -> Result<Option<TableFactor>> {
        let [ObjectNamePart::Identifier(id)] = name.0.as_slice() else {
            return Ok(None);
        };
        if id.quote_style.is_some() || self.is_cte(&id.value) {
            return Ok(None);
        }
        let Some(text) = self.scope.objects.view(&id.value) else {
            return Ok(None);
        };
        self.expansions += 1;
        if self.expansions > MAX_VIEW_EXPANSIONS {
            return Err(EngineError::invalid(format!(
                "view {} expands more than {MAX_VIEW_EXPANSIONS} times (does it name itself?)",
                id.value
            )));
        }
        let (mut subquery, words) = super::statement::parse_query(text)?;
        crate::spark::ident_case::move_spans_apart(subquery.as_mut(), self.expansions as u64);
        self.scope.words.extend(words);
        let alias = alias.clone().or_else(|| {
            Some(TableAlias {
                explicit: true,
                name: Ident::new(id.value.to_ascii_lowercase()),
                columns: vec![],
                at: None,
            })
        });
        Ok(Some(TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            sample: None,
        }))
    }

    /// `read_parquet('p')`, `read_csv('p', header => false, delimiter => ';')`, `read_json('p')`:
    /// a file reference. `None` for another call (left to DataFusion).
    fn file_function(&mut self, name: &ObjectName, args: &[FunctionArg]) -> Result<Option<String>> {
        let [ObjectNamePart::Identifier(f)] = name.0.as_slice() else {
            return Ok(None);
        };
        if f.quote_style.is_some() || !f.value.to_ascii_lowercase().starts_with("read_") {
            return Ok(None);
        }
        let Some((first, rest)) = args.split_first() else {
            return Ok(None);
        };
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) = first else {
            return Ok(None);
        };
        let Value::SingleQuotedString(path) = &v.value else {
            return Ok(None);
        };
        let mut options = Vec::new();
        for a in rest {
            let FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(e),
                ..
            } = a
            else {
                return Ok(None);
            };
            let value = match e {
                Expr::Value(v) => match &v.value {
                    Value::SingleQuotedString(s) | Value::Number(s, _) => s.clone(),
                    Value::Boolean(b) => b.to_string(),
                    _ => return Ok(None),
                },
                Expr::Identifier(i) => i.value.clone(),
                _ => return Ok(None),
            };
            if options
                .iter()
                .any(|(k, _): &(String, String)| k.eq_ignore_ascii_case(&name.value))
            {
                return Err(EngineError::invalid(format!(
                    "{}: option {} is given twice",
                    f.value, name.value
                )));
            }
            options.push((name.value.clone(), value));
        }
        match FileSource::from_function(&f.value, &options)? {
            Some(src) => Ok(Some(self.file_ref(path, src))),
            None => Ok(None),
        }
    }
}

fn refuse_version(version: Option<&TableVersion>, what: &str) -> Result<()> {
    match version {
        None => Ok(()),
        Some(_) => Err(EngineError::invalid(format!(
            "{what} is not a Delta table: it has no versions to travel to"
        ))),
    }
}

/// `VERSION AS OF n` or `TIMESTAMP AS OF '…'`; any other time travel is refused.
/// `VERSION AS OF n` / `TIMESTAMP AS OF '…'` as (version, timestamp text).
pub(super) fn as_of(version: Option<&TableVersion>) -> Result<(Option<u64>, Option<String>)> {
    let literal = |e: &Expr| match e {
        Expr::Value(v) => Some(v.value.clone()),
        _ => None,
    };
    match version {
        None => Ok((None, None)),
        Some(TableVersion::VersionAsOf(e)) => match literal(e) {
            Some(Value::Number(n, _)) => n
                .parse()
                .map(|v| (Some(v), None))
                .map_err(|_| EngineError::invalid(format!("bad version {n}"))),
            _ => Err(EngineError::invalid("VERSION AS OF takes a version number")),
        },
        Some(TableVersion::TimestampAsOf(e)) => match literal(e) {
            Some(Value::SingleQuotedString(s)) => Ok((None, Some(s))),
            _ => Err(EngineError::invalid(
                "TIMESTAMP AS OF takes a timestamp string, e.g. TIMESTAMP AS OF '2026-01-01 00:00:00'",
            )),
        },
        Some(other) => Err(EngineError::Unsupported(format!(
            "time travel {other}: use VERSION AS OF n or TIMESTAMP AS OF '…'"
        ))),
    }
}

impl VisitorMut for Binder<'_> {
    type Break = EngineError;

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<EngineError> {
        // DataFusion cannot evaluate a subquery inside a VALUES row (its physical plan fails with
        // an internal error); `SELECT (subquery), …` is the same rows and is planned.
        if let Some(what) = values_subquery(&q.body) {
            return ControlFlow::Break(EngineError::Unsupported(format!(
                "{what} in a VALUES row: write the rows as a query instead, e.g. INSERT INTO t SELECT (SELECT …) + 1, 'b'"
            )));
        }
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.ctes.push(cte.alias.name.value.clone());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<EngineError> {
        let TableFactor::Table {
            name,
            alias,
            args,
            version,
            ..
        } = f
        else {
            return ControlFlow::Continue(());
        };
        let bound = match args {
            Some(a) => self.file_function(name, &a.args).map(|i| (i, true)),
            None => match self.expand_view(name, alias) {
                Ok(Some(view)) => {
                    if version.is_some() {
                        return ControlFlow::Break(EngineError::invalid(format!(
                            "view {name} has no versions to travel to"
                        )));
                    }
                    *f = view;
                    return ControlFlow::Continue(());
                }
                Ok(None) => self
                    .bind_name(name, version.as_ref(), false)
                    .map(|i| (i, false)),
                Err(e) => Err(e),
            },
        };
        match bound {
            Err(e) => ControlFlow::Break(e),
            // Time travel on anything but a Delta table (a CTE, a table DataFusion knows) would be
            // dropped by the planner: the statement would read today's rows.
            Ok((None, _)) if version.is_some() => ControlFlow::Break(EngineError::invalid(format!(
                "{name} has no versions to travel to: VERSION AS OF and TIMESTAMP AS OF apply to Delta tables"
            ))),
            Ok((None, _)) => ControlFlow::Continue(()),
            Ok((Some(ident), was_call)) => {
                *name = ObjectName::from(vec![Ident::new(ident)]);
                *version = None;
                if was_call {
                    *args = None;
                }
                ControlFlow::Continue(())
            }
        }
    }
}

/// A path's last segment, lowercased, when it reads as a plain identifier that is no SQL keyword
/// and no generated name: what a reference may be named by, unless it clashes.
/// The kind of subquery in a row of `body`'s VALUES (through set operations), if any.
fn values_subquery(body: &SetExpr) -> Option<&'static str> {
    match body {
        SetExpr::Values(v) => v
            .rows
            .iter()
            .flat_map(|row| row.content.iter())
            .find_map(crate::spark::ident_case::subquery_in),
        SetExpr::SetOperation { left, right, .. } => {
            values_subquery(left).or_else(|| values_subquery(right))
        }
        _ => None,
    }
}

pub(super) fn plain_name(location: &str) -> Option<String> {
    use datafusion::sql::sqlparser::keywords::ALL_KEYWORDS;
    let last = location
        .trim_end_matches('/')
        .rsplit(['/', '\\'])
        .next()?
        .to_ascii_lowercase();
    let plain = last
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && last
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let generated = last.starts_with("__delta_t") || last.starts_with("__file_t");
    let keyword = ALL_KEYWORDS.contains(&last.to_ascii_uppercase().as_str());
    (plain && !generated && !keyword).then_some(last)
}

/// Binds a statement DataFusion plans; returns its references.
pub fn bind(st: &mut DFStatement, scope: Scope<'_>) -> Result<Vec<TableRef>> {
    let mut b = Binder::new(scope);
    b.bind_statement(st)?;
    Ok(b.into_refs())
}

/// The inner sqlparser statement, when there is one.
pub fn inner(st: &DFStatement) -> Option<&Statement> {
    match st {
        DFStatement::Statement(s) => Some(s.as_ref()),
        _ => None,
    }
}

/// Every table-function call in FROM position (`delta_files('t')`, `table_changes('t', 1)`):
/// its name, lowercased, and its arguments.
pub fn table_calls(st: &DFStatement) -> Vec<(String, Vec<FunctionArg>)> {
    use datafusion::sql::sqlparser::ast::{Visit, Visitor};
    struct Calls(Vec<(String, Vec<FunctionArg>)>);
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                args: Some(a),
                ..
            } = f
            {
                if let [ObjectNamePart::Identifier(i)] = name.0.as_slice() {
                    self.0.push((i.value.to_ascii_lowercase(), a.args.clone()));
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut calls = Calls(Vec::new());
    fn walk(st: &DFStatement, calls: &mut Calls) {
        match st {
            DFStatement::Statement(s) => {
                let _ = s.visit(calls);
            }
            DFStatement::CopyTo(c) => {
                if let CopyToSource::Query(q) = &c.source {
                    let _ = q.visit(calls);
                }
            }
            DFStatement::Explain(e) => walk(&e.statement, calls),
            _ => {}
        }
    }
    walk(st, &mut calls);
    calls.0
}

/// Whether a tree (a query, a table factor) names the relation `name` anywhere: a one-part name,
/// compared without case.
pub fn names_relation<T: datafusion::sql::sqlparser::ast::Visit>(node: &T, name: &str) -> bool {
    datafusion::sql::sqlparser::ast::visit_relations(node, |r: &ObjectName| match r.0.as_slice() {
        [ObjectNamePart::Identifier(i)] if i.value.eq_ignore_ascii_case(name) => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Whether a tree (a query, a table factor) names any table: a relation other than the table
/// functions that read none (`range`, `generate_series`, `unnest`). Decided on the statement as
/// written, so a scan the optimizer later removes (`WHERE 1 = 0`, `LIMIT 0`) still counts.
pub fn names_any_table<T: datafusion::sql::sqlparser::ast::Visit>(node: &T) -> bool {
    datafusion::sql::sqlparser::ast::visit_relations(node, |r: &ObjectName| match r.0.as_slice() {
        [ObjectNamePart::Identifier(i)]
            if ["range", "generate_series", "unnest"]
                .iter()
                .any(|f| i.value.eq_ignore_ascii_case(f)) =>
        {
            ControlFlow::Continue(())
        }
        _ => ControlFlow::Break(()),
    })
    .is_break()
}

/// A literal argument of a table function call (`'t'`, `3`), `None` for anything else.
pub fn literal_arg(a: &FunctionArg) -> Option<&Value> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => Some(&v.value),
        _ => None,
    }
}
