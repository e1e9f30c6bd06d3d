"""Architectures as data, read by every framework's builders: VGG's configurations,
ResNet's stages, MobileNetV2's settings, and the layouts of GoogLeNet, Inception-v3
and Inception-v4 as blocks of parallel branches.

A model id is one architecture in every framework (``dlbench.models.pytorch`` defines
each as ``torch.nn`` code); where an architecture is a table, the table lives here
once and each framework's builder walks it, so Keras and Flax cannot drift from the
PyTorch definition. Importing this module imports no framework.

The Inception layouts are sequences of :data:`Op`: a :class:`Conv` unit (convolution
without bias, batch norm, ReLU), a :class:`Pool`, or a :class:`Concat` of branches
that all read the same input, their outputs concatenated along the channels. They
transcribe ``dlbench.models.pytorch.inception`` and ``inception4`` layer for layer;
the Keras and Flax builders that walk them give each batch norm eps 0.001 and
initialise as the PyTorch definitions: torchvision's normal weights (std 0.01 for
GoogLeNet, 0.1 for Inception-v3, whose truncation at ±2 never bites at those scales)
and PyTorch's defaults for Inception-v4.

Example::

    from dlbench.models.layouts import INCEPTION4, Concat

    # 19: the stem's 3, 4 A, reduction A, 7 B, reduction B, 3 C
    sum(isinstance(op, Concat) for op in INCEPTION4)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GOOGLENET", "INCEPTION3_AUX", "INCEPTION3_BODY", "INCEPTION3_HEAD", "INCEPTION4",
    "MOBILENET_V2", "RESNET_STAGES", "VGG_CONFIGS", "Concat", "Conv", "Op", "Pool",
    "ceil_mode_extra", "pair",
]

#: VGG's configurations A, B, D and E: output channels of each 3x3 convolution, "M" a
#: 2x2/2 max pool.
VGG_CONFIGS: dict[str, str] = {
    "vgg11": "64 M 128 M 256 256 M 512 512 M 512 512 M",
    "vgg13": "64 64 M 128 128 M 256 256 M 512 512 M 512 512 M",
    "vgg16": "64 64 M 128 128 M 256 256 256 M 512 512 512 M 512 512 512 M",
    "vgg19": "64 64 M 128 128 M 256 256 256 256 M 512 512 512 512 M 512 512 512 512 M",
}

#: ResNet depth -> (bottleneck blocks?, blocks in each of the four stages). 200 and 269
#: are DLBS's deep variants ("Identity Mappings in Deep Residual Networks") with v1.5
#: bottlenecks: only the number of blocks differs from ResNet-50.
RESNET_STAGES: dict[str, tuple[bool, tuple[int, int, int, int]]] = {
    "resnet18": (False, (2, 2, 2, 2)),
    "resnet34": (False, (3, 4, 6, 3)),
    "resnet50": (True, (3, 4, 6, 3)),
    "resnet101": (True, (3, 4, 23, 3)),
    "resnet152": (True, (3, 8, 36, 3)),
    "resnet200": (True, (3, 24, 36, 3)),
    "resnet269": (True, (3, 30, 48, 8)),
}

#: MobileNetV2's inverted residual stages, the paper's Table 2: (expansion t, output
#: channels c, repeats n, first stride s).
MOBILENET_V2: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


@dataclass(frozen=True)
class Conv:
    """Convolution without bias, batch norm, ReLU: the Inception unit. ``std`` overrides
    the network's initial weight scale for this unit (Inception-v3's auxiliary head)."""

    out: int
    kernel: tuple[int, int]
    stride: int = 1
    padding: tuple[int, int] = (0, 0)
    std: float | None = None


@dataclass(frozen=True)
class Pool:
    """A ``max`` or ``avg`` pool over a square window. ``ceil``: PyTorch's ``ceil_mode``
    (every layout pool with it reads a ReLU's output, so padding with zeros is exact);
    ``count_pad``: an average counts the zero padding (PyTorch's default)."""

    kind: str
    kernel: int
    stride: int
    padding: int = 0
    ceil: bool = False
    count_pad: bool = True


@dataclass(frozen=True)
class Concat:
    """Branches that all read the input, concatenated along the channels."""

    branches: tuple[tuple[Op, ...], ...]


Op = Conv | Pool | Concat


def ceil_mode_extra(size: int, window: int, stride: int, padding: int) -> int:
    """Pixels PyTorch's ``ceil_mode`` pads after the end of an axis of ``size`` (on top
    of ``padding`` on both sides): enough for one more window where the last would be
    partial, unless that window would start in the padding.

    >>> ceil_mode_extra(56, 3, 2, 0), ceil_mode_extra(55, 3, 2, 0)  # 28 and 27 outputs
    (1, 0)
    """
    span = size + 2 * padding - window
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return max(0, (out - 1) * stride + window - size - 2 * padding)


def pair(value: int | tuple[int, int]) -> tuple[int, int]:
    """``(value, value)`` for an int, a pair as it is: PyTorch's spelling of sizes."""
    return (value, value) if isinstance(value, int) else value


def conv(out: int, kernel: int | tuple[int, int], stride: int = 1,
         padding: int | tuple[int, int] = 0, std: float | None = None) -> Conv:
    """A :class:`Conv` with PyTorch's spelling of sizes (an int for a square)."""
    return Conv(out, pair(kernel), stride, pair(padding), std)


def concat(*branches: Op | tuple[Op, ...]) -> Concat:
    """A :class:`Concat`; a branch of one op may be written without its tuple."""
    return Concat(tuple(b if isinstance(b, tuple) else (b,) for b in branches))


def _max(kernel: int, stride: int, padding: int = 0, ceil: bool = False) -> Pool:
    return Pool("max", kernel, stride, padding, ceil)


def _avg3(count_pad: bool = True) -> Pool:
    return Pool("avg", 3, 1, 1, count_pad=count_pad)


# --- GoogLeNet (torchvision's, without auxiliary heads) ---------------------------


def _googlenet_block(ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int, ch5x5: int,
                     proj: int) -> Concat:
    return concat(
        conv(ch1x1, 1),
        (conv(ch3x3red, 1), conv(ch3x3, 3, padding=1)),
        # torchvision's "5x5" branch has a 3x3 kernel; the published count has it so.
        (conv(ch5x5red, 1), conv(ch5x5, 3, padding=1)),
        (_max(3, 1, 1, ceil=True), conv(proj, 1)),
    )


#: GoogLeNet's features, to 1024 channels; then a global average pool, dropout 0.2, fc.
GOOGLENET: tuple[Op, ...] = (
    conv(64, 7, 2, 3),
    _max(3, 2, ceil=True),
    conv(64, 1),
    conv(192, 3, padding=1),
    _max(3, 2, ceil=True),
    _googlenet_block(64, 96, 128, 16, 32, 32),  # 3a
    _googlenet_block(128, 128, 192, 32, 96, 64),  # 3b
    _max(3, 2, ceil=True),
    _googlenet_block(192, 96, 208, 16, 48, 64),  # 4a
    _googlenet_block(160, 112, 224, 24, 64, 64),  # 4b
    _googlenet_block(128, 128, 256, 24, 64, 64),  # 4c
    _googlenet_block(112, 144, 288, 32, 64, 64),  # 4d
    _googlenet_block(256, 160, 320, 32, 128, 128),  # 4e
    _max(2, 2, ceil=True),
    _googlenet_block(256, 160, 320, 32, 128, 128),  # 5a
    _googlenet_block(384, 192, 384, 48, 128, 128),  # 5b
)


# --- Inception-v3 (torchvision's) --------------------------------------------------


def _v3_a(pool_features: int) -> Concat:  # 35x35 at 299 px
    return concat(
        conv(64, 1),
        (conv(48, 1), conv(64, 5, padding=2)),
        (conv(64, 1), conv(96, 3, padding=1), conv(96, 3, padding=1)),
        (_avg3(), conv(pool_features, 1)),
    )


def _v3_c(c7: int) -> Concat:  # 17x17, factorised 7x7
    return concat(
        conv(192, 1),
        (conv(c7, 1), conv(c7, (1, 7), padding=(0, 3)), conv(192, (7, 1), padding=(3, 0))),
        (conv(c7, 1), conv(c7, (7, 1), padding=(3, 0)), conv(c7, (1, 7), padding=(0, 3)),
         conv(c7, (7, 1), padding=(3, 0)), conv(192, (1, 7), padding=(0, 3))),
        (_avg3(), conv(192, 1)),
    )


def _split_1x3_3x1(out: int) -> Concat:
    return concat(conv(out, (1, 3), padding=(0, 1)), conv(out, (3, 1), padding=(1, 0)))


def _v3_e() -> Concat:  # 8x8, expanded filter bank
    return concat(
        conv(320, 1),
        (conv(384, 1), _split_1x3_3x1(384)),
        (conv(448, 1), conv(384, 3, padding=1), _split_1x3_3x1(384)),
        (_avg3(), conv(192, 1)),
    )


#: Inception-v3 from the image to Mixed_6e (768 channels, 17x17 at 299 px), where the
#: auxiliary classifier reads.
INCEPTION3_BODY: tuple[Op, ...] = (
    conv(32, 3, 2), conv(32, 3), conv(64, 3, padding=1), _max(3, 2),
    conv(80, 1), conv(192, 3), _max(3, 2),
    _v3_a(32), _v3_a(64), _v3_a(64),
    concat(conv(384, 3, 2), (conv(64, 1), conv(96, 3, padding=1), conv(96, 3, 2)),
           _max(3, 2)),  # Mixed_6a, 35 -> 17
    _v3_c(128), _v3_c(160), _v3_c(160), _v3_c(192),
)

#: Inception-v3's auxiliary classifier after its 5x5 pool: 1x1 to 128, 5x5 to 768
#: (then a global average pool and fc, weights of std 0.001).
INCEPTION3_AUX: tuple[Op, ...] = (conv(128, 1), conv(768, 5, std=0.01))

#: Inception-v3 from Mixed_6e to the 2048 channels of Mixed_7c.
INCEPTION3_HEAD: tuple[Op, ...] = (
    concat((conv(192, 1), conv(320, 3, 2)),
           (conv(192, 1), conv(192, (1, 7), padding=(0, 3)), conv(192, (7, 1), padding=(3, 0)),
            conv(192, 3, 2)),
           _max(3, 2)),  # Mixed_7a, 17 -> 8
    _v3_e(), _v3_e(),
)


# --- Inception-v4 (the paper's, as the common PyTorch ports) -----------------------

_V4_AVG = _avg3(count_pad=False)  # the ports average over the window's real pixels only

_V4_A = concat(
    conv(96, 1),
    (conv(64, 1), conv(96, 3, padding=1)),
    (conv(64, 1), conv(96, 3, padding=1), conv(96, 3, padding=1)),
    (_V4_AVG, conv(96, 1)),
)
_V4_B = concat(
    conv(384, 1),
    (conv(192, 1), conv(224, (1, 7), padding=(0, 3)), conv(256, (7, 1), padding=(3, 0))),
    (conv(192, 1), conv(192, (7, 1), padding=(3, 0)), conv(224, (1, 7), padding=(0, 3)),
     conv(224, (7, 1), padding=(3, 0)), conv(256, (1, 7), padding=(0, 3))),
    (_V4_AVG, conv(128, 1)),
)
_V4_C = concat(
    conv(256, 1),
    (conv(384, 1), _split_1x3_3x1(256)),
    (conv(384, 1), conv(448, (3, 1), padding=(1, 0)), conv(512, (1, 3), padding=(0, 1)),
     _split_1x3_3x1(256)),
    (_V4_AVG, conv(256, 1)),
)

#: Inception-v4's features, to 1536 channels; then a global average pool, dropout 0.2,
#: fc (PyTorch's default initialisation).
INCEPTION4: tuple[Op, ...] = (
    conv(32, 3, 2), conv(32, 3), conv(64, 3, padding=1),
    concat(_max(3, 2), conv(96, 3, 2)),  # 160
    concat((conv(64, 1), conv(96, 3)),
           (conv(64, 1), conv(64, (1, 7), padding=(0, 3)), conv(64, (7, 1), padding=(3, 0)),
            conv(96, 3))),  # 192
    concat(conv(192, 3, 2), _max(3, 2)),  # 384 at 35x35
    *(_V4_A,) * 4,
    concat(conv(384, 3, 2), (conv(192, 1), conv(224, 3, padding=1), conv(256, 3, 2)),
           _max(3, 2)),  # reduction A: 1024 at 17x17
    *(_V4_B,) * 7,
    concat((conv(192, 1), conv(192, 3, 2)),
           (conv(256, 1), conv(256, (1, 7), padding=(0, 3)), conv(320, (7, 1), padding=(3, 0)),
            conv(320, 3, 2)),
           _max(3, 2)),  # reduction B: 1536 at 8x8
    *(_V4_C,) * 3,
)
