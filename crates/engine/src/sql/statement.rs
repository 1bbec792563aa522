//! Statements as the SQL parser reads them. Text is tokenized once by sqlparser's tokenizer (it
//! knows strings, quoted identifiers and comments) and parsed into an AST; nothing downstream
//! prints the AST back to text or re-assembles text from tokens. Scripts are split at the
//! tokenizer's top-level `;` and each statement is the original text between them, byte for byte.
//!
//! The dialect is sqlparser's GenericDialect (what DataFusion plans with) plus Delta's time travel
//! after a table (`VERSION AS OF n`, `TIMESTAMP AS OF '…'`). What sqlparser does not read is parsed
//! here with the parser's own primitives (`INSERT INTO t REPLACE WHERE p query`, MERGE's
//! `UPDATE SET *`, `INSERT *` and `WITH SCHEMA EVOLUTION`); Delta statements that still have
//! readers of their own (CREATE, ALTER, DESCRIBE, SHOW, VACUUM, OPTIMIZE) are recognised by their
//! first keyword and handed to them.

use std::any::TypeId;

use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Assignment, Expr, Ident, MergeClauseKind, ObjectName, Query, TableFactor,
};
use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::error::{EngineError, Result};

/// Nesting depth the parser accepts (DataFusion's default is 50; generated statements nest more).
pub(super) const RECURSION_LIMIT: usize = 256;

/// sqlparser's GenericDialect with table versioning. `dialect()` answers GenericDialect's type,
/// so the parser's dialect-specific branches read exactly as they do for DataFusion's own parser.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeltaDialect;

macro_rules! generic {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool { GenericDialect {}.$name() })*
    };
}

impl Dialect for DeltaDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<GenericDialect>()
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        GenericDialect {}.is_delimited_identifier_start(ch)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        GenericDialect {}.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        GenericDialect {}.is_identifier_part(ch)
    }
    fn supports_table_versioning(&self) -> bool {
        true
    }
    generic!(
        supports_unicode_string_literal,
        supports_partition_by_after_order_by,
        supports_array_join_syntax,
        supports_group_by_expr,
        supports_group_by_with_modifier,
        supports_left_associative_joins_without_parens,
        supports_connect_by,
        supports_match_recognize,
        supports_pipe_operator,
        supports_start_transaction_modifier,
        supports_window_function_null_treatment_arg,
        supports_dictionary_syntax,
        supports_window_clause_named_window_reference,
        supports_parenthesized_set_variables,
        supports_select_wildcard_except,
        support_map_literal_syntax,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_extract_comma_syntax,
        supports_create_view_comment_syntax,
        supports_parens_around_table_factor,
        supports_values_as_table_factor,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_limit_comma,
        supports_update_order_by,
        supports_from_first_select,
        supports_projection_trailing_commas,
        supports_asc_desc_in_column_definition,
        supports_try_convert,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_assignment_operator,
        supports_struct_literal,
        supports_empty_projections,
        supports_nested_comments,
        supports_multiline_comment_hints,
        supports_user_host_grantee,
        supports_string_escape_constant,
        supports_array_typedef_with_brackets,
        supports_match_against,
        supports_set_names,
        supports_comma_separated_set_assignments,
        supports_filter_during_aggregation,
        supports_select_wildcard_exclude,
        supports_data_type_signed_suffix,
        supports_interval_options,
        supports_quote_delimited_string,
        supports_select_wildcard_replace,
        supports_select_wildcard_ilike,
        supports_select_wildcard_rename,
        supports_optimize_table,
        supports_install,
        supports_detach,
        supports_prewhere,
        supports_with_fill,
        supports_limit_by,
        supports_interpolate,
        supports_settings,
        supports_select_format,
        supports_comment_optimizer_hint,
        supports_constraint_keyword_without_name,
        supports_key_column_option,
        supports_comma_separated_trim,
        supports_cte_without_as,
        supports_select_item_multi_column_alias,
        supports_xml_expressions,
    );
}

/// `INSERT (INTO | OVERWRITE) [TABLE] t [(c, …)] [REPLACE WHERE p] query`, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertStatement {
    pub overwrite: bool,
    pub table: ObjectName,
    pub columns: Option<Vec<Ident>>,
    /// Delta's `replaceWhere`: the rows matching it are replaced by the query's.
    pub replace_where: Option<Expr>,
    pub source: Box<Query>,
}

