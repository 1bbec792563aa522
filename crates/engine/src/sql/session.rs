//! A SQL session: statements parsed once ([`super::statement`]), their relations bound to tables
//! ([`super::bind`]) and planned from the AST: queries, COPY and EXPLAIN by DataFusion; INSERT,
//! DELETE, UPDATE and SET here; Delta statements with readers of their own in
//! [`super::delta_statements`].

use std::sync::{Arc, Mutex};

use delta_rlc_storage::object_cache::{ObjectCache, CACHE_BUDGET, HANDLE_CACHE_BUDGET};
use delta_rlc_storage::RequestMeter;

use arrow::array::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;

use super::bind::TableRef;
use super::provider::DeltaTableProvider;
use super::session_objects::SessionObjects;
use super::statement::ParsedStatement;
use super::statement::QuotedNames;
use super::table_locations::{is_local_file, not_a_table};
use crate::conflict_config::ConflictConfig;
use crate::env::Env;
use crate::error::{EngineError, Result};
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
    /// What a writing statement sent to its table's store (reads of other tables not included).
    pub requests: Option<delta_rlc_storage::RequestCounts>,
}

/// Locations whose data and DV files a session keeps across statements (`kept_objects`).
const KEPT_LOCATIONS: usize = 4;

#[derive(Debug, Clone, Default)]
pub struct SqlSession {
    pub env: Env,
    pub conflict: ConflictConfig,
    /// Registered table names (e.g. `t` in scenarios) → locations.
    pub named: Vec<(String, String)>,
    /// Registered names pinned to a version (`register_at`).
    pub pinned: Vec<(String, u64)>,
    /// OPTIMIZE target file size override (tests use small sizes to shape bins).
    pub optimize_target_file_size: Option<u64>,
    /// Benchmarks only: OPTIMIZE without composition capture.
    pub optimize_skip_capture: bool,
    /// Locations served by an explicit store instead of opening them.
    pub stores: Vec<(String, delta_rlc_storage::TableStore)>,
    /// deltalake's QueryBuilder (`query_only`), where nothing but queries run: `"x"` is a name,
    /// as in DataFusion (a SQL statement refuses it: a string in Spark), and results carry each
    /// Delta column's field metadata. Never set for a statement that writes.
    query_builder: bool,
    /// Object-store options for every table the session opens (`AWS_ENDPOINT_URL`, …).
    pub storage_options: std::collections::BTreeMap<String, String>,
    /// Views and external tables defined by earlier statements (shared by clones).
    objects: Arc<Mutex<SessionObjects>>,
    /// The latest snapshot loaded per location, shared by the handles this session (and its
    /// clones) opens: a later statement replays only the commits since (`Snapshot::load_after`,
    /// which falls back to a full load on any doubt).
    snapshots: Arc<Mutex<std::collections::HashMap<String, crate::table::SnapshotCache>>>,
    /// The data and DV files read per location, kept across the session's statements
    /// (`TableStore::keeping_objects`).
    kept: Arc<Mutex<std::collections::HashMap<String, Arc<ObjectCache>>>>,
    /// What `SET` changed (`spark.sql.ansi.enabled`, `rlc.retryOnConflict`), shared by clones.
    settings: Arc<Mutex<super::settings::SessionSettings>>,
}

impl SqlSession {
    pub fn new(env: Env, conflict: ConflictConfig) -> Self {
        SqlSession {
            env,
            conflict,
            named: Vec::new(),
            pinned: Vec::new(),
            optimize_target_file_size: None,
            stores: Vec::new(),
            optimize_skip_capture: false,
            query_builder: false,
            storage_options: Default::default(),
            objects: Arc::default(),
            snapshots: Arc::default(),
            kept: Arc::default(),
            settings: Arc::default(),
        }
    }

    /// How this session reads `"x"`: a name in deltalake's QueryBuilder (only queries run
    /// there), refused in a SQL statement.
    fn quoted_names(&self) -> QuotedNames {
        match self.query_builder {
            true => QuotedNames::Names,
            false => QuotedNames::Refused,
        }
    }

