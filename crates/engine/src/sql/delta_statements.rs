//! Delta's own statements, read with sqlparser's parser primitives ([`super::parser::Cursor`]):
//! CREATE TABLE [AS SELECT], CREATE VIEW, CREATE EXTERNAL TABLE, ALTER TABLE, DESCRIBE [HISTORY |
//! DETAIL], SHOW TBLPROPERTIES, VACUUM, OPTIMIZE and RESTORE. Tables are bound by [`super::bind::Binder`],
//! queries parsed and planned from their AST, like every other statement.

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;

use super::bind::{Binder, TableRef};
use super::describe;
use super::parser::{parse_create, CreateStatement, Cursor};
use super::session::{Prepared, SqlSession};
use crate::error::{EngineError, Result};
use crate::ops::create::replace_table_txn;
use crate::ops::{create_table_txn, insert_txn, CreateTableSpec, InsertMode};

/// A Delta statement as read: everything parsed and bound before any I/O, so the parser (which
/// is not `Send`) never lives across an await.
enum DeltaStatement {
    DefineExternal,
    DefineView {
        name: String,
        text: String,
        or_replace: bool,
    },
    Create {
        st: CreateStatement,
        refs: Vec<TableRef>,
        /// `CREATE OR REPLACE TABLE`: an existing table is replaced in one commit.
        or_replace: bool,
    },
    Describe {
        what: describe::Describe,
        target: TableRef,
        limit: Option<usize>,
    },
    /// `VACUUM t [LITE | FULL] [RETAIN n HOURS] [DRY RUN]` (Delta Spark's grammar; FULL is the
    /// default).
    Vacuum {
        target: TableRef,
        retention: Option<i64>,
        dry_run: bool,
        mode: crate::vacuum::VacuumMode,
    },
    Optimize(super::dml::OptimizeStatement),
    /// `CONVERT TO DELTA parquet.`path` [PARTITIONED BY (c TYPE, …)]` (Delta Spark's grammar).
    Convert {
        location: String,
        partition_columns: Vec<delta_rlc_protocol::schema::StructField>,
    },
    /// `RESTORE [TABLE] t [TO] VERSION AS OF n | TIMESTAMP AS OF '…'` (Delta Spark's grammar).
    Restore {
        target: TableRef,
    },
    Alter {
        target: TableRef,
        op: crate::ops::alter::AlterOp,
    },
}

impl SqlSession {
    /// Runs `sql` when it defines a session object — an external table over data files or a
    /// view — and tells whether it did; any other statement is left untouched (`false`).
    /// Defining writes nothing: the object lives as long as the session (deltalake's
    /// `QueryBuilder` keeps both across its queries).
    pub fn define_session_object(&self, sql: &str) -> Result<bool> {
        let parsed = super::statement::parse_with(sql, super::statement::QuotedNames::Names)?;
        if !matches!(
            parsed.statement,
            super::statement::ParsedStatement::Delta(_)
        ) {
            return Ok(false);
        }
        match self.read_delta(sql, parsed.word_uses())? {
            DeltaStatement::DefineExternal => self.define_external(sql).map(|_| true),
            DeltaStatement::DefineView {
                name,
                text,
                or_replace,
            } => self.define_view(&name, &text, or_replace).map(|_| true),
            _ => Ok(false),
        }
    }

