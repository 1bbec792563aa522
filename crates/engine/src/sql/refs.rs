//! Table references in SQL text: `'./path'` (a quoted path after FROM / JOIN / INTO / UPDATE / TABLE /
//! USING / MERGE INTO / DESCRIBE …), `delta.\`s3://bucket/t\``, or a registered name (`t` in
//! scenarios). Paths are replaced by generated identifiers so DataFusion can plan the statement;
//! `VERSION AS OF n` after a reference pins that reference to version `n`.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Word};

use super::session_objects::SessionObjects;
use crate::error::{EngineError, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct TableRef {
    /// Identifier used in the rewritten SQL.
    pub ident: String,
    pub location: String,
    pub version: Option<u64>,
    /// `TIMESTAMP AS OF '…'` as written; the session resolves it to `version` before planning.
    pub timestamp: Option<String>,
    /// A data file (or directory or glob) read in this format, not a Delta table.
    pub file: Option<super::file_tables::FileSource>,
}

#[derive(Debug, Clone)]
pub struct Rewritten {
    pub sql: String,
    pub tokens: Vec<Token>,
    pub refs: Vec<TableRef>,
}

pub fn tokenize(sql: &str) -> Result<Vec<Token>> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize()
        .map_err(|e| EngineError::invalid(format!("SQL syntax error: {e}")))?;
    for t in &tokens {
        match t {
            Token::Number(n, _) => check_number_literal(n)?,
            // Only literal kinds that `sql_text` writes back exactly are accepted.
            Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Whitespace(_) => {}
            Token::Word(w) if matches!(w.quote_style, None | Some('"') | Some('`')) => {}
            Token::Word(w) => {
                return Err(EngineError::invalid(format!(
                    "SQL syntax error: identifiers quoted with {:?} are not supported",
                    w.quote_style.unwrap_or(' ')
                )))
            }
            t if is_string_literal(t) => {
                return Err(EngineError::invalid(format!(
                    "SQL syntax error: this kind of string literal is not supported: {t}"
                )))
            }
            _ => {}
        }
    }
    Ok(tokens)
}

/// A string-like literal token (any quoting).
fn is_string_literal(t: &Token) -> bool {
    matches!(
        t,
        Token::SingleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
    )
}

/// A token as SQL text that tokenizes back to the same token. sqlparser's `Display` writes a
/// string's value between quotes without doubling the quotes inside (`'it''s'` prints as
/// `'it's'`, so `'x'' OR ''1''=''1'` would print as a predicate true for every row): every
/// re-assembly of statement text from tokens goes through here instead.
pub fn sql_text(t: &Token) -> String {
    fn quoted(open: char, close: char, v: &str) -> String {
        let doubled = format!("{close}{close}");
        format!("{open}{}{close}", v.replace(close, &doubled))
    }
    match t {
        Token::SingleQuotedString(s) => quoted('\'', '\'', s),
        Token::DoubleQuotedString(s) => quoted('"', '"', s),
        Token::NationalStringLiteral(s) => format!("N{}", quoted('\'', '\'', s)),
        Token::Word(w) => match w.quote_style {
            Some('"') => quoted('"', '"', &w.value),
            Some('`') => quoted('`', '`', &w.value),
            _ => w.value.clone(),
        },
        other => other.to_string(),
    }
}

/// A numeric literal must fit a DOUBLE at least: `1e99999` (or 400 digits) is an error, not `inf`.
fn check_number_literal(n: &str) -> Result<()> {
    if n.parse::<f64>().is_ok_and(|v| !v.is_finite()) {
        return Err(EngineError::invalid(format!(
            "numeric literal {n} is out of range for DOUBLE"
        )));
    }
    Ok(())
}

fn is_ws(t: &Token) -> bool {
    matches!(t, Token::Whitespace(_))
}

