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
the script carries on as if it were not there."""

import functools
import gc
import sys
import threading
import weakref
from time import monotonic, perf_counter, sleep

_lock = threading.Lock()


class Instrumentation:
    def __init__(self, state):
        self.state = state  # the rank's files, step builder, source record and switches (_state.State)
        self.steps = state.steps
        self.torch = None
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

    # --- switches -------------------------------------------------------------------------
    def fail(self, where, error):
        self.state.disable("the instrumentation stopped at %s: %s: %s" % (where, type(error).__name__, error))

    def guard(self, where, action, *args):
        try:
            action(*args)
        except Exception as e:  # noqa: BLE001 - never raise into the user's code
            self.fail(where, e)

    # --- installation ---------------------------------------------------------------------
    def install(self, torch):
        self.torch = torch
        self.state.runtime = "torch %s (Python %d.%d.%d)" % ((torch.__version__,) + tuple(sys.version_info[:3]))
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader
        from torch.utils.data import dataloader as dataloader_module
        import torch.optim

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

    def wrap(self, cls, name, wrapper):
        original = getattr(cls, name)
        if getattr(original, "_ddprun", False):
            return

        @functools.wraps(original)
        def wrapped(*args, **kwargs):
            return wrapper(original, *args, **kwargs)

        wrapped._ddprun = True
        # torch.compile's tracer (Dynamo, torch 2) runs a wrapper as it is, where the user's code
        # calls it inside a compiled function, instead of tracing into its bookkeeping (see
        # hide_from_compiler); torch 1.13 has no tracer and ignores the attribute.
        wrapped._torchdynamo_disable = True
        setattr(cls, name, wrapped)

    def wrap_module_function(self, module, name, wrapper):
        self.wrap(module, name, wrapper)

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

    # --- DDP ------------------------------------------------------------------------------
    def ddp_init(self, original, model, *args, **kwargs):
        self.guard("DistributedDataParallel()", self.release, True)  # the reducers of models let go since
        original(model, *args, **kwargs)
        self.guard("DistributedDataParallel()", self.on_ddp, model)

    def on_ddp(self, model):
        if not self.state.claim("python-auto"):
            return  # another process of this rank measures it
        self.ddp_models += 1
        if self.ddp_models == 1:
            self.sample_model = id(model)
        if self.ddp_models == 2:
            self.state.note("2 or more DistributedDataParallel models: their phases add up in each step, and the "
                            "samples of a step are the first model's inputs")
        for p in model.parameters():
            self.ddp_params.add(id(p))
        model._ddprun = {"hook": None, "inner": None, "builtin": False}
        device = getattr(model, "device", None)
        if device is None:
            devices = {p.device for p in model.parameters()}
            device = next(iter(devices)) if len(devices) == 1 else None
        if device is not None and getattr(device, "type", "") == "cuda" and self.steps.event_factory is None:
            self.use_cuda_events()
        self.state.device = str(device) if device is not None else "cpu"

    def use_cuda_events(self):
        cuda = self.torch.cuda

        def recorded():
            event = cuda.Event(enable_timing=True)
            event.record()
            return event

        self.steps.event_factory = recorded
        self.state.note("CUDA: phases are timed with CUDA events on the current stream (no synchronisation; a step "
                        "is written once its last event has completed); data is the host's time blocked in the "
                        "DataLoader")

    # The wrappers of calls made every step check their switches and catch inline: each function
    # call here is a measurable share of a short step.
    def ddp_forward(self, original, model, *args, **kwargs):
        state = self.state
        if state.enabled and not state.api_active and self.depth == 0:
            try:
                self.on_forward(model, args, kwargs)
            except Exception as e:  # noqa: BLE001 - never raise into the user's code
                self.fail("DistributedDataParallel.forward", e)
        return original(model, *args, **kwargs)

    def on_forward(self, model, args, kwargs):
        torch = self.torch
        if not (model.training and torch.is_grad_enabled()):
            if not self.trained:
                self.steps.discard()  # evaluation between steps is not part of a training step
            return
        self.ensure_hook(model)
        mark = self.steps.mark()
        step = self.steps.ensure(mark)
        if self.forward_open is None:
            self.forward_open = mark
        if id(model) == self.sample_model:
            samples, elems = batch_size(torch, args, kwargs)
            step.samples += samples
            step.input_elems += elems
        if not self.trained:
            self.trained = True
            self.steps.progress("forward")

    # --- the communication hook -----------------------------------------------------------
    def ensure_hook(self, model):
        meta = getattr(model, "_ddprun", None)
        if meta is None or meta["hook"] is not None or meta["builtin"]:
            return
        why = self.untimeable(model)
        if why:
            meta["builtin"] = True
            self.state.note("gradient buckets not timed: " + why)
            return
        meta["inner"] = (model.process_group, self.default_reduction(model))
        meta["hook"] = "ours"
        self.register_original(model, None, self.timed_hook(model))
        self.keep(model)

    def untimeable(self, model):
        """Why a timing hook could change the result; "" when it cannot."""
        for m in model.modules():
            if getattr(m, "sparse", False) is True:
                return "sparse gradients (%s)" % type(m).__name__
        if getattr(model, "mixed_precision", None) is not None:
            return "DDP mixed_precision"
        return ""

    def default_reduction(self, model):
        """DDP's own reduction, as a hook: each gradient times 1/world, then a summing allreduce
        (what the reducer does without a hook, bit for bit: it multiplies while copying into the
        bucket; a hook receives the bucket undivided). With gradient_as_bucket_view, a gradient
        that already was its bucket's view when the backward began is not copied, and DDP divides
        it in place instead: x / 3 and x * (1 / 3) differ in the last bit, so the hook does the same
        to those (with a power-of-two world both are exact)."""
        group = model.process_group
        world = group.size()
        scale = 1.0 / world
        in_place = None
        if getattr(model, "gradient_as_bucket_view", False) and world & (world - 1) != 0:
            in_place = {}
            self.bucket_views.append((weakref.ref(model), in_place))

        def allreduce(state, bucket):
            tensor = bucket_buffer(bucket)
            if in_place is not None:
                for param, view in zip(bucket.parameters(), bucket.gradients()):
                    if in_place.get(id(param)) == view.data_ptr():
                        view.div_(world)
                    else:
                        view.mul_(scale)
            elif scale != 1.0:
                tensor.mul_(scale)
            # The process group's own allreduce, as DDP's reducer calls it (dist.all_reduce's
            # Python checks cost more than the rest of the hook).
            return group.allreduce([tensor]).get_future()

        allreduce.returns_list = True  # its future's value is [tensor]; the timed hook hands DDP the tensor
        return allreduce

    def timed_hook(self, model):
        meta = model._ddprun

        def counted(future, callback):
            """future.then(callback), counted in in_flight until the callback has run."""
            with _lock:
                self.in_flight += 1

            def run(f):
                with _lock:
                    self.in_flight -= 1
                return callback(f)

            return future.then(run)

        def unwrapped(future):
            return counted(future, lambda f: f.value()[0])

        def hook(_state, bucket):
            state, inner = meta["inner"]
            unwrap = getattr(inner, "returns_list", False)
            if not self.state.enabled:
                future = inner(state, bucket)
                return unwrapped(future) if unwrap else future
            start = self.steps.mark() if self.trained or self.state.api_active else None
            future = inner(state, bucket)
            if start is None:
                return unwrapped(future) if unwrap else future
            buffer = bucket_buffer(bucket)
            entry = [bucket.index(), buffer.numel() * buffer.element_size(), start, None]
            with _lock:
                step = self.steps.current
                if step is not None:
                    step.collectives.append(entry)
                if self.backward_start is not None:
                    self.last_launch = start
            if getattr(bucket, "is_last", lambda: False)():
                self.steps.progress("comm_wait")

            def done(f):
                entry[3] = self.steps.mark()
                return f.value()[0] if unwrap else f.value()

            return counted(future, done)

        return hook

    def register_original(self, model, state, hook):
        original = type(model).register_comm_hook
        original = getattr(original, "__wrapped__", original)
        original(model, state, hook)

    def register_comm_hook(self, original, model, state, hook):
        meta = getattr(model, "_ddprun", None)
        if meta is None or not self.state.enabled:
            return original(model, state, hook)
        if meta["hook"] == "ours":  # ours is in place already: the user's goes inside it
            meta["inner"] = (state, hook)
            meta["hook"] = "user's, timed"
            return None
        meta["inner"] = (state, hook)
        meta["hook"] = "user's, timed"
        try:
            result = original(model, None, self.timed_hook(model))
            self.keep(model)
            return result
        except Exception:
            meta["hook"] = None
            raise

    def register_builtin_comm_hook(self, original, model, comm_hook_type):
        meta = getattr(model, "_ddprun", None)
        if meta is None or not self.state.enabled or meta["hook"] != "ours":
            if meta is not None:
                meta["builtin"] = True
                self.state.note("gradient buckets not timed: a built-in communication hook (%s)" % comm_hook_type)
            return original(model, comm_hook_type)
        # Ours is registered already: run the built-in one's Python equivalent inside it.
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        name = str(comm_hook_type).split(".")[-1]
        inner = {"ALLREDUCE": default_hooks.allreduce_hook, "FP16_COMPRESS": default_hooks.fp16_compress_hook}
        if name not in inner:
            raise RuntimeError("ddprun: built-in communication hook %s registered after the first forward" % name)
        meta["inner"] = (model.process_group, inner[name])
        return None

    # --- backward -------------------------------------------------------------------------
    def backward(self, original, *args, **kwargs):
        if self.bucket_views:  # whatever the switches say: the hook's arithmetic depends on it
            self.note_bucket_views()
        state = self.state
        if not state.enabled or state.api_active or self.depth or not self.trained:
            return original(*args, **kwargs)
        try:
            self.on_backward_start(args, kwargs)
        except Exception as e:  # noqa: BLE001
            self.fail("backward", e)
        self.depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            self.depth -= 1
            try:
                self.on_backward_end()
            except Exception as e:  # noqa: BLE001
                self.fail("backward", e)

    def note_bucket_views(self):
        """Which gradients are their bucket's views as a backward begins (default_reduction)."""
        for ref, grad_ptrs in self.bucket_views:
            model = ref()
            if model is not None:
                for p in model.parameters():
                    grad = p.grad
                    grad_ptrs[id(p)] = grad.data_ptr() if grad is not None else 0

    def on_backward_start(self, args, kwargs):
        mark = self.steps.mark()
        if self.forward_open is not None:
            self.steps.interval("forward", self.forward_open, mark)
            self.forward_open = None
        tensors = args[0] if args else kwargs.get("tensors")
        if isinstance(tensors, self.torch.Tensor) and tensors.is_cpu and tensors.numel() == 1:
            self.steps.ensure().loss = tensors.item()
        self.backward_start = mark
        self.last_launch = None
        self.steps.progress("backward")

    def on_backward_end(self):
        end = self.steps.mark()
        with _lock:
            start, launch = self.backward_start, self.last_launch
            self.backward_start = self.last_launch = None
        if start is None:
            return
        if launch is not None:
            self.steps.interval("backward", start, launch)
            self.steps.interval("comm_wait", launch, end)
        else:
            self.steps.interval("backward", start, end)
        # Another training forward (gradient accumulation) opens a new forward interval.
        self.forward_open = None

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

    # --- data -----------------------------------------------------------------------------
    def loader_init(self, original, loader, *args, **kwargs):
        original(loader, *args, **kwargs)
        self.guard("DataLoader()", self.on_loader, loader)

    def on_loader(self, loader):
        facts = {
            "num_workers": int(loader.num_workers),
            "pin_memory": bool(loader.pin_memory),
            "batch_size": loader.batch_size,
            "persistent_workers": bool(getattr(loader, "persistent_workers", False)),
            "prefetch_factor": getattr(loader, "prefetch_factor", None) if loader.num_workers > 0 else None,
            "batches": 0,
            "wait_ms": 0.0,
        }
        try:
            facts["dataset_size"] = len(loader.dataset)
        except Exception:  # noqa: BLE001 - an iterable dataset has no length
            facts["dataset_size"] = None
        self.loaders[id(loader)] = facts
        self.state.loaders.append(facts)

    def loader_iter(self, original, loader, *args, **kwargs):
        iterator = original(loader, *args, **kwargs)
        try:
            iterator._ddprun_facts = self.loaders.get(id(loader))
        except Exception:  # noqa: BLE001 - an iterator that takes no attributes
            pass
        return iterator

    def loader_next(self, original, iterator, *args, **kwargs):
        state = self.state
        if not state.enabled or state.api_active or self.depth:
            return original(iterator, *args, **kwargs)
        start = perf_counter()
        self.depth += 1
        try:
            return original(iterator, *args, **kwargs)
        finally:
            self.depth -= 1
            end = perf_counter()
            try:
                facts = getattr(iterator, "_ddprun_facts", None)
                if facts is not None:
                    facts["batches"] += 1
                    facts["wait_ms"] += (end - start) * 1000.0
                if not self.trained:
                    self.steps.progress("data")
                self.steps.add_data(start, end)
            except Exception as e:  # noqa: BLE001
                self.fail("DataLoader", e)

    # --- the end --------------------------------------------------------------------------
    def keep(self, model):
        """Holds the model's reducer, so that it is not destroyed wherever the script lets go of the
        model (the end of main(), with the GIL held), but in release()."""
        self.hooked.append((weakref.ref(model), getattr(model, "reducer", None)))

    def release(self, dead_only=False):
        """Lets go of the reducers that hold our hook (those of models already gone, with dead_only),
        at a point where waiting is safe. A reducer destroyed can take its process group with it,
        whose destructor joins the group's threads while this one holds the GIL; a thread that still
        needs the GIL for the hook's callback, or to drop the callback's objects after it has run,
        would never be joined. So the callbacks still to run are let through first, and then the
        threads get 50 ms more, with the GIL released. A reducer left to interpreter finalization
        (a DDP model in a global) would also drop a Python hook without the GIL and abort the process
        ("terminate called without an active exception"): at exit every reducer goes here."""
        going, staying = [], []
        for entry in self.hooked:
            (going if not dead_only or entry[0]() is None else staying).append(entry)
        if not going:
            return
        deadline = monotonic() + 2.0
        while self.in_flight > 0 and monotonic() < deadline:
            sleep(0.005)
        sleep(0.05)
        self.hooked = staying
        for ref, _ in going:
            model = ref()
            if model is None:
                continue
            for name in ("reducer", "logger", "_comm_hooks"):
                model.__dict__.pop(name, None)
        del going
        gc.collect()

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


def bucket_buffer(bucket):
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


def batch_size(torch, args, kwargs):
    """The first dimension, and all the elements, of the first tensor among the forward's inputs
    ((0, 0) when none): the step's samples, and its work where that varies per sample (lengths)."""
    if args and isinstance(args[0], torch.Tensor):  # model(x), the common case
        return _sizes(args[0])
    stack = list(args) + list(kwargs.values())
    seen = 0
    while stack and seen < 64:
        seen += 1
        item = stack.pop(0)
        if isinstance(item, torch.Tensor):
            return _sizes(item)
        if isinstance(item, (list, tuple)):
            stack[:0] = list(item)
        elif isinstance(item, dict):
            stack[:0] = list(item.values())
    return 0, 0


def _sizes(tensor):
    """(samples, elements) of a batch tensor: its first dimension (1 for a scalar) and its numel."""
    return (int(tensor.shape[0]) if tensor.dim() > 0 else 1), tensor.numel()
