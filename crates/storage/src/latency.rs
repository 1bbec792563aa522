//! A store that answers like a remote object store: each request waits a first-byte latency drawn
//! from a per-kind lognormal distribution before it reaches the wrapped store. With it a writer's
//! statement on this machine is bound by waiting, as on a cluster against S3, not by local CPU —
//! what benchmarks of many writers need (issues #48, #51).
//!
//! A profile is a small text file, one line per request kind, `kind = p50_ms p99_ms`:
//!
//! ```text
//! # S3 Standard, client in the bucket's region
//! get = 30 150
//! head = 20 100
//! put = 50 250
//! put_if_absent = 60 300
//! list = 50 200
//! delete = 30 150
//! ```
//!
//! Kinds not listed take no latency. `fixed:<ms>` gives every request the same latency (tests),
//! and `s3` is the built-in profile above (`bench/latency/s3.profile` states its sources). Draws
//! come from a seeded generator, so a run is repeatable up to task scheduling.
//!
//! Opened through the storage options `delta_rlc_latency_profile` and `delta_rlc_latency_seed`,
//! on object-store and in-memory locations (a local disk's reads bypass the object store).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use crate::store::{StorageError, StorageErrorKind};

/// The built-in S3 profile (the same numbers as `bench/latency/s3.profile`).
pub const S3_PROFILE: &str = "get = 30 150\nhead = 20 100\nput = 50 250\nput_if_absent = 60 300\nlist = 50 200\ndelete = 30 150\n";

/// A latency distribution: lognormal, given by its median and 99th percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lognormal {
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Lognormal {
    /// A draw for the standard normal value `z`.
    fn at(&self, z: f64) -> Duration {
        if self.p50_ms <= 0.0 {
            return Duration::ZERO;
        }
        // ln X ~ N(mu, sigma): the median is e^mu; the 99th percentile e^(mu + 2.3263 sigma).
        let sigma = (self.p99_ms / self.p50_ms).max(1.0).ln() / 2.326_347_9;
        let ms = (self.p50_ms.ln() + sigma * z).exp();
        // Bounded: a tail draw never stalls a run for more than 100× the median.
        Duration::from_secs_f64(ms.min(self.p50_ms * 100.0) / 1000.0)
    }
}

/// Latency per request kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyProfile {
    pub get: Option<Lognormal>,
    pub head: Option<Lognormal>,
    pub put: Option<Lognormal>,
    pub put_if_absent: Option<Lognormal>,
    pub list: Option<Lognormal>,
    pub delete: Option<Lognormal>,
}

fn bad(msg: impl Into<String>) -> StorageError {
    StorageError::new(StorageErrorKind::InvalidLocation, msg)
}

impl LatencyProfile {
    /// `s3`, `fixed:<ms>`, or the path of a profile file.
    pub fn named(spec: &str) -> Result<LatencyProfile, StorageError> {
        let spec = spec.trim();
        if spec.eq_ignore_ascii_case("s3") {
            return LatencyProfile::parse(S3_PROFILE);
        }
        if let Some(ms) = spec.strip_prefix("fixed:") {
            let ms: f64 = ms
                .trim()
                .parse()
                .ok()
                .filter(|m: &f64| m.is_finite() && *m >= 0.0)
                .ok_or_else(|| bad(format!("latency profile {spec:?}: fixed:<milliseconds>")))?;
            let d = Some(Lognormal {
                p50_ms: ms,
                p99_ms: ms,
            });
            return Ok(LatencyProfile {
                get: d,
                head: d,
                put: d,
                put_if_absent: d,
                list: d,
                delete: d,
            });
        }
        let text = std::fs::read_to_string(spec)
            .map_err(|e| bad(format!("latency profile {spec}: {e}")))?;
        LatencyProfile::parse(&text)
    }

