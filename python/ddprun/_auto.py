"""Automatic step timings of an unchanged PyTorch DDP script (docs/python.md).

Installed when torch is imported (see _boot). It follows the script through the calls every DDP
training loop makes, each wrapped once at class level, and never changes what they do or
return:
- DataLoader iterators' __next__: the data phase (time blocked waiting for a batch);
- DistributedDataParallel.forward: a training forward (module in train mode, grad enabled)
  opens the forward phase and adds its batch size to the step's samples; an evaluation forward
  before any training in a step drops what the step held so far (validation is not a step);
- torch.autograd.backward (Tensor.backward calls it): backward until the last gradient bucket
  was launched, then comm_wait until the reducer had every bucket back;
- a DDP communication hook that times each bucket's allreduce around the default reduction
  (or around the user's own hook, when the script registers one);
- Optimizer.step / zero_grad and GradScaler.step: the optimizer phase; the step ends when the
  optimizer over the DDP model's parameters has stepped.
Whatever goes wrong in here turns the instrumentation off with a reason (source.json says it);
the script carries on as if it were not there.

Instrumentation is put together from what it follows: _follow_loader (DataLoaders),
_follow_ddp (DDP's forward, backward and buckets), _follow_optimizer (optimizers and GradScaler);
_follows has what they share (the wrapping, the switches). Here: installing the wrappers, hiding
them from torch.compile, and the end."""

import sys
from typing import Any

from ._follow_ddp import FollowsDdp
from ._follow_loader import FollowsLoader
from ._follow_optimizer import FollowsOptimizer


class Instrumentation(FollowsDdp, FollowsOptimizer, FollowsLoader):
    def __init__(self, state):
        self.state = state  # the rank's files, step builder, source record and switches (_state.State)
        self.steps = state.steps
        self.torch: Any = None
        self.ddp_params = set()  # ids of the DDP models' parameters
        self.ddp_models = 0
        self.sample_model = None  # id of the DDP model whose inputs are the step's samples
        self.step_optimizer = None  # id of the optimizer whose step() ends a step
        self.owns = {}  # optimizer id -> whether it updates DDP parameters
        self.depth = 0  # inside a timed call: nested ones are its own business
        self.forward_open = None  # the mark at the step's first training forward
        self.backward_start = None
        self.last_launch = None  # the mark at the last bucket launched in this backward
        self.trained = False  # a training forward in the step under way
        self.in_optimizer = False
        self.loaders = {}  # id -> facts
        self.hooked = []  # (weak reference to a DDP model that carries our hook, its reducer)
        self.in_flight = 0  # the hook's futures whose callback has not run yet
        self.hidden = False  # from torch.compile's tracer
        self.bucket_views = []  # (weak reference to a model, its gradients' data at backward start)

    # --- installation ---------------------------------------------------------------------
    def install(self, torch):
        self.torch = torch
        self.state.runtime = "torch %s (Python %d.%d.%d)" % ((torch.__version__,) + tuple(sys.version_info[:3]))
        import torch.optim
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader
        from torch.utils.data import dataloader as dataloader_module

        self.wrap(DDP, "__init__", self.ddp_init)
        self.wrap(DDP, "forward", self.ddp_forward)
        self.wrap(DDP, "register_comm_hook", self.register_comm_hook)
        if hasattr(DDP, "_register_builtin_comm_hook"):
            self.wrap(DDP, "_register_builtin_comm_hook", self.register_builtin_comm_hook)
        self.wrap(DataLoader, "__init__", self.loader_init)
        self.wrap(DataLoader, "__iter__", self.loader_iter)
        self.wrap(dataloader_module._BaseDataLoaderIter, "__next__", self.loader_next)
        self.wrap(torch.optim.Optimizer, "__init__", self.optimizer_init)
        self.wrap(torch.optim.Optimizer, "zero_grad", self.zero_grad)
        self.wrap_module_function(torch.autograd, "backward", self.backward)
        for amp in (getattr(torch, "amp", None), getattr(getattr(torch, "cuda", None), "amp", None)):
            if amp is not None and hasattr(amp, "GradScaler"):
                self.wrap(amp.GradScaler, "step", self.scaler_step)
        if hasattr(torch, "compile"):  # torch 2
            self.wrap(torch, "compile", self.compile)
            if "torch._dynamo" in sys.modules:
                self.hide_from_compiler()

    # --- torch.compile --------------------------------------------------------------------
    def compile(self, original, *args, **kwargs):
        self.guard("torch.compile", self.hide_from_compiler)
        return original(*args, **kwargs)

    def hide_from_compiler(self):
        """torch.compile's tracer must not trace the instrumentation: its bookkeeping (clocks, locks,
        files) would break the user's graphs, with warnings in the output. Every code object of this
        package is skipped by the tracer's frame evaluation, so that the wrappers run as plain Python
        and what they call (DDP's forward, the optimizer's step) is compiled as it would be without
        them. Skipping costs nothing when nothing is compiled."""
        if self.hidden:
            return
        from torch._dynamo.eval_frame import skip_code

        for code in package_codes():
            skip_code(code)
        self.hidden = True

    def close(self):
        """At exit: the steps still waiting for their events, and what was not measured."""
        try:
            self.steps.flush(wait=True)
            self.release()
        except Exception as e:  # noqa: BLE001
            self.fail("exit", e)
        if self.state.reason or self.state.api_active:
            return  # said already, or the explicit API measured the steps
        if self.ddp_models == 0:
            self.state.disable("no DistributedDataParallel model was built")
        elif self.step_optimizer is None:
            self.state.disable("no optimizer step() over the DDP model's parameters was seen after a training forward")




def package_codes():
    """Every code object of ddprun's Python modules: their functions, methods and the functions
    defined inside them (closures' code lies in their parent's constants)."""
    stack = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "ddprun" or name.startswith("ddprun.") or name.startswith("_ddprun")):
            continue
        for value in vars(module).values():
            if getattr(value, "__module__", None) != name:
                continue
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                code = getattr(getattr(member, "__func__", member), "__code__", None)
                if code is not None:
                    stack.append(code)
    seen = {}
    while stack:
        code = stack.pop()
        if id(code) in seen:
            continue
        seen[id(code)] = code
        stack.extend(c for c in code.co_consts if hasattr(c, "co_consts"))
    return list(seen.values())


