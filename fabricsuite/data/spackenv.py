"""Spack on a partition: its settings, the check's Spack environment, the MPI it builds with.

A partition says Spack is available with `extras: {"spack": {...}}`:
- "site": the Spack site file, config/spack/<system>.yaml by default (the MPI and compilers as
  externals, not buildable);
- "install_tree": a persistent install tree (a nightly run reuses earlier builds);
- "install_opts": options of `spack install`;
- "mpi": the MPI family the site file builds with; environments of another MPI are skipped.

Shared by the netbench build fixture (fabricsuite.checks.rfm_netbench) and the external suites
(fabricsuite.checks.rfm_external).
"""

from __future__ import annotations

import re
import shlex
import subprocess

from fabricsuite import REPO_ROOT

#: The Spack environment directory inside a check's stage.
SPACK_ENV = "spackenv"
#: What the run records about the Spack build (kept in the output directory).
SPACK_PROVENANCE = ["spackenv/spack.lock", "spack-specs.txt"]
#: How an installed spec is recorded (perflog column spack_spec_used): compiler flags are
#: outside {variants} (IMB's cppflags=-DOMPI_SKIP_MPICXX would be lost); the same fields
#: exist in Spack 0.23 and 1.x.
SPEC_FORMAT = "{name}@{version}{compiler_flags}{variants} /{hash:7}"


def spack_settings(partition) -> dict | None:
    """The partition's Spack settings (`extras.spack`), or None when it has no Spack."""
    spack = partition.extras.get("spack")
    if not spack:
        return None
    return spack if isinstance(spack, dict) else {}


def environment_mpi(environ) -> str | None:
    """The MPI family of a programming environment, from its compiler wrapper or name."""
    text = f"{environ.name} {environ.cc}".lower()
    if "openmpi" in text or "ompi" in text:
        return "openmpi"
    if "mpich" in text:
        return "mpich"
    return None


def skip_other_mpi(test, settings: dict) -> None:
    """Skip `test` when its environment launches another MPI than the site file builds with."""
    site_mpi = settings.get("mpi")
    launches = environment_mpi(test.current_environ)
    test.skip_if(
        site_mpi is not None and launches is not None and site_mpi != launches,
        f"{test.current_partition.fullname}'s Spack site file builds with {site_mpi}, "
        f"environment {test.current_environ.name} launches {launches} (a program with the other "
        f"MPI's launcher runs as singletons that wait forever); run -p with an environment "
        f"of {site_mpi}",
    )


def netbench_spec() -> str:
    """The netbench spec for this checkout: its HEAD commit as a version of `main`.

    A branch version (`netbench@main`) keeps one hash while the branch moves, so an install
    tree would go on reusing an old build; `@git.<commit>=main` gives each commit its own.
    """
    try:
        commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    if len(commit) != 40:
        return "netbench@main"
    return f"netbench@git.{commit}=main"


def stage_spack_yaml() -> str:
    """The check's Spack environment: the project's spack.yaml without its specs.

    ReFrame's Spack build system adds the check's one spec and installs the whole environment,
    so the stage environment must hold that spec only (a suite that cannot build must not break
    the others). Everything else (include, repos, concretizer, a site's mirrors) is kept.
    """
    import yaml

    project = yaml.safe_load((REPO_ROOT / "spack.yaml").read_text())
    project["spack"]["specs"] = []
    header = (f"# Generated from {REPO_ROOT / 'spack.yaml'} without its specs: "
              "the check adds its own.\n")
    return header + yaml.safe_dump(project, sort_keys=False)


def spack_build_commands(settings: dict, system: str) -> list[str]:
    """Shell commands that assemble the check's Spack environment in its stage directory."""
    site = settings.get("site", f"config/spack/{system}.yaml")
    return [
        f"mkdir -p {SPACK_ENV}/config/spack",
        f"cat > {SPACK_ENV}/spack.yaml <<'FABRICSUITE_SPACK_YAML'\n"
        f"{stage_spack_yaml()}FABRICSUITE_SPACK_YAML",
        f"cp -r {shlex.quote(str(REPO_ROOT / 'config' / 'spack' / 'repo'))} "
        f"{SPACK_ENV}/config/spack/",
        f"cp {shlex.quote(str(REPO_ROOT / site))} {SPACK_ENV}/site.yaml",
        # the netbench recipe builds this checkout's committed main (a site may point
        # FABRICSUITE_GIT_URL at its own mirror of the project)
        f'export FABRICSUITE_GIT_URL="${{FABRICSUITE_GIT_URL:-{REPO_ROOT}}}"',
    ]


def _in_double_quotes(text: str) -> str:
    """`text` escaped for a shell's double quotes (where ReFrame puts `spack config add`)."""
    return re.sub(r'([\\"$`])', r"\\\1", text)


def build_with_spack(test, settings: dict, spec: str) -> None:
    """Make `test` install `spec` through ReFrame's Spack build system in its own environment."""
    test.build_system = "Spack"
    test.build_system.environment = SPACK_ENV
    # ReFrame writes specs and install options into the scripts as they are (a spec may come
    # from -S spack_spec=...): each is quoted; a config option goes inside double quotes.
    test.build_system.specs = [shlex.quote(spec)]
    if settings.get("install_tree"):
        test.build_system.config_opts = [
            _in_double_quotes(f"config:install_tree:root:{settings['install_tree']}")]
    test.build_system.install_opts = [shlex.quote(o) for o in settings.get("install_opts", [])]
    test.prebuild_cmds = spack_build_commands(settings, test.current_system.name)
