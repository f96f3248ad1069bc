"""Steps built from marks, and when they reach the timings file."""

import json
import time

from ddprun import _steps
from ddprun._state import current


def records(state):
    try:
        with open(state.files.timings_path) as f:
            return [json.loads(line) for line in f]
    except FileNotFoundError:
        return []


def one_step(steps, forward_s=0.002, loss=None):
    a = steps.mark()
    time.sleep(forward_s)
    b = steps.mark()
    steps.interval("forward", a, b)
    steps.ensure().samples += 8
    steps.ensure().loss = loss
    steps.finish()


def test_a_record_has_its_phases_samples_and_loss(rank_env):
    state = current()
    assert state.claim("python-api")
    one_step(state.steps, loss=0.5)
    state.steps.flush(wait=True)
    (record,) = records(state)
    assert record["schema"] == 1 and record["rank"] == 1 and record["world_size"] == 2 and record["step"] == 0
    assert record["samples"] == 8 and record["loss"] == 0.5
    assert record["phases_ms"]["forward"] >= 2.0
    assert record["step_ms"] >= sum(record["phases_ms"].values())


def test_steps_are_contiguous_and_a_nan_loss_is_left_out(rank_env):
    state = current()
    state.claim("python-api")
    one_step(state.steps, loss=float("nan"))
    one_step(state.steps)
    state.steps.flush(wait=True)
    first, second = records(state)
    assert "loss" not in first
    end_of_first = first["start_unix_us"] + first["step_ms"] * 1000
    assert abs(second["start_unix_us"] - end_of_first) < 5


def test_steps_wait_for_a_quarter_second_of_steps_or_256(rank_env, monkeypatch):
    state = current()
    state.claim("python-api")
    monkeypatch.setattr(_steps, "FLUSH_SECONDS", 3600.0)  # the background thread stays out of it
    for _ in range(_steps.FLUSH_STEPS - 1):
        one_step(state.steps, forward_s=0)
    assert records(state) == []
    one_step(state.steps, forward_s=0)
    assert len(records(state)) == _steps.FLUSH_STEPS


def test_a_step_no_later_step_follows_is_written_by_the_flusher(rank_env):
    state = current()
    state.claim("python-api")
    one_step(state.steps)
    deadline = time.monotonic() + 3 * _steps.FLUSH_SECONDS + 2.0
    while not records(state) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r["step"] for r in records(state)] == [0]


def test_nothing_is_written_by_a_process_that_has_not_claimed_the_rank(rank_env):
    state = current()
    one_step(state.steps)
    state.steps.flush(wait=True)
    assert records(state) == []
