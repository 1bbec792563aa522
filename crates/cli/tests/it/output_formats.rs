//! `--format`: csv and ndjson print every row (streamed), json is `{"rows": [...]}`, the table
//! format shows at most 10,000 rows and says so on stderr.

use crate::common;

use common::ok as cli;

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

#[test]
fn data_files_load_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("new.csv"), "id,region,amount\n1,eu,10\n2,us,20\n").unwrap();
    std::fs::write(
        d.join("more.json"),
        "{\"id\":3,\"region\":\"eu\",\"amount\":5}\n",
    )
    .unwrap();
    cli(
        d,
        &[
            "sql",
            "CREATE TABLE './orders' (id BIGINT NOT NULL, region STRING, amount INT)",
        ],
    );
    cli(
        d,
        &["sql", "INSERT INTO './orders' SELECT * FROM 'new.csv'"],
    );
    cli(
        d,
        &[
            "sql",
            "INSERT INTO './orders' SELECT id, region, amount FROM 'more.json'",
        ],
    );
    let (csv, _) = cli(
        d,
        &[
            "--format",
            "csv",
            "sql",
            "SELECT region, sum(amount) AS total FROM './orders' GROUP BY region ORDER BY region",
        ],
    );
    assert_eq!(csv, "region,total\neu,15\nus,20\n");
    // The table functions: a CSV with another delimiter and no header; Parquet by glob.
    std::fs::write(d.join("semi.txt"), "4;eu;1\n").unwrap();
    cli(d, &["sql", "INSERT INTO './orders' SELECT * FROM read_csv('semi.txt', header => false, delimiter => ';')"]);
    std::fs::create_dir(d.join("pq")).unwrap();
    for f in ["a", "b"] {
        let copy = format!("COPY (SELECT * FROM './orders') TO 'pq/{f}.parquet' STORED AS PARQUET");
        cli(d, &["sql", &copy]);
    }
    let (n, _) = cli(
        d,
        &[
            "--format",
            "csv",
            "sql",
            "SELECT count(*) AS n FROM read_parquet('pq/*.parquet')",
        ],
    );
    assert_eq!(n, "n\n8\n");
    // Nothing but the table was created next to the files.
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["more.json", "new.csv", "orders", "pq", "semi.txt"]
    );
}

/// NULL is printed as `null` in every JSON format: a row carries every column's key, so a reader
/// can tell a NULL from a column the query did not select.
#[test]
fn json_formats_write_null_values_explicitly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cli(d, &["sql", "CREATE TABLE './t' (id BIGINT, s STRING)"]);
    cli(d, &["sql", "INSERT INTO './t' VALUES (1, NULL), (2, 'b')"]);
    let q = "SELECT id, s FROM './t' ORDER BY id";
    let (json, _) = cli(d, &["--json", "sql", q]);
    assert_eq!(
        json.trim(),
        "{\"rows\":[{\"id\":1,\"s\":null},{\"id\":2,\"s\":\"b\"}]}"
    );
    let (nd, _) = cli(d, &["--format", "ndjson", "sql", q]);
    assert_eq!(nd, "{\"id\":1,\"s\":null}\n{\"id\":2,\"s\":\"b\"}\n");
    let (streamed, _) = cli(d, &["--format", "json", "sql", q]);
    assert_eq!(streamed.trim(), json.trim());
}

/// `history` and `describe` read the table at the path as given — a quote or a space in it is
/// part of the path, not statement text — and a path that holds no table is a one-line NotFound.
#[test]
fn history_and_describe_take_the_path_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cli(d, &["sql", "CREATE TABLE './o''brien t' (id BIGINT)"]);
    cli(d, &["sql", "INSERT INTO './o''brien t' VALUES (1)"]);
    cli(
        d,
        &["sql", "ALTER TABLE './o''brien t' ADD COLUMNS (s STRING)"],
    );
    let path = "./o'brien t";
    assert!(d.join("o'brien t").join("_delta_log").is_dir());
    let (json, _) = cli(d, &["--json", "history", path]);
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    let versions: Vec<i64> = rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, vec![2, 1, 0]);
    let (json, _) = cli(d, &["--json", "history", path, "--limit", "1"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).unwrap()["rows"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let columns = |args: &[&str]| {
        let (json, _) = cli(d, args);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["rows"].as_array().unwrap().len()
    };
    assert_eq!(columns(&["--json", "describe", path]), 2);
    assert_eq!(
        columns(&["--json", "describe", path, "--at-version", "1"]),
        1
    );
    let (code, _, err) = common::run(d, &[], &["history", "./nothing-here"], "");
    assert_ne!(code, 0);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no Delta table"), "{err}");
    assert!(
        !d.join("nothing-here").exists(),
        "a read created a directory"
    );
}

/// A query that fails after its first rows were computed prints nothing of its JSON document:
/// only the error, on stderr, and a non-zero exit.
#[test]
fn a_json_query_that_fails_part_way_prints_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = common::run(
        dir.path(),
        &[],
        &[
            "--json",
            "sql",
            "SELECT value, 10 / (value - 50000) AS q FROM range(0, 100000)",
        ],
        "",
    );
    assert_ne!(code, 0);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("DIVIDE_BY_ZERO"), "{stderr}");
}
