"""ddprun's Python side (docs/python.md): step timings of PyTorch jobs run by `ddprun --profile`,
automatic for unchanged DDP scripts, and an explicit API for other loops:

    with ddprun.step(samples=n):
        with ddprun.phase("forward"):
            ...

Every call is a no-op outside a ddprun rank."""

from ._api import active, phase, step

__version__ = "0.1.0"  # the project's (CMakeLists.txt)
__all__ = ["__version__", "active", "phase", "step"]
