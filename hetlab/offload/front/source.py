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
from .extrema import fold_extrema
from .genexprs import sums_as_loops
from .indices import substitute_indices
from .induction import substitute_counters
from .inline import inline_helpers
from .iterables import range_for_iterables
from .views import substitute_views
from .whiles import whiles_as_fors

__all__ = ["FunctionSource", "parse_def", "read_function", "source_of_text"]


@dataclass(frozen=True)
class FunctionSource:
    """A function's dedented source, its parsed ``def`` and the names it sees from outside."""

    fn: Callable[..., Any]
    name: str
    text: str
    tree: ast.FunctionDef
    namespace: dict[str, Any]
    first_line: int
    #: why the function as a whole is run as written, never compiled (``"unsupported: … at
    #: line N"``): a signature or construct numba would compile to something else, or not at
    #: all (:func:`whole_function_refusals`)
    refusals: tuple[str, ...] = ()
    #: the callable to run as written (a bound method stays bound); ``fn`` when None
    original: Callable[..., Any] | None = None

    @property
    def params(self) -> list[str]:
        """Positional parameter names, in order (a bound method's first one, ``self``, not
        counted: the caller does not pass it)."""
        a = self.tree.args
        names = [p.arg for p in (*a.posonlyargs, *a.args)]
        return names[1:] if isinstance(self.original, types.MethodType) else names

    @property
    def call(self) -> Callable[..., Any]:
        """The function as the caller calls it (bound method included)."""
        return self.original if self.original is not None else self.fn


def read_function(fn: Any) -> FunctionSource:
    """Return the :class:`FunctionSource` of a plain Python function.

    Functions numba cannot compile as they are called (``*args``, ``**kwargs``,
    keyword-only parameters, bound methods, generators, ``try`` statements) are read too:
    :attr:`FunctionSource.refusals` says why they run as written.

    Raises
    ------
    InvalidInputError
        ``fn`` is not a Python function (a built-in, a C function, a class, a lambda) or its
        source cannot be read (defined in an interactive string).
    """
    original = fn if isinstance(fn, types.MethodType) else None
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
        closure = inspect.getclosurevars(fn)
        nonlocals = dict(closure.nonlocals)
    except (ValueError, TypeError):  # an empty cell (a closure variable not yet bound)
        nonlocals = {}
    return source_of_text(fn, text, {**fn.__globals__, **nonlocals}, first, original)


def parse_def(text: str, name: str) -> ast.FunctionDef:
    """The first ``def`` of ``text`` (decorators dropped), parsed afresh.

    Raises
    ------
    InvalidInputError
        ``text`` does not parse or holds no ``def``.
    """
    try:
        module = ast.parse(text)
    except SyntaxError as exc:  # e.g. a def nested in an expression
        raise InvalidInputError(f"offload: cannot parse the source of {name!r}: "
                                f"{exc.msg}.") from None
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        raise InvalidInputError(f"offload: no def statement found in the source of {name!r}.")
    tree = defs[0]
    tree.decorator_list = []
    return tree


def source_of_text(fn: Callable[..., Any], text: str, namespace: dict[str, Any],
                   first: int, original: Callable[..., Any] | None = None) -> FunctionSource:
    """The :class:`FunctionSource` of ``fn`` whose dedented source is ``text``.

    ``namespace`` holds the names the function sees from outside (globals, closure values);
    ``first`` is the file line of its ``def`` (line numbers in reasons are the file's). The
    front passes (helpers that write their arguments inlined, sums, while loops, extrema,
    iterables, counters, row views, index scalars) run here.
    """
    tree = parse_def(text, fn.__name__)
    inline_helpers(tree, namespace)  # ``_scale_row(A[i])`` writing its argument → its body
    sums_as_loops(tree, namespace)  # ``sum(e for k in …)`` → an accumulating loop (.genexprs)
    whiles_as_fors(tree)  # ``i = 0; while i < n: …; i += 1`` → ``for i in range`` (.whiles)
    fold_extrema(tree, namespace)  # ``if e > m: m = e`` → ``m = max(m, e)`` (.extrema)
    range_for_iterables(tree, namespace)  # ``for i, v in enumerate(x)`` → range (.iterables)
    substitute_counters(tree, namespace)  # ``k += 1`` in step with the loop → i (.induction)
    substitute_views(tree)  # ``row = A[i]; row[j] = …`` → ``A[i, j] = …`` (.views)
    substitute_indices(tree)  # ``idx = i * n + j; out[idx]`` → ``out[i * n + j]`` (.indices)
    refusals = whole_function_refusals(tree, first, bound=original is not None)
    return FunctionSource(fn, fn.__name__, text, tree, namespace, first, refusals, original)


def _own_nodes(tree: ast.FunctionDef) -> list[ast.AST]:
    """Nodes of ``tree``'s body, not descending into nested functions, lambdas or classes."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def whole_function_refusals(tree: ast.FunctionDef, first_line: int,
                            bound: bool = False) -> tuple[str, ...]:
    """Why a function cannot be compiled as a whole, one ``"unsupported: <construct> at line
    N"`` each: what numba would reject or compile with other semantics than Python's.

    Parameters
    ----------
    tree : ast.FunctionDef
        The function's definition (line numbers relative to its source).
    first_line : int
        Line of the ``def`` in its file (line numbers reported are the file's).
    bound : bool
        The function is called as a bound method (its ``self`` is a Python object).

    Examples
    --------
    >>> import ast
    >>> t = ast.parse("def f(a, *, k=1):\\n    yield a").body[0]
    >>> for why in whole_function_refusals(t, 10):
    ...     print(why.split(" (")[0])
    unsupported: keyword-only parameter k at line 10
    unsupported: generator function at line 11
    """
    def at(node: ast.AST) -> int:
        return first_line + getattr(node, "lineno", 1) - 1

    out: list[str] = []
    a = tree.args
    line = at(tree)
    if bound:
        out.append(f"unsupported: bound method at line {line} (its self is a Python object "
                   "numba cannot type)")
    if a.vararg is not None:
        out.append(f"unsupported: *{a.vararg.arg} parameter at line {line} (a compiled variant "
                   "takes a fixed list of positional arguments)")
    if a.kwarg is not None:
        out.append(f"unsupported: **{a.kwarg.arg} parameter at line {line} (a compiled "
                   "variant takes positional arguments only)")
    for k in a.kwonlyargs:
        out.append(f"unsupported: keyword-only parameter {k.arg} at line {line} (a compiled "
                   "variant takes positional arguments only)")
    nodes = sorted(_own_nodes(tree), key=lambda n: getattr(n, "lineno", 0))
    seen: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and "yield" not in seen:
            seen.add("yield")
            out.append(f"unsupported: generator function at line {at(node)} (yield: a "
                       "compiled variant would return a numba generator, not Python's)")
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) \
                and "try" not in seen:
            seen.add("try")
            out.append(f"unsupported: try statement at line {at(node)} (numba raises other "
                       "exceptions than Python, e.g. none for an index out of range)")
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await)) and "async" not in seen:
            seen.add("async")
            out.append(f"unsupported: async code at line {at(node)}")
    return tuple(out)
