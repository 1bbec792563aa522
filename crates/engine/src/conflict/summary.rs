//! A winning commit, read from its own JSON file and summarized for the checks.

use delta_rlc_protocol::actions::{
    Action, Add, CommitInfo, DomainMetadata, Metadata, Protocol, Remove, Txn,
};
use delta_rlc_protocol::table_path::TableRoot;

use crate::error::Result;

#[derive(Debug, Clone)]
pub struct WinningCommit {
    pub version: u64,
    pub commit_info: Option<CommitInfo>,
    pub protocol: Option<Protocol>,
    pub metadata: Option<Metadata>,
    pub txns: Vec<Txn>,
    pub domains: Vec<DomainMetadata>,
    /// Paths resolved (decoded, relative to the root).
    pub adds: Vec<Add>,
    pub removes: Vec<Remove>,
}

impl WinningCommit {
    pub fn from_actions(version: u64, actions: Vec<Action>, root: &TableRoot) -> Result<Self> {
        let mut w = WinningCommit {
            version,
            commit_info: None,
            protocol: None,
            metadata: None,
            txns: Vec::new(),
            domains: Vec::new(),
            adds: Vec::new(),
            removes: Vec::new(),
        };
        for a in actions {
            match a {
                Action::CommitInfo(ci) => w.commit_info = Some(ci),
                Action::Protocol(p) => w.protocol = Some(p),
                Action::Metadata(m) => w.metadata = Some(m),
                Action::Txn(t) => w.txns.push(t),
                Action::DomainMetadata(d) => w.domains.push(d),
                Action::Add(mut add) => {
                    add.path = root.resolve(&add.path)?;
                    w.adds.push(add);
                }
                Action::Remove(mut rm) => {
                    rm.path = root.resolve(&rm.path)?;
                    w.removes.push(rm);
                }
                _ => {}
            }
        }
        Ok(w)
    }

    pub fn operation(&self) -> String {
        self.commit_info
            .as_ref()
            .and_then(|c| c.operation.clone())
            .unwrap_or_else(|| "TRANSACTION".to_string())
    }

    /// True only when the winner says so; a missing flag counts as "changed data" (OSS rule).
    pub fn is_blind_append(&self) -> bool {
        self.commit_info
            .as_ref()
            .and_then(|c| c.is_blind_append)
            .unwrap_or(false)
    }

    pub fn row_id_high_water_mark(&self) -> Option<i64> {
        let d = self
            .domains
            .iter()
            .find(|d| d.domain == "delta.rowTracking")?;
        let v: serde_json::Value = serde_json::from_str(&d.configuration).ok()?;
        v.get("rowIdHighWaterMark")?.as_i64()
    }

    pub fn in_commit_timestamp(&self) -> Option<i64> {
        self.commit_info
            .as_ref()
            .and_then(|c| c.in_commit_timestamp)
    }
}
