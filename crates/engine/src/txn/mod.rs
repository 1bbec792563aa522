//! Transactions: begin at a snapshot, record what was read, stage actions, commit through the one
//! commit function (`commit.rs`).

pub mod change_data;
mod commit;
pub mod identity;
mod identity_rebase;
pub mod reexecute;
mod table_rules;
mod winners;

use std::sync::Arc;

use delta_rlc_protocol::actions::{Action, Add, Remove};
use serde_json::{Map, Value};
use uuid::Uuid;

pub use crate::operation::Operation;
use crate::read_set::ReadSet;
pub use commit::CommitResult;

use crate::conflict_config::IsolationLevel;
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;
use crate::table::DeltaTable;

/// An open transaction. `read_snapshot` is None only for table creation.
#[derive(Debug, Clone)]
pub struct Transaction {
    pub table: DeltaTable,
    pub read_snapshot: Option<Arc<Snapshot>>,
    pub read_set: ReadSet,
    /// Staged actions. File paths are decoded relative paths; they are encoded when serialized.
    pub actions: Vec<Action>,
    /// What the commitInfo says this transaction did.
    pub operation: Operation,
    pub operation_parameters: Map<String, Value>,
    /// What the operation counted, rendered into the commitInfo (`operation_metrics`).
    pub(crate) metrics: crate::operation_metrics::OperationMetrics,
    pub txn_id: Uuid,
    /// Number of rows affected, reported to the caller.
    pub affected_rows: Option<u64>,
    /// Events fired while planning (e.g. the MERGE source-key read predicate).
    pub events: Vec<crate::events::Event>,
    /// When the transaction began (the environment's clock), before it wrote any file. Its commit
    /// is refused once [`crate::retention::MAX_TRANSACTION_MS`] has passed since (VACUUM's floor).
    pub started_ms: i64,
    /// Caller-supplied fields for the commitInfo (deltalake's `custom_metadata`); names of
    /// commitInfo's own fields are refused by [`Transaction::set_app_metadata`].
    pub app_metadata: Map<String, Value>,
    /// Change rows recorded for the change data feed, written as `cdc` files by the commit at the
    /// latest ([`crate::write::change_data`]).
    pub change_data: change_data::ChangeBuffer,
    /// Identity columns: the last value this transaction generated, by column; the commit raises
    /// the columns' high-water marks to these ([`identity`]).
    pub identity_marks: std::collections::BTreeMap<String, i64>,
    /// The statement's meaning depends on the identity values it holds, so they are never moved
    /// past a winner's (`conflict/identity_rebase.rs`): a new row came with an explicit value (BY
    /// DEFAULT; generated values cannot be told from it), or a REPLACE WHERE predicate was checked
    /// on the generated values.
    pub identity_pinned: bool,
    /// Objects being written in the background; the commit waits for them
    /// ([`delta_rlc_storage::PendingUploads`]).
    pub uploads: delta_rlc_storage::PendingUploads,
    /// What an ALTER TABLE names; only such a transaction may be re-applied on a concurrent
    /// metadata change ([`crate::metadata_intent`]).
    pub metadata_intent: Option<crate::metadata_intent::MetadataIntent>,
    /// Wall time the conflict checks of every lost race took so far (`CommitResult::check_time`).
    pub(crate) check_time: std::time::Duration,
    /// Commit even when no action is staged: the commit is its commitInfo alone (VACUUM START /
    /// END, an append of no rows, re-adding a feature the table has), as Delta Spark records them.
    pub record_when_empty: bool,
    /// Write the checkpoint `delta.checkpointInterval` asks for after this commit (on unless the
    /// caller turns it off, as deltalake's `PostCommitHookProperties(create_checkpoint=False)`;
    /// the next commit at an interval writes one again).
    pub checkpoint_after: bool,
}

impl Transaction {
    pub fn new(
        table: &DeltaTable,
        read_snapshot: Option<Arc<Snapshot>>,
        operation: Operation,
    ) -> Self {
        Transaction {
            table: table.clone(),
            read_snapshot,
            read_set: ReadSet::default(),
            actions: Vec::new(),
            operation,
            operation_parameters: Map::new(),
            metrics: Default::default(),
            txn_id: table.env.ids.uuid(),
            affected_rows: None,
            events: Vec::new(),
            started_ms: table.env.clock.now_ms(),
            app_metadata: Map::new(),
            change_data: Default::default(),
            identity_marks: Default::default(),
            identity_pinned: false,
            uploads: Default::default(),
            metadata_intent: None,
            check_time: std::time::Duration::ZERO,
            record_when_empty: false,
            checkpoint_after: true,
        }
    }

