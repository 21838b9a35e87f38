"""The by-hand build guide (docs/building-the-suites.md) runs as written: its recipes are read
from the guide itself (fabricsuite.commands.suite_builds), each builds in a scratch copy of its
source with the MPI's wrappers, and the checks must then find what it installed, linked with that
MPI.

The suites' sources cannot be downloaded here or in CI: the whole-guide test runs where
FABRICSUITE_SUITE_SOURCES names a directory of them, and says so where it does not. The runner's
own mechanics (wrappers, substitutions, the search of the installed programs) are tested with a
recipe of the same form that builds a small MPI program with each MPI.
"""

from __future__ import annotations

import os
import shutil

import pytest

from fabricsuite.commands import suite_builds as sb

GUIDE = sb.GUIDE.read_text()


def test_every_suite_has_one_recipe_in_the_guide():
    """Each section of the guide holds a recipe the runner can start: in the suite's source
    (its first `cd`) or, for b_eff, beside b_eff.c; and it installs under /opt, per MPI."""
    for recipe in sb.RECIPES:
        text = sb.recipe_text(recipe, GUIDE)
        assert "/opt/" in text and "-openmpi" in text, recipe
        assert (sb.source_name(text) is None) == (recipe.suite == "beff"), recipe
        # where it copies its programs, it makes the directory first (ran as written)
        for line in text.splitlines():
            if line.startswith("cp ") and "/opt/" in line:
                target = line.split()[-1]
                assert f"mkdir -p {target.rstrip('/')}" in text, (recipe, line)
    assert [sb.source_name(sb.recipe_text(r, GUIDE)) for r in sb.RECIPES] == [
        "osu-micro-benchmarks-7.4", "mpi-benchmarks", "NPB3.4-MPI", "NPB3.3-MZ-MPI", None]


def test_a_missing_recipe_is_one_line_naming_the_section():
    with pytest.raises(sb.SuiteBuildError, match="no ```sh block under '## NPB \\(MPI\\)'"):
        sb.recipe_text(sb.RECIPES[2], GUIDE.replace("```sh\ncd NPB3.4-MPI", "```\ncd NPB"))


def test_the_substitutions_are_the_ones_the_guide_asks_for(tmp_path):
    text = sb.for_mpi(sb.recipe_text(sb.RECIPES[0], GUIDE), "mpich", tmp_path)
    assert f"--prefix={tmp_path}/osu-mpich" in text and "/opt/" not in text
    assert "-openmpi" not in text and "CC=mpicc" in text  # the wrappers come from PATH


def test_a_source_of_another_version_is_found(tmp_path):
    (tmp_path / "osu-micro-benchmarks-7.2").mkdir()
    (tmp_path / "beff" / "src").mkdir(parents=True)
    (tmp_path / "beff" / "src" / "b_eff.c").write_text("")
    osu, beff = sb.RECIPES[0], sb.RECIPES[4]
    assert sb.find_source(osu, sb.recipe_text(osu, GUIDE), tmp_path) == \
        tmp_path / "osu-micro-benchmarks-7.2"
    assert sb.find_source(beff, sb.recipe_text(beff, GUIDE), tmp_path) is None
    (tmp_path / "b_eff.c").write_text("")
    assert sb.find_source(beff, sb.recipe_text(beff, GUIDE), tmp_path) == tmp_path


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert sb.main(["--sources", str(tmp_path / "nowhere"), "--prefix", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"suite_builds: --sources {tmp_path / 'nowhere'}: "
                                               f"not a directory")
    (tmp_path / "empty").mkdir()
    assert sb.main(["--sources", str(tmp_path / "empty"), "--prefix", str(tmp_path / "p")]) == 2
    assert "no suite's source found" in capsys.readouterr().err


HELLO = """\
#include <mpi.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); MPI_Finalize(); return 0; }
"""

#: A guide of the same form as the real one: a b_eff section whose recipe builds with `mpicc`.
FAKE_GUIDE = """\
## b_eff (the original)

```sh
mpicc -O2 -o b_eff b_eff.c
mkdir -p /opt/beff-openmpi && cp b_eff /opt/beff-openmpi/
```
"""


@pytest.mark.integration
@pytest.mark.parametrize("mpi", sb.MPIS)
def test_a_recipe_builds_with_the_mpis_wrappers_and_the_checks_find_it(tmp_path, mpi):
    """The recipe's `mpicc` is the MPI's, its /opt is the install root, its -openmpi the MPI's
    name; the program is found as the checks find it and linked with that MPI. A recipe that
    fails is named with its log's tail."""
    if shutil.which(f"mpicc.{mpi}") is None:
        pytest.skip(f"mpicc.{mpi} not installed (ci/setup.sh installs both MPIs)")
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "b_eff.c").write_text(HELLO)
    beff = sb.RECIPES[4]
    prefix, logs = tmp_path / "opt", tmp_path / "logs"
    logs.mkdir()
    outcome = sb.build(beff, FAKE_GUIDE, sources, mpi, prefix, logs)
    assert outcome.ok, outcome.detail
    assert (prefix / f"beff-{mpi}" / "b_eff").is_file()
    assert str(prefix / f"beff-{mpi}") in outcome.detail
    (sources / "b_eff.c").write_text("int main(void) { return undeclared; }\n")
    failed = sb.build(beff, FAKE_GUIDE, sources, mpi, tmp_path / "opt2", logs)
    assert not failed.ok and "the recipe exited 1" in failed.detail
    assert "undeclared" in failed.detail  # the compiler's error, from the log's tail


SOURCES = os.environ.get("FABRICSUITE_SUITE_SOURCES")


@pytest.mark.integration
@pytest.mark.skipif(not SOURCES, reason="FABRICSUITE_SUITE_SOURCES is not set: the suites' "
                    "sources cannot be downloaded here; set it to a directory holding them "
                    "(osu-micro-benchmarks-<version>/, mpi-benchmarks/, NPB3.4-MPI/, "
                    "NPB3.3-MZ-MPI/, b_eff.c) to run the whole guide")
def test_the_whole_guide_builds_as_written(tmp_path, capsys):
    """Every recipe whose source is present, with both MPIs (minutes: a center's check of the
    guide against its sources, not a CI test)."""
    status = sb.main(["--sources", SOURCES, "--prefix", str(tmp_path / "opt")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "FAILED" not in out

