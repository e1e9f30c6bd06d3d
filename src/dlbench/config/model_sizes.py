"""Parameters and inference FLOPs per sample of every model at its published size.

Counted by ``dlbench.backends.pytorch.model_summary`` (the architecture's count,
``dlbench.models.flops``: PyTorch's FlopCounterMode on the meta device) and kept here so
that ``dlbench help --models`` answers at once without importing torch. A cache, not a
registration: a model without an entry (one just added, or a plug-in's) is shown with
``-`` for both numbers until its line is added. The test
``tests/unit/test_model_sizes.py`` recounts every entry (failing on a stale one, with
the line to paste) and warns with the line to paste for a model that has none. Each run
records the count of its phase (forward and backward for training) at its sizes, the
same in every framework: ``results.flops_per_sample``.
"""

from __future__ import annotations

#: model id -> (parameters, inference FLOPs per sample or None where not countable)
MODEL_SIZES: dict[str, tuple[int, int | None]] = {
    "toy": (9610, 18944),
    "deep_mnist": (3274634, 27767808),
    "alexnet": (60965224, 1448813632),
    "resnet18": (11689512, 3628146688),
    "resnet34": (21797672, 7327522816),
    "resnet50": (25557032, 8178368512),
    "resnet101": (44549160, 15602810880),
    "resnet152": (60192808, 23027253248),
    "alexnet_owt": (61100840, 1428376960),
    "overfeat": (145920872, 5602807808),
    "googlenet": (6624904, 2996752384),
    "inception3": (27161264, 11426432192),
    "inception4": (42679816, 24507949248),
    "vgg11": (132863336, 15218180096),
    "vgg13": (133047848, 22616932352),
    "vgg16": (138357544, 30940528640),
    "vgg19": (143667240, 39264124928),
    "resnet200": (64673832, 30014963712),
    "resnet269": (102073384, 40059797504),
    "mobilenet_v2": (3504872, 601548544),
    "vit_b16": (86567656, 35127656448),
    "acoustic_model": (34678784, 69320704),
    "bert_base": (109514298, 28499116032),
    "gpt2_small": (124439808, 291648307200),
    "wlm": (50065078, 1987349000),
    "translator": (60524544, 7885291520),
    "dcgan": (6342272, 209256448),
    "vae": (652824, 1302400),
    "ncf": (31832577, 213248),
    "espcn": (59657, 859601600),
    "fast_style": (1679235, 20157825024),
    "ssd_lite": (4228788, 1492412288),
    "toy_reg": (5, None),
    "toy_lstm": (32284, 62934000),
    "cart": (898, 1536),
    "loader": (0, None),
}
