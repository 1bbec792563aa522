//! deltalake's OpenDAL file-system locations, read as the local directories they name.
//!
//! deltalake 1.6 registers OpenDAL's services under `opendal+<service>://` and, where the scheme
//! does not collide with a native backend, the bare scheme: `fs://host/path` and
//! `opendal+fs://host/path` name `path` under the directory `opendal.root` (a storage option; `/`
//! when absent), and the host is not used. The same table is then a plain local directory here,
//! committed with the local store's put-if-absent. Every other OpenDAL service is refused by
//! name: reading it as anything else would open another store than the one the user named.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::store::{StorageError, StorageErrorKind};

fn invalid(msg: impl Into<String>) -> StorageError {
    StorageError::new(StorageErrorKind::InvalidLocation, msg)
}

/// The local directory an OpenDAL `fs` location names, `None` when `location` is not an OpenDAL
/// location. Only the `opendal.root` option is understood; another `opendal.*` key is refused,
/// as is a path that climbs out of the root with `..`.
pub(crate) fn local_dir(
    location: &str,
    options: &BTreeMap<String, String>,
) -> Result<Option<PathBuf>, StorageError> {
    let rest = if let Some(rest) = location.strip_prefix("fs://") {
        rest
    } else if let Some(rest) = location.strip_prefix("opendal+") {
        let Some((service, rest)) = rest.split_once("://") else {
            return Err(invalid(format!("no service in {location:?}")));
        };
        if service != "fs" {
            return Err(invalid(format!(
                "OpenDAL service {service:?} is not supported (only `fs`) in {location:?}"
            )));
        }
        rest
    } else {
        return Ok(None);
    };
    let mut root = PathBuf::from("/");
    for (key, value) in options {
        let Some(opendal_key) = key
            .to_ascii_lowercase()
            .strip_prefix("opendal.")
            .map(str::to_string)
        else {
            continue;
        };
        if opendal_key != "root" {
            return Err(invalid(format!(
                "OpenDAL option {key:?} is not supported for `fs` locations (only opendal.root)"
            )));
        }
        root = PathBuf::from(value);
    }
    if !root.is_absolute() {
        return Err(invalid(format!(
            "opendal.root must be an absolute path, got {}",
            root.display()
        )));
    }
    // The authority (`localhost`) names no store: the path after it is under the root.
    let path = rest.split_once('/').map(|(_, path)| path).unwrap_or("");
    let path = Path::new(path);
    if path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(invalid(format!(
            "{location:?} leaves the OpenDAL root with `..`"
        )));
    }
    Ok(Some(root.join(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("opendal.root".to_string(), dir.to_string())])
    }

    #[test]
    fn fs_locations_name_a_directory_under_the_root() {
        let opts = root("/data/lake");
        for location in ["fs://localhost/t", "opendal+fs://localhost/t", "fs://h/t/"] {
            assert_eq!(
                local_dir(location, &opts).ok().flatten(),
                Some(PathBuf::from("/data/lake/t")),
                "{location}"
            );
        }
        assert_eq!(
            local_dir("fs://localhost/a/b", &BTreeMap::new())
                .ok()
                .flatten(),
            Some(PathBuf::from("/a/b"))
        );
        assert!(matches!(local_dir("/tmp/t", &opts), Ok(None)));
        assert!(matches!(local_dir("s3://b/t", &opts), Ok(None)));
    }

    #[test]
    fn other_services_options_and_escapes_are_refused() {
        let refused = |location: &str, opts: &BTreeMap<String, String>| {
            local_dir(location, opts).err().map(|e| e.message)
        };
        assert!(refused("opendal+s3://b/t", &root("/x"))
            .is_some_and(|m| m.contains("\"s3\" is not supported")));
        assert!(refused(
            "fs://h/t",
            &BTreeMap::from([("opendal.endpoint".to_string(), "e".to_string())])
        )
        .is_some_and(|m| m.contains("opendal.endpoint")));
        assert!(refused("fs://h/../etc", &root("/x")).is_some_and(|m| m.contains("..")));
        assert!(refused("fs://h/t", &root("rel")).is_some_and(|m| m.contains("absolute")));
    }
}