/// `MERGE [WITH SCHEMA EVOLUTION] INTO target USING source ON cond WHEN …`, as read (Delta's
/// `UPDATE SET *` and `INSERT *` included).
#[derive(Debug, Clone, PartialEq)]
pub struct MergeStatement {
    pub schema_evolution: bool,
    pub target: TableFactor,
    pub source: TableFactor,
    pub on: Expr,
    pub clauses: Vec<MergeWhen>,
}

/// One `WHEN [NOT] MATCHED [BY TARGET | BY SOURCE] [AND cond] THEN action` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeWhen {
    pub kind: MergeClauseKind,
    pub predicate: Option<Expr>,
    pub action: MergeWhenAction,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MergeWhenAction {
    Delete,
    /// `UPDATE SET *`
    UpdateAll,
    Update(Vec<Assignment>),
    /// `INSERT *`
    InsertAll,
    Insert {
        columns: Vec<Ident>,
        values: Vec<Expr>,
    },
}

/// One statement, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedStatement {
    /// Read by sqlparser (or DataFusion's parser, for COPY, EXPLAIN and CREATE EXTERNAL TABLE).
    Sql(DFStatement),
    Insert(InsertStatement),
    Merge(MergeStatement),
    /// A Delta statement with a reader of its own (CREATE, ALTER, DESCRIBE, SHOW, VACUUM,
    /// OPTIMIZE; RESTORE, which sqlparser has no keyword for, is `NoKeyword`): its first keyword.
    Delta(Keyword),
}

/// The statement's tokens (whitespace and comments included) and what it parsed to.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub statement: ParsedStatement,
    pub tokens: Vec<TokenWithSpan>,
}

impl Parsed {
    /// See [`word_uses`].
    pub fn word_uses(&self) -> Vec<(String, bool)> {
        word_uses(&self.tokens)
    }
}

/// The words of a statement, lowercased, each with whether every use of it is as a qualifier
/// (`t.c`): how a table reference may be named without clashing with a column or alias.
pub fn word_uses(tokens: &[TokenWithSpan]) -> Vec<(String, bool)> {
    {
        let sig: Vec<&Token> = tokens
            .iter()
            .map(|t| &t.token)
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect();
        // A map, not a scan: generated statements carry many thousands of words.
        let mut index: std::collections::HashMap<String, usize> = Default::default();
        let mut out: Vec<(String, bool)> = Vec::new();
        for (i, t) in sig.iter().enumerate() {
            let Token::Word(w) = t else { continue };
            let value = w.value.to_ascii_lowercase();
            let qualifier = matches!(sig.get(i + 1), Some(Token::Period));
            match index.get(&value).and_then(|&k| out.get_mut(k)) {
                Some((_, q)) => *q &= qualifier,
                None => {
                    index.insert(value.clone(), out.len());
                    out.push((value, qualifier));
                }
            }
        }
        out
    }
}

fn syntax(e: impl std::fmt::Display) -> EngineError {
    EngineError::invalid(format!("SQL syntax error: {e}"))
}

/// What a double-quoted token (`"x"`) in a statement's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotedNames {
    /// Refused, with a backslash escape in a string: a SQL statement means what Spark means,
    /// where `"x"` is a string (here it would be a name) and `'a\nb'` holds a line break
    /// (`spark::lexical::double_quoted`, `backslash_escape`).
    Refused,
    /// A name, as in DataFusion: deltalake's QueryBuilder, whose users write `"Col"`.
    Names,
}

pub(super) fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>> {
    tokenize_with(sql, QuotedNames::Refused)
}

fn tokenize_with(sql: &str, quotes: QuotedNames) -> Result<Vec<TokenWithSpan>> {
    let tokens = Tokenizer::new(&DeltaDialect, sql)
        .tokenize_with_location()
        .map_err(syntax)?;
    // Text Spark's lexer would cut elsewhere (a string or comment to one, code to the other).
    if let Some(reason) = crate::spark::lexical::spark_cuts_differently(&tokens) {
        return Err(syntax(reason));
    }
    if quotes == QuotedNames::Refused {
        // What Spark reads as another value: `"x"` (a string there), a backslash escape.
        let reason = crate::spark::lexical::double_quoted(&tokens)
            .or_else(|| crate::spark::lexical::backslash_escape(&tokens));
        if let Some(reason) = reason {
            return Err(syntax(reason));
        }
    }
    // `1.5D`, `2S`, `3BD` …: one typed literal each, as Spark's lexer reads them.
    crate::spark::literals::typed_literal_tokens(tokens).map_err(syntax)
}

