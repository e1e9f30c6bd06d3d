"""The TensorFlow backend: Keras 3 models, ``tf.function``-compiled steps (optionally
XLA), on the CPU, one GPU, or several GPUs of one machine through MirroredStrategy.

A training step is the forward pass, the loss, ``tf.GradientTape`` and the
optimizer's ``apply_gradients``, traced into one ``tf.function``; an inference step is
the forward pass. The first call traces (and with ``tensorflow.xla`` compiles) the
step: set-up makes it, times it and reports it as ``results.compile_time``, so no
timed batch pays for it. Synthetic data is made on each device once, at set-up, with
the shapes and label ranges of the PyTorch workloads. Mixed precision goes through
Keras's dtype policies (``mixed_float16`` with dynamic loss scaling,
``mixed_bfloat16``).

Several replicas run data-parallel in this one process through MirroredStrategy:
one per GPU of ``exp.gpus``, or on the CPU ``exp.num_local_replicas`` logical devices
that share its cores. Every replica takes ``exp.replica_batch`` samples, gradients
are summed across replicas, and the step is one global batch of
``exp.effective_batch`` samples. The thread pools and the replicas' devices are set
up by :mod:`dlbench.backends.tensorflow.devices`; the profiling window
(``exp.profile=tensorflow``) and the memory breakdown by
:mod:`dlbench.backends.tensorflow.extras`.
"""

from __future__ import annotations

import os

# Keras reads its backend, and TensorFlow its C++ log level, once, when imported.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The imports below read that environment.
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from dlbench.backends.base import Backend
from dlbench.backends.tensorflow.devices import select_devices, set_threads
from dlbench.backends.tensorflow.extras import TensorFlowExtras
from dlbench.config.catalog import MODELS
from dlbench.config.frameworks.base import image_layout
from dlbench.errors import NonFiniteLoss, WorkerError
from dlbench.models.tensorflow.flops import graph_flops
from dlbench.models.tensorflow.workloads import Batch, make_workload

