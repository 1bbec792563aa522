//! [`MergeBuilder`]: upserts and deletes driven by a source, in the shape of
//! `MERGE INTO target USING source ON … WHEN MATCHED … WHEN NOT MATCHED …`.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use delta_rlc_engine::ops::merge::{
    evolve::evolve_for_source, merge_txn_on, ClauseAction, ClauseKind, MergeClause,
    MergeExprParser, MergeSpec, SourceRows,
};
use delta_rlc_engine::Transaction;

use crate::error::{Error, Result};
use crate::options::CommitOptions;
use crate::outcome::CommitOutcome;
use crate::table::Table;
use crate::CastFailure;
use crate::Expression;

/// The rows a MERGE reads its changes from: Arrow batches or a DataFusion DataFrame.
#[derive(Debug, Clone)]
pub struct MergeSource(Source);

#[derive(Debug, Clone)]
enum Source {
    Batches {
        schema: Option<SchemaRef>,
        batches: Vec<RecordBatch>,
    },
    DataFrame(Box<DataFrame>),
}

impl MergeSource {
    /// Whether re-execution may read the source again: batches, yes; a DataFrame is a plan
    /// over data its caller chose (possibly this table at the version it was built on), so it
    /// runs once.
    fn rereadable(&self) -> bool {
        matches!(self.0, Source::Batches { .. })
    }

    /// Batches with their schema (needed when there may be no batch).
    pub fn batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        MergeSource(Source::Batches {
            schema: Some(schema),
            batches,
        })
    }

    /// The source rows, materialized once (a DataFrame runs once; past `memory_budget` bytes
    /// its rows spill to a temporary file).
    async fn materialize(self, memory_budget: usize) -> Result<SourceRows> {
        match self.0 {
            Source::Batches { schema, batches } => {
                let schema = schema
                    .or_else(|| batches.first().map(|b| b.schema()))
                    .ok_or_else(|| {
                        Error::invalid(
                            "MERGE: an empty source needs a schema (MergeSource::batches)",
                        )
                    })?;
                Ok(SourceRows::from_batches(schema, batches))
            }
            Source::DataFrame(df) => {
                use futures::StreamExt;
                let schema = Arc::new(df.schema().as_arrow().clone());
                let stream = df
                    .execute_stream()
                    .await?
                    .map(|b| b.map_err(delta_rlc_engine::EngineError::from));
                Ok(SourceRows::from_stream(schema, stream, memory_budget).await?)
            }
        }
    }
}

impl From<Vec<RecordBatch>> for MergeSource {
    fn from(batches: Vec<RecordBatch>) -> Self {
        MergeSource(Source::Batches {
            schema: None,
            batches,
        })
    }
}

impl From<RecordBatch> for MergeSource {
    fn from(batch: RecordBatch) -> Self {
        MergeSource::batches(batch.schema(), vec![batch])
    }
}

impl From<DataFrame> for MergeSource {
    fn from(df: DataFrame) -> Self {
        MergeSource(Source::DataFrame(Box::new(df)))
    }
}

/// `UPDATE SET …` of a WHEN MATCHED / NOT MATCHED BY SOURCE clause.
#[derive(Debug, Clone, Default)]
pub struct UpdateClause {
    condition: Option<Expression>,
    set: Vec<(String, Expression)>,
    all: bool,
}

impl UpdateClause {
    /// Sets a target column (values may reference `target.` and `source.` columns).
    pub fn set(mut self, column: impl Into<String>, value: impl Into<Expression>) -> Self {
        self.set.push((column.into(), value.into()));
        self
    }

    /// `UPDATE SET *`: every target column from the source column of the same name.
    pub fn all(mut self) -> Self {
        self.all = true;
        self
    }

    /// Applies only to rows for which `condition` is true.
    pub fn when(mut self, condition: impl Into<Expression>) -> Self {
        self.condition = Some(condition.into());
        self
    }
}

/// `DELETE` of a WHEN MATCHED / NOT MATCHED BY SOURCE clause.
#[derive(Debug, Clone, Default)]
pub struct DeleteClause {
    condition: Option<Expression>,
}

impl DeleteClause {
    /// Applies only to rows for which `condition` is true.
    pub fn when(mut self, condition: impl Into<Expression>) -> Self {
        self.condition = Some(condition.into());
        self
    }
}