/// The statements' first keyword that has a reader of its own.
const DELTA_STATEMENTS: &[Keyword] = &[
    Keyword::CREATE,
    Keyword::ALTER,
    Keyword::DESCRIBE,
    Keyword::DESC,
    Keyword::SHOW,
    Keyword::VACUUM,
    Keyword::OPTIMIZE,
    Keyword::CONVERT,
];

/// sqlparser's parser over a statement's tokens, under [`DeltaDialect`].
pub(super) fn parser(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    static DIALECT: DeltaDialect = DeltaDialect;
    Parser::new(&DIALECT)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(tokens)
}

/// Parses exactly one statement (a trailing `;` allowed), as a SQL statement reads it.
#[cfg(test)]
pub fn parse(sql: &str) -> Result<Parsed> {
    parse_with(sql, QuotedNames::Refused)
}

/// [`parse`], with double-quoted tokens read as `quotes` says.
pub fn parse_with(sql: &str, quotes: QuotedNames) -> Result<Parsed> {
    let tokens = tokenize_with(sql, quotes)?;
    let count = statement_ranges(&tokens).len();
    if count > 1 {
        return Err(EngineError::invalid(format!(
            "expected one statement, found {count}: run a script with sql -f (or split it first)"
        )));
    }
    let first = tokens.iter().find_map(|t| match &t.token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        Token::Whitespace(_) => None,
        _ => Some(Keyword::NoKeyword),
    });
    let statement = match first {
        None => return Err(EngineError::invalid("empty statement")),
        // SHOW TBLPROPERTIES is Delta's; SHOW TABLES, SHOW COLUMNS … are DataFusion's.
        Some(Keyword::SHOW) if !second_is(&tokens, "TBLPROPERTIES") => parse_sql(tokens.clone())?,
        Some(k) if DELTA_STATEMENTS.contains(&k) => ParsedStatement::Delta(k),
        // RESTORE is not one of sqlparser's keywords: its reader is Delta's.
        Some(Keyword::NoKeyword) if nth_is(&tokens, 0, "RESTORE") => {
            ParsedStatement::Delta(Keyword::NoKeyword)
        }
        Some(Keyword::INSERT) => {
            let mut parser = parser(tokens.clone());
            let insert = parse_insert(&mut parser).map_err(syntax)?;
            end_of_statement(&mut parser).map_err(syntax)?;
            ParsedStatement::Insert(insert)
        }
        Some(Keyword::MERGE) => {
            let mut parser = parser(tokens.clone());
            let merge = parse_merge(&mut parser).map_err(syntax)?;
            end_of_statement(&mut parser).map_err(syntax)?;
            ParsedStatement::Merge(merge)
        }
        Some(_) => parse_sql(tokens.clone())?,
    };
    check_numbers(&tokens)?;
    Ok(Parsed { statement, tokens })
}

/// Whether the statement's second word is `word`.
fn second_is(tokens: &[TokenWithSpan], word: &str) -> bool {
    nth_is(tokens, 1, word)
}

/// Whether the statement's `n`th token (whitespace aside) is the unquoted word `word`.
fn nth_is(tokens: &[TokenWithSpan], n: usize, word: &str) -> bool {
    tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .nth(n)
        .is_some_and(|t| {
            matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
        })
}

