"""What every part of the instrumentation shares (_follow_ddp, _follow_optimizer, _follow_loader):
the rank's state, the wrapping of torch's calls, and turning itself off when something goes wrong
in here."""

import functools
from typing import Any


class Follows:
    state: Any  # the rank's files, step builder, source record and switches (_state.State)
    steps: Any  # state.steps
    torch: Any  # the torch module followed

    def fail(self, where, error):
        self.state.disable("the instrumentation stopped at %s: %s: %s" % (where, type(error).__name__, error))

    def guard(self, where, action, *args):
        try:
            action(*args)
        except Exception as e:  # noqa: BLE001 - never raise into the user's code
            self.fail(where, e)

    def wrap(self, cls, name, wrapper):
        original = getattr(cls, name)
        if getattr(original, "_ddprun", False):
            return

        @functools.wraps(original)
        def function(*args, **kwargs):
            return wrapper(original, *args, **kwargs)

        wrapped: Any = function
        wrapped._ddprun = True
        # torch.compile's tracer (Dynamo, torch 2) runs a wrapper as it is, where the user's code
        # calls it inside a compiled function, instead of tracing into its bookkeeping (see
        # hide_from_compiler); torch 1.13 has no tracer and ignores the attribute.
        wrapped._torchdynamo_disable = True
        setattr(cls, name, wrapped)

    def wrap_module_function(self, module, name, wrapper):
        self.wrap(module, name, wrapper)
