//! Table administration: [`AlterBuilder`] (schema, constraints, properties, features, name),
//! [`RestoreBuilder`] (an earlier version's files as a new version), checkpoints and log cleanup.

use std::collections::BTreeMap;

use arrow::datatypes::Field;
use delta_rlc_engine::arrow_conv::arrow_to_delta_type;
use delta_rlc_engine::ops::alter::{alter_txn, AlterOp};
use delta_rlc_engine::ops::restore::{restore_txn, RestoreSpec};
use delta_rlc_engine::snapshot::as_of::version_at_timestamp;
use delta_rlc_engine::Transaction;
use delta_rlc_protocol::schema::StructField;

use crate::error::{Error, Result};
use crate::options::CommitOptions;
use crate::outcome::CommitOutcome;
use crate::table::{At, Table};

/// One change [`Table::alter`] commits. Every change is a metadata commit (plus a protocol action
/// when it needs a feature); rules are the operation's own, the same as `ALTER TABLE` in SQL.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TableChange {
    /// New nullable columns (`ALTER TABLE … ADD COLUMNS`). As deltalake's `add_columns`, a
    /// struct column named like an existing struct column adds its fields to that struct.
    AddColumns(Vec<Field>),
    /// CHECK constraints, name → Spark SQL expression; every existing row is checked first.
    AddConstraints(BTreeMap<String, String>),
    /// A CHECK constraint by name.
    DropConstraint {
        /// The constraint's name (case-insensitive).
        name: String,
        /// No error when there is no such constraint.
        if_exists: bool,
    },
    /// Table properties (`SET TBLPROPERTIES`): turning on deletion vectors, the change data feed,
    /// type widening or column mapping adds the feature.
    SetProperties(BTreeMap<String, String>),
    /// Removes table properties (`UNSET TBLPROPERTIES`).
    UnsetProperties {
        /// The keys.
        keys: Vec<String>,
        /// No error for a key the table does not have.
        if_exists: bool,
    },
    /// Makes a column nullable (`ALTER COLUMN c DROP NOT NULL`; a dotted path for a nested field).
    DropNotNull(String),
    /// Sets entries of a column's metadata (`ALTER COLUMN c COMMENT '…'`, deltalake's
    /// `set_column_metadata`; a dotted path for a nested field); the protocol's `delta.*` keys
    /// are refused.
    SetColumnMetadata {
        /// The column (a dotted path for a nested field).
        column: String,
        /// Entries to set; other keys stay.
        metadata: std::collections::BTreeMap<String, String>,
    },
    /// Lists table features as supported without enabling them (deltalake's `add_feature`).
    AddFeatures {
        /// Protocol names (`deletionVectors`, `changeDataFeed`, …).
        features: Vec<String>,
        /// Allow moving a legacy protocol to reader 3 / writer 7.
        allow_protocol_versions_increase: bool,
    },
    /// The table's name (None clears it).
    SetName(Option<String>),
    /// The table's description (None clears it).
    SetDescription(Option<String>),
}

