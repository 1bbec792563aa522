//! SQL through DataFusion. Statements are split in two phases so that tests and the scenario runner
//! can stop between them: [`SqlSession::prepare`] reads, plans and writes files (returning rows or an
//! uncommitted [`Transaction`]); committing is the caller's step. [`SqlSession::execute`] does both.

mod alter;
mod bind;
mod changes_fn;
mod copy;
mod delta_statements;
mod describe;
mod dml;
mod file_tables;
mod files_fn;
mod flatten;
mod insert;
mod merge;
mod output_names;
mod parser;
mod provider;
mod rows_fn;
mod scan_exec;
mod session;
mod session_objects;
mod settings;
mod statement;
mod table_locations;

pub use crate::expr_plan::strip_qualifiers;
pub use describe::Describe;
pub use provider::DeltaTableProvider;
pub use session::{Prepared, SqlSession, StatementOutput, StreamingOutput};
pub use statement::{split_statements, statement_complete};
