//! What the two binaries share: the session a command line asks for, exit codes, one-line
//! errors, and the thread and runtime statements run on. `delta-rlc` is the product;
//! `delta-rlc-dev` holds the simulator, load generators and benchmark drivers.

use std::future::Future;
use std::process::ExitCode;

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::{EngineError, ErrorKind};

/// The conflict settings `--conf key=value` (repeatable) and `--retry-on-conflict N` ask for,
/// over the environment's.
pub(crate) fn conflict_config(
    conf: &[String],
    retry_on_conflict: Option<u32>,
) -> Result<ConflictConfig, EngineError> {
    let mut conflict = ConflictConfig::from_env()?;
    for c in conf {
        let (k, v) = c
            .split_once('=')
            .ok_or_else(|| EngineError::invalid(format!("--conf {c:?} is not key=value")))?;
        conflict.set(k, v)?;
    }
    if let Some(n) = retry_on_conflict {
        conflict.reexecution = delta_rlc_engine::txn::reexecute::Reexecution {
            reruns: delta_rlc_engine::txn::reexecute::Reexecution::reruns(n)?.reruns,
            ..conflict.reexecution
        };
    }
    Ok(conflict)
}

/// A session with `conflict` and the memory limit `--memory-limit` (or DELTA_RLC_MEMORY_LIMIT)
/// gives.
pub(crate) fn session(
    conflict: ConflictConfig,
    memory_limit: Option<String>,
) -> Result<SqlSession, EngineError> {
    let limit = memory_limit.or_else(|| std::env::var("DELTA_RLC_MEMORY_LIMIT").ok());
    let env = Env {
        memory_limit: limit
            .as_deref()
            .map(delta_rlc_engine::env::parse_byte_size)
            .transpose()?,
        ..Env::default()
    };
    Ok(SqlSession::new(env, conflict))
}

pub(crate) fn exit_code(e: &EngineError) -> u8 {
    match e.kind() {
        ErrorKind::InvalidArgument => 2,
        ErrorKind::Conflict => 3,
        ErrorKind::NotFound => 4,
        ErrorKind::Unsupported => 5,
        _ => 1,
    }
}

pub(crate) fn one_line(e: &EngineError) -> String {
    e.to_string().replace('\n', " ")
}

/// Stack for the thread that runs statements and for the runtime's workers. Generated SQL nests
/// deeply (100k-term OR chains); DataFusion grows its own stack in its recursive passes, and this
/// covers the rest (our expression rewrites, dropping deep trees). Reserved, not committed, memory.
const STATEMENT_STACK_BYTES: usize = 512 << 20;

/// Runs the command `work` builds on a thread with a large stack and a runtime, and turns its
/// error into one line on stderr (JSON with `json`) and an exit code.
pub(crate) fn run_main<F, Fut>(json: bool, work: F) -> ExitCode
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), EngineError>>,
{
    // A closed stdout (`delta-rlc sql … | head`) ends the process quietly, as it does for any
    // Unix tool, instead of a panic in a print: Rust starts programs with SIGPIPE ignored.
    #[cfg(unix)]
    // SAFETY: called first in main, before any thread exists; restores the default disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    delta_rlc_engine::warnings::set_warning_sink(|m| eprintln!("warning: {m}"));
    let runner = std::thread::Builder::new()
        .name("delta-rlc-main".into())
        .stack_size(STATEMENT_STACK_BYTES)
        .spawn(move || run_on_runtime(json, work));
    match runner.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => {
            eprintln!("error: internal error: the statement thread panicked");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: cannot start the statement thread: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_on_runtime<F, Fut>(json: bool, work: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), EngineError>>,
{
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STATEMENT_STACK_BYTES / 4)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(work()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if json {
                let kind = format!("{:?}", e.kind());
                let mut obj = serde_json::json!({"error": one_line(&e), "kind": kind});
                if let EngineError::Conflict(c) = &e {
                    obj["conflict"] = serde_json::json!({
                        "kind": c.kind.name(), "winningVersion": c.winning_version,
                        "winningOperation": c.winning_operation, "files": c.files,
                        "predicate": c.predicate, "tier": c.tier,
                    });
                }
                eprintln!("{obj}");
            } else {
                eprintln!("error: {}", one_line(&e));
            }
            ExitCode::from(exit_code(&e))
        }
    }
}
