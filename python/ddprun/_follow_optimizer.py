"""What the instrumentation follows of optimizers (docs/python.md): Optimizer.step (whichever class
defines it), zero_grad and GradScaler.step are the optimizer phase, and the step ends when the
optimizer over the DDP model's parameters has stepped after a training forward. A mixin of
_auto.Instrumentation."""

from typing import Any, Dict, Optional

from ._follows import Follows


class FollowsOptimizer(Follows):
    # Set by Instrumentation.__init__ (shared with the other parts).
    ddp_params: set
    ddp_models: int
    step_optimizer: Optional[int]
    owns: Dict[int, bool]
    forward_open: Any
    trained: bool
    in_optimizer: bool

    # --- optimizers -----------------------------------------------------------------------
    def optimizer_init(self, original, optimizer, *args, **kwargs):
        original(optimizer, *args, **kwargs)
        # The class that defines the step this optimizer runs (torch's profiling wrapper puts one on
        # the optimizer's own class).
        for cls in type(optimizer).__mro__:
            if "step" in cls.__dict__:
                if not getattr(cls.__dict__["step"], "_ddprun", False):
                    self.wrap(cls, "step", self.optimizer_step)
                break

    def updates_ddp(self, optimizer):
        key = id(optimizer)
        if key not in self.owns:
            self.owns[key] = any(id(p) in self.ddp_params for g in optimizer.param_groups for p in g["params"])
        return self.owns[key]

    def optimizer_step(self, original, optimizer, *args, **kwargs):
        state = self.state
        if not state.enabled or state.api_active or self.in_optimizer:
            return original(optimizer, *args, **kwargs)
        start = None
        try:
            start = self.steps.mark()
            if self.trained:
                self.steps.progress("optimizer")
        except Exception as e:  # noqa: BLE001
            self.fail("optimizer.step", e)
        self.in_optimizer = True
        try:
            return original(optimizer, *args, **kwargs)
        finally:
            self.in_optimizer = False
            try:
                if start is not None:
                    self.on_optimizer_end(optimizer, start)
            except Exception as e:  # noqa: BLE001
                self.fail("optimizer.step", e)

    def scaler_step(self, original, scaler, optimizer, *args, **kwargs):
        return self.optimizer_step(lambda _o, *a, **k: original(scaler, optimizer, *a, **k), optimizer, *args, **kwargs)

    def on_optimizer_end(self, optimizer, start):
        if self.ddp_models == 0:
            return
        end = self.steps.mark()
        self.steps.interval("optimizer", start, end)
        if not self.updates_ddp(optimizer):
            return
        if self.step_optimizer is None and self.trained:
            self.step_optimizer = id(optimizer)
            self.state.instrumented_steps = True
        elif self.step_optimizer is not None and self.step_optimizer != id(optimizer):
            self.state.note("2 or more optimizers update the DDP models' parameters: a step ends when the first one "
                            "to step after a training forward does; the others' time is in the optimizer phase")
            return
        if not self.trained:
            return  # a step() without a training forward since the last one
        self.trained = False
        self.forward_open = None
        self.steps.finish(end)
        if self.steps.next_index % 100 == 1:  # the DataLoaders' counts, now and then
            self.state.save()

    def zero_grad(self, original, optimizer, *args, **kwargs):
        state = self.state
        if not state.enabled or state.api_active or self.in_optimizer or self.ddp_models == 0:
            return original(optimizer, *args, **kwargs)
        steps = self.steps
        start = steps.mark()
        try:
            return original(optimizer, *args, **kwargs)
        finally:
            try:
                steps.interval("optimizer", start, steps.mark())
            except Exception as e:  # noqa: BLE001
                self.fail("zero_grad", e)

