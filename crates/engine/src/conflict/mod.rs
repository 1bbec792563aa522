//! The conflict checker: for each winning commit, in OSS order — protocol, metadata, domain metadata,
//! application ids, then the file-level checks (append, delete/read, delete/delete). File-level
//! checks are chains of tiers; a tier may drop a file from the conflicting set only when it proves no
//! overlap. The first file no tier can clear becomes the conflict, naming the last tier tried.

mod checks;
mod config;
mod error;
pub mod reconcile;
pub mod rows;
mod summary;
pub mod tiers;

pub use checks::{check_winner, CheckInput, CheckOutcome, LoserState};
pub use config::{ConflictConfig, IsolationLevel, Switch};
pub use error::{ConflictError, ConflictKind};
pub use summary::WinningCommit;

use serde_json::{Map, Value};

/// A reconcile or skip event, visible in scenario output and logs.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: String,
    pub fields: Map<String, Value>,
}

impl Event {
    pub fn new(name: &str, fields: Value) -> Self {
        Event {
            name: name.to_string(),
            fields: fields.as_object().cloned().unwrap_or_default(),
        }
    }
}
