"""A rank's environment in a temporary run directory, and a fresh rank state for each test."""

import os
import sys
from typing import Iterator

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ddprun import _state  # noqa: E402


@pytest.fixture
def rank_env(tmp_path: "os.PathLike[str]", monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The environment ddprun gives rank 1 of 2, run directory tmp_path; the state made anew."""
    monkeypatch.setenv("DDPRUN_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv(_state.ROOT_VARIABLE, raising=False)
    monkeypatch.setattr(_state, "_state", None)
    yield str(tmp_path)
    monkeypatch.setattr(_state, "_state", None)
