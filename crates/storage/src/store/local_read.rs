//! Local files: the check that keeps every operation under the table root, and reads of small
//! files on the calling thread.
//!
//! Why read on the calling thread: the object store's local reads hand each file to the blocking
//! pool twice (open, then read), and a full scan opens every file of the table. Measured on a
//! 4-writer full-scan UPDATE workload (W1s in BENCHMARKS.md), the thread hand-offs (futex waits
//! and wake-ups) were 16% of a writer's CPU samples, more than reading the bytes. A read of a file
//! up to [`INLINE_READ_MAX_BYTES`] from the page cache takes microseconds; larger files still go
//! through the pool, so a worker thread is never held by a long read.
//!
//! Invariant: an inline read returns the bytes of the very file [`TableStore::check_local`]
//! `lstat`ed: the open file's device and inode are compared with the checked ones. When they
//! differ the file was replaced between the check and the open — legitimately (two writers
//! renaming the same checkpoint into place) or by a link swapped in — and the path is checked and
//! opened again; a link is then refused by the check. Not closed: a
//! directory below the root swapped for a link and back between the checks of one call (the file
//! and each directory are `lstat`ed one after the other, as the resolved-path check before did);
//! only an `openat` walk with `O_NOFOLLOW` would close that.

use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;

use bytes::Bytes;
use object_store::path::Path;

use super::{Result, StorageError, StorageErrorKind, TableStore};

/// Files up to this size are read on the calling thread.
pub(super) const INLINE_READ_MAX_BYTES: u64 = 8 << 20;

/// How an inline read went.
pub(super) enum Inline<T> {
    Read(T),
    /// Not a small regular file (or not on this platform): read it through the store.
    Store,
    /// The open file is not the one checked: check the path again.
    Changed,
}

impl TableStore {
    /// The whole of `rel` read inline, checked again if it was replaced between check and open;
    /// `None` when it is to be read through the store (off a local root, missing, large, or
    /// replaced twice in a row: then read by path, as before inline reads).
    pub(super) fn read_local_whole(&self, p: &Path, rel: &str) -> Result<Option<Bytes>> {
        for _ in 0..2 {
            let Some(file) = self.check_local(p, rel)? else {
                return Ok(None);
            };
            match read_whole(&file, rel)? {
                Inline::Read(bytes) => return Ok(Some(bytes)),
                Inline::Store => return Ok(None),
                Inline::Changed => continue,
            }
        }
        Ok(None)
    }

    /// [`Self::read_local_whole`] for byte ranges.
    pub(super) fn read_local_ranges(
        &self,
        p: &Path,
        rel: &str,
        ranges: &[Range<u64>],
    ) -> Result<Option<Vec<Bytes>>> {
        for _ in 0..2 {
            let Some(file) = self.check_local(p, rel)? else {
                return Ok(None);
            };
            match read_ranges(&file, rel, ranges)? {
                Inline::Read(parts) => return Ok(Some(parts)),
                Inline::Store => {
                    // The store allocates a range before it reads the file: a range from a
                    // corrupt length field (a DV's sizeInBytes) must not reach it.
                    if file.meta.is_file() {
                        check_ranges(rel, ranges, file.meta.len())?;
                    }
                    return Ok(None);
                }
                Inline::Changed => continue,
            }
        }
        Ok(None)
    }
}

/// A file under a local root that passed [`TableStore::check_local`], with its `lstat`.
pub(super) struct LocalFile {
    pub path: PathBuf,
    pub meta: std::fs::Metadata,
}

