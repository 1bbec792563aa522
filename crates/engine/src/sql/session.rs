//! Statement dispatch: CREATE TABLE [AS SELECT], INSERT [INTO | OVERWRITE | INTO … REPLACE WHERE],
//! SELECT (and anything else DataFusion plans read-only), DESCRIBE [HISTORY | DETAIL], SHOW
//! TBLPROPERTIES, VACUUM.

use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use datafusion::common::DFSchema;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;

use super::describe;
use super::parser::{parse_create, Cursor};
use super::provider::DeltaTableProvider;
use super::refs::{keyword_of, rewrite, Rewritten, TableRef};
use super::session_objects::SessionObjects;
use crate::conflict_config::ConflictConfig;
use crate::env::Env;
use crate::error::{EngineError, Result};
use crate::ops::{create_table_txn, insert_txn, insert_txn_stream, CreateTableSpec, InsertMode};
use crate::read_set::ReadSet;
use crate::table::DeltaTable;
use crate::txn::{CommitResult, Transaction};

/// Result of the first phase of a statement.
pub enum Prepared {
    Rows(Vec<RecordBatch>),
    /// An uncommitted write; commit it with `Transaction::commit`.
    Write(Box<Transaction>),
    Done(String),
}

/// What [`SqlSession::execute_streaming`] gives: a query's rows as a stream, or any other
/// statement's output.
pub enum StreamingOutput {
    Rows(SendableRecordBatchStream),
    Done(StatementOutput),
}

#[derive(Debug, Default)]
pub struct StatementOutput {
    pub batches: Vec<RecordBatch>,
    pub commit: Option<CommitResult>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SqlSession {
    pub env: Env,
    pub conflict: ConflictConfig,
    /// Registered table names (e.g. `t` in scenarios) → locations.
    pub named: Vec<(String, String)>,
    /// OPTIMIZE target file size override (tests use small sizes to shape bins).
    pub optimize_target_file_size: Option<u64>,
    /// Benchmarks only: OPTIMIZE without composition capture.
    pub optimize_skip_capture: bool,
    /// Locations served by an explicit store instead of opening them.
    pub stores: Vec<(String, delta_rlc_storage::TableStore)>,
    /// Object-store options for every table the session opens (`AWS_ENDPOINT_URL`, …).
    pub storage_options: std::collections::BTreeMap<String, String>,
    /// Views and external tables defined by earlier statements (shared by clones).
    objects: Arc<Mutex<SessionObjects>>,
    /// The latest snapshot loaded per location, shared by the handles this session (and its
    /// clones) opens: a later statement replays only the commits since (`Snapshot::load_after`,
    /// which falls back to a full load on any doubt).
    snapshots: Arc<Mutex<std::collections::HashMap<String, crate::table::SnapshotCache>>>,
    /// Spark settings (`SET spark.sql.ansi.enabled = false`), shared by clones.
    spark: Arc<Mutex<crate::spark::SparkOptions>>,
}

impl SqlSession {
    pub fn new(env: Env, conflict: ConflictConfig) -> Self {
        SqlSession {
            env,
            conflict,
            named: Vec::new(),
            optimize_target_file_size: None,
            stores: Vec::new(),
            optimize_skip_capture: false,
            storage_options: Default::default(),
            objects: Arc::default(),
            snapshots: Arc::default(),
            spark: Arc::default(),
        }
    }

    /// The session's Spark settings (ANSI mode unless a `SET` turned it off).
    pub fn spark_options(&self) -> crate::spark::SparkOptions {
        self.spark.lock().map(|o| *o).unwrap_or_default()
    }

    fn snapshot_cache(&self, location: &str) -> crate::table::SnapshotCache {
        match self.snapshots.lock() {
            Ok(mut m) => m.entry(location.to_string()).or_default().clone(),
            Err(_) => Default::default(),
        }
    }

    pub fn register(&mut self, name: &str, location: &str) {
        self.named.push((name.to_string(), location.to_string()));
    }

    pub fn table(&self, location: &str) -> Result<DeltaTable> {
        if let Some((_, store)) = self.stores.iter().find(|(l, _)| l == location) {
            return Ok(DeltaTable {
                store: store.clone(),
                env: self.env.clone(),
                conflict: self.conflict.clone(),
                latest: self.snapshot_cache(location),
            });
        }
        let store =
            delta_rlc_storage::TableStore::open_with_options(location, &self.storage_options)?;
        let mut table = DeltaTable::on_store(store)
            .with_env(self.env.clone())
            .with_conflict_config(self.conflict.clone());
        table.latest = self.snapshot_cache(location);
        Ok(table)
    }

