//! Reconcile and skip events: what the planner and the conflict checker report beside a commit
//! (scenario output, logs, the library's commit outcome). A leaf: imports nothing from the crate.
//!
//! Every event this engine fires is one [`EventName`]; its text (`delta.…`) is what scenarios,
//! the CLI's `--verbose` output and the Rust and Python outcomes show.

use std::fmt;

use serde_json::{Map, Value};

/// The name of one kind of event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum EventName {
    /// MERGE did not read the target by the source's keys (the reason is a field).
    MergeSourceKeyReadDeclined,
    /// MERGE read the target through a predicate on the source's keys.
    MergeSourceKeyReadPredicate,
    /// MERGE probed candidate files for the source's keys before reading them.
    MergeKeyProbeRead,
    /// The MERGE join's shape and sizes.
    MergeJoin,
    /// The target rows a NOT MATCHED BY SOURCE clause reads, as a predicate.
    MergeNotMatchedBySourceReadPredicate,
    /// A winner's metadata taken over by the loser's commit.
    MetadataRebased,
    /// A concurrent metadata change reconciled with the loser's.
    MetadataChangeReconciled,
    /// Files of a winner proven disjoint from the read predicate by their statistics.
    DataSkippingFilesSkipped,
    /// Files a winner removed proven outside what the loser read.
    DeleteReadFilesSkipped,
    /// Identity values moved past a winner's.
    IdentityRebased,
    /// The loser's changes carried onto an OPTIMIZE winner's output files.
    OptimizeRemapped,
    /// The loser's OPTIMIZE rebuilt around a winner's changes.
    OptimizeReverseRemapped,
    /// The loser's changes moved onto a winner's rewritten rows by row id.
    RowIdRemapped,
    /// A winner's rewrite settled onto the loser's changes by row id.
    RowIdReverseRemapped,
    /// Both sides' deletion vectors merged on the same files.
    DeletionVectorsMerged,
}

impl EventName {
    /// The event's text.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventName::MergeSourceKeyReadDeclined => "delta.dml.merge.sourceKeyReadDeclined",
            EventName::MergeSourceKeyReadPredicate => "delta.dml.merge.sourceKeyReadPredicate",
            EventName::MergeKeyProbeRead => "delta.dml.merge.keyProbeRead",
            EventName::MergeJoin => "delta.dml.merge.join",
            EventName::MergeNotMatchedBySourceReadPredicate => {
                "delta.dml.merge.notMatchedBySourceReadPredicate"
            }
            EventName::MetadataRebased => "delta.rowLevelConcurrency.metadataRebased",
            EventName::MetadataChangeReconciled => {
                "delta.rowLevelConcurrency.metadataChangeReconciled"
            }
            EventName::DataSkippingFilesSkipped => {
                "delta.conflictDetection.dataSkipping.filesSkipped"
            }
            EventName::DeleteReadFilesSkipped => "delta.conflictDetection.deleteRead.filesSkipped",
            EventName::IdentityRebased => "delta.rowLevelConcurrency.identityRebased",
            EventName::OptimizeRemapped => "delta.optimize.conflictReconciliation.remapped",
            EventName::OptimizeReverseRemapped => {
                "delta.optimize.conflictReconciliation.reverseRemapped"
            }
            EventName::RowIdRemapped => "delta.rowTracking.conflictReconciliation.remapped",
            EventName::RowIdReverseRemapped => {
                "delta.rowTracking.conflictReconciliation.reverseRemapped"
            }
            EventName::DeletionVectorsMerged => "delta.rowLevelConcurrency.deletionVectorsMerged",
        }
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for EventName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EventName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for EventName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A reconcile or skip event, visible in scenario output and logs.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: EventName,
    pub fields: Map<String, Value>,
}

impl Event {
    pub fn new(name: EventName, fields: Value) -> Self {
        Event {
            name,
            fields: fields.as_object().cloned().unwrap_or_default(),
        }
    }
}
