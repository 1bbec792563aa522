//! `scenario run`: the conflict playground and our conflict-test format. A scenario creates a table
//! `t`, runs setup statements, then steps transactions through their phases in the given order
//! (`X.start` = read, plan and write files; `X.commit` = the commit loop with every check and
//! reconciler; `X.run` = both), and checks the expected outcomes, events and query results.

mod format;
pub mod matrix;
mod run;

pub use format::{parse, ScenarioFile};
pub use run::{run_scenario, ScenarioReport, TxnOutcome};