impl TableStore {
    /// On a local root: refuses a path whose file is a symbolic link or whose directory does not
    /// resolve (symlinks followed) under the root's resolved directory, so nothing outside the root
    /// is ever read or deleted. A path that does not exist passes (the operation then reports it).
    /// Returns the checked file (`None` off a local root or when it does not exist).
    ///
    /// One `lstat` per path component below the root: when the file and every directory between it
    /// and the root are not symbolic links (and `..` never occurs: [`Self::object_path`]), the
    /// file's resolved directory is the root's resolved directory joined with those names, so it is
    /// under the root. A file directly in the root (every data and DV file of an unpartitioned
    /// table) needs only its own `lstat`. Where the file's ancestors do not lead back to the store's
    /// root lexically, both directories are resolved and compared instead.
    pub(super) fn check_local(&self, p: &Path, rel: &str) -> Result<Option<LocalFile>> {
        let (Some(fs), Some(root)) = (&self.local_fs, &self.local_dir) else {
            return Ok(None);
        };
        let file = fs
            .path_to_filesystem(p)
            .map_err(|e| StorageError::from_os(e, rel))?;
        let outside = |why: &str| {
            StorageError::new(
                StorageErrorKind::InvalidPath,
                format!("{rel}: {why}; refusing to follow it outside the table root"),
            )
        };
        let meta = match std::fs::symlink_metadata(&file) {
            Ok(m) if m.file_type().is_symlink() => return Err(outside("is a symbolic link")),
            Ok(m) => m,
            Err(_) => return Ok(None),
        };
        let on_path = || outside("resolves outside the table root (a symbolic link on its path)");
        let io = |e: std::io::Error| StorageError::new(StorageErrorKind::Io, format!("{rel}: {e}"));
        let fs_root = self.local_root.as_deref();
        let depth = rel.matches('/').count();
        let mut dirs = file.ancestors().skip(1);
        let below_root: Vec<&std::path::Path> = dirs.by_ref().take(depth).collect();
        if below_root.len() == depth && fs_root.is_some() && dirs.next() == fs_root {
            for dir in below_root {
                if std::fs::symlink_metadata(dir)
                    .map_err(io)?
                    .file_type()
                    .is_symlink()
                {
                    return Err(on_path());
                }
            }
            return Ok(Some(LocalFile { path: file, meta }));
        }
        let real_root = std::fs::canonicalize(root).map_err(io)?;
        let real_dir = file
            .parent()
            .map(std::fs::canonicalize)
            .transpose()
            .map_err(io)?;
        if !real_dir.is_some_and(|d| d.starts_with(&real_root)) {
            return Err(on_path());
        }
        Ok(Some(LocalFile { path: file, meta }))
    }
}

