"""What the instrumentation follows of DataLoaders (docs/python.md): each loader's settings, and
the data phase, the time the training loop is blocked in an iterator's __next__. A mixin of
_auto.Instrumentation."""

from time import perf_counter
from typing import Any, Dict

from ._follows import Follows


class FollowsLoader(Follows):
    # Set by Instrumentation.__init__ (shared with the other parts).
    depth: int
    trained: bool
    loaders: Dict[int, Any]

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

