//! A small recursive-descent parser over sqlparser tokens for the statements DataFusion does not
//! plan for us: CREATE TABLE (columns, PARTITIONED BY, CLUSTER BY, TBLPROPERTIES, LOCATION, AS
//! query), INSERT targets, DESCRIBE / SHOW / VACUUM arguments.

use std::collections::BTreeMap;

use datafusion::sql::sqlparser::tokenizer::Token;
use delta_rlc_protocol::schema::{DataType, PrimitiveType, StructField, StructType};

use crate::error::{EngineError, Result};

pub struct Cursor {
    tokens: Vec<Token>,
    pos: usize,
}

fn err(msg: impl Into<String>) -> EngineError {
    EngineError::invalid(format!("SQL syntax error: {}", msg.into()))
}

impl Cursor {
    pub fn new(tokens: Vec<Token>) -> Self {
        let tokens = tokens
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect();
        Cursor { tokens, pos: 0 }
    }

    pub fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    pub fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    pub fn at_end(&self) -> bool {
        matches!(
            self.peek(),
            None | Some(Token::EOF) | Some(Token::SemiColon)
        )
    }

    pub fn peek_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw))
    }

    pub fn eat_kw(&mut self, kw: &str) -> bool {
        if self.peek_kw(kw) {
            self.pos += 1;
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
            self.pos += 1;
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
            None | Some(Token::EOF) => "end of statement".into(),
            Some(t) => format!("{t:?}").chars().take(60).collect(),
        }
    }

    pub fn ident(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            other => Err(err(format!("expected a name, found {other:?}"))),
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
            other => Err(err(format!("expected a string, found {other:?}"))),
        }
    }

    pub fn number(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Number(n, _)) => Ok(n),
            other => Err(err(format!("expected a number, found {other:?}"))),
        }
    }

    /// The remaining tokens as SQL text.
    pub fn rest_sql(&self) -> String {
        self.tokens
            .get(self.pos..)
            .unwrap_or(&[])
            .iter()
            .map(super::refs::sql_text)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `( <sql> )`: the SQL text between the parentheses (nested ones kept), as tokens joined by
    /// spaces.
    pub fn parenthesized_sql(&mut self) -> Result<String> {
        self.expect(&Token::LParen)?;
        let mut depth = 0usize;
        let mut parts: Vec<String> = Vec::new();
        loop {
            match self.next() {
                None => return Err(err("unclosed (".to_string())),
                Some(Token::RParen) if depth == 0 => break,
                Some(t) => {
                    match t {
                        Token::LParen => depth += 1,
                        Token::RParen => depth -= 1,
                        _ => {}
                    }
                    parts.push(super::refs::sql_text(&t));
                }
            }
        }
        if parts.is_empty() {
            return Err(err("empty ( )".to_string()));
        }
        Ok(parts.join(" "))
    }

    /// `( a, b, c )`
    pub fn ident_list(&mut self) -> Result<Vec<String>> {
        self.expect(&Token::LParen)?;
        let mut out = vec![self.ident()?];
        while self.eat(&Token::Comma) {
            out.push(self.ident()?);
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
        loop {
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
            loop {
                if self.eat_kw("START") {
                    self.expect_kw("WITH")?;
                    start = self.signed_long()?;
                } else if self.eat_kw("INCREMENT") {
                    self.expect_kw("BY")?;
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
            out.insert(key, value);
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
                self.pos += 1;
                Ok(())
            }
            Some(Token::ShiftRight) => {
                if let Some(t) = self.tokens.get_mut(self.pos) {
                    *t = Token::Gt;
                }
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

#[derive(Debug, Clone, Default)]
pub struct CreateStatement {
    pub target: String,
    pub if_not_exists: bool,
    pub columns: Option<StructType>,
    pub partition_by: Vec<String>,
    pub cluster_by: Vec<String>,
    pub properties: BTreeMap<String, String>,
    pub location: Option<String>,
    pub as_query: Option<String>,
}

/// Parses `CREATE TABLE …` (the CREATE keyword already consumed by the caller is not expected).
pub fn parse_create(c: &mut Cursor) -> Result<CreateStatement> {
    c.expect_kw("CREATE")?;
    c.expect_kw("TABLE")?;
    let mut st = CreateStatement::default();
    if c.eat_kw("IF") {
        c.expect_kw("NOT")?;
        c.expect_kw("EXISTS")?;
        st.if_not_exists = true;
    }
    st.target = c.ident()?;
    if c.eat(&Token::LParen) {
        st.columns = Some(StructType {
            fields: c.column_defs()?,
        });
        c.expect(&Token::RParen)?;
    }
    loop {
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
            st.as_query = Some(c.rest_sql());
            break;
        } else if c.at_end() {
            break;
        } else {
            return Err(err(format!("unexpected {} in CREATE TABLE", c.describe())));
        }
    }
    if st.columns.is_none() && st.as_query.is_none() {
        return Err(EngineError::invalid(
            "CREATE TABLE needs a column list or AS SELECT",
        ));
    }
    Ok(st)
}
