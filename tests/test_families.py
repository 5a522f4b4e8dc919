"""A kernel family is one folder plus one line: every registered kernel is ``hetlab.<name>``,
each family registers its own implementations (fpga included), backends register none."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import hetlab as hl
from hetlab.core.registry import kernel_names, supported_backends
from hetlab.kernels import FAMILIES, kernel_function


def test_every_registered_kernel_is_public_as_hetlab_dot_name():
    for name in kernel_names():
        fn = kernel_function(name)
        assert getattr(hl, name) is fn and fn.spec.name == name and name in dir(hl)
        assert "device : {" in fn.__doc__, name  # documented from the registry


def test_each_overlay_is_registered_by_its_family_and_found_by_the_fpga_package():
    from hetlab.fpga import FpsDriver, GemvQDriver, SpmvDriver
    from hetlab.fpga.device import overlay_modules

    found = overlay_modules()
    assert {k for k in kernel_names() if "fpga" in supported_backends(k)} == set(found)
    for overlay, module in found.items():
        family = module.__name__.split(".")[2]
        assert family in FAMILIES and module.__name__ == f"hetlab.kernels.{family}.fpga"
        assert module.Driver.overlay == overlay
    assert {FpsDriver, GemvQDriver, SpmvDriver} == {m.Driver for m in found.values()}


def test_backends_register_no_implementations():
    import inspect

    import hetlab.backends as backends

    for mod in (backends, *(sys.modules[n] for n in list(sys.modules)
                            if n.startswith("hetlab.backends."))):
        assert "register_impl" not in inspect.getsource(mod), mod.__name__


def test_a_new_family_needs_only_its_folder_and_its_name_in_families(tmp_path):
    # a family outside the tree, put on the package path and named in FAMILIES before import
    fam = tmp_path / "hetlab_extra" / "double"
    fam.mkdir(parents=True)
    (fam / "__init__.py").write_text(textwrap.dedent('''
        import numpy as np
        from hetlab.core.dispatch import run
        from hetlab.core.registry import register_kernel
        from hetlab.core.spec import Cost, KernelSpec

        DOUBLE = KernelSpec(
            name="double", validate=lambda x: {"x": np.asarray(x, float)},
            reference=lambda x: 2 * x, error=lambda a, b: float(np.max(np.abs(a - b))),
            make_case=lambda n, rng: {"x": rng.random(n)},
            cost=lambda kw: Cost(kw["x"].size, 16 * kw["x"].size), arrays=("x",))
        register_kernel(DOUBLE)

        def double(x, *, device=None, keep_on_device=False):
            """Twice x.

            device : str or Backend, optional
            """
            return run(DOUBLE, device, keep_on_device, x=x)

        double.spec = DOUBLE
    '''))
    code = textwrap.dedent(f'''
        import sys
        import hetlab.kernels as k  # the real FAMILIES line would name "double"
        sys.path.insert(0, {str(tmp_path)!r})
        import hetlab_extra.double as fam
        sys.modules["hetlab.kernels.double"] = fam
        k.FAMILIES = k.FAMILIES + ("double",)
        import hetlab as hl
        assert "double" in hl.kernel_names() and "double" in dir(hl)
        assert list(hl.double([1.0, 2.0])) == [2.0, 4.0]
        print("ok")
    ''')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
