//! The readers of Delta's own statements — CREATE TABLE (columns, PARTITIONED BY, CLUSTER BY,
//! TBLPROPERTIES, LOCATION, AS query), CREATE VIEW, ALTER TABLE, DESCRIBE / SHOW / VACUUM /
//! OPTIMIZE arguments — over sqlparser's parser: [`Cursor`] walks the statement's tokens with the
//! parser's own primitives, expressions and queries are parsed by it (`parse_expr`,
//! `parse_query`), and an expression the log stores (a generated column's, a CHECK constraint's)
//! is the statement's own text of that expression, never a re-print.

use std::collections::BTreeMap;

use datafusion::sql::sqlparser::ast::{Expr, ObjectName, Query};
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Location, Token};
use delta_rlc_protocol::schema::{DataType, PrimitiveType, StructField, StructType};

use super::bind::{Binder, TableRef};
use crate::error::{EngineError, Result};

/// A `>` left over from a `>>` token that closed two nested types (`ARRAY<ARRAY<INT>>`).
static GT: Token = Token::Gt;

pub struct Cursor {
    p: Parser<'static>,
    /// The statement as written, and where its lines start (for the text of an expression).
    text: String,
    line_starts: Vec<usize>,
    pending_gt: bool,
}

fn err(msg: impl Into<String>) -> EngineError {
    EngineError::invalid(format!("SQL syntax error: {}", msg.into()))
}

fn syntax(e: impl std::fmt::Display) -> EngineError {
    err(e.to_string())
}

impl Cursor {
    /// A cursor at the start of one statement.
    pub fn new(sql: &str) -> Result<Self> {
        let tokens = super::statement::tokenize(sql)?;
        Ok(Cursor {
            p: super::statement::parser(tokens),
            text: sql.to_string(),
            line_starts: super::statement::line_starts(sql),
            pending_gt: false,
        })
    }

    pub fn peek(&self) -> Option<&Token> {
        if self.pending_gt {
            return Some(&GT);
        }
        match &self.p.peek_token_ref().token {
            Token::EOF => None,
            t => Some(t),
        }
    }

    pub fn next(&mut self) -> Option<Token> {
        if std::mem::take(&mut self.pending_gt) {
            return Some(Token::Gt);
        }
        match self.p.next_token().token {
            Token::EOF => None,
            t => Some(t),
        }
    }

    /// Whether the token after the next one is a `.` (`delta.` in ``delta.`uri` ``).
    pub fn period_follows(&self) -> bool {
        !self.pending_gt && self.p.peek_nth_token_ref(1).token == Token::Period
    }

    pub fn at_end(&self) -> bool {
        matches!(self.peek(), None | Some(Token::SemiColon))
    }

