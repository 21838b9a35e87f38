"""Shared fixtures: the MPI-free netbench library (src/libnbanalysis.so) through ctypes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import analysis_lib
import pytest


@pytest.fixture(scope="session")
def nb() -> analysis_lib.Analysis:
    # NB_ANALYSIS_LIB=/path/to/lib.so tests a library built elsewhere (e.g. a mutant).
    prebuilt = os.environ.get("NB_ANALYSIS_LIB")
    if prebuilt:
        return analysis_lib.load(Path(prebuilt))
    try:
        path = analysis_lib.build()
    except subprocess.CalledProcessError as err:
        pytest.fail(f"make -C src libnbanalysis.so failed:\n{err.stdout}\n{err.stderr}")
    return analysis_lib.load(path)
