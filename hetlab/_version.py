"""hetlab's version: the one place it is written.

``pyproject.toml`` reads it for the package metadata (``[tool.setuptools.dynamic]``) and
``hetlab.__version__`` re-exports it, so the two cannot disagree.
"""

__version__ = "0.1.0"
