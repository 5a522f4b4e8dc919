"""The ``hetlab`` command line."""

from __future__ import annotations

import hetlab as hl
from hetlab.cli import main


def test_devices_prints_every_backend(capsys):
    assert main(["devices", "--no-peaks"]) == 0
    out = capsys.readouterr().out
    for name in hl.backend_names():
        assert name in out


def test_bench_prints_table_and_writes_netcdf(tmp_path, capsys):
    out_file = tmp_path / "fps.nc"
    rc = main(["bench", "fps", "--sizes", "100,200", "--devices", "numpy", "--repeats", "2",
               "--out", str(out_file), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "median_s" in text and f"wrote {out_file}" in text
    ds = hl.load(out_file)
    assert ds["size"].values.tolist() == [100, 200] and bool(ds["verified"].all())


def test_bench_unknown_kernel_is_a_clean_error(capsys):
    assert main(["bench", "nope", "--devices", "numpy"]) == 2
    assert "kernel must be one of" in capsys.readouterr().err


def test_lab_binds_loopback_with_token_auth(capsys, tmp_path):
    assert main(["lab", "--notebooks", str(tmp_path), "--dry-run"]) == 0
    cmd = capsys.readouterr().out
    assert "--ServerApp.ip=127.0.0.1" in cmd
    assert "token=''" not in cmd and "disable_check_xsrf" not in cmd
