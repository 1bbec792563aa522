//! Conflict errors: what a losing transaction is told. The checker and its tiers live in the
//! `txn` module; this type explains an abort — kind, winning version and operation, the files
//! involved, the read predicate, and the last tier that could not prove disjointness.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictKind {
    ProtocolChanged,
    MetadataChanged,
    ConcurrentTransaction,
    ConcurrentDomainMetadata,
    ConcurrentAppend,
    ConcurrentDeleteRead,
    ConcurrentDeleteDelete,
    MaxCommitAttemptsExceeded,
}

impl ConflictKind {
    pub fn name(self) -> &'static str {
        match self {
            ConflictKind::ProtocolChanged => "ProtocolChanged",
            ConflictKind::MetadataChanged => "MetadataChanged",
            ConflictKind::ConcurrentTransaction => "ConcurrentTransaction",
            ConflictKind::ConcurrentDomainMetadata => "ConcurrentDomainMetadata",
            ConflictKind::ConcurrentAppend => "ConcurrentAppend",
            ConflictKind::ConcurrentDeleteRead => "ConcurrentDeleteRead",
            ConflictKind::ConcurrentDeleteDelete => "ConcurrentDeleteDelete",
            ConflictKind::MaxCommitAttemptsExceeded => "MaxCommitAttemptsExceeded",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConflictError {
    pub kind: ConflictKind,
    pub winning_version: u64,
    pub winning_operation: String,
    pub files: Vec<String>,
    pub predicate: Option<String>,
    /// The last tier that tried to prove disjointness and could not.
    pub tier: Option<String>,
    /// Reconcilers that failed on this winner (`name: reason`); a failure is a decline.
    pub reconcile_failures: Vec<String>,
    /// How many times the statement ran before giving up (more than 1 only with re-execution
    /// on: `crate::txn::reexecute`).
    pub statement_runs: u32,
}

impl fmt::Display for ConflictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: a concurrent {} committed at version {}",
            self.kind.name(),
            self.winning_operation,
            self.winning_version
        )?;
        if !self.files.is_empty() {
            let shown: Vec<&str> = self.files.iter().take(3).map(String::as_str).collect();
            write!(f, "; file(s) {}", shown.join(", "))?;
            if self.files.len() > 3 {
                write!(f, " and {} more", self.files.len() - 3)?;
            }
        }
        // Whole-commit conflicts carry a reason (a domain, an app id, what in the metadata
        // changed); file-level ones the read predicate.
        let whole_commit = matches!(
            self.kind,
            ConflictKind::MetadataChanged
                | ConflictKind::ProtocolChanged
                | ConflictKind::ConcurrentDomainMetadata
                | ConflictKind::ConcurrentTransaction
        );
        if let Some(p) = &self.predicate {
            if whole_commit {
                write!(f, "; {p}")?;
            } else {
                write!(f, "; read predicate {p}")?;
            }
        }
        if let Some(t) = &self.tier {
            if whole_commit {
                write!(f, "; not proven compatible by {t}")?;
            } else {
                write!(f, "; not proven disjoint by {t}")?;
            }
        }
        if !self.reconcile_failures.is_empty() {
            write!(
                f,
                "; reconcile failed: {}",
                self.reconcile_failures.join("; ")
            )?;
        }
        if self.statement_runs > 1 {
            write!(
                f,
                "; the statement ran {} times (re-execution on conflict exhausted)",
                self.statement_runs
            )?;
        }
        Ok(())
    }
}
