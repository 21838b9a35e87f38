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
        default="1,2,4,8,16,32,64,128",
        values=lambda v: v.isdigit() and int(v) > 0,
        multi=True,
        description="NPB-MZ 3.3 only: the process counts compiled in, one binary each "
        "(<name>.<class>.<nprocs>); 3.4 takes the count at run time",
    )

    # The NPB makefiles build sys/setparams and common/ objects from every target: not
    # parallel-safe (the builtin npb recipe says the same)
    parallel = False

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
        mpifc = spec["mpi"].mpifc
        # The whole make.def is written, as the builtin npb recipe does: the templates differ
        # between releases (3.3 compiles with F77/MPIF77, 3.4 with FC/MPIFC) and copies in the
        # wild move them; a name one release does not use is harmless.
        definitions = {
            "FC": mpifc, "MPIFC": mpifc, "F77": mpifc, "MPIF77": mpifc,
            "FLINK": mpifc, "F_LIB": "", "F_INC": "", "FMPI_LIB": "", "FMPI_INC": "",
            "FFLAGS": fflags, "FLINKFLAGS": fflags,
            "CC": spec["mpi"].mpicc, "MPICC": spec["mpi"].mpicc, "CLINK": spec["mpi"].mpicc,
            "C_LIB": "", "C_INC": "", "CMPI_LIB": "", "CMPI_INC": "",
            "CFLAGS": f"-O3 {openmp}", "CLINKFLAGS": f"-O3 {openmp}",
            "UCC": spack_cc,  # builds the setparams utility
            "BINDIR": "../bin",
            "RAND": "randi8",
        }
        with working_dir(self.mpi_dir):
            with open("config/make.def", "w") as make_def:
                for key, value in definitions.items():
                    make_def.write(f"{key} = {value}\n")
            mkdirp("bin")  # tarballs and git copies may lack the empty bin/; linking needs it

    def build(self, spec, prefix):
        # 3.3 compiles the process count in; 3.4 builds one binary per benchmark and class
        nprocs = spec.variants["nprocs"].value if spec.satisfies("@:3.3") else [None]
        with working_dir(self.mpi_dir):
            for name in spec.variants["names"].value:
                for npb_class in spec.variants["classes"].value:
                    for count in nprocs:
                        args = [name, f"CLASS={npb_class}"]
                        if count is not None:
                            args.append(f"NPROCS={count}")
                        make(*args)

    def install(self, spec, prefix):
        install_tree(join_path(self.mpi_dir, "bin"), prefix.bin)
