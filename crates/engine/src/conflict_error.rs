//! Conflict errors: what a losing transaction is told. The checker and its tiers live in the
//! `conflict` module; this type explains an abort — kind, reason (from a fixed list), winning
//! version and operation, the files involved, the read predicate, and the last tier that could
//! not prove disjointness.

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

/// Why a losing transaction aborted: one reason from a fixed list, beside its OSS conflict class
/// (`ConflictKind`). The checker picks it where it aborts (`conflict/abort_reason.rs`); a caller
/// decides from it whether to retry as is, to narrow its statement, or to raise a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum AbortReason {
    /// A proof that reads rows found one the winner added, removed or changed among those the
    /// loser read or changed (or both deleted the same row): a true conflict.
    TrueOverlap,
    /// The winner's files may hold rows the loser's reads match (their statistics or partition
    /// values overlap the predicate) and no proof that reads rows cleared them.
    PossibleOverlap,
    /// A read predicate no tier can evaluate against a winner's files.
    PredicateNotUsable,
    /// The loser read the whole table, so any new or removed row may be one it read.
    WholeTableRead,
    /// A winner's file has no statistics, and no proof that reads rows cleared it.
    MissingStatistics,
    /// A tier or reconciler failed (an unreadable DV, an evaluation error) and no other proof
    /// held: failures only ever abort.
    ProofFailed,
    /// The attempt's reconcile budget (time or bytes read) ran out before a proof finished.
    BudgetExceeded,
    /// The proof that would apply is switched off (legacy mode, or the tier's switch).
    ReconcileOff,
    /// The winner changed the table's metadata in a way the loser cannot commit under.
    MetadataChange,
    /// The winner changed the protocol in a way the loser cannot commit under.
    ProtocolChange,
    /// The winner committed the same application transaction (`txn` app id).
    SameApplicationTransaction,
    /// The winner changed a domain metadata the loser also changes.
    DomainMetadata,
    /// Another writer created the table first.
    ConcurrentCreate,
    /// The commit lost more races than its attempt bound allows.
    AttemptsExhausted,
    /// The transaction stayed open longer than VACUUM's safety floor allows
    /// (`EngineError::TransactionExpired`, not a `ConflictError`).
    TransactionExpired,
}

impl AbortReason {
    /// Every reason, in the order of the list above.
    pub const ALL: [AbortReason; 15] = [
        AbortReason::TrueOverlap,
        AbortReason::PossibleOverlap,
        AbortReason::PredicateNotUsable,
        AbortReason::WholeTableRead,
        AbortReason::MissingStatistics,
        AbortReason::ProofFailed,
        AbortReason::BudgetExceeded,
        AbortReason::ReconcileOff,
        AbortReason::MetadataChange,
        AbortReason::ProtocolChange,
        AbortReason::SameApplicationTransaction,
        AbortReason::DomainMetadata,
        AbortReason::ConcurrentCreate,
        AbortReason::AttemptsExhausted,
        AbortReason::TransactionExpired,
    ];

    /// The stable name shown in messages, the Python exception's `reason` and scenario files.
    pub fn name(self) -> &'static str {
        match self {
            AbortReason::TrueOverlap => "true-overlap",
            AbortReason::PossibleOverlap => "possible-overlap",
            AbortReason::PredicateNotUsable => "predicate-not-usable",
            AbortReason::WholeTableRead => "whole-table-read",
            AbortReason::MissingStatistics => "missing-statistics",
            AbortReason::ProofFailed => "proof-failed",
            AbortReason::BudgetExceeded => "budget-exceeded",
            AbortReason::ReconcileOff => "reconcile-off",
            AbortReason::MetadataChange => "metadata-change",
            AbortReason::ProtocolChange => "protocol-change",
            AbortReason::SameApplicationTransaction => "same-application-transaction",
            AbortReason::DomainMetadata => "domain-metadata",
            AbortReason::ConcurrentCreate => "concurrent-create",
            AbortReason::AttemptsExhausted => "attempts-exhausted",
            AbortReason::TransactionExpired => "transaction-expired",
        }
    }

    pub fn parse(name: &str) -> Option<AbortReason> {
        AbortReason::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The reason a conflict of `kind` has until the checker knows more: whole-commit classes
    /// name their cause; a file-level one is a possible overlap (refined where it aborts).
    pub fn of_kind(kind: ConflictKind) -> AbortReason {
        match kind {
            ConflictKind::ProtocolChanged => AbortReason::ProtocolChange,
            ConflictKind::MetadataChanged => AbortReason::MetadataChange,
            ConflictKind::ConcurrentTransaction => AbortReason::SameApplicationTransaction,
            ConflictKind::ConcurrentDomainMetadata => AbortReason::DomainMetadata,
            ConflictKind::MaxCommitAttemptsExceeded => AbortReason::AttemptsExhausted,
            ConflictKind::ConcurrentAppend
            | ConflictKind::ConcurrentDeleteRead
            | ConflictKind::ConcurrentDeleteDelete => AbortReason::PossibleOverlap,
        }
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConflictError {
    pub kind: ConflictKind,
    /// Why the loser aborted, from the fixed list.
    pub reason: AbortReason,
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
        write!(f, "; reason: {}", self.reason)?;
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
