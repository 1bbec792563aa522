//! Where Spark's lexer and this engine's (sqlparser's generic dialect) would cut the same text
//! into different tokens, so that text one of them reads as a string or a comment the other reads
//! as code. Such text is refused with one line, in every statement, script and expression string
//! (SQL, Rust and Python alike), before anything is planned:
//!
//! - a `--` comment holding a lone carriage return: Spark ends the comment there, this lexer at
//!   the line feed;
//! - a `--` comment whose backslash is followed by the line feed: Spark's comment goes on over
//!   the line break (`'--' ('\\\n' | ~[\r\n])*`), this lexer's ends;
//! - a string literal ending in an odd run of backslashes (`'a\'`): in Spark `\'` is an escaped
//!   quote and the string goes on, so the text after it is string there and code here;
//! - a number run into a word (`1or`, `1e1and`, `10Lor`): one name to Spark's lexer (a name may
//!   begin with a digit), a number and a keyword here; a typed literal's suffix (`1.5D`) is not a
//!   word here;
//! - an escaped string `E'…'`: a name and a string to Spark;
//! - `0x41`: one name to Spark, a binary literal here (`X'41'` is one to both).
//!
//! It runs on the tokens as lexed, before `literals` turns typed literals into casts.
//!
//! What both lexers cut alike but read to different values: `"x"` ([`double_quoted`]) is refused
//! in SQL statements (a string to Spark, a name here); a backslash escape inside a string and
//! `'it''s'` are documented differences of the dialect (docs/sql.md) in statements. All three are
//! refused in rules stored in the log (`portable::unportable_syntax`), which Spark wrote or reads.

use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// The first place where Spark would tokenize `tokens`' text differently, as a one-line reason.
pub fn spark_cuts_differently(tokens: &[TokenWithSpan]) -> Option<String> {
    let mut prev: Option<&Token> = None;
    for t in tokens {
        let reason = match &t.token {
            Token::Whitespace(Whitespace::SingleLineComment { comment, .. }) => {
                let body = comment.trim_end_matches(['\r', '\n']);
                if body.contains('\r') {
                    Some("a -- comment holds a carriage return (Spark ends the comment there, this parser at the line feed): end the comment with a new line".to_string())
                } else if comment.ends_with("\\\n") {
                    Some("a -- comment ends in a backslash (Spark's comment goes on over the line break, this parser's ends): end the comment with another character".to_string())
                } else {
                    None
                }
            }
            // `E'…'` is a name and a string to Spark (an unsupported typed literal), an
            // escaped string here.
            Token::EscapedStringLiteral(s) => Some(format!(
                "the escaped string E'{s}' (Spark reads the name E and a string): write the characters themselves"
            )),
            Token::SingleQuotedString(s) | Token::NationalStringLiteral(s)
                if ends_in_escape(s) =>
            {
                Some(format!(
                    "the string literal '{s}' ends in a backslash (Spark reads \\' as an escaped quote and the string going on): end it with || chr(92) instead"
                ))
            }
            // `0x41` is one name to Spark's lexer (a name may begin with a digit), a binary
            // literal here; `X'41'` is a binary literal to both. The two are the same token
            // here and differ in length: `0x` adds two characters to the digits, `X''` three.
            Token::HexStringLiteral(s) if span_len(t) == Some(s.chars().count() + 2) => Some(format!(
                "0x{s} (Spark reads it as a name, this parser as a binary literal): write X'{s}' for the bytes"
            )),
            // A typed literal's suffix (`5S`) is Spark's own literal, read by `literals` (or
            // refused by name in stored rules), not a name.
            // `10Lor`: the L is inside the number token here, so any word after it is run in.
            Token::Word(w) if w.quote_style.is_none() => match prev {
                Some(Token::Number(n, long)) if *long || !super::literals::is_typed_suffix(&w.value) => Some(format!(
                    "the number {n} runs into the word {} (Spark reads {n}{} as one name): put a space between them",
                    w.value, w.value
                )),
                _ => None,
            },
            _ => None,
        };
        if reason.is_some() {
            return reason;
        }
        prev = Some(&t.token);
    }
    None
}

/// The number of characters a token spans, when it lies on one line.
fn span_len(t: &TokenWithSpan) -> Option<usize> {
    let (a, b) = (t.span.start, t.span.end);
    (a.line == b.line && b.column >= a.column)
        .then(|| usize::try_from(b.column - a.column).ok())
        .flatten()
}

/// The first double-quoted token (`"x"`) as a one-line reason. Spark reads it as a string
/// literal (its ANSI identifier setting is off by default), DataFusion and sqlparser's generic
/// dialect as a name, so `DELETE … WHERE s = "s"` deletes the matching rows in Spark and every
/// row with a non-NULL `s` here. A SQL statement, whose meaning is Spark's, refuses it; deltalake's
/// QueryBuilder and its predicate strings keep DataFusion's reading (a name), as deltalake does.
pub fn double_quoted(tokens: &[TokenWithSpan]) -> Option<String> {
    tokens.iter().find_map(|t| match &t.token {
        Token::Word(w) if w.quote_style == Some('"') => {
            let v: String = w.value.chars().take(40).collect();
            Some(format!(
                "\"{v}\" is a string in Spark and a name here: write `{v}` for the name or '{v}' for the string"
            ))
        }
        _ => None,
    })
}

