# Spack recipe of the original b_eff program (Rabenseifner, HLRS). Spack has none.
from spack.package import *


class Beff(Package):
    """b_eff: the effective bandwidth benchmark of Rabenseifner and Koniges (HLRS). One C file;
    the memory per process is a compile-time constant that sets L_max (memory / 128)."""

    homepage = "https://www.hlrs.de/solutions/types-of-computing/high-performance-computing"
    # The HLRS source, revision 3.6.0.1 (Feb 2016), as kept in the first commit of this public
    # repository (later commits there adapt it to SimGrid and are not used).
    git = "https://github.com/xhuanggit/b_eff.git"

    version("3.6.0.1", commit="439c36a5c287b6e62a60ad1e3f214fb9d4911b7e")

    variant(
        "memory",
        default="1024",
        values=lambda v: v.isdigit() and int(v) > 0,
        description="MEMORY_PER_PROCESSOR in MB; L_max = memory / 128 (the original's rule)",
    )

    depends_on("c", type="build")
    depends_on("mpi")

    def install(self, spec, prefix):
        mpicc = Executable(spec["mpi"].mpicc)
        mpicc("-O2", "-o", "b_eff",
              f"-DMEMORY_PER_PROCESSOR={spec.variants['memory'].value}", "b_eff.c", "-lm")
        mkdirp(prefix.bin)
        install("b_eff", prefix.bin)
