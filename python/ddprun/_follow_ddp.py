"""What the instrumentation follows of DistributedDataParallel (docs/python.md): which parameters
are DDP's, a training forward (and its samples), backward until the last bucket was launched and
comm_wait until every bucket is back, and each bucket's allreduce through a communication hook
that is DDP's own reduction, bit for bit. A mixin of _auto.Instrumentation."""

import gc
import threading
import weakref
from time import monotonic, sleep
from typing import Any, Dict, List, Optional

from ._follows import Follows

_lock = threading.Lock()


class FollowsDdp(Follows):
    # Set by Instrumentation.__init__ (shared with the other parts).
    ddp_params: set
    ddp_models: int
    sample_model: Optional[int]
    depth: int
    forward_open: Any
    backward_start: Any
    last_launch: Any
    trained: bool
    hooked: List[Any]
    in_flight: int
    bucket_views: List[Any]

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
        in_place: Optional[Dict[int, int]] = None
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

        reduction: Any = allreduce
        reduction.returns_list = True  # its future's value is [tensor]; the timed hook hands DDP the tensor
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
        going: List[Any] = []
        staying: List[Any] = []
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

