"""ddprun puts this directory first on a rank's PYTHONPATH (docs/python.md). Python imports
`sitecustomize` at start-up: this one starts ddprun's instrumentation, which does nothing unless
the process is a rank of `ddprun --profile`, then runs the sitecustomize it shadows (Debian's,
or one of the user's), as if it had been imported itself."""


def _ddprun_start():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    try:
        if package not in sys.path:
            sys.path.append(package)
        from ddprun import _boot

        _boot.activate()
    except Exception as e:  # noqa: BLE001 - never stop the user's program from starting
        sys.stderr.write("ddprun: the Python instrumentation is off: %s: %s\n" % (type(e).__name__, e))
    # Chain to the next sitecustomize on the path.
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_ddprun_start()
