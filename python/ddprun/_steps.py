"""One training step under construction: its phases, samples, loss and collectives, and the
record it becomes. Shared by the automatic instrumentation (_auto) and the explicit API (_api).

Times are marks: a host time (perf_counter) and, on CUDA, an event recorded on the current
stream at the same point. A phase between two marks lasts the events' elapsed time when both
have one (the GPU's time, with no synchronisation: a finished step waits in `pending` until its
last event has completed, then is written), else the host time. The data phase is always host
time: it is the time the host was blocked waiting for the DataLoader."""

import os
import threading
import time
import weakref
from typing import Any, Callable, List, Optional

from ._records import PHASES, SCHEMA, WallClock


class Mark:
    __slots__ = ("host", "event")

    def __init__(self, event_factory: Optional[Callable[[], Any]] = None) -> None:
        self.event = None
        if event_factory is not None:
            self.event = event_factory()
        self.host = time.perf_counter()


def elapsed_ms(a: "Mark", b: "Mark") -> float:
    if a.event is not None and b.event is not None:
        return max(0.0, a.event.elapsed_time(b.event))
    return max(0.0, (b.host - a.host) * 1000.0)


class Step:
    """A step's raw marks; turned into a record once its events (if any) have completed."""

    def __init__(self, index: int, start: Mark) -> None:
        self.index = index
        self.start = start
        self.end: Any = None  # a Mark once the step is finished
        self.intervals: List[Any] = []  # (phase, mark, mark)
        self.data_ms = 0.0
        self.samples = 0
        self.input_elems = 0
        self.loss: Optional[float] = None
        self.collectives: List[Any] = []  # [bucket, bytes, start mark, end mark or None]

    def ready(self) -> bool:
        last = self.end.event if self.end is not None else None
        return last is None or last.query()

    def line(self, clock: WallClock, head: str) -> str:
        """The step's record, one line of JSON (docs/timings.md) after `head` (its schema, rank and
        world size), formatted by hand in one pass: json.dumps, or a format per field, would be
        most of what the instrumentation costs a step."""
        phases = [self.data_ms, 0.0, 0.0, 0.0, 0.0]
        for phase, a, b in self.intervals:
            phases[PHASE_INDEX[phase]] += elapsed_ms(a, b)
        step_ms = max(elapsed_ms(self.start, self.end), sum(phases))
        out = _RECORD % (head, self.index, clock.unix_us(self.start.host), self.samples, step_ms, *phases)
        if self.input_elems:
            out += ',"input_elems":%d' % self.input_elems
        if self.collectives:
            done = [c for c in self.collectives if c[3] is not None]
            if done:
                out += ',"collectives":[%s]' % ",".join(
                    _COLLECTIVE % ("" if bucket is None else '"bucket":%d,' % bucket, nbytes, clock.unix_us(a.host),
                                   elapsed_ms(a, b)) for bucket, nbytes, a, b in done)
        loss = self.loss
        if loss is not None and loss == loss and abs(loss) != float("inf"):
            out += ',"loss":%r' % loss
        return out + "}\n"


PHASE_INDEX = {phase: i for i, phase in enumerate(PHASES)}
_RECORD = '%s,"step":%d,"start_unix_us":%d,"samples":%d,"step_ms":%.4f,"phases_ms":{' + ",".join(
    '"%s":%%.4f' % p for p in PHASES) + "}"
_COLLECTIVE = '{"op":"allreduce",%s"bytes":%d,"start_unix_us":%d,"duration_ms":%.4f}'


def record_head(rank: int, world_size: Optional[int]) -> str:
    """What every record of a rank begins with."""
    head = '{"schema":%d,"rank":%d' % (SCHEMA, rank)
    return head + (',"world_size":%d' % world_size if world_size else "")


