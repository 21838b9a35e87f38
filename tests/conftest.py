"""Shared fixtures: the MPI-free netbench library (src/libnbanalysis.so) through ctypes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import analysis_lib
import mpi_support
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


@pytest.fixture(scope="module", params=sorted(mpi_support.MPIS))
def netbench(request, tmp_path_factory):
    """(netbench built with this MPI, launcher of 2 ranks bound to cores, MPI name); a test
    module may define its own `netbench` fixture instead."""
    compiler, launcher = mpi_support.MPIS[request.param]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed (ci/setup.sh installs it)")
    program = mpi_support.build_netbench(tmp_path_factory.mktemp(f"build-{request.param}"),
                                         request.param)
    return str(program), launcher, request.param