    /// Serves `location` from a given store (fault injectors, simulations).
    pub fn use_store(&mut self, location: &str, store: delta_rlc_storage::TableStore) {
        self.stores.push((location.to_string(), store));
    }

    /// Runs a statement to completion (commits writes).
    pub async fn execute(&self, sql: &str) -> Result<StatementOutput> {
        match self.prepare(sql).await? {
            Prepared::Rows(batches) => Ok(StatementOutput {
                batches,
                ..Default::default()
            }),
            Prepared::Done(msg) => Ok(StatementOutput {
                message: Some(msg),
                ..Default::default()
            }),
            Prepared::Write(txn) => {
                let result = txn.commit().await?;
                Ok(StatementOutput {
                    commit: Some(result),
                    ..Default::default()
                })
            }
        }
    }

    /// Registers every referenced table in a fresh DataFusion context. References to `record_for`
    /// record their reads into `reads`.
    async fn context(
        &self,
        refs: &[TableRef],
        record_for: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<SessionContext> {
        let ctx = crate::spark::context_for(self.spark_options());
        for r in refs {
            // Data files (`'new.csv'`, `read_parquet('dir/*.parquet')`) are listing tables.
            // A folder holding a `_delta_log` is a table whatever its name (`'./t.parquet'`):
            // reading its files raw would return deleted and pre-update rows.
            let delta = match &r.file {
                Some(_) if !is_local_file(&r.location) => {
                    super::file_tables::delta_table_behind(self, &r.location).await?
                }
                _ => None,
            };
            if let (Some(src), None) = (&r.file, &delta) {
                let provider = super::file_tables::file_table(&ctx, &r.location, src).await?;
                ctx.register_table(r.ident.to_ascii_lowercase(), provider)?;
                continue;
            }
            let table = self.table(&r.location)?;
            if is_local_file(&r.location) {
                return Err(not_a_table(&r.location));
            }
            // The latest version: existence and snapshot from one listing.
            let snapshot = match r.version {
                None if delta.is_some() => delta,
                None => table.latest_if_exists().await?,
                Some(v) => match table.exists().await? {
                    true => Some(table.snapshot(Some(v)).await?),
                    false => None,
                },
            };
            let Some(snapshot) = snapshot else {
                return Err(not_a_table(&r.location));
            };
            let reads = match &record_for {
                Some((loc, rs)) if *loc == r.location && r.version.is_none() => Some(rs.clone()),
                _ => None,
            };
            let provider = DeltaTableProvider::new(table, snapshot, reads);
            ctx.register_table(r.ident.to_ascii_lowercase(), Arc::new(provider))?;
        }
        Ok(ctx)
    }

    /// A DataFusion context whose scans of the table at `location` record their reads into
    /// `reads` (a statement's query over the table it writes).
    pub(crate) async fn context_recording(
        &self,
        refs: &[TableRef],
        location: &str,
        reads: Arc<Mutex<ReadSet>>,
    ) -> Result<SessionContext> {
        self.context(refs, Some((location, reads))).await
    }

    async fn query(
        &self,
        refs: &[TableRef],
        sql: &str,
        record: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<Vec<RecordBatch>> {
        let df = self.dataframe(refs, sql, record).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        // A query without rows still has columns: one empty batch carries them.
        Ok(match batches.is_empty() {
            true => vec![RecordBatch::new_empty(schema)],
            false => batches,
        })
    }

    /// A query's rows as a stream: batches are produced as they are read (file by file), so the
    /// caller holds one at a time.
    async fn query_stream(
        &self,
        refs: &[TableRef],
        sql: &str,
        record: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<SendableRecordBatchStream> {
        Ok(self
            .dataframe(refs, sql, record)
            .await?
            .execute_stream()
            .await?)
    }

    /// Runs `sql` with its rows streamed when it is a query (SELECT, WITH, VALUES, …, whatever
    /// DataFusion plans), and as [`SqlSession::execute`] otherwise.
    pub async fn execute_streaming(&self, sql: &str) -> Result<StreamingOutput> {
        super::refs::one_statement(sql)?;
        let rw = self
            .resolve_as_of(rewrite(sql, &self.named, &self.session_objects()?)?)
            .await?;
        let first = rw.tokens.iter().find_map(keyword_of).unwrap_or_default();
        if matches!(first.as_str(), "SELECT" | "WITH" | "VALUES" | "FROM")
            && !rw.tokens.iter().any(|t| {
                keyword_of(t).is_some_and(|k| {
                    k.eq_ignore_ascii_case(super::files_fn::NAME)
                        || k.eq_ignore_ascii_case(super::rows_fn::NAME)
                        || k.eq_ignore_ascii_case(super::changes_fn::NAME)
                })
            })
        {
            return Ok(StreamingOutput::Rows(
                self.query_stream(&rw.refs, &rw.sql, None).await?,
            ));
        }
        Ok(StreamingOutput::Done(self.execute(sql).await?))
    }

    fn session_objects(&self) -> Result<SessionObjects> {
        Ok(self
            .objects
            .lock()
            .map_err(|_| EngineError::Internal("session objects lock poisoned".into()))?
            .clone())
    }

    /// Resolves every `TIMESTAMP AS OF` to the version it names.
    async fn resolve_as_of(&self, mut rw: Rewritten) -> Result<Rewritten> {
        for r in &mut rw.refs {
            if let Some(ts) = r.timestamp.take() {
                let ms = crate::snapshot::as_of::parse_timestamp_ms(&ts)?;
                let table = self.table(&r.location)?;
                if !table.exists().await? {
                    return Err(EngineError::NotFound(format!(
                        "no Delta table at {}",
                        r.location
                    )));
                }
                r.version =
                    Some(crate::snapshot::as_of::version_at_timestamp(&table.store, ms).await?);
            }
        }
        Ok(rw)
    }

    async fn dataframe(
        &self,
        refs: &[TableRef],
        sql: &str,
        record: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<datafusion::dataframe::DataFrame> {
        let ctx = self.context(refs, record).await?;
        let tokens = super::refs::tokenize(sql)?;
        for name in [super::files_fn::NAME, super::rows_fn::NAME] {
            let calls = super::files_fn::calls(&tokens, name);
            if calls.is_empty() {
                continue;
            }
            let mut tables = std::collections::HashMap::new();
            for arg in calls {
                let location = self
                    .named
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&arg))
                    .map(|(_, l)| l.clone())
                    .unwrap_or_else(|| arg.clone());
                let table = self.table(&location)?;
                if !table.exists().await? {
                    return Err(EngineError::NotFound(format!(
                        "no Delta table at {location}"
                    )));
                }
                let snap = table.snapshot(None).await?;
                let batch = if name == super::rows_fn::NAME {
                    super::rows_fn::rows_batch(&table, &snap).await?
                } else {
                    super::files_fn::files_batch(&snap)?
                };
                tables.insert(arg, batch);
            }
            ctx.register_udtf(name, Arc::new(super::files_fn::Preloaded { name, tables }));
        }
        super::changes_fn::register(self, &ctx, &tokens).await?;
        Ok(ctx.sql(sql).await?)
    }

    fn resolve_target<'a>(&self, rw: &'a Rewritten, name: &str) -> Result<&'a TableRef> {
        rw.refs
            .iter()
            .find(|r| r.ident.eq_ignore_ascii_case(name))
            .ok_or_else(|| EngineError::invalid(format!("unknown table {name}: reference tables by path, e.g. './data/t' or delta.`s3://bucket/t`")))
    }