# Finished steps reach the timings file together, when a step ends this long or longer after the
# first of them (or this many are waiting), and all of them at exit: one write and one warm
# formatting loop for a quarter second of steps, instead of both for every step. The heartbeat
# (progress) still changes at every phase. Steps that no later step follows (the job hung, or
# stalls) are written by a background thread once they are a quarter second old, so that a hung
# rank's report has every step before the hang.
FLUSH_SECONDS = 0.25
FLUSH_STEPS = 256


class StepBuilder:
    """Builds steps from marks and writes them through `files` (write_steps, progress)."""

    def __init__(self, files: Any, first_step: int = 0) -> None:
        self.files = files
        self.clock = WallClock()
        self.next_index = first_step
        self.current: Optional[Step] = None
        # finished steps not written yet (on CUDA: also those whose events have not completed)
        self.pending: List[Step] = []
        self.event_factory: Optional[Callable[[], Any]] = None  # set on CUDA: () -> a recorded torch.cuda.Event
        self.resume: Optional[Mark] = None  # the end of the last step: the next one starts there (steps are contiguous)
        self.lock = threading.Lock()  # pending and the writes: the training thread and the flusher
        self.flusher: Optional[Flusher] = None  # writes steps left waiting (started with the first step)

    def mark(self) -> Mark:
        return Mark(self.event_factory)

    def started(self) -> bool:
        return self.current is not None

    def ensure(self, mark: Optional[Mark] = None) -> Step:
        """The current step; when none is under way, one begun where the last one ended (what a loop
        does between two steps, logging included, is part of a step), else at `mark` or now."""
        if self.current is None:
            self.current = Step(self.next_index, self.resume or mark or self.mark())
            self.resume = None
        return self.current

    def interval(self, phase: str, a: Mark, b: Mark) -> None:
        self.ensure(a).intervals.append((phase, a, b))

    def add_data(self, start_host: float, end_host: float) -> None:
        step = self.ensure()
        step.data_ms += max(0.0, (end_host - start_host) * 1000.0)

    def discard(self) -> None:
        """Drops the step under way, and the time since the last step (it was not training: an
        evaluation between epochs)."""
        self.current = None
        self.resume = None

    def progress(self, phase: str) -> None:
        self.files.progress(self.next_index, phase)

    def finish(self, end: Optional[Mark] = None) -> None:
        step = self.current
        if step is None:
            return
        step.end = end or self.mark()
        self.current = None
        self.resume = step.end
        self.next_index += 1
        with self.lock:
            self.pending.append(step)
        self.files.progress(step.index, "done")
        first = self.pending[0].end.host
        if step.end.host - first >= FLUSH_SECONDS or len(self.pending) >= FLUSH_STEPS:
            self.flush(wait=False)
        if self.flusher is None or self.flusher.pid != os.getpid():
            self.flusher = Flusher(self)

    def flush(self, wait: bool) -> None:
        """Writes the finished steps whose events completed, in order, in one write (all of them
        when wait)."""
        with self.lock:
            ready = 0
            for step in self.pending:
                if not step.ready():
                    if not wait:
                        break
                    step.end.event.synchronize()
                ready += 1
            if ready:
                steps, self.pending = self.pending[:ready], self.pending[ready:]
                self.files.write_steps(steps)


class Flusher:
    """A daemon thread of the process that writes the builder's finished steps once the oldest
    has waited FLUSH_SECONDS with no later step to carry it (it looks every FLUSH_SECONDS)."""

    def __init__(self, builder: StepBuilder) -> None:
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self.run, args=(weakref.ref(builder),), name="ddprun-flush", daemon=True)
        self.thread.start()

    @staticmethod
    def run(ref: "weakref.ref[StepBuilder]") -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            builder = ref()
            if builder is None:
                return
            pending = builder.pending
            if pending and time.perf_counter() - pending[0].end.host >= FLUSH_SECONDS:
                try:
                    builder.flush(wait=False)
                except Exception:  # noqa: BLE001 - the exit's flush says what went wrong
                    return
            del builder