pub fn keyword_of(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

fn ident(name: &str) -> Token {
    Token::Word(Word {
        value: name.to_string(),
        quote_style: None,
        keyword: Keyword::NoKeyword,
    })
}

const REF_AFTER: &[&str] = &[
    "FROM",
    "JOIN",
    "INTO",
    "UPDATE",
    "TABLE",
    "USING",
    "DESCRIBE",
    "DETAIL",
    "HISTORY",
    "VACUUM",
    "OPTIMIZE",
    "TBLPROPERTIES",
    "OVERWRITE",
];

/// A statement's text when sqlparser prints it exactly: the printed text parses back to the same
/// tree. sqlparser's `Display` takes a `''` or `\'` inside a string for an escape already made and
/// does not escape it again, so `'a'''''` (a, two quotes) prints as `'a'''` (a, one quote). A rewrite
/// of the AST that must be printed goes through here, and is dropped (or the statement refused)
/// when the print is not exact.
pub fn print_exactly(statement: &datafusion::sql::sqlparser::ast::Statement) -> Option<String> {
    use datafusion::sql::sqlparser::parser::Parser;
    let text = statement.to_string();
    match Parser::parse_sql(&GenericDialect {}, &text) {
        Ok(back) if back.len() == 1 && back.first() == Some(statement) => Some(text),
        _ => None,
    }
}

/// Registers a file reference and returns its identifier: the file's stem when that reads well
/// (`'new.csv'` → `new`), else a generated one.
fn file_ref(
    refs: &mut Vec<TableRef>,
    path: &str,
    src: super::file_tables::FileSource,
    tokens: &[Token],
) -> String {
    if let Some(r) = refs
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
    let name =
        readable_name(stem, tokens, refs).unwrap_or_else(|| format!("__file_t{}", refs.len()));
    refs.push(TableRef {
        ident: name.clone(),
        location: path.to_string(),
        version: None,
        timestamp: None,
        file: Some(src),
    });
    name
}

/// A `read_xxx(…)` call's path, named options, and the token index after it.
type FileCall = (String, Vec<(String, String)>, usize);

/// The arguments of `read_xxx('path', name => value, …)` starting at the `(` at `i`: the path,
/// the named options, and the index after `)`. `None` when the call has another shape (left to
/// DataFusion, which reports it).
fn file_function_args(tokens: &[Token], mut i: usize) -> Result<Option<FileCall>> {
    let next = |i: &mut usize| -> Option<&Token> {
        while tokens.get(*i).is_some_and(is_ws) {
            *i += 1;
        }
        let t = tokens.get(*i);
        *i += 1;
        t
    };
    if next(&mut i) != Some(&Token::LParen) {
        return Ok(None);
    }
    let Some(Token::SingleQuotedString(path)) = next(&mut i).cloned() else {
        return Ok(None);
    };
    let mut options = Vec::new();
    loop {
        match next(&mut i) {
            Some(Token::RParen) => return Ok(Some((path, options, i))),
            Some(Token::Comma) => {}
            _ => return Ok(None),
        }
        let Some(Token::Word(k)) = next(&mut i).cloned() else {
            return Ok(None);
        };
        if next(&mut i) != Some(&Token::RArrow) {
            return Ok(None);
        }
        let v = match next(&mut i) {
            Some(Token::SingleQuotedString(v)) => v.clone(),
            Some(Token::Word(v)) => v.value.clone(),
            Some(Token::Number(v, _)) => v.clone(),
            _ => return Ok(None),
        };
        options.push((k.value, v));
    }
}

/// The name a path reference is planned under, as users see it in headers and errors
/// (`sum(orders.amount)`, "Valid fields are orders.id"): the path's last segment, lowercased, when
/// it is a plain identifier that is no SQL keyword, names no other reference and appears elsewhere
/// in the statement only as a qualifier (`orders.id`); a column, alias or CTE of that name keeps the
/// generated `__delta_tN`.
fn readable_name(location: &str, tokens: &[Token], refs: &[TableRef]) -> Option<String> {
    let last = super::bind::plain_name(location)?;
    let clash = refs.iter().any(|r| r.ident.eq_ignore_ascii_case(&last))
        // Used as a qualifier (`orders.id`) it means this table; any other use (an alias, a CTE,
        // a column of that name) could mean something else.
        || tokens.iter().enumerate().any(|(i, t)| {
            matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case(&last))
                && tokens.get(i + 1) != Some(&Token::Period)
        });
    (!clash).then_some(last)
}

/// Session views expanded in one statement, at most (a view naming itself would never end).
const MAX_VIEW_EXPANSIONS: usize = 64;

