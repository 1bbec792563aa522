//! What a session defines for its later statements: views (`CREATE [OR REPLACE] [TEMP] VIEW v AS
//! query`) and external tables over data files (`CREATE EXTERNAL TABLE e STORED AS CSV|PARQUET|JSON
//! LOCATION 'path' [OPTIONS ('format.has_header' 'false', 'format.delimiter' ';')]`). Nothing is
//! written: they live as long as the session (a script, the shell). A view is kept as its query's
//! text and expanded where it is named, so the Delta tables it reads are read at each statement's
//! snapshot.

use datafusion::sql::parser::{DFParser, Statement as DFStatement};

use super::file_tables::FileSource;
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

    /// Defines a view: `query` is its text as written (parsed where the view is named).
    pub fn define_view(&mut self, name: &str, query: &str, or_replace: bool) -> Result<String> {
        let name = name.to_ascii_lowercase();
        if query.trim().is_empty() {
            return Err(EngineError::invalid("CREATE VIEW: the query is missing"));
        }
        if self.defined(&name) && !or_replace {
            return Err(EngineError::invalid(format!(
                "{name} is already defined in this session (use CREATE OR REPLACE VIEW)"
            )));
        }
        self.views.retain(|(n, _)| *n != name);
        self.files.retain(|(n, _, _)| *n != name);
        self.views.push((name.clone(), query.trim().to_string()));
        Ok(format!("view {name} defined for this session"))
    }

    /// Defines an external table from its statement as written (DataFusion's parser reads it).
    pub fn define_external(&mut self, sql: &str) -> Result<String> {
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
        o.define_view("v", "SELECT * FROM './t' WHERE id > 1", false)
            .unwrap();
        assert_eq!(o.view("V"), Some("SELECT * FROM './t' WHERE id > 1"));
        assert!(o.define_view("v", "SELECT 1", false).is_err());
        o.define_view("V", "SELECT 2", true).unwrap();
        assert_eq!(o.view("v"), Some("SELECT 2"));
        o.define_external("CREATE EXTERNAL TABLE e STORED AS CSV LOCATION 'x.txt' OPTIONS ('format.has_header' 'false', 'format.delimiter' ';')").unwrap();
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
            .define_external("CREATE EXTERNAL TABLE f STORED AS AVRO LOCATION 'x'")
            .is_err());
    }
}