    /// The session's Spark settings (ANSI mode unless a `SET` turned it off).
    pub fn spark_options(&self) -> crate::spark::SparkOptions {
        self.settings.lock().map(|o| o.spark).unwrap_or_default()
    }

    /// How a statement that aborts on a true conflict is run again: the conflict
    /// configuration's, unless `SET rlc.retryOnConflict` changed it.
    pub fn reexecution(&self) -> crate::txn::reexecute::Reexecution {
        let mut policy = self.conflict.reexecution;
        if let Some(n) = self.settings.lock().ok().and_then(|o| o.retry_on_conflict) {
            policy.reruns = n;
        }
        policy
    }

    fn snapshot_cache(&self, location: &str) -> crate::table::SnapshotCache {
        match self.snapshots.lock() {
            Ok(mut m) => m.entry(location.to_string()).or_default().clone(),
            Err(_) => Default::default(),
        }
    }

    /// The session's cache of data and DV files read at `location`: for the first
    /// [`KEPT_LOCATIONS`] locations, each an eighth of a memory limit (or
    /// `HANDLE_CACHE_BUDGET`), divided among those locations, at most; a later location keeps
    /// nothing across statements, so a session's kept bytes stay bounded however many tables it
    /// touches.
    fn kept_objects(&self, location: &str) -> Option<Arc<ObjectCache>> {
        let budget = self
            .env
            .memory_limit
            .map_or(HANDLE_CACHE_BUDGET, |limit| limit / 8)
            .min(HANDLE_CACHE_BUDGET)
            / KEPT_LOCATIONS;
        let mut m = self.kept.lock().ok()?;
        if let Some(c) = m.get(location) {
            return Some(c.clone());
        }
        if m.len() >= KEPT_LOCATIONS {
            return None;
        }
        let fresh = Arc::new(ObjectCache::across_statements(budget));
        m.insert(location.to_string(), fresh.clone());
        Some(fresh)
    }

    pub fn register(&mut self, name: &str, location: &str) {
        self.named.push((name.to_string(), location.to_string()));
    }

    /// Registers `name` read as of `version` (a statement's own `VERSION AS OF` still wins).
    pub fn register_at(&mut self, name: &str, location: &str, version: u64) {
        self.register(name, location);
        self.pinned.push((name.to_string(), version));
    }

    /// Refuses a new table at `location` inside another Delta table (a folder above it holds a
    /// `_delta_log`): the outer table's VACUUM deletes files it does not know. CREATE TABLE and
    /// CONVERT TO DELTA check this, from SQL and from the library.
    pub async fn refuse_inside_a_table(&self, location: &str, statement: &str) -> Result<()> {
        if location.split(['/', '\\']).any(|part| part == "_delta_log") {
            return Err(EngineError::invalid(format!(
                "{statement} {location}: a table cannot live inside a _delta_log folder"
            )));
        }
        if let Some(outer) = super::copy::enclosing_table(self, location).await? {
            return Err(EngineError::invalid(format!(
                "{statement} {location}: it would sit inside the Delta table at {outer} (whose VACUUM deletes files it does not know)"
            )));
        }
        Ok(())
    }

