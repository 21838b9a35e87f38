"""Completion and matching checks: how a receive completes, whom it names, and the send mode.

Test plan. Each check runs one `netbench` method with 2 ranks, placed as NetbenchPingPong is
(every partition and programming environment with the `mpi` feature, at every topology distance
the partition's nodes have; the others skipped with the reason), and compares its performance
variables with reference/<system>.yaml, indexed by partition, programming environment and
distance. A variable without a reference fails the check. Sanity as for every pair check: every
requested size present, no NaN, netbench's own "unreliable" flags absent on the figures the check
reads, each rank bound to the CPU of its distance class; and every variant measured at every size.

netbench measures the variants of one ping-pong side by side (src/core/paired.c): per size,
rounds in which each variant runs once, in a rotated order, so that a slow phase of the machine
hits all of them; a cost is the median of the paired differences within a round, reported with
a noise floor, and a cost below minus that floor is null and flagged unreliable (a negative cost
is no sound figure). The checks log such a flag and do not fail on it: they assert latencies and
ratios, which stay figures.

- NetbenchPolling: the same non-blocking ping-pong completed by MPI_Wait ("blocking"), by a busy
  MPI_Test loop ("busy_poll") and by MPI_Test then sched_yield() ("test_yield") (Kutlug 3.2.6;
  Zamani et al. 5.4). Asserted at 8 B: the latency of each mode, and the ratio of blocking to
  busy polling.
- NetbenchAnySource: the blocking ping-pong receiving from the named peer, from MPI_ANY_SOURCE,
  and from MPI_ANY_SOURCE with MPI_ANY_TAG (Kutlug 4.2.6). Asserted at 8 B: the named and the
  MPI_ANY_SOURCE latency and the ratio of each wildcard receive to the named one.
- NetbenchSendModes: the ping-pong with MPI_Send, MPI_Ssend, MPI_Bsend (attached buffer) and
  MPI_Rsend (receives pre-posted, so ready mode is correct MPI) (Zamani et al. 5.1). Asserted:
  the latency of each mode at 8 B and its ratio to MPI_Send at 8 B, and the MPI_Bsend ratio at
  64 KiB (the copy into the attached buffer).

Each run is a few seconds of netbench (3 sizes, 11 rounds of 2 ms per variant): CI runs every
check on a 2-core machine. The costs in microseconds (netbench's `cost_us`) are in the output
but not asserted: a difference near zero where the MPI has none (over shared memory both MPIs
spin inside MPI_Wait, and a wildcard costs little) cannot carry a relative bound; the ratios
carry the same verdict.
"""

import reframe as rfm

from fabricsuite.checks.rfm_netbench import NetbenchPairCheck, cell, value_list

KiB = 1024

#: The short sweep of the checks: the smallest message, one that both MPIs send eagerly over
#: shared memory, and one beyond both eager limits here (NetbenchLogGP: 4 KiB Open MPI, about
#: 9.5 KiB MPICH).
COMPLETION_SIZES = [8, 1 * KiB, 64 * KiB]

POLLING_MODES = ["blocking", "busy_poll", "test_yield"]
RECEIVES = ["named", "any_source", "any_source_any_tag"]
#: netbench's send_mode -> the call, as the variable names say it.
SEND_MODES = {"standard": "send", "synchronous": "ssend", "buffered": "bsend", "ready": "rsend"}



class _CompletionCheck(NetbenchPairCheck):
    """The short sweep, every size required, 11 rounds of 2 ms per variant and round."""

    netbench_options = ["--sizes", value_list(COMPLETION_SIZES), "--repetitions", "11",
                        "--time-cap-ms", "2"]
    required_sizes = COMPLETION_SIZES


@rfm.simple_test
class NetbenchPolling(_CompletionCheck):
    descr = "Blocking vs polling completion: MPI_Wait, MPI_Test loop, Test+yield (Kutlug 3.2.6)"
    method = "polling"
    size_table = "polling"
    # A negative cost is failed where the check reads it (blocking at 8 B), logged elsewhere.
    tolerated_unreliable = r"cost_us\[size_bytes=[0-9]+,mode=\w+\]|\w+_cost_small_us"
    metrics = {
        **{f"polling_{mode}_8B_us": cell("polling", "latency_median_us",
                                         size_bytes=8, mode=mode)
           for mode in POLLING_MODES},
        "polling_blocking_ratio_8B": cell("polling_cost", "cost_ratio",
                                          size_bytes=8, mode="blocking"),
    }

    required_variants = [("polling", "mode", POLLING_MODES),
                         ("polling_cost", "mode", ["blocking", "test_yield"])]


@rfm.simple_test
class NetbenchAnySource(_CompletionCheck):
    descr = "Receive from MPI_ANY_SOURCE (and MPI_ANY_TAG) against a named source (Kutlug 4.2.6)"
    method = "anysource"
    size_table = "anysource"
    tolerated_unreliable = r"cost_us\[size_bytes=[0-9]+,receive=\w+\]|\w+_cost_small_us"
    metrics = {
        "anysource_named_8B_us": cell("anysource", "latency_median_us",
                                      size_bytes=8, receive="named"),
        "anysource_any_source_8B_us": cell("anysource", "latency_median_us",
                                           size_bytes=8, receive="any_source"),
        "anysource_ratio_8B": cell("anysource_cost", "cost_ratio",
                                   size_bytes=8, receive="any_source"),
        "anysource_anytag_ratio_8B": cell("anysource_cost", "cost_ratio",
                                          size_bytes=8, receive="any_source_any_tag"),
    }

    required_variants = [("anysource", "receive", RECEIVES),
                         ("anysource_cost", "receive", RECEIVES[1:])]


@rfm.simple_test
class NetbenchSendModes(_CompletionCheck):
    descr = "Ping-pong latency of MPI_Send, MPI_Ssend, MPI_Bsend, MPI_Rsend (Zamani et al. 5.1)"
    method = "sendmodes"
    size_table = "sendmodes"
    metrics = {
        **{f"sendmode_{call}_8B_us": cell("sendmodes", "latency_median_us",
                                          size_bytes=8, send_mode=mode)
           for mode, call in SEND_MODES.items()},
        **{f"sendmode_{call}_ratio_8B": cell("sendmodes_ratio", "ratio_to_standard",
                                             size_bytes=8, send_mode=mode)
           for mode, call in SEND_MODES.items() if mode != "standard"},
        "sendmode_bsend_ratio_64KiB": cell("sendmodes_ratio", "ratio_to_standard",
                                           size_bytes=64 * KiB, send_mode="buffered"),
    }

    required_variants = [("sendmodes", "send_mode", list(SEND_MODES)),
                         ("sendmodes_ratio", "send_mode", [m for m in SEND_MODES
                                                           if m != "standard"])]