    /// Adds a caller field to the commitInfo (any JSON value). Rules, so that every reader of the
    /// log parses what it finds:
    /// - a field the commit writes itself (`operation`, `readVersion`, `timestamp`, …) is
    ///   refused: the log must say what the transaction did and read;
    /// - `operationParameters` must be an object; its entries are added to the operation's own
    ///   (which win), each value as text (Spark reads a map of strings);
    /// - the fields Spark and Kernel read as text (`userId`, `userName`, `clusterId`,
    ///   `userMetadata`, `kernelVersion`) must be strings; `job` and `notebook` objects and
    ///   `engineCommitInfo` an object, each holding scalars only (Spark's `JobInfo` and
    ///   `NotebookInfo` have text fields; Kernel's `engineCommitInfo` is a map of strings, so its
    ///   values are stored as text); NULL is accepted for any of them (read as absent).
    pub fn set_app_metadata(&mut self, key: &str, value: Value) -> Result<()> {
        const RESERVED: &[&str] = &[
            "version",
            "timestamp",
            "inCommitTimestamp",
            "operation",
            "readVersion",
            "isolationLevel",
            "isBlindAppend",
            "operationMetrics",
            "engineInfo",
            "txnId",
            "tags",
        ];
        if RESERVED.contains(&key) {
            return Err(EngineError::invalid(format!(
                "commit metadata key {key:?} is a commitInfo field"
            )));
        }
        let kind_error = |expected: &str| {
            EngineError::invalid(format!(
                "commit metadata key {key:?} must be {expected} (commitInfo's type), got {value}"
            ))
        };
        match key {
            "operationParameters" => {
                let Value::Object(entries) = &value else {
                    return Err(kind_error("an object"));
                };
                for (k, v) in entries {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    self.operation_parameters
                        .entry(k.clone())
                        .or_insert(Value::String(text));
                }
                return Ok(());
            }
            _ if value.is_null() => {}
            "userId" | "userName" | "clusterId" | "userMetadata" | "kernelVersion"
                if !value.is_string() =>
            {
                return Err(kind_error("a string"));
            }
            "job" | "notebook" | "engineCommitInfo" => {
                let Value::Object(entries) = &value else {
                    return Err(kind_error("an object"));
                };
                if entries.values().any(|v| v.is_object() || v.is_array()) {
                    return Err(kind_error("an object of scalar values"));
                }
                if key == "engineCommitInfo" {
                    let text: Map<String, Value> = entries
                        .iter()
                        .map(|(k, v)| {
                            let t = match v {
                                Value::String(s) => Value::String(s.clone()),
                                Value::Null => Value::Null,
                                other => Value::String(other.to_string()),
                            };
                            (k.clone(), t)
                        })
                        .collect();
                    self.app_metadata
                        .insert(key.to_string(), Value::Object(text));
                    return Ok(());
                }
            }
            _ => {}
        }
        self.app_metadata.insert(key.to_string(), value);
        Ok(())
    }

    /// What the operation counted so far (its commitInfo's `operationMetrics`).
    pub fn metrics(&self) -> &crate::operation_metrics::OperationMetrics {
        &self.metrics
    }

    pub fn snapshot(&self) -> Result<&Arc<Snapshot>> {
        self.read_snapshot
            .as_ref()
            .ok_or_else(|| EngineError::Internal("transaction has no read snapshot".into()))
    }

    pub fn add_file(&mut self, add: Add) {
        self.actions.push(Action::Add(add));
    }

    pub fn remove_file(&mut self, rm: Remove) {
        self.actions.push(Action::Remove(rm));
    }

    pub fn adds(&self) -> impl Iterator<Item = &Add> {
        self.actions.iter().filter_map(Action::as_add)
    }

    pub fn removes(&self) -> impl Iterator<Item = &Remove> {
        self.actions.iter().filter_map(Action::as_remove)
    }

    /// Only adds and no reads: a blind append.
    pub fn is_blind_append(&self) -> bool {
        self.read_set.is_empty()
            && self.actions.iter().all(|a| {
                matches!(
                    a,
                    Action::Add(_) | Action::Txn(_) | Action::DomainMetadata(_)
                )
            })
            && self.adds().next().is_some()
    }

    /// Does any file action change data?
    pub fn changes_data(&self) -> bool {
        self.actions.iter().any(|a| match a {
            Action::Add(x) => x.data_change,
            Action::Remove(x) => x.data_change,
            _ => false,
        })
    }

    /// The isolation level for this commit: the table's (or configured) level, downgraded to
    /// SnapshotIsolation for commits that change no data and hold only file actions (a
    /// compaction). A commit with nothing staged (an INSERT … SELECT that found no row, recorded
    /// as a version) keeps the table's level: what it read is checked like any statement's, so it
    /// aborts when a concurrent commit added rows its query would have copied.
    pub fn isolation_level(&self) -> IsolationLevel {
        let only_files = !self.actions.is_empty()
            && self.actions.iter().all(|a| match a {
                Action::Add(_) | Action::Remove(_) => true,
                Action::DomainMetadata(d) => d.domain == "delta.rowTracking",
                _ => false,
            });
        if only_files && !self.changes_data() && self.read_snapshot.is_some() {
            return IsolationLevel::SnapshotIsolation;
        }
        if let Some(level) = self.table.conflict.isolation {
            return level;
        }
        match self.read_snapshot.as_ref().and_then(|s| {
            s.property(delta_rlc_protocol::table_properties::TableProperty::IsolationLevel)
        }) {
            Some("Serializable") => IsolationLevel::Serializable,
            _ => IsolationLevel::WriteSerializable,
        }
    }

    /// Every commit uses one dataChange value for all its file actions.
    pub fn validate(&self) -> Result<()> {
        let mut seen: Option<bool> = None;
        for a in &self.actions {
            let dc = match a {
                Action::Add(x) => x.data_change,
                Action::Remove(x) => x.data_change,
                _ => continue,
            };
            if seen.is_some_and(|s| s != dc) {
                return Err(EngineError::Internal(
                    "a commit mixes dataChange=true and dataChange=false".into(),
                ));
            }
            seen = Some(dc);
        }
        let mut add_paths = std::collections::HashSet::new();
        let mut rm_paths = std::collections::HashSet::new();
        for a in &self.actions {
            match a {
                Action::Add(x) if !add_paths.insert(x.path.clone()) => {
                    return Err(EngineError::Internal(format!(
                        "duplicate add for {}",
                        x.path
                    )))
                }
                Action::Remove(x) if !rm_paths.insert(x.path.clone()) => {
                    return Err(EngineError::Internal(format!(
                        "duplicate remove for {}",
                        x.path
                    )))
                }
                _ => {}
            }
        }
        Ok(())
    }
}
