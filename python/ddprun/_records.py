"""The files a rank writes into its run directory (docs/timings.md): one step record a line in
timings/rank-NNNNN.jsonl, the heartbeat timings/rank-NNNNN.progress ("STEP PHASE", 48 bytes
rewritten in place), and timings/rank-NNNNN.source.json (where the timings came from, what could
not be followed, the DataLoaders). The same formats as the C++ step timer's."""

import json
import mmap
import os
import time

SCHEMA = 1
PHASES = ("data", "forward", "backward", "comm_wait", "optimizer")
PROGRESS_BYTES = 48
_PROGRESS_LINE = b"%%-%d.%ds\n" % (PROGRESS_BYTES - 1, PROGRESS_BYTES - 1)  # padded, cut, one newline


def rank_file(directory, rank, suffix):
    return os.path.join(directory, "timings", "rank-%05d%s" % (rank, suffix))


class RankFiles:
    """Where this rank's records go; None of it is created before the first write."""

    def __init__(self, run_dir, rank, world_size):
        self.rank = rank
        self.world_size = world_size
        self.timings_path = rank_file(run_dir, rank, ".jsonl")
        self.progress_path = rank_file(run_dir, rank, ".progress")
        self.source_path = rank_file(run_dir, rank, ".source.json")
        self._timings = None
        self._progress = None

    def _open(self):
        os.makedirs(os.path.dirname(self.timings_path), exist_ok=True)
        # Truncated at the first step, as the C++ timer truncates when it starts.
        self._timings = os.open(self.timings_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        # The heartbeat is a 48-byte file mapped into memory: a phase change is a copy, not a system
        # call (ddprun's worker reads the same page through the file).
        fd = os.open(self.progress_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        os.ftruncate(fd, PROGRESS_BYTES)
        self._progress = mmap.mmap(fd, PROGRESS_BYTES)
        os.close(fd)

    def write_lines(self, lines):
        """Whole lines in one write: a reader never sees half a record."""
        if self._timings is None:
            self._open()
        os.write(self._timings, lines.encode())

    def progress(self, step, phase):
        """The phase under way ("done" after a step), for ddprun's heartbeat and hang watchdog."""
        if self._progress is None:
            self._open()
        self._progress[:] = _PROGRESS_LINE % (b"%d %s" % (step, phase.encode()))

    def write_source(self, source):
        """The source record, through a temporary file and a rename: never half-written."""
        os.makedirs(os.path.dirname(self.source_path), exist_ok=True)
        temporary = "%s.tmp.%d" % (self.source_path, os.getpid())
        with open(temporary, "w") as f:
            json.dump(dict(source, rank=self.rank), f, separators=(",", ":"))
        os.replace(temporary, self.source_path)


class WallClock:
    """perf_counter seconds to wall-clock microseconds since the epoch, fixed at start."""

    def __init__(self):
        self._unix = time.time()
        self._perf = time.perf_counter()

    def unix_us(self, perf_seconds):
        return int((self._unix + (perf_seconds - self._perf)) * 1e6)