/// One statement by DataFusion's parser (sqlparser's, plus COPY, EXPLAIN, CREATE EXTERNAL TABLE).
fn parse_sql(tokens: Vec<TokenWithSpan>) -> Result<ParsedStatement> {
    let mut parser = DFParserBuilder::new(tokens)
        .with_dialect(&DeltaDialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .build()
        .map_err(syntax)?;
    let mut statements = parser.parse_statements().map_err(syntax)?;
    match (statements.pop_front(), statements.is_empty()) {
        (Some(st), true) => Ok(ParsedStatement::Sql(st)),
        _ => Err(EngineError::invalid("expected exactly one statement")),
    }
}

/// A numeric literal must fit a DOUBLE at least: `1e99999` (or 400 digits) is an error, not `inf`.
fn check_numbers(tokens: &[TokenWithSpan]) -> Result<()> {
    for t in tokens {
        if let Token::Number(n, _) = &t.token {
            if n.parse::<f64>().is_ok_and(|v| !v.is_finite()) {
                return Err(EngineError::invalid(format!(
                    "numeric literal {n} is out of range for DOUBLE"
                )));
            }
        }
    }
    Ok(())
}

fn end_of_statement(parser: &mut Parser) -> std::result::Result<(), ParserError> {
    while parser.consume_token(&Token::SemiColon) {}
    match parser.peek_token().token {
        Token::EOF => Ok(()),
        t => parser
            .expected("end of statement", parser.peek_token().clone())
            .map_err(|e| ParserError::ParserError(format!("{e} (found {t})"))),
    }
}

/// `INSERT (INTO | OVERWRITE) [TABLE] t [(c, …)] [REPLACE WHERE p] query`.
fn parse_insert(p: &mut Parser) -> std::result::Result<InsertStatement, ParserError> {
    p.expect_keyword_is(Keyword::INSERT)?;
    let overwrite = match p.parse_one_of_keywords(&[Keyword::INTO, Keyword::OVERWRITE]) {
        Some(Keyword::OVERWRITE) => true,
        Some(_) => false,
        None => return p.expected("INTO or OVERWRITE", p.peek_token()),
    };
    let _ = p.parse_keyword(Keyword::TABLE);
    let table = p.parse_object_name(false)?;
    // `(a, b)` is a column list unless it opens the query (`INSERT INTO t (SELECT …)`).
    let opens_query = matches!(
        p.peek_nth_token(1).token,
        Token::Word(ref w) if matches!(w.keyword, Keyword::SELECT | Keyword::WITH | Keyword::VALUES | Keyword::FROM)
    ) || matches!(p.peek_nth_token(1).token, Token::LParen);
    let columns = if p.peek_token().token == Token::LParen && !opens_query {
        p.expect_token(&Token::LParen)?;
        let cols = p.parse_comma_separated(|p| p.parse_identifier())?;
        p.expect_token(&Token::RParen)?;
        Some(cols)
    } else {
        None
    };
    let replace_where = if p.parse_keywords(&[Keyword::REPLACE, Keyword::WHERE]) {
        Some(p.parse_expr()?)
    } else {
        None
    };
    let source = p.parse_query()?;
    Ok(InsertStatement {
        overwrite,
        table,
        columns,
        replace_where,
        source,
    })
}

/// A word that is no keyword of sqlparser's (`EVOLUTION`).
fn parse_word(p: &mut Parser, word: &str) -> bool {
    match &p.peek_token().token {
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) => {
            p.next_token();
            true
        }
        _ => false,
    }
}

