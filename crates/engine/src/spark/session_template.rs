//! Built DataFusion states kept as templates: a context is a clone of one, not a new build.
//!
//! Why: building a state registers DataFusion's few hundred functions and its rules, and the
//! engine plans with a fresh context per statement, per stored rule and per standalone
//! expression. In a debug build that build was about a sixth of the simulator's time.
//!
//! Invariants that make a clone as good as a build:
//! - Shared by `Arc` between clones, and never mutated after the build: the functions, analyzer,
//!   optimizer and physical-optimizer rules, planners.
//! - Shared and shared before too: the runtime (a session's, or the process's unlimited one). It
//!   keeps no caches (`env::runtime_builder`); what a statement adds to it is an object store for
//!   an `s3://` bucket read as files, registered by the bucket's URL, the same store for a
//!   bucket every time (`sql/file_tables.rs`).
//! - Never shared: each clone gets its own configuration, table options (derived from it) and
//!   catalog list (a fresh default catalog and schema), so two contexts never see each other's
//!   registered tables or settings.
//! - Derived from the configuration at build time beyond those: only functions'
//!   `with_updated_config`, which in DataFusion reads `execution.time_zone` (`now`,
//!   `to_timestamp`). A template is therefore kept per (runtime, time zone) and used only for a
//!   configuration with that time zone.
//!
//! At most [`MAX_TEMPLATES`] are kept; past that the oldest is dropped (it is only rebuilt). A
//! kept template keeps its runtime alive (a memory-limited session's pool, an empty one once the
//! session ended) until it is dropped.

use std::sync::{Arc, Mutex};

use datafusion::catalog::{CatalogProviderList, MemoryCatalogProviderList};
use datafusion::common::config::TableOptions;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::SessionState;
use datafusion::execution::SessionStateDefaults;
use datafusion::prelude::SessionConfig;

/// Templates kept (a process uses one per memory limit and time zone).
const MAX_TEMPLATES: usize = 8;

struct Template {
    /// `None` only when the process's unlimited runtime could not be built.
    runtime: Option<Arc<RuntimeEnv>>,
    time_zone: Option<String>,
    state: SessionState,
}

static TEMPLATES: Mutex<Vec<Template>> = Mutex::new(Vec::new());

/// A state for `config` running in `runtime` (the template's default runtime when `None`).
pub(super) fn state(config: SessionConfig, runtime: Option<Arc<RuntimeEnv>>) -> SessionState {
    // One key for "no runtime of its own": the process's unlimited runtime, which a build would
    // take anyway.
    let runtime = runtime.or_else(|| crate::env::unlimited_runtime().ok());
    let time_zone = config.options().execution.time_zone.clone();
    let mut state = match template(&runtime, &time_zone) {
        Some(t) => t,
        None => {
            let built = super::build_state(config.clone(), runtime.clone());
            if let Ok(mut held) = TEMPLATES.lock() {
                if held.len() >= MAX_TEMPLATES {
                    held.remove(0);
                }
                held.push(Template {
                    runtime,
                    time_zone,
                    state: built.clone(),
                });
            }
            built
        }
    };
    *state.table_options_mut() = TableOptions::default_from_session_config(config.options());
    *state.config_mut() = config;
    let catalogs: Arc<dyn CatalogProviderList> = Arc::new(MemoryCatalogProviderList::new());
    if state.config().create_default_catalog_and_schema() {
        let catalog = SessionStateDefaults::default_catalog(
            state.config(),
            state.table_factories(),
            state.runtime_env(),
        );
        catalogs.register_catalog(
            state.config().options().catalog.default_catalog.clone(),
            Arc::new(catalog),
        );
    }
    state.register_catalog_list(catalogs);
    state
}

/// A clone of the template for `runtime` and `time_zone`, if one is kept.
fn template(runtime: &Option<Arc<RuntimeEnv>>, time_zone: &Option<String>) -> Option<SessionState> {
    let held = TEMPLATES.lock().ok()?;
    held.iter()
        .find(|t| {
            &t.time_zone == time_zone
                && match (&t.runtime, runtime) {
                    (None, None) => true,
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    _ => false,
                }
        })
        .map(|t| t.state.clone())
}
