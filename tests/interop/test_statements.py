"""Scripts through the CLI split only at top-level ';' (a ';' ending a line inside a comment or a
string does not run half a statement), the same in `sql -f` and the shell; and a quoted literal
stays one literal. Each case deleted every row before."""
import shutil
import subprocess
import uuid

import pytest

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


# One corpus of hostile statements (quotes, ';' and comment markers inside strings and comments,
# nested comments, keywords inside literals, MERGE's star form), run through every front end: the
# CLI one statement per call, `sql -f`, the shell under a real terminal, Python's `delta_rlc.sql`
# and `python -m delta_rlc sql -f`. Each must leave exactly the same rows.
CORPUS = [
    "DELETE FROM '{t}' -- remove the test row;\nWHERE id = 1",
    "DELETE FROM '{t}' WHERE name = 'x'' OR ''1''=''1'",
    "UPDATE '{t}' SET name = name || ';--' WHERE name = 'it''s'",
    "DELETE FROM '{t}' /* ; /* nested ; */ ; */ WHERE name = 'a;b'",
    "INSERT INTO '{t}' VALUES (7, 'FROM ''./y'' VERSION AS OF 1; DROP')",
    "MERGE INTO '{t}' t USING (SELECT 4 AS id, 'm''' AS name) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
]
EXPECTED = [
    {"id": 2, "name": "it's;--"},
    {"id": 4, "name": "m'"},
    {"id": 5, "name": "é\\x"},
    {"id": 6, "name": "/* ; */"},
    {"id": 7, "name": "FROM './y' VERSION AS OF 1; DROP"},
]


def corpus_table(uri):
    rlc("sql", f"CREATE TABLE '{uri}' (id BIGINT, name STRING)")
    rlc("sql", f"INSERT INTO '{uri}' VALUES (1, 'x'), (2, 'it''s'), (3, 'a;b'), (4, '-- c'), (5, 'é' || chr(92) || 'x'), (6, '/* ; */')")


def test_every_front_end_runs_the_corpus_alike(tmp_path):
    import sys

    ways = {}
    # The CLI, one statement per call.
    uri = str(tmp_path / "cli")
    corpus_table(uri)
    for st in CORPUS:
        rlc("sql", st.format(t=uri))
    ways["sql"] = uri
    # sql -f and python -m delta_rlc sql -f: one script.
    for how, cmd in [("file", [BIN, "sql", "-f"]), ("pyfile", [sys.executable, "-m", "delta_rlc", "sql", "-f"])]:
        uri = str(tmp_path / how)
        corpus_table(uri)
        script = tmp_path / f"{how}.sql"
        script.write_text(";\n".join(st.format(t=uri) for st in CORPUS) + ";\n")
        r = subprocess.run([*cmd, str(script)], capture_output=True, text=True)
        assert r.returncode == 0, (how, r.stderr)
        ways[how] = uri
    # Python's delta_rlc.sql, one statement per call.
    import delta_rlc

    uri = str(tmp_path / "python")
    corpus_table(uri)
    for st in CORPUS:
        delta_rlc.sql(st.format(t=uri))
    ways["python"] = uri
    for how, uri in ways.items():
        assert rlc_rows(f"SELECT id, name FROM '{uri}' ORDER BY id") == EXPECTED, how


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/test.sh")
def test_the_shell_under_a_terminal_runs_the_corpus(tmp_path):
    from test_shell import send, tmux, wait_for

    uri = str(tmp_path / "shell")
    corpus_table(uri)
    session = f"rlc-{uuid.uuid4().hex[:8]}"
    tmux("new-session", "-d", "-s", session, "-x", "220", "-y", "60", "-c", str(tmp_path),
         f"env HOME={tmp_path} {BIN} --format csv shell; sleep 30")
    try:
        wait_for(session, "delta-rlc> ")
        # One statement at a time, as a person types them: the next is typed once a marker
        # query after the previous one has printed.
        for i, st in enumerate(CORPUS):
            for line in (st.format(t=uri) + ";").split("\n"):
                send(session, line)
            send(session, f"SELECT 'step' || '{i}' AS s;")
            wait_for(session, f"step{i}")
        send(session, ".quit")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert rlc_rows(f"SELECT id, name FROM '{uri}' ORDER BY id") == EXPECTED


def test_verbose_reports_what_a_write_sent_to_the_store(tmp_path):
    uri = str(tmp_path / "v")
    rlc("sql", f"CREATE TABLE '{uri}' (id BIGINT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    rlc("sql", f"INSERT INTO '{uri}' VALUES (1), (2), (3)")
    quiet = rlc("sql", f"DELETE FROM '{uri}' WHERE id = 1")
    assert "requests:" not in quiet.stderr
    r = rlc("--verbose", "sql", f"DELETE FROM '{uri}' WHERE id = 2")
    line = [l for l in r.stderr.splitlines() if l.startswith("requests:")]
    # One DV file and the commit: the statement's two writes.
    assert len(line) == 1 and "PUT 2," in line[0] and "critical path" in line[0], r.stderr
    assert rlc_rows(f"SELECT id FROM '{uri}'") == [{"id": 3}]