    /// Phase one of a statement.
    pub async fn prepare(&self, sql: &str) -> Result<Prepared> {
        super::refs::one_statement(sql)?;
        let rw = self
            .resolve_as_of(rewrite(sql, &self.named, &self.session_objects()?)?)
            .await?;
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
            ("CREATE", _) if session_object => Ok(Prepared::Done(
                self.objects
                    .lock()
                    .map_err(|_| EngineError::Internal("session objects lock poisoned".into()))?
                    .define(sql)?,
            )),
            ("CREATE", _) => self.create(&rw).await,
            ("SET", _) => {
                let options = super::settings::read_set(
                    &super::dml::parse_one(sql)?,
                    self.spark_options(),
                )?;
                if let Ok(mut o) = self.spark.lock() {
                    *o = options;
                }
                Ok(Prepared::Done(format!(
                    "{} = {}",
                    crate::spark::ANSI_KEY,
                    options.ansi
                )))
            }
            ("INSERT", _) => self.insert(&rw).await,
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
                        if dry_run { "would be deleted" } else { "to delete" }
                    )));
                }
                Ok(Prepared::Rows(vec![describe::vacuum_batch(&res)?]))
            }
            ("DELETE", _) => Ok(Prepared::Write(Box::new(
                super::dml::prepare_delete(self, &rw.refs, &rw.sql).await?,
            ))),
            ("UPDATE", _) => Ok(Prepared::Write(Box::new(
                super::dml::prepare_update(self, &rw.refs, &rw.sql).await?,
            ))),
            ("MERGE", _) => Ok(Prepared::Write(Box::new(
                super::merge::prepare_merge(self, &rw).await?,
            ))),
            ("OPTIMIZE", _) => Ok(Prepared::Write(Box::new(
                super::dml::prepare_optimize(self, &rw.refs, rw.tokens.clone()).await?,
            ))),
            ("DROP", _) => Err(EngineError::invalid(
                "DROP: tables are referenced by path and delta-rlc keeps no catalog to drop them from; it never deletes a table's files — remove the directory (or bucket prefix) yourself",
            )),
            ("TRUNCATE", _) => Err(EngineError::Unsupported(
                "TRUNCATE is not supported for Delta tables (as in Delta Spark): use DELETE FROM t".into(),
            )),
            ("ALTER", _) => Ok(Prepared::Write(Box::new(
                super::alter::prepare_alter(self, &rw.refs, rw.tokens.clone()).await?,
            ))),
            // EXPLAIN ANALYZE runs its statement: a COPY inside it would skip the checks below.
            ("EXPLAIN", _)
                if rw
                    .tokens
                    .iter()
                    .any(|t| keyword_of(t).as_deref() == Some("COPY")) =>
            {
                Err(EngineError::Unsupported(
                    "EXPLAIN of COPY is not supported".into(),
                ))
            }
            ("COPY", _) => {
                super::copy::check(self, &rw.sql).await?;
                Ok(Prepared::Rows(self.query(&rw.refs, &rw.sql, None).await?))
            }
            ("REPLACE", _) => Err(EngineError::Unsupported(format!(
                "{first_kw} is not supported yet"
            ))),
            _ => Ok(Prepared::Rows(self.query(&rw.refs, &rw.sql, None).await?)),
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

    async fn insert(&self, rw: &Rewritten) -> Result<Prepared> {
        let mut c = Cursor::new(rw.tokens.clone());
        c.expect_kw("INSERT")?;
        let overwrite = if c.eat_kw("OVERWRITE") {
            true
        } else {
            c.expect_kw("INTO")?;
            false
        };
        c.eat_kw("TABLE");
        let name = c.ident()?;
        let target = self.resolve_target(rw, &name)?.clone();
        if target.version.is_some() {
            return Err(EngineError::invalid("cannot INSERT into a past version"));
        }
        let table = self.table(&target.location)?;
        if !table.exists().await? {
            return Err(EngineError::NotFound(format!(
                "no Delta table at {}",
                target.location
            )));
        }
        let snapshot = table.snapshot(None).await?;
        let schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
        let columns = if matches!(
            c.peek(),
            Some(datafusion::sql::sqlparser::tokenizer::Token::LParen)
        ) && !c
            .rest_sql()
            .trim_start_matches('(')
            .trim_start()
            .to_ascii_uppercase()
            .starts_with("SELECT")
        {
            Some(c.ident_list()?)
        } else {
            None
        };
        let mut mode = if overwrite {
            InsertMode::Overwrite
        } else {
            InsertMode::Append
        };
        if c.eat_kw("REPLACE") {
            c.expect_kw("WHERE")?;
            let mut pred = Vec::new();
            let mut depth = 0i32;
            while !c.at_end() {
                if depth == 0
                    && (c.peek_kw("SELECT")
                        || c.peek_kw("VALUES")
                        || c.peek_kw("WITH")
                        || c.peek_kw("TABLE"))
                {
                    break;
                }
                match c.next() {
                    Some(t) => {
                        match t {
                            datafusion::sql::sqlparser::tokenizer::Token::LParen => depth += 1,
                            datafusion::sql::sqlparser::tokenizer::Token::RParen => depth -= 1,
                            _ => {}
                        }
                        pred.push(super::refs::sql_text(&t));
                    }
                    None => break,
                }
            }
            let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
            let expr = crate::spark::context().parse_sql_expr(&pred.join(" "), &df_schema)?;
            mode = InsertMode::ReplaceWhere(expr);
        }
        let query = alias_positional_columns(&c.rest_sql());
        let reads = Arc::new(Mutex::new(ReadSet::default()));
        // Streamed: rows are written in chunks as the query produces them.
        let stream = self
            .query_stream(&rw.refs, &query, Some((&target.location, reads.clone())))
            .await?;
        let stream = futures::StreamExt::map(stream, |b| b.map_err(EngineError::from));
        let txn = Transaction::new(&table, Some(snapshot), "WRITE");
        let shape = |b: RecordBatch| match &columns {
            Some(cols) => describe::reorder_columns(std::slice::from_ref(&b), cols, &schema)?
                .pop()
                .ok_or_else(|| EngineError::Internal("reordering lost a batch".into())),
            None => Ok(b),
        };
        let mut txn = insert_txn_stream(txn, Box::pin(stream), mode, shape).await?;
        // The scan registered its reads while the stream ran; they belong to the transaction.
        let recorded = reads
            .lock()
            .map_err(|_| EngineError::Internal("the read set's lock is poisoned".into()))?
            .clone();
        merge_reads(&mut txn.read_set, recorded);
        Ok(Prepared::Write(Box::new(txn)))
    }
}

