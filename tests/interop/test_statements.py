"""Scripts through the CLI split only at top-level ';' (a ';' ending a line inside a comment or a
string does not run half a statement), the same in `sql -f` and the shell; and a quoted literal
stays one literal. Each case deleted every row before."""
import subprocess

from conftest import BIN, rlc, rlc_rows


def test_sql_file_and_shell_split_where_the_parser_does(tmp_path):
    for how in ["file", "shell"]:
        uri = str(tmp_path / how)
        rlc("sql", f"CREATE TABLE '{uri}' (id BIGINT, name STRING)")
        rlc("sql", f"INSERT INTO '{uri}' VALUES (1, 'x'), (2, 'y'), (3, 'it''s')")
        script = (
            f"DELETE FROM '{uri}' -- remove the test row;\nWHERE id = 1;\n"
            f"DELETE FROM '{uri}' WHERE name = 'x'' OR ''1''=''1';\n"
            f"UPDATE '{uri}' SET name = 'a;\nb' WHERE id = 2;\n"
        )
        if how == "file":
            path = tmp_path / "s.sql"
            path.write_text(script)
            rlc("sql", "-f", str(path))
        else:
            r = subprocess.run([BIN, "shell"], input=script, capture_output=True, text=True)
            assert r.returncode == 0 and "error" not in r.stderr, r
        assert rlc_rows(f"SELECT id, name FROM '{uri}' ORDER BY id") == [{"id": 2, "name": "a;\nb"}, {"id": 3, "name": "it's"}], how


def test_every_row_statement_honours_the_format_and_a_closed_pipe_is_quiet(tmp_path):
    uri = str(tmp_path / "f")
    rlc("sql", f"CREATE TABLE '{uri}' (id BIGINT, name STRING) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    rlc("sql", f"INSERT INTO '{uri}' VALUES (1, 'a'), (2, 'b')")
    for stmt in [f"DESCRIBE '{uri}'", f"DESCRIBE HISTORY '{uri}'", f"SELECT * FROM table_changes('{uri}', 0)"]:
        csv = rlc("--format", "csv", "sql", stmt).stdout.splitlines()
        assert csv and "," in csv[0] and not csv[0].startswith("+"), (stmt, csv)
        nd = rlc("--format", "ndjson", "sql", stmt).stdout.splitlines()
        assert nd and all(line.startswith("{") for line in nd), (stmt, nd)
    # The reader goes away after one line: no panic, no error message.
    p = subprocess.Popen([BIN, "--format", "csv", "sql", "SELECT * FROM range(2000000)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "panicked" not in err and "error" not in err, err
