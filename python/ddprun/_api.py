"""The explicit API, for loops the automatic instrumentation cannot follow (docs/python.md):

    import ddprun
    for batch in batches:
        with ddprun.step(samples=len(batch)) as step:
            with ddprun.phase("data"):
                x, y = load(batch)
            with ddprun.phase("forward"):
                loss = loss_fn(model(x), y)
            with ddprun.phase("backward"):
                loss.backward()
            with ddprun.phase("optimizer"):
                optimizer.step()
            step.loss = loss.item()

Outside ddprun (no DDPRUN_RUN_DIR) every call is a no-op, so the script runs unchanged under
torchrun or plain python. Once a script enters ddprun.step(), the automatic instrumentation stops
cutting steps (its bucket timings still go into the API's steps)."""

import contextlib
from typing import Iterator, Optional

from ._records import PHASES
from ._state import current


def active() -> bool:
    """Whether this process writes step timings for its rank."""
    state = current()
    return state is not None and state.owner


class _Step:
    """What `with ddprun.step()` yields: set .samples and .loss inside the step."""

    def __init__(self, samples: int) -> None:
        self.samples = samples
        self.loss: Optional[float] = None


@contextlib.contextmanager
def step(samples: int = 0) -> Iterator[_Step]:
    """One training step: everything inside it, with the phases marked within."""
    handle = _Step(samples)
    state = current()
    if state is None or not state.claim("python-api"):
        yield handle
        return
    if state.api_active and state.steps.started():
        raise RuntimeError("ddprun.step() inside another ddprun.step()")
    if not state.api_active:
        state.api_active = True
        state.source = "python-api"
        state.steps.discard()  # whatever the automatic mode had begun
        state.save()
    state.steps.ensure()
    state.steps.progress("data")
    try:
        yield handle
    finally:
        current_step = state.steps.current
        if current_step is not None:
            current_step.samples += int(handle.samples or 0)
            if handle.loss is not None:
                current_step.loss = float(handle.loss)
            state.steps.finish()
            state.instrumented_steps = True


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """A phase of the step under way: data, forward, backward, comm_wait or optimizer."""
    if name not in PHASES:
        raise ValueError("ddprun.phase(%r): the phases are %s" % (name, ", ".join(PHASES)))
    state = current()
    if state is None or not state.api_active or not state.steps.started():
        yield
        return
    state.steps.progress(name)
    start = state.steps.mark()
    try:
        yield
    finally:
        end = state.steps.mark()
        if state.steps.started():
            if name == "data":
                state.steps.add_data(start.host, end.host)
            else:
                state.steps.interval(name, start, end)
