"""TensorFlow's declaration; its backend is :mod:`dlbench.backends.tensorflow`."""

from __future__ import annotations

from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.params import COMPILE, INTER_OP_THREADS, OPTIMIZER, SEED, THREADS, Param
from dlbench.config.zoo import zoo_builders

FRAMEWORK = FrameworkInfo(
    id="tensorflow",
    title="TensorFlow (Keras 3)",
    module="dlbench.backends.tensorflow",
    requires=("tensorflow", "keras"),
    install_hint="pip install dlbench[tensorflow]",
    description="TensorFlow with Keras 3 models; tf.function-compiled steps.",
    data_parallel="in_process",
    # tf.profiler in the worker (dlbench.backends.tensorflow.extras).
    profilers=("tensorflow",),
    devices="dlbench.backends.tensorflow:available_devices",
    # every model whose zoo entry names a tensorflow builder (dlbench.config.zoo)
    builders=zoo_builders("tensorflow"),
    params=(
        OPTIMIZER.param("tensorflow.optimizer",
                        "Optimizer of the training phase: `sgd` (momentum 0.9) or `adam`, with "
                        "PyTorch's learning rates."),
        COMPILE.param("tensorflow.xla",
                      "Compile the step with XLA (tf.function(jit_compile=True)); compilation "
                      "happens at set-up and is reported as results.compile_time."),
        THREADS.param("tensorflow.num_threads",
                      "Intra-op CPU threads (tf.config.threading); 0 keeps TensorFlow's "
                      "default."),
        INTER_OP_THREADS.param("tensorflow.inter_op_threads",
                               "Inter-op CPU threads: independent operations run at once; 0 "
                               "keeps TensorFlow's default."),
        Param("tensorflow.memory_growth", "bool", False,
              "Let TensorFlow take GPU memory as it needs it instead of reserving nearly all "
              "of it at start-up (GPU only), so that the monitor's memory use is the model's."),
        # NHWC is TensorFlow's default and its documented practice on GPUs in mixed
        # precision (Tensor Cores take NHWC); its CPU kernels run NHWC only
        # (Conv2D refuses NCHW there). The zoo's Keras models are written NHWC, so
        # channels_first is not offered: it would run a different program, not a
        # different layout of the same one.
        Param("tensorflow.data_format", "str", "auto",
              "Layout of images and activations: `auto` is channels_last (NHWC), "
              "TensorFlow's default and best practice on CPU and GPU; recorded as "
              "sys.layout.", choices=("auto", "channels_last")),
        SEED.param("tensorflow.seed",
                   "Seed of the initial weights and of the synthetic data "
                   "(keras.utils.set_random_seed)."),
    ),
)