impl TableStore {
    /// [`Self::check_local`] for a path about to be written (created or replaced): an existing
    /// file is checked as a read is; for a new one, no directory between the root and it may be
    /// a symbolic link (it would lead the write outside the root). Directories not there yet are
    /// created as real ones by the write.
    pub(super) fn check_local_target(&self, p: &Path, rel: &str) -> Result<()> {
        let Some(fs) = &self.local_fs else {
            return Ok(());
        };
        if self.check_local(p, rel)?.is_some() {
            return Ok(());
        }
        let file = fs
            .path_to_filesystem(p)
            .map_err(|e| StorageError::from_os(e, rel))?;
        let depth = rel.matches('/').count();
        for dir in file.ancestors().skip(1).take(depth) {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(StorageError::new(
                    StorageErrorKind::InvalidPath,
                    format!(
                        "{rel}: a symbolic link on its path; refusing to follow it outside the table root"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Opens `file` for an inline read: `Store` when it is not a regular file of at most
/// [`INLINE_READ_MAX_BYTES`], or on a platform where the identity check below is not available;
/// `Changed` when the file opened is not the file checked.
#[cfg(unix)]
fn open_checked(file: &LocalFile, rel: &str) -> Result<Inline<(std::fs::File, u64)>> {
    use std::os::unix::fs::MetadataExt;
    if !file.meta.is_file() || file.meta.len() > INLINE_READ_MAX_BYTES {
        return Ok(Inline::Store);
    }
    let f = match std::fs::File::open(&file.path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StorageError::new(
                StorageErrorKind::NotFound,
                format!("{rel}: not found"),
            ))
        }
        Err(e) => return Err(io(rel, e)),
    };
    let opened = f.metadata().map_err(|e| io(rel, e))?;
    if (opened.dev(), opened.ino()) != (file.meta.dev(), file.meta.ino()) {
        return Ok(Inline::Changed);
    }
    if !opened.is_file() || opened.len() > INLINE_READ_MAX_BYTES {
        return Ok(Inline::Store);
    }
    Ok(Inline::Read((f, opened.len())))
}

#[cfg(not(unix))]
fn open_checked(_file: &LocalFile, _rel: &str) -> Result<Inline<(std::fs::File, u64)>> {
    Ok(Inline::Store)
}

fn io(rel: &str, e: std::io::Error) -> StorageError {
    StorageError::new(StorageErrorKind::Io, format!("{rel}: {e}"))
}

/// The whole of a small checked file.
fn read_whole(file: &LocalFile, rel: &str) -> Result<Inline<Bytes>> {
    let (mut f, len) = match open_checked(file, rel)? {
        Inline::Read(opened) => opened,
        Inline::Store => return Ok(Inline::Store),
        Inline::Changed => return Ok(Inline::Changed),
    };
    // `len` is bounded by INLINE_READ_MAX_BYTES. Exactly `len` bytes, as the store reads the size
    // it stat'ed: a file cut short since is an error, bytes appended since are not read.
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    (&mut f)
        .take(len)
        .read_to_end(&mut buf)
        .map_err(|e| io(rel, e))?;
    if buf.len() as u64 != len {
        return Err(StorageError::new(
            StorageErrorKind::Io,
            format!(
                "{rel}: {} bytes read of {len}; the file changed while it was read",
                buf.len()
            ),
        ));
    }
    Ok(Inline::Read(Bytes::from(buf)))
}

/// Every range lies within a file of `len` bytes (an empty range anywhere, as the store answers
/// it); a reversed range or one past the end is an error.
fn check_ranges(rel: &str, ranges: &[Range<u64>], len: u64) -> Result<()> {
    for r in ranges {
        if r.start != r.end && (r.start > r.end || r.end > len) {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                format!(
                    "{rel}: range {}..{} is outside the file of {len} bytes",
                    r.start, r.end
                ),
            ));
        }
    }
    Ok(())
}

/// Byte ranges of a small checked file. A range past the end of the file (or reversed) is an
/// error, as from the store.
fn read_ranges(file: &LocalFile, rel: &str, ranges: &[Range<u64>]) -> Result<Inline<Vec<Bytes>>> {
    let (f, len) = match open_checked(file, rel)? {
        Inline::Read(opened) => opened,
        Inline::Store => return Ok(Inline::Store),
        Inline::Changed => return Ok(Inline::Changed),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut out = Vec::with_capacity(ranges.len());
        for r in ranges {
            check_ranges(rel, std::slice::from_ref(r), len)?;
            // An empty range reads nothing, wherever it starts (as the store answers it).
            if r.start == r.end {
                out.push(Bytes::new());
                continue;
            }
            // Bounded by the file's length, itself at most INLINE_READ_MAX_BYTES.
            let mut buf = vec![0u8; usize::try_from(r.end - r.start).unwrap_or(0)];
            f.read_exact_at(&mut buf, r.start).map_err(|e| io(rel, e))?;
            out.push(Bytes::from(buf));
        }
        Ok(Inline::Read(out))
    }
    #[cfg(not(unix))]
    {
        let _ = (f, len, ranges);
        Ok(Inline::Store)
    }
}

#[cfg(test)]
mod tests {
    use super::super::PutOutcome;
    use super::*;

    #[cfg(unix)]
    #[tokio::test]
    async fn local_reads_refuse_a_symbolic_link_at_any_depth_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::fs::write(outside.join("f.parquet"), b"o").unwrap();
        std::fs::write(outside.join("deep/f.parquet"), b"o").unwrap();
        // The root itself is reached through a link: that is where the table is, and it is read.
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join("p=1/q=2")).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("t")).unwrap();
        let store = TableStore::open(dir.path().join("t").to_str().unwrap()).unwrap();
        for (rel, body) in [
            ("f.parquet", "a"),
            ("p=1/f.parquet", "b"),
            ("p=1/q=2/f.parquet", "c"),
        ] {
            std::fs::write(real.join(rel), body).unwrap();
            assert_eq!(store.get(rel).await.unwrap(), Bytes::from(body), "{rel}");
        }
        // A linked file in the root, a linked directory, and a linked directory one level down.
        std::os::unix::fs::symlink(outside.join("f.parquet"), real.join("l.parquet")).unwrap();
        std::os::unix::fs::symlink(&outside, real.join("p=2")).unwrap();
        std::os::unix::fs::symlink(&outside, real.join("p=1/q=3")).unwrap();
        for rel in [
            "l.parquet",
            "p=2/f.parquet",
            "p=2/deep/f.parquet",
            "p=1/q=3/f.parquet",
        ] {
            let e = store.get(rel).await.unwrap_err();
            assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{rel}: {e}");
            assert!(
                e.to_string().contains("outside the table root"),
                "{rel}: {e}"
            );
            let e = store.delete(rel).await.unwrap_err();
            assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{rel}: {e}");
        }
        assert!(outside.join("deep/f.parquet").exists() && outside.join("f.parquet").exists());
        // Writes, copies and moves never land outside through a linked directory, nor copy an
        // outside file in; a listing leaves the linked directories out.
        for rel in [
            "p=2/new.parquet",
            "p=2/deep/new.parquet",
            "p=1/q=3/f.parquet",
        ] {
            let e = store.put(rel, Bytes::from("x")).await.unwrap_err();
            assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{rel}: {e}");
            let e = store.copy("f.parquet", rel).await.unwrap_err();
            assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{rel}: {e}");
            let e = store.rename("f.parquet", rel).await.unwrap_err();
            assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{rel}: {e}");
        }
        let e = store.copy("p=2/f.parquet", "in.parquet").await.unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{e}");
        assert!(!outside.join("new.parquet").exists() && !real.join("in.parquet").exists());
        assert_eq!(std::fs::read(outside.join("f.parquet")).unwrap(), b"o");
        let listed = store.list_entries("p=1").await.unwrap();
        assert_eq!(listed.dirs, vec!["p=1/q=2".to_string()]);
        store
            .put("p=1/new/x.parquet", Bytes::from("n"))
            .await
            .unwrap();
        assert_eq!(std::fs::read(real.join("p=1/new/x.parquet")).unwrap(), b"n");
        // A missing file passes the check and is reported as missing by the read.
        assert_eq!(
            store.get("p=1/none.parquet").await.unwrap_err().kind,
            StorageErrorKind::NotFound
        );
    }

    #[tokio::test]
    async fn a_root_created_later_keeps_its_name_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        // Neither directory exists when the store is opened; `~`, `%` and non-ASCII names are
        // ones a percent-encoding prefix would have mapped to another directory.
        let root = dir.path().join("t~1 é%41").join("sub");
        let store = TableStore::open(root.to_str().unwrap()).unwrap();
        assert!(
            !dir.path().join("t~1 é%41").exists(),
            "opening creates nothing"
        );
        let commit = "_delta_log/00000000000000000000.json";
        assert!(matches!(
            store.put_if_absent(commit, Bytes::from_static(b"c")).await,
            PutOutcome::Created
        ));
        store
            .put("a.parquet", Bytes::from_static(b"a"))
            .await
            .unwrap();
        assert!(root.join(commit).is_file() && root.join("a.parquet").is_file());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "one directory"
        );
        assert_eq!(
            store.get("a.parquet").await.unwrap(),
            Bytes::from_static(b"a")
        );
        assert_eq!(store.get(commit).await.unwrap(), Bytes::from_static(b"c"));
        let listed: Vec<String> = store
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.path)
            .collect();
        assert_eq!(listed, vec![commit.to_string(), "a.parquet".to_string()]);
        store.delete("a.parquet").await.unwrap();
        assert!(!root.join("a.parquet").exists());
    }

    #[cfg(unix)]
    fn checked(store: &TableStore, rel: &str) -> LocalFile {
        let p = store.object_path(rel).unwrap();
        store.check_local(&p, rel).unwrap().unwrap()
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn small_files_are_read_inline_and_large_ones_through_the_store_alike() {
        let dir = tempfile::tempdir().unwrap();
        let store = TableStore::open(dir.path().to_str().unwrap()).unwrap();
        let small: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let large: Vec<u8> = (0..(INLINE_READ_MAX_BYTES as u32 + 10))
            .map(|i| (i % 241) as u8)
            .collect();
        std::fs::write(dir.path().join("s.parquet"), &small).unwrap();
        std::fs::create_dir(dir.path().join("p=1")).unwrap();
        std::fs::write(dir.path().join("p=1/l.parquet"), &large).unwrap();
        assert!(matches!(
            read_whole(&checked(&store, "s.parquet"), "s").unwrap(),
            Inline::Read(_)
        ));
        assert!(matches!(
            read_whole(&checked(&store, "p=1/l.parquet"), "l").unwrap(),
            Inline::Store
        ));
        for (rel, body) in [("s.parquet", &small), ("p=1/l.parquet", &large)] {
            assert_eq!(
                store.get(rel).await.unwrap().as_ref(),
                body.as_slice(),
                "{rel}"
            );
            let ranges = [
                0..10,
                99_990..100_000,
                5..5,
                7..1_007,
                200_000_000..200_000_000,
            ];
            let parts = store.get_ranges(rel, &ranges).await.unwrap();
            for (r, part) in ranges.iter().zip(&parts) {
                let want = body.get(r.start as usize..r.end as usize).unwrap_or(&[]);
                assert_eq!(part.as_ref(), want, "{rel} {r:?}");
            }
            let past = store.get_ranges(rel, &[0..body.len() as u64 + 1]).await;
            assert!(past.is_err(), "{rel}: a range past the end");
            // A range from a corrupt length field is refused before anything is allocated.
            let huge = store.get_ranges(rel, &[1..(1 << 31)]).await.unwrap_err();
            assert!(
                huge.to_string().contains("outside the file"),
                "{rel}: {huge}"
            );
        }
        assert_eq!(
            store.get("missing.parquet").await.unwrap_err().kind,
            StorageErrorKind::NotFound
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_file_swapped_after_its_check_is_checked_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = TableStore::open(dir.path().join("t").to_str().unwrap()).unwrap();
        std::fs::create_dir(dir.path().join("t")).unwrap();
        std::fs::write(dir.path().join("outside.parquet"), b"o").unwrap();
        for rel in ["a.parquet", "c.parquet"] {
            std::fs::write(dir.path().join("t").join(rel), b"a").unwrap();
        }
        let a = checked(&store, "a.parquet");
        let c = checked(&store, "c.parquet");
        // Another file renamed over the checked one (two writers placing the same checkpoint),
        // and a link swapped in for the other.
        std::fs::write(dir.path().join("t/b.tmp"), b"b").unwrap();
        std::fs::rename(dir.path().join("t/b.tmp"), dir.path().join("t/a.parquet")).unwrap();
        std::fs::remove_file(dir.path().join("t/c.parquet")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("outside.parquet"),
            dir.path().join("t/c.parquet"),
        )
        .unwrap();
        for file in [&a, &c] {
            assert!(matches!(read_whole(file, "x").unwrap(), Inline::Changed));
            assert!(matches!(
                read_ranges(file, "x", &[0..1]).unwrap(),
                Inline::Changed
            ));
        }
        // Checked again: the renamed file is read, the link is refused.
        assert_eq!(store.get("a.parquet").await.unwrap().as_ref(), b"b");
        assert_eq!(
            store.get_ranges("a.parquet", &[0..1]).await.unwrap(),
            vec![Bytes::from_static(b"b")]
        );
        for e in [
            store.get("c.parquet").await.unwrap_err(),
            store.get_ranges("c.parquet", &[0..1]).await.unwrap_err(),
        ] {
            assert_eq!(e.kind, StorageErrorKind::InvalidPath, "{e}");
        }
    }
}
