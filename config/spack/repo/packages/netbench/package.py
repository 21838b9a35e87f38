# Spack recipe of our own benchmark program (src/ of this repository).
import os

from spack.package import *


def _default_git():
    # FABRICSUITE_GIT_URL (the checks set it to their project; a site may name its own mirror),
    # else the git checkout this recipe lives in (config/spack/repo/packages/netbench/).
    if os.environ.get("FABRICSUITE_GIT_URL"):
        return os.environ["FABRICSUITE_GIT_URL"]
    here = os.path.dirname(os.path.abspath(__file__))
    while here != os.path.dirname(here):
        if os.path.isdir(os.path.join(here, ".git")) and os.path.isfile(
            os.path.join(here, "src", "netbench.c")
        ):
            return here
        here = os.path.dirname(here)
    # A copy of the repository outside any checkout: the fetch fails naming this URL.
    return "https://github.com/fabricsuite/fabricsuite.git"


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
