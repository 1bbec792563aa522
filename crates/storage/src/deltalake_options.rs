//! Storage options a deltalake (delta-rs) user already passes, translated to ours before a cloud
//! location is opened. Each deltalake option either keeps its meaning here (renamed to the key
//! object_store or our retry settings use), is accepted and ignored with a one-line warning where
//! it means nothing here, or is refused with a clear error where ignoring it would do something
//! other than the user asked (e.g. credentials from a named profile we cannot read).
//!
//! | deltalake option | here |
//! | --- | --- |
//! | `AWS_S3_ADDRESSING_STYLE` = `virtual` / `path` | `aws_virtual_hosted_style_request` |
//! | `AWS_S3_POOL_IDLE_TIMEOUT_SECONDS` | the HTTP client's `pool_idle_timeout` |
//! | `AWS_S3_GET_INTERNAL_SERVER_ERROR_RETRIES`, `AWS_MAX_RETRIES` | `max_retries` (unless given) |
//! | `AWS_S3_ALLOW_UNSAFE_RENAME` | `unsafe_single_writer` (already ours) |
//! | `max_retries`, `retry_timeout`, `backoff_config.{init_backoff,max_backoff,base}` | the same |
//! | `AWS_S3_LOCKING_PROVIDER` = `dynamodb` | refused: writers committing through the lock do not interlock with conditional writes |
//! | `DELTA_DYNAMO_*`, `*_DYNAMODB` | ignored, warning (no lock is used) |
//! | `AWS_STS_POOL_IDLE_TIMEOUT_SECONDS`, `AWS_EC2_METADATA_DISABLED`, `AWS_EC2_METADATA_TIMEOUT`, `AWS_FORCE_CREDENTIAL_LOAD` | ignored, warning |
//! | `AWS_PROFILE`, `AWS_IAM_ROLE_ARN`, `AWS_S3_ASSUME_ROLE_ARN`, `AWS_IAM_ROLE_SESSION_NAME`, `AWS_S3_ROLE_SESSION_NAME` | refused: no profile files or STS AssumeRole here |
//!
//! Every other key goes to object_store's builder for the scheme, which knows the `AWS_*`,
//! `AZURE_*` and `GOOGLE_*` keys deltalake documents and the HTTP client keys (`timeout`,
//! `connect_timeout`, `allow_http`, `proxy_url`, …); a key nobody knows is an error, as before.

use std::collections::BTreeMap;

use crate::store::{StorageError, StorageErrorKind};

/// What a DynamoDB-locking deltalake writer must know before sharing a table with us.
const NO_LOCK: &str = "delta-rlc commits with the store's conditional writes (If-None-Match), not a DynamoDB lock; writers that commit through the lock do not interlock with it, so every writer of this table must use conditional writes (deltalake's default since 0.23)";

fn invalid(msg: impl Into<String>) -> StorageError {
    StorageError::new(StorageErrorKind::InvalidLocation, msg)
}