impl TableChange {
    fn into_op(self) -> Result<AlterOp> {
        Ok(match self {
            TableChange::AddColumns(fields) => {
                if fields.is_empty() {
                    return Err(Error::invalid("ADD COLUMNS needs at least one column"));
                }
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    out.push(StructField {
                        name: f.name().clone(),
                        data_type: arrow_to_delta_type(f.data_type())?,
                        nullable: f.is_nullable(),
                        // Carried as text: a comment is kept, and the protocol's keys (a
                        // generation expression, identity) meet the operation's refusal
                        // instead of vanishing.
                        metadata: f
                            .metadata()
                            .iter()
                            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                            .collect(),
                    });
                }
                AlterOp::AddColumns(out)
            }
            TableChange::AddConstraints(_) => {
                return Err(Error::invalid("constraints are added one commit each"))
            }
            TableChange::DropConstraint { name, if_exists } => {
                AlterOp::DropConstraint { name, if_exists }
            }
            TableChange::SetProperties(p) => AlterOp::SetProperties(p),
            TableChange::UnsetProperties { keys, if_exists } => {
                AlterOp::UnsetProperties { keys, if_exists }
            }
            TableChange::DropNotNull(c) => {
                AlterOp::DropNotNull(c.split('.').map(str::to_string).collect())
            }
            TableChange::SetColumnMetadata { column, metadata } => AlterOp::SetColumnMetadata {
                column: column.split('.').map(str::to_string).collect(),
                metadata,
            },
            TableChange::AddFeatures {
                features,
                allow_protocol_versions_increase,
            } => AlterOp::AddFeatures {
                features,
                allow_protocol_versions_increase,
            },
            TableChange::SetName(n) => AlterOp::SetName(n),
            TableChange::SetDescription(d) => AlterOp::SetDescription(d),
        })
    }
}

/// Commits one [`TableChange`] on the latest version (or the handle's pinned one).
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// use delta_rlc::TableChange;
/// let c = [("id_positive".to_string(), "id > 0".to_string())].into_iter().collect();
/// table.alter(TableChange::AddConstraints(c)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct AlterBuilder {
    table: Table,
    change: TableChange,
    commit: CommitOptions,
}

impl AlterBuilder {
    pub(crate) fn new(table: Table, change: TableChange) -> Self {
        AlterBuilder {
            table,
            change,
            commit: CommitOptions::default(),
        }
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    async fn run(self) -> Result<CommitOutcome> {
        let inner = &self.table.statement_table();
        // Several constraints are one commit in deltalake; here one metadata action that adds
        // them all, each checked against every row (they are staged one after another on the
        // same transaction's metadata).
        let ops = match self.change {
            TableChange::AddConstraints(c) => {
                if c.is_empty() {
                    return Err(Error::invalid("ADD CONSTRAINT needs a constraint"));
                }
                c.into_iter()
                    .map(|(name, expr)| AlterOp::AddConstraint { name, expr })
                    .collect()
            }
            other => vec![other.into_op()?],
        };
        let snapshot = inner.snapshot(self.table.read_version).await?;
        let ops = ops
            .into_iter()
            .map(|op| match op {
                AlterOp::AddColumns(fields) => {
                    AlterOp::AddNestedColumns(into_existing_structs(&snapshot.schema, fields))
                }
                other => other,
            })
            .collect::<Vec<_>>();
        let mut txn = Transaction::new(
            inner,
            Some(std::sync::Arc::clone(&snapshot)),
            delta_rlc_engine::txn::Operation::Alter,
        );
        for op in ops {
            txn = alter_txn(txn, op).await?;
            fold_metadata(&mut txn)?;
        }
        // The changes were staged on each other; the commit is checked against the version the
        // statement read (the conflict checker's base for re-applying it on a winner's metadata).
        txn.read_snapshot = Some(snapshot);
        crate::commit(txn, &self.commit).await
    }
}

awaitable!(AlterBuilder => CommitOutcome);

/// New columns as deltalake's `add_columns` takes them: a struct column whose name the table
/// already has as a struct adds its fields to that struct (recursively), where Spark would write
/// `ADD COLUMNS (s.z …)`; every other column is new at its level. A name that exists with another
/// type is left for the operation to refuse ("already exists").
fn into_existing_structs(
    schema: &delta_rlc_protocol::schema::StructType,
    fields: Vec<StructField>,
) -> Vec<(Vec<String>, StructField)> {
    use delta_rlc_protocol::schema::DataType;
    fn walk(
        existing: &delta_rlc_protocol::schema::StructType,
        parent: &[String],
        fields: Vec<StructField>,
        out: &mut Vec<(Vec<String>, StructField)>,
    ) {
        for f in fields {
            let same = existing
                .fields
                .iter()
                .find(|e| e.name.eq_ignore_ascii_case(&f.name));
            match (same, &f.data_type) {
                (Some(e), DataType::Struct(new)) => match &e.data_type {
                    DataType::Struct(old) => {
                        let mut path = parent.to_vec();
                        path.push(e.name.clone());
                        walk(old, &path, new.fields.clone(), out);
                    }
                    _ => out.push((parent.to_vec(), f)),
                },
                _ => out.push((parent.to_vec(), f)),
            }
        }
    }
    let mut out = Vec::new();
    walk(schema, &[], fields, &mut out);
    out
}

/// After a staged ALTER, the transaction's newest metadata and protocol become its snapshot's, so
/// the next change builds on them; the commit carries one of each.
fn fold_metadata(txn: &mut Transaction) -> Result<()> {
    use delta_rlc_protocol::actions::Action;
    let mut metadata = None;
    let mut protocol = None;
    txn.actions.retain(|a| match a {
        Action::Metadata(m) => {
            metadata = Some(m.clone());
            false
        }
        Action::Protocol(p) => {
            protocol = Some(p.clone());
            false
        }
        _ => true,
    });
    let snap = txn.snapshot()?;
    let mut next = match &metadata {
        Some(m) => snap.with_metadata(m)?,
        None => (**snap).clone(),
    };
    if let Some(p) = &protocol {
        next.protocol = p.clone();
    }
    txn.read_snapshot = Some(std::sync::Arc::new(next));
    if let Some(p) = protocol {
        txn.actions.push(Action::Protocol(p));
    }
    if let Some(m) = metadata {
        txn.actions.push(Action::Metadata(m));
    }
    Ok(())
}

/// Restores the table's files (and metadata) as of an earlier version or timestamp, as a new
/// commit; deltalake's `restore`.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct RestoreBuilder {
    table: Table,
    target: At,
    ignore_missing_files: bool,
    commit: CommitOptions,
}

