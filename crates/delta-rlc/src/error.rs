//! The one error type of the library: a kind that says whether a retry can help, a one-line
//! message, and the underlying cause as [`std::error::Error::source`].

use std::fmt;

pub use delta_rlc_engine::conflict::AbortReason;
use delta_rlc_engine::conflict::{ConflictError, ConflictKind as EngineConflictKind};
use delta_rlc_engine::error::ErrorKind as EngineKind;
use delta_rlc_engine::EngineError;

/// A result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, from the caller's point of view. New kinds may be added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is wrong: SQL, an expression, a column, a value that does not fit its column, an
    /// option. Retrying the same call fails the same way.
    InvalidInput,
    /// The data's columns do not match the table's (a missing or extra column).
    SchemaMismatch,
    /// The table (or version, or file) does not exist.
    NotFound,
    /// A concurrent commit truly conflicts with this one (no reconcile tier could prove the two
    /// disjoint). Nothing was committed; running the operation again on the new table state may
    /// succeed.
    Conflict(ConflictInfo),
    /// The commit may or may not have landed (the store did not answer); read the table before
    /// retrying.
    CommitUnknown,
    /// A feature, protocol version or statement this engine does not implement.
    Unsupported,
    /// The table's content violates the Delta protocol; do not retry.
    Corrupt,
    /// The object store or file system failed.
    Io {
        /// True when the failure is transient (a retry may succeed).
        retryable: bool,
    },
    /// A bug in delta-rlc.
    Internal,
}

/// Why a commit was refused: the winning commit and what could not be proven disjoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConflictInfo {
    /// The OSS Delta conflict class.
    pub kind: ConflictKind,
    /// Why it aborted, from a fixed list (`true-overlap`, `budget-exceeded`, …: see
    /// [`AbortReason`]).
    pub reason: AbortReason,
    /// The version of the concurrent commit that won, when one did.
    pub winning_version: Option<u64>,
    /// The winning commit's operation (`WRITE`, `DELETE`, `MERGE`, `OPTIMIZE`, …).
    pub winning_operation: Option<String>,
    /// Files of the winning commit involved in the conflict (a few; may be empty).
    pub files: Vec<String>,
    /// The read predicate the winner's files could match.
    pub predicate: Option<String>,
    /// The last reconcile tier that tried to prove disjointness and could not.
    pub tier: Option<String>,
    /// Reconcilers that failed on the winning commit (`name: reason`); a failure is a decline.
    pub reconcile_failures: Vec<String>,
    /// True when running the operation again may succeed (always, for conflicts).
    pub retryable: bool,
    /// How many times the statement ran: more than 1 only when re-execution on conflict
    /// ([`crate::ConflictSettings::retry_on_conflict`]) ran it again and every run aborted.
    pub statement_runs: u32,
}

/// The conflict classes of open-source Delta, plus the engine's own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConflictKind {
    /// The winner changed the protocol.
    ProtocolChanged,
    /// The winner changed the table's metadata (schema, properties).
    MetadataChanged,
    /// The winner committed the same application transaction id.
    ConcurrentTransaction,
    /// The winner changed a domain metadata this commit also changes.
    ConcurrentDomainMetadata,
    /// The winner added rows this transaction's reads could have seen.
    ConcurrentAppend,
    /// The winner removed a file this transaction read.
    ConcurrentDeleteRead,
    /// The winner removed a file this transaction also removes.
    ConcurrentDeleteDelete,
    /// The commit lost more races than its attempt bound allows.
    MaxCommitAttemptsExceeded,
    /// The transaction stayed open longer than VACUUM's safety floor allows.
    TransactionExpired,
}

impl ConflictKind {
    fn from_engine(k: EngineConflictKind) -> Self {
        match k {
            EngineConflictKind::ProtocolChanged => ConflictKind::ProtocolChanged,
            EngineConflictKind::MetadataChanged => ConflictKind::MetadataChanged,
            EngineConflictKind::ConcurrentTransaction => ConflictKind::ConcurrentTransaction,
            EngineConflictKind::ConcurrentDomainMetadata => ConflictKind::ConcurrentDomainMetadata,
            EngineConflictKind::ConcurrentAppend => ConflictKind::ConcurrentAppend,
            EngineConflictKind::ConcurrentDeleteRead => ConflictKind::ConcurrentDeleteRead,
            EngineConflictKind::ConcurrentDeleteDelete => ConflictKind::ConcurrentDeleteDelete,
            EngineConflictKind::MaxCommitAttemptsExceeded => {
                ConflictKind::MaxCommitAttemptsExceeded
            }
        }
    }

    /// The Delta name of the class (`ConcurrentAppend`, …).
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
            ConflictKind::TransactionExpired => "TransactionExpired",
        }
    }
}

