//! The conflict checker: for each winning commit, in OSS order — protocol, metadata, domain metadata,
//! application ids, then the file-level checks (append, delete/read, delete/delete). File-level
//! checks are chains of tiers; a tier may drop a file from the conflicting set only when it proves no
//! overlap. The first file no tier can clear becomes the conflict, naming the last tier tried.

pub mod abort_reason;
pub mod budget;
mod checks;
mod domains;
pub mod identity_rebase;
pub mod mapping_upgrade;
pub mod metadata_change;
pub mod metadata_pair;
pub mod reconcile;
mod row_tracking_change;
pub mod rows;
mod summary;
pub mod tiers;
pub mod type_change;
mod vacuum_restore;

pub use checks::{check_winner, CheckInput, CheckOutcome, LoserState};
pub use summary::WinningCommit;

// The settings, the error and the events live in leaf modules (ops and the SQL layer use them
// without importing the checker); re-exported here for callers of the checker.
pub use crate::conflict_config::{ConflictConfig, IsolationLevel, Switch};
pub use crate::conflict_error::{AbortReason, ConflictError, ConflictKind};
pub use crate::events::Event;