/// `INSERT …` of a WHEN NOT MATCHED clause.
#[derive(Debug, Clone, Default)]
pub struct InsertClause {
    condition: Option<Expression>,
    values: Vec<(String, Expression)>,
    all: bool,
}

impl InsertClause {
    /// The value of a target column (unset columns are NULL).
    pub fn value(mut self, column: impl Into<String>, value: impl Into<Expression>) -> Self {
        self.values.push((column.into(), value.into()));
        self
    }

    /// `INSERT *`: every target column from the source column of the same name.
    pub fn all(mut self) -> Self {
        self.all = true;
        self
    }

    /// Applies only to source rows for which `condition` is true.
    pub fn when(mut self, condition: impl Into<Expression>) -> Self {
        self.condition = Some(condition.into());
        self
    }
}

#[derive(Debug, Clone)]
enum Pending {
    Update(ClauseKind, UpdateClause),
    Delete(ClauseKind, DeleteClause),
    Insert(InsertClause),
}

/// A MERGE. Clauses apply in the order they are added; for each row the first clause whose kind
/// and condition match decides. A target row matched by several source rows is an error.
///
/// ```
/// # async fn demo(table: delta_rlc::Table, updates: delta_rlc::arrow::array::RecordBatch) -> delta_rlc::Result<()> {
/// let done = table
///     .merge(updates, "target.id = source.id")
///     .when_matched_update(|u| u.set("v", "source.v"))
///     .when_not_matched_insert(|i| i.all())
///     .when_not_matched_by_source_delete(|d| d.when("target.id < 0"))
///     .await?;
/// println!("{:?} rows changed in version {:?}", done.metrics.rows_affected, done.version);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct MergeBuilder {
    table: Table,
    source: MergeSource,
    on: Expression,
    source_alias: String,
    target_alias: String,
    clauses: Vec<Pending>,
    commit: CommitOptions,
    schema_evolution: bool,
    cast_failure: CastFailure,
}

impl MergeBuilder {
    pub(crate) fn new(table: Table, source: MergeSource, on: Expression) -> Self {
        MergeBuilder {
            table,
            source,
            on,
            source_alias: "source".into(),
            target_alias: "target".into(),
            clauses: Vec::new(),
            commit: CommitOptions::default(),
            schema_evolution: false,
            cast_failure: CastFailure::Error,
        }
    }

