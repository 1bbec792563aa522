//! Opening object-store locations: S3 and S3-compatible stores, Azure Blob / ADLS Gen2 and Google
//! Cloud Storage, each through object_store with put-if-absent as the commit primitive.
//!
//! | scheme | store | put-if-absent |
//! | --- | --- | --- |
//! | `s3://`, `s3a://` | AWS S3, MinIO, R2, Ceph (custom endpoint) | `If-None-Match: *` |
//! | `az://`, `azure://`, `abfs://`, `abfss://`, `adl://` | Azure Blob, ADLS Gen2 | `If-None-Match: *` |
//! | `gs://` | Google Cloud Storage | `ifGenerationMatch=0` |
//!
//! Options are the keys object_store's builder for the scheme understands (either case; they
//! override the standard environment variables and credential chain), plus ours:
//! - `max_retries`, `retry_timeout` (seconds): the HTTP client's retries of 5xx, 429/SlowDown and
//!   timeouts, with jittered exponential backoff (object_store's client does the retrying);
//! - `unsafe_single_writer` (alias `aws_s3_allow_unsafe_rename`, delta-rs's name): for a store
//!   without conditional writes (`aws_conditional_put = disabled`), commit by "check, then put".
//!   Safe only if no other process ever writes the table. Without it such a store refuses commits.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path;
use object_store::{BackoffConfig, ObjectStore, RetryConfig};

use crate::store::{StorageError, StorageErrorKind};

/// How commits are made atomic on a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitMode {
    /// The store's conditional create (every store we open by default).
    PutIfAbsent,
    /// The store lacks conditional writes and the user accepted one writer only: an existence
    /// check, then an overwriting put. Two writers can overwrite each other's commit.
    UnsafeSingleWriter,
    /// The store lacks conditional writes and no opt-in was given: every commit is refused.
    Refuse,
}

/// An opened cloud location.
pub(crate) struct CloudRoot {
    pub store: Arc<dyn ObjectStore>,
    pub prefix: Path,
    pub root_uri: String,
    pub commit_mode: CommitMode,
    /// Options accepted but ignored, each a one-line warning for the user.
    pub warnings: Vec<String>,
}

fn invalid(msg: impl Into<String>) -> StorageError {
    StorageError::new(StorageErrorKind::InvalidLocation, msg)
}

/// Our own option keys, taken out of `options` before the store's builder sees them.
struct CommonOptions {
    retry: RetryConfig,
    unsafe_single_writer: bool,
}

fn parse_bool(key: &str, v: &str) -> Result<bool, StorageError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(invalid(format!(
            "storage option {key:?} must be true or false, not {v:?}"
        ))),
    }
}

/// Our options, and the rest as (key as given, key in lower case, value).
type RestOptions = Vec<(String, String, String)>;

fn take_common(
    options: &BTreeMap<String, String>,
) -> Result<(CommonOptions, RestOptions), StorageError> {
    let mut common = CommonOptions {
        retry: RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
        },
        unsafe_single_writer: false,
    };
    let mut rest = Vec::new();
    for (k, v) in options {
        let key = k.to_ascii_lowercase();
        match key.as_str() {
            "max_retries" => {
                common.retry.max_retries = v.trim().parse().map_err(|_| {
                    invalid(format!("storage option {k:?} must be a count, not {v:?}"))
                })?;
            }
            "retry_timeout" => {
                common.retry.retry_timeout = crate::deltalake_options::parse_duration(k, v)?;
            }
            "backoff_config.init_backoff" => {
                common.retry.backoff.init_backoff = crate::deltalake_options::parse_duration(k, v)?;
            }
            "backoff_config.max_backoff" => {
                common.retry.backoff.max_backoff = crate::deltalake_options::parse_duration(k, v)?;
            }
            "backoff_config.base" => {
                common.retry.backoff.base = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|b: &f64| b.is_finite() && *b >= 1.0)
                    .ok_or_else(|| {
                        invalid(format!(
                            "storage option {k:?} must be a number ≥ 1, not {v:?}"
                        ))
                    })?;
            }
            k if is_unsafe_key(k) => {
                common.unsafe_single_writer = parse_bool(k, v)?;
            }
            _ => rest.push((k.clone(), key, v.clone())),
        }
    }
    Ok((common, rest))
}

fn is_unsafe_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    k == "unsafe_single_writer" || k == "aws_s3_allow_unsafe_rename"
}

/// `scheme://authority/key` → (authority, key without surrounding slashes).
fn split_url<'a>(location: &'a str, rest: &'a str) -> Result<(&'a str, &'a str), StorageError> {
    let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
    if authority.is_empty() {
        return Err(invalid(format!("no bucket or container in {location:?}")));
    }
    Ok((authority, key.trim_matches('/')))
}

