"""The test servers' starter (tests/endpoint_servers.py): a server is reachable inside
the block and gone after it; one that cannot start fails the test with its own words;
a failure inside the block keeps the server's log and says where it is."""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.endpoint_servers import scripted_server

pytest.importorskip("aiohttp", reason="the scripted server needs aiohttp "
                                      "(pip install -e '.[endpoint]')")


def _models(url: str) -> list[str]:
    with urllib.request.urlopen(url + "/models", timeout=10) as response:
        return [model["id"] for model in json.load(response)["data"]]


def test_scripted_server_serves_inside_the_block_and_is_gone_after() -> None:
    with scripted_server({"models": {"m": {"ttft_ms": 1}, "n": {}}}) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert sorted(_models(url)) == ["m", "n"]
    with pytest.raises(urllib.error.URLError):
        _models(url)


def test_a_script_file_is_served_as_it_is(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"models": {"from-file": {}}}))
    with scripted_server(script) as url:
        assert _models(url) == ["from-file"]


def test_a_server_that_cannot_start_fails_the_test_with_its_error() -> None:
    with pytest.raises(pytest.fail.Exception) as failed, scripted_server({"models": {}}):
        pass
    message = str(failed.value)
    assert "the scripted server exited with status 2 before it served" in message
    assert "models must be an object" in message
    _remove_log(message)


def _remove_log(message: str) -> None:
    """Delete the log whose path ``message`` gives in brackets, and its folder."""
    log = Path(message.split("log (", 1)[1].split(")", 1)[0])
    assert log.name == "server.log" and "listening on" not in log.read_text()
    log.unlink()
    log.parent.rmdir()


def test_a_failure_in_the_block_keeps_the_log_and_says_where() -> None:
    with pytest.raises(ZeroDivisionError) as raised, scripted_server({"models": {"m": {}}}):
        _ = 1 / 0
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("the scripted server's log (")
    log = Path(notes[0].split("(", 1)[1].split(")", 1)[0])
    assert "listening on http://127.0.0.1:" in log.read_text()
    log.unlink()
    log.parent.rmdir()


def test_a_skip_in_the_block_leaves_no_log() -> None:
    before = set(Path(tempfile.gettempdir()).glob("dlbench-server-*"))
    with pytest.raises(pytest.skip.Exception), scripted_server({"models": {"m": {}}}):
        pytest.skip("a skip")
    assert set(Path(tempfile.gettempdir()).glob("dlbench-server-*")) == before