/// The first string literal holding a backslash that Spark reads as an escape, as a one-line
/// reason. Spark unescapes `\n`, `\t`, `\\`, `\'`, `\u0041`, octal `\101` … and drops the
/// backslash before any other character, except before `%` and `_` (kept as written, for LIKE);
/// here a backslash is a character. So `WHERE s = 'a\\b'` matched `a\b` in Spark and `a\\b`
/// here, and `SET s = 'a\nb'` stored a line break in Spark. A SQL statement refuses it; deltalake's
/// QueryBuilder and predicate strings keep DataFusion's reading, as deltalake does.
pub fn backslash_escape(tokens: &[TokenWithSpan]) -> Option<String> {
    tokens.iter().find_map(|t| match &t.token {
        Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) if escapes(s) => {
            let shown: String = s.chars().take(40).collect();
            Some(format!(
                "the string literal '{shown}' holds a backslash escape (Spark reads \\n as a line break, \\\\ as one backslash; here each is two characters): write chr(92) for a backslash, chr(10) for a line break"
            ))
        }
        _ => None,
    })
}

/// Whether a backslash in `s` is one Spark would read as (or drop for) an escape.
fn escapes(s: &str) -> bool {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('%' | '_') => {}
                _ => return true,
            }
        }
    }
    false
}

/// An odd run of backslashes at the end: the last one would escape the closing quote in Spark.
fn ends_in_escape(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    fn verdict(sql: &str) -> Option<String> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        spark_cuts_differently(&tokens)
    }

    #[test]
    fn text_spark_would_cut_elsewhere_is_named() {
        for (sql, needle) in [
            (
                "v = 'a\\' OR id = 2 -- '",
                "ends in a backslash (Spark reads",
            ),
            ("v = 'a\\\\\\' OR 1 = 1", "ends in a backslash (Spark reads"),
            (
                "id = 2 -- note \\\nOR id = 3",
                "comment ends in a backslash",
            ),
            ("id = 2 --\rOR id = 3", "carriage return"),
            ("id=1or id=2", "runs into the word or"),
            ("id=1e1and v='a'", "runs into the word and"),
            ("id = 10Lor 1 = 1", "runs into the word or"),
            ("v = E'a'", "escaped string"),
            ("b = 0x41", "write X'41'"),
            ("b = 0xA or 1 = 1", "write X'A'"),
        ] {
            let got = verdict(sql).unwrap_or_else(|| panic!("{sql:?} accepted"));
            assert!(got.contains(needle), "{sql:?}: {got}");
        }
    }

    #[test]
    fn text_both_lexers_cut_alike_passes() {
        for sql in [
            "v = 'a\\\\' AND id = 1",
            "v = 'it''s' -- a comment\nOR id = 3",
            "v LIKE 'a\\%b'",
            "id = 1 OR id = 2 /* note \\ */",
            "x1 = 2 AND `1or` = 3",
            "s <> 5S AND d = 1.5d",
            "id = 1\r\nOR id = 2 -- windows line end\r\n",
            "id = 1 -- the end \\",
            "id = 1 -- a backslash, then a windows line end \\\r\n",
            "id = 10L AND s = 5S",
            "b = X'41' AND c = x'0a'",
        ] {
            assert_eq!(verdict(sql), None, "{sql:?}");
        }
    }

    #[test]
    fn a_backslash_escape_in_a_string_is_named() {
        let tokens = |sql: &str| {
            Tokenizer::new(&GenericDialect {}, sql)
                .tokenize_with_location()
                .unwrap()
        };
        for sql in [
            "s = 'a\\b'",
            "s = 'a\\nb'",
            "s = 'a\\\\%'",
            "s = N'\\u0041x'",
        ] {
            assert!(backslash_escape(&tokens(sql)).is_some(), "{sql:?}");
        }
        for sql in [
            "s LIKE 'a\\%b'",
            "s LIKE 'a\\_b'",
            "s = 'plain' AND `a\\b` = 1",
        ] {
            assert_eq!(backslash_escape(&tokens(sql)), None, "{sql:?}");
        }
    }

    #[test]
    fn a_double_quoted_token_is_named_with_both_readings() {
        let tokens = |sql: &str| {
            Tokenizer::new(&GenericDialect {}, sql)
                .tokenize_with_location()
                .unwrap()
        };
        let got = double_quoted(&tokens("DELETE FROM t WHERE s = \"s\"")).unwrap();
        assert!(
            got.contains("write `s` for the name or 's' for the string"),
            "{got}"
        );
        for sql in ["SELECT `s`, 's' FROM t", "SELECT 'a\"b' AS x"] {
            assert_eq!(double_quoted(&tokens(sql)), None, "{sql:?}");
        }
    }
}
