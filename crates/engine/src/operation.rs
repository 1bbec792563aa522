//! The operations this engine commits, by the names Delta Spark writes into commitInfo's
//! `operation` (`DeltaOperations.scala`), so `DESCRIBE HISTORY` reads the same from either engine.
//!
//! A transaction holds an [`Operation`]; the commit renders it with [`Operation::as_str`]. A
//! winner's commitInfo may come from any engine and may name an operation this list lacks: it is
//! read with [`Operation::parse`], and a name it does not know is `None` — never a guess.
//! A leaf: imports nothing from the crate (the checker and the transactions both read it).

use std::fmt;

/// One committed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// An append, an overwrite or a REPLACE WHERE.
    Write,
    Delete,
    Update,
    Merge,
    Optimize,
    CreateTable,
    CreateTableAsSelect,
    ReplaceTable,
    ReplaceTableAsSelect,
    Restore,
    VacuumStart,
    VacuumEnd,
    /// `FSCK REPAIR TABLE`.
    Fsck,
    /// `CONVERT TO DELTA`.
    Convert,
    ClusterBy,
    AddColumns,
    RenameColumn,
    DropColumns,
    ChangeColumn,
    SetTableProperties,
    UnsetTableProperties,
    AddConstraint,
    DropConstraint,
    AddFeature,
    /// A metadata change with no statement of its own (a MERGE's schema evolution).
    UpdateTableMetadata,
    /// An ALTER TABLE before its action is known (the action names itself when staged).
    Alter,
}

impl Operation {
    /// Every operation, for [`Operation::parse`] and tests.
    pub const ALL: [Operation; 26] = [
        Operation::Write,
        Operation::Delete,
        Operation::Update,
        Operation::Merge,
        Operation::Optimize,
        Operation::CreateTable,
        Operation::CreateTableAsSelect,
        Operation::ReplaceTable,
        Operation::ReplaceTableAsSelect,
        Operation::Restore,
        Operation::VacuumStart,
        Operation::VacuumEnd,
        Operation::Fsck,
        Operation::Convert,
        Operation::ClusterBy,
        Operation::AddColumns,
        Operation::RenameColumn,
        Operation::DropColumns,
        Operation::ChangeColumn,
        Operation::SetTableProperties,
        Operation::UnsetTableProperties,
        Operation::AddConstraint,
        Operation::DropConstraint,
        Operation::AddFeature,
        Operation::UpdateTableMetadata,
        Operation::Alter,
    ];

    /// The name commitInfo carries (Delta Spark's).
    pub const fn as_str(self) -> &'static str {
        match self {
            Operation::Write => "WRITE",
            Operation::Delete => "DELETE",
            Operation::Update => "UPDATE",
            Operation::Merge => "MERGE",
            Operation::Optimize => "OPTIMIZE",
            Operation::CreateTable => "CREATE TABLE",
            Operation::CreateTableAsSelect => "CREATE TABLE AS SELECT",
            Operation::ReplaceTable => "CREATE OR REPLACE TABLE",
            Operation::ReplaceTableAsSelect => "CREATE OR REPLACE TABLE AS SELECT",
            Operation::Restore => "RESTORE",
            Operation::VacuumStart => "VACUUM START",
            Operation::VacuumEnd => "VACUUM END",
            Operation::Fsck => "FSCK",
            Operation::Convert => "CONVERT",
            Operation::ClusterBy => "CLUSTER BY",
            Operation::AddColumns => "ADD COLUMNS",
            Operation::RenameColumn => "RENAME COLUMN",
            Operation::DropColumns => "DROP COLUMNS",
            Operation::ChangeColumn => "CHANGE COLUMN",
            Operation::SetTableProperties => "SET TBLPROPERTIES",
            Operation::UnsetTableProperties => "UNSET TBLPROPERTIES",
            Operation::AddConstraint => "ADD CONSTRAINT",
            Operation::DropConstraint => "DROP CONSTRAINT",
            Operation::AddFeature => "ADD FEATURE",
            Operation::UpdateTableMetadata => "UPDATE TABLE METADATA",
            Operation::Alter => "ALTER",
        }
    }

    /// The operation a commitInfo names, when it is one of ours; `None` for any other name (a
    /// winner written by another engine may name operations this engine never commits).
    pub fn parse(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Operation;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for op in Operation::ALL {
            assert_eq!(Operation::parse(op.as_str()), Some(op));
        }
        let mut names: Vec<_> = Operation::ALL.iter().map(|o| o.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Operation::ALL.len());
        assert_eq!(Operation::parse("STREAMING UPDATE"), None);
    }
}
