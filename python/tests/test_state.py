"""Which process of a rank writes, and what the rank says at exit."""

import json
import os
import subprocess
import sys

from ddprun import _state


def source(state):
    with open(state.files.source_path) as f:
        return json.load(f)


def test_no_state_outside_a_ddprun_rank(monkeypatch):
    monkeypatch.setattr(_state, "_state", None)
    monkeypatch.delenv("DDPRUN_RUN_DIR", raising=False)
    assert _state.current() is None
    monkeypatch.setenv("DDPRUN_RUN_DIR", "/tmp")
    monkeypatch.setenv("RANK", "not-a-number")
    assert _state.current() is None


def test_the_first_claim_writes_the_source_record(rank_env):
    state = _state.current()
    assert state.claim("python-auto")
    record = source(state)
    assert record["source"] == "python-auto" and record["instrumented"] and record["pid"] == os.getpid()


def test_a_live_process_keeps_its_claim(rank_env):
    state = _state.current()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.makedirs(os.path.dirname(state.files.source_path))
        with open(state.files.source_path, "w") as f:
            json.dump({"source": "python-auto", "pid": holder.pid, "instrumented": True}, f)
        assert not state.claim("python-auto")
        assert not state.enabled
    finally:
        holder.kill()
        holder.wait()


def test_a_record_of_a_process_that_ended_is_taken_over(rank_env):
    state = _state.current()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    os.makedirs(os.path.dirname(state.files.source_path))
    with open(state.files.source_path, "w") as f:
        json.dump({"source": "python-auto", "pid": int(ended.stdout), "instrumented": True}, f)
    assert state.claim("python-api")
    assert source(state)["pid"] == os.getpid()


def test_the_first_reason_stays(rank_env):
    state = _state.current()
    state.claim("python-auto")
    state.disable("first")
    state.disable("second")
    assert source(state)["reason"] == "first" and not source(state)["instrumented"]


def test_the_root_says_what_was_not_measured_when_nobody_claimed(rank_env):
    state = _state.current()
    state.at_exit("the program never imported torch")
    record = source(state)
    assert record["reason"] == "the program never imported torch" and not record["instrumented"]
