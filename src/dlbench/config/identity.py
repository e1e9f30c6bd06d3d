"""What makes two experiments one configuration, stated once.

Two experiments (or records) are measurements of one configuration when they agree
on every parameter that defines the measurement: the registry's ``identity``
parameters (where the log goes or how often to retry does not change the number),
of their own framework (``fake.step_ms`` says nothing about a PyTorch experiment).
Everything that groups experiments asks :func:`identity_parameters` which those are,
when it groups them, so a framework or model registered after import counts:

- ``exp.id`` (:mod:`dlbench.config.resolve`): every identity parameter, derived ones
  included, and the user's own values (``user.*`` and the DLBS names carried as
  written), hashed by :func:`configuration_hash`;
- the out-of-memory memo (:mod:`dlbench.launch.oom_memo`): the same, less the batch size
  and the timing loop's counts;
- a history's series (:mod:`dlbench.results.history.records`): the parameters a user
  sets (not derived), ``user.*`` labels, hashed by :func:`configuration_hash`;
- the reports' rows and cells and the A/B comparison (:mod:`dlbench.report`): the
  parameters a user sets, without labels (``user.run=[1,2,3]`` asks for repeats, which
  a report averages), less the axis of the table or the thing being compared.

Where they differ it is by an argument of the one function, never by a list of
names of their own.

Example::

    identity_parameters({"exp.model": "resnet50", "exp.log_file": "a.log",
                         "user.run": 1}, user=True)   # ['exp.model', 'user.run']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.config.dlbs_names import is_dlbs_name
from dlbench.config.external import SOURCES as MODEL_SOURCES
from dlbench.config.registry import REGISTRY, USER_NAMESPACE

__all__ = ["belongs_to", "configuration_hash", "identity_parameters", "varying_parameters"]


def belongs_to(name: str, framework: Any, model: Any = None) -> bool:
    """Whether parameter ``name`` concerns an experiment of ``framework`` (and of
    ``model``, where given): every parameter does except those in another framework's
    namespace and those of a model source (``hf.*``) when the model is not from it.

    >>> belongs_to("fake.step_ms", "pytorch"), belongs_to("exp.model", "pytorch")
    (False, True)
    >>> belongs_to("hf.hidden_size", "pytorch", "resnet50")
    False
    """
    namespace = name.split(".", 1)[0]
    if namespace in FRAMEWORKS:
        return bool(namespace == framework)
    if namespace in MODEL_SOURCES:
        return model is None or str(model).startswith(f"{namespace}:")
    return True


def configuration_hash(values: Mapping[str, Any]) -> str:
    """First 16 hex digits of sha256 over the canonical JSON of ``values`` (keys
    sorted, no spaces): ``exp.id`` of an experiment's identity values, a history's key
    of a configuration."""
    canonical = json.dumps(dict(values), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def identity_parameters(
    names: Iterable[str] | None = None,
    *,
    framework: Any = None,
    model: Any = None,
    exclude: Collection[str] = (),
    derived: bool = False,
    user: bool = False,
    carried: bool = False,
) -> list[str]:
    """The parameters that make experiments one configuration, among ``names`` (every
    declared parameter when None): the registry's ``identity`` parameters, in registry
    order, then the user's own names among ``names`` in their order.

    ``framework``: leave out other frameworks' parameters (None keeps every one);
    ``model``: and a model source's (``hf.*``) unless the model is from it.
    ``exclude``: names left out, such as a table's axis or the parameter an A/B
    comparison sets apart. ``derived``: keep the identity parameters computed from
    others (``exp.effective_batch``, ``exp.device_type``), which follow the ones a user
    sets. ``user``: keep ``user.*`` names. ``carried``: keep the DLBS names dlbench
    carries as written (``exp.proj``: see :mod:`dlbench.config.dlbs_names`).

    >>> identity_parameters(["exp.log_file", "exp.effective_batch", "exp.replica_batch"])
    ['exp.replica_batch']
    >>> identity_parameters(["fake.step_ms", "exp.dtype"], framework="pytorch")
    ['exp.dtype']
    """
    excluded = set(exclude)
    wanted = None if names is None else dict.fromkeys(names)
    chosen = [
        p.name for p in REGISTRY
        if p.identity and (derived or not p.derived) and p.name not in excluded
        and (wanted is None or p.name in wanted)
        and (framework is None or belongs_to(p.name, framework, model))
    ]
    if wanted is not None and (user or carried):
        chosen += [
            name for name in wanted
            if name not in excluded and name not in REGISTRY
            and ((user and name.startswith(USER_NAMESPACE) and len(name) > len(USER_NAMESPACE))
                 or (carried and is_dlbs_name(name)))
        ]
    return chosen


def varying_parameters(experiments: Sequence[Mapping[str, Any]]) -> list[str]:
    """The parameters that tell a sweep's experiments apart: those that define the
    measurement or are the user's own, are not derived, and take more than one value
    among the experiments that have them (a framework's own parameters are absent from
    another framework's experiments, which ``exp.framework`` already tells apart).
    In the order they first appear.

    >>> varying_parameters([{"exp.framework": "pytorch", "pytorch.seed": 0},
    ...                     {"exp.framework": "fake", "fake.step_ms": 5}])
    ['exp.framework']
    """
    present: dict[str, None] = {}
    for experiment in experiments:
        present.update(dict.fromkeys(experiment))
    # The number of replicas is derived, yet it is what scaling studies vary.
    labels = {*identity_parameters(present, user=True, carried=True), "exp.num_replicas"}
    names = [name for name in present if name in labels]
    return [
        name for name in names
        if len({json.dumps(e[name], sort_keys=True) for e in experiments if name in e}) > 1
    ]
