#!/bin/bash
# An emulated cluster on one machine: N "nodes" as network namespaces on a bridge, links shaped
# with `tc tbf` to a known rate, and a real Slurm (munge, slurmctld, one slurmd per node) on them.
# The same ReFrame checks then run through sbatch/srun exactly as on a center's Slurm cluster
# (system `emucluster`, config/systems/emucluster.py).
#
#   ci/emucluster.sh up [--nodes N] [--rate RATE]   bring it up (default 4 nodes, 1gbit links)
#   ci/emucluster.sh rate RATE [NODE]               re-shape every node link, or node NODE's only
#                                                   (e.g. 500mbit; none removes the shaping)
#   ci/emucluster.sh exec CMD ...                   run CMD where the Slurm clients work (the head
#                                                   namespace, SLURM_CONF set)
#   ci/emucluster.sh status                         namespaces, daemons, sinfo
#   ci/emucluster.sh down                           stop what `up` started, delete the namespaces
#
# Needs root (network namespaces), iproute2, Slurm 22.05+ and munge (ci/setup.sh
# installs them). Names start with $FABRICSUITE_EMU_PREFIX (default "fsemu") so that other users
# of the machine are not touched; `down` ends only the processes whose PIDs `up` recorded, and
# `up` first cleans up what a failed earlier run left.
#
# Nodes: ${PREFIX}1..N at 10.213.0.1..N/24, head ${PREFIX}h at 10.213.0.254, bridge in namespace
# ${PREFIX}fab. Without Slurm, mpirun reaches the nodes through $STATE/nsagent (an rsh
# stand-in) and $STATE/hostfile (partition emucluster:mpirun). Node i's slurmd (and so its job steps) is pinned to CPU (i-1) mod CPUs: with
# 2 nodes on a 2-core machine each rank has its own core (timing is meaningful); with more nodes
# than cores, ranks share cores (launch and placement mechanics only).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${FABRICSUITE_EMU_PREFIX:-fsemu}"
STATE="${FABRICSUITE_EMU_DIR:-$REPO/results/emucluster}"
SUBNET="${FABRICSUITE_EMU_SUBNET:-10.213.0}"
CTLD_PORT="${FABRICSUITE_EMU_PORT:-26817}"
HEAD="${PREFIX}h"
FABRIC="${PREFIX}fab"
# tbf: the bucket holds 64 KiB (a 1 MiB message is shaped for 94 % of its bytes); packets wait at
# most 50 ms in the queue.
TBF_BURST=64kb
TBF_LATENCY=50ms

die() { echo "emucluster: $*" >&2; exit 1; }
log() { echo "emucluster: $*" >&2; }

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces); run as root or with sudo"
    for tool in ip tc nsenter unshare munged slurmctld slurmd sinfo; do
        command -v "$tool" >/dev/null || die "$tool not found; run: ci/setup.sh"
    done
}

node_count() { cat "$STATE/nodes" 2>/dev/null || echo 0; }

# ---------------------------------------------------------------------------------------------
# network
# ---------------------------------------------------------------------------------------------

add_namespace() { # NAME ADDRESS VETH
    local ns=$1 address=$2 veth=$3
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" netns "$FABRIC"
    ip -n "$FABRIC" link set "$veth" master br0 up
    ip -n "$ns" addr add "$address/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
}

network_up() {
    local nodes=$1
    ip netns add "$FABRIC"
    ip -n "$FABRIC" link add br0 type bridge
    ip -n "$FABRIC" link set br0 up
    ip -n "$FABRIC" link set lo up
    add_namespace "$HEAD" "$SUBNET.254" "${PREFIX}vh"
    for i in $(seq 1 "$nodes"); do
        add_namespace "$PREFIX$i" "$SUBNET.$i" "${PREFIX}v$i"
    done
}

set_rate() { # RATE or "none", [NODE number]
    local rate=$1 only=${2:-} nodes targets
    nodes=$(node_count)
    [ "$nodes" -gt 0 ] || die "not up; run: ci/emucluster.sh up"
    targets=$(seq 1 "$nodes")
    if [ -n "$only" ]; then
        [[ "$only" =~ ^[0-9]+$ ]] && [ "$only" -ge 1 ] && [ "$only" -le "$nodes" ] ||
            die "rate: node '$only' is not one of 1..$nodes"
        targets=$only
    fi
    for i in $targets; do
        if [ "$rate" = none ]; then
            ip netns exec "$PREFIX$i" tc qdisc del dev eth0 root 2>/dev/null || true
        else
            ip netns exec "$PREFIX$i" tc qdisc replace dev eth0 root tbf rate "$rate" \
                burst "$TBF_BURST" latency "$TBF_LATENCY" ||
                die "tc tbf rate $rate failed; give a tc rate such as 1gbit, 500mbit, 100mbit"
        fi
    done
    if [ -n "$only" ]; then
        log "the link of ${PREFIX}$only shaped to $rate (tbf, egress)"
    else
        echo "$rate" > "$STATE/rate"
        log "node links shaped to $rate (tbf, egress of every node)"
    fi
}

