# Spack recipe of our own benchmark program (src/ of this repository).
import os

from spack.package import *


def _default_git():
    # The repository this recipe lives in (config/spack/repo/packages/netbench/ is 5 levels
    # below its root), unless the site points at its own mirror of the project.
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, *[os.pardir] * 5))
    return os.environ.get("FABRICSUITE_GIT_URL", root)


class Netbench(MakefilePackage):
    """netbench: the interconnect regression suite's MPI microbenchmark program. One program
    with subcommands for end-to-end latency, flood g/G, send/receive overhead, LogGP, buffer
    reuse, many connections, polling vs blocking, non-contiguous data, ANY_SOURCE, dense
    patterns, b_eff, collectives and all-pairs fabric maps."""

    homepage = "https://github.com/fabricsuite/fabricsuite"
    git = _default_git()

    maintainers("fabricsuite")

    version("main", branch="main")
    version("0.1.0", tag="v0.1.0")

    depends_on("c", type="build")
    depends_on("gmake", type="build")
    depends_on("mpi")

    build_directory = "src"

    @property
    def build_targets(self):
        return ["netbench", f"MPICC={self.spec['mpi'].mpicc}"]

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        install(join_path(self.build_directory, "netbench"), prefix.bin)
