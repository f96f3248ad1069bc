"""The files a rank writes into its run directory (docs/timings.md): one step record a line in
timings/rank-NNNNN.jsonl, the heartbeat timings/rank-NNNNN.progress ("STEP PHASE", 48 bytes
rewritten in place), and timings/rank-NNNNN.source.json (where the timings came from, what could
not be followed, the DataLoaders). The same formats as the C++ step timer's."""

import json
import mmap
import os
import time
from typing import Any, Dict, Optional, Tuple

SCHEMA = 1
PHASES = ("data", "forward", "backward", "comm_wait", "optimizer")
PROGRESS_BYTES = 48
_PROGRESS_LINE = b"%%-%d.%ds\n" % (PROGRESS_BYTES - 1, PROGRESS_BYTES - 1)  # padded, cut, one newline


def rank_file(directory: str, rank: int, suffix: str) -> str:
    return os.path.join(directory, "timings", "rank-%05d%s" % (rank, suffix))


class RankFiles:
    """Where this rank's records go; None of it is created before the first write."""

    def __init__(self, run_dir: str, rank: int, world_size: Optional[int]) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timings_path = rank_file(run_dir, rank, ".jsonl")
        self.progress_path = rank_file(run_dir, rank, ".progress")
        self.source_path = rank_file(run_dir, rank, ".source.json")
        self._timings: Optional[int] = None
        self._progress: Optional[mmap.mmap] = None

    def _open(self) -> Tuple[int, mmap.mmap]:
        os.makedirs(os.path.dirname(self.timings_path), exist_ok=True)
        # Truncated at the first step, as the C++ timer truncates when it starts.
        self._timings = os.open(self.timings_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        # The heartbeat is a 48-byte file mapped into memory: a phase change is a copy, not a system
        # call (ddprun's worker reads the same page through the file).
        fd = os.open(self.progress_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        os.ftruncate(fd, PROGRESS_BYTES)
        self._progress = mmap.mmap(fd, PROGRESS_BYTES)
        os.close(fd)
        return self._timings, self._progress

    def write_lines(self, lines: str) -> None:
        """Whole lines in one write: a reader never sees half a record."""
        fd = self._timings if self._timings is not None else self._open()[0]
        os.write(fd, lines.encode())

    def progress(self, step: int, phase: str) -> None:
        """The phase under way ("done" after a step), for ddprun's heartbeat and hang watchdog."""
        page = self._progress if self._progress is not None else self._open()[1]
        page[:] = _PROGRESS_LINE % (b"%d %s" % (step, phase.encode()))

    def write_source(self, source: Dict[str, Any]) -> None:
        """The source record, through a temporary file and a rename: never half-written."""
        os.makedirs(os.path.dirname(self.source_path), exist_ok=True)
        temporary = "%s.tmp.%d" % (self.source_path, os.getpid())
        with open(temporary, "w") as f:
            json.dump(dict(source, rank=self.rank), f, separators=(",", ":"))
        os.replace(temporary, self.source_path)


class WallClock:
    """perf_counter seconds to wall-clock microseconds since the epoch, fixed at start."""

    def __init__(self) -> None:
        self._unix = time.time()
        self._perf = time.perf_counter()

    def unix_us(self, perf_seconds: float) -> int:
        return int((self._unix + (perf_seconds - self._perf)) * 1e6)
