//! Delta statements read from their tokens: CREATE TABLE [AS SELECT], CREATE VIEW, ALTER,
//! DESCRIBE [HISTORY | DETAIL], SHOW TBLPROPERTIES, VACUUM, OPTIMIZE. Their table references are
//! rewritten by [`super::refs`]; every other statement is planned from the parser's AST
//! ([`super::statement`], [`super::bind`]).

use super::describe;
use super::parser::{parse_create, Cursor};
use super::refs::{keyword_of, rewrite, Rewritten, TableRef};
use super::session::{Prepared, SqlSession};
use crate::error::{EngineError, Result};
use crate::ops::{create_table_txn, insert_txn, CreateTableSpec, InsertMode};

impl SqlSession {
    /// Phase one of a Delta statement still read from its tokens (CREATE, ALTER, DESCRIBE, SHOW, VACUUM, OPTIMIZE; `sql` is one statement, checked by the parser).
    pub(super) async fn prepare_delta(&self, sql: &str) -> Result<Prepared> {
        let mut rw = rewrite(sql, &self.named, &self.session_objects()?)?;
        rw.refs = self.resolve_as_of(rw.refs).await?;
        let first: Vec<String> = rw.tokens.iter().filter_map(keyword_of).take(2).collect();
        let first_kw = first.first().map(String::as_str).unwrap_or("");
        let second_kw = first.get(1).map(String::as_str).unwrap_or("");
        let fourth_kw = rw
            .tokens
            .iter()
            .filter_map(keyword_of)
            .nth(3)
            .unwrap_or_default();
        let third_kw = rw
            .tokens
            .iter()
            .filter_map(keyword_of)
            .nth(2)
            .unwrap_or_default();
        let session_object = match (second_kw, third_kw.as_str()) {
            ("VIEW" | "TEMP" | "TEMPORARY" | "EXTERNAL", _) => true,
            ("OR", "REPLACE") => matches!(
                fourth_kw.as_str(),
                "VIEW" | "TEMP" | "TEMPORARY" | "EXTERNAL"
            ),
            _ => false,
        };
        match (first_kw, second_kw) {
            ("CREATE", _) if session_object => Ok(Prepared::Done(self.define_object(sql)?)),
            ("CREATE", _) => self.create(&rw).await,
            ("DESCRIBE", _) | ("DESC", _) | ("SHOW", "TBLPROPERTIES") => {
                let mut c = Cursor::new(rw.tokens.clone());
                c.next();
                let what = if c.eat_kw("HISTORY") {
                    "history"
                } else if c.eat_kw("DETAIL") {
                    "detail"
                } else if c.eat_kw("TBLPROPERTIES") {
                    "properties"
                } else {
                    c.eat_kw("TABLE");
                    "describe"
                };
                let name = c.ident()?;
                let r = self.resolve_target(&rw, &name)?;
                let table = self.table(&r.location)?;
                let limit = if c.eat_kw("LIMIT") {
                    c.number()?.parse().ok()
                } else {
                    None
                };
                Ok(Prepared::Rows(
                    describe::run(&table, what, r.version, limit).await?,
                ))
            }
            ("VACUUM", _) => {
                let mut c = Cursor::new(rw.tokens.clone());
                c.next();
                let name = c.ident()?;
                let r = self.resolve_target(&rw, &name)?;
                let mut retention = None;
                let mut dry_run = false;
                while !c.at_end() {
                    if c.eat_kw("RETAIN") {
                        let hours: f64 = c
                            .number()?
                            .parse()
                            .map_err(|_| EngineError::invalid("RETAIN needs a number of hours"))?;
                        c.expect_kw("HOURS")?;
                        retention = Some((hours * 3_600_000.0) as i64);
                    } else if c.eat_kw("DRY") {
                        c.expect_kw("RUN")?;
                        dry_run = true;
                    } else {
                        return Err(EngineError::invalid(format!(
                            "unexpected {} in VACUUM",
                            c.describe()
                        )));
                    }
                }
                let table = self.table(&r.location)?;
                let res = crate::vacuum::vacuum(&table, retention, dry_run).await?;
                if res.files.is_empty() {
                    return Ok(Prepared::Done(format!(
                        "VACUUM: nothing {} (every file is referenced or within the retention)",
                        if dry_run {
                            "would be deleted"
                        } else {
                            "to delete"
                        }
                    )));
                }
                Ok(Prepared::Rows(vec![describe::vacuum_batch(&res)?]))
            }
            ("OPTIMIZE", _) => Ok(Prepared::Write(Box::new(
                super::dml::prepare_optimize(self, &rw.refs, rw.tokens.clone()).await?,
            ))),
            ("ALTER", _) => Ok(Prepared::Write(Box::new(
                super::alter::prepare_alter(self, &rw.refs, rw.tokens.clone()).await?,
            ))),
            _ => Ok(Prepared::Rows(self.query_text(&rw.refs, &rw.sql).await?)),
        }
    }

    async fn create(&self, rw: &Rewritten) -> Result<Prepared> {
        let mut c = Cursor::new(rw.tokens.clone());
        let st = parse_create(&mut c)?;
        let location = match (rw.refs.iter().find(|r| r.ident.eq_ignore_ascii_case(&st.target)), &st.location) {
            (Some(r), _) => r.location.clone(),
            (None, Some(loc)) => loc.clone(),
            (None, None) => {
                return Err(EngineError::invalid(format!(
                    "CREATE TABLE {}: give the table a path, e.g. CREATE TABLE './data/{}' (...), or add LOCATION '...'",
                    st.target, st.target
                )))
            }
        };
        let table = self.table(&location)?;
        if table.exists().await? {
            if st.if_not_exists {
                return Ok(Prepared::Done(format!("table {location} already exists")));
            }
            return Err(EngineError::invalid(format!(
                "a table already exists at {location}"
            )));
        }
        let other_refs: Vec<TableRef> = rw
            .refs
            .iter()
            .filter(|r| r.location != location)
            .cloned()
            .collect();
        let (schema, rows) = match &st.as_query {
            Some(q) => {
                let ctx = self.context(&other_refs, None).await?;
                let df = ctx.sql(q).await?;
                let arrow_schema = df.schema().as_arrow().clone();
                let batches = df.collect().await?;
                let mut fields = Vec::new();
                for f in arrow_schema.fields() {
                    fields.push(delta_rlc_protocol::schema::StructField {
                        name: f.name().clone(),
                        data_type: crate::arrow_conv::arrow_to_delta_type(f.data_type())?,
                        nullable: true,
                        metadata: Default::default(),
                    });
                }
                let schema = match &st.columns {
                    Some(cols) => cols.clone(),
                    None => delta_rlc_protocol::schema::StructType { fields },
                };
                (schema, Some(batches))
            }
            None => (st.columns.clone().unwrap_or_default(), None),
        };
        let spec = CreateTableSpec {
            schema,
            partition_by: st.partition_by.clone(),
            cluster_by: st.cluster_by.clone(),
            properties: st.properties.clone(),
            name: None,
            description: None,
        };
        let mut txn = create_table_txn(&table, &spec).await?;
        if let Some(batches) = rows {
            txn.operation = "CREATE TABLE AS SELECT".into();
            txn = insert_txn(txn, &batches, InsertMode::Append).await?;
        }
        Ok(Prepared::Write(Box::new(txn)))
    }
}
