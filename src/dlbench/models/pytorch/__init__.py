"""PyTorch implementations of the zoo, in plain ``torch.nn`` (no torchvision).

Each builder takes one sample's shape and the number of classes and returns a fresh
module. Add a model by writing its builder and one line in :data:`PYTORCH_BUILDERS`;
give it a catalog entry (``dlbench.config.catalog.MODELS``) to make it selectable.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from dlbench.models.pytorch.alexnet import alexnet
from dlbench.models.pytorch.cartpole import cart
from dlbench.models.pytorch.detection import ssd_lite
from dlbench.models.pytorch.dlbs_misc import acoustic_model, alexnet_owt, overfeat
from dlbench.models.pytorch.generative import dcgan, vae
from dlbench.models.pytorch.imaging import espcn, fast_style
from dlbench.models.pytorch.inception import googlenet, inception3
from dlbench.models.pytorch.inception4 import inception4
from dlbench.models.pytorch.lm import bert_base, gpt2_small, wlm
from dlbench.models.pytorch.mobile import mobilenet_v2
from dlbench.models.pytorch.resnet import (
    resnet18,
    resnet34,
    resnet50,
    resnet101,
    resnet152,
    resnet200,
    resnet269,
)
from dlbench.models.pytorch.simple import deep_mnist, toy
from dlbench.models.pytorch.small_tasks import ncf, toy_lstm, toy_reg
from dlbench.models.pytorch.translation import translator
from dlbench.models.pytorch.vgg import vgg11, vgg13, vgg16, vgg19
from dlbench.models.pytorch.vit import vit_b16
from dlbench.models.pytorch.workload import no_model

# builder(input_shape, num_classes) -> module; input_shape is one sample's shape
ModelBuilder = Callable[[tuple[int, ...], int], nn.Module]

PYTORCH_BUILDERS: dict[str, ModelBuilder] = {
    "toy": toy,
    "deep_mnist": deep_mnist,
    "alexnet": alexnet,
    "resnet18": resnet18,
    "resnet34": resnet34,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "resnet152": resnet152,
    # the vision zoo (dlbench.config.zoo_vision)
    "alexnet_owt": alexnet_owt,
    "overfeat": overfeat,
    "googlenet": googlenet,
    "inception3": inception3,
    "inception4": inception4,
    "vgg11": vgg11,
    "vgg13": vgg13,
    "vgg16": vgg16,
    "vgg19": vgg19,
    "resnet200": resnet200,
    "resnet269": resnet269,
    "mobilenet_v2": mobilenet_v2,
    "vit_b16": vit_b16,
    "acoustic_model": acoustic_model,
    # the multi-domain suite (dlbench.config.zoo_domains); what a step does with each
    # is its workload (dlbench.models.pytorch.workloads)
    "bert_base": bert_base,
    "gpt2_small": gpt2_small,
    "wlm": wlm,
    "translator": translator,
    "dcgan": dcgan,
    "vae": vae,
    "ncf": ncf,
    "espcn": espcn,
    "fast_style": fast_style,
    "ssd_lite": ssd_lite,
    "toy_reg": toy_reg,
    "toy_lstm": toy_lstm,
    "cart": cart,
    "loader": no_model,
}

__all__ = ["PYTORCH_BUILDERS", "ModelBuilder"]