#: exp.dtype → the Keras dtype policy: float16 and bfloat16 are mixed precision
#: (float32 weights, half-precision compute), as PyTorch's autocast.
_POLICIES = {"float32": "float32", "float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}


def _gpu_name(gpu: Any) -> str:
    details = tf.config.experimental.get_device_details(gpu)
    return str(details.get("device_name", gpu.name))


def available_devices() -> list[str]:
    """The devices TensorFlow sees here: ``cpu``, then ``gpu:N NAME`` for each GPU."""
    gpus = tf.config.list_physical_devices("GPU")
    return ["cpu", *(f"gpu:{i} {_gpu_name(gpu)}" for i, gpu in enumerate(gpus))]


def _agree_on_overflow(grads: list[Any]) -> list[Any]:
    """Make every replica see the overflow that any replica's gradients show.

    Keras's LossScaleOptimizer skips a step (and lowers the loss scale) when the
    gradients are not finite, deciding from one replica's gradients before they are
    summed across replicas: an overflow on another replica would then be summed into
    the update. Poisoning the smallest gradient on every replica when any overflowed
    makes them all skip the step together; it costs one scalar all-reduce.
    """
    present = [g for g in grads if g is not None]
    finite = tf.reduce_all([
        tf.reduce_all(tf.math.is_finite(g.values if isinstance(g, tf.IndexedSlices) else g))
        for g in present
    ])
    context = tf.distribute.get_replica_context()
    overflows = context.all_reduce(tf.distribute.ReduceOp.SUM, 1.0 - tf.cast(finite, tf.float32))
    dense = [i for i, g in enumerate(grads) if isinstance(g, tf.Tensor)]
    smallest = min(dense, key=lambda i: grads[i].shape.num_elements())
    gate = tf.where(overflows > 0, float("nan"), 1.0)
    agreed = list(grads)
    agreed[smallest] = grads[smallest] * tf.cast(gate, grads[smallest].dtype)
    return agreed


class TensorFlowBackend(TensorFlowExtras, Backend):
    """``exp.framework=tensorflow``: see the ``tensorflow.*`` parameters."""

    flops_counter = "tensorflow-graph"

    def setup(self) -> None:
        p = self.params
        if keras.backend.backend() != "tensorflow":
            raise WorkerError(
                f"KERAS_BACKEND={keras.backend.backend()} in the environment: "
                f"exp.framework=tensorflow needs KERAS_BACKEND=tensorflow (or unset)"
            )
        if str(p.get("exp.data_dir", "")):
            raise WorkerError(
                f"exp.data_dir={p['exp.data_dir']!r}: exp.framework=tensorflow reads "
                f"synthetic data only; leave exp.data_dir empty"
            )
        set_threads(int(p["tensorflow.num_threads"]), int(p["tensorflow.inter_op_threads"]))
        self.gpus = str(p["exp.gpus"])
        self.devices = select_devices(
            self.gpus, int(p["exp.num_local_replicas"]), bool(p["tensorflow.memory_growth"])
        )
        self.strategy: tf.distribute.Strategy | None = (
            tf.distribute.MirroredStrategy(self.devices) if len(self.devices) > 1 else None
        )
        self.num_replicas = len(self.devices)
        # The same initial weights and synthetic data in every run of the experiment.
        keras.utils.set_random_seed(int(p["tensorflow.seed"]))
        # The policy is global in Keras: set for this experiment, restored at teardown.
        self.previous_policy = keras.config.dtype_policy()
        keras.config.set_dtype_policy(_POLICIES[str(p["exp.dtype"])])

        info = MODELS[str(p["exp.model"])]
        # tensorflow.data_format: auto and channels_last are NHWC, the only layout the
        # zoo's Keras models are written in (config/frameworks/tensorflow.py says why).
        self.layout = image_layout(info.input_shape, channels_last=True)
        self.training = p["exp.phase"] == "training"
        self.xla = bool(p["tensorflow.xla"])
        self.workload = make_workload(info, int(p["exp.image_size"]), int(p["exp.seq_len"]))
        self.replica_batch = int(p["exp.replica_batch"])
        self.losses: list[tf.Tensor] = []
        self.output: Any = None

        with self._placement():
            self.model = self.workload.build()
            self.num_params = sum(int(v.shape.num_elements()) for v in self.model.trainable_weights)
            self.batch = self._synthetic_batch()
            if self.training:
                self.optimizer = self._optimizer(
                    str(p["tensorflow.optimizer"]), str(p["exp.dtype"])
                )
            self.function = self._train_function() if self.training else self._infer_function()
        with self._calling():
            # The first call traces (and compiles): timed here, never in a batch.
            start = time.perf_counter()
            self._wait(self.function(*self.batch))
            self.compile_time = time.perf_counter() - start
            concrete = self.function.get_concrete_function(*self.batch)
        # On one device a step calls the traced graph itself: the tf.function would
        # look its trace up again, inside a device scope entered for the purpose, on
        # every step. The graph's operations keep the device they were traced on.
        self.call: Callable[..., Any] = self.function if self.strategy is not None else concrete
        flops = graph_flops(concrete.graph)
        self.flops = flops / (self.replica_batch * self.num_replicas) if flops else None

    @contextlib.contextmanager
    def _placement(self) -> Iterator[None]:
        """Where variables and data are made: every replica's device under the strategy,
        else the one device."""
        if self.strategy is not None:
            with self.strategy.scope():
                yield
        else:
            with tf.device(self.devices[0]):
                yield

    def _calling(self) -> contextlib.AbstractContextManager[Any]:
        """The device scope the step is called (and so traced) in: always the same one,
        since a ``tf.function`` traces again for a new device scope."""
        if self.strategy is not None:
            return contextlib.nullcontext()
        scope: contextlib.AbstractContextManager[Any] = tf.device(self.devices[0])
        return scope

    def _synthetic_batch(self) -> Batch:
        if self.strategy is None:
            return self.workload.synthetic_batch(self.replica_batch)
        devices = self.strategy.extended.worker_devices

        def on_replica(context: Any) -> Batch:
            with tf.device(devices[context.replica_id_in_sync_group]):
                return self.workload.synthetic_batch(self.replica_batch)

        batch: Batch = self.strategy.experimental_distribute_values_from_function(on_replica)
        return batch

    def _optimizer(self, name: str, dtype: str) -> keras.optimizers.Optimizer:
        rate = self.workload.learning_rates[name]
        optimizer = (
            keras.optimizers.Adam(learning_rate=rate)
            if name == "adam"
            else keras.optimizers.SGD(learning_rate=rate, momentum=0.9)
        )
        if dtype == "float16":
            # float16 gradients underflow without it; bfloat16 has float32's range.
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        # Its slots (momentum, moments) made now: made in the first call instead, they
        # would make tf.function trace the step a second time.
        optimizer.build(self.model.trainable_variables)
        return optimizer

    def _distributed(self, replica_step: Callable[..., Any]) -> Callable[..., Any]:
        """``replica_step`` on every replica, its results summed (a loss) or left per
        replica (outputs); the identity on one device."""
        strategy = self.strategy
        if strategy is None:
            return replica_step

        def step(*args: Any) -> Any:
            result = strategy.run(replica_step, args=args)
            if self.training:
                return strategy.reduce(tf.distribute.ReduceOp.SUM, result, axis=None)
            return result

        return step

    def _compile(self, step: Callable[..., Any]) -> Any:
        """``step`` as one ``tf.function``, compiled whole by XLA with ``tensorflow.xla``
        on one device. With several replicas XLA cannot compile the whole step (it
        would read every replica's variables from one device, and hold the all-reduce
        of the gradients): each replica's part is compiled instead (``_replica_jit``)."""
        whole = self.xla and self.strategy is None
        return tf.function(step, jit_compile=whole, autograph=False)

    def _replica_jit(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """A replica's part of the step, XLA-compiled when ``_compile`` cannot compile
        the whole step; else unchanged."""
        if self.xla and self.strategy is not None:
            compiled: Callable[..., Any] = tf.function(
                function, jit_compile=True, autograph=False
            )
            return compiled
        return function

    def _train_function(self) -> Any:
        model, optimizer, workload = self.model, self.optimizer, self.workload
        replicas = float(self.num_replicas)
        variables = model.trainable_variables

        def gradients(inputs: tf.Tensor, targets: tf.Tensor) -> tuple[tf.Tensor, list[Any]]:
            with tf.GradientTape() as tape:
                outputs = model(inputs, training=True)
                # Each replica's share of the mean over the global batch: the optimizer
                # sums the gradients of all replicas.
                loss = workload.loss(outputs, targets) / replicas
                scaled = optimizer.scale_loss(loss)
            return loss, tape.gradient(scaled, variables)

        compiled = self._replica_jit(gradients)
        agree = self.num_replicas > 1 and isinstance(
            optimizer, keras.optimizers.LossScaleOptimizer
        )

        def replica_step(inputs: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
            loss, grads = compiled(inputs, targets)
            if agree:
                grads = _agree_on_overflow(grads)
            optimizer.apply_gradients(zip(grads, variables, strict=True))
            return loss

        return self._compile(self._distributed(replica_step))

    def _infer_function(self) -> Any:
        model = self.model

        def replica_step(inputs: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
            return model(inputs, training=False)

        return self._compile(self._distributed(self._replica_jit(replica_step)))

    def _wait(self, output: Any) -> None:
        """Block until ``output`` and all work before it are computed.

        A GPU runs its kernels asynchronously: wait for every device. On the CPU,
        TensorFlow executes synchronously (its default), so a step has finished when
        its call returns; a training step's loss is still read back (four bytes) so
        that an asynchronous executor could not hide work either. An inference
        output is not: copying it to NumPy would add its size to the step's time.
        """
        if self.gpus:
            tf.test.experimental.sync_devices()
        elif self.training:
            output.numpy()

    def _record_loss(self, index: int, loss: tf.Tensor) -> None:
        # Kept on the device and read once at the end: reading each loss back would
        # synchronise the device inside the timed loop.
        self.losses.append(loss)

    def step(self, index: int) -> None:
        output = self.call(*self.batch)
        self.output = output
        if self.training:
            self._record_loss(index, output)

    def synchronize(self) -> None:
        if self.output is not None:
            self._wait(self.output)

    def finish(self, num_steps: int) -> dict[str, Any]:
        results: dict[str, Any] = {"results.compile_time": self.compile_time}
        if not self.losses or not num_steps:
            return results
        losses = tf.stack(self.losses[:num_steps]).numpy()
        bad = np.flatnonzero(~np.isfinite(losses))
        if len(bad):
            raise NonFiniteLoss(int(bad[0]))
        results["results.loss_last"] = float(losses[-1])
        results["results.loss_data"] = [float(loss) for loss in losses]
        return results

    def throughput_unit(self) -> tuple[str, float]:
        return self.workload.throughput_unit()

    def flops_per_sample(self) -> float | None:
        return self.flops

    def environment(self) -> dict[str, Any]:
        build = tf.sysconfig.get_build_info()
        env: dict[str, Any] = {
            "sys.framework_version": tf.__version__,
            "sys.tensorflow_version": tf.__version__,
            "sys.keras_version": keras.__version__,
            "sys.tensorflow_xla": self.xla,
            "sys.framework_build": {
                "cuda": build.get("cuda_version"),
                "cudnn": build.get("cudnn_version"),
                "xla": self.xla,
                "dtype_policy": keras.config.dtype_policy().name,
                "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
                "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
                "num_replicas": self.num_replicas,
            },
            "sys.model_params": self.num_params,
        }
        if self.gpus:
            gpus = tf.config.list_physical_devices("GPU")
            first = int(self.gpus.split(",")[0])
            details = tf.config.experimental.get_device_details(gpus[first]) if gpus else {}
            env["hw.device_name"] = str(details.get("device_name", "gpu"))
            capability = details.get("compute_capability")
            if capability:
                env["hw.device_capability"] = ".".join(map(str, capability))
        else:
            env["hw.device_name"] = "cpu"
        if self.layout is not None:
            env["sys.layout"] = self.layout
        return env

    def teardown(self) -> None:
        # Frees the graphs and variables of this experiment (they matter to the tests,
        # which run several experiments in one process), then puts back the dtype
        # policy, which clear_session resets to Keras's default.
        self.losses = []
        self.output = None
        keras.backend.clear_session()
        previous = getattr(self, "previous_policy", None)
        if previous is not None:
            keras.config.set_dtype_policy(previous)


BACKEND = TensorFlowBackend
