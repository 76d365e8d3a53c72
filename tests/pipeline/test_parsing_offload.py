"""PDF text layers read in parser processes of their own (apps.pipeline.parsing.offload): the same
text as in the calling process, the same messages for a broken file, and nothing lost when a parser
process dies.

Plain Python: no database. Real processes (spawned, as the worker spawns them)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apps.pipeline.parsing import ParseError, extract, offload
from tests.hostile import pdf_bytes

TEXT = "The Vicksburg siege lasted forty-seven days in the summer of 1863."


@pytest.fixture(autouse=True)
def _no_parser_processes_left():
    yield
    offload.shutdown()


def test_a_pdf_read_in_a_parser_process_gives_the_text_read_in_this_one():
    data = pdf_bytes(TEXT)
    here, there = extract("siege.pdf", data, parser_processes=0), extract("siege.pdf", data, parser_processes=2)
    assert TEXT in there.text
    assert there.text == here.text
    assert there.locations == here.locations


def test_a_damaged_pdf_is_refused_with_the_same_message_from_a_parser_process():
    data = pdf_bytes(TEXT)[:200]  # the header and a piece of the catalogue, no pages
    with pytest.raises(ParseError) as here:
        extract("cut.pdf", data, parser_processes=0)
    with pytest.raises(ParseError) as there:
        extract("cut.pdf", data, parser_processes=2)
    assert str(there.value) == str(here.value)
    assert "“cut.pdf” is damaged or truncated" in str(there.value)


def die_unless_in(pid: int, value: str) -> str:
    """Kill the process it runs in, unless that is process `pid`: a parser crashing."""
    if os.getpid() != pid:
        os._exit(1)
    return value


def test_when_a_parser_process_dies_the_file_is_read_here_and_the_pool_replaced():
    assert offload.run(1, die_unless_in, os.getpid(), "read here") == "read here"
    # The next call gets a pool of live processes again: a process of its own runs it.
    assert offload.run(1, os.getpid) != os.getpid()


PARENT = """
import os, sys, time
sys.path.insert(0, {root!r})
from apps.pipeline.parsing import offload
if __name__ == "__main__":
    print(offload.run(1, os.getpid), flush=True)
    time.sleep(60)
"""


def test_a_parser_process_exits_when_its_worker_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(root=str(Path(__file__).resolve().parents[2])))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        parser = int(parent.stdout.readline())
        assert _alive(parser)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 5
    while _alive(parser) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(parser)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone too: its exit status waits for a parent that is no longer there.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_warming_starts_every_parser_process_before_the_first_file():
    offload.shutdown()  # another module's ingestion may have started some
    assert _parser_children() == set()
    offload.warm(2)
    started = _parser_children()
    assert len(started) == 2
    assert offload.run(2, os.getpid) in started  # the first file goes to one of them, none new
    assert _parser_children() == started


def _parser_children() -> set[int]:
    return {process.pid for process in multiprocessing.active_children()}