# ---------------------------------------------------------------------------------------------
# munge and Slurm
# ---------------------------------------------------------------------------------------------

write_slurm_conf() {
    local nodes=$1 cpus
    cpus=$(nproc)
    cat > "$STATE/slurm.conf" <<EOF
# Written by ci/emucluster.sh: an emulated cluster of $nodes nodes in network namespaces.
ClusterName=$PREFIX
SlurmctldHost=$HEAD($SUBNET.254)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$((CTLD_PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$STATE/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
# Each slurmd is pinned to one CPU by this script; tasks inherit it (no task binding plugin,
# which would bind every node's tasks to "its" core 0).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# PMIx keeps per-node state in TmpFS: one directory per emulated node.
TmpFS=$STATE/tmp/%n
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/log/jobcomp.txt
SchedulerType=sched/backfill
KillWait=5
MinJobAge=60
SlurmdTimeout=60
# CPUs: what slurmd detects (the machine's), so a 1-node job may hold 2 ranks (validation only:
# they share the node's pinned core). ReFrame's partition says 1 CPU, so checks place 1 rank per
# node unless told otherwise (-S ranks_per_node=N).
NodeName=${PREFIX}[1-$nodes] NodeAddr=$SUBNET.[1-$nodes] NodeHostname=${PREFIX}[1-$nodes] CPUs=$cpus RealMemory=1000
# DefaultTime: a job step that hangs (MPICH 4.0 over UCX's TCP transport can hang in
# MPI_Finalize, openucx/ucx#8738) ends after 10 minutes instead of holding a core forever.
PartitionName=emu Nodes=${PREFIX}[1-$nodes] Default=YES DefaultTime=10 MaxTime=60 State=UP
EOF
    # a 2-core machine has $cpus CPUs to pin $nodes slurmds to
    echo "$cpus" > "$STATE/cpus"
}

# Without Slurm: mpirun in the head namespace starts its daemons (Open MPI orted, MPICH
# hydra_pmi_proxy) through this agent in place of rsh, and a hostfile names the nodes.
write_rsh_agent() {
    local nodes=$1 cpus
    cpus=$(cat "$STATE/cpus")
    {
        echo '#!/bin/bash'
        echo '# nsagent HOST COMMAND...: run COMMAND on an emulated node (its network and UTS'
        echo '# namespace, pinned to its core), as rsh would on a real cluster. By ci/emucluster.sh.'
        echo 'host=$1; shift'
        echo 'case "$host" in'
        echo "    ${PREFIX}[0-9]*) n=\${host#${PREFIX}} ;;"
        echo "    ${SUBNET}.*) n=\${host##*.} ;;"
        echo "    *) echo \"nsagent: \$host is not an emulated node (${PREFIX}1..$nodes)\" >&2; exit 255 ;;"
        echo 'esac'
        echo "exec taskset -c \$(( (n - 1) % $cpus )) nsenter --net=/run/netns/${PREFIX}\$n \\"
        echo "    unshare --uts /bin/sh -c \"hostname ${PREFIX}\$n; exec \$*\""
    } > "$STATE/nsagent"
    chmod +x "$STATE/nsagent"
    : > "$STATE/hostfile"
    for i in $(seq 1 "$nodes"); do echo "$PREFIX$i slots=1" >> "$STATE/hostfile"; done
    # MPICH's hydra reads host:processes
    : > "$STATE/hostfile.hydra"
    for i in $(seq 1 "$nodes"); do echo "$PREFIX$i:1" >> "$STATE/hostfile.hydra"; done
}


start_daemons() {
    local nodes=$1 cpus i
    cpus=$(cat "$STATE/cpus")
    mkdir -p "$STATE"/{munge,run,log,state,tmp}
    head -c 1024 /dev/urandom > "$STATE/munge/munge.key"
    chmod 400 "$STATE/munge/munge.key"
    # --force: the state directory may sit below a world-writable one (/tmp)
    munged --force --socket="$STATE/munge/munge.socket" --key-file="$STATE/munge/munge.key" \
        --log-file="$STATE/log/munged.log" --pid-file="$STATE/run/munged.pid" \
        --seed-file="$STATE/munge/munged.seed"
    export SLURM_CONF="$STATE/slurm.conf"
    # slurmctld checks that its hostname is the configured one: own UTS namespace.
    ip netns exec "$HEAD" unshare --uts sh -c "hostname $HEAD && exec slurmctld"
    for i in $(seq 1 "$nodes"); do
        mkdir -p "$STATE/spool/$PREFIX$i" "$STATE/tmp/$PREFIX$i"
        # nsenter, not `ip netns exec`: slurmd needs the real /sys (cgroup file systems).
        taskset -c $(((i - 1) % cpus)) nsenter --net="/run/netns/$PREFIX$i" \
            unshare --uts sh -c "hostname $PREFIX$i && exec slurmd -N $PREFIX$i"
    done
    local deadline=$((SECONDS + 30))
    until [ "$(in_head sinfo -h -t idle -o %D 2>/dev/null || echo 0)" = "$nodes" ]; do
        [ $SECONDS -lt $deadline ] || {
            log "Slurm nodes did not become idle in 30 s; logs in $STATE/log"
            in_head sinfo >&2 || true
            return 1
        }
        sleep 0.2
    done
    log "Slurm up: $nodes idle nodes in partition emu"
}

in_head() { SLURM_CONF="$STATE/slurm.conf" ip netns exec "$HEAD" "$@"; }

stop_pidfile() { # FILE
    local pid
    [ -f "$1" ] || return 0
    pid=$(cat "$1" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$1"
}

down() {
    # Daemons by the PIDs they recorded: nothing else on the machine is touched.
    for f in "$STATE"/run/slurmd-*.pid "$STATE/run/slurmctld.pid"; do
        [ -e "$f" ] && stop_pidfile "$f"
    done
    if [ -f "$STATE/run/munged.pid" ]; then
        munged -s --socket="$STATE/munge/munge.socket" 2>/dev/null || true
        stop_pidfile "$STATE/run/munged.pid"
    fi
    # Job steps left in a node namespace (a killed test) would keep it alive: end them.
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}([0-9]+|h|fab)$" || true); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -f "$STATE/nodes" "$STATE/rate"
    rm -rf "$STATE/spool" "$STATE/tmp" "$STATE/state"
}

up() {
    local nodes=4 rate=1gbit
    while [ $# -gt 0 ]; do
        case "$1" in
            --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
            --rate) rate=${2:?--rate needs a tc rate such as 1gbit}; shift 2 ;;
            *) die "up: unknown argument '$1'; use --nodes N and --rate RATE" ;;
        esac
    done
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] && [ "$nodes" -le 64 ] || die "--nodes $nodes: use 1 to 64"
    mkdir -p "$STATE"
    down 2>/dev/null || true   # whatever an earlier, failed run left
    trap 'log "bring-up failed; cleaning up"; down' ERR
    network_up "$nodes"
    echo "$nodes" > "$STATE/nodes"
    write_slurm_conf "$nodes"
    write_rsh_agent "$nodes"
    start_daemons "$nodes"
    set_rate "$rate"
    trap - ERR
    log "up: $nodes nodes ${PREFIX}1..$nodes, links $rate; state in $STATE"
    log "run checks with: ci/emucluster.sh exec .venv/bin/reframe -C config/settings.py -c checks --system emucluster -r"
}

status() {
    echo "prefix $PREFIX, state $STATE, nodes $(node_count), rate $(cat "$STATE/rate" 2>/dev/null || echo -)"
    ip netns list | grep -E "^${PREFIX}" || echo "no namespaces"
    [ "$(node_count)" -gt 0 ] && in_head sinfo || true
}

main() {
    local command=${1:-}
    [ $# -gt 0 ] && shift
    case "$command" in
        up) need_root; up "$@" ;;
        down) need_root; down; log "down" ;;
        rate) need_root; set_rate "${1:?rate needs a tc rate such as 500mbit, or none}" "${2:-}" ;;
        exec)
            [ $# -gt 0 ] || die "exec needs a command"
            [ "$(node_count)" -gt 0 ] || die "not up; run: ci/emucluster.sh up"
            export FABRICSUITE_EMU_DIR="$STATE" FABRICSUITE_EMU_PREFIX="$PREFIX"
            in_head "$@" ;;
        status) status ;;
        *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; [ -z "$command" ] || exit 2 ;;
    esac
}

main "$@"
