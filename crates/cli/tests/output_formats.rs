//! `--format`: csv and ndjson print every row (streamed), json is `{"rows": [...]}`, the table
//! format shows at most 10,000 rows and says so on stderr.

use std::process::Command;

fn cli(dir: &std::path::Path, args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_delta-rlc"))
        .current_dir(dir)
        .args(args)
        .env_remove("DELTA_RLC_CONF")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn formats_print_exactly_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cli(d, &["sql", "CREATE TABLE './t' (id BIGINT, s STRING)"]);
    cli(
        d,
        &[
            "sql",
            "INSERT INTO './t' (s, id) SELECT CAST(value AS STRING), value FROM range(0, 25000)",
        ],
    );
    let (csv, _) = cli(
        d,
        &[
            "--format",
            "csv",
            "sql",
            "SELECT id, s FROM './t' ORDER BY id",
        ],
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 25_001);
    assert_eq!(lines[0], "id,s");
    assert_eq!(lines[25_000], "24999,24999");
    let (nd, _) = cli(
        d,
        &[
            "--format",
            "ndjson",
            "sql",
            "SELECT id FROM './t' WHERE id < 2 ORDER BY id",
        ],
    );
    assert_eq!(nd, "{\"id\":0}\n{\"id\":1}\n");
    let (json, _) = cli(d, &["--json", "sql", "SELECT id FROM './t' WHERE id < 0"]);
    assert_eq!(json.trim(), "{\"rows\":[]}");
    let (empty_csv, _) = cli(
        d,
        &[
            "--format",
            "csv",
            "sql",
            "SELECT id FROM './t' WHERE id < 0",
        ],
    );
    assert_eq!(empty_csv, "id\n");
    let (table, notice) = cli(d, &["sql", "SELECT id FROM './t'"]);
    assert_eq!(
        table.lines().count(),
        10_000 + 4,
        "header, rules and 10,000 rows"
    );
    assert!(notice.contains("first 10000 of 25000 rows"), "{notice}");
}
