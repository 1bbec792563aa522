//! Listing a directory from a name on: what a log reader needs when it knows where the part it
//! wants begins (the newest checkpoint, the version it lost a race for).

use futures::TryStreamExt;

use super::{ObjectInfo, Result, StorageError, StorageErrorKind, TableStore};
use crate::retry::retrying;

impl TableStore {
    /// Files directly in a relative directory whose names sort after `after` (byte order), sorted
    /// by name: [`TableStore::list_dir`] without the entries up to `after`, which are skipped
    /// before they cost anything where the store can (S3's start-after; on a local disk names are
    /// read without a stat, and only later ones are stat'ed). A log reader that needs only what
    /// follows a version lists in time proportional to that, not to the whole log.
    pub async fn list_dir_after(&self, rel_dir: &str, after: &str) -> Result<Vec<ObjectInfo>> {
        let _req = self.track(crate::meter::RequestKind::List, 1, rel_dir);
        if let (Some(fs), Some(_)) = (&self.local_fs, &self.local_dir) {
            let dir = fs
                .path_to_filesystem(&self.object_path(rel_dir)?)
                .map_err(|e| StorageError::from_os(e, rel_dir))?;
            let (rel_dir_owned, after) = (rel_dir.to_string(), after.to_string());
            let mut out = tokio::task::spawn_blocking(move || {
                crate::local::list_dir_after(&dir, &rel_dir_owned, &after)
            })
            .await
            .map_err(|e| StorageError::new(StorageErrorKind::Io, e.to_string()))?
            .map_err(|e| StorageError::new(StorageErrorKind::Io, format!("{rel_dir}: {e}")))?;
            out.sort_by(|a, b| a.path.cmp(&b.path));
            return Ok(out);
        }
        let p = self.object_path(rel_dir)?;
        // An empty name is before every name: no offset.
        let offset = match after {
            "" => None,
            a => Some(self.object_path(&format!("{rel_dir}/{a}"))?),
        };
        let (store, p, offset) = (&self.store, &p, &offset);
        let metas: Vec<_> = retrying(self.retry, move || async move {
            match offset {
                Some(o) => store.list_with_offset(Some(p), o),
                None => store.list(Some(p)),
            }
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| StorageError::from_os(e, rel_dir))
        })
        .await?;
        let prefix = format!("{rel_dir}/");
        let mut out: Vec<ObjectInfo> = metas
            .into_iter()
            .map(|m| self.listed(m))
            // Direct children only (the listing from an offset is recursive).
            .filter(|o| {
                o.path
                    .strip_prefix(&prefix)
                    .is_some_and(|name| !name.contains('/') && name > after)
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    /// On a local disk (own readdir path) and in memory (object_store's offset listing): exactly
    /// the direct children named after the offset, described as `list_dir` describes them.
    #[tokio::test]
    async fn listing_after_a_name_equals_the_tail_of_the_whole_listing() {
        let dir = tempfile::tempdir().unwrap();
        let local = TableStore::open(dir.path().to_str().unwrap()).unwrap();
        let memory = TableStore::open("memory://listing-after/t").unwrap();
        for store in [local, memory] {
            for v in 0..12u64 {
                store
                    .put(
                        &format!("_delta_log/{v:020}.json"),
                        Bytes::from(vec![b'x'; v as usize + 1]),
                    )
                    .await
                    .unwrap();
            }
            store
                .put(
                    "_delta_log/00000000000000000010.checkpoint.parquet",
                    Bytes::from_static(b"cp"),
                )
                .await
                .unwrap();
            store
                .put("_delta_log/_sidecars/a.parquet", Bytes::from_static(b"s"))
                .await
                .unwrap();
            store
                .put("_delta_log/_last_checkpoint", Bytes::from_static(b"{}"))
                .await
                .unwrap();
            let whole = store.list_dir("_delta_log").await.unwrap();
            for after in [
                "00000000000000000010",
                "00000000000000000003.json",
                "",
                "zzz",
            ] {
                let tail = store.list_dir_after("_delta_log", after).await.unwrap();
                let want: Vec<&ObjectInfo> = whole
                    .iter()
                    .filter(|o| o.path.trim_start_matches("_delta_log/") > after)
                    .collect();
                assert_eq!(
                    tail.iter()
                        .map(|o| (&o.path, o.size, &o.e_tag))
                        .collect::<Vec<_>>(),
                    want.iter()
                        .map(|o| (&o.path, o.size, &o.e_tag))
                        .collect::<Vec<_>>(),
                    "{} after {after:?}",
                    store.root_uri()
                );
            }
            let names: Vec<String> = store
                .list_dir_after("_delta_log", "00000000000000000010")
                .await
                .unwrap()
                .into_iter()
                .map(|o| o.path)
                .collect();
            assert_eq!(
                names,
                [
                    "_delta_log/00000000000000000010.checkpoint.parquet",
                    "_delta_log/00000000000000000010.json",
                    "_delta_log/00000000000000000011.json",
                    "_delta_log/_last_checkpoint",
                ]
            );
            assert!(store
                .list_dir_after("_nothing", "0")
                .await
                .unwrap()
                .is_empty());
        }
    }
}