    /// Phase one of a Delta statement (`sql` is one statement, checked by the parser; `words` its
    /// [`super::statement::word_uses`]).
    pub(super) async fn prepare_delta(
        &self,
        sql: &str,
        words: Vec<(String, bool)>,
    ) -> Result<Prepared> {
        match self.read_delta(sql, words)? {
            DeltaStatement::DefineExternal => Ok(Prepared::Done(self.define_external(sql)?)),
            DeltaStatement::DefineView {
                name,
                text,
                or_replace,
            } => Ok(Prepared::Done(self.define_view(&name, &text, or_replace)?)),
            DeltaStatement::Create {
                st,
                refs,
                or_replace,
            } => self.create(st, refs, or_replace).await,
            DeltaStatement::Describe {
                what,
                target,
                limit,
            } => {
                let r = self.resolved(target).await?;
                let table = self.table(&r.location)?;
                Ok(Prepared::Rows(
                    describe::run(&table, what, r.version, limit).await?,
                ))
            }
            DeltaStatement::Vacuum {
                target,
                retention,
                dry_run,
                mode,
            } => {
                let table = self.table(&target.location)?;
                let spec = crate::vacuum::VacuumSpec {
                    retention_ms: retention,
                    dry_run,
                    mode,
                    ..Default::default()
                };
                let res = crate::vacuum::vacuum_with(&table, &spec).await?;
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
            DeltaStatement::Convert {
                location,
                partition_columns,
            } => {
                self.refuse_inside_a_table(&location, "CONVERT TO DELTA")
                    .await?;
                let table = self.table(&location)?;
                let spec = crate::ops::convert::ConvertSpec {
                    partition_columns,
                    ..Default::default()
                };
                Ok(Prepared::Write(Box::new(
                    crate::ops::convert::convert_txn(&table, &spec).await?,
                )))
            }
            DeltaStatement::Optimize(st) => Ok(Prepared::Write(Box::new(
                super::dml::prepare_optimize(self, st).await?,
            ))),
            DeltaStatement::Restore { target } => {
                let target = self.resolved(target).await?;
                Ok(Prepared::Write(Box::new(
                    self.prepare_restore(target).await?,
                )))
            }
            DeltaStatement::Alter { target, op } => Ok(Prepared::Write(Box::new(
                super::alter::prepare_alter(self, &target, op).await?,
            ))),
        }
    }

    /// Reads a Delta statement with the parser's primitives and binds its tables.
    fn read_delta(&self, sql: &str, words: Vec<(String, bool)>) -> Result<DeltaStatement> {
        let mut c = Cursor::new(sql)?;
        let mut binder = Binder::new(self.scope(words)?);
        let first = c.ident()?.to_ascii_uppercase();
        match first.as_str() {
            "CREATE" => {
                let or_replace = c.eat_kw("OR");
                if or_replace {
                    c.expect_kw("REPLACE")?;
                }
                if c.peek_kw("EXTERNAL") {
                    // DataFusion's own CREATE EXTERNAL TABLE, read by its parser from the text.
                    return Ok(DeltaStatement::DefineExternal);
                }
                if c.eat_kw("TEMP") || c.eat_kw("TEMPORARY") || c.peek_kw("VIEW") {
                    c.expect_kw("VIEW")?;
                    let name = c.ident()?;
                    if !c.eat_kw("AS") {
                        return Err(EngineError::invalid(
                            "CREATE VIEW: expected a name and AS query (a column list is not supported)",
                        ));
                    }
                    let (query, text) = c.query()?;
                    if super::bind::names_relation(query.as_ref(), &name) {
                        return Err(EngineError::invalid(format!(
                            "CREATE VIEW {name}: a view cannot read itself"
                        )));
                    }
                    return Ok(DeltaStatement::DefineView {
                        name,
                        text,
                        or_replace,
                    });
                }
                let mut st = parse_create(&mut c, &mut binder)?;
                if or_replace && st.if_not_exists {
                    return Err(EngineError::invalid(
                        "CREATE OR REPLACE TABLE cannot also say IF NOT EXISTS",
                    ));
                }
                if let Some(q) = st.as_query.as_mut() {
                    binder.bind_query(q)?;
                }
                Ok(DeltaStatement::Create {
                    st,
                    refs: binder.into_refs(),
                    or_replace,
                })
            }
            "DESCRIBE" | "DESC" | "SHOW" => {
                let what = if first == "SHOW" {
                    c.expect_kw("TBLPROPERTIES")?;
                    describe::Describe::Properties
                } else if c.eat_kw("HISTORY") {
                    describe::Describe::History
                } else if c.eat_kw("DETAIL") {
                    describe::Describe::Detail
                } else {
                    c.eat_kw("TABLE");
                    describe::Describe::Columns
                };
                let target = c.table(&mut binder)?;
                let limit = if c.eat_kw("LIMIT") {
                    Some(
                        c.number()?
                            .parse()
                            .map_err(|_| EngineError::invalid("LIMIT takes a number of rows"))?,
                    )
                } else {
                    None
                };
                finish(&c, &first)?;
                Ok(DeltaStatement::Describe {
                    what,
                    target,
                    limit,
                })
            }
            "VACUUM" => {
                let target = c.table(&mut binder)?;
                let mut retention = None;
                let mut dry_run = false;
                let mut mode = None;
                while !c.at_end() {
                    let named = match (c.eat_kw("LITE"), c.eat_kw("FULL")) {
                        (true, _) => Some(crate::vacuum::VacuumMode::Lite),
                        (false, true) => Some(crate::vacuum::VacuumMode::Full),
                        (false, false) => None,
                    };
                    if let Some(m) = named {
                        if mode.replace(m).is_some() {
                            return Err(EngineError::invalid(
                                "VACUUM: LITE or FULL is given twice",
                            ));
                        }
                    } else if c.eat_kw("RETAIN") {
                        if retention.is_some() {
                            return Err(EngineError::invalid("VACUUM: RETAIN is given twice"));
                        }
                        let hours: f64 = c
                            .number()?
                            .parse()
                            .map_err(|_| EngineError::invalid("RETAIN needs a number of hours"))?;
                        c.expect_kw("HOURS")?;
                        retention = Some((hours * 3_600_000.0) as i64);
                    } else if c.eat_kw("DRY") {
                        c.expect_kw("RUN")?;
                        if std::mem::replace(&mut dry_run, true) {
                            return Err(EngineError::invalid("VACUUM: DRY RUN is given twice"));
                        }
                    } else {
                        return Err(EngineError::invalid(format!(
                            "unexpected {} in VACUUM",
                            c.describe()
                        )));
                    }
                }
                if target.version.is_some() || target.timestamp.is_some() {
                    return Err(EngineError::invalid("cannot VACUUM a past version"));
                }
                Ok(DeltaStatement::Vacuum {
                    target,
                    retention,
                    dry_run,
                    mode: mode.unwrap_or_default(),
                })
            }
            "CONVERT" => {
                c.expect_kw("TO")?;
                c.expect_kw("DELTA")?;
                let format = c.ident()?;
                if !format.eq_ignore_ascii_case("parquet") {
                    return Err(EngineError::invalid(format!(
                        "CONVERT TO DELTA converts a directory of Parquet files (parquet.`path`), not {format}"
                    )));
                }
                c.expect(&datafusion::sql::sqlparser::tokenizer::Token::Period)?;
                let location = c.ident()?;
                let mut partition_columns = Vec::new();
                if c.eat_kw("PARTITIONED") {
                    c.expect_kw("BY")?;
                    c.expect(&datafusion::sql::sqlparser::tokenizer::Token::LParen)?;
                    partition_columns = c.column_defs()?;
                    c.expect(&datafusion::sql::sqlparser::tokenizer::Token::RParen)?;
                }
                finish(&c, &first)?;
                Ok(DeltaStatement::Convert {
                    location,
                    partition_columns,
                })
            }
            "OPTIMIZE" => {
                let target = c.table(&mut binder)?;
                Ok(DeltaStatement::Optimize(super::dml::read_optimize(
                    target, &mut c,
                )?))
            }
            "RESTORE" => {
                c.eat_kw("TABLE");
                let mut target = c.table(&mut binder)?;
                // `TO` sits between the name and the version in Spark's grammar; without it the
                // version was read with the name.
                if c.eat_kw("TO") || (target.version.is_none() && target.timestamp.is_none()) {
                    (target.version, target.timestamp) = c.as_of()?;
                }
                finish(&c, &first)?;
                if target.version.is_none() && target.timestamp.is_none() {
                    return Err(EngineError::invalid(
                        "RESTORE needs VERSION AS OF n or TIMESTAMP AS OF '…'",
                    ));
                }
                Ok(DeltaStatement::Restore { target })
            }
            "ALTER" => {
                c.expect_kw("TABLE")?;
                let target = c.table(&mut binder)?;
                let op = super::alter::read_alter(&mut c)?;
                Ok(DeltaStatement::Alter { target, op })
            }
            other => Err(EngineError::Internal(format!(
                "{other} is not a Delta statement"
            ))),
        }
    }

    /// DESCRIBE [HISTORY | DETAIL] / SHOW TBLPROPERTIES of the table at `location` (a path, as
    /// a statement quotes it), typed: what the CLI's `history` and `describe` run, with no
    /// statement text composed for them.
    pub async fn describe(
        &self,
        location: &str,
        what: describe::Describe,
        version: Option<u64>,
        limit: Option<usize>,
    ) -> Result<super::StatementOutput> {
        if super::table_locations::is_local_file(location) {
            return Err(super::table_locations::not_a_table(location));
        }
        let table = self.table(location)?;
        Ok(super::StatementOutput {
            batches: describe::run(&table, what, version, limit).await?,
            ..Default::default()
        })
    }

    /// RESTORE's transaction: the latest snapshot restored to `target`'s version (resolved).
    async fn prepare_restore(&self, target: TableRef) -> Result<crate::txn::Transaction> {
        let version = target
            .version
            .ok_or_else(|| EngineError::Internal("RESTORE's version was not resolved".into()))?;
        let current = TableRef {
            version: None,
            timestamp: None,
            ..target.clone()
        };
        let (table, _, snapshot) =
            super::dml::open_target(std::slice::from_ref(&current), &current.ident, self).await?;
        let spec = crate::ops::restore::RestoreSpec {
            target: table.snapshot(Some(version)).await?,
            ignore_missing_files: false,
        };
        crate::ops::restore::restore_txn(
            crate::txn::Transaction::new(&table, Some(snapshot), crate::txn::Operation::Restore),
            spec,
        )
        .await
    }

    /// A reference with its `TIMESTAMP AS OF` resolved to a version.
    async fn resolved(&self, r: TableRef) -> Result<TableRef> {
        self.resolve_as_of(vec![r])
            .await?
            .pop()
            .ok_or_else(|| EngineError::Internal("a resolved reference went missing".into()))
    }

    async fn create(
        &self,
        mut st: CreateStatement,
        refs: Vec<TableRef>,
        or_replace: bool,
    ) -> Result<Prepared> {
        let name = st.name.clone().unwrap_or_default();
        let location = match (&st.target, &st.location) {
            (Some(r), _) => r.location.clone(),
            (None, Some(loc)) => loc.clone(),
            (None, None) => {
                return Err(EngineError::invalid(format!(
                    "CREATE TABLE {name}: give the table a path, e.g. CREATE TABLE './data/{name}' (...), or add LOCATION '...'"
                )))
            }
        };
        self.refuse_inside_a_table(&location, "CREATE TABLE")
            .await?;
        let table = self.table(&location)?;
        let replace = or_replace && table.exists().await?;
        let reads_itself = st.as_query.as_ref().is_some_and(|q| {
            refs.iter()
                .filter(|r| r.location == location)
                .any(|r| super::bind::names_relation(q.as_ref(), &r.ident))
        });
        if replace && reads_itself {
            // Its rows would be read at one version and the replace committed over a later
            // one: refused rather than lose the rows in between.
            return Err(EngineError::Unsupported(format!(
                "CREATE OR REPLACE TABLE {location} AS a query that reads the table itself"
            )));
        }
        if !replace && table.exists().await? {
            if st.if_not_exists {
                return Ok(Prepared::Done(format!("table {location} already exists")));
            }
            return Err(EngineError::invalid(format!(
                "a table already exists at {location}"
            )));
        }
        let (schema, rows) = match st.as_query.take() {
            Some(q) => {
                let refs = self.resolve_as_of(refs).await?;
                let other_refs: Vec<TableRef> = refs
                    .into_iter()
                    .filter(|r| r.location != location)
                    .collect();
                let df = self
                    .dataframe(
                        &other_refs,
                        DFStatement::Statement(Box::new(Statement::Query(q))),
                        None,
                    )
                    .await?;
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
            defaults: Default::default(),
        };
        if replace {
            let txn = replace_table_txn(&table, &spec).await?;
            let mut txn =
                insert_txn(txn, rows.as_deref().unwrap_or(&[]), InsertMode::Overwrite).await?;
            // The overwrite names itself WRITE; the commit is the replace.
            txn.operation = match rows.is_some() {
                true => crate::txn::Operation::ReplaceTableAsSelect,
                false => crate::txn::Operation::ReplaceTable,
            };
            return Ok(Prepared::Write(Box::new(txn)));
        }
        let mut txn = create_table_txn(&table, &spec).await?;
        if let Some(batches) = rows {
            txn.operation = crate::txn::Operation::CreateTableAsSelect;
            txn = insert_txn(txn, &batches, InsertMode::Append).await?;
        }
        Ok(Prepared::Write(Box::new(txn)))
    }
}

/// Nothing may follow a statement's last clause.
fn finish(c: &Cursor, statement: &str) -> Result<()> {
    match c.at_end() {
        true => Ok(()),
        false => Err(EngineError::invalid(format!(
            "SQL syntax error: unexpected {} in {statement}",
            c.describe()
        ))),
    }
}
