# Spack recipe of the NAS Parallel Benchmarks Multi-Zone (MPI + OpenMP). Spack has none.
from spack.package import *


class NpbMz(MakefilePackage):
    """NPB Multi-Zone: BT-MZ, SP-MZ and LU-MZ, hybrid MPI x OpenMP versions of the NPB solvers
    on a mesh of zones."""

    homepage = "https://www.nas.nasa.gov/software/npb.html"
    url = "https://www.nas.nasa.gov/assets/npb/NPB3.4.3-MZ.tar.gz"

    # NASA publishes no checksums and this project could not download the tarballs to take
    # them: a site runs `spack checksum npb-mz` once (or installs from its mirror) and adds
    # the sha256 in its own repository overlay. Until then `spack install --no-checksum`.
    version("3.4.3")
    version("3.4.2")
    version("3.3.1", url="https://www.nas.nasa.gov/assets/npb/NPB3.3.1-MZ.tar.gz")

    variant(
        "names",
        default="bt-mz,sp-mz,lu-mz",
        values=("bt-mz", "sp-mz", "lu-mz"),
        multi=True,
        description="Benchmarks to build",
    )
    variant(
        "classes",
        default="S,C",
        values=("S", "W", "A", "B", "C", "D", "E", "F"),
        multi=True,
        description="Problem classes to build",
    )
    variant(
        "nprocs",
        default="2",
        values=lambda v: v.isdigit(),
        description="NPB-MZ 3.3 only: the process count compiled in (3.4 takes it at run time)",
    )

    depends_on("fortran", type="build")
    depends_on("c", type="build")
    depends_on("mpi")

    @property
    def mpi_dir(self):
        return "NPB3.3-MZ-MPI" if self.spec.satisfies("@:3.3") else "NPB3.4-MZ-MPI"

    def edit(self, spec, prefix):
        openmp = self.compiler.openmp_flag
        fflags = f"-O3 {openmp}"
        if spec.satisfies("%gcc@10:"):
            # gfortran 10+ rejects the MPI calls' mixed argument types otherwise
            fflags += " -fallow-argument-mismatch"
        with working_dir(self.mpi_dir):
            copy("config/make.def.template", "config/make.def")
            make_def = FileFilter("config/make.def")
            make_def.filter(r"^MPIFC\s*=.*", f"MPIFC = {spec['mpi'].mpifc}")
            make_def.filter(r"^MPIF77\s*=.*", f"MPIF77 = {spec['mpi'].mpif77}")
            make_def.filter(r"^MPICC\s*=.*", f"MPICC = {spec['mpi'].mpicc}")
            make_def.filter(r"^FFLAGS\s*=.*", f"FFLAGS = {fflags}")
            make_def.filter(r"^FLINKFLAGS\s*=.*", f"FLINKFLAGS = {fflags}")
            mkdirp("bin")  # git keeps no empty bin/; the link step needs it

    def build(self, spec, prefix):
        nprocs = spec.variants["nprocs"].value
        with working_dir(self.mpi_dir):
            for name in spec.variants["names"].value:
                for npb_class in spec.variants["classes"].value:
                    args = [name, f"CLASS={npb_class}"]
                    if spec.satisfies("@:3.3"):
                        args.append(f"NPROCS={nprocs}")
                    make(*args)

    def install(self, spec, prefix):
        install_tree(join_path(self.mpi_dir, "bin"), prefix.bin)
