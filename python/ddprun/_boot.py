"""Start-up of the automatic instrumentation, from sitecustomize (python/boot/), in every Python
process of a rank run by `ddprun --profile` (DDPRUN_INSTRUMENT=1; --no-instrument leaves it
out). It costs nothing until torch is imported: a finder on sys.meta_path waits for `torch`,
lets it load, and then installs the wrappers of _auto."""

import atexit
import importlib.abc
import os
import re
import sys
from typing import Any, Callable, Optional, Tuple

from ._state import current

_instrumentation: Any = None


# exec_module is compiled as importlib's own code: Python strips importlib's frames from the
# traceback of an error raised while a module is imported (all of them for an ImportError, those
# up to a _call_with_frames_removed for others), so a torch that fails to import shows the program
# the same traceback as without ddprun, with no frame of ours in it.
_EXEC_MODULE = """
def exec_module(self, module):
    try:
        _call_with_frames_removed(self._loader.exec_module, module)
    except BaseException as e:
        self._failed(e)
        raise
    self._after(module)

def _call_with_frames_removed(f, *args):
    return f(*args)
"""
_importlib_code: dict = {}
exec(compile(_EXEC_MODULE, "<frozen importlib._bootstrap>", "exec"), _importlib_code)


class _Loader(importlib.abc.Loader):
    exec_module = _importlib_code["exec_module"]

    def __init__(self, loader: Any, after: Callable[[Any], None]) -> None:
        self._loader = loader
        self._after = after
        self._failed = _import_failed

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` through the other finders and runs `after` once it has loaded."""

    def __init__(self, after: Callable[[Any], None]) -> None:
        self._after = after

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self._after)
                return spec
        return None


OLDEST_TORCH = (1, 13)


def torch_release(version: object) -> Optional[Tuple[int, int]]:
    """(major, minor) of a torch version string ("2.13.0+cpu", "1.13.0a0", "1.9rc1"); None when
    unreadable. The minor is its leading digits."""
    match = re.match(r"(\d+)\.(\d+)", str(version))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _import_failed(error: BaseException) -> None:
    state = current()
    if state is not None:
        first_line = (str(error).splitlines() or [""])[0]
        state.disable("torch could not be imported (%s: %s)" % (type(error).__name__, first_line))


def _torch_loaded(torch: Any) -> None:
    global _instrumentation
    state = current()
    if state is None:
        return
    version = getattr(torch, "__version__", "?")
    release = torch_release(version)
    if release is None:
        state.disable("torch's version %r cannot be read" % (version,))
        return
    if release < OLDEST_TORCH:
        oldest = "%d.%d" % OLDEST_TORCH
        state.disable("torch %s is older than %s, the oldest the instrumentation follows" % (version, oldest))
        return
    try:
        from ._auto import Instrumentation

        _instrumentation = Instrumentation(state)
        _instrumentation.install(torch)
    except Exception as e:  # noqa: BLE001 - a torch we cannot follow is a reason, not a crash
        state.disable("could not follow torch %s: %s: %s" % (getattr(torch, "__version__", "?"), type(e).__name__, e))


def _at_exit() -> None:
    state = current()
    if state is None:
        return
    if os.environ.get("DDPRUN_INSTRUMENT") != "1":
        state.at_exit(None)  # only what the explicit API measured
        return
    if _instrumentation is not None:
        _instrumentation.close()
        reason = "no DistributedDataParallel model was built"
    elif "torch" in sys.modules:
        reason = state.reason or "torch was imported before the instrumentation could follow it"
    else:
        reason = "the program never imported torch"
    state.at_exit(reason)


def activate() -> None:
    """Called by sitecustomize; does nothing outside a ddprun rank."""
    state = current()
    if state is None:
        return
    atexit.register(_at_exit)
    if os.environ.get("DDPRUN_INSTRUMENT") != "1":
        state.enabled = False
        return
    if "torch" in sys.modules:
        _torch_loaded(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder(_torch_loaded))
