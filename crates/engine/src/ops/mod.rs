//! Table operations. Each builds a [`crate::Transaction`] (reads registered, files written, actions
//! staged) and leaves the commit to the caller, so tests and the scenario runner can stop a
//! transaction between planning and commit.

pub mod alter;
pub mod alter_columns;
pub mod cluster_by;
pub mod conform;
pub mod convert;
pub mod create;
pub mod delete;
pub mod dml;
pub mod insert;
pub mod merge;
pub mod merge_keys;
pub mod merge_probe;
pub mod nested_fields;
pub mod new_rows;
pub mod optimize;
pub mod repair;
pub mod restore;
pub mod schema_path;
pub mod update;

pub use create::{create_table_txn, CreateDefaults, CreateTableSpec};
pub use delete::delete_txn;
pub use insert::{insert_txn, insert_txn_stream, InsertMode};
pub use update::update_txn;