/// `MERGE [WITH SCHEMA EVOLUTION] INTO target [alias] USING source [alias] ON cond clause+`.
fn parse_merge(p: &mut Parser) -> std::result::Result<MergeStatement, ParserError> {
    p.expect_keyword_is(Keyword::MERGE)?;
    let schema_evolution = if p.parse_keywords(&[Keyword::WITH, Keyword::SCHEMA]) {
        if !parse_word(p, "EVOLUTION") {
            return p.expected("EVOLUTION", p.peek_token());
        }
        true
    } else {
        false
    };
    p.expect_keyword_is(Keyword::INTO)?;
    let target = p.parse_table_factor()?;
    p.expect_keyword_is(Keyword::USING)?;
    let source = p.parse_table_factor()?;
    p.expect_keyword_is(Keyword::ON)?;
    let on = p.parse_expr()?;
    let mut clauses = Vec::new();
    while p.parse_keyword(Keyword::WHEN) {
        let not = p.parse_keyword(Keyword::NOT);
        p.expect_keyword_is(Keyword::MATCHED)?;
        let kind = match (not, p.parse_keyword(Keyword::BY)) {
            (false, false) => MergeClauseKind::Matched,
            (true, false) => MergeClauseKind::NotMatched,
            (true, true) if p.parse_keyword(Keyword::TARGET) => MergeClauseKind::NotMatchedByTarget,
            (true, true) if p.parse_keyword(Keyword::SOURCE) => MergeClauseKind::NotMatchedBySource,
            _ => return p.expected("WHEN [NOT] MATCHED [BY TARGET | BY SOURCE]", p.peek_token()),
        };
        let predicate = if p.parse_keyword(Keyword::AND) {
            Some(p.parse_expr()?)
        } else {
            None
        };
        p.expect_keyword_is(Keyword::THEN)?;
        let action =
            match p.parse_one_of_keywords(&[Keyword::DELETE, Keyword::UPDATE, Keyword::INSERT]) {
                Some(Keyword::DELETE) => MergeWhenAction::Delete,
                Some(Keyword::UPDATE) => {
                    p.expect_keyword_is(Keyword::SET)?;
                    if p.consume_token(&Token::Mul) {
                        MergeWhenAction::UpdateAll
                    } else {
                        MergeWhenAction::Update(p.parse_comma_separated(Parser::parse_assignment)?)
                    }
                }
                Some(_) => {
                    if p.consume_token(&Token::Mul) {
                        MergeWhenAction::InsertAll
                    } else {
                        let columns = if p.consume_token(&Token::LParen) {
                            let cols = p.parse_comma_separated(|p| p.parse_identifier())?;
                            p.expect_token(&Token::RParen)?;
                            cols
                        } else {
                            Vec::new()
                        };
                        p.expect_keyword_is(Keyword::VALUES)?;
                        p.expect_token(&Token::LParen)?;
                        let values = p.parse_comma_separated(Parser::parse_expr)?;
                        p.expect_token(&Token::RParen)?;
                        MergeWhenAction::Insert { columns, values }
                    }
                }
                None => return p.expected("DELETE, UPDATE or INSERT", p.peek_token()),
            };
        clauses.push(MergeWhen {
            kind,
            predicate,
            action,
        });
    }
    Ok(MergeStatement {
        schema_evolution,
        target,
        source,
        on,
        clauses,
    })
}

/// Byte offset of a tokenizer location (1-based line and column, columns in characters).
pub(super) fn byte_offset(text: &str, line_starts: &[usize], at: Location) -> usize {
    let line = (at.line as usize).saturating_sub(1);
    let start = line_starts.get(line).copied().unwrap_or(text.len());
    let rest = text.get(start..).unwrap_or("");
    let col = (at.column as usize).saturating_sub(1);
    start
        + rest
            .char_indices()
            .nth(col)
            .map(|(i, _)| i)
            .unwrap_or(rest.len())
}

/// Byte offsets of non-decreasing locations (`None`: the end of the text), in one forward walk.
fn byte_offsets(text: &str, at: &[Option<Location>]) -> Vec<usize> {
    // The tokenizer counts lines from 1 at each `\n` and columns from 1 in characters.
    let mut chars = text.char_indices().peekable();
    let (mut line, mut col) = (1u64, 1u64);
    let mut out = Vec::with_capacity(at.len());
    for loc in at {
        let offset = match loc {
            None => text.len(),
            Some(loc) => loop {
                match chars.peek() {
                    None => break text.len(),
                    Some(&(i, _)) if (line, col) >= (loc.line, loc.column) => break i,
                    Some(&(_, c)) => {
                        chars.next();
                        if c == '\n' {
                            line += 1;
                            col = 1;
                        } else {
                            col += 1;
                        }
                    }
                }
            },
        };
        out.push(offset);
    }
    out
}

/// Byte offsets where the text's lines start.
pub(super) fn line_starts(text: &str) -> Vec<usize> {
    let mut out = vec![0];
    out.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    out
}

/// Token index ranges of the statements (at least one token other than whitespace or a comment
/// each), split at top-level `;`.
fn statement_ranges(tokens: &[TokenWithSpan]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut has_sql = false;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::SemiColon => {
                if has_sql {
                    out.push((start, i));
                }
                start = i + 1;
                has_sql = false;
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => has_sql = true,
        }
    }
    if has_sql {
        out.push((start, tokens.len()));
    }
    out
}