/// The library's error. `Display` is one line; [`std::error::Error::source`] gives the cause.
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The conflict details, when this is a conflict.
    pub fn conflict(&self) -> Option<&ConflictInfo> {
        match &self.0.kind {
            ErrorKind::Conflict(c) => Some(c),
            _ => None,
        }
    }

    /// True when running the same operation again may succeed (conflicts, transient I/O, an
    /// unknown commit outcome after reading the table).
    pub fn is_retryable(&self) -> bool {
        match &self.0.kind {
            ErrorKind::Conflict(c) => c.retryable,
            ErrorKind::Io { retryable } => *retryable,
            ErrorKind::CommitUnknown => true,
            _ => false,
        }
    }

    /// The one-line message (the same as `Display`).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, message)
    }

    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error(Box::new(Inner {
            kind,
            message: message.into(),
            source: None,
        }))
    }
}

impl ConflictInfo {
    /// A conflict whose winner is not known.
    fn without_winner(kind: ConflictKind, reason: AbortReason) -> Self {
        ConflictInfo {
            kind,
            reason,
            winning_version: None,
            winning_operation: None,
            files: Vec::new(),
            predicate: None,
            tier: None,
            reconcile_failures: Vec::new(),
            retryable: true,
            statement_runs: 1,
        }
    }
}

fn conflict_info(c: &ConflictError) -> ConflictInfo {
    ConflictInfo {
        kind: ConflictKind::from_engine(c.kind),
        reason: c.reason,
        winning_version: Some(c.winning_version),
        winning_operation: Some(c.winning_operation.clone()),
        files: c.files.clone(),
        predicate: c.predicate.clone(),
        tier: c.tier.clone(),
        reconcile_failures: c.reconcile_failures.clone(),
        retryable: true,
        statement_runs: c.statement_runs,
    }
}

impl From<EngineError> for Error {
    fn from(e: EngineError) -> Self {
        let kind = match &e {
            EngineError::Conflict(c) => ErrorKind::Conflict(conflict_info(c)),
            EngineError::SchemaMismatch(_) => ErrorKind::SchemaMismatch,
            EngineError::TransactionExpired(_) => {
                ErrorKind::Conflict(ConflictInfo::without_winner(
                    ConflictKind::TransactionExpired,
                    AbortReason::TransactionExpired,
                ))
            }
            other => match other.kind() {
                // A conflict that reached us wrapped (e.g. through DataFusion) without its details.
                EngineKind::Conflict => ErrorKind::Conflict(ConflictInfo::without_winner(
                    ConflictKind::ConcurrentAppend,
                    AbortReason::PossibleOverlap,
                )),
                EngineKind::CommitUnknown => ErrorKind::CommitUnknown,
                EngineKind::Unavailable => ErrorKind::Io { retryable: true },
                EngineKind::InvalidArgument => ErrorKind::InvalidInput,
                EngineKind::NotFound => ErrorKind::NotFound,
                EngineKind::CorruptTable => ErrorKind::Corrupt,
                EngineKind::Unsupported => ErrorKind::Unsupported,
                EngineKind::Internal => ErrorKind::Internal,
            },
        };
        Error(Box::new(Inner {
            kind,
            message: e.to_string(),
            source: Some(Box::new(e)),
        }))
    }
}

/// Re-execution on conflict (`delta_rlc_engine::txn::reexecute`) decides on the engine error
/// underneath: only an error the engine proves left nothing committed runs the statement again.
impl delta_rlc_engine::txn::reexecute::RunError for Error {
    fn may_run_again(&self) -> bool {
        self.0
            .source
            .as_deref()
            .and_then(|s| s.downcast_ref::<EngineError>())
            .is_some_and(delta_rlc_engine::txn::reexecute::may_run_again)
    }

    fn after_runs(mut self, runs: u32) -> Self {
        match self.0.source.take().map(|s| s.downcast::<EngineError>()) {
            Some(Ok(engine)) => Error::from(
                delta_rlc_engine::txn::reexecute::RunError::after_runs(*engine, runs),
            ),
            Some(Err(other)) => {
                self.0.source = Some(other);
                self
            }
            None => self,
        }
    }
}

impl From<datafusion::error::DataFusionError> for Error {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        Error::from(EngineError::from(e))
    }
}

impl From<arrow::error::ArrowError> for Error {
    /// Arrow errors reach the caller from computing over the caller's own batches (casts, schema
    /// mismatches): bad input.
    fn from(e: arrow::error::ArrowError) -> Self {
        Error(Box::new(Inner {
            kind: ErrorKind::InvalidInput,
            message: e.to_string(),
            source: Some(Box::new(e)),
        }))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.0.kind)
            .field("message", &self.0.message)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
