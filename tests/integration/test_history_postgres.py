"""The history on a real PostgreSQL server: the same answers as SQLite, no duplicates on
a second import, and two importers writing at once losing nothing.

The server is a throwaway cluster this module starts once (``initdb`` and ``pg_ctl``
from Debian's ``postgresql`` package, or from PATH), listening on a unix socket in a
temporary directory only, with trust authentication; as root it runs as the
``postgres`` user, since PostgreSQL refuses to run as root. Without the binaries,
that user, or the ``psycopg`` package, the tests are skipped and say why.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlbench.results.history.store import open_history
from tests.integration.test_history_import import REPO, history_cli, write_nights

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install "
                                                "'psycopg[binary]')")


def _postgres_bin() -> Path | None:
    """The directory of initdb and pg_ctl: Debian's newest, else PATH's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A running server's connection URI (database ``postgres``, user ``dlbench``)."""
    bindir = _postgres_bin()
    if bindir is None or not (bindir / "pg_ctl").exists():
        pytest.skip("needs PostgreSQL's initdb and pg_ctl (Debian: apt-get install postgresql)")
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="dlbench-pg-"))
    if os.geteuid() == 0:  # initdb and postgres refuse root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base)
            pytest.skip("running as root and there is no postgres user to run the server as")
        runuser = shutil.which("runuser")
        if runuser is None:
            shutil.rmtree(base)
            pytest.skip("running as root and there is no runuser to start the server as postgres")
        os.chown(base, owner.pw_uid, owner.pw_gid)
        prefix = [runuser, "-u", "postgres", "--"]
    data = base / "data"
    commands = [
        [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "dlbench", "--no-sync",
         "-E", "UTF8", "--locale=C"],
        # No TCP at all: a socket in our directory; no fsync: the data is thrown away.
        [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w",
         "-o", f"-k {base} -c listen_addresses= -F", "start"],
    ]
    for command in commands:
        proc = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            log = base / "server.log"
            tail = log.read_text()[-400:] if log.exists() else ""
            shutil.rmtree(base, ignore_errors=True)
            pytest.skip(f"PostgreSQL did not start: {Path(command[0]).name}: "
                        f"{(proc.stderr or proc.stdout).strip()[-400:]} {tail}")
    try:
        yield f"postgresql://dlbench@/postgres?host={base}"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_store(postgres_server: str, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the server for one test."""
    name = "h_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    return postgres_server.replace("/postgres?", f"/{name}?")


def test_postgres_gives_what_sqlite_gives_and_never_duplicates(
    postgres_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(p) for p in write_nights(tmp_path / "runs", 24, step_at=16, step=-0.1)]
    sqlite = str(tmp_path / "h.sqlite")
    for store in (postgres_store, sqlite):
        status, out, err = history_cli(["import", *paths, "--store", store], capsys)
        assert status == 0 and out.endswith(": 48 records\n"), err
    status, out, _ = history_cli(["import", *paths[:3], "--store", postgres_store], capsys)
    assert status == 0 and out.count("0 added, 2 replaced") == 3
    assert out.endswith(": 48 records\n")
    with open_history(postgres_store) as team, open_history(sqlite) as mine:
        assert team.kind == "postgresql" and team.count() == 48
        assert [(r.run_id, r.exp_id, r.config, r.environment, r.results, r.record_time)
                for r in team.rows()] == [
            (r.run_id, r.exp_id, r.config, r.environment, r.results, r.record_time)
            for r in mine.rows()]
    checks = [history_cli(["check", "--store", s, "--format", "json"], capsys)
              for s in (postgres_store, sqlite)]
    documents = [json.loads(out) for _, out, _ in checks]
    assert checks[0][0] == checks[1][0] == 1 and documents[0]["new_regressions"] == 1
    assert documents[0]["changes"] == documents[1]["changes"]
    # A column per key, typed: a team queries them in SQL.
    with psycopg.connect(postgres_store) as db:
        found = db.execute('SELECT count(*) FROM history_records WHERE '
                           '"results.throughput" > 0 AND "exp.model" = %s',
                           ("resnet50",)).fetchone()
        types = dict(db.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'history_records'").fetchall())
    assert found == (24,)
    assert types["results.throughput"] == "double precision"
    assert types["exp.model"] == "text" and types["exp.replica_batch"] == "bigint"


def test_two_importers_at_once_lose_nothing(
    postgres_store: str, tmp_path: Path
) -> None:
    paths = [str(p) for p in write_nights(tmp_path / "runs", 40)]
    # Two processes, as two machines or Slurm jobs would be: overlapping runs (10-29
    # by both), one transaction per run, started together.
    script = ("import sys\n"
              "from tests.integration.test_history_import import history_cli_main\n"
              "sys.exit(history_cli_main(sys.argv[1:]))\n")
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, "import", *part, "--store",
                          postgres_store], cwd=REPO, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for part in (paths[:30], paths[10:])
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    with open_history(postgres_store) as store:
        rows = store.rows()
    assert len(rows) == 80  # 40 runs x 2 configurations, each once
    assert len({(r.run_id, r.exp_id) for r in rows}) == 80
    replaced = sum(out.count("0 added, 2 replaced") for out, _ in outputs)
    assert replaced == 20  # the 20 shared runs: whoever came second replaced them


def test_a_server_that_is_not_there_is_one_line_without_the_password(
    postgres_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://dlbench:s3cret@/postgres?host={tmp_path}"
    status, _, err = history_cli(["check", "--store", url], capsys)
    assert status == 2 and err.count("\n") == 1
    assert "cannot connect" in err and "s3cret" not in err and "dlbench:***@" in err


def test_a_format1_history_converts_and_odd_values_round_trip(postgres_store: str) -> None:
    from dlbench.results.history.legacy import format1_rows
    from tests.unit.test_history_layout import VARIED, _row, _rows, write_format1

    with psycopg.connect(postgres_store) as db:
        write_format1(db, VARIED, json_type="JSONB", mark="%s")
        # What format 1 held (jsonb has no -0.0): what format 2 must give back.
        before = format1_rows(db)
    odd = [_row("e", config={"user.nul": "a\x00b", "user." + "x" * 70: "long"},
                environment={"sys.nan": [1.0, float("nan")], "sys.big": 2**70},
                results={"results.pct%": 1.5, "results.passed": 1})]
    with open_history(postgres_store) as store:
        assert _rows(store.rows()) == _rows(before)
        assert store.put(odd) == (1, 0)
        assert _rows(store.rows()) == _rows(before + odd)
    with psycopg.connect(postgres_store) as db:
        version = db.execute("SELECT value FROM history_meta").fetchone()
        near = db.execute('SELECT "user.nul", "sys.nan", "results.pct%" FROM history_records '
                          "WHERE exp_id = 'e'").fetchone()
        imported = db.execute("SELECT imported FROM history_records WHERE exp_id = 'a'"
                              ).fetchone()
        long_name = db.execute("SELECT column_name FROM history_keys WHERE name = %s",
                               ("user." + "x" * 70,)).fetchone()[0]
    # SQL sees what PostgreSQL can hold: no NUL, no NaN in jsonb; the rest is aside.
    assert version == ("2",) and near == ("ab", None, 1.5)
    assert imported == ("2024-02-01T00:00:00",)
    # PostgreSQL keeps 63 bytes of a name: a longer key's column is named to fit.
    assert len(long_name) <= 63 and long_name.startswith("user.xxx") and "#" in long_name
