//! `COPY (query) TO 'target' [STORED AS f] …`: DataFusion writes the files; this module refuses
//! what must never be written. A target inside a Delta table (the folder itself, or anything below
//! a folder that holds a `_delta_log`) would overwrite committed log or data files, plant a fake
//! commit, or leave files the table does not know: refused, as Spark refuses writing plain files
//! into a Delta table's location. An unknown `STORED AS` format is refused rather than guessed.

use datafusion::sql::parser::CopyToStatement;

use super::session::SqlSession;
use crate::error::{EngineError, Result};

/// The formats DataFusion's COPY writes.
const FORMATS: &[&str] = &["CSV", "PARQUET", "JSON", "ARROW"];

/// At most this many folders above a target are checked (deeper paths are refused).
const MAX_DEPTH: usize = 64;

/// Checks a COPY statement (its target as written). Ok when the target is outside every Delta
/// table and the format is known.
pub(super) async fn check(session: &SqlSession, copy: &CopyToStatement) -> Result<()> {
    if let Some(f) = &copy.stored_as {
        if !FORMATS.iter().any(|k| k.eq_ignore_ascii_case(f)) {
            return Err(EngineError::invalid(format!(
                "COPY: unknown format {f} (supported: {})",
                FORMATS.join(", ")
            )));
        }
    }
    // `..` is resolved through links by the file system and as text by the writer: the two can
    // name different folders (a link, then `..`), so a target with one is refused.
    if copy.target.split(['/', '\\']).any(|part| part == "..") {
        return Err(EngineError::invalid(format!(
            "COPY: target {} has a '..' segment; give the folder without it",
            copy.target
        )));
    }
    // PARTITIONED BY writes below the target (`<target>/<col>=<value>/…`), into folders no check
    // can name before the rows exist: the target must be new or empty.
    if !copy.partitioned_by.is_empty() && !target_is_empty(session, &copy.target).await? {
        return Err(EngineError::invalid(format!(
            "COPY … PARTITIONED BY: target {} is not empty; write to a new or empty folder",
            copy.target
        )));
    }
    let folders = match local_target(&copy.target) {
        Some(path) => target_and_folders_above(&path),
        None => target_and_folders_above(&copy.target),
    };
    if folders.len() > MAX_DEPTH {
        return Err(EngineError::invalid(format!(
            "COPY: target {} is nested too deeply to check",
            copy.target
        )));
    }
    for folder in folders {
        if holds_delta_log(session, &folder).await? {
            return Err(EngineError::invalid(format!(
                "COPY: target {} is inside the Delta table at {folder}; write to a table with INSERT, or COPY to a folder outside it",
                copy.target
            )));
        }
    }
    Ok(())
}

/// The Delta table a new table at `location` would sit inside (a folder above it holding a
/// `_delta_log`), if any: its VACUUM would delete the inner table's files.
pub(super) async fn enclosing_table(
    session: &SqlSession,
    location: &str,
) -> Result<Option<String>> {
    let folders = match local_target(location) {
        Some(path) => target_and_folders_above(&path),
        None => target_and_folders_above(location),
    };
    if folders.len() > MAX_DEPTH {
        return Err(EngineError::invalid(format!(
            "{location} is nested too deeply to check"
        )));
    }
    for folder in folders.into_iter().skip(1) {
        if holds_delta_log(session, &folder).await? {
            return Ok(Some(folder));
        }
    }
    Ok(None)
}

/// A local target as the file system will resolve it: a `file://` URL decoded (`%63t` is `ct`,
/// `file://localhost/…` is `/…`), and the deepest folder that exists resolved through links (a
/// link to a folder inside a table is inside the table); the rest appended. None for other URLs.
fn local_target(target: &str) -> Option<String> {
    let path = if target.starts_with("file:") {
        url::Url::parse(target).ok()?.to_file_path().ok()?
    } else if target.contains("://") {
        return None;
    } else {
        std::path::PathBuf::from(target)
    };
    let mut existing = path.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            // The parts below do not exist (no links among them): `.` and `..` are lexical.
            for part in rest.iter().rev() {
                match part.to_str() {
                    Some(".") => {}
                    Some("..") => {
                        out.pop();
                    }
                    _ => out.push(part),
                }
            }
            return Some(out.to_string_lossy().into_owned());
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
        if existing.as_os_str().is_empty() {
            existing = std::path::Path::new(".");
        }
    }
}

