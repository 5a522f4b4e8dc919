"""Vitis-HLS-style C++ for one FPGA candidate nest, and the C-simulation harness around it.

The kernel mirrors the structure the timing model charges for (as the project's overlays do):
``load_<A>`` loops copy each array from DDR through its own ``m_axi`` bundle into an on-chip
buffer (``PIPELINE II=1``), the nest computes from the buffers, ``store_<A>`` loops copy the
written arrays back. The innermost loop of the nest carries ``#pragma HLS PIPELINE`` (II=1
when it is parallel; the float-add latency, 4, when an accumulation is carried through it) and,
when parallel, ``#pragma HLS UNROLL factor=U`` with the gene's factor. Scalars come through
``s_axilite`` registers; a reduction of the nest's root through a 1-element pointer. Buffers
are sized for the arguments the kernel was generated for (``#define A_MAX …``).

The code is plain C++ that g++ compiles as it is (pragmas are ignored): the emulator's
C-simulation path (:mod:`hetlab.fpga.csim`) builds it into a shared library, and the harness
(:func:`harness_source`, not part of the kernel) times each call and counts calls.
"""

from __future__ import annotations

import ast

from ....errors import InvalidInputError
from .nests import Nest, kind_of

__all__ = ["NotTranslatable", "kernel_name", "kernel_source", "harness_source", "CARRIED_II"]

#: II of a pipelined loop that carries a float accumulation: the float add latency at 100 MHz
#: (estimate, the same figure as overlays/gemv_q's carried ``y += G*s`` loop)
CARRIED_II = 4
_C = {"i": "int64_t", "f": "double"}
_MATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "fabs", "floor", "ceil", "pow",
         "log10", "atan", "atan2", "hypot"}
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
        ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.And: "&&", ast.Or: "||"}

PREAMBLE = """\
#include <math.h>
#include <stdint.h>
#ifndef HETLAB_HLS_HELPERS
#define HETLAB_HLS_HELPERS

// Python semantics of min/max (first argument unless the second is smaller/larger),
// floor division and modulo on integers.
template <typename T, typename U> static inline auto hl_min(T a, U b) -> decltype(a + b) {
    return b < a ? b : a;
}
template <typename T, typename U> static inline auto hl_max(T a, U b) -> decltype(a + b) {
    return b > a ? b : a;
}
static inline int64_t hl_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t hl_mod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
#endif
"""


class NotTranslatable(InvalidInputError):
    """The nest uses a construct the C++ generator does not translate."""


def kernel_name(report_name: str, nest: Nest) -> str:
    return f"{report_name}_{nest.root}"


