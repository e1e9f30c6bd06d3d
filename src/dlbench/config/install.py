"""The install command a message suggests: one that keeps the torch already installed.

A plain ``pip install torchvision`` (or ``timm``, or an extra) lets pip pick the newest
torch the package accepts, and on Linux the default torch is a CUDA build: a
CPU-only environment of about 1 GB becomes one of about 6 GB, and a torch built for
one CUDA version may be replaced by another. Naming the installed version in the
same command (``"torch==2.13.0+cpu"``) makes pip keep it, and resolve the rest
around it. A local build (``+cpu``, ``+cu121``) came from an index of its own; a
package built against torch (torchvision) must come from that index too, or its
compiled parts do not match the installed torch.

The version is read from the installed distribution's metadata
(:func:`importlib.metadata.version`) when the message is made: torch is never
imported for it.

Example::

    install_command("torchvision")
    # 'pip install torchvision "torch==2.13.0+cpu" --index-url <the index torch
    #  2.13.0+cpu came from>'
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_torch() -> str | None:
    """The installed torch's version (``2.13.0+cpu``), or None where there is none."""
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def install_command(packages: str, torch: str | None = "installed") -> str:
    """The command that installs ``packages`` (pip's words: ``torchvision``,
    ``'dlbench[hf]'``) and keeps ``torch`` (a version; by default the installed one,
    None for none): ``pip install PACKAGES "torch==VERSION"``, and for a local build
    an ``--index-url`` to fill in with the index it came from. Without torch,
    ``pip install PACKAGES``.

    >>> install_command("timm", torch="2.5.1")
    'pip install timm "torch==2.5.1"'
    >>> install_command("timm", torch=None)
    'pip install timm'
    >>> install_command("torchvision", torch="2.13.0+cpu")
    'pip install torchvision "torch==2.13.0+cpu" --index-url <the index torch 2.13.0+cpu came from>'
    """
    kept = installed_torch() if torch == "installed" else torch
    if kept is None:
        return f"pip install {packages}"
    command = f'pip install {packages} "torch=={kept}"'
    return command if "+" not in kept else (
        f"{command} --index-url <the index torch {kept} came from>")