    pub fn peek_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw))
    }

    pub fn eat_kw(&mut self, kw: &str) -> bool {
        if self.peek_kw(kw) {
            self.next();
            true
        } else {
            false
        }
    }

    pub fn expect_kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(err(format!("expected {kw}, found {}", self.describe())))
        }
    }

    pub fn eat(&mut self, t: &Token) -> bool {
        if self.peek() == Some(t) {
            self.next();
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, t: &Token) -> Result<()> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(err(format!("expected {t}, found {}", self.describe())))
        }
    }

    pub fn describe(&self) -> String {
        match self.peek() {
            None => "end of statement".into(),
            Some(t) => t.to_string().chars().take(60).collect(),
        }
    }

    pub fn ident(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            other => Err(err(format!("expected a name, found {}", shown(other)))),
        }
    }

    /// A column path: names joined by periods (`s.a`, `arr.element.x`).
    pub fn column_path(&mut self) -> Result<Vec<String>> {
        let mut path = vec![self.ident()?];
        while self.eat(&Token::Period) {
            path.push(self.ident()?);
        }
        Ok(path)
    }

    pub fn string(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::SingleQuotedString(s)) | Some(Token::DoubleQuotedString(s)) => Ok(s),
            Some(Token::Word(w)) => Ok(w.value),
            Some(Token::Number(n, _)) => Ok(n),
            other => Err(err(format!("expected a string, found {}", shown(other)))),
        }
    }

    pub fn number(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Number(n, _)) => Ok(n),
            other => Err(err(format!("expected a number, found {}", shown(other)))),
        }
    }

    /// The statement's own text between two token locations.
    fn text_between(&self, start: Location, end: Location) -> String {
        let a = super::statement::byte_offset(&self.text, &self.line_starts, start);
        let b = super::statement::byte_offset(&self.text, &self.line_starts, end);
        self.text.get(a..b).unwrap_or("").trim().to_string()
    }

    /// An expression: parsed by the parser, with its text exactly as written.
    pub fn expr(&mut self) -> Result<(Expr, String)> {
        if self.pending_gt {
            return Err(err("expected an expression, found >"));
        }
        let start = self.p.peek_token_ref().span.start;
        let e = self.p.parse_expr().map_err(syntax)?;
        let end = self.p.get_current_token().span.end;
        Ok((e, self.text_between(start, end)))
    }

    /// `( <expression> )`: the expression's text exactly as written (what the log stores; the
    /// parser has read it as one expression).
    pub fn parenthesized_sql(&mut self) -> Result<String> {
        self.expect(&Token::LParen)?;
        let (_, text) = self.expr()?;
        self.expect(&Token::RParen)?;
        Ok(text)
    }

    /// The rest of the statement as a query: parsed, with its text exactly as written.
    pub fn query(&mut self) -> Result<(Box<Query>, String)> {
        let start = self.p.peek_token_ref().span.start;
        let q = self.p.parse_query().map_err(syntax)?;
        let end = self.p.get_current_token().span.end;
        let text = self.text_between(start, end);
        while self.eat(&Token::SemiColon) {}
        if !self.at_end() {
            return Err(err(format!(
                "unexpected {} after the query",
                self.describe()
            )));
        }
        Ok((q, text))
    }

    /// A table named by the statement (`'./t'`, ``delta.`uri` ``, a registered name), with its
    /// time travel: bound as a target (a path is a Delta table whatever its extension).
    pub fn table(&mut self, binder: &mut Binder<'_>) -> Result<TableRef> {
        let name: ObjectName = self.p.parse_object_name(false).map_err(syntax)?;
        let version = self.p.maybe_parse_table_version().map_err(syntax)?;
        let ident = binder.bind_target_as_of(&name, version.as_ref())?.ok_or_else(|| {
            EngineError::invalid(format!(
                "unknown table {name}: reference tables by path, e.g. './data/t' or delta.`s3://bucket/t`"
            ))
        })?;
        binder
            .refs()
            .iter()
            .find(|r| r.ident == ident)
            .cloned()
            .ok_or_else(|| EngineError::Internal("a bound table has no reference".into()))
    }

    /// `VERSION AS OF n` or `TIMESTAMP AS OF '…'` standing apart from a table name (RESTORE's
    /// `TO VERSION AS OF n`), as (version, timestamp text); (None, None) when absent.
    pub fn as_of(&mut self) -> Result<(Option<u64>, Option<String>)> {
        let version = self.p.maybe_parse_table_version().map_err(syntax)?;
        super::bind::as_of(version.as_ref())
    }

    /// `( a, b, c )`: column names, each once.
    pub fn ident_list(&mut self) -> Result<Vec<String>> {
        self.expect(&Token::LParen)?;
        let mut out = vec![self.ident()?];
        while self.eat(&Token::Comma) {
            let name = self.ident()?;
            if out.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                return Err(EngineError::invalid(format!(
                    "column {name} is listed twice"
                )));
            }
            out.push(name);
        }
        self.expect(&Token::RParen)?;
        Ok(out)
    }

    /// `name TYPE [NOT NULL | NULL | COMMENT '…'] , …` (up to, not including, the closing paren).
    pub fn column_defs(&mut self) -> Result<Vec<StructField>> {
        let mut fields = Vec::new();
        loop {
            let name = self.ident()?;
            fields.push(self.column_def_after_name(name)?);
            if !self.eat(&Token::Comma) {
                break;
            }
        }
        Ok(fields)
    }

    /// `<column path> <type> [NOT NULL] [COMMENT …] …` separated by commas (ALTER TABLE ADD
    /// COLUMNS `s.c INT`): each with the path of the struct that receives it (empty: the table).
    pub fn column_path_defs(&mut self) -> Result<Vec<(Vec<String>, StructField)>> {
        let mut out = Vec::new();
        loop {
            let mut path = self.column_path()?;
            let Some(name) = path.pop() else {
                return Err(err("expected a column name".to_string()));
            };
            out.push((path, self.column_def_after_name(name)?));
            if !self.eat(&Token::Comma) {
                break;
            }
        }
        Ok(out)
    }

    /// A column definition after its name: the type, then NOT NULL, COMMENT and GENERATED clauses.
    fn column_def_after_name(&mut self, name: String) -> Result<StructField> {
        let data_type = self.data_type()?;
        let mut nullable = true;
        let mut metadata = serde_json::Map::new();
        // Each clause at most once (a second COMMENT or GENERATED would silently win).
        let mut seen: Vec<&str> = Vec::new();
        loop {
            for clause in ["NOT", "NULL", "COMMENT", "GENERATED"] {
                if self.peek_kw(clause) {
                    let kind = if clause == "NOT" { "NULL" } else { clause };
                    if seen.contains(&kind) {
                        return Err(err(format!(
                            "column {name}: {kind} is given twice (or NULL beside NOT NULL)"
                        )));
                    }
                    seen.push(kind);
                }
            }
            if self.eat_kw("NOT") {
                self.expect_kw("NULL")?;
                nullable = false;
            } else if self.eat_kw("NULL") {
            } else if self.eat_kw("COMMENT") {
                metadata.insert("comment".into(), serde_json::json!(self.string()?));
            } else if self.eat_kw("GENERATED") {
                let always = self.eat_kw("ALWAYS");
                if !always {
                    self.expect_kw("BY")?;
                    self.expect_kw("DEFAULT")?;
                }
                self.expect_kw("AS")?;
                if self.eat_kw("IDENTITY") {
                    let (start, step) = self.identity_options()?;
                    if data_type != DataType::Primitive(PrimitiveType::Long) {
                        return Err(EngineError::invalid(format!(
                            "identity column {name} must be BIGINT"
                        )));
                    }
                    metadata.extend(crate::txn::identity::identity_metadata(start, step, always));
                    continue;
                }
                if !always {
                    return Err(EngineError::invalid(
                            "GENERATED BY DEFAULT takes AS IDENTITY; a generated column is GENERATED ALWAYS AS (expression)",
                        ));
                }
                metadata.insert(
                    crate::constraints::GENERATION_KEY.into(),
                    serde_json::json!(self.parenthesized_sql()?),
                );
            } else {
                break;
            }
        }
        Ok(StructField {
            name,
            data_type,
            nullable,
            metadata,
        })
    }

    /// After `AS IDENTITY`: `[( [START WITH n] [INCREMENT BY m] )]` → (start, step), 1 and 1 by
    /// default; a zero step is refused.
    fn identity_options(&mut self) -> Result<(i64, i64)> {
        let (mut start, mut step) = (1i64, 1i64);
        if self.eat(&Token::LParen) {
            let (mut has_start, mut has_step) = (false, false);
            loop {
                if self.eat_kw("START") {
                    self.expect_kw("WITH")?;
                    if std::mem::replace(&mut has_start, true) {
                        return Err(err("START WITH is given twice"));
                    }
                    start = self.signed_long()?;
                } else if self.eat_kw("INCREMENT") {
                    self.expect_kw("BY")?;
                    if std::mem::replace(&mut has_step, true) {
                        return Err(err("INCREMENT BY is given twice"));
                    }
                    step = self.signed_long()?;
                } else {
                    break;
                }
            }
            self.expect(&Token::RParen)?;
        }
        if step == 0 {
            return Err(EngineError::invalid(
                "an identity column's INCREMENT BY cannot be 0",
            ));
        }
        Ok((start, step))
    }

    /// An integer literal with an optional sign.
    fn signed_long(&mut self) -> Result<i64> {
        let negative = self.eat(&Token::Minus);
        let n = self.number()?;
        let text = if negative { format!("-{n}") } else { n };
        text.parse()
            .map_err(|_| EngineError::invalid(format!("{text} is not a BIGINT")))
    }

    /// `('key' = 'value', …)`; keys may be dotted identifiers.
    pub fn properties(&mut self) -> Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        self.expect(&Token::LParen)?;
        loop {
            let key = self.property_key()?;
            self.expect(&Token::Eq)?;
            let value = self.string()?;
            if out.insert(key.clone(), value).is_some() {
                return Err(EngineError::invalid(format!(
                    "property {key} is given twice"
                )));
            }
            if !self.eat(&Token::Comma) {
                break;
            }
        }
        self.expect(&Token::RParen)?;
        Ok(out)
    }

    /// A property key: a string, or identifiers joined by dots.
    pub fn property_key(&mut self) -> Result<String> {
        let mut key = self.string()?;
        while self.eat(&Token::Period) {
            key.push('.');
            key.push_str(&self.string()?);
        }
        Ok(key)
    }

    fn expect_gt(&mut self) -> Result<()> {
        match self.peek() {
            Some(Token::Gt) => {
                self.next();
                Ok(())
            }
            Some(Token::ShiftRight) => {
                self.next();
                self.pending_gt = true;
                Ok(())
            }
            _ => Err(err(format!("expected >, found {}", self.describe()))),
        }
    }

    pub fn data_type(&mut self) -> Result<DataType> {
        let name = self.ident()?.to_ascii_uppercase();
        let p = |p| Ok(DataType::Primitive(p));
        match name.as_str() {
            "BIGINT" | "LONG" | "INT64" => p(PrimitiveType::Long),
            "INT" | "INTEGER" | "INT32" => p(PrimitiveType::Integer),
            "SMALLINT" | "SHORT" => p(PrimitiveType::Short),
            "TINYINT" | "BYTE" => p(PrimitiveType::Byte),
            "FLOAT" | "REAL" => p(PrimitiveType::Float),
            "DOUBLE" => p(PrimitiveType::Double),
            "BOOLEAN" | "BOOL" => p(PrimitiveType::Boolean),
            "STRING" | "TEXT" | "VARCHAR" | "CHAR" => {
                if self.eat(&Token::LParen) {
                    self.number()?;
                    self.expect(&Token::RParen)?;
                }
                p(PrimitiveType::String)
            }
            "BINARY" | "BYTEA" => p(PrimitiveType::Binary),
            "DATE" => p(PrimitiveType::Date),
            "TIMESTAMP" => p(PrimitiveType::Timestamp),
            "TIMESTAMP_NTZ" => p(PrimitiveType::TimestampNtz),
            "DECIMAL" | "NUMERIC" | "DEC" => {
                let (mut precision, mut scale) = (10u8, 0i8);
                if self.eat(&Token::LParen) {
                    precision = self
                        .number()?
                        .parse()
                        .map_err(|_| err("bad decimal precision"))?;
                    if self.eat(&Token::Comma) {
                        scale = self
                            .number()?
                            .parse()
                            .map_err(|_| err("bad decimal scale"))?;
                    }
                    self.expect(&Token::RParen)?;
                }
                if precision == 0 || precision > 38 || scale < 0 || scale as u8 > precision {
                    return Err(err(format!("DECIMAL({precision},{scale}) is out of range")));
                }
                p(PrimitiveType::Decimal { precision, scale })
            }
            "ARRAY" => {
                self.expect(&Token::Lt)?;
                let element = self.data_type()?;
                self.expect_gt()?;
                Ok(DataType::Array {
                    element: Box::new(element),
                    contains_null: true,
                })
            }
            "MAP" => {
                self.expect(&Token::Lt)?;
                let key = self.data_type()?;
                self.expect(&Token::Comma)?;
                let value = self.data_type()?;
                self.expect_gt()?;
                Ok(DataType::Map {
                    key: Box::new(key),
                    value: Box::new(value),
                    value_contains_null: true,
                })
            }
            "STRUCT" => {
                self.expect(&Token::Lt)?;
                let mut fields = Vec::new();
                loop {
                    let name = self.ident()?;
                    self.eat(&Token::Colon);
                    let data_type = self.data_type()?;
                    let nullable = if self.eat_kw("NOT") {
                        self.expect_kw("NULL")?;
                        false
                    } else {
                        true
                    };
                    fields.push(StructField {
                        name,
                        data_type,
                        nullable,
                        metadata: Default::default(),
                    });
                    if !self.eat(&Token::Comma) {
                        break;
                    }
                }
                self.expect_gt()?;
                Ok(DataType::Struct(StructType { fields }))
            }
            other => Err(EngineError::invalid(format!("unknown column type {other}"))),
        }
    }
}