class _Cxx:
    def __init__(self, nest: Nest, ids: dict[int, str], verdicts: dict[str, str],
                 unroll: int) -> None:
        self.nest, self.ids, self.verdicts, self.unroll = nest, ids, verdicts, unroll
        self.kinds = {**nest.scalars, **nest.private,
                      **{s: "f" for s in nest.reductions}}
        self.dtypes = {a: ("float64" if c == "double" else "float32" if c == "float"
                           else "int64") for a, (c, *_r) in nest.arrays.items()}

    # -- expressions -----------------------------------------------------------------------
    def kind(self, node: ast.AST) -> str:
        return kind_of(node, {**self.kinds, **{v: "i" for v in self.loop_vars()}}, self.dtypes)

    def loop_vars(self) -> set[str]:
        return {n.target.id for n in ast.walk(self.nest.node)  # type: ignore[attr-defined]
                if isinstance(n, ast.For)}

    def index(self, node: ast.Subscript) -> str:
        name = node.value.id  # type: ignore[attr-defined]
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        flat = self.expr(parts[0])
        for d, p in enumerate(parts[1:], start=1):
            flat = f"({flat}) * {name}_d{d} + {self.expr(p)}"
        return f"{name}_l[{flat}]"

    def expr(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return "1" if node.value else "0"
            if isinstance(node.value, (int, float)):
                return repr(float(node.value)) if isinstance(node.value, float) \
                    else str(node.value)
        elif isinstance(node, ast.Name):
            return node.id
        elif isinstance(node, ast.Subscript):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "shape" \
                    and isinstance(base.value, ast.Name) and isinstance(node.slice, ast.Constant):
                return f"{base.value.id}_d{node.slice.value}"
            if isinstance(base, ast.Name) and base.id in self.nest.arrays:
                return self.index(node)
        elif isinstance(node, ast.BinOp):
            a, b = self.expr(node.left), self.expr(node.right)
            ints = self.kind(node.left) == self.kind(node.right) == "i"
            if isinstance(node.op, ast.Div):
                return f"((double)({a}) / ({b}))"
            if isinstance(node.op, ast.FloorDiv):
                return f"hl_floordiv({a}, {b})" if ints else f"floor(({a}) / ({b}))"
            if isinstance(node.op, ast.Mod):
                if ints:
                    return f"hl_mod({a}, {b})"
            elif isinstance(node.op, ast.Pow):
                return f"(int64_t)pow({a}, {b})" if ints else f"pow({a}, {b})"
            elif type(node.op) in _OPS:
                return f"({a} {_OPS[type(node.op)]} {b})"
        elif isinstance(node, ast.UnaryOp):
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!"}.get(type(node.op))
            if op:
                return f"({op}{self.expr(node.operand)})"
        elif isinstance(node, ast.Compare):
            terms, left = [], node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if type(op) not in _OPS:
                    break
                terms.append(f"({self.expr(left)} {_OPS[type(op)]} {self.expr(right)})")
                left = right
            else:
                return " && ".join(terms) if len(terms) > 1 else terms[0]
        elif isinstance(node, ast.BoolOp):
            return "(" + f" {_OPS[type(node.op)]} ".join(self.expr(v) for v in node.values) + ")"
        elif isinstance(node, ast.IfExp):
            return (f"({self.expr(node.test)} ? {self.expr(node.body)} : "
                    f"{self.expr(node.orelse)})")
        elif isinstance(node, ast.Call) and not node.keywords:
            return self.call(node)
        raise NotTranslatable(f"offload fpga: cannot translate {ast.unparse(node)!r} to C++.")

    def call(self, node: ast.Call) -> str:
        f, args = node.func, [self.expr(a) for a in node.args]
        if isinstance(f, ast.Name):
            if f.id in ("min", "max") and len(args) == 2:
                return f"hl_{f.id}({args[0]}, {args[1]})"
            if f.id == "abs" and len(args) == 1:
                return f"fabs({args[0]})" if self.kind(node.args[0]) == "f" \
                    else f"llabs({args[0]})"
            if f.id == "int" and len(args) == 1:
                return f"(int64_t)({args[0]})"
            if f.id == "float" and len(args) == 1:
                return f"(double)({args[0]})"
            if f.id == "len" and len(args) == 1 and isinstance(node.args[0], ast.Name):
                return f"{node.args[0].id}_d0"
        if isinstance(f, ast.Attribute) and f.attr in _MATH | {"abs"}:
            name = "fabs" if f.attr == "abs" else f.attr
            return f"{name}({', '.join(f'(double)({a})' for a in args)})"
        raise NotTranslatable(f"offload fpga: cannot translate the call {ast.unparse(node)!r}.")

    # -- statements ------------------------------------------------------------------------
    def target(self, t: ast.AST) -> str:
        if isinstance(t, ast.Name):
            return t.id
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
                and t.value.id in self.nest.arrays:
            return self.index(t)
        raise NotTranslatable(f"offload fpga: cannot assign to {ast.unparse(t)!r} in C++.")

    def stmts(self, body: list[ast.stmt], pad: str) -> list[str]:
        out: list[str] = []
        for s in body:
            out += self.stmt(s, pad)
        return out

    def stmt(self, s: ast.stmt, pad: str) -> list[str]:
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            return [f"{pad}{self.target(s.targets[0])} = {self.expr(s.value)};"]
        if isinstance(s, ast.AugAssign) and type(s.op) in (ast.Add, ast.Sub, ast.Mult):
            return [f"{pad}{self.target(s.target)} {_OPS[type(s.op)]}= {self.expr(s.value)};"]
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Div):
            return [f"{pad}{self.target(s.target)} /= (double)({self.expr(s.value)});"]
        if isinstance(s, ast.If):
            out = [f"{pad}if ({self.expr(s.test)}) {{", *self.stmts(s.body, pad + "    ")]
            if s.orelse:
                out += [f"{pad}}} else {{", *self.stmts(s.orelse, pad + "    ")]
            return [*out, f"{pad}}}"]
        if isinstance(s, ast.For):
            return self.loop(s, pad)
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, ast.Continue):
            return [f"{pad}continue;"]
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            return []  # a docstring-like constant
        raise NotTranslatable(f"offload fpga: cannot translate {ast.unparse(s)!r} to C++.")

    def loop(self, s: ast.For, pad: str) -> list[str]:
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(s.target, ast.Name)):
            raise NotTranslatable("offload fpga: loops must be over range().")
        args = it.args
        lo, hi = (self.expr(args[0]), self.expr(args[1])) if len(args) > 1 else \
            ("0", self.expr(args[0]))
        step = ast.literal_eval(args[2]) if len(args) == 3 else 1
        v, lid = s.target.id, self.ids[id(s)]
        head = [f"{pad[:-4] if len(pad) >= 4 else ''}{lid}_{v}:",
                f"{pad}for (int64_t {v} = {lo}; {v} {'<' if step > 0 else '>'} {hi}; "
                f"{v} += {step}) {{"]
        inner = pad + "    "
        pragmas = []
        if not any(isinstance(n, ast.For) for b in s.body for n in ast.walk(b)):
            par = self.verdicts[lid] == "parallel"
            ii = 1 if par else CARRIED_II
            note = "" if par else "  // carried accumulation: II = float add latency"
            pragmas.append(f"#pragma HLS PIPELINE II={ii}{note}")
            if par and self.unroll > 1:
                pragmas.append(f"#pragma HLS UNROLL factor={self.unroll}")
        return [*head, *pragmas, *self.stmts(s.body, inner), f"{pad}}}"]


