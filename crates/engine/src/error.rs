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
    Conflict(Box<crate::conflict::ConflictError>),
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
                | ProtocolError::UnsupportedProtocolVersion { .. } => ErrorKind::Unsupported,
                _ => ErrorKind::CorruptTable,
            },
            EngineError::Storage(s) => match s.kind {
                StorageErrorKind::NotFound => ErrorKind::NotFound,
                StorageErrorKind::InvalidPath => ErrorKind::CorruptTable,
                StorageErrorKind::InvalidLocation => ErrorKind::InvalidArgument,
                StorageErrorKind::AlreadyExists | StorageErrorKind::Io => ErrorKind::Unavailable,
            },
            EngineError::Arrow(_) | EngineError::Parquet(_) => ErrorKind::CorruptTable,
            EngineError::DataFusion(e) => match e.as_ref() {
                datafusion::error::DataFusionError::SQL(..)
                | datafusion::error::DataFusionError::Plan(_)
                | datafusion::error::DataFusionError::SchemaError(..) => ErrorKind::InvalidArgument,
                // SQL that DataFusion does not implement is a feature gap, not bad input.
                datafusion::error::DataFusionError::NotImplemented(_) => ErrorKind::Unsupported,
                datafusion::error::DataFusionError::ArrowError(..)
                | datafusion::error::DataFusionError::Execution(_) => ErrorKind::InvalidArgument,
                _ => ErrorKind::Internal,
            },
            EngineError::InvalidArgument(_) => ErrorKind::InvalidArgument,
            EngineError::NotFound(_) => ErrorKind::NotFound,
            EngineError::Corrupt(_) => ErrorKind::CorruptTable,
            EngineError::Unsupported(_) => ErrorKind::Unsupported,
            EngineError::CommitUnknown(_) => ErrorKind::CommitUnknown,
            EngineError::Conflict(_) => ErrorKind::Conflict,
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

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Error messages are one line (the CLI prints exactly one).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