fn root(store: Arc<dyn ObjectStore>, uri_base: &str, key: &str, mode: CommitMode) -> CloudRoot {
    CloudRoot {
        store,
        prefix: Path::from(key),
        root_uri: format!("{uri_base}/{key}")
            .trim_end_matches('/')
            .to_string(),
        commit_mode: mode,
        warnings: Vec::new(),
    }
}

/// Opens `location` if its scheme is a cloud store's; `Ok(None)` for anything else.
pub(crate) fn open_cloud(
    location: &str,
    options: &BTreeMap<String, String>,
) -> Result<Option<CloudRoot>, StorageError> {
    let Some((scheme, rest)) = location.split_once("://") else {
        return Ok(None);
    };
    let lower = scheme.to_ascii_lowercase();
    let opened = match lower.as_str() {
        "s3" | "s3a" | "az" | "azure" | "abfs" | "abfss" | "adl" | "gs" => {
            let (options, warnings) = crate::deltalake_options::translate(&lower, options)?;
            let mut root = match lower.as_str() {
                "s3" | "s3a" => open_s3(location, rest, &options)?,
                "gs" => open_gcs(location, rest, &options)?,
                _ => open_azure(location, scheme, rest, &options)?,
            };
            root.warnings = warnings;
            Some(root)
        }
        _ => None,
    };
    Ok(opened)
}

fn open_s3(
    location: &str,
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<CloudRoot, StorageError> {
    let (bucket, key) = split_url(location, rest)?;
    let (common, rest_opts) = take_common(options)?;
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_retry(common.retry.clone());
    let mut endpoint = std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("AWS_ENDPOINT"))
        .ok();
    // The environment's settings first (the CLI's route); options override them.
    let mut conditional = !std::env::var("AWS_CONDITIONAL_PUT")
        .is_ok_and(|v| v.trim().eq_ignore_ascii_case("disabled"));
    let mut unsafe_single_writer = common.unsafe_single_writer;
    if !options.keys().any(|k| is_unsafe_key(k)) {
        for name in [
            "AWS_S3_ALLOW_UNSAFE_RENAME",
            "DELTA_RLC_UNSAFE_SINGLE_WRITER",
        ] {
            if let Ok(v) = std::env::var(name) {
                unsafe_single_writer = parse_bool(name, &v)?;
            }
        }
    }
    for (given, key, v) in &rest_opts {
        let parsed = AmazonS3ConfigKey::from_str(key)
            .map_err(|_| invalid(format!("unknown storage option {given:?} for S3")))?;
        match parsed {
            AmazonS3ConfigKey::Endpoint => endpoint = Some(v.clone()),
            AmazonS3ConfigKey::ConditionalPut => match v.trim() {
                "etag" => conditional = true,
                "disabled" => conditional = false,
                other => {
                    return Err(invalid(format!(
                        "storage option {given:?} must be \"etag\" or \"disabled\", not {other:?}"
                    )))
                }
            },
            _ => {}
        }
        builder = builder.with_config(parsed, v);
    }
    if !conditional {
        // object_store then refuses `PutMode::Create`; the TableStore never issues it in this
        // mode: commits are refused, or (unsafe_single_writer) made by a HEAD and a plain PUT.
        builder = builder.with_conditional_put(S3ConditionalPut::Disabled);
    }
    if endpoint
        .as_deref()
        .is_some_and(|e| e.starts_with("http://"))
    {
        builder = builder.with_allow_http(true);
    }
    let store = builder
        .build()
        .map_err(|e| invalid(format!("cannot open {location}: {e}")))?;
    let mode = match (conditional, unsafe_single_writer) {
        (true, _) => CommitMode::PutIfAbsent,
        (false, true) => CommitMode::UnsafeSingleWriter,
        (false, false) => CommitMode::Refuse,
    };
    Ok(root(Arc::new(store), &format!("s3://{bucket}"), key, mode))
}

