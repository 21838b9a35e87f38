"""spack.yaml and the recipes in config/spack/repo, tested offline (Spack cannot be downloaded
here): valid YAML, Python that parses, the versions, variants and dependencies the checks rely
on, every Spack partition's site file, the netbench spec of this checkout, and the launchers of
the local system.
"""

import ast
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from fabricsuite import REPO_ROOT
from fabricsuite.data.programs import SUITES


# -- Spack environment and recipes, without Spack --
def test_spack_environment_lists_every_suite():
    env = yaml.safe_load((REPO_ROOT / "spack.yaml").read_text())["spack"]
    specs = [s.split()[0].split("@")[0] for s in env["specs"]]
    for suite in SUITES.values():
        assert suite.spack_spec in specs
    assert "netbench" in specs and "hwloc" in specs
    assert env["include"] == ["site.yaml"]
    for repo in env["repos"]:
        assert (REPO_ROOT / repo / "repo.yaml").is_file()


def test_every_spack_partition_names_an_existing_site_file():
    sys.path.insert(0, str(REPO_ROOT / "config"))
    try:
        import settings  # noqa: PLC0415 - the project's ReFrame configuration
    finally:
        sys.path.pop(0)
    seen = 0
    for system in settings.site_configuration["systems"]:
        for partition in system["partitions"]:
            spack = partition.get("extras", {}).get("spack")
            if spack:
                site = REPO_ROOT / spack.get("site", f"config/spack/{system['name']}.yaml")
                assert site.is_file(), site
                assert "packages" in yaml.safe_load(site.read_text())
                seen += 1
    assert seen >= 2  # the template's two partitions


def _recipe(name):
    path = REPO_ROOT / "config" / "spack" / "repo" / "packages" / name / "package.py"
    tree = ast.parse(path.read_text(), str(path))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert len(classes) == 1
    calls = {}
    for node in ast.walk(classes[0]):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.setdefault(node.func.id, []).append(node)
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert any(n.module == "spack.package" for n in imports)  # 0.23 and 1.x both provide it
    return classes[0], calls


def _first_args(calls, func):
    return [ast.literal_eval(c.args[0]) for c in calls.get(func, []) if c.args]


@pytest.mark.parametrize("name,cls,versions,variants,deps", [
    ("netbench", "Netbench", {"main", "0.1.0"}, set(), {"mpi", "c"}),
    ("beff", "Beff", {"3.6.0.1"}, {"memory"}, {"mpi", "c"}),
    ("npb-mz", "NpbMz", {"3.4.3", "3.4.2", "3.3.1"}, {"names", "classes", "nprocs"},
     {"mpi", "fortran"}),
])
def test_recipes_declare_versions_variants_and_dependencies(name, cls, versions, variants, deps):
    klass, calls = _recipe(name)
    assert klass.name == cls
    assert set(_first_args(calls, "version")) == versions
    assert set(_first_args(calls, "variant")) == variants
    assert deps <= set(_first_args(calls, "depends_on"))


def test_beff_recipe_pins_the_original_commit_and_npb_mz_the_gfortran_flag():
    _, calls = _recipe("beff")
    (beff_version,) = calls["version"]
    commit = {k.arg: ast.literal_eval(k.value) for k in beff_version.keywords}["commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", commit)
    text = (REPO_ROOT / "config/spack/repo/packages/npb-mz/package.py").read_text()
    assert "-fallow-argument-mismatch" in text and 'mkdirp("bin")' in text
    npb_mz_classes = (REPO_ROOT / "spack.yaml").read_text()
    assert "npb-mz names=bt-mz,sp-mz,lu-mz classes=S,C" in npb_mz_classes


# -- netbench itself on a Spack partition --
def test_netbench_spec_names_this_checkout_commit():
    from fabricsuite.data.spackenv import netbench_spec

    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert netbench_spec() == f"netbench@git.{head}=main"


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_local_launchers_give_a_hybrid_rank_its_cores(mpi):
    """The local mpirun wrappers bind a rank to one core, or to FABRICSUITE_CORES_PER_RANK cores
    (NpbMz's hybrid split): two OpenMP threads bound to one core made LU-MZ 1000x slower."""
    launcher = REPO_ROOT / "config" / "launchers" / mpi / "mpirun"
    if shutil.which("mpirun.openmpi" if mpi == "openmpi" else "mpiexec.hydra") is None:
        pytest.skip(f"{mpi} is not installed (ci/setup.sh installs it)")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs to tell 1 bound core from 2")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_hwloc_base_binding_policy="core")
    env.pop("FABRICSUITE_MPICH_BINDING", None)

    def allowed_cpus(cores_per_rank):
        run_env = dict(env, FABRICSUITE_CORES_PER_RANK=str(cores_per_rank))
        proc = subprocess.run([str(launcher), "-np", "1", "python3", "-c",
                               "import os; print(len(os.sched_getaffinity(0)))"],
                              env=run_env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return int(proc.stdout.split()[-1])

    assert allowed_cpus(1) == 1
    assert allowed_cpus(2) == 2
    # a value that is not a core count: one line naming the variable, nothing started
    proc = subprocess.run([str(launcher), "-np", "1", "true"],
                          env=dict(env, FABRICSUITE_CORES_PER_RANK="two"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "FABRICSUITE_CORES_PER_RANK" in proc.stderr


def test_site_template_declares_the_compiler_and_mpi_as_externals():
    """A center copies config/spack/examplecluster.yaml: Spack builds only the benchmarks, never
    the site's compiler or MPI (Spack 1.x finds compilers only as externals in packages.yaml)."""
    packages = yaml.safe_load((REPO_ROOT / "config" / "spack" / "examplecluster.yaml")
                              .read_text())["packages"]
    for name in ("gcc", "openmpi"):
        assert packages[name]["buildable"] is False, name
        assert packages[name]["externals"][0]["prefix"], name
    compilers = packages["gcc"]["externals"][0]["extra_attributes"]["compilers"]
    assert set(compilers) == {"c", "cxx", "fortran"}
    assert packages["mpi"]["require"] == "openmpi"


# -- the job output as the job writes it (issue 11) --
