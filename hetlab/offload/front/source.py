"""Read a Python function's source into an AST, with clear errors when it is not available."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidInputError

__all__ = ["FunctionSource", "read_function"]


@dataclass(frozen=True)
class FunctionSource:
    """A function's dedented source, its parsed ``def`` and the names it sees from outside."""

    fn: Callable[..., Any]
    name: str
    text: str
    tree: ast.FunctionDef
    namespace: dict[str, Any]
    first_line: int

    @property
    def params(self) -> list[str]:
        """Positional parameter names, in order."""
        a = self.tree.args
        return [p.arg for p in (*a.posonlyargs, *a.args)]


def read_function(fn: Any) -> FunctionSource:
    """Return the :class:`FunctionSource` of a plain Python function.

    Raises
    ------
    InvalidInputError
        ``fn`` is not a Python function (a built-in, a C function, a class, a lambda) or its
        source cannot be read (defined in an interactive string), or it takes ``*args``,
        ``**kwargs`` or keyword-only arguments.
    """
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    py_func = getattr(fn, "py_func", None)  # a numba dispatcher: analyze the Python function
    if py_func is not None:
        fn = py_func
    if not isinstance(fn, types.FunctionType):
        raise InvalidInputError(
            f"offload: fn must be a Python function defined with def; got {type(fn).__name__} "
            f"{getattr(fn, '__name__', fn)!r} (built-ins and C functions have no Python source).")
    if fn.__name__ == "<lambda>":
        raise InvalidInputError("offload: fn must be a function defined with def; got a lambda "
                                "(write it as a def in a module or notebook cell).")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise InvalidInputError(
            f"offload: the source of {fn.__name__!r} is not available ({exc}); define it in a "
            "file or a notebook cell.") from None
    text = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(text)
    except SyntaxError as exc:  # e.g. a def nested in an expression
        raise InvalidInputError(f"offload: cannot parse the source of {fn.__name__!r}: "
                                f"{exc.msg}.") from None
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        raise InvalidInputError(f"offload: no def statement found in the source of "
                                f"{fn.__name__!r}.")
    tree = defs[0]
    a = tree.args
    if a.vararg or a.kwarg or a.kwonlyargs:
        raise InvalidInputError(f"offload: {fn.__name__} must take positional parameters only; "
                                "got *args, **kwargs or keyword-only parameters.")
    tree.decorator_list = []
    closure = inspect.getclosurevars(fn)
    namespace = {**fn.__globals__, **closure.nonlocals}
    return FunctionSource(fn, fn.__name__, text, tree, namespace, first)
