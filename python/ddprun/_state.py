"""The rank's timing state, one per process: its files, the step under construction, and the
source record (timings/rank-NNNNN.source.json: where the timings came from, what could not be
followed and why, the DataLoaders).

Only one process of a rank writes: the first to build a DDP model or to enter `ddprun.step()`
claims the rank (it creates source.json, or takes over one that a process which measured
nothing left). DataLoader workers, scripts run before the training script and other children
inherit the environment and stay silent. The outermost Python process of the rank says at exit
what could not be measured when nobody claimed it."""

import errno
import json
import os
import sys
from typing import Any, Dict, List, Optional

from ._records import RankFiles
from ._steps import StepBuilder, record_head

ROOT_VARIABLE = "DDPRUN_PY_ROOT"  # the pid of the rank's outermost Python process

_state: Optional["State"] = None


def current() -> Optional["State"]:
    """The state of this rank, or None when not run by ddprun (no DDPRUN_RUN_DIR or RANK)."""
    global _state
    if _state is None:
        run_dir, rank = os.environ.get("DDPRUN_RUN_DIR"), os.environ.get("RANK")
        if not run_dir or rank is None or not rank.isdigit():
            return None
        world = os.environ.get("WORLD_SIZE", "")
        _state = State(RankFiles(run_dir, int(rank), int(world) if world.isdigit() else None))
    return _state


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


class State:
    def __init__(self, files: RankFiles) -> None:
        self.files = files
        self.steps = StepBuilder(self)
        self.head = record_head(files.rank, files.world_size)
        self.pid = os.getpid()
        self.root = os.environ.setdefault(ROOT_VARIABLE, str(self.pid)) == str(self.pid)
        self.owner = False
        self.enabled = True  # the automatic instrumentation
        self.api_active = False
        self.source = "python-auto"
        self.reason: Optional[str] = None
        self.notes: List[str] = []
        self.loaders: List[Dict[str, Any]] = []
        self.runtime = "Python %d.%d.%d" % tuple(sys.version_info[:3])
        self.device: Optional[str] = None
        self.instrumented_steps = False

    # The files, for the step builder: nothing is written before the rank is claimed.
    def write_steps(self, steps: List[Any]) -> None:
        if self.owner:
            clock, head = self.steps.clock, self.head
            self.files.write_lines("".join([step.line(clock, head) for step in steps]))

    def progress(self, step: int, phase: str) -> None:
        if self.owner:
            self.files.progress(step, phase)

    def claim(self, source: str, take_over: bool = True) -> bool:
        """Takes the rank for this process; False when another process has it. take_over: a
        record that measured nothing, or whose instrumented process has ended, is replaced (a
        training script run after a preparation script of the same rank)."""
        if self.owner:
            return True
        path = self.files.source_path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            try:
                with open(path) as f:
                    held = json.load(f)
            except (OSError, ValueError):
                held = {}
            pid = held.get("pid")
            busy = held.get("instrumented") and isinstance(pid, int) and pid != self.pid and alive(pid)
            if busy or not take_over:
                self.enabled = False
                return False
        self.owner = True
        self.source = source
        self.save()
        return True

    def disable(self, reason: str) -> None:
        self.enabled = False
        if self.reason is None:
            self.reason = reason
        self.save()

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            self.save()

    def record(self) -> Dict[str, Any]:
        return {
            "source": self.source,
            "pid": self.pid,
            "instrumented": self.reason is None,
            "reason": self.reason,
            "runtime": self.runtime,
            "device": self.device,
            "dataloaders": self.loaders,
            "notes": self.notes,
        }

    def save(self) -> None:
        if not self.owner:
            return
        try:
            self.files.write_source(self.record())
        except OSError:
            pass  # the run directory went away: nothing to tell

    def at_exit(self, reason_if_unclaimed: Optional[str]) -> None:
        """The last word: the owner's final record, or the root's account of what was not measured."""
        if os.getpid() != self.pid:
            return  # a forked child (a DataLoader worker) inherited this state
        if self.owner:
            try:
                self.steps.flush(wait=True)
            except Exception:  # noqa: BLE001 - a CUDA context already gone: those steps are lost
                pass
            self.save()
            return
        if not self.root or reason_if_unclaimed is None:
            return
        self.reason = self.reason or reason_if_unclaimed
        try:
            self.claim(self.source, take_over=False)  # never over another process's record
        except OSError:
            pass