    pub fn table(&self, location: &str) -> Result<DeltaTable> {
        if let Some((_, store)) = self.stores.iter().find(|(l, _)| l == location) {
            return Ok(DeltaTable {
                // Counted, but nothing kept: an explicit store (a simulation's fault injector)
                // sees the same requests as before.
                store: store.metered_by(RequestMeter::new(), 0).0,
                env: self.env.clone(),
                conflict: self.conflict.clone(),
                latest: self.snapshot_cache(location),
                parquet: None,
            });
        }
        let store =
            delta_rlc_storage::TableStore::open_with_options(location, &self.storage_options)?;
        // Each handle is opened for one statement: it counts the statement's requests and keeps
        // the immutable objects it read (docs/design/object-store-io.md).
        let budget = self
            .env
            .memory_limit
            .map_or(CACHE_BUDGET, |limit| (limit / 4).min(CACHE_BUDGET));
        let store = match self.kept_objects(location) {
            Some(kept) => store.sharing_kept_objects(kept),
            None => store,
        };
        let store = store.metered_by(RequestMeter::new(), budget).0;
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

    /// Statements at `location` start from (and keep current) `cache`, a table handle's latest
    /// snapshot: SQL over a handle replays only the commits since its last statement.
    pub fn use_snapshot_cache(&mut self, location: &str, cache: crate::table::SnapshotCache) {
        if let Ok(mut m) = self.snapshots.lock() {
            m.insert(location.to_string(), cache);
        }
    }

    /// Runs a statement to completion (commits writes). With re-execution on
    /// ([`SqlSession::reexecution`]), a write that aborted on a true conflict is planned again
    /// from the statement's AST at the latest snapshot and run again; the output's commit says
    /// why the earlier runs aborted.
    pub async fn execute(&self, sql: &str) -> Result<StatementOutput> {
        let policy = self.reexecution();
        let (mut out, earlier) =
            crate::txn::reexecute::run_statement(&policy, &self.env, |_| self.execute_once(sql))
                .await?;
        if let Some(c) = out.commit.as_mut() {
            c.earlier_runs = earlier;
        }
        Ok(out)
    }

    async fn execute_once(&self, sql: &str) -> Result<StatementOutput> {
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
                let meter = txn.table.store.meter().cloned();
                let result = txn.commit().await?;
                Ok(StatementOutput {
                    commit: Some(result),
                    requests: meter.map(|m| m.counts()),
                    ..Default::default()
                })
            }
        }
    }

    /// Registers every referenced table in a fresh DataFusion context. References to `record_for`
    /// record their reads into `reads`.
    pub(super) async fn context(
        &self,
        refs: &[TableRef],
        record_for: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<SessionContext> {
        let ctx = crate::spark::context_in(self.spark_options(), self.env.query_runtime()?);
        if self.query_builder {
            // deltalake's QueryBuilder orders as DataFusion does: NULLs last ascending.
            ctx.state_ref()
                .write()
                .config_mut()
                .options_mut()
                .sql_parser
                .default_null_ordering = "nulls_max".to_string();
        }
        if let Some(limit) = self.env.memory_limit {
            // What each sort keeps back for merging its spilled runs: a share of the pool (as
            // in MERGE's join), or a sort under a small limit could not spill at all.
            let state = ctx.state_ref();
            let mut state = state.write();
            let execution = &mut state.config_mut().options_mut().execution;
            execution.sort_spill_reservation_bytes = execution
                .sort_spill_reservation_bytes
                .min(crate::env::query_pool_bytes(limit) / 16);
        }
        let record_id = match &record_for {
            Some((loc, _)) => Some(self.table(loc)?.store.identity()),
            None => None,
        };
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
            // The recorded table by identity, not spelling: `'/data/t/'` read inside an INSERT
            // into `'/data/t'` is a read of the target (red team helper-46: its reads went
            // unrecorded, so a concurrent DELETE of a row it copied was not a conflict).
            let reads = match (&record_for, &record_id) {
                (Some((_, rs)), Some(id))
                    if table.store.identity() == *id && r.version.is_none() =>
                {
                    Some(rs.clone())
                }
                _ => None,
            };
            let mut provider = DeltaTableProvider::new(table, snapshot, reads);
            if self.query_builder {
                provider = provider.with_field_metadata();
            }
            ctx.register_table(r.ident.to_ascii_lowercase(), Arc::new(provider))?;
        }
        Ok(ctx)
    }

    async fn query(
        &self,
        refs: &[TableRef],
        st: DFStatement,
        record: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<Vec<RecordBatch>> {
        let df = self.dataframe(refs, st, record).await?;
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
    pub(super) async fn query_stream(
        &self,
        refs: &[TableRef],
        st: DFStatement,
        record: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<SendableRecordBatchStream> {
        Ok(self
            .dataframe(refs, st, record)
            .await?
            .execute_stream()
            .await?)
    }

    /// Runs `sql` with its rows streamed when it is a query (SELECT, WITH, VALUES, …; the change
    /// feed included), and as [`SqlSession::execute`] otherwise.
    pub async fn execute_streaming(&self, sql: &str) -> Result<StreamingOutput> {
        let parsed = super::statement::parse_with(sql, self.quoted_names())?;
        let words = parsed.word_uses();
        let tokens = parsed.tokens.len();
        if let ParsedStatement::Sql(mut st) = parsed.statement {
            let is_query = matches!(super::bind::inner(&st), Some(Statement::Query(_)));
            // The change feed streams; the file and row listings are loaded whole.
            let preloaded = super::bind::table_calls(&st)
                .iter()
                .any(|(n, _)| n == super::files_fn::NAME || n == super::rows_fn::NAME);
            if is_query && !preloaded {
                super::flatten::flatten_statement(&mut st, tokens);
                let refs = super::bind::bind(&mut st, self.scope(words)?)?;
                let refs = self.resolve_as_of(refs).await?;
                return Ok(StreamingOutput::Rows(
                    self.query_stream(&refs, st, None).await?,
                ));
            }
        }
        Ok(StreamingOutput::Done(self.execute(sql).await?))
    }

    /// Runs a query (SELECT, WITH, VALUES, the change feed, the file listings) and streams its
    /// rows; any other statement is refused before anything runs (deltalake's `QueryBuilder`
    /// only reads), read as deltalake reads it: `"x"` names a column (DataFusion's dialect), and
    /// a column read as it is stored carries its Delta field metadata (DataFusion drops it from
    /// computed columns).
    pub async fn query_only(&self, sql: &str) -> Result<SendableRecordBatchStream> {
        let parsed = super::statement::parse_with(sql, QuotedNames::Names)?;
        let is_query = matches!(
            &parsed.statement,
            ParsedStatement::Sql(st) if matches!(super::bind::inner(st), Some(Statement::Query(_)))
        );
        if !is_query {
            return Err(EngineError::invalid(
                "only a query (SELECT, WITH, VALUES) runs here; this statement would change or define something",
            ));
        }
        let mut session = self.clone();
        session.query_builder = true;
        match session.execute_streaming(sql).await? {
            StreamingOutput::Rows(stream) => Ok(stream),
            StreamingOutput::Done(out) => {
                let schema = out.batches.first().map_or_else(
                    || Arc::new(arrow::datatypes::Schema::empty()),
                    |b| b.schema(),
                );
                let batches = out.batches.into_iter().map(Ok);
                Ok(Box::pin(
                    datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                        schema,
                        futures::stream::iter(batches),
                    ),
                ))
            }
        }
    }

    pub(super) fn session_objects(&self) -> Result<SessionObjects> {
        Ok(self
            .objects
            .lock()
            .map_err(|_| EngineError::Internal("session objects lock poisoned".into()))?
            .clone())
    }

    /// Resolves every `TIMESTAMP AS OF` to the version it names.
    pub(super) async fn resolve_as_of(&self, mut refs: Vec<TableRef>) -> Result<Vec<TableRef>> {
        for r in &mut refs {
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
        Ok(refs)
    }

    /// Plans a bound statement: its tables registered, the table functions' rows loaded first
    /// (DataFusion's table functions are synchronous), then DataFusion plans the AST itself.
    pub(super) async fn dataframe(
        &self,
        refs: &[TableRef],
        mut st: DFStatement,
        record: Option<(&str, Arc<Mutex<ReadSet>>)>,
    ) -> Result<datafusion::dataframe::DataFrame> {
        let calls = super::bind::table_calls(&st);
        // A writing statement that reads through a table function (its files, its rows, its
        // change feed) read data the provider's read recording never sees. The function may name
        // the target under another spelling, so any such call counts as reading the whole
        // target: a concurrent change to it is then a conflict (an extra abort when the function
        // read another table), never a stale read committed.
        if let Some((_, reads)) = &record {
            let through_function = calls.iter().any(|(n, _)| {
                n == super::files_fn::NAME
                    || n == super::rows_fn::NAME
                    || n == super::changes_fn::NAME
            });
            if through_function {
                let mut reads = reads
                    .lock()
                    .map_err(|_| EngineError::Internal("read set lock poisoned".into()))?;
                reads.read_whole_table();
                reads.read_by_query();
            }
        }
        let ctx = self.context(refs, record).await?;
        for name in [super::files_fn::NAME, super::rows_fn::NAME] {
            let args = super::files_fn::calls(&calls, name);
            if args.is_empty() {
                continue;
            }
            let mut tables = std::collections::HashMap::new();
            for arg in args {
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
        super::changes_fn::register(self, &ctx, &calls).await?;
        // Column names resolve as Spark resolves them, without regard to case: a reference
        // planning cannot find is respelled as the one visible column it matches, and the
        // statement planned again (`spark::ident_case`).
        // The named tables' columns: where a qualified name or a GROUP BY name is settled.
        let mut tables = Vec::with_capacity(refs.len());
        if let DFStatement::Statement(s) = &mut st {
            // `1e3` is a DOUBLE, `9223372036854775808` a DECIMAL and `DECIMAL` DECIMAL(10,0),
            // as Spark reads them (`spark::literals`).
            crate::spark::literals::spark_literals(s.as_mut())
                .map_err(|e| EngineError::invalid(format!("SQL syntax error: {e}")))?;
            // `ltrim(trimStr, str)` takes Spark's argument order (`spark::function_syntax`).
            crate::spark::function_syntax::spark_function_syntax(s.as_mut())
                .map_err(EngineError::invalid)?;
            // `t.s.id` is table `t`'s struct `s`, field `id` (`spark::compound_names`).
            crate::spark::compound_names::settle_statement(s.as_mut());
            // `FROM a t JOIN b T` is ambiguous to Spark (`spark::table_aliases`).
            crate::spark::table_aliases::refuse_case_only_alias_pairs(s.as_ref())
                .map_err(EngineError::invalid)?;
            // `AS MyCol` names a column `MyCol` (`spark::alias_case`).
            crate::spark::alias_case::keep_alias_spelling(s.as_mut())
                .map_err(EngineError::invalid)?;
            for r in refs {
                let name = r.ident.to_ascii_lowercase();
                if let Ok(p) = ctx.table_provider(name.as_str()).await {
                    tables.push((name, p.schema()));
                }
            }
            crate::spark::ident_case::settle_qualified_columns(s.as_mut(), &tables)?;
        }
        let plan = plan_as_spark(&ctx, st, &tables).await?;
        // A query's plan analyzed now (Spark's rewrite, type coercion), so that its schema is the
        // one its batches come in: `d * 3` on a DECIMAL(10,2) is DECIMAL(12,2) in Spark, and the
        // unanalyzed plan still said DataFusion's DECIMAL(31,2) (a MERGE source failed on it, a
        // CREATE TABLE AS SELECT took it). Analysis again at execution changes nothing.
        let plan = match plan {
            LogicalPlan::Ddl(_)
            | LogicalPlan::Dml(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Copy(_) => plan,
            query => {
                let state = ctx.state();
                state
                    .analyzer()
                    .execute_and_check(query, state.config_options(), |_, _| {})?
            }
        };
        let df = ctx.execute_logical_plan(plan).await?;
        super::output_names::without_generated_qualifiers(df, refs)
    }

    /// Phase one of a statement: parsed once; planned from its AST.
    pub async fn prepare(&self, sql: &str) -> Result<Prepared> {
        let parsed = super::statement::parse_with(sql, self.quoted_names())?;
        let words = parsed.word_uses();
        let tokens = parsed.tokens.len();
        match parsed.statement {
            ParsedStatement::Delta(_) => self.prepare_delta(sql, words).await,
            ParsedStatement::Insert(insert) => {
                super::insert::prepare_insert(self, insert, words).await
            }
            ParsedStatement::Merge(merge) => Ok(Prepared::Write(Box::new(
                super::merge::prepare_merge(self, merge, words).await?,
            ))),
            ParsedStatement::Sql(mut st) => {
                super::flatten::flatten_statement(&mut st, tokens);
                let refs = super::bind::bind(&mut st, self.scope(words)?)?;
                let refs = self.resolve_as_of(refs).await?;
                self.prepare_bound(refs, st).await
            }
        }
    }

    async fn prepare_bound(&self, refs: Vec<TableRef>, st: DFStatement) -> Result<Prepared> {
        match &st {
            DFStatement::Statement(s) => match s.as_ref() {
                Statement::Set(_) => {
                    let mut held = self.settings.lock().map_err(|_| {
                        EngineError::Internal("session settings lock poisoned".into())
                    })?;
                    let (settings, message) = super::settings::read_set(s, *held)?;
                    *held = settings;
                    Ok(Prepared::Done(message))
                }
                Statement::Delete(_) => Ok(Prepared::Write(Box::new(
                    super::dml::prepare_delete(self, &refs, s).await?,
                ))),
                Statement::Update(_) => Ok(Prepared::Write(Box::new(
                    super::dml::prepare_update(self, &refs, s).await?,
                ))),
                Statement::Drop { .. } => Err(EngineError::invalid(
                    "DROP: tables are referenced by path and delta-rlc keeps no catalog to drop them from; it never deletes a table's files — remove the directory (or bucket prefix) yourself",
                )),
                Statement::Truncate(_) => Err(EngineError::Unsupported(
                    "TRUNCATE is not supported for Delta tables (as in Delta Spark): use DELETE FROM t".into(),
                )),
                Statement::Insert(_) => Err(EngineError::Unsupported(
                    "this form of INSERT is not supported: INSERT INTO | OVERWRITE t [(columns)] [REPLACE WHERE p] query".into(),
                )),
                _ => Ok(Prepared::Rows(self.query(&refs, st, None).await?)),
            },
            DFStatement::CopyTo(copy) => {
                super::copy::check(self, copy).await?;
                Ok(Prepared::Rows(self.query(&refs, st, None).await?))
            }
            // EXPLAIN ANALYZE runs its statement: a COPY inside it would skip the checks above.
            DFStatement::Explain(e) if !explains_a_query(e.statement.as_ref()) => Err(
                EngineError::Unsupported(
                    "EXPLAIN of a statement other than a query is not supported: DataFusion's plan for it is not what this engine runs".into(),
                ),
            ),
            _ => Ok(Prepared::Rows(self.query(&refs, st, None).await?)),
        }
    }

    /// What binding needs from the session, for a statement with these words.
    pub(super) fn scope(&self, words: Vec<(String, bool)>) -> Result<super::bind::Scope<'_>> {
        Ok(super::bind::Scope {
            named: &self.named,
            pinned: &self.pinned,
            objects: self.session_objects()?,
            words,
        })
    }

    /// Defines a session view: its query's text as written, expanded where it is named.
    pub(super) fn define_view(&self, name: &str, query: &str, or_replace: bool) -> Result<String> {
        self.objects
            .lock()
            .map_err(|_| EngineError::Internal("session objects lock poisoned".into()))?
            .define_view(name, query, or_replace)
    }

    /// Defines a session external table (`CREATE EXTERNAL TABLE`, as written).
    pub(super) fn define_external(&self, sql: &str) -> Result<String> {
        self.objects
            .lock()
            .map_err(|_| EngineError::Internal("session objects lock poisoned".into()))?
            .define_external(sql)
    }
}

/// Plans `st` with names resolved as Spark resolves them: a reference DataFusion cannot find is
/// respelled as the one visible column it matches without regard to case (`spark::ident_case`),
/// and a GROUP BY or HAVING name is a column before it is an alias (`spark::group_by_names`) —
/// checked once the statement plans, or, when it cannot plan and no reference is left to
/// respell, as a last attempt (DataFusion put an alias into `lower(Name)`).
async fn plan_as_spark(
    ctx: &SessionContext,
    st: DFStatement,
    tables: &[(String, arrow::datatypes::SchemaRef)],
) -> Result<LogicalPlan> {
    use crate::spark::natural_join;
    let natural =
        matches!(&st, DFStatement::Statement(s) if natural_join::has_natural_join(s.as_ref()));
    let plan = plan_names_as_spark(ctx, st, tables).await?;
    if natural {
        natural_join::refuse_case_only_differences(&plan)?;
    }
    Ok(plan)
}

/// [`plan_as_spark`]'s names: column references, GROUP BY and HAVING names, subquery names.
async fn plan_names_as_spark(
    ctx: &SessionContext,
    mut st: DFStatement,
    tables: &[(String, arrow::datatypes::SchemaRef)],
) -> Result<LogicalPlan> {
    use crate::spark::group_by_names;
    let mut passes = 0;
    let mut grouping_checked = false;
    loop {
        let planned = ctx.state().statement_to_plan(st.clone()).await;
        // A subquery's name is its own column before an outer one (`spark::outer_names`).
        if let (Ok(plan), DFStatement::Statement(s)) = (&planned, &mut st) {
            let misread = crate::spark::outer_names::misread_outer_references(plan)?;
            if !misread.is_empty() {
                passes += 1;
                if passes >= crate::spark::ident_case::MAX_PASSES {
                    return Err(EngineError::invalid(
                        "a subquery's column names could not be settled",
                    ));
                }
                if crate::spark::outer_names::respell_misread(s.as_mut(), &misread)? {
                    continue;
                }
            }
        }
        let e = match planned {
            Ok(plan) if !grouping_checked => {
                grouping_checked = true;
                let respelled = match &st {
                    DFStatement::Statement(s) => group_by_names::respell(s.as_ref(), &plan),
                    _ => None,
                };
                let Some(respelled) = respelled else {
                    return Ok(plan);
                };
                let again = DFStatement::Statement(Box::new(respelled.statement.clone()));
                match ctx.state().statement_to_plan(again.clone()).await {
                    Ok(p) if outer_names_settled(&respelled.statement, &p)? => return Ok(p),
                    Ok(_) => {
                        return Err(EngineError::invalid(
                            "a GROUP BY name and a subquery's column names could not both be settled as Spark reads them",
                        ))
                    }
                    // The name is no column of its own query block: the alias stands.
                    Err(e) if respelled.not_found_in(&e) => return Ok(plan),
                    Err(e) => {
                        st = again;
                        e
                    }
                }
            }
            Ok(plan) => return Ok(plan),
            Err(e) => e,
        };
        passes += 1;
        let fixed = match &mut st {
            DFStatement::Statement(s) if passes < crate::spark::ident_case::MAX_PASSES => {
                crate::spark::ident_case::respell_failed_reference(s.as_mut(), &e)?
            }
            _ => false,
        };
        if fixed {
            continue;
        }
        if !grouping_checked {
            if let DFStatement::Statement(s) = &st {
                if let Some(r) = group_by_names::respell_unplanned(s.as_ref(), tables) {
                    let again = DFStatement::Statement(Box::new(r.statement.clone()));
                    if let Ok(p) = ctx.state().statement_to_plan(again).await {
                        if outer_names_settled(&r.statement, &p)? {
                            return Ok(p);
                        }
                    }
                }
            }
        }
        return Err(e.into());
    }
}

/// Whether `plan`, planned from `st`, reads each name inside a subquery as Spark does: no outer
/// reference that an unqualified name of the subquery misread (`spark::outer_names`).
fn outer_names_settled(st: &Statement, plan: &LogicalPlan) -> Result<bool> {
    let misread = crate::spark::outer_names::misread_outer_references(plan)?;
    if misread.is_empty() {
        return Ok(true);
    }
    let mut copy = st.clone();
    Ok(!crate::spark::outer_names::respell_misread(
        &mut copy, &misread,
    )?)
}

/// Whether an EXPLAIN explains a query (the only plan DataFusion makes that this engine runs; an
/// EXPLAIN ANALYZE of COPY would also run the COPY past its checks).
fn explains_a_query(st: &DFStatement) -> bool {
    matches!(st, DFStatement::Statement(s) if matches!(s.as_ref(), Statement::Query(_)))
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
