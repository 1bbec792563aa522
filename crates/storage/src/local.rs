//! Durable put-if-absent on a local filesystem: write a unique temporary file in the target
//! directory, fsync it, hard-link it to the final name (the link fails atomically if the name
//! exists — never replaces), remove the temporary name, fsync the directory.
//!
//! Listing a directory from a name (`list_dir_after`): names come from `readdir` without a stat;
//! only those after the offset are stat'ed.

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

/// Files directly in `dir` (relative path `rel_dir`) named after `after`, unsorted. Entries are
/// described as object_store's local store describes them in a listing (a symbolic link by its
/// target; the e-tag `inode-mtime-size` in hex), so an object has one identity whichever way it
/// was listed; directories, dangling links and object_store's staging files are left out.
pub(crate) fn list_dir_after(
    dir: &Path,
    rel_dir: &str,
    after: &str,
) -> std::io::Result<Vec<crate::ObjectInfo>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.as_str() <= after || name.contains('#') {
            continue;
        }
        let meta = match fs::metadata(entry.path()) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if !meta.is_file() {
            continue;
        }
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .unwrap_or_default();
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0u64;
        let size = meta.len();
        out.push(crate::ObjectInfo {
            path: format!("{rel_dir}/{name}"),
            size,
            last_modified_ms: i64::try_from(modified.as_millis()).unwrap_or(i64::MAX),
            e_tag: Some(format!("{inode:x}-{:x}-{size:x}", modified.as_micros())),
        });
    }
    Ok(out)
}
