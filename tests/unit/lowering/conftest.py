from __future__ import annotations

import pytest

from transpiler.lowering import passes


@pytest.fixture(autouse=True)
def _verify_ir(monkeypatch):
    """The loop IR is verified after lowering and after every IR pass (``transpiler/lowering/verify.py``)."""
    monkeypatch.setenv("RT_VERIFY_IR", "1")


@pytest.fixture
def before_pipelining(monkeypatch):
    """Lower without the last pass, ``pipeline_rows``: a test of a row loop's passes sees them in one loop over
    the rows, as the lowering and the lane passes leave it (the pipelined form: ``test_pipeline.py``)."""
    monkeypatch.setattr(passes, "PASSES", [(name, p) for name, p in passes.PASSES if name != "pipeline_rows"])
