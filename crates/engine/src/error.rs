//! The engine's public error: a kind that tells the caller whether a retry can help, plus a message.

use delta_rlc_protocol::ProtocolError;
use delta_rlc_storage::{StorageError, StorageErrorKind};
use thiserror::Error;

/// What kind of failure, from the caller's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A concurrent commit conflicts; retrying the whole transaction on a new snapshot may succeed.
    Conflict,
    /// The commit may or may not have landed; read the table before retrying.
    CommitUnknown,
    /// Transient storage failure; retry.
    Unavailable,
    /// Bad input from the user (SQL, arguments, values).
    InvalidArgument,
    /// The table is missing.
    NotFound,
    /// Table content violates the protocol; do not retry.
    CorruptTable,
    /// A feature or protocol version this engine does not implement.
    Unsupported,
    /// A bug.
    Internal,
}

impl ErrorKind {
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Conflict | ErrorKind::Unavailable | ErrorKind::CommitUnknown
        )
    }
}

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    #[error("{0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("{0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("{}", one_line(&.0.to_string()))]
    DataFusion(Box<datafusion::error::DataFusionError>),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotFound(String),
    #[error("corrupt table: {0}")]
    Corrupt(String),
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("commit outcome unknown: {0}")]
    CommitUnknown(String),
    #[error("{0}")]
    Conflict(Box<crate::conflict_error::ConflictError>),
    /// The data's columns cannot become the table's (schema evolution refused): an invalid
    /// argument whose callers (deltalake's API) tell it apart as a schema mismatch.
    #[error("{0}")]
    SchemaMismatch(String),
    /// The transaction stayed open past the limit VACUUM's safety floor relies on; run it again.
    #[error("transaction expired: {0}")]
    TransactionExpired(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<datafusion::error::DataFusionError> for EngineError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        // Unwrap errors we raised ourselves inside DataFusion callbacks.
        match e {
            datafusion::error::DataFusionError::External(inner) => {
                match inner.downcast::<EngineError>() {
                    Ok(ours) => *ours,
                    Err(other) => EngineError::DataFusion(Box::new(
                        datafusion::error::DataFusionError::External(other),
                    )),
                }
            }
            other => EngineError::DataFusion(Box::new(other)),
        }
    }
}

impl EngineError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Protocol(p) => match p {
                ProtocolError::UnsupportedReaderFeature(_)
                | ProtocolError::UnsupportedWriterFeature(_)
                | ProtocolError::UnsupportedProtocolVersion { .. }
                | ProtocolError::UnsupportedAction(_) => ErrorKind::Unsupported,
                _ => ErrorKind::CorruptTable,
            },
            EngineError::Storage(s) => match s.kind {
                StorageErrorKind::NotFound => ErrorKind::NotFound,
                StorageErrorKind::InvalidPath => ErrorKind::CorruptTable,
                StorageErrorKind::InvalidLocation => ErrorKind::InvalidArgument,
                StorageErrorKind::AlreadyExists | StorageErrorKind::Io => ErrorKind::Unavailable,
                // Only the checker's reads carry a budget, and it turns a refusal into an abort
                // (reason budget-exceeded); should one escape, retrying may help.
                StorageErrorKind::BudgetExceeded => ErrorKind::Unavailable,
                StorageErrorKind::Unsupported => ErrorKind::Unsupported,
            },
            EngineError::Arrow(_) | EngineError::Parquet(_) => ErrorKind::CorruptTable,
            EngineError::DataFusion(e) => datafusion_kind(e),
            EngineError::InvalidArgument(_) | EngineError::SchemaMismatch(_) => {
                ErrorKind::InvalidArgument
            }
            EngineError::NotFound(_) => ErrorKind::NotFound,
            EngineError::Corrupt(_) => ErrorKind::CorruptTable,
            EngineError::Unsupported(_) => ErrorKind::Unsupported,
            EngineError::CommitUnknown(_) => ErrorKind::CommitUnknown,
            EngineError::Conflict(_) | EngineError::TransactionExpired(_) => ErrorKind::Conflict,
            EngineError::Internal(_) => ErrorKind::Internal,
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        EngineError::InvalidArgument(one_line(&msg.into()))
    }

    pub fn corrupt(msg: impl Into<String>) -> Self {
        EngineError::Corrupt(msg.into())
    }

    /// For returning our errors through DataFusion callbacks.
    pub fn into_datafusion(self) -> datafusion::error::DataFusionError {
        datafusion::error::DataFusionError::External(Box::new(self))
    }
}

/// The kind of a DataFusion error, looking through the wrappers it adds (context, diagnostics,
/// shared and collected errors) to the error that says what went wrong.
fn datafusion_kind(e: &datafusion::error::DataFusionError) -> ErrorKind {
    use datafusion::error::DataFusionError as D;
    match e {
        D::Context(_, inner) | D::Diagnostic(_, inner) => datafusion_kind(inner),
        D::Shared(inner) => datafusion_kind(inner),
        D::Collection(errs) => errs.first().map_or(ErrorKind::Internal, datafusion_kind),
        D::External(inner) => match inner.downcast_ref::<EngineError>() {
            Some(ours) => ours.kind(),
            None => ErrorKind::Internal,
        },
        D::SQL(..) | D::Plan(_) | D::SchemaError(..) => ErrorKind::InvalidArgument,
        // SQL that DataFusion does not implement is a feature gap, not bad input.
        D::NotImplemented(_) => ErrorKind::Unsupported,
        D::ArrowError(..) | D::Execution(_) => ErrorKind::InvalidArgument,
        _ => ErrorKind::Internal,
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Error messages are one line (the CLI prints exactly one).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
