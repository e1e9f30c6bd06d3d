"""The JAX backend: Flax models and Optax optimizers in jit-compiled steps, on the CPU
or on the GPUs of one node, data-parallel over several of them in one process.

A training step is one XLA program: forward, ``jax.value_and_grad`` of the loss,
the optimizer's update, the new batch-norm statistics, and the loss written into a
buffer of losses on the device (read back once, at the end, for the NaN check). Its
input state (parameters, optimizer state, statistics, losses) is donated, so XLA
updates it in place. Inference is the jit-compiled forward pass.

The phase's program is compiled and run once in :meth:`JaxBackend.setup`: the
seconds of tracing and compiling are ``results.compile_time``, never part of a batch
time.

Data parallelism: the devices of ``exp.gpus`` (or ``exp.num_local_replicas`` CPU
devices) form a one-dimensional mesh; each batch is split along it and everything
else is replicated, and XLA's SPMD partitioner inserts the all-reduce of the
gradients. The synthetic batch is copied into the devices' memory once, at set-up,
already split.

Mixed precision: ``exp.dtype`` is the modules' compute dtype; parameters,
gradients, optimizer state, the loss and batch-norm statistics stay float32.

The profiling window (``exp.profile=jax``) and the memory breakdown are in
:mod:`dlbench.backends.jax.extras`.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

import flax
import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from dlbench.backends.base import Backend
from dlbench.backends.jax.extras import JaxExtras
from dlbench.config.catalog import MODELS
from dlbench.config.frameworks.base import image_layout
from dlbench.errors import NonFiniteLoss, WorkerError
from dlbench.measure.timers import BatchTimer, DispatchTimer
from dlbench.models.jax.workloads import JaxWorkload, make_jax_workload

_DTYPES = {"float32": jnp.float32, "float16": jnp.float16, "bfloat16": jnp.bfloat16}
_BATCH_AXIS = "batch"


def record_loss(losses: Any, index: Any, loss: Any) -> Any:
    """``losses`` with ``loss`` at ``index`` (inside the compiled step). The loss stays
    on the device: reading it back would synchronise inside the timed loop. An index
    past the buffer is dropped (JAX's rule for out-of-bounds updates)."""
    return losses.at[index].set(loss.astype(jnp.float32))


def _select_devices(gpus: str, replicas: int, nodes: int) -> list[Any]:
    """The JAX devices of ``exp.gpus`` (indices among the visible GPUs), or
    ``exp.num_local_replicas`` CPU devices when ``exp.gpus`` is empty."""
    if nodes > 1:
        raise WorkerError(
            f"exp.num_nodes={nodes}: the jax backend drives the devices of one node; "
            f"use exp.num_nodes=1"
        )
    if not gpus:
        # A CPU experiment on a machine with GPUs: JAX would otherwise start its GPU
        # client at the first device query, take 75% of each GPU's memory and put
        # arrays made without a device there. Takes effect before JAX starts its
        # clients (a fresh worker process); afterwards it changes nothing.
        jax.config.update("jax_platforms", "cpu")
        if replicas > 1:
            # Takes effect only before JAX starts its CPU client (a fresh worker process);
            # afterwards the count below tells whether enough devices exist anyway.
            with contextlib.suppress(RuntimeError):
                jax.config.update("jax_num_cpu_devices", replicas)
        cpus = jax.devices("cpu")
        if len(cpus) < replicas:
            raise WorkerError(
                f"exp.num_local_replicas={replicas} on the CPU: JAX has {len(cpus)} CPU "
                f"device(s) in this process; use exp.num_local_replicas<={len(cpus)}"
            )
        return list(cpus[:replicas])
    indices = [int(index) for index in gpus.split(",")]
    if len(indices) != replicas:
        raise WorkerError(
            f"exp.num_local_replicas={replicas} differs from the {len(indices)} GPU(s) of "
            f"exp.gpus='{gpus}'; leave exp.num_local_replicas to its default"
        )
    if len(set(indices)) != len(indices):
        raise WorkerError(f"exp.gpus='{gpus}' names a GPU twice; name each GPU once")
    try:
        visible = jax.devices("gpu")
    except RuntimeError:
        raise WorkerError(
            f"exp.gpus='{gpus}' asks for a GPU but JAX sees none here (a jaxlib with "
            f"CUDA support is needed: pip install 'jax[cuda12]')"
        ) from None
    missing = [index for index in indices if index >= len(visible)]
    if missing:
        raise WorkerError(
            f"exp.gpus='{gpus}': GPU {missing[0]} does not exist ({len(visible)} visible)"
        )
    return [visible[index] for index in indices]


def _program_flops(compiled: Any) -> float:
    """XLA's count of floating-point operations of one run of a compiled program on
    one device (0 when the backend does not say)."""
    analysis = compiled.cost_analysis()
    if isinstance(analysis, (list, tuple)):  # older JAX: one dict per program
        analysis = analysis[0] if analysis else {}
    return float((analysis or {}).get("flops", 0.0))


class JaxBackend(JaxExtras, Backend):
    """``exp.framework=jax``: see the ``jax.*`` parameters."""

    flops_counter = "jax-xla"

    def setup(self) -> None:
        p = self.params
        data_dir = str(p.get("exp.data_dir", ""))
        if data_dir:
            raise WorkerError(
                f"exp.data_dir={data_dir!r}: the jax backend runs on synthetic data only; "
                f"leave exp.data_dir empty (or use exp.framework=pytorch for real data)"
            )
        gpus = str(p["exp.gpus"])
        if gpus and not bool(p["jax.preallocate"]):
            # Read when JAX creates its GPU client, which has not happened yet in a
            # worker process: nothing before set-up touches a device.
            os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        self.devices = _select_devices(
            gpus, int(p["exp.num_local_replicas"]), int(p["exp.num_nodes"])
        )
        mesh = Mesh(np.array(self.devices), (_BATCH_AXIS,))
        self.replicated = NamedSharding(mesh, PartitionSpec())
        batched = NamedSharding(mesh, PartitionSpec(_BATCH_AXIS))

        info = MODELS[str(p["exp.model"])]
        # The zoo's Flax models take NHWC images, JAX's (and XLA's) natural layout on
        # every device: nothing to choose.
        self.layout = image_layout(info.input_shape, channels_last=True)
        self.training = p["exp.phase"] == "training"
        self.workload: JaxWorkload = make_jax_workload(
            info, int(p["exp.image_size"]), int(p["exp.seq_len"])
        )
        module = self.workload.build(_DTYPES[str(p["exp.dtype"])])
        self.replica_batch = int(p["exp.replica_batch"])

        # The same initial weights, data and dropout masks in every run of the
        # experiment, so that two runs differ only by what is measured.
        seed = int(p["jax.seed"])
        dropout_key = jax.random.key(seed, impl=str(p["jax.prng_impl"]))
        # The initial weights are drawn by NumPy, seeded from the key Flax derives for
        # each parameter; deriving them with "unsafe_rbg" keys halves the compile time
        # of the initialisation next to threefry's.
        init_key = jax.random.key(seed, impl="unsafe_rbg")
        # Drawn on the host (a JAX draw would be compiled first, which takes longer than
        # drawing), then copied once into the devices' memory, split along the batch.
        batch = self.workload.synthetic_batch(
            np.random.default_rng(seed), self.replica_batch * len(self.devices)
        )
        self.inputs, self.targets = jax.device_put(batch, batched)

        def init(init_key: Any) -> Any:
            return module.init(init_key, self.workload.example_inputs(1), train=False)

        # On the CPU, where the initialisers' host callbacks draw the numbers
        # (dlbench.models.jax.layers), then copied to every device of the mesh.
        with jax.default_device(jax.devices("cpu")[0]):
            variables = jax.jit(init)(jax.device_put(init_key, jax.devices("cpu")[0]))
        variables = jax.device_put(variables, self.replicated)
        params = variables["params"]
        self.num_params = sum(int(leaf.size) for leaf in jax.tree.leaves(params))
        batch_stats = variables.get("batch_stats", {})

        self.pending: Any = None
        if self.training:
            self._setup_training(p, module, params, batch_stats, dropout_key, batched)
        else:
            self._setup_inference(module, {"params": params, "batch_stats": batch_stats},
                                  batched)

    def _setup_training(
        self, p: Any, module: Any, params: Any, batch_stats: Any, dropout_key: Any,
        batched: NamedSharding,
    ) -> None:
        name = str(p["jax.optimizer"])
        rate = self.workload.learning_rates[name]
        # optax's sgd with momentum keeps t = g + 0.9 t and steps by -rate * t, as
        # torch.optim.SGD(momentum=0.9) does; adam has PyTorch's defaults.
        optimizer = optax.adam(rate) if name == "adam" else optax.sgd(rate, momentum=0.9)
        workload = self.workload
        prng_impl = str(p["jax.prng_impl"])
        self.num_losses = int(p["exp.num_warmup_batches"]) + int(p["exp.num_batches"])

        def loss_of(state: dict[str, Any], params: Any, inputs: Any,
                    targets: Any) -> tuple[Any, Any]:
            """The loss of a step from ``state`` with ``params``, and the new batch-norm
            statistics."""
            key = jax.random.wrap_key_data(state["rng"], impl=prng_impl)
            rngs = {"dropout": jax.random.fold_in(key, state["step"])}
            variables = {"params": params, "batch_stats": state["batch_stats"]}
            logits, updates = module.apply(variables, inputs, train=True, rngs=rngs,
                                           mutable=["batch_stats"])
            return workload.loss(logits, targets), updates

        def train_step(state: dict[str, Any], inputs: Any, targets: Any) -> dict[str, Any]:
            (loss, updates), grads = jax.value_and_grad(
                lambda params: loss_of(state, params, inputs, targets), has_aux=True,
            )(state["params"])
            changes, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
            return {
                "params": optax.apply_updates(state["params"], changes),
                "batch_stats": updates.get("batch_stats", state["batch_stats"]),
                "opt_state": opt_state,
                "step": state["step"] + 1,
                "losses": record_loss(state["losses"], state["step"], loss),
                "rng": state["rng"],
            }

        state = jax.device_put({
            "params": params,
            "batch_stats": batch_stats,
            "opt_state": jax.jit(optimizer.init)(params),
            "step": jnp.zeros((), jnp.int32),
            "losses": jnp.zeros((self.num_losses,), jnp.float32),
            # The key's raw data: a typed key array among a call's arguments costs
            # several microseconds of dispatch in every step (JAX 0.10, CPU).
            "rng": jax.random.key_data(dropout_key),
        }, self.replicated)
        step = jax.jit(train_step, donate_argnums=0,
                       in_shardings=(self.replicated, batched, batched),
                       out_shardings=self.replicated)
        start = time.perf_counter()
        self.compiled = step.lower(state, self.inputs, self.targets).compile()
        self.compile_time = time.perf_counter() - start
        # One run outside the timed loop (first-run allocations), then the step counter
        # and the losses start again from zero for the worker's batches.
        state = jax.block_until_ready(self.compiled(state, self.inputs, self.targets))
        state["step"] = jax.device_put(jnp.zeros((), jnp.int32), self.replicated)
        state["losses"] = jax.device_put(jnp.zeros((self.num_losses,), jnp.float32),
                                         self.replicated)
        self.state = state

        def step_loss(params: Any, inputs: Any, targets: Any) -> Any:
            # The memory breakdown's view of a step: the current state's statistics
            # and dropout key, read when it is called.
            return loss_of(self.state, params, inputs, targets)[0]

        self.step_loss = step_loss

    def _setup_inference(self, module: Any, variables: Any, batched: NamedSharding) -> None:
        def infer(variables: Any, inputs: Any) -> Any:
            return module.apply(variables, inputs, train=False)

        forward = jax.jit(infer, in_shardings=(self.replicated, batched),
                          out_shardings=batched)
        start = time.perf_counter()
        self.compiled = forward.lower(variables, self.inputs).compile()
        self.compile_time = time.perf_counter() - start
        self.variables = variables
        jax.block_until_ready(self.compiled(variables, self.inputs))

    def step(self, index: int) -> None:
        if self.training:
            self.state = self.compiled(self.state, self.inputs, self.targets)
            self.pending = self.state["losses"]
        else:
            self.pending = self.compiled(self.variables, self.inputs)

    def synchronize(self) -> None:
        # PjRt marks every output of one execution ready together, so one is enough.
        if self.pending is not None:
            jax.block_until_ready(self.pending)

    def batch_timer(self) -> BatchTimer:
        """On a GPU, steps are dispatched ahead and blocked on every few
        (:class:`~dlbench.measure.timers.DispatchTimer`): JAX has no device events, and
        blocking after every step idles the GPU while the host dispatches the next. The
        CPU keeps the host's clock around each step."""
        if self.devices[0].platform == "cpu":
            return super().batch_timer()
        return DispatchTimer(self.synchronize)

    def finish(self, num_steps: int) -> dict[str, Any]:
        results: dict[str, Any] = {"results.compile_time": self.compile_time}
        if not self.training:
            return results
        losses = np.asarray(jax.device_get(self.state["losses"]))[:num_steps]
        bad = np.flatnonzero(~np.isfinite(losses))
        if bad.size:
            raise NonFiniteLoss(int(bad[0]))
        results["results.loss_last"] = float(losses[-1]) if losses.size else None
        results["results.loss_data"] = [float(loss) for loss in losses]
        return results

    def throughput_unit(self) -> tuple[str, float]:
        return self.workload.throughput_unit()

    def flops_per_sample(self) -> float | None:
        """XLA's cost analysis of the compiled step, per sample of one device's share of
        the batch: the cross-check (``results.flops_per_sample_framework``) of the
        architecture's count, which the worker records as ``results.flops_per_sample``
        and from which TFLOP/s and MFU are computed. It is not that count: it covers
        every floating-point operation of the optimised program, elementwise work too
        (activations, normalisation, softmax, the loss and, in training, the optimizer's
        update), skips the convolution taps that fall on the zero padding, depends on
        how XLA fused and rewrote the program (so it moves with the batch size), and on
        a GPU may leave out what runs in library calls (cuDNN's convolutions, cuBLAS's
        products). ResNet-18 at 64 px, inference: 0.77 of the architecture's count."""
        flops = _program_flops(self.compiled)
        return flops / self.replica_batch if flops > 0 else None

    def environment(self) -> dict[str, Any]:
        device = self.devices[0]
        platform = device.platform
        env: dict[str, Any] = {
            "sys.framework_version": jax.__version__,
            "sys.jax_version": jax.__version__,
            "sys.jaxlib_version": jaxlib.__version__,
            "sys.flax_version": flax.__version__,
            "sys.optax_version": optax.__version__,
            "sys.jax_platform": platform,
            "sys.jax_devices": [str(d) for d in self.devices],
            "sys.framework_build": {
                "platform_version": getattr(device.client, "platform_version", None),
                "xla_flags": os.environ.get("XLA_FLAGS", ""),
                "prng_impl": str(self.params["jax.prng_impl"]),
            },
            "sys.model_params": self.num_params,
            "hw.device_name": "cpu" if platform == "cpu" else device.device_kind,
        }
        capability = getattr(device, "compute_capability", None)
        if capability:
            env["hw.device_capability"] = str(capability)
        if self.layout is not None:
            env["sys.layout"] = self.layout
        return env

    def teardown(self) -> None:
        # Drop the device buffers now rather than at garbage collection.
        for name in ("state", "variables", "inputs", "targets", "pending", "compiled"):
            if hasattr(self, name):
                setattr(self, name, None)


BACKEND = JaxBackend


def available_devices() -> list[str]:
    """The devices JAX sees here: ``cpu``, then each GPU as ``cuda:0 NVIDIA H100 ...``."""
    names = ["cpu"]
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    names += [f"{getattr(d.client, 'platform', d.platform)}:{d.id} {d.device_kind}" for d in gpus]
    return names
