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
        assert rlc_rows(f"SELECT id, name FROM '{uri}' ORDER BY id") == [[2, "a;\nb"], [3, "it's"]], how
