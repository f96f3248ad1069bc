"""Start-up: which torch is followed, and a torch that fails to import (real Python processes)."""

import json
import os
import subprocess
import sys
import textwrap
import types

from ddprun import _boot, _state

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_torch_release_reads_what_torch_versions_look_like():
    assert _boot.torch_release("2.13.0+cpu") == (2, 13)
    assert _boot.torch_release("1.13.0a0") == (1, 13)
    assert _boot.torch_release("2.1.0.dev20230801") == (2, 1)
    assert _boot.torch_release("1.9rc1") == (1, 9)
    assert _boot.torch_release("unknown") is None


def test_a_torch_older_than_1_13_is_said_and_left_alone(rank_env):
    state = _state.current()
    _boot._torch_loaded(types.SimpleNamespace(__version__="1.12.1"))
    assert not state.enabled
    assert state.reason == "torch 1.12.1 is older than 1.13, the oldest the instrumentation follows"


def run_rank(tmp_path, script, torch_init):
    """`python script` as rank 0 of a ddprun --profile run, with a torch package of torch_init."""
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(torch_init)
    (tmp_path / "script.py").write_text(textwrap.dedent(script))
    env = dict(os.environ, DDPRUN_RUN_DIR=str(tmp_path / "run"), RANK="0", WORLD_SIZE="1", DDPRUN_INSTRUMENT="1",
               PYTHONPATH=os.pathsep.join([os.path.join(PYTHON_DIR, "boot"), str(tmp_path / "site")]))
    env.pop(_state.ROOT_VARIABLE, None)
    return subprocess.run([sys.executable, str(tmp_path / "script.py")], env=env, capture_output=True, text=True)


def test_a_torch_that_fails_to_import_keeps_its_traceback_and_is_said(tmp_path):
    for error in ('ImportError("libtorch_cpu.so: cannot open shared object file")', 'RuntimeError("its own")'):
        for path in tmp_path.iterdir():
            subprocess.run(["rm", "-rf", str(path)], check=True)
        done = run_rank(tmp_path, "import torch\n", "raise %s\n" % error)
        assert done.returncode == 1
        frames = [line for line in done.stderr.splitlines() if line.startswith("  File ")]
        assert len(frames) == 2 and "script.py" in frames[0] and "torch" in frames[1], done.stderr
        with open(tmp_path / "run" / "timings" / "rank-00000.source.json") as f:
            reason = json.load(f)["reason"]
        assert reason.startswith("torch could not be imported (%s: " % error.split("(")[0]), reason


def test_a_program_without_torch_is_said(tmp_path):
    done = run_rank(tmp_path, "print('no torch here')\n", "")
    assert done.returncode == 0 and done.stdout == "no torch here\n"
    with open(tmp_path / "run" / "timings" / "rank-00000.source.json") as f:
        assert json.load(f)["reason"] == "the program never imported torch"
