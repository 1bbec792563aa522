//! `delta-rlc scenario run FILE...`

use std::path::PathBuf;

use delta_rlc_engine::scenario::run_scenario;
use delta_rlc_engine::EngineError;

pub async fn run(
    files: &[PathBuf],
    dir: Option<PathBuf>,
    overrides: &[(String, String)],
    json: bool,
) -> Result<(), EngineError> {
    if files.is_empty() {
        return Err(EngineError::invalid("scenario run needs at least one file"));
    }
    let tmp = tempfile::tempdir().map_err(|e| EngineError::Internal(e.to_string()))?;
    let base = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    let mut failed = 0usize;
    let mut reports = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let source = std::fs::read_to_string(f)
            .map_err(|e| EngineError::invalid(format!("{}: {e}", f.display())))?;
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario");
        let location = base.join(format!("{i:03}-{stem}"));
        if location.exists() {
            return Err(EngineError::invalid(format!(
                "{} already exists; choose an empty --dir",
                location.display()
            )));
        }
        let report = run_scenario(
            &f.display().to_string(),
            &source,
            &location.display().to_string(),
            overrides,
        )
        .await?;
        if !report.passed() {
            failed += 1;
        }
        if json {
            reports.push(report.to_json());
        } else {
            print!("{}", report.to_text());
        }
    }
    if json {
        println!("{}", serde_json::Value::Array(reports));
    } else {
        println!("{} passed, {} failed", files.len() - failed, failed);
    }
    if failed > 0 {
        return Err(EngineError::invalid(format!(
            "{failed} scenario(s) did not meet their expectations"
        )));
    }
    Ok(())
}
