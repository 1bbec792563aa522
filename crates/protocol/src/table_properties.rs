//! The table properties (`metaData.configuration`) this engine reads or accepts, each named once:
//! its key as Delta spells it, and how a value is read ([`ValueKind`]). Everything else in the
//! crates names a property by its [`TableProperty`], never by its text.
//!
//! Keys are matched exactly, as they are stored: Spark accepts `delta.*` keys in any case when
//! they are set, but a log holds the spelling given, and a reader that matched loosely could
//! read a property another engine does not (the conflict checker treats an unknown spelling as
//! an unknown key, which aborts).

use std::collections::BTreeMap;

/// One table property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum TableProperty {
    AppendOnly,
    EnableDeletionVectors,
    EnableRowTracking,
    /// Row ids stop being assigned (Delta's suspension of row tracking).
    RowTrackingSuspended,
    EnableChangeDataFeed,
    EnableInCommitTimestamps,
    InCommitTimestampEnablementVersion,
    InCommitTimestampEnablementTimestamp,
    EnableTypeWidening,
    ColumnMappingMode,
    ColumnMappingMaxColumnId,
    MaterializedRowIdColumnName,
    MaterializedRowCommitVersionColumnName,
    IsolationLevel,
    CheckpointInterval,
    CheckpointPolicy,
    CheckpointRetentionDuration,
    CheckpointWriteStatsAsJson,
    CheckpointWriteStatsAsStruct,
    LogRetentionDuration,
    DeletedFileRetentionDuration,
    SetTransactionRetentionDuration,
    DataSkippingNumIndexedCols,
    DataSkippingStatsColumns,
    TargetFileSize,
    TuneFileSizesForRewrites,
    AutoOptimizeOptimizeWrite,
    AutoOptimizeAutoCompact,
}

/// How a property's value is written, as Delta Spark validates it when the property is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` or `false`, in any case.
    Bool,
    /// A whole number no smaller than `min`.
    Integer { min: i64 },
    /// A calendar interval (`interval 7 days`).
    Interval,
    /// Text with rules of its own (checked where it is read), or managed by the engine.
    Text,
}

impl TableProperty {
    /// Every property, for [`TableProperty::parse`] and tests.
    pub const ALL: [TableProperty; 28] = [
        TableProperty::AppendOnly,
        TableProperty::EnableDeletionVectors,
        TableProperty::EnableRowTracking,
        TableProperty::RowTrackingSuspended,
        TableProperty::EnableChangeDataFeed,
        TableProperty::EnableInCommitTimestamps,
        TableProperty::InCommitTimestampEnablementVersion,
        TableProperty::InCommitTimestampEnablementTimestamp,
        TableProperty::EnableTypeWidening,
        TableProperty::ColumnMappingMode,
        TableProperty::ColumnMappingMaxColumnId,
        TableProperty::MaterializedRowIdColumnName,
        TableProperty::MaterializedRowCommitVersionColumnName,
        TableProperty::IsolationLevel,
        TableProperty::CheckpointInterval,
        TableProperty::CheckpointPolicy,
        TableProperty::CheckpointRetentionDuration,
        TableProperty::CheckpointWriteStatsAsJson,
        TableProperty::CheckpointWriteStatsAsStruct,
        TableProperty::LogRetentionDuration,
        TableProperty::DeletedFileRetentionDuration,
        TableProperty::SetTransactionRetentionDuration,
        TableProperty::DataSkippingNumIndexedCols,
        TableProperty::DataSkippingStatsColumns,
        TableProperty::TargetFileSize,
        TableProperty::TuneFileSizesForRewrites,
        TableProperty::AutoOptimizeOptimizeWrite,
        TableProperty::AutoOptimizeAutoCompact,
    ];