impl RestoreBuilder {
    pub(crate) fn new(table: Table, target: At) -> Self {
        RestoreBuilder {
            table,
            target,
            ignore_missing_files: false,
            commit: CommitOptions::default(),
        }
    }

    /// Skip files of the earlier version that VACUUM deleted (default: fail).
    pub fn ignore_missing_files(mut self, ignore: bool) -> Self {
        self.ignore_missing_files = ignore;
        self
    }

    /// Commit metadata and the attempt bound for this commit.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    async fn run(self) -> Result<CommitOutcome> {
        let inner = &self.table.statement_table();
        let version = match self.target {
            At::Latest => return Err(Error::invalid("RESTORE needs an earlier version")),
            At::Version(v) => v,
            At::TimestampMs(ms) => version_at_timestamp(&inner.store, ms).await?,
        };
        let target = inner.snapshot(Some(version)).await?;
        let current = inner.snapshot(self.table.read_version).await?;
        let txn = Transaction::new(
            inner,
            Some(current),
            delta_rlc_engine::txn::Operation::Restore,
        );
        let spec = RestoreSpec {
            target,
            ignore_missing_files: self.ignore_missing_files,
        };
        crate::commit(restore_txn(txn, spec).await?, &self.commit).await
    }
}

awaitable!(RestoreBuilder => CommitOutcome);

impl Table {
    /// Commits one schema, constraint, property, feature or name change.
    pub fn alter(&self, change: TableChange) -> AlterBuilder {
        AlterBuilder::new(self.clone(), change)
    }

    /// Restores an earlier version's files as a new version.
    pub fn restore(&self, target: impl Into<At>) -> RestoreBuilder {
        RestoreBuilder::new(self.clone(), target.into())
    }

