"""OSU Micro-Benchmarks: point-to-point, multi-pair and collectives, the center's usual yardstick.

Test plan. The programs come from Spack on partitions with Spack (extras.spack), else from the
path, $FABRICSUITE_OSU_DIR or -S binary=...; otherwise each check is skipped, saying so.
Point-to-point checks run 2 ranks, on two nodes where the partition has them; collectives run on
every core of 1, 2, 4 nodes. Every rank starts through config/launchers/record-placement: ranks
on one node that share a CPU fail in sanity (their figures would blame the fabric). Bandwidths
are asserted at 8 B too: a message-rate collapse leaves 1 MiB untouched. References per
partition, environment and scale (reference/<system>.yaml). Figures are never taken from a `-c`
(validation) run: validation is its own check, with MPI_FLOAT data because MPI_CHAR sums overflow
in osu_allreduce -c.

- OsuLatency: osu_latency, 8 B and 64 KiB latency (us).
- OsuBandwidth: osu_bw, 8 B and 1 MiB bandwidth and the peak over sizes (MB/s).
- OsuBiBandwidth: osu_bibw, 8 B and 1 MiB bidirectional bandwidth (MB/s).
- OsuMultiBandwidth: osu_mbw_mr, 8 B message rate and 1 MiB bandwidth.
- OsuMultiLatency: osu_multi_lat, 8 B latency.
- OsuAllreduce, OsuAlltoall: 8 B and 1 MiB latency; OsuBarrier: latency.
- OsuIallreduce: overlap (%) and overall time at 1 MiB.
- OsuAllreduceValidation: osu_allreduce -c, every size must say Pass.
"""

import reframe as rfm

from fabricsuite.base.metrics import MBPS, US, Figure, PerfSpec, reads
from fabricsuite.checks.rfm_external import MultiRankExternalCheck, TwoRankCheck
from fabricsuite.data.external import osu_sizes, parse_osu


def at(column, size=None):
    """A figure of the one table of an OSU run, at a message size (none: a one-row table)."""
    return reads("osu", column) if size is None else reads("osu", column, size_bytes=size)


def peak(column):
    """The largest value of a column over every size."""
    return reads(None, f"peak_{column}")


class _Osu(rfm.RegressionTestPlugin):
    suite = "osu"

    def parse(self):
        # every size of the run's -m must be there: a run that stopped early is not judged
        return parse_osu(self.stdout_text(), self.program_names[0],
                         sizes=osu_sizes(self.program_opts))


class _OsuPair(_Osu, TwoRankCheck):
    program_opts = ["-m", "1:4194304"]  # OSU's default range, explicit: every size expected


class _OsuCollectiveLatency(_Osu, MultiRankExternalCheck):
    program_opts = ["-m", "8:1048576"]
    metrics = {"latency_8B_us": Figure(at("latency_us", 8), US),
               "latency_1MiB_us": Figure(at("latency_us", 1048576), US)}


@rfm.simple_test
class OsuLatency(_OsuPair):
    descr = "OSU osu_latency: ping-pong latency"
    program_names = ["osu_latency"]
    metrics = {"latency_8B_us": Figure(at("latency_us", 8), US),
               "latency_64KiB_us": Figure(at("latency_us", 65536), US)}


@rfm.simple_test
class OsuBandwidth(_OsuPair):
    descr = "OSU osu_bw: windowed streaming bandwidth"
    program_names = ["osu_bw"]
    metrics = {"bandwidth_8B_MBps": Figure(at("bandwidth_MBps", 8), MBPS),
               "bandwidth_1MiB_MBps": Figure(at("bandwidth_MBps", 1048576), MBPS),
               "bandwidth_peak_MBps": Figure(peak("bandwidth_MBps"), MBPS)}


@rfm.simple_test
class OsuBiBandwidth(_OsuPair):
    descr = "OSU osu_bibw: bidirectional bandwidth"
    program_names = ["osu_bibw"]
    metrics = {"bibandwidth_8B_MBps": Figure(at("bandwidth_MBps", 8), MBPS),
               "bibandwidth_1MiB_MBps": Figure(at("bandwidth_MBps", 1048576), MBPS)}


@rfm.simple_test
class OsuMultiBandwidth(_OsuPair):
    descr = "OSU osu_mbw_mr: bandwidth and message rate of the rank pairs"
    program_names = ["osu_mbw_mr"]
    metrics = {"message_rate_8B_per_s": Figure(at("messages_per_s", 8),
                                                PerfSpec("msg/s", "higher")),
               "bandwidth_1MiB_MBps": Figure(at("bandwidth_MBps", 1048576), MBPS)}


@rfm.simple_test
class OsuMultiLatency(_OsuPair):
    descr = "OSU osu_multi_lat: latency of the rank pairs"
    program_names = ["osu_multi_lat"]
    metrics = {"latency_8B_us": Figure(at("latency_us", 8), US)}


@rfm.simple_test
class OsuAllreduce(_OsuCollectiveLatency):
    descr = "OSU osu_allreduce: average latency"
    program_names = ["osu_allreduce"]


@rfm.simple_test
class OsuAlltoall(_OsuCollectiveLatency):
    descr = "OSU osu_alltoall: average latency"
    program_names = ["osu_alltoall"]


@rfm.simple_test
class OsuBarrier(_Osu, MultiRankExternalCheck):
    descr = "OSU osu_barrier: average latency"
    program_names = ["osu_barrier"]
    metrics = {"latency_us": Figure(at("latency_us"), US)}


@rfm.simple_test
class OsuIallreduce(_Osu, MultiRankExternalCheck):
    descr = "OSU osu_iallreduce: communication/computation overlap"
    program_names = ["osu_iallreduce"]
    program_opts = ["-m", "8:1048576"]
    metrics = {"overlap_1MiB_percent": Figure(at("overlap_percent", 1048576),
                                              PerfSpec("%", "higher")),
               "overall_1MiB_us": Figure(at("overall_us", 1048576), US)}


@rfm.simple_test
class OsuAllreduceValidation(_Osu, MultiRankExternalCheck):
    descr = "OSU osu_allreduce -c: results validated, nothing timed"
    program_names = ["osu_allreduce"]
    program_opts = ["-c", "-T", "mpi_float", "-m", "8:1048576"]

    def problems(self, result):
        if "validation" not in result.columns:
            return ["osu_allreduce printed no Validation column (was -c honoured?)"]
        failed = [int(r["size_bytes"]) for r in result.rows if r["validation"] != "Pass"]
        return [f"validation failed at sizes {failed}"] if failed else []
