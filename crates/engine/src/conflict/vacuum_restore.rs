//! A winner that announced a VACUUM (`VACUUM START`) against a loser that adds back files it did
//! not write (RESTORE).
//!
//! VACUUM commits `VACUUM START` and only then deletes: files named by tombstones older than the
//! retention, and (FULL) files no version names. A RESTORE re-adds exactly such files, having
//! checked they exist when it planned. If the VACUUM's announcement landed after the RESTORE read,
//! the files may be gone by the time the RESTORE commits, and the table would name missing files:
//! so this is always a conflict, whatever the files. The other orders are closed elsewhere: a
//! VACUUM whose snapshot missed a RESTORE keeps every file a commit before its announcement added
//! back (`vacuum.rs`), and a RESTORE planned while a VACUUM is still deleting is refused at planning
//! (`vacuum::vacuum_in_flight`). Skipping nothing here: the check only ever aborts.

use super::checks::{conflict, LoserState};
use super::summary::WinningCommit;
use crate::conflict_error::ConflictKind;
use crate::error::Result;

pub(super) fn check(state: &LoserState, w: &WinningCommit) -> Result<()> {
    if !state.read_set.restores_files
        || w.operation() != crate::operation::Operation::VacuumStart.as_str()
    {
        return Ok(());
    }
    Err(conflict(
        ConflictKind::ConcurrentDeleteRead,
        w,
        vec![],
        Some(
            "a VACUUM began after this RESTORE read: the files it adds back may be deleted".into(),
        ),
        None,
    ))
}
