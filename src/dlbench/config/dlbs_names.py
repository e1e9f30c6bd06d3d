"""DLBS's parameter names that dlbench accepts without using them, and DLBS's older names.

A DLBS config plans in dlbench once its ``exp.framework`` names a framework dlbench
runs. Its names fall in four groups:

- names dlbench declares itself (``exp.model``, ``exp.num_gpus``, ...): used;
- older names of dlbench's own parameters (``exp.device_batch``): renamed when the
  spec is read (:data:`ALIASES`), so setting one sets the other;
- names under the namespace of a framework dlbench does not run (``caffe.*``,
  ``mxnet.*``, ``tensorrt.*``, ...) or in DLBS's ``runtime.`` namespace, DLBS's own
  names dlbench has no use for (``exp.docker_args``, ``exp.proj``), and the names
  DLBS's tutorial and recipe configs made up (``exp.gpu_id``, ``exp.trial``):
  accepted and treated like ``user.*`` names — carried into the experiment and its
  record as written, counted in ``exp.id``, usable in ``${...}`` references — but
  dlbench does nothing with them;
- anything else: refused as a likely typo, as dlbench refuses any unknown name.
"""

from __future__ import annotations

#: Older DLBS names of dlbench parameters, renamed when a spec is read.
ALIASES = {
    "exp.device_batch": "exp.replica_batch",
    "tensorflow.num_intra_threads": "tensorflow.num_threads",
    "tensorflow.num_inter_threads": "tensorflow.inter_op_threads",
    "tensorflow.use_xla": "tensorflow.xla",
}

#: Namespaces of DLBS's frameworks that dlbench does not run, and DLBS's launcher
#: settings (``runtime.``): any name under them is accepted.
FOREIGN_NAMESPACES = (
    "caffe", "bvlc_caffe", "nvidia_caffe", "intel_caffe", "caffe2", "mxnet", "tensorrt",
    "nvcnn", "nvtfcnn", "openvino", "runtime",
)

#: DLBS's own names (its base and framework configs) that dlbench has no use for.
_DLBS_STANDARD = (
    "exp.cuda", "exp.cudnn", "exp.data", "exp.data_store", "exp.device_title",
    "exp.docker_args", "exp.docker_launcher", "exp.framework_commit",
    "exp.framework_family", "exp.framework_ver", "exp.ignore_past_errors",
    "exp.model_opts", "exp.node_id", "exp.node_nic", "exp.proj", "exp.sys_info",
    "exp.use_tensor_core", "exp.disabled",
    "monitor.backend_pid_folder", "monitor.launcher", "monitor.pid_folder",
    "monitor.timeseries",
    "tensorflow.args", "tensorflow.data_dir", "tensorflow.data_name",
    "tensorflow.distortions", "tensorflow.docker_args", "tensorflow.docker_image",
    "tensorflow.env", "tensorflow.git_hashtag", "tensorflow.host_libpath",
    "tensorflow.launcher", "tensorflow.local_parameter_device", "tensorflow.other_args",
    "tensorflow.python_path", "tensorflow.report_interval", "tensorflow.resize_method",
    "tensorflow.use_mkl", "tensorflow.use_nccl", "tensorflow.var_update",
    "pytorch.args", "pytorch.bench_path", "pytorch.cudnn_fastest", "pytorch.data_backend",
    "pytorch.data_dir", "pytorch.data_loader_only", "pytorch.data_shuffle",
    "pytorch.distributed_rank", "pytorch.distributed_rendezvous", "pytorch.docker_args",
    "pytorch.env", "pytorch.host_libpath", "pytorch.host_python_path", "pytorch.launcher",
    "pytorch.num_loader_threads",
)

#: Names DLBS's tutorial and recipe configs made up for their own use.
_DLBS_TUTORIALS = (
    "exp.gpu_id", "exp.gpu_title", "exp.trial", "exp.dlbs_hashtag", "exp.log_root_dir",
    "exp.log_dir", "exp.device_code", "exp.image_tag", "exp.cpu_config", "exp.cpu_opts",
    "exp.vnni_status", "exp.vnni_opts",
)

#: Every exact name of the last group above.
INERT_NAMES = frozenset(_DLBS_STANDARD + _DLBS_TUTORIALS)


def is_dlbs_name(name: str) -> bool:
    """True for a DLBS name that dlbench accepts and carries without using it.

    >>> is_dlbs_name("caffe.fork"), is_dlbs_name("exp.proj"), is_dlbs_name("exp.modle")
    (True, True, False)
    """
    namespace, dot, rest = name.partition(".")
    if not dot or not rest:
        return False
    return namespace in FOREIGN_NAMESPACES or name in INERT_NAMES


def canonical_name(name: str) -> str:
    """``name``, or the dlbench name it is an older DLBS name of.

    >>> canonical_name("exp.device_batch"), canonical_name("exp.model")
    ('exp.replica_batch', 'exp.model')
    """
    return ALIASES.get(name, name)
