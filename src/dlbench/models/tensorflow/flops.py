"""Floating-point operations of a traced TensorFlow step, counted from its graph.

The convention is the PyTorch backend's (``torch.utils.flop_counter``), so that
``results.flops_per_sample`` (and the MFU computed from it) means the same in both
frameworks: only matrix products and convolutions are counted, as two operations per
multiply-add, forward and backward; elementwise work, normalisation, pooling, the
softmax and the optimizer's update are not. TensorFlow's own profiler
(``tf.compat.v1.profiler``) counts every elementwise operation as well, which would
make the two frameworks' numbers disagree for the same model.

Only operations that the step's results or side effects depend on are counted: a
gradient that nothing uses (the input gradient of the first layer) is traced into
the graph but pruned before it runs, and is pruned here too.
"""

from __future__ import annotations

import math
from typing import Any

#: The operations counted: matrix products and convolutions.
_COUNTED = frozenset({
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "Conv2D",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", *(
        f"DepthwiseConv2dNative{suffix}" for suffix in ("", "BackpropInput", "BackpropFilter")),
})


#: Operations that call one function, once.
_FUNCTION_CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})


def _dims(shape: Any) -> list[int] | None:
    if shape.rank is None or not shape.is_fully_defined():
        return None
    return [int(d) for d in shape]


def _einsum(op: Any) -> int | None:
    """Two operands: two operations per multiply-add over every distinct index."""
    equation = op.get_attr("equation").decode()
    operands = equation.split("->")[0].split(",")
    if len(operands) != 2 or "." in equation:
        return None
    sizes: dict[str, int] = {}
    for labels, tensor in zip(operands, op.inputs, strict=True):
        dims = _dims(tensor.shape)
        if dims is None:
            return None
        sizes.update(zip(labels, dims, strict=True))
    return 2 * math.prod(sizes.values())


def op_flops(op: Any) -> int | None:
    """The FLOPs of one graph operation: 0 for the kinds not counted, None when its
    shapes are not static."""
    kind = op.type
    if kind == "Einsum":
        return _einsum(op)
    if kind not in _COUNTED:
        return 0
    out = _dims(op.outputs[0].shape)
    if out is None:
        return None
    if kind == "MatMul":
        lhs = _dims(op.inputs[0].shape)
        if lhs is None:
            return None
        inner = lhs[0] if op.get_attr("transpose_a") else lhs[1]
        return 2 * math.prod(out) * inner
    if kind.startswith("BatchMatMul"):
        lhs = _dims(op.inputs[0].shape)
        if lhs is None:
            return None
        inner = lhs[-2] if op.get_attr("adj_x") else lhs[-1]
        return 2 * math.prod(out) * inner
    # Convolutions: 2 * output positions * output channels * (kh * kw * in channels),
    # the same for the forward pass and each of its two gradients. A depthwise one
    # reads one input channel per output channel (kh * kw), as PyTorch's counter
    # has a convolution with groups = channels.
    kernel: list[int] | None
    grid: list[int] | None
    if kind in ("Conv2D", "DepthwiseConv2dNative"):
        kernel, grid = _dims(op.inputs[1].shape), out
    elif kind.endswith("BackpropInput"):
        kernel, grid = _dims(op.inputs[1].shape), _dims(op.inputs[2].shape)
    else:  # BackpropFilter: its output is the kernel's gradient
        kernel, grid = out, _dims(op.inputs[2].shape)
    if kernel is None or grid is None:
        return None
    height, width, in_channels, _out_channels = kernel
    reads = 1 if kind.startswith("Depthwise") else in_channels
    return 2 * math.prod(grid) * height * width * reads


def _live_operations(graph: Any) -> list[Any]:
    """The operations the graph's outputs and side effects (variable updates) need."""
    pending = [tensor.op for tensor in graph.outputs] + list(graph.control_outputs)
    seen: dict[str, Any] = {}
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen[op.name] = op
        pending.extend(tensor.op for tensor in op.inputs)
        pending.extend(op.control_inputs)
    return list(seen.values())


def _called(attrs: Any) -> list[str]:
    """Names of the functions an operation's attributes call (branches, bodies)."""
    names: list[str] = []
    for value in attrs.values():
        if value.HasField("func"):
            names.append(value.func.name)
        names.extend(func.name for func in value.list.func)
    return names


def _calls_counted_work(names: list[str], library: dict[str, Any]) -> bool:
    """Whether the functions ``names`` (or functions they call) hold an operation of a
    counted kind. A function not in the library counts as holding one."""
    pending, seen = list(names), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        function = library.get(name)
        if function is None:
            return True
        for node in function.node_def:
            if node.op in _COUNTED:
                return True
            pending.extend(_called(node.attr))
    return False


def _inner_graph(graph: Any, op: Any) -> Any:
    """The traced graph a function call (``PartitionedCall``) runs, or None. A nested
    ``tf.function`` (a replica's XLA-compiled part) is one: the outer graph keeps the
    functions it calls by name (a private table of TensorFlow's, hence the care)."""
    if op.type not in _FUNCTION_CALLS:
        return None
    name = op.node_def.attr["f"].func.name
    function = getattr(graph, "_functions", {}).get(name)
    return getattr(function, "graph", None)


def graph_flops(graph: Any) -> int | None:
    """The FLOPs of one run of ``graph`` (a ``FuncGraph``, e.g. a concrete function's
    ``.graph``), or None when they cannot be counted: a shape that is not static, or a
    call into another graph that holds a matrix product or a convolution and cannot be
    counted itself (a branch or a loop body runs an unknown number of times). Nested
    ``tf.function`` calls are counted inside; branches without such work (the loss
    scaler's conditional update) add nothing."""
    total = 0
    library: dict[str, Any] | None = None
    for op in _live_operations(graph):
        inner = _inner_graph(graph, op)
        if inner is not None:
            flops = graph_flops(inner)
            if flops is None:
                return None
            total += flops
            continue
        names = _called(op.node_def.attr)
        if names:
            if library is None:
                library = {f.signature.name: f for f in graph.as_graph_def().library.function}
            if _calls_counted_work(names, library):
                return None
        flops = op_flops(op)
        if flops is None:
            return None
        total += flops
    return total