/// INSERT maps columns by position, so output names do not matter; DataFusion however rejects
/// duplicate names (`SELECT value, CAST(value AS INT)`). Alias unnamed select items positionally.
fn alias_positional_columns(query: &str) -> String {
    use datafusion::sql::sqlparser::ast::{Ident, SelectItem, SetExpr, Statement};
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    let Ok(mut stmts) = Parser::parse_sql(&GenericDialect {}, query) else {
        return query.to_string();
    };
    let Some(Statement::Query(q)) = stmts.first_mut() else {
        return query.to_string();
    };
    let mut changed = false;
    if let SetExpr::Select(sel) = q.body.as_mut() {
        for (i, item) in sel.projection.iter_mut().enumerate() {
            if let SelectItem::UnnamedExpr(e) = item {
                *item = SelectItem::ExprWithAlias {
                    expr: e.clone(),
                    alias: Ident::new(format!("__c{i}")),
                };
                changed = true;
            }
        }
    }
    // Printed only when changed and only when the print is exact; else the query as written
    // (DataFusion may then refuse duplicate names: an error, never another statement).
    match (changed, stmts.first()) {
        (true, Some(st)) => super::refs::print_exactly(st).unwrap_or_else(|| query.to_string()),
        _ => query.to_string(),
    }
}

