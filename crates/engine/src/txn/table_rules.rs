//! Rules a table's configuration sets for every commit, checked before the first attempt:
//! append-only tables lose no rows, and a table with Iceberg compatibility turned on is not
//! written (its rules are not implemented here). Both read the commit's own metadata when it
//! changes the configuration, else the read snapshot's.

use delta_rlc_protocol::actions::Action;

use super::Transaction;
use crate::error::{EngineError, Result};

impl Transaction {
    /// On an append-only table (`delta.appendOnly`, as this commit's own metadata or the read
    /// snapshot says) no commit removes rows: a remove with `dataChange` is refused, whatever the
    /// statement (DELETE, UPDATE, MERGE, an overwrite). Compaction (`dataChange = false`) is not.
    pub(super) fn check_append_only(&self) -> Result<()> {
        let own = self.actions.iter().find_map(|a| match a {
            Action::Metadata(m) => Some(
                m.configuration
                    .get("delta.appendOnly")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            ),
            _ => None,
        });
        let append_only = own.unwrap_or_else(|| {
            self.read_snapshot.as_ref().is_some_and(|s| {
                s.property_true(delta_rlc_protocol::table_properties::TableProperty::AppendOnly)
            })
        });
        let removes = self
            .actions
            .iter()
            .any(|a| matches!(a, Action::Remove(r) if r.data_change));
        if append_only && removes {
            return Err(EngineError::invalid(format!(
                "table is append-only (delta.appendOnly=true): {} would remove or change rows",
                self.operation
            )));
        }
        Ok(())
    }

    /// Refuses the commit when the table's configuration turns Iceberg compatibility on
    /// (`delta.enableIcebergCompatV1`/`V2`): the feature may be listed as supported, but once
    /// active every writer must keep its rules, which this engine does not implement.
    pub(super) fn check_iceberg_compat(&self) -> Result<()> {
        let configuration = self
            .actions
            .iter()
            .find_map(|a| match a {
                Action::Metadata(m) => Some(&m.configuration),
                _ => None,
            })
            .or_else(|| {
                self.read_snapshot
                    .as_ref()
                    .map(|s| &s.metadata.configuration)
            });
        match configuration.and_then(delta_rlc_protocol::features::iceberg_compat_active) {
            Some(key) => Err(EngineError::Unsupported(format!(
                "writing a table with {key} = true (Iceberg compatibility) is not supported"
            ))),
            None => Ok(()),
        }
    }
}
