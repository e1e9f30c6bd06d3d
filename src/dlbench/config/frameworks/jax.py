"""JAX's declaration; its backend is :mod:`dlbench.backends.jax`."""

from __future__ import annotations

from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.params import OPTIMIZER, SEED, Param
from dlbench.config.zoo import zoo_builders

FRAMEWORK = FrameworkInfo(
    id="jax",
    title="JAX (Flax, Optax)",
    module="dlbench.backends.jax",
    requires=("jax", "flax", "optax"),
    install_hint="pip install dlbench[jax]",
    description="JAX with Flax models and Optax optimizers; jit-compiled steps.",
    data_parallel="in_process",
    # jax.profiler in the worker (dlbench.backends.jax.extras).
    profilers=("jax",),
    devices="dlbench.backends.jax:available_devices",
    # every model whose zoo entry names a jax builder (dlbench.config.zoo)
    builders=zoo_builders("jax"),
    params=(
        OPTIMIZER.param("jax.optimizer",
                        "Optimizer of the training phase (Optax): `sgd` (momentum 0.9) or "
                        "`adam`."),
        SEED.param("jax.seed",
                   "Seed of the initial weights, the synthetic data and the dropout masks."),
        Param("jax.prng_impl", "str", "threefry2x32",
              "JAX's random number generator, which makes dropout's masks in every training "
              "step: `threefry2x32` (JAX's default), or the cheaper `rbg`/`unsafe_rbg`.",
              choices=("threefry2x32", "rbg", "unsafe_rbg")),
        Param("jax.preallocate", "bool", True,
              "Let JAX reserve most of a GPU's memory when it starts (its default); false sets "
              "XLA_PYTHON_CLIENT_PREALLOCATE=false, so memory use grows as needed, as "
              "PyTorch's does. No effect on CPU."),
    ),
)