/// `a/b/c` → [`a/b/c`, `a/b`, `a`, `.`]; a URL's folders end at its bucket (a table may live at
/// a bucket's root); an absolute path's at the first folder below `/`.
fn target_and_folders_above(target: &str) -> Vec<String> {
    let trimmed = target.trim_end_matches('/');
    let root_len = match trimmed.find("://") {
        Some(i) => trimmed[i + 3..]
            .find('/')
            .map_or(trimmed.len(), |j| i + 3 + j),
        None => 0,
    };
    let mut out = vec![trimmed.to_string()];
    let mut cur = trimmed;
    while let Some(i) = cur.rfind('/') {
        if i < root_len || i == 0 {
            break;
        }
        cur = &cur[..i];
        out.push(cur.to_string());
    }
    if !trimmed.contains("://") && !trimmed.starts_with('/') && !out.iter().any(|p| p == ".") {
        out.push(".".into());
    }
    out
}

/// Whether a COPY target holds nothing yet (a missing folder holds nothing).
async fn target_is_empty(session: &SqlSession, target: &str) -> Result<bool> {
    if let Some(local) = local_target(target) {
        let path = std::path::Path::new(&local);
        return Ok(match std::fs::read_dir(path) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => !path.exists(),
            Err(_) => false,
        });
    }
    let table = session.table(target)?;
    match table.store.list("").await {
        Ok(entries) => Ok(entries.is_empty()),
        Err(e) if e.kind == delta_rlc_storage::StorageErrorKind::NotFound => Ok(true),
        Err(e) => Err(EngineError::Storage(e)),
    }
}

/// Whether `folder` holds a non-empty `_delta_log` (a listing that finds nothing is no table; a
/// failed listing is an error, so the COPY is refused rather than risked).
async fn holds_delta_log(session: &SqlSession, folder: &str) -> Result<bool> {
    // A file (the target itself, existing) holds nothing.
    if super::table_locations::is_local_file(folder) {
        return Ok(false);
    }
    // A local `_delta_log` folder, even an empty one, is a table being made (or emptied): files
    // written beside it would be adopted by the table created there.
    if local_target(folder).is_some_and(|f| std::path::Path::new(&f).join("_delta_log").is_dir()) {
        return Ok(true);
    }
    let table = match session.table(folder) {
        Ok(t) => t,
        // Not a location a store can open (a file name with odd characters): no table there.
        Err(EngineError::Storage(e))
            if e.kind == delta_rlc_storage::StorageErrorKind::InvalidPath =>
        {
            return Ok(false)
        }
        Err(e) => return Err(e),
    };
    match table.store.list("_delta_log").await {
        Ok(entries) => Ok(!entries.is_empty()),
        Err(e) if e.kind == delta_rlc_storage::StorageErrorKind::NotFound => Ok(false),
        Err(e) => Err(EngineError::Storage(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::target_and_folders_above;

    #[test]
    fn folders_above_a_target() {
        assert_eq!(
            target_and_folders_above("./t/_delta_log/00.json"),
            vec!["./t/_delta_log/00.json", "./t/_delta_log", "./t", "."]
        );
        assert_eq!(
            target_and_folders_above("/data/t/x.csv"),
            vec!["/data/t/x.csv", "/data/t", "/data"]
        );
        assert_eq!(
            target_and_folders_above("s3://b/t/out/"),
            vec!["s3://b/t/out", "s3://b/t", "s3://b"]
        );
        assert_eq!(target_and_folders_above("out.csv"), vec!["out.csv", "."]);
    }
}
