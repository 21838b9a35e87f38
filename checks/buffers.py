"""Buffer checks: what a new buffer and a non-contiguous layout cost against the plain ping-pong.

Test plan. Each check runs one `netbench` method (src/methods/buffers.c) with 2 ranks, placed as
NetbenchPingPong is (every partition and programming environment with the `mpi` feature, at every
topology distance the partition's nodes have; the others skipped with the reason), and compares
its performance variables with reference/<system>.yaml, indexed by partition, programming
environment and distance. A variable without a reference fails the check. Sanity as for every
pair check: every requested size present, no NaN, netbench's own "unreliable" flags absent on the
figures the check reads, each rank bound to the CPU of its distance class.

netbench measures each size's variants interleaved with their reference (the same iteration
count, repetition by repetition) and reports every cost as the median of the paired differences,
with a noise floor; a cost below minus that floor is null and flagged unreliable. The checks
log such a flag and do not fail on it: they assert the ratios, which stay figures (a negative
cost is a finding, not an unsound run: docs/measurements.md, "What the checks saw on the
development VM").

- NetbenchBufferReuse: ping-pong with 100, 75, 50, 25 and 0 % of the transfers from one reused
  buffer, the others from fresh page-aligned buffers of their own, written before timing (Zamani
  et al. 5.3; Kutlug 3.2.4 and 4.2.3). Asserted: the ratio of 0 % reuse against 100 % at
  64 KiB, the 0 % bandwidth at 64 KiB, the 100 % latency at 8 B.
- NetbenchVector: ping-pong of MPI_Type_vector in k = 1, 8, 64 segments (stride twice the
  segment) against the contiguous message of the same bytes (Kutlug 3.2.7 and 4.2.5). Asserted:
  the ratio of 64 segments against contiguous at 64 KiB, and the contiguous latency at 64 KiB.

Both runs are kept to a few seconds of netbench (short sweeps, 3 ms per repetition): CI runs every
check on a 2-core machine. The extra cost in microseconds (netbench's `extra_us`) is in the
output but not asserted: it is a difference near zero where the fabric adds none, and a relative
bound around zero means nothing; the ratio carries the same verdict.
"""

import reframe as rfm

from fabricsuite.checks.rfm_netbench import NetbenchPairCheck, cell, value_list

KiB = 1024

#: The short sweeps of the checks (netbench's defaults are longer).
REUSE_SIZES = [8, 4 * KiB, 64 * KiB, 256 * KiB]
VECTOR_SIZES = [64, 4 * KiB, 64 * KiB]
VECTOR_SEGMENTS = [1, 8, 64]


@rfm.simple_test
class NetbenchBufferReuse(NetbenchPairCheck):
    descr = "Ping-pong with 100..0 % buffer reuse, fresh buffers on their own pages (Zamani 5.3)"
    method = "reuse"
    netbench_options = ["--sizes", value_list(REUSE_SIZES), "--repetitions", "7",
                        "--time-cap-ms", "3"]
    required_sizes = REUSE_SIZES
    size_table = "reuse"
    # A cost netbench flags (negative beyond its noise floor) is logged, not failed: the check
    # asserts the ratio, which stays a figure.
    tolerated_unreliable = r"extra_us\[size_bytes=[0-9]+,reuse_percent=[0-9]+\]|cost_extra_us"
    metrics = {
        "reuse_0pct_ratio_64KiB": cell("reuse", "ratio",
                                       size_bytes=64 * KiB, reuse_percent=0),
        "reuse_0pct_bandwidth_64KiB_MBps": cell("reuse", "bandwidth_median_MBps",
                                                size_bytes=64 * KiB, reuse_percent=0),
        "reuse_100pct_latency_8B_us": cell("reuse", "latency_median_us",
                                           size_bytes=8, reuse_percent=100),
    }

    required_variants = [("reuse", "reuse_percent", [0, 25, 50, 75, 100])]


@rfm.simple_test
class NetbenchVector(NetbenchPairCheck):
    descr = "Ping-pong of an MPI vector in k segments against the contiguous message (Kutlug 4.2.5)"
    method = "vector"
    netbench_options = ["--sizes", value_list(VECTOR_SIZES), "--segments",
                        value_list(VECTOR_SEGMENTS), "--repetitions", "7", "--time-cap-ms", "3"]
    required_sizes = VECTOR_SIZES
    size_table = "vector"
    tolerated_unreliable = r"extra_us\[size_bytes=[0-9]+,segments=[0-9]+\]|cost_extra_us"
    metrics = {
        "vector_64seg_ratio_64KiB": cell("vector", "ratio",
                                         size_bytes=64 * KiB, segments=64),
        "vector_contiguous_latency_64KiB_us": cell("contiguous", "latency_median_us",
                                                   size_bytes=64 * KiB),
    }

    required_variants = [("vector", "segments", VECTOR_SEGMENTS)]
