//! Path containment: every path read from the log (add/remove/cdc paths, `p` DV locations, sidecars)
//! must name a file under the table root, for reads and for anything that writes or deletes.
//!
//! Rule: percent-decode exactly once (Spark double-encodes partition directories, so `p=a%253Ab` names
//! the directory `p=a%3Ab`), then split on `/`; every segment must be non-empty and not `.` or `..`.
//! Absolute URIs and absolute paths are accepted only when they lie under the root (same scheme,
//! authority and path prefix). The result is the decoded path relative to the root.

use percent_encoding::percent_decode_str;

use crate::error::{ProtocolError, Result};

/// A table root as a normalized URI: `scheme://authority/path` (no trailing slash). Local roots are
/// `file:///abs/path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRoot {
    scheme: String,
    authority: String,
    /// Decoded absolute path of the root, starting with `/` (or empty for a bucket root).
    path: String,
}

fn escape(path: &str, reason: &'static str) -> ProtocolError {
    ProtocolError::PathEscape {
        path: path.to_string(),
        reason,
    }
}

fn split_scheme(s: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = s.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    {
        return None;
    }
    // A single letter followed by ':' is a Windows drive, not a scheme.
    if scheme.len() == 1 {
        return None;
    }
    Some((scheme, rest))
}

fn canonical_scheme(s: &str) -> String {
    match s.to_ascii_lowercase().as_str() {
        "s3a" | "s3n" => "s3".to_string(),
        other => other.to_string(),
    }
}

fn decode_once(s: &str, original: &str) -> Result<String> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| escape(original, "not valid UTF-8 after percent-decoding"))
}

/// Splits `scheme:rest` into (authority, decoded path). `file:/x`, `file:///x` both give ("", "/x").
fn authority_and_path(scheme: &str, rest: &str, original: &str) -> Result<(String, String)> {
    if let Some(after) = rest.strip_prefix("//") {
        let (auth, path) = match after.find('/') {
            Some(i) => (after.get(..i).unwrap_or(""), after.get(i..).unwrap_or("")),
            None => (after, ""),
        };
        let auth = if scheme == "file" && auth == "localhost" {
            ""
        } else {
            auth
        };
        Ok((auth.to_string(), decode_once(path, original)?))
    } else if rest.starts_with('/') {
        Ok((String::new(), decode_once(rest, original)?))
    } else {
        Err(escape(original, "relative path inside an absolute URI"))
    }
}

impl TableRoot {
    /// Parses a root URI (`file:///…`, `s3://bucket/prefix`, `memory:///…`).
    pub fn parse(uri: &str) -> Result<TableRoot> {
        let (scheme, rest) =
            split_scheme(uri).ok_or_else(|| escape(uri, "table root must be an absolute URI"))?;
        let scheme = canonical_scheme(scheme);
        let (authority, path) = authority_and_path(&scheme, rest, uri)?;
        let path = path.trim_end_matches('/').to_string();
        Ok(TableRoot {
            scheme,
            authority,
            path,
        })
    }

    /// Resolves a path as written in the log to a decoded path relative to the root.
    pub fn resolve(&self, logged: &str) -> Result<String> {
        if logged.is_empty() {
            return Err(escape(logged, "empty path"));
        }
        if logged.contains('\0') {
            return Err(escape(logged, "NUL byte"));
        }
        let relative = if let Some((scheme, rest)) = split_scheme(logged) {
            if canonical_scheme(scheme) != self.scheme {
                return Err(escape(logged, "another scheme"));
            }
            let (auth, path) = authority_and_path(&self.scheme, rest, logged)?;
            if auth != self.authority {
                return Err(escape(logged, "another host or bucket"));
            }
            self.strip_root(&path, logged)?
        } else if logged.starts_with('/') {
            if self.scheme != "file" {
                return Err(escape(logged, "absolute path on a non-local table"));
            }
            let path = decode_once(logged, logged)?;
            self.strip_root(&path, logged)?
        } else {
            decode_once(logged, logged)?
        };
        check_segments(&relative, logged)?;
        Ok(relative)
    }

    fn strip_root(&self, decoded_abs: &str, original: &str) -> Result<String> {
        let rest = decoded_abs
            .strip_prefix(self.path.as_str())
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| escape(original, "absolute path outside the table root"))?;
        Ok(rest.to_string())
    }
}

/// Every segment non-empty, not `.`/`..`; checked on the decoded form so `%2e%2e` is caught.
pub fn check_segments(relative: &str, original: &str) -> Result<()> {
    if relative.is_empty() {
        return Err(escape(original, "empty path"));
    }
    if relative.contains('\0') {
        return Err(escape(original, "NUL byte"));
    }
    for seg in relative.split('/') {
        match seg {
            "" => return Err(escape(original, "empty path segment")),
            "." | ".." => return Err(escape(original, "`.` or `..` segment")),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    fn root() -> TableRoot {
        TableRoot::parse("file:///data/t").unwrap()
    }

    #[test]
    fn accepts_relative_and_contained_absolute() {
        let r = root();
        assert_eq!(r.resolve("part-0.parquet").unwrap(), "part-0.parquet");
        assert_eq!(
            r.resolve("p=a%253Ab/f.parquet").unwrap(),
            "p=a%3Ab/f.parquet"
        );
        assert_eq!(r.resolve("p=a%20b/f.parquet").unwrap(), "p=a b/f.parquet");
        assert_eq!(
            r.resolve("file:/data/t/x/f.parquet").unwrap(),
            "x/f.parquet"
        );
        assert_eq!(r.resolve("file:///data/t/f.parquet").unwrap(), "f.parquet");
        assert_eq!(r.resolve("/data/t/f.parquet").unwrap(), "f.parquet");
        let s3 = TableRoot::parse("s3://bucket/t").unwrap();
        assert_eq!(s3.resolve("s3a://bucket/t/f.parquet").unwrap(), "f.parquet");
    }

    #[test]
    fn rejects_every_escape_form() {
        let r = root();
        for bad in [
            "../x.parquet",
            "a/../../x.parquet",
            "%2e%2e/x.parquet",
            "%2E%2E/x.parquet",
            "a//b.parquet",
            "./a.parquet",
            "",
            "/etc/passwd",
            "/data/tt/f.parquet",
            "file:///etc/passwd",
            "s3://other/t/f.parquet",
            "file://host/data/t/f.parquet",
            "a%00b",
        ] {
            let e = r.resolve(bad);
            assert!(
                matches!(e, Err(ProtocolError::PathEscape { .. })),
                "{bad:?} gave {e:?}"
            );
        }
        let s3 = TableRoot::parse("s3://bucket/t").unwrap();
        assert!(s3.resolve("s3://bucket2/t/f").is_err());
        assert!(s3.resolve("/t/f").is_err());
        assert!(s3.resolve("s3://bucket/t2/f").is_err());
    }
}