    /// The commit history, newest first, at most `limit` entries (every retained version
    /// without one): each version's `commitInfo` as its writer recorded it (deltalake's
    /// `history`, Spark's `DESCRIBE HISTORY`).
    pub async fn history(&self, limit: Option<usize>) -> Result<Vec<HistoryEntry>> {
        let latest = self.inner.snapshot(None).await?.version;
        let infos =
            delta_rlc_engine::snapshot::history::commit_infos(&self.inner.store, latest, limit)
                .await?;
        infos
            .into_iter()
            .map(|(version, ci)| {
                Ok(HistoryEntry {
                    version,
                    timestamp_ms: ci.in_commit_timestamp.or(ci.timestamp),
                    operation: ci.operation.clone(),
                    commit_info: serde_json::to_string(&ci)
                        .map_err(|e| Error::invalid(format!("version {version}: {e}")))?,
                })
            })
            .collect()
    }

    /// Writes a checkpoint of the latest version, or of the handle's version
    /// ([`Table::at_version`], as deltalake checkpoints the version it loaded); readers then skip
    /// replaying the log before it.
    pub async fn create_checkpoint(&self) -> Result<u64> {
        let snapshot = self.inner.snapshot(self.read_version).await?;
        let now = self.inner.env.clock.now_ms();
        delta_rlc_engine::write::checkpoint::write_checkpoint_of_any_version(
            &self.inner.store,
            &snapshot,
            now,
        )
        .await?;
        Ok(snapshot.version)
    }

    /// Writes a log compaction file for commits `start..=end` (deltalake's `compact_logs`): their
    /// reconciled actions at `_delta_log/<start>.<end>.compacted.json`, which readers may replay
    /// in place of those commits. Returns its path. `start` must be below `end`, and `end` at most
    /// the handle's version.
    pub async fn compact_logs(&self, start: u64, end: u64) -> Result<String> {
        let snapshot = self.inner.snapshot(self.read_version).await?;
        Ok(
            delta_rlc_engine::write::log_compaction::write_log_compaction(
                &self.inner.store,
                &snapshot,
                start,
                end,
            )
            .await?,
        )
    }

    /// Removes the live files missing from storage (deltalake's FSCK); with `dry_run`, only
    /// lists them. Returns their paths and the commit (None when nothing was missing or
    /// `dry_run`).
    pub async fn repair(&self, dry_run: bool) -> Result<(Vec<String>, Option<CommitOutcome>)> {
        self.repair_with(dry_run, &CommitOptions::default()).await
    }

    /// [`Table::repair`] with commit options.
    pub async fn repair_with(
        &self,
        dry_run: bool,
        options: &CommitOptions,
    ) -> Result<(Vec<String>, Option<CommitOutcome>)> {
        let inner = &self.inner;
        let snapshot = inner.snapshot(self.read_version).await?;
        let txn = Transaction::new(
            inner,
            Some(snapshot),
            delta_rlc_engine::txn::Operation::Fsck,
        );
        let (txn, missing) = delta_rlc_engine::ops::repair::repair_txn(txn).await?;
        if dry_run || missing.is_empty() {
            return Ok((missing, None));
        }
        Ok((missing, Some(crate::commit(txn, options).await?)))
    }

    /// Deletes log entries older than `delta.logRetentionDuration` (default 30 days) that precede
    /// the newest checkpoint old enough to stand in for them; returns the deleted paths.
    pub async fn cleanup_metadata(&self) -> Result<Vec<String>> {
        let now = self.inner.env.clock.now_ms();
        Ok(delta_rlc_engine::vacuum::cleanup_expired_logs(&self.inner, now).await?)
    }
}

/// One version's entry in [`Table::history`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryEntry {
    /// The version.
    pub version: u64,
    /// When it was committed (milliseconds since the epoch), if recorded.
    pub timestamp_ms: Option<i64>,
    /// The operation (`WRITE`, `DELETE`, `MERGE`, …), if recorded.
    pub operation: Option<String>,
    /// The whole `commitInfo` as JSON (operation parameters and metrics, custom fields).
    pub commit_info: String,
}
