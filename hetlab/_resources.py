"""Where hetlab's shipped files live, in a git checkout and in an installed wheel.

Three folders ship with hetlab: ``overlays/`` (overlay manifests, HLS C++, the shared build
scripts ``overlays/_build/``), ``data/`` (the MiniLM sentence lists, the recordings in
``data/recorded/``) and ``notebooks/`` (the series). Their sources are the top-level folders
of the repository. A wheel holds copies made when it is built (``setup.py``'s ``build_py``
copies them to ``hetlab/_data/<folder>``); a checkout, an editable install included, reads
the top-level folders themselves. Every module that reads those files finds them here.

Examples
--------
>>> from hetlab._resources import resource_dir
>>> (resource_dir("overlays") / "fps" / "overlay.toml").is_file()
True
>>> resource_dir("data").name
'data'
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import HetlabError, InvalidInputError

__all__ = ["FOLDERS", "resource_dir", "packaged_dir", "checkout_dir", "copy_notebooks"]

#: the folders that ship with hetlab, by their name in the repository
FOLDERS = ("overlays", "data", "notebooks")

_PACKAGE = Path(__file__).resolve().parent


def packaged_dir() -> Path:
    """``hetlab/_data``: where a wheel holds its copies of :data:`FOLDERS`."""
    return _PACKAGE / "_data"


def checkout_dir() -> Path | None:
    """The repository root when ``hetlab`` is imported from a checkout, else None.

    A checkout is recognised by ``pyproject.toml`` beside the ``hetlab`` package.
    """
    root = _PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() else None


def resource_dir(folder: str) -> Path:
    """The folder ``folder`` (one of :data:`FOLDERS`) as this installation holds it.

    Parameters
    ----------
    folder : {"overlays", "data", "notebooks"}
        The folder's name in the repository.

    Returns
    -------
    pathlib.Path
        ``<checkout>/<folder>`` when hetlab is imported from a checkout (an editable install
        included: the sources win over any stale copy), else ``hetlab/_data/<folder>`` (an
        installed wheel). The path is returned even when the folder is missing, so that a
        caller's "not found" message names the place this installation should hold it.

    Raises
    ------
    InvalidInputError
        ``folder`` is not one of :data:`FOLDERS`.
    """
    if folder not in FOLDERS:
        raise InvalidInputError(
            f"resource_dir: folder must be one of {list(FOLDERS)}; got {folder!r}."
        )
    root = checkout_dir()
    if root is not None and (root / folder).is_dir():
        return root / folder
    return packaged_dir() / folder


def copy_notebooks(dest: str | os.PathLike[str], *, force: bool = False) -> list[Path]:
    """Copy the notebook series (every ``*.ipynb`` of :func:`resource_dir` ``("notebooks")``)
    into ``dest``, as ``pynq get-notebooks`` does; ``hetlab notebooks DEST`` calls this.

    Parameters
    ----------
    dest : path
        Folder to copy into; created (with its parents) when missing.
    force : bool, default False
        Overwrite notebooks ``dest`` already holds. Without it nothing is copied when any
        would be overwritten (a learner's edited notebook is never lost).

    Returns
    -------
    list of pathlib.Path
        The notebooks written, sorted by name.

    Raises
    ------
    InvalidInputError
        ``dest`` is a file, or holds notebooks of the series and ``force`` is False.
    HetlabError
        This installation holds no notebooks.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     names = [p.name for p in copy_notebooks(tmp)]
    >>> names[0]
    '00-tour.ipynb'
    """
    src = resource_dir("notebooks")
    series = sorted(src.glob("*.ipynb"))
    if not series:
        raise HetlabError(
            f"notebooks: this installation holds no notebooks (looked in {src}); reinstall "
            "hetlab from a wheel built by `python -m build`, or run from a git checkout."
        )
    out = Path(dest)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(
            f"notebooks: dest must be a folder; got the file {str(out)!r}. Choose a folder name."
        )
    clash = [nb.name for nb in series if (out / nb.name).exists()]
    if clash and not force:
        raise InvalidInputError(
            f"notebooks: dest already holds {', '.join(clash)}; got dest={str(out)!r}. Pass "
            "--force (force=True) to overwrite them, or choose another folder."
        )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for nb in series:
        shutil.copyfile(nb, out / nb.name)
        written.append(out / nb.name)
    return written
