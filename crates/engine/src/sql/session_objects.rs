//! What a session defines for its later statements: views (`CREATE [OR REPLACE] [TEMP] VIEW v AS
//! query`) and external tables over data files (`CREATE EXTERNAL TABLE e STORED AS CSV|PARQUET|JSON
//! LOCATION 'path' [OPTIONS ('format.has_header' 'false', 'format.delimiter' ';')]`). Nothing is
//! written: they live as long as the session (a script, the shell). A view is kept as its query's
//! text and expanded where it is named, so the Delta tables it reads are read at each statement's
//! snapshot.

use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::file_tables::FileSource;
use super::refs::{keyword_of, tokenize};
use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Default)]
pub struct SessionObjects {
    /// (lowercase name, query text as written).
    pub views: Vec<(String, String)>,
    /// (lowercase name, path, format).
    pub files: Vec<(String, String, FileSource)>,
}

impl SessionObjects {
    pub fn view(&self, name: &str) -> Option<&str> {
        self.views
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, q)| q.as_str())
    }

    pub fn file(&self, name: &str) -> Option<(&str, &FileSource)> {
        self.files
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, p, f)| (p.as_str(), f))
    }

    fn defined(&self, name: &str) -> bool {
        self.view(name).is_some() || self.file(name).is_some()
    }

    /// Defines what `sql` (a CREATE VIEW or CREATE EXTERNAL TABLE, as written) creates; returns a
    /// message for the user.
    pub fn define(&mut self, sql: &str) -> Result<String> {
        let tokens = tokenize(sql)?;
        let words: Vec<String> = tokens.iter().filter_map(keyword_of).take(6).collect();
        let word = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
        if word(1) == "EXTERNAL" {
            return self.define_external(sql);
        }
        // CREATE [OR REPLACE] [TEMP | TEMPORARY] VIEW name AS query
        let mut i = 1;
        let replace = word(1) == "OR" && word(2) == "REPLACE";
        if replace {
            i += 2;
        }
        if matches!(word(i), "TEMP" | "TEMPORARY") {
            i += 1;
        }
        if word(i) != "VIEW" {
            return Err(EngineError::invalid(
                "expected CREATE [OR REPLACE] [TEMP] VIEW name AS query",
            ));
        }
        // The name is the token after VIEW; the query is everything after the AS that follows it.
        let mut seen_view = false;
        let mut name: Option<String> = None;
        let mut query_start = None;
        for (k, t) in tokens.iter().enumerate() {
            if matches!(t, Token::Whitespace(_)) {
                continue;
            }
            if !seen_view {
                seen_view = keyword_of(t).as_deref() == Some("VIEW");
                continue;
            }
            match (&name, t) {
                (None, Token::Word(w)) => name = Some(w.value.to_ascii_lowercase()),
                (Some(_), t) if keyword_of(t).as_deref() == Some("AS") => {
                    query_start = Some(k + 1);
                    break;
                }
                _ => return Err(EngineError::invalid(
                    "CREATE VIEW: expected a name and AS query (a column list is not supported)",
                )),
            }
        }
        let (Some(name), Some(start)) = (name, query_start) else {
            return Err(EngineError::invalid(
                "CREATE VIEW: expected a name and AS query",
            ));
        };
        let query: String = tokens
            .get(start..)
            .unwrap_or_default()
            .iter()
            .map(super::refs::sql_text)
            .collect::<String>()
            .trim()
            .trim_end_matches(';')
            .to_string();
        if query.is_empty() {
            return Err(EngineError::invalid("CREATE VIEW: the query is missing"));
        }
        if self.defined(&name) && !replace {
            return Err(EngineError::invalid(format!(
                "{name} is already defined in this session (use CREATE OR REPLACE VIEW)"
            )));
        }
        self.views.retain(|(n, _)| *n != name);
        self.files.retain(|(n, _, _)| *n != name);
        self.views.push((name.clone(), query));
        Ok(format!("view {name} defined for this session"))
    }

    fn define_external(&mut self, sql: &str) -> Result<String> {
        let mut stmts = DFParser::parse_sql(sql)
            .map_err(|e| EngineError::invalid(format!("SQL syntax error: {e}")))?;
        let Some(DFStatement::CreateExternalTable(ext)) = stmts.pop_front() else {
            return Err(EngineError::invalid("expected CREATE EXTERNAL TABLE"));
        };
        let name = ext.name.to_string().to_ascii_lowercase();
        let mut options: Vec<(String, String)> = Vec::new();
        for (k, v) in &ext.options {
            let k = k.trim_start_matches("format.").to_string();
            let v = v.to_string().trim_matches('\'').to_string();
            let k = if k == "has_header" {
                "header".to_string()
            } else {
                k
            };
            options.push((k, v));
        }
        let function = match ext.file_type.to_ascii_uppercase().as_str() {
            "CSV" => "read_csv",
            "PARQUET" => "read_parquet",
            "JSON" | "NDJSON" => "read_json",
            other => {
                return Err(EngineError::Unsupported(format!(
                    "CREATE EXTERNAL TABLE … STORED AS {other} (supported: CSV, PARQUET, JSON)"
                )))
            }
        };
        let src = FileSource::from_function(function, &options)?
            .ok_or_else(|| EngineError::Internal("file function without a format".into()))?;
        if self.defined(&name) && !ext.or_replace {
            return Err(EngineError::invalid(format!(
                "{name} is already defined in this session"
            )));
        }
        self.views.retain(|(n, _)| *n != name);
        self.files.retain(|(n, _, _)| *n != name);
        let [location] = ext.locations.as_slice() else {
            return Err(EngineError::invalid(
                "CREATE EXTERNAL TABLE: give exactly one LOCATION (a file, a directory or a glob)",
            ));
        };
        self.files.push((name.clone(), location.clone(), src));
        Ok(format!("external table {name} defined for this session"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_and_external_tables_are_defined_once() {
        let mut o = SessionObjects::default();
        o.define("CREATE VIEW v AS SELECT * FROM './t' WHERE id > 1")
            .unwrap();
        assert_eq!(o.view("V"), Some("SELECT * FROM './t' WHERE id > 1"));
        assert!(o.define("CREATE VIEW v AS SELECT 1").is_err());
        o.define("CREATE OR REPLACE TEMP VIEW v AS SELECT 2")
            .unwrap();
        assert_eq!(o.view("v"), Some("SELECT 2"));
        o.define("CREATE EXTERNAL TABLE e STORED AS CSV LOCATION 'x.txt' OPTIONS ('format.has_header' 'false', 'format.delimiter' ';')").unwrap();
        assert_eq!(
            o.file("e"),
            Some((
                "x.txt",
                &FileSource::Csv {
                    header: false,
                    delimiter: b';'
                }
            ))
        );
        assert!(o
            .define("CREATE EXTERNAL TABLE f STORED AS AVRO LOCATION 'x'")
            .is_err());
    }
}