fn shown(t: Option<Token>) -> String {
    t.map_or("end of statement".into(), |t| t.to_string())
}

#[derive(Debug, Clone, Default)]
pub struct CreateStatement {
    pub target: Option<TableRef>,
    /// The name written when it is a plain name (`CREATE TABLE t … LOCATION '…'`).
    pub name: Option<String>,
    pub if_not_exists: bool,
    pub columns: Option<StructType>,
    pub partition_by: Vec<String>,
    pub cluster_by: Vec<String>,
    pub properties: BTreeMap<String, String>,
    pub location: Option<String>,
    pub as_query: Option<Box<Query>>,
}

/// Parses `CREATE TABLE …` after `CREATE`; the target is bound when it names a table (`'./t'`, a registered
/// name), else it must be given a LOCATION.
pub fn parse_create(c: &mut Cursor, binder: &mut Binder<'_>) -> Result<CreateStatement> {
    c.expect_kw("TABLE")?;
    let mut st = CreateStatement::default();
    if c.eat_kw("IF") {
        c.expect_kw("NOT")?;
        c.expect_kw("EXISTS")?;
        st.if_not_exists = true;
    }
    st.target = match c.peek() {
        Some(Token::Word(w)) if w.quote_style.is_none() && !c.period_follows() => {
            let name = c.ident()?;
            // A plain name: a registered table, else a name for a LOCATION given below.
            st.name = Some(name.clone());
            binder.bind_registered(&name)?
        }
        _ => Some(c.table(binder)?),
    };
    if c.eat(&Token::LParen) {
        st.columns = Some(StructType {
            fields: c.column_defs()?,
        });
        c.expect(&Token::RParen)?;
    }
    // Each clause at most once: a second LOCATION or PARTITIONED BY would silently win.
    let mut seen: Vec<&str> = Vec::new();
    let mut once = |clause: &'static str| -> Result<()> {
        match seen.contains(&clause) {
            true => Err(err(format!("{clause} is given twice in CREATE TABLE"))),
            false => {
                seen.push(clause);
                Ok(())
            }
        }
    };
    loop {
        for clause in [
            "USING",
            "PARTITIONED",
            "CLUSTER",
            "TBLPROPERTIES",
            "LOCATION",
            "COMMENT",
        ] {
            if c.peek_kw(clause) {
                once(clause)?;
            }
        }
        if c.eat_kw("USING") {
            let fmt = c.ident()?;
            if !fmt.eq_ignore_ascii_case("delta") {
                return Err(EngineError::invalid(format!(
                    "only USING DELTA is supported, not {fmt}"
                )));
            }
        } else if c.eat_kw("PARTITIONED") {
            c.expect_kw("BY")?;
            st.partition_by = c.ident_list()?;
        } else if c.eat_kw("CLUSTER") {
            c.expect_kw("BY")?;
            st.cluster_by = c.ident_list()?;
        } else if c.eat_kw("TBLPROPERTIES") {
            st.properties = c.properties()?;
        } else if c.eat_kw("LOCATION") {
            st.location = Some(c.string()?);
        } else if c.eat_kw("COMMENT") {
            c.string()?;
        } else if c.eat_kw("AS") {
            st.as_query = Some(c.query()?.0);
            break;
        } else if c.at_end() {
            break;
        } else {
            return Err(err(format!("unexpected {} in CREATE TABLE", c.describe())));
        }
    }
    if let (Some(target), Some(location)) = (&st.target, &st.location) {
        if target.location.trim_end_matches('/') != location.trim_end_matches('/') {
            return Err(EngineError::invalid(format!(
                "CREATE TABLE names the table {} and gives LOCATION '{location}': give one",
                target.location
            )));
        }
    }
    if st.columns.is_none() && st.as_query.is_none() {
        return Err(EngineError::invalid(
            "CREATE TABLE needs a column list or AS SELECT",
        ));
    }
    Ok(st)
}
