"""Values that become one word of another program's command line or script.

A container parameter reaches an engine's command line (``docker run``, ``podman run``,
``apptainer exec``), ``exp.rendezvous`` torchrun's, ``exp.out_dir`` a Slurm job script,
each as one argument: nothing passes through a shell, but the program that reads the
word still splits it at its own separators or takes it as one of its options. Each
check here raises ValueError saying why a value cannot be such a word; the plan's
checks (:mod:`dlbench.config.validate`) and the launchers name the parameter.

Example::

    check_container_image("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "docker")  # fine
    check_container_image("--privileged", "docker")  # ValueError
"""

from __future__ import annotations

import os
import re
import unicodedata

__all__ = ["APPTAINER_IMAGE_SUFFIXES", "check_bind_path", "check_container_image",
           "check_container_option", "check_container_python", "control_character",
           "is_image_reference", "is_rendezvous_endpoint"]

#: Unicode categories no value passed to another program may hold: controls (newline,
#: carriage return, NUL, escape...), lone surrogates (bytes of a name that are not UTF-8)
#: and line and paragraph separators.
_BREAKING = frozenset({"Cc", "Cs", "Zl", "Zp"})

# docker's image reference grammar (the distribution project's reference/regexp.go):
# [REGISTRY[:PORT]/]NAME[:TAG][@DIGEST], path components in lowercase.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = (rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
           r"(?::[0-9]+)?")
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?")
#: Where apptainer takes an image from besides a file: ``SCHEME://...`` and ``SCHEME:...``.
_APPTAINER_URI = re.compile(r"(?:library|docker|shub|oras|https?)://[^\s]+"
                            r"|(?:docker-archive|docker-daemon|oci|oci-archive):[^\s]+")
#: The suffixes of apptainer's image files.
APPTAINER_IMAGE_SUFFIXES = (".sif", ".simg")


def control_character(text: str) -> str:
    """The first character of ``text`` that breaks a line or a terminal (a control, a
    lone surrogate, a line or paragraph separator), escaped, or empty when it has none.

    >>> control_character("runs/x\\n$(touch pwned)"), control_character("runs/ok")
    ('\\\\n', '')
    """
    for char in text:
        if unicodedata.category(char) in _BREAKING:
            return repr(char)[1:-1]
    return ""


def is_image_reference(text: str) -> bool:
    """Whether ``text`` is an image reference in docker's grammar.

    >>> is_image_reference("nvcr.io/nvidia/pytorch:24.01-py3"), is_image_reference("--privileged")
    (True, False)
    """
    return len(text) <= 512 and _IMAGE_REFERENCE.fullmatch(text) is not None


def check_container_image(image: str, engine: str) -> None:
    """``image`` can be what ``engine`` runs: a docker image reference
    (``[REGISTRY[:PORT]/]NAME[:TAG][@DIGEST]``); for apptainer also an image file
    (``.sif``, ``.simg``, or any file that exists) or a URI (``docker://``, ``library://``,
    ``oras://``...). Never a word that starts with ``-``. ValueError saying why not."""
    char = control_character(image)
    if char:
        raise ValueError(f"holds a control character ({char})")
    if image.startswith("-"):
        raise ValueError("starts with '-', which the engine would read as an option")
    if is_image_reference(image):
        return
    if engine == "apptainer":
        scheme, _, rest = image.partition("://")
        if scheme == "docker" and not is_image_reference(rest):
            raise ValueError("docker://... must name an image reference, e.g. "
                             "docker://nvcr.io/nvidia/pytorch:24.01-py3")
        if (_APPTAINER_URI.fullmatch(image) or image.endswith(APPTAINER_IMAGE_SUFFIXES)
                or os.path.isfile(image)):
            return
        raise ValueError("expected an image reference ([REGISTRY/]NAME[:TAG][@DIGEST], "
                         "lowercase), an image file (.sif) or a URI such as docker://NAME "
                         "or library://PATH")
    raise ValueError("expected an image reference: [REGISTRY[:PORT]/]NAME[:TAG][@DIGEST] "
                     "with a lowercase NAME, e.g. pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime")


def check_container_option(option: str) -> None:
    """``option`` is one option word of an engine's run/exec command: it starts with ``-``
    (a value goes in the same word, ``--shm-size=8g``), is not the ``--`` that ends the
    options, and holds no control character. ValueError saying why not."""
    char = control_character(option)
    if char:
        raise ValueError(f"{option!r} holds a control character ({char})")
    if not option.startswith("-") or option in ("-", "--"):
        raise ValueError(f"{option!r} is not an option: each item is one option that starts "
                         "with '-', its value in the same item, e.g. '--shm-size=8g'")


def check_container_python(python: str) -> None:
    """``python`` can be the command that the container runs: a program name or path
    that does not start with ``-``, without control characters. ValueError if not."""
    char = control_character(python)
    if char:
        raise ValueError(f"holds a control character ({char})")
    if not python or python.startswith("-"):
        raise ValueError("expected the interpreter's name or path inside the image, "
                         "e.g. python3 or /opt/conda/bin/python")


#: torchrun's rendezvous endpoint: a host name or address, a colon, a port; never an
#: option (a leading `-`), a space or a line break.
_ENDPOINT = re.compile(r"[A-Za-z0-9_.\[\]:][A-Za-z0-9_.\-\[\]:]*:[0-9]+")


def is_rendezvous_endpoint(text: str) -> bool:
    """Whether ``text`` is ``HOST:PORT`` that torchrun's ``--rdzv-endpoint=`` can take.

    >>> is_rendezvous_endpoint("node01:29500"), is_rendezvous_endpoint("node01:29500\\n")
    (True, False)
    """
    return _ENDPOINT.fullmatch(text) is not None


def check_bind_path(path: str) -> None:
    """``path`` can be one side of a mount: docker's ``--volume`` splits at ``:``, and
    apptainer's ``--bind`` at ``,`` and ``:``. ValueError saying why not."""
    char = control_character(path)
    if char:
        raise ValueError(f"{path!r} holds a control character ({char})")
    for separator in (",", ":"):
        if separator in path:
            raise ValueError(f"{path!r} holds a {separator!r}, which the engines' mount "
                             "options read as a separator; rename or link the folder")
