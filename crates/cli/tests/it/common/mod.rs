//! Running the `delta-rlc` and `delta-rlc-dev` binaries from the CLI tests.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the binary in `dir` with `args`, extra environment `env` (and no `DELTA_RLC_CONF` from
/// the caller's), `stdin` as its input: (exit code, stdout, stderr).
pub fn run(dir: &Path, env: &[(&str, &str)], args: &[&str], stdin: &str) -> (i32, String, String) {
    run_bin(env!("CARGO_BIN_EXE_delta-rlc"), dir, env, args, stdin)
}

/// [`run`] for `delta-rlc-dev` (the simulator, load generators and benchmark drivers).
#[allow(dead_code)]
pub fn run_dev(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    stdin: &str,
) -> (i32, String, String) {
    run_bin(env!("CARGO_BIN_EXE_delta-rlc-dev"), dir, env, args, stdin)
}

fn run_bin(
    bin: &str,
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    stdin: &str,
) -> (i32, String, String) {
    let mut c = Command::new(bin);
    c.current_dir(dir)
        .args(args)
        .env_remove("DELTA_RLC_CONF")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`run`] that must succeed: (stdout, stderr).
#[allow(dead_code)]
pub fn ok(dir: &Path, args: &[&str]) -> (String, String) {
    let (code, out, err) = run(dir, &[], args, "");
    assert_eq!(code, 0, "{args:?}: {err}");
    (out, err)
}

/// [`run_dev`] that must succeed: (stdout, stderr).
#[allow(dead_code)]
pub fn ok_dev(dir: &Path, args: &[&str]) -> (String, String) {
    let (code, out, err) = run_dev(dir, &[], args, "");
    assert_eq!(code, 0, "{args:?}: {err}");
    (out, err)
}
