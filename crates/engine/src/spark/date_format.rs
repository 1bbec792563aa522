//! `date_format(ts, pattern)` with Spark's datetime pattern. DataFusion's `date_format` (an alias
//! of `to_char`) reads chrono's `%Y-%m-%d`, and copies any other character: Spark's
//! `date_format(d, 'yyyy-MM-dd')` gave the text `yyyy-MM-dd`, which an UPDATE stored on every
//! row. The pattern is translated into chrono's for the letters whose output chrono writes
//! alike (numbers with Spark's padding, English month and day names, AM/PM, 3/6/9 fraction
//! digits) and refused with one line naming the letter otherwise, never formatted otherwise.
//! The pattern must be a literal (a computed one is refused). Quoted text (`'T'`) and other
//! characters are copied, as in Spark; an escaped quote (`''`), Spark's optional sections
//! (`[...]`) and its reserved `{ } #` are refused. Years outside 0-9999 are written as chrono
//! writes them (`+10000`; Spark: `10000`), a known difference (docs/sql.md).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{plan_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::rewrite::type_of;

/// The chrono format of Spark pattern `p`, or why it has none.
pub fn chrono_format(p: &str) -> std::result::Result<String, String> {
    let mut out = String::new();
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '\'' {
            // Quoted text up to the next quote. An escaped quote (`''`) is refused: Spark's
            // rewriting of quoted sections writes `''''` as one quote where Java's rule gives
            // two (red team helper-39), so neither reading is safe to copy.
            if chars.get(i + 1) == Some(&'\'') {
                return Err(quoted_quote(p));
            }
            i += 1;
            loop {
                match (chars.get(i), chars.get(i + 1)) {
                    (Some('\''), Some('\'')) => return Err(quoted_quote(p)),
                    (Some('\''), _) => {
                        i += 1;
                        break;
                    }
                    (Some(ch), _) => {
                        push_literal(&mut out, *ch);
                        i += 1;
                    }
                    (None, _) => return Err(format!("the pattern {p:?} has an unclosed quote")),
                }
            }
            continue;
        }
        // Spark's optional sections (`[...]`) and reserved characters (`{ } #`).
        if matches!(c, '[' | ']' | '{' | '}' | '#') {
            return Err(format!(
                "date_format: {c:?} in the pattern {p:?} is an optional section or reserved in Spark's patterns (quote it: '{c}')"
            ));
        }
        if !c.is_ascii_alphabetic() {
            push_literal(&mut out, c);
            i += 1;
            continue;
        }
        let mut n = 1;
        while chars.get(i + n) == Some(&c) {
            n += 1;
        }
        let spec = match (c, n) {
            ('y', 1) => "%-Y",
            ('y', 2) => "%y",
            ('y', 4) => "%Y",
            ('M' | 'L', 1) => "%-m",
            ('M' | 'L', 2) => "%m",
            ('M' | 'L', 3) => "%b",
            ('M' | 'L', 4) => "%B",
            ('d', 1) => "%-d",
            ('d', 2) => "%d",
            ('D', 1) => "%-j",
            ('D', 3) => "%j",
            ('H', 1) => "%-H",
            ('H', 2) => "%H",
            ('h', 1) => "%-I",
            ('h', 2) => "%I",
            ('m', 1) => "%-M",
            ('m', 2) => "%M",
            ('s', 1) => "%-S",
            ('s', 2) => "%S",
            ('S', 3) => "%3f",
            ('S', 6) => "%6f",
            ('S', 9) => "%9f",
            ('a', 1) => "%p",
            ('E', 1..=3) => "%a",
            ('E', 4) => "%A",
            _ => {
                let run: String = std::iter::repeat_n(c, n).collect();
                return Err(format!(
                    "date_format: the pattern letters {run} in {p:?} are not supported (supported: y yy yyyy, M MM MMM MMMM, d dd, D DDD, H HH, h hh, m mm, s ss, SSS SSSSSS SSSSSSSSS, a, E EEE EEEE, quoted text)"
                ));
            }
        };
        out.push_str(spec);
        i += n;
    }
    Ok(out)
}

fn quoted_quote(p: &str) -> String {
    format!("date_format: the pattern {p:?} quotes a quote ('') (add the quote with || instead)")
}

fn push_literal(out: &mut String, c: char) {
    match c {
        '%' => out.push_str("%%"),
        c => out.push(c),
    }
}

/// `f` (DataFusion's `to_char`, which `date_format` names) with Spark's pattern read, when its
/// first argument is a date or timestamp; `f` itself (Ok(Err)) when it is not such a call; an
/// error for a pattern Spark reads otherwise than chrono could write it.
pub fn spark_date_format(
    f: ScalarFunction,
    schema: &DFSchema,
) -> Result<std::result::Result<Expr, ScalarFunction>> {
    let dated = f
        .args
        .first()
        .and_then(|a| type_of(a, schema))
        .is_some_and(|t| {
            matches!(
                t,
                DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)
            )
        });
    if f.name() != "to_char" || f.args.len() != 2 || !dated {
        return Ok(Err(f));
    }
    let pattern = match f.args.get(1) {
        Some(Expr::Literal(
            ScalarValue::Utf8(Some(p))
            | ScalarValue::LargeUtf8(Some(p))
            | ScalarValue::Utf8View(Some(p)),
            _,
        )) => p.clone(),
        _ => return plan_err!("date_format: the pattern must be a string literal"),
    };
    let chrono = match chrono_format(&pattern) {
        Ok(c) => c,
        Err(e) => return plan_err!("{e}"),
    };
    let mut args = f.args.into_iter();
    let Some(x) = args.next() else {
        return plan_err!("date_format takes two arguments");
    };
    Ok(Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(SparkDateFormat {
            signature: Signature::any(2, Volatility::Immutable),
        })),
        vec![x, Expr::Literal(ScalarValue::Utf8(Some(chrono)), None)],
    ))))
}

/// DataFusion's `to_char` under a name the rewrite does not translate again (its pattern is
/// chrono's already).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkDateFormat {
    signature: Signature,
}

impl ScalarUDFImpl for SparkDateFormat {
    fn name(&self) -> &str {
        "spark_date_format"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        datafusion::functions::datetime::to_char().invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_patterns_become_chronos() {
        assert_eq!(chrono_format("yyyy-MM-dd").unwrap(), "%Y-%m-%d");
        assert_eq!(
            chrono_format("yyyy/MM/dd HH:mm:ss.SSS EEE MMM a hh").unwrap(),
            "%Y/%m/%d %H:%M:%S.%3f %a %b %p %I"
        );
        assert_eq!(
            chrono_format("yyyy-MM-dd'T'HH:mm").unwrap(),
            "%Y-%m-%dT%H:%M"
        );
        assert_eq!(chrono_format("'at' d%").unwrap(), "at %-d%%");
        assert_eq!(chrono_format("'[x]' y").unwrap(), "[x] %-Y");
        for bad in [
            "YYYY", "yyy", "SS", "z", "'open", "Q", "u", "DD", "MMMMM", "''", "''''", "'it''s'",
            "[yyyy]", "{", "#", "yyyy]",
        ] {
            assert!(chrono_format(bad).is_err(), "{bad}");
        }
    }
}