def _params(nest: Nest) -> list[tuple[str, str]]:
    """(C declaration, name) of the kernel's parameters, in call order."""
    out = []
    for a, (ctype, _shape, _read, written) in nest.arrays.items():
        out.append((f"{'' if written else 'const '}{ctype} *{a}", a))
    for s in nest.reductions:
        out.append((f"double *{s}_io", f"{s}_io"))
    for a, (_c, shape, _r, _w) in nest.arrays.items():
        out += [(f"int64_t {a}_d{d}", f"{a}_d{d}") for d in range(len(shape))]
    out += [(f"int64_t {s}", s) for s in nest.shapes]
    out += [(f"{_C[k]} {s}", s) for s, k in nest.scalars.items()]
    return out


def kernel_source(report_name: str, nest: Nest, ids: dict[int, str], verdicts: dict[str, str],
                  unroll: int = 1) -> str:
    """The Vitis-HLS-style C++ kernel of ``nest`` (raises :class:`NotTranslatable`)."""
    cx = _Cxx(nest, ids, verdicts, unroll)
    name = kernel_name(report_name, nest)
    params = _params(nest)
    body = cx.stmts([nest.node], "    ")
    lines = [f"// hetlab.offload: Vitis-HLS-style kernel for loop nest {nest.root} of "
             f"{report_name} (line {nest.line}); generated for",
             "// " + ", ".join(f"{c} {a}{list(sh)}" for a, (c, sh, *_r) in nest.arrays.items()),
             f"// arithmetic intensity {nest.intensity:.3g} flop/B; unroll factor {unroll}.",
             "// Arrays are copied on chip (load_*), the nest computes from the buffers, the "
             "written ones are copied back (store_*).", PREAMBLE]
    lines.append(f'extern "C" void {name}({", ".join(d for d, _ in params)}) {{')
    for k, (a, _spec) in enumerate(nest.arrays.items()):
        lines.append(f"#pragma HLS INTERFACE m_axi port={a} offset=slave bundle=gmem{k}")
    for k, s in enumerate(nest.reductions, start=len(nest.arrays)):
        lines.append(f"#pragma HLS INTERFACE m_axi port={s}_io offset=slave bundle=gmem{k}")
    for _d, p in params:
        lines.append(f"#pragma HLS INTERFACE s_axilite port={p} bundle=control")
    lines.append("#pragma HLS INTERFACE s_axilite port=return bundle=control")
    for a, (c, shape, *_r) in nest.arrays.items():
        n = 1
        for e in shape:
            n *= int(e)
        dims = " x ".join(str(e) for e in shape)
        lines.append(f"    static {c} {a}_l[{max(n, 1)}];  // on-chip copy of {a} ({dims})")
    for s, k in nest.private.items():
        lines.append(f"    {_C[k]} {s};")
    for s in nest.reductions:
        lines.append(f"    double {s} = {s}_io[0];")
    for a, (_c, shape, *_r) in nest.arrays.items():
        size = " * ".join(f"{a}_d{d}" for d in range(len(shape)))
        lines += [f"load_{a}:", f"    for (int64_t e = 0; e < {size}; ++e) {{",
                  "#pragma HLS PIPELINE II=1", f"        {a}_l[e] = {a}[e];", "    }"]
    lines += body
    for a, (_c, shape, _r, written) in nest.arrays.items():
        if written:
            size = " * ".join(f"{a}_d{d}" for d in range(len(shape)))
            lines += [f"store_{a}:", f"    for (int64_t e = 0; e < {size}; ++e) {{",
                      "#pragma HLS PIPELINE II=1", f"        {a}[e] = {a}_l[e];", "    }"]
    for s in nest.reductions:
        lines.append(f"    {s}_io[0] = {s};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def harness_source(report_name: str, nests: list[Nest]) -> str:
    """C-simulation-only wrappers: ``hl_call_<kernel>`` times each call (steady clock) and
    counts calls; ``hl_stats(out)`` writes [seconds, calls per nest…]; ``hl_reset()``."""
    lines = ["#include <chrono>", "", "static double hl_seconds = 0.0;",
             f"static int64_t hl_calls[{max(len(nests), 1)}] = {{0}};", ""]
    for k, nest in enumerate(nests):
        params = _params(nest)
        name = kernel_name(report_name, nest)
        lines += [f'extern "C" void hl_call_{name}({", ".join(d for d, _ in params)}) {{',
                  "    auto t0 = std::chrono::steady_clock::now();",
                  f"    {name}({', '.join(p for _, p in params)});",
                  "    hl_seconds += std::chrono::duration<double>(",
                  "        std::chrono::steady_clock::now() - t0).count();",
                  f"    hl_calls[{k}] += 1;", "}", ""]
    lines += ['extern "C" void hl_stats(double *out) {', "    out[0] = hl_seconds;",
              f"    for (int k = 0; k < {len(nests)}; ++k) out[k + 1] = (double)hl_calls[k];",
              "}", 'extern "C" void hl_reset() {', "    hl_seconds = 0.0;",
              f"    for (int k = 0; k < {len(nests)}; ++k) hl_calls[k] = 0;", "}"]
    return "\n".join(lines) + "\n"


def param_names(nest: Nest) -> list[str]:
    """Host-side expressions for the kernel's parameters, in call order (njit host code)."""
    out = [f"{a}.ctypes.data" for a in nest.arrays]
    out += [f"_io_{s}.ctypes.data" for s in nest.reductions]
    for a, (_c, shape, _r, _w) in nest.arrays.items():
        out += [f"{a}.shape[{d}]" for d in range(len(shape))]
    out += [f"{a}.shape[{d}]" for a, d in nest.shapes.values()]
    out += list(nest.scalars)
    return out