    /// What an assigned or inserted value that does not cast to its column's type does: fail
    /// the statement (the default) or, with [`CastFailure::Null`], store NULL in a nullable
    /// column (deltalake's `error_on_type_mismatch=False`).
    pub fn on_cast_failure(mut self, on_failure: CastFailure) -> Self {
        self.cast_failure = on_failure;
        self
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    /// The name the source's columns are qualified with (default `source`).
    pub fn source_alias(mut self, alias: impl Into<String>) -> Self {
        self.source_alias = alias.into();
        self
    }

    /// The name the target's columns are qualified with (default `target`).
    pub fn target_alias(mut self, alias: impl Into<String>) -> Self {
        self.target_alias = alias.into();
        self
    }

    /// `WHEN MATCHED [AND …] THEN UPDATE SET …`
    pub fn when_matched_update(mut self, f: impl FnOnce(UpdateClause) -> UpdateClause) -> Self {
        self.clauses.push(Pending::Update(
            ClauseKind::Matched,
            f(UpdateClause::default()),
        ));
        self
    }

    /// `MERGE WITH SCHEMA EVOLUTION`: the source's columns the target lacks are added to the
    /// table (nullable, in the MERGE's own commit); `UPDATE SET *` / `INSERT *` fill them.
    pub fn with_schema_evolution(mut self) -> Self {
        self.schema_evolution = true;
        self
    }

    /// `WHEN MATCHED [AND …] THEN DELETE`
    pub fn when_matched_delete(mut self, f: impl FnOnce(DeleteClause) -> DeleteClause) -> Self {
        self.clauses.push(Pending::Delete(
            ClauseKind::Matched,
            f(DeleteClause::default()),
        ));
        self
    }

    /// `WHEN NOT MATCHED [AND …] THEN INSERT …`
    pub fn when_not_matched_insert(mut self, f: impl FnOnce(InsertClause) -> InsertClause) -> Self {
        self.clauses
            .push(Pending::Insert(f(InsertClause::default())));
        self
    }

    /// `WHEN NOT MATCHED BY SOURCE [AND …] THEN UPDATE SET …` (conditions and values may use only
    /// target columns).
    pub fn when_not_matched_by_source_update(
        mut self,
        f: impl FnOnce(UpdateClause) -> UpdateClause,
    ) -> Self {
        self.clauses.push(Pending::Update(
            ClauseKind::NotMatchedBySource,
            f(UpdateClause::default()),
        ));
        self
    }

    /// `WHEN NOT MATCHED BY SOURCE [AND …] THEN DELETE`
    pub fn when_not_matched_by_source_delete(
        mut self,
        f: impl FnOnce(DeleteClause) -> DeleteClause,
    ) -> Self {
        self.clauses.push(Pending::Delete(
            ClauseKind::NotMatchedBySource,
            f(DeleteClause::default()),
        ));
        self
    }

    run_reexecuting!(|builder| builder.source.rereadable());

    async fn run_once(self) -> Result<CommitOutcome> {
        // No WHEN clause, unknown or twice-assigned columns: the operation refuses them
        // (`MergeSpec`), for SQL, Rust and Python alike.
        let inner = &self.table.statement_table();
        let budget = delta_rlc_engine::ops::merge::source::memory_budget(&inner.env);
        let source = self.source.materialize(budget).await?;
        let source_schema = Arc::clone(source.schema());
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let txn = Transaction::new(
            inner,
            Some(snapshot),
            delta_rlc_engine::txn::Operation::Merge,
        );
        let (txn, snapshot) = match self.schema_evolution {
            true => evolve_for_source(txn, &source_schema).await?,
            false => {
                let s = Arc::clone(txn.snapshot()?);
                (txn, s)
            }
        };
        let parser = MergeExprParser::new(
            &snapshot,
            &self.target_alias,
            &source_schema,
            &self.source_alias,
        )?;
        let plan = |what: &str, e: &Expression| e.with_parser(&|s| parser.parse(what, s));
        let plan_pairs = |what: &str, pairs: &[(String, Expression)]| {
            pairs
                .iter()
                .map(|(c, e)| Ok((c.clone(), plan(what, e)?)))
                .collect::<Result<Vec<_>>>()
        };
        let mut clauses = Vec::with_capacity(self.clauses.len());
        for c in &self.clauses {
            let (kind, condition, action) = match c {
                Pending::Update(kind, u) => {
                    let action = match (u.all, u.set.is_empty()) {
                        (true, true) => ClauseAction::Update(None),
                        (false, false) => {
                            ClauseAction::Update(Some(plan_pairs("UPDATE SET", &u.set)?))
                        }
                        (true, false) => {
                            return Err(Error::invalid(
                                "MERGE UPDATE: use either .all() or .set(..), not both",
                            ))
                        }
                        (false, true) => {
                            return Err(Error::invalid(
                                "MERGE UPDATE: no column is set (use .set(..) or .all())",
                            ))
                        }
                    };
                    (*kind, &u.condition, action)
                }
                Pending::Delete(kind, d) => (*kind, &d.condition, ClauseAction::Delete),
                Pending::Insert(i) => {
                    let action = match (i.all, i.values.is_empty()) {
                        (true, true) => ClauseAction::Insert(None),
                        (false, false) => {
                            let pairs = plan_pairs("INSERT", &i.values)?;
                            let (cols, vals) = pairs.into_iter().unzip();
                            ClauseAction::Insert(Some((cols, vals)))
                        }
                        (true, false) => {
                            return Err(Error::invalid(
                                "MERGE INSERT: use either .all() or .value(..), not both",
                            ))
                        }
                        (false, true) => {
                            return Err(Error::invalid(
                                "MERGE INSERT: no value is given (use .value(..) or .all())",
                            ))
                        }
                    };
                    (ClauseKind::NotMatched, &i.condition, action)
                }
            };
            clauses.push(MergeClause {
                kind,
                condition: condition
                    .as_ref()
                    .map(|e| plan("condition", e))
                    .transpose()?,
                action,
            });
        }
        let spec = MergeSpec {
            target_alias: self.target_alias.clone(),
            source_alias: self.source_alias.clone(),
            source,
            on: plan("ON", &self.on)?,
            clauses,
            cast_failure: self.cast_failure,
            schema_evolution: self.schema_evolution,
            // Batches in memory: no table's column list stands behind them.
            source_names_tables: false,
        };
        crate::commit(merge_txn_on(txn, spec, snapshot).await?, &self.commit).await
    }
}

awaitable!(MergeBuilder => CommitOutcome);
