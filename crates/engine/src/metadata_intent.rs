//! What an ALTER TABLE statement names, recorded on its transaction by `ops/alter.rs` and read by
//! the conflict checker (`conflict/metadata_pair.rs`), which re-applies a metadata-only loser on a
//! concurrent winner's metadata **only from this**, never from a diff of the metadata alone: a
//! key set to the value it already had, or unset while absent, is still named (run after the
//! winner it would set or remove the winner's value), and a statement that records no intent
//! (RESTORE, a MERGE WITH SCHEMA EVOLUTION that matched nothing, …) is never re-applied: its
//! metadata depends on the whole table it read.

use std::collections::BTreeSet;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataIntent {
    /// Configuration keys the statement sets or unsets (a constraint is its `delta.constraints.*`
    /// key).
    pub keys: BTreeSet<String>,
    /// Top-level columns it adds, in order.
    pub new_columns: Vec<String>,
    /// Existing top-level columns whose nullability it sets.
    pub columns: BTreeSet<String>,
    /// It sets the table's name.
    pub name: bool,
    /// It sets the table's description.
    pub description: bool,
}

impl MetadataIntent {
    /// What two ALTERs of one transaction name together.
    pub fn union(mut self, other: MetadataIntent) -> MetadataIntent {
        self.keys.extend(other.keys);
        self.new_columns.extend(other.new_columns);
        self.columns.extend(other.columns);
        self.name |= other.name;
        self.description |= other.description;
        self
    }
}