    /// Parses `kind = p50_ms p99_ms` lines (`#` starts a comment).
    pub fn parse(text: &str) -> Result<LatencyProfile, StorageError> {
        let mut p = LatencyProfile::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = || {
                bad(format!(
                    "latency profile line {}: {raw:?}: expected `kind = p50_ms p99_ms`",
                    n + 1
                ))
            };
            let (kind, values) = line.split_once('=').ok_or_else(err)?;
            let nums: Vec<f64> = values
                .split_whitespace()
                .map(|v| v.parse::<f64>().map_err(|_| err()))
                .collect::<Result<_, _>>()?;
            let [p50, p99] = nums[..] else {
                return Err(err());
            };
            if !(p50.is_finite() && p99.is_finite() && p50 >= 0.0 && p99 >= p50) {
                return Err(err());
            }
            let d = Some(Lognormal {
                p50_ms: p50,
                p99_ms: p99,
            });
            match kind.trim().to_ascii_lowercase().as_str() {
                "get" => p.get = d,
                "head" => p.head = d,
                "put" => p.put = d,
                "put_if_absent" => p.put_if_absent = d,
                "list" => p.list = d,
                "delete" => p.delete = d,
                other => {
                    return Err(bad(format!(
                        "latency profile: unknown request kind {other:?}"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// The latency options, taken out of a location's storage options (the rest are returned).
pub(crate) fn take_latency_options(
    options: &std::collections::BTreeMap<String, String>,
) -> Result<
    (
        Option<(LatencyProfile, u64)>,
        std::collections::BTreeMap<String, String>,
    ),
    StorageError,
> {
    let mut rest = options.clone();
    let mut profile = None;
    let mut seed = 0u64;
    for (k, v) in options {
        match k.to_ascii_lowercase().as_str() {
            "delta_rlc_latency_profile" => {
                profile = Some(LatencyProfile::named(v)?);
                rest.remove(k);
            }
            "delta_rlc_latency_seed" => {
                seed = v.trim().parse().map_err(|_| {
                    bad(format!("storage option {k:?} must be a number, not {v:?}"))
                })?;
                rest.remove(k);
            }
            _ => {}
        }
    }
    Ok((profile.map(|p| (p, seed)), rest))
}

/// `store` behind the latency of `latency`, when given.
pub(crate) fn with_latency(
    store: Arc<dyn ObjectStore>,
    latency: &Option<(LatencyProfile, u64)>,
) -> Arc<dyn ObjectStore> {
    match latency {
        Some((profile, seed)) => Arc::new(LatencyStore::new(store, profile.clone(), *seed)),
        None => store,
    }
}

/// SplitMix64: a small seeded generator (the draws need repeatability, not quality).
#[derive(Debug)]
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// Wraps a store; every request first waits its kind's latency.
pub struct LatencyStore {
    inner: Arc<dyn ObjectStore>,
    profile: LatencyProfile,
    rng: Mutex<SplitMix>,
}

impl LatencyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, profile: LatencyProfile, seed: u64) -> Self {
        LatencyStore {
            inner,
            profile,
            rng: Mutex::new(SplitMix(seed)),
        }
    }

    async fn wait(&self, d: Option<Lognormal>) {
        let Some(d) = d else { return };
        let z = self.rng.lock().map(|mut r| r.normal()).unwrap_or(0.0);
        let t = d.at(z);
        if !t.is_zero() {
            tokio::time::sleep(t).await;
        }
    }
}

impl LatencyStore {
    /// `listing`, its first page after a LIST's latency.
    fn delayed_listing(
        &self,
        listing: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        use futures::StreamExt;
        let delay = self
            .profile
            .list
            .map(|d| d.at(self.rng.lock().map(|mut r| r.normal()).unwrap_or(0.0)))
            .unwrap_or_default();
        futures::stream::once(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            listing
        })
        .flatten()
        .boxed()
    }
}

impl fmt::Debug for LatencyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LatencyStore({})", self.inner)
    }
}

impl fmt::Display for LatencyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LatencyStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for LatencyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let d = match opts.mode {
            PutMode::Overwrite => self.profile.put,
            _ => self.profile.put_if_absent.or(self.profile.put),
        };
        self.wait(d).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.wait(self.profile.put).await;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let d = if options.head {
            self.profile.head.or(self.profile.get)
        } else {
            self.profile.get
        };
        self.wait(d).await;
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        // Batch deletes (VACUUM) carry no latency: no statement's critical path waits on them.
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.delayed_listing(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.delayed_listing(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.wait(self.profile.list).await;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.wait(self.profile.put).await;
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_bad_lines_are_refused() {
        let p = LatencyProfile::named("s3").unwrap();
        assert_eq!(
            p.get,
            Some(Lognormal {
                p50_ms: 30.0,
                p99_ms: 150.0
            })
        );
        let f = LatencyProfile::named("fixed:5").unwrap();
        assert_eq!(f.list.unwrap().at(3.0), Duration::from_millis(5));
        for bad in [
            "get = 30",
            "get 30 150",
            "get = 150 30",
            "gets = 1 2",
            "get = a b",
        ] {
            assert!(LatencyProfile::parse(bad).is_err(), "{bad}");
        }
        assert!(LatencyProfile::named("fixed:-1").is_err());
    }

    #[test]
    fn draws_have_the_profile_median_and_tail() {
        let d = Lognormal {
            p50_ms: 30.0,
            p99_ms: 150.0,
        };
        let mut rng = SplitMix(7);
        let mut ms: Vec<f64> = (0..20_000)
            .map(|_| d.at(rng.normal()).as_secs_f64() * 1000.0)
            .collect();
        ms.sort_by(f64::total_cmp);
        let (p50, p99) = (ms[10_000], ms[19_800]);
        assert!((27.0..33.0).contains(&p50), "p50 {p50}");
        assert!((130.0..170.0).contains(&p99), "p99 {p99}");
    }
}