/// The options translated for `scheme` (lower case: `s3`, `az`, `gs`, …), and the warnings for
/// the options ignored. Keys are matched in any case.
pub(crate) fn translate(
    scheme: &str,
    options: &BTreeMap<String, String>,
) -> Result<(BTreeMap<String, String>, Vec<String>), StorageError> {
    let s3 = matches!(scheme, "s3" | "s3a");
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    let given = |name: &str| options.keys().any(|k| k.eq_ignore_ascii_case(name));
    for (k, v) in options {
        let key = k.to_ascii_uppercase();
        let ignore = |why: &str| format!("storage option {k} is ignored: {why}");
        match key.as_str() {
            // Other writers of this table commit through the lock: a conditional write does not
            // interlock with them (one may overwrite our commit), so ignoring it would risk a lost
            // commit. Refused, not ignored.
            "AWS_S3_LOCKING_PROVIDER" if !v.trim().is_empty() && !v.trim().eq_ignore_ascii_case("none") => {
                return Err(invalid(format!(
                    "storage option {k}={v} is not supported: {NO_LOCK}; remove it once no writer uses the lock"
                )))
            }
            "AWS_S3_LOCKING_PROVIDER" => {}
            _ if key.starts_with("DELTA_DYNAMO_") || key.ends_with("_DYNAMODB") => {
                warnings.push(ignore("no DynamoDB lock is used (commits are conditional writes)"))
            }
            "AWS_STS_POOL_IDLE_TIMEOUT_SECONDS" => {
                warnings.push(ignore("no separate STS connection pool here"))
            }
            "AWS_EC2_METADATA_DISABLED" | "AWS_EC2_METADATA_TIMEOUT" | "AWS_FORCE_CREDENTIAL_LOAD" => {
                warnings.push(ignore(
                    "credentials come from the options, the environment, or the instance metadata service when neither has them",
                ))
            }
            "AWS_PROFILE" => {
                return Err(invalid(format!(
                    "storage option {k} is not supported: named profiles are not read; pass AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) or use the environment's credentials"
                )))
            }
            "AWS_IAM_ROLE_ARN" | "AWS_S3_ASSUME_ROLE_ARN" | "AWS_IAM_ROLE_SESSION_NAME"
            | "AWS_S3_ROLE_SESSION_NAME" => {
                return Err(invalid(format!(
                    "storage option {k} is not supported: STS AssumeRole is not done here; pass the role's temporary credentials, or AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE"
                )))
            }
            "AWS_S3_ADDRESSING_STYLE" if s3 => {
                let virtual_hosted = match v.trim().to_ascii_lowercase().as_str() {
                    "virtual" => "true",
                    "path" => "false",
                    other => {
                        return Err(invalid(format!(
                            "storage option {k} must be \"virtual\" or \"path\", not {other:?}"
                        )))
                    }
                };
                out.insert(
                    "aws_virtual_hosted_style_request".into(),
                    virtual_hosted.into(),
                );
            }
            "AWS_S3_POOL_IDLE_TIMEOUT_SECONDS" if s3 => {
                let secs: u64 = v.trim().parse().map_err(|_| {
                    invalid(format!("storage option {k} must be seconds, not {v:?}"))
                })?;
                out.insert("pool_idle_timeout".into(), format!("{secs}s"));
            }
            "AWS_S3_GET_INTERNAL_SERVER_ERROR_RETRIES" | "AWS_MAX_RETRIES" => {
                if !given("max_retries") {
                    out.insert("max_retries".into(), v.clone());
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Ok((out, warnings))
}

/// A duration as deltalake writes them: `300s`, `5m`, `1h`, `250ms`, or a number of seconds.
pub(crate) fn parse_duration(key: &str, v: &str) -> Result<std::time::Duration, StorageError> {
    let t = v.trim();
    let (num, unit) = match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: f64 = num
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| {
            invalid(format!(
                "storage option {key:?} must be a duration, not {v:?}"
            ))
        })?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "s" | "sec" | "secs" => n,
        "m" | "min" | "mins" => n * 60.0,
        "h" | "hr" | "hrs" => n * 3600.0,
        _ => {
            return Err(invalid(format!(
                "storage option {key:?} must be a duration (300s, 5m, 1h, 250ms), not {v:?}"
            )))
        }
    };
    std::time::Duration::try_from_secs_f64(secs)
        .map_err(|_| invalid(format!("storage option {key:?}: {v:?} is out of range")))
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
    fn deltalake_options_are_mapped_ignored_or_refused() {
        let e = translate("s3", &opts(&[("AWS_S3_LOCKING_PROVIDER", "dynamodb")])).unwrap_err();
        assert!(e.message.contains("do not interlock"), "{e}");
        let (out, warnings) = translate(
            "s3",
            &opts(&[
                ("AWS_S3_LOCKING_PROVIDER", "none"),
                ("DELTA_DYNAMO_TABLE_NAME", "locks"),
                ("AWS_ENDPOINT_URL_DYNAMODB", "http://x"),
                ("AWS_MAX_RETRIES", "3"),
                ("AWS_S3_ADDRESSING_STYLE", "virtual"),
                ("AWS_S3_POOL_IDLE_TIMEOUT_SECONDS", "15"),
                ("aws_region", "us-east-1"),
            ]),
        )
        .unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings
            .iter()
            .all(|w| w.contains("DYNAMO") && w.contains("is ignored")));
        assert_eq!(out.get("max_retries").map(String::as_str), Some("3"));
        assert_eq!(
            out.get("aws_virtual_hosted_style_request")
                .map(String::as_str),
            Some("true")
        );
        assert_eq!(
            out.get("pool_idle_timeout").map(String::as_str),
            Some("15s")
        );
        assert_eq!(out.get("aws_region").map(String::as_str), Some("us-east-1"));
        // An explicit max_retries wins over the deltalake alias.
        let (out, _) = translate(
            "s3",
            &opts(&[("max_retries", "7"), ("AWS_MAX_RETRIES", "3")]),
        )
        .unwrap();
        assert_eq!(out.get("max_retries").map(String::as_str), Some("7"));
        for refused in ["AWS_PROFILE", "AWS_IAM_ROLE_ARN", "aws_s3_assume_role_arn"] {
            let e = translate("s3", &opts(&[(refused, "x")])).unwrap_err();
            assert!(e.message.contains("not supported"), "{e}");
        }
        assert!(translate("s3", &opts(&[("AWS_S3_ADDRESSING_STYLE", "sideways")])).is_err());
    }

    #[test]
    fn durations_take_deltalake_units() {
        let d = |v| parse_duration("retry_timeout", v).unwrap().as_millis();
        assert_eq!(
            (d("300s"), d("5m"), d("1h"), d("250ms"), d("2")),
            (300_000, 300_000, 3_600_000, 250, 2_000)
        );
        assert!(parse_duration("retry_timeout", "soon").is_err());
        assert!(parse_duration("retry_timeout", "-1s").is_err());
    }
}