/// Rewrites path references. `named` maps registered names (e.g. `t`) to locations.
pub fn rewrite(
    sql: &str,
    named: &[(String, String)],
    objects: &SessionObjects,
) -> Result<Rewritten> {
    let mut tokens = tokenize(sql)?;
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut refs: Vec<TableRef> = Vec::new();
    let mut i = 0;
    let mut last_kw: Option<String> = None;
    let mut expansions = 0usize;
    while let Some(t) = tokens.get(i).cloned() {
        let t = &t;
        let mut replaced: Option<String> = None;
        let from = matches!(last_kw.as_deref(), Some("FROM" | "JOIN"));
        // A session view named in FROM/JOIN: its query, in parentheses under its name, is read
        // in place (the tokens are spliced in and rewritten like the rest).
        if let Token::Word(w) = t {
            if let Some(q) = objects
                .view(&w.value)
                .filter(|_| from && w.quote_style.is_none())
            {
                expansions += 1;
                if expansions > MAX_VIEW_EXPANSIONS {
                    return Err(EngineError::invalid(format!(
                        "view {} expands more than {MAX_VIEW_EXPANSIONS} times (does it name itself?)",
                        w.value
                    )));
                }
                let mut splice = vec![Token::LParen];
                splice.extend(tokenize(q)?);
                splice.push(Token::RParen);
                // Named after the view unless the statement gives it an alias of its own.
                let aliased = tokens.get(i + 1..).unwrap_or_default().iter().find(|t| !is_ws(t)).is_some_and(|t| {
                    matches!(t, Token::Word(a) if a.keyword == Keyword::AS || a.keyword == Keyword::NoKeyword)
                });
                if !aliased {
                    splice.extend([
                        Token::Whitespace(datafusion::sql::sqlparser::tokenizer::Whitespace::Space),
                        ident("AS"),
                        Token::Whitespace(datafusion::sql::sqlparser::tokenizer::Whitespace::Space),
                        ident(&w.value.to_ascii_lowercase()),
                    ]);
                }
                tokens.splice(i..=i, splice);
                continue;
            }
            if let Some((path, src)) = objects
                .file(&w.value)
                .filter(|_| from && w.quote_style.is_none())
            {
                let name = w.value.to_ascii_lowercase();
                if !refs.iter().any(|r| r.ident == name) {
                    refs.push(TableRef {
                        ident: name,
                        location: path.to_string(),
                        version: None,
                        timestamp: None,
                        file: Some(src.clone()),
                    });
                }
            }
        }
        match t {
            // A data file (`FROM 'new.csv'`) is read as a file, not a Delta table.
            Token::SingleQuotedString(s)
                if last_kw.as_deref() == Some("FROM") || last_kw.as_deref() == Some("JOIN") =>
            {
                if let Some(src) = super::file_tables::FileSource::from_extension(s) {
                    let name = file_ref(&mut refs, s, src, &tokens);
                    out.push(ident(&name));
                    i += 1;
                    last_kw = None;
                    continue;
                }
                replaced = Some(s.clone());
                i += 1;
            }
            Token::Word(w)
                if w.quote_style.is_none()
                    && matches!(tokens.get(i + 1), Some(Token::LParen))
                    && w.value.to_ascii_lowercase().starts_with("read_") =>
            {
                if let Some((path, options, next)) = file_function_args(&tokens, i + 1)? {
                    if let Some(src) =
                        super::file_tables::FileSource::from_function(&w.value, &options)?
                    {
                        let name = file_ref(&mut refs, &path, src, &tokens);
                        out.push(ident(&name));
                        i = next;
                        last_kw = None;
                        continue;
                    }
                }
            }
            Token::SingleQuotedString(s)
                if last_kw.as_deref().is_some_and(|k| REF_AFTER.contains(&k)) =>
            {
                replaced = Some(s.clone());
                i += 1;
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("delta") => {
                if let (Some(Token::Period), Some(Token::Word(p))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    if p.quote_style == Some('`') {
                        replaced = Some(p.value.clone());
                        i += 3;
                    }
                }
            }
            Token::Word(w) if last_kw.as_deref().is_some_and(|k| REF_AFTER.contains(&k)) => {
                if let Some((_, loc)) = named.iter().find(|(n, _)| n.eq_ignore_ascii_case(&w.value))
                {
                    if !refs.iter().any(|r| r.ident.eq_ignore_ascii_case(&w.value)) {
                        refs.push(TableRef {
                            ident: w.value.clone(),
                            location: loc.clone(),
                            version: None,
                            timestamp: None,
                            file: None,
                        });
                    }
                    let version = version_as_of(&tokens, i + 1)?;
                    if let Some((v, next)) = version {
                        if let Some(r) = refs
                            .iter_mut()
                            .find(|r| r.ident.eq_ignore_ascii_case(&w.value))
                        {
                            match v {
                                AsOf::Version(v) => r.version = Some(v),
                                AsOf::Timestamp(ts) => r.timestamp = Some(ts),
                            }
                        }
                        out.push(t.clone());
                        i = next;
                        last_kw = None;
                        continue;
                    }
                }
            }
            _ => {}
        }
        if let Some(location) = replaced {
            let (version, timestamp, next) = match version_as_of(&tokens, i)? {
                Some((AsOf::Version(v), n)) => (Some(v), None, n),
                Some((AsOf::Timestamp(ts), n)) => (None, Some(ts), n),
                None => (None, None, i),
            };
            let existing = refs
                .iter()
                .find(|r| {
                    r.location == location && r.version == version && r.timestamp == timestamp
                })
                .map(|r| r.ident.clone());
            let name = match existing {
                Some(n) => n,
                None => {
                    let n = readable_name(&location, &tokens, &refs)
                        .unwrap_or_else(|| format!("__delta_t{}", refs.len()));
                    refs.push(TableRef {
                        ident: n.clone(),
                        location,
                        version,
                        timestamp,
                        file: None,
                    });
                    n
                }
            };
            out.push(ident(&name));
            i = next;
            last_kw = None;
            continue;
        }
        if !is_ws(t) {
            last_kw = keyword_of(t);
        }
        out.push(t.clone());
        i += 1;
    }
    let sql = out.iter().map(sql_text).collect::<String>();
    // Long generated OR/AND chains: shallow and IN lists before anything plans them.
    if out.len() >= super::flatten::MIN_STATEMENT_TOKENS {
        if let Some(flat) = super::flatten::flatten_long_chains(&sql) {
            let tokens = tokenize(&flat)?;
            return Ok(Rewritten {
                sql: flat,
                tokens,
                refs,
            });
        }
    }
    Ok(Rewritten {
        sql,
        tokens: out,
        refs,
    })
}

/// Parses `VERSION AS OF <n>` starting at `i` (whitespace allowed). Returns (n, index after).
/// Time travel after a table reference.
#[derive(Debug, Clone, PartialEq)]
enum AsOf {
    Version(u64),
    Timestamp(String),
}

/// `VERSION AS OF n` or `TIMESTAMP AS OF '…'` at `i` (whitespace skipped): what and where the
/// reference continues.
fn version_as_of(tokens: &[Token], mut i: usize) -> Result<Option<(AsOf, usize)>> {
    let mut words = Vec::new();
    while words.len() < 4 {
        match tokens.get(i) {
            Some(t) if is_ws(t) => i += 1,
            Some(Token::Word(w)) if words.len() < 3 => {
                words.push(w.value.to_ascii_uppercase());
                i += 1;
            }
            Some(Token::Number(n, _)) if words.len() == 3 => {
                if words == ["VERSION", "AS", "OF"] {
                    let v = n
                        .parse()
                        .map_err(|_| EngineError::invalid(format!("bad version {n}")))?;
                    return Ok(Some((AsOf::Version(v), i + 1)));
                }
                break;
            }
            Some(Token::SingleQuotedString(ts)) if words.len() == 3 => {
                if words == ["TIMESTAMP", "AS", "OF"] {
                    return Ok(Some((AsOf::Timestamp(ts.clone()), i + 1)));
                }
                break;
            }
            _ => break,
        }
        if words
            .first()
            .is_some_and(|w| w != "VERSION" && w != "TIMESTAMP")
        {
            break;
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_paths_and_versions() {
        let r = rewrite(
            "SELECT count(*) FROM './data/x' VERSION AS OF 3 WHERE a = 'str'",
            &[],
            &SessionObjects::default(),
        )
        .unwrap();
        assert_eq!(
            r.refs,
            vec![TableRef {
                ident: "x".into(),
                location: "./data/x".into(),
                version: Some(3),
                timestamp: None,
                file: None,
            }]
        );
        assert!(r.sql.contains("FROM x WHERE a = 'str'"), "{}", r.sql);
        // The readable name yields to anything else in the statement of that name, and to
        // keywords; a qualifier of that name means the table.
        let r = rewrite("SELECT x FROM './data/x'", &[], &SessionObjects::default()).unwrap();
        assert_eq!(r.refs[0].ident, "__delta_t0");
        let r = rewrite(
            "SELECT * FROM './data/order'",
            &[],
            &SessionObjects::default(),
        )
        .unwrap();
        assert_eq!(r.refs[0].ident, "__delta_t0");
        let r = rewrite(
            "SELECT x.id FROM './data/x' JOIN './y/x' ON true",
            &[],
            &SessionObjects::default(),
        )
        .unwrap();
        assert_eq!(r.refs[0].ident, "x");
        assert_eq!(r.refs[1].ident, "__delta_t1");
        let r = rewrite(
            "INSERT INTO delta.`s3://b/t` SELECT 1",
            &[],
            &SessionObjects::default(),
        )
        .unwrap();
        assert_eq!(r.refs[0].location, "s3://b/t");
        let r = rewrite(
            "UPDATE t SET x = 1",
            &[("t".into(), "memory://m/t".into())],
            &SessionObjects::default(),
        )
        .unwrap();
        assert_eq!(r.refs[0].ident, "t");
        assert_eq!(r.sql, "UPDATE t SET x = 1");
    }
}