fn open_azure(
    location: &str,
    scheme: &str,
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<CloudRoot, StorageError> {
    let (authority, key) = split_url(location, rest)?;
    let (common, rest_opts) = take_common(options)?;
    if common.unsafe_single_writer {
        return Err(invalid(
            "unsafe_single_writer applies to S3-compatible stores without conditional writes; Azure always has them",
        ));
    }
    let mut builder = MicrosoftAzureBuilder::from_env()
        .with_url(format!("{scheme}://{authority}"))
        .with_retry(common.retry);
    for (given, key, v) in &rest_opts {
        let parsed = AzureConfigKey::from_str(key)
            .map_err(|_| invalid(format!("unknown storage option {given:?} for Azure")))?;
        builder = builder.with_config(parsed, v);
    }
    let store = builder
        .build()
        .map_err(|e| invalid(format!("cannot open {location}: {e}")))?;
    Ok(root(
        Arc::new(store),
        &format!("{scheme}://{authority}"),
        key,
        CommitMode::PutIfAbsent,
    ))
}

fn open_gcs(
    location: &str,
    rest: &str,
    options: &BTreeMap<String, String>,
) -> Result<CloudRoot, StorageError> {
    let (bucket, key) = split_url(location, rest)?;
    let (common, rest_opts) = take_common(options)?;
    if common.unsafe_single_writer {
        return Err(invalid(
            "unsafe_single_writer applies to S3-compatible stores without conditional writes; GCS always has them",
        ));
    }
    let mut builder = GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(bucket)
        .with_retry(common.retry);
    for (given, key, v) in &rest_opts {
        let parsed = GoogleConfigKey::from_str(key)
            .map_err(|_| invalid(format!("unknown storage option {given:?} for GCS")))?;
        builder = builder.with_config(parsed, v);
    }
    let store = builder
        .build()
        .map_err(|e| invalid(format!("cannot open {location}: {e}")))?;
    Ok(root(
        Arc::new(store),
        &format!("gs://{bucket}"),
        key,
        CommitMode::PutIfAbsent,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn schemes_open_with_their_roots() {
        let creds = opts(&[
            ("aws_access_key_id", "k"),
            ("aws_secret_access_key", "s"),
            ("aws_region", "us-east-1"),
        ]);
        let s3 = open_cloud("s3://bucket/a/b/", &creds).unwrap().unwrap();
        assert_eq!(s3.root_uri, "s3://bucket/a/b");
        assert_eq!(s3.prefix.as_ref(), "a/b");
        assert_eq!(s3.commit_mode, CommitMode::PutIfAbsent);
        let az = open_cloud(
            "abfss://fs@acct.dfs.core.windows.net/dir/t",
            &opts(&[("azure_storage_access_key", "a2V5")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(az.root_uri, "abfss://fs@acct.dfs.core.windows.net/dir/t");
        assert_eq!(az.prefix.as_ref(), "dir/t");
        // Custom endpoints in both addressing styles (MinIO, R2, Ceph).
        for (style, endpoint) in [
            ("false", "http://127.0.0.1:9000"),
            ("true", "https://bucket.minio.example:9000"),
        ] {
            let mut o = creds.clone();
            o.insert("aws_virtual_hosted_style_request".into(), style.into());
            o.insert("AWS_ENDPOINT_URL".into(), endpoint.into());
            let r = open_cloud("s3://bucket/t", &o).unwrap().unwrap();
            assert_eq!(r.root_uri, "s3://bucket/t");
        }
        let gs = open_cloud(
            "gs://bucket/t",
            &opts(&[(
                "google_service_account_key",
                r#"{"private_key": "", "private_key_id": "", "client_email": "x@y", "disable_oauth": true, "gcs_base_url": "http://127.0.0.1:4443"}"#,
            )]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(gs.root_uri, "gs://bucket/t");
        assert!(open_cloud("/tmp/x", &BTreeMap::new()).unwrap().is_none());
        assert!(open_cloud("ftp://x/y", &BTreeMap::new()).unwrap().is_none());
    }

    #[test]
    fn a_store_without_conditional_writes_refuses_commits_unless_opted_in() {
        let mut o = opts(&[
            ("aws_access_key_id", "k"),
            ("aws_secret_access_key", "s"),
            ("aws_region", "us-east-1"),
            ("aws_conditional_put", "disabled"),
        ]);
        let r = open_cloud("s3://b/t", &o).unwrap().unwrap();
        assert_eq!(r.commit_mode, CommitMode::Refuse);
        o.insert("AWS_S3_ALLOW_UNSAFE_RENAME".into(), "true".into());
        let r = open_cloud("s3://b/t", &o).unwrap().unwrap();
        assert_eq!(r.commit_mode, CommitMode::UnsafeSingleWriter);
    }

    #[test]
    fn bad_options_are_one_line_errors() {
        for (k, v) in [
            ("nonsense_key", "1"),
            ("max_retries", "many"),
            ("unsafe_single_writer", "perhaps"),
            ("aws_conditional_put", "dynamo"),
        ] {
            let e = open_cloud("s3://b/t", &opts(&[(k, v)])).err().unwrap();
            assert_eq!(e.kind, StorageErrorKind::InvalidLocation, "{k}");
            assert!(!e.message.contains('\n'));
        }
        let e = open_cloud("az://", &BTreeMap::new()).err().unwrap();
        assert!(
            e.message.contains("no bucket or container"),
            "{}",
            e.message
        );
        let e = open_cloud("gs://b/t", &opts(&[("unsafe_single_writer", "true")]))
            .err()
            .unwrap();
        assert!(e.message.contains("GCS always has them"), "{}", e.message);
    }
}
