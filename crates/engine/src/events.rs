//! Reconcile and skip events: what the planner and the conflict checker report beside a commit
//! (scenario output, logs, the library's commit outcome). A leaf: imports nothing from the crate.

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
