"""``timm:<name>`` and ``torchvision:<name>``: the libraries' image classifiers with
random weights (``pretrained=False``, ``weights=None``: nothing is downloaded)."""

from __future__ import annotations

from torch import nn

from dlbench.errors import WorkerError
from dlbench.models.pytorch.workload_base import ClassificationWorkload

__all__ = ["LibraryClassifierWorkload", "build_timm", "build_torchvision"]


def build_timm(name: str, num_classes: int) -> nn.Module:
    """timm's ``name``, randomly initialised; WorkerError for a name timm lacks."""
    import timm

    if not timm.is_model(name):
        raise WorkerError(f"exp.model=timm:{name}: timm has no such model (timm.list_models() "
                          f"lists them)")
    return timm.create_model(name, pretrained=False, num_classes=num_classes)


def build_torchvision(name: str, num_classes: int) -> nn.Module:
    """torchvision's ``name``, randomly initialised; WorkerError for a name it lacks."""
    import torchvision

    known = torchvision.models.list_models()
    if name not in known:
        raise WorkerError(f"exp.model=torchvision:{name}: torchvision has no such model "
                          f"(torchvision.models.list_models() lists {len(known)})")
    return torchvision.models.get_model(name, weights=None, num_classes=num_classes)


_BUILDERS = {"timm": build_timm, "torchvision": build_torchvision}


class LibraryClassifierWorkload(ClassificationWorkload):
    """A library's classifier: the zoo's classification step, built by the library."""

    def build(self) -> nn.Module:
        """The library's model, freshly initialised on the default device."""
        source, _, name = self.info.id.partition(":")
        return _BUILDERS[source](name, self.info.num_classes)
