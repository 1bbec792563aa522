//! Durable put-if-absent on a local filesystem: write a unique temporary file in the target
//! directory, fsync it, hard-link it to the final name (the link fails atomically if the name
//! exists — never replaces), remove the temporary name, fsync the directory.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::Path;

pub(crate) enum LocalPut {
    Created,
    AlreadyExists,
}

pub(crate) fn put_if_absent_durable(
    target: &Path,
    bytes: &[u8],
    unique: &str,
) -> std::io::Result<LocalPut> {
    let dir = target
        .parent()
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "no parent"))?;
    fs::create_dir_all(dir)?;
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("commit");
    let tmp = dir.join(format!(".{name}.{unique}.tmp"));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        match fs::hard_link(&tmp, target) {
            Ok(()) => Ok(LocalPut::Created),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(LocalPut::AlreadyExists),
            Err(e) => Err(e),
        }
    })();
    let _ = fs::remove_file(&tmp);
    if matches!(result, Ok(LocalPut::Created)) {
        // Make the new directory entry durable. A failure here leaves the outcome unknown.
        File::open(dir)?.sync_all()?;
    }
    result
}
