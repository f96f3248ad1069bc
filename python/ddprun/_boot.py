"""Start-up of the automatic instrumentation, from sitecustomize (python/boot/), in every Python
process of a rank run by `ddprun --profile` (DDPRUN_INSTRUMENT=1; --no-instrument leaves it
out). It costs nothing until torch is imported: a finder on sys.meta_path waits for `torch`,
lets it load, and then installs the wrappers of _auto."""

import atexit
import importlib.abc
import os
import sys

from ._state import current

_instrumentation = None


class _Loader(importlib.abc.Loader):
    def __init__(self, loader, after):
        self._loader = loader
        self._after = after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._after(module)


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` through the other finders and runs `after` once it has loaded."""

    def __init__(self, after):
        self._after = after

    def find_spec(self, name, path, target=None):
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


def _torch_loaded(torch):
    global _instrumentation
    state = current()
    try:
        from ._auto import Instrumentation

        _instrumentation = Instrumentation(state)
        _instrumentation.install(torch)
    except Exception as e:  # noqa: BLE001 - a torch we cannot follow is a reason, not a crash
        state.disable("could not follow torch %s: %s: %s" % (getattr(torch, "__version__", "?"), type(e).__name__, e))


def _at_exit():
    state = current()
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


def activate():
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
