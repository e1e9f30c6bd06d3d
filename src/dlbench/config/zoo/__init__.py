"""Every model of the tree, gathered from the modules of this package, and the
frameworks' builder tables derived from them.

A model is registered by its entry alone: its ``ModelInfo`` names its builders per
framework (``builders=built_by(pytorch="resnet:resnet18", ...)``), and a framework's
builder table (:attr:`FrameworkInfo.builders
<dlbench.config.frameworks.base.FrameworkInfo.builders>`) is every model whose builders
name it, in the order of :data:`ZOO`. Plain data: importing it imports no framework.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo
from dlbench.config.zoo.core import CORE_MODELS
from dlbench.config.zoo.domains import DOMAIN_MODELS
from dlbench.config.zoo.vision import VISION_MODELS

__all__ = ["ZOO", "zoo_builders"]

#: The models of the tree, in the order dlbench lists them.
ZOO: tuple[ModelInfo, ...] = (*CORE_MODELS, *VISION_MODELS, *DOMAIN_MODELS)


def zoo_builders(framework: str) -> dict[str, str]:
    """The builder table of ``framework``, ``{model id: "module:function"}``: every
    model of :data:`ZOO` whose builders name it.

    >>> zoo_builders("jax")["resnet50"]
    'dlbench.models.jax.resnet:resnet50'
    """
    return {info.id: info.builders[framework] for info in ZOO if framework in info.builders}