/// Adds the reads a query recorded to those the statement staged (an overwrite's, a MERGE's).
pub(crate) fn merge_reads(into: &mut ReadSet, recorded: ReadSet) {
    if recorded.whole_table {
        into.read_whole_table();
    }
    if recorded.query_reads {
        into.read_by_query();
    }
    for p in recorded.predicates {
        into.add_predicate(p);
    }
    for (path, dv) in recorded.files {
        into.read_file(&path, dv);
    }
    into.app_ids.extend(recorded.app_ids);
}

fn local_path(location: &str) -> Option<&std::path::Path> {
    (!location.contains("://") || location.starts_with("file://"))
        .then(|| std::path::Path::new(location.strip_prefix("file://").unwrap_or(location)))
}

pub(super) fn is_local_file(location: &str) -> bool {
    local_path(location).is_some_and(|p| p.is_file())
}

/// Why a path named as a table is not one, as precisely as the local disk can say.
fn not_a_table(location: &str) -> EngineError {
    if let Some(local) = local_path(location) {
        if local.is_file() {
            return EngineError::invalid(format!(
                "{location} is a file, not a Delta table: read it with read_csv, read_parquet or read_json (or name it with its .csv/.parquet/.json extension)"
            ));
        }
        if local.is_dir() {
            return EngineError::NotFound(format!(
                "{location} is not a Delta table (no _delta_log) or a known file format"
            ));
        }
    }
    EngineError::NotFound(format!("no Delta table at {location}"))
}