/// Splits a script into its statements at top-level semicolons (a `;` inside a string, quoted
/// identifier or comment does not split). Each statement is the script's own text between them,
/// trimmed; empty statements are dropped.
pub fn split_statements(script: &str) -> Result<Vec<String>> {
    let tokens = tokenize(script)?;
    let ranges = statement_ranges(&tokens);
    // Every range's two ends, in order, converted in one pass over the text (a script of many
    // statements on one line would otherwise be walked once per statement).
    let ends: Vec<Option<Location>> = ranges
        .iter()
        .flat_map(|&(a, b)| [a, b])
        .map(|i| tokens.get(i).map(|t| t.span.start))
        .collect();
    let offsets = byte_offsets(script, &ends);
    Ok(offsets
        .chunks(2)
        .filter_map(|pair| match pair {
            [a, b] => Some(script.get(*a..*b).unwrap_or("").trim().to_string()),
            _ => None,
        })
        .filter(|s| !s.is_empty())
        .collect())
}

/// Whether the shell's buffer `text` ends a statement: its last token other than whitespace and
/// comments is a top-level `;`. A `;` at the end of a line inside a comment or a string does not
/// end it (a string or comment still open is incomplete); text the tokenizer refuses for another
/// reason is complete, so that running it reports the error.
pub fn statement_complete(text: &str) -> bool {
    match Tokenizer::new(&DeltaDialect, text).tokenize() {
        Ok(tokens) => {
            tokens
                .iter()
                .rev()
                .find(|t| !matches!(t, Token::Whitespace(_)))
                == Some(&Token::SemiColon)
        }
        Err(e) => {
            let m = e.to_string();
            !(m.contains("Unterminated") || m.contains("EOF"))
        }
    }
}

/// Parses a query on its own (a session view's definition), with its [`word_uses`].
pub fn parse_query(sql: &str) -> Result<(Box<Query>, Vec<(String, bool)>)> {
    let tokens = tokenize(sql)?;
    let words = word_uses(&tokens);
    let mut parser = parser(tokens);
    let q = parser.parse_query().map_err(syntax)?;
    end_of_statement(&mut parser).map_err(syntax)?;
    Ok((q, words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_the_original_text() {
        let s =
            "SELECT 'a;b' -- c;\n, `x;` FROM t;\n\n/* ; */ DELETE FROM 'é;' WHERE s = 'it''s';;";
        assert_eq!(
            split_statements(s).unwrap(),
            vec![
                "SELECT 'a;b' -- c;\n, `x;` FROM t",
                "/* ; */ DELETE FROM 'é;' WHERE s = 'it''s'"
            ]
        );
        assert!(split_statements("-- only a comment;\n").unwrap().is_empty());
        // Many statements on one line, after a multi-line one, with multi-byte characters.
        assert_eq!(
            split_statements("SELECT\n'ü';SELECT 'é;' ;  SELECT 3;SELECT 4").unwrap(),
            vec!["SELECT\n'ü'", "SELECT 'é;'", "SELECT 3", "SELECT 4"]
        );
    }

    #[test]
    fn parses_insert_forms() {
        let p = parse("INSERT INTO './t' (a, b) REPLACE WHERE a > 1 SELECT 1, 2").unwrap();
        let ParsedStatement::Insert(i) = p.statement else {
            panic!("not an insert")
        };
        assert_eq!(i.columns.map(|c| c.len()), Some(2));
        assert!(i.replace_where.is_some());
        let p = parse("INSERT OVERWRITE TABLE t (SELECT 1)").unwrap();
        assert!(matches!(
            p.statement,
            ParsedStatement::Insert(InsertStatement {
                overwrite: true,
                columns: None,
                ..
            })
        ));
        assert!(parse("INSERT INTO t VALUES (1) garbage").is_err());
    }

    #[test]
    fn one_statement_only() {
        assert!(parse("SELECT 1; SELECT 2").is_err());
        assert!(parse("SELECT 1;").is_ok());
        assert!(parse("SELECT 1e999").is_err());
        assert!(matches!(
            parse("VACUUM t RETAIN 1 HOURS").unwrap().statement,
            ParsedStatement::Delta(Keyword::VACUUM)
        ));
        assert!(matches!(
            parse("restore table t to version as of 1")
                .unwrap()
                .statement,
            ParsedStatement::Delta(Keyword::NoKeyword)
        ));
        // A quoted "RESTORE" is a name, not the statement.
        assert!(parse("\"RESTORE\" t").is_err());
    }
}