    /// The key as the log stores it.
    pub const fn key(self) -> &'static str {
        use TableProperty::*;
        match self {
            AppendOnly => "delta.appendOnly",
            EnableDeletionVectors => "delta.enableDeletionVectors",
            EnableRowTracking => "delta.enableRowTracking",
            RowTrackingSuspended => "delta.rowTrackingSuspended",
            EnableChangeDataFeed => "delta.enableChangeDataFeed",
            EnableInCommitTimestamps => "delta.enableInCommitTimestamps",
            InCommitTimestampEnablementVersion => "delta.inCommitTimestampEnablementVersion",
            InCommitTimestampEnablementTimestamp => "delta.inCommitTimestampEnablementTimestamp",
            EnableTypeWidening => "delta.enableTypeWidening",
            ColumnMappingMode => "delta.columnMapping.mode",
            ColumnMappingMaxColumnId => "delta.columnMapping.maxColumnId",
            MaterializedRowIdColumnName => "delta.rowTracking.materializedRowIdColumnName",
            MaterializedRowCommitVersionColumnName => {
                "delta.rowTracking.materializedRowCommitVersionColumnName"
            }
            IsolationLevel => "delta.isolationLevel",
            CheckpointInterval => "delta.checkpointInterval",
            CheckpointPolicy => "delta.checkpointPolicy",
            CheckpointRetentionDuration => "delta.checkpointRetentionDuration",
            CheckpointWriteStatsAsJson => "delta.checkpoint.writeStatsAsJson",
            CheckpointWriteStatsAsStruct => "delta.checkpoint.writeStatsAsStruct",
            LogRetentionDuration => "delta.logRetentionDuration",
            DeletedFileRetentionDuration => "delta.deletedFileRetentionDuration",
            SetTransactionRetentionDuration => "delta.setTransactionRetentionDuration",
            DataSkippingNumIndexedCols => "delta.dataSkippingNumIndexedCols",
            DataSkippingStatsColumns => "delta.dataSkippingStatsColumns",
            TargetFileSize => "delta.targetFileSize",
            TuneFileSizesForRewrites => "delta.tuneFileSizesForRewrites",
            AutoOptimizeOptimizeWrite => "delta.autoOptimize.optimizeWrite",
            AutoOptimizeAutoCompact => "delta.autoOptimize.autoCompact",
        }
    }

    /// How its value is written.
    pub const fn kind(self) -> ValueKind {
        use TableProperty::*;
        match self {
            AppendOnly
            | EnableDeletionVectors
            | EnableRowTracking
            | RowTrackingSuspended
            | EnableChangeDataFeed
            | EnableInCommitTimestamps
            | EnableTypeWidening
            | CheckpointWriteStatsAsJson
            | CheckpointWriteStatsAsStruct
            | TuneFileSizesForRewrites
            | AutoOptimizeOptimizeWrite
            | AutoOptimizeAutoCompact => ValueKind::Bool,
            CheckpointInterval | TargetFileSize => ValueKind::Integer { min: 1 },
            // -1 indexes every column.
            DataSkippingNumIndexedCols => ValueKind::Integer { min: -1 },
            LogRetentionDuration
            | DeletedFileRetentionDuration
            | CheckpointRetentionDuration
            | SetTransactionRetentionDuration => ValueKind::Interval,
            InCommitTimestampEnablementVersion
            | InCommitTimestampEnablementTimestamp
            | ColumnMappingMode
            | ColumnMappingMaxColumnId
            | MaterializedRowIdColumnName
            | MaterializedRowCommitVersionColumnName
            | IsolationLevel
            | CheckpointPolicy
            | DataSkippingStatsColumns => ValueKind::Text,
        }
    }

    /// Whether a user may set it with CREATE TABLE or ALTER TABLE … SET TBLPROPERTIES here: the
    /// properties this engine honours. The others are the engine's to write (row tracking's
    /// column names, the in-commit-timestamp enablement, the column-id high-water mark), or ones
    /// it does not act on and so refuses rather than store a promise it would not keep.
    pub const fn settable(self) -> bool {
        use TableProperty::*;
        matches!(
            self,
            EnableDeletionVectors
                | EnableRowTracking
                | CheckpointInterval
                | DataSkippingNumIndexedCols
                | DataSkippingStatsColumns
                | AppendOnly
                | IsolationLevel
                | LogRetentionDuration
                | DeletedFileRetentionDuration
                | EnableInCommitTimestamps
                | TargetFileSize
                | CheckpointWriteStatsAsJson
                | CheckpointWriteStatsAsStruct
                | ColumnMappingMode
                | EnableTypeWidening
                | EnableChangeDataFeed
        )
    }

    /// The property a stored key names (exact spelling), if it is one of these.
    pub fn parse(key: &str) -> Option<TableProperty> {
        TableProperty::ALL.into_iter().find(|p| p.key() == key)
    }

    /// Its value in `config`.
    pub fn get(self, config: &BTreeMap<String, String>) -> Option<&str> {
        config.get(self.key()).map(String::as_str)
    }

    /// Whether `config` sets it to `true` (any case), as Delta reads a boolean property; unset or
    /// any other text is false.
    pub fn is_true(self, config: &BTreeMap<String, String>) -> bool {
        is_true(self.get(config))
    }
}

impl std::fmt::Display for TableProperty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// A boolean property's value read as Delta reads it: `true` in any case; anything else is false.
pub fn is_true(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_exactly_and_are_distinct() {
        for p in TableProperty::ALL {
            assert_eq!(TableProperty::parse(p.key()), Some(p));
            assert_eq!(TableProperty::parse(&p.key().to_ascii_lowercase()), {
                // Only keys without capitals survive lower-casing.
                (p.key() == p.key().to_ascii_lowercase()).then_some(p)
            });
        }
        let mut keys: Vec<_> = TableProperty::ALL.iter().map(|p| p.key()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), TableProperty::ALL.len());
    }

    #[test]
    fn booleans_read_as_delta_reads_them() {
        let mut c = BTreeMap::new();
        assert!(!TableProperty::AppendOnly.is_true(&c));
        c.insert("delta.appendOnly".to_string(), "TRUE".to_string());
        assert!(TableProperty::AppendOnly.is_true(&c));
        c.insert("delta.appendOnly".to_string(), "yes".to_string());
        assert!(!TableProperty::AppendOnly.is_true(&c));
    }
}
