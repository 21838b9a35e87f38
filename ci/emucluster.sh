#!/bin/bash
# An emulated cluster on one machine: N "nodes" as network namespaces on a bridge, links shaped
# with `tc tbf` to a known rate, and a real Slurm (munge, slurmctld, one slurmd per node) on them.
# The same ReFrame checks then run through sbatch/srun exactly as on a center's Slurm cluster
# (system `emucluster`, config/systems/emucluster.py).
#
#   ci/emucluster.sh up [--nodes N] [--rate RATE] [--leaves L] [--uplink-rate RATE]
#                       [--burst SIZE] [--declare RATE] [--rails K]
#                                                   bring it up (default 4 nodes, 1gbit links,
#                                                   one switch, shaper burst 64kb: see TBF_BURST
#                                                   below); with L >= 2 leaf switches, the
#                                                   nodes in L blocks under them, the leaves'
#                                                   uplinks to a spine switch (unshaped unless
#                                                   --uplink-rate) and a Slurm topology.conf;
#                                                   --declare: the partition's contract of its
#                                                   links (fabricsuite.data.links), none by default;
#                                                   --rails K (1-4): K links a node (eth0..eth<K-1>),
#                                                   rail k of every node on rail k's own switch
#                                                   (and, with leaves, its own leaves, spine and
#                                                   uplinks), each shaped on its own; Slurm and
#                                                   the head stay on rail 1 (eth0)
#   ci/emucluster.sh rate RATE ... --rail K         any rate command below on rail K only (default:
#                                                   a node's every rail; --link and --port: rail 1)
#   ci/emucluster.sh rate RATE --switch K           every port of rail K's switch toward its nodes
#                                                   (a whole rail's switch slow on every node; the
#                                                   nodes report their links healthy)
#   ci/emucluster.sh rate RATE [NODE]               re-shape every node link (each node's egress),
#                                                   or node NODE's only, both directions (e.g.
#                                                   500mbit; none removes the shaping)
#   ci/emucluster.sh rate RATE --link NAME          re-shape one link: a node's (NAME: its number
#                                                   or name) or a leaf's uplink (uplink1..L, both
#                                                   directions; uplinks: every one)
#   ci/emucluster.sh rate RATE --port NODE          shape the switch port toward node NODE only
#                                                   (the fabric's side): the node reports its
#                                                   link healthy and receives at RATE (a bad
#                                                   cable or port no link reading sees; none
#                                                   removes it)
#   ci/emucluster.sh link NODE down|up [--rail K]   take node NODE's link down (its end at the
#                                                   bridge: the node's eth0 loses its carrier)
#                                                   or bring it up again
#   ci/emucluster.sh exec CMD ...                   run CMD where the Slurm clients work (the head
#                                                   namespace, SLURM_CONF set)
#   ci/emucluster.sh status                         namespaces, daemons, sinfo
#   ci/emucluster.sh down                           stop what `up` started, delete the namespaces
#
# Needs root (network namespaces), iproute2, Slurm 22.05+ and munge (ci/setup.sh
# installs them). Names start with $FABRICSUITE_EMU_PREFIX (default "fsemu"; 1 to 12 of A-Z a-z
# 0-9 _ -). The script touches only what it started itself, as recorded in its state directory
# ($FABRICSUITE_EMU_DIR): the namespaces it created (name and namespace inode) and the daemons it
# started (PID and start time, checked before any signal). `down` ends those; `up` refuses while
# the cluster of its state directory is up, first ends what an earlier, killed run with it left,
# and a failed `up` ends what it started.
# Another cluster (another state directory) is never touched, whatever its names.
#
# Nodes: ${PREFIX}1..N at 10.213.0.1..N/24, head ${PREFIX}h at 10.213.0.254, bridge in namespace
# ${PREFIX}fab (br0; with --leaves L: bridges leaf1..leafL and spine there, leaf l's uplink the
# veth pair up<l> (on leaf l) - dn<l> (on the spine), the head on the spine; slurm.conf says
# TopologyPlugin=topology/tree, and topology.conf beside it names the same tree, so that
# `scontrol show topology` reads it). An uplink slower than the sum of its leaf's node links is
# oversubscribed, as on a tapered fat tree: concurrent pairs crossing it share it. With --rails
# K, rail k >= 2 is eth<k-1> on every node at $SUBNET + k-1 (10.213.1.i for rail 2), its switch
# r<k>br (or leaves r<k>leaf1..L under r<k>spine, uplinks r<k>up<l> - r<k>dn<l>), a node's port
# on it r<k>n<i>: a rail reaches only its own rail, as on a rail-optimized fat tree whose rails
# meet at no switch. Without Slurm, mpirun reaches the nodes through $STATE/nsagent (an rsh
# stand-in) and $STATE/hostfile (partition emucluster:mpirun). Node i's slurmd (and so its job
# steps) is pinned to CPU (i-1) mod CPUs: with 2 nodes on a 2-core machine each rank has its own
# core (timing is meaningful); with more nodes than cores, ranks share cores (launch and
# placement mechanics only).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${FABRICSUITE_EMU_PREFIX:-fsemu}"
STATE="${FABRICSUITE_EMU_DIR:-$REPO/results/emucluster}"
SUBNET="${FABRICSUITE_EMU_SUBNET:-10.213.0}"
CTLD_PORT="${FABRICSUITE_EMU_PORT:-26817}"
HEAD="${PREFIX}h"
FABRIC="${PREFIX}fab"
# tbf: the bucket holds the burst (up --burst, default 64 KiB), which a message passes at the
# host's speed: a ping-pong of S bytes measures about rate x S / (S - burst). 64 KiB suits the
# checks' 1 MiB figures (0.98 of 1 Gbit, Open MPI) but reads 1.25 of 200 Mbit at the map's
# bandwidth size (256 KiB), so that a link shaped 25 % slow looked 7 % slow (issue 41); with
# --burst 16kb one pair alone measures 1.01 of 200 Mbit and 0.985 of 1 Gbit there (bibw, Open
# MPI, 2026-11-28), while the hosts' own cost then shows at 1 MiB and 1 Gbit (0.91 Open MPI,
# 0.82 MPICH) and 8 KiB falls to 0.87 of 1 Gbit. Packets wait at most 50 ms in the queue.
TBF_BURST=64kb
TBF_LATENCY=50ms

die() { echo "emucluster: $*" >&2; exit 1; }
log() { echo "emucluster: $*" >&2; }

# What comes from the environment is checked before it reaches a name, a file or a shell: a
# prefix is matched literally, never as a pattern, and only these characters may form one.
check_settings() {
    [[ "$PREFIX" =~ ^[A-Za-z0-9][A-Za-z0-9_-]{0,11}$ ]] ||
        die "FABRICSUITE_EMU_PREFIX $(printf %q "$PREFIX") refused: use 1 to 12 of A-Z a-z 0-9 _ - (a letter or digit first)"
    [[ "$SUBNET" =~ ^(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){2}$ ]] ||
        die "FABRICSUITE_EMU_SUBNET $(printf %q "$SUBNET") refused: use the first three numbers of an IPv4 /24 (e.g. 10.213.0)"
    [[ "$CTLD_PORT" =~ ^[1-9][0-9]{3,4}$ ]] && [ "$CTLD_PORT" -ge 1024 ] && [ "$CTLD_PORT" -le 65534 ] ||
        die "FABRICSUITE_EMU_PORT $(printf %q "$CTLD_PORT") refused: use a port number from 1024 to 65534 (it and the next one are used)"
    # The state directory is written into slurm.conf and the rsh agent: a plain absolute path.
    [[ "$STATE" = /* ]] || STATE="$PWD/$STATE"
    [[ "$STATE" =~ ^/[A-Za-z0-9_./+,:=@~-]*$ ]] ||
        die "FABRICSUITE_EMU_DIR $(printf %q "$STATE") refused: use a path of A-Z a-z 0-9 _ . / + , : = @ ~ -"
}

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces); run as root or with sudo"
    for tool in ip tc nsenter unshare munged munge slurmctld slurmd sinfo; do
        command -v "$tool" >/dev/null || die "$tool not found; run: ci/setup.sh"
    done
}

node_count() {
    local n
    n=$(cat "$STATE/nodes" 2>/dev/null || true)
    [[ "$n" =~ ^[1-9][0-9]*$ ]] && echo "$n" || echo 0
}

# ---------------------------------------------------------------------------------------------
# what this script started, and only that
# ---------------------------------------------------------------------------------------------
# $STATE/run/namespaces: "NAME INODE" of each namespace `up` created (INODE: the namespace's own,
# so a namespace of the same name made by someone else later is not taken for it).
# $STATE/run/daemons: "NAME PID START" of each daemon `up` started (START: the process's start
# time, field 22 of /proc/PID/stat, so a PID the kernel gave to another process is not signalled).

ns_inode() { stat -L -c %i "/run/netns/$1" 2>/dev/null || true; }

# proc_start PID: its start time in clock ticks after boot; nothing if there is no such process,
# or only its exit status is left (a zombie).
proc_start() {
    local stat fields
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    read -r -a fields <<< "${stat##*) }"
    [ "${fields[0]:-}" = Z ] || echo "${fields[19]:-}"
}

is_started() { # PID START: the process is the one recorded
    [[ "$1" =~ ^[1-9][0-9]*$ && "$2" =~ ^[0-9]+$ ]] && [ "$(proc_start "$1")" = "$2" ]
}

add_netns() { # NAME: create it and record it; an existing one (anyone's) fails, untouched
    ip netns add "$1"
    echo "$1 $(ns_inode "$1")" >> "$STATE/run/namespaces"
}

start_daemon() { # NAME COMMAND...: start COMMAND (a daemon kept in the foreground) and record it
    local name=$1 pid
    shift
    "$@" < /dev/null >> "$STATE/log/$name.out" 2>&1 &
    pid=$!
    echo "$name $pid $(proc_start "$pid")" >> "$STATE/run/daemons"
}

running_daemons() { # true when a daemon `up` recorded still runs
    local name pid start
    [ -f "$STATE/run/daemons" ] || return 1
    while read -r name pid start; do
        is_started "$pid" "$start" && return 0
    done < "$STATE/run/daemons"
    return 1
}

stop_daemons() {
    local record="$STATE/run/daemons" name pid start alive=() i
    [ -f "$record" ] || return 0
    while read -r name pid start; do
        [[ "$pid" =~ ^[1-9][0-9]*$ ]] || continue
        if is_started "$pid" "$start"; then
            kill -TERM "$pid" 2>/dev/null || true
            alive+=("$pid $start")
        elif [ -n "$(proc_start "$pid")" ]; then
            log "PID $pid is no longer the $name that up started: left alone"
        fi
    done < "$record"
    for _ in $(seq 50); do
        local still=()
        for i in "${alive[@]}"; do is_started $i && still+=("$i"); done
        alive=("${still[@]}")
        [ ${#alive[@]} -gt 0 ] || break
        sleep 0.1
    done
    for i in "${alive[@]}"; do
        # shellcheck disable=SC2086
        is_started $i && kill -KILL "${i%% *}" 2>/dev/null || true
    done
    rm -f "$record"
}

delete_namespaces() {
    local record="$STATE/run/namespaces" ns inode pid
    [ -f "$record" ] || return 0
    while read -r ns inode; do
        [[ "$ns" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ && "$inode" =~ ^[0-9]+$ ]] || continue
        if [ "$(ns_inode "$ns")" != "$inode" ]; then
            [ -e "/run/netns/$ns" ] && log "namespace $ns is not the one up created: left alone"
            continue
        fi
        # Job steps left in a node namespace (a killed test) would keep it alive: end them,
        # each checked to be in this namespace right before the signal.
        for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
            [ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = "$inode" ] &&
                kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done < "$record"
    rm -f "$record"
}

# ---------------------------------------------------------------------------------------------
# network
# ---------------------------------------------------------------------------------------------

add_namespace() { # NAME ADDRESS VETH BRIDGE
    local ns=$1 address=$2 veth=$3 bridge=$4
    add_netns "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" netns "$FABRIC"
    ip -n "$FABRIC" link set "$veth" master "$bridge" up
    ip -n "$ns" addr add "$address/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
}

# The bridge (switch) node i hangs from: br0, or with L leaves leaf l of contiguous blocks;
# on rail k >= 2 the same names after "r<k>" (r2br, r2leaf1).
leaf_of() { # NODE number, NODES, LEAVES[, RAIL]
    local rail=${4:-1} name
    if [ "$3" -le 1 ]; then name=br; else name="leaf$(( ($1 - 1) * $3 / $2 + 1 ))"; fi
    if [ "$rail" -le 1 ]; then [ "$name" = br ] && echo br0 || echo "$name"; else echo "r$rail$name"; fi
}

rail_prefix() { [ "${1:-1}" -le 1 ] || echo "r$1"; } # RAIL: "" for rail 1, r<k> for the others

# node_port NODE RAIL: the switch's end of node NODE's link on rail RAIL (in the fabric namespace)
node_port() { if [ "${2:-1}" -le 1 ]; then echo "${PREFIX}v$1"; else echo "r$2n$1"; fi; }

rail_subnet() { # RAIL: the first three numbers of rail RAIL's /24
    echo "${SUBNET%.*}.$(( ${SUBNET##*.} + $1 - 1 ))"
}

rail_count() {
    local k
    k=$(cat "$STATE/rails" 2>/dev/null || true)
    [[ "$k" =~ ^[1-4]$ ]] && echo "$k" || echo 1
}

switches_up() { # RAIL LEAVES: rail RAIL's switches (one, or L leaves under a spine)
    local p l
    p=$(rail_prefix "$1")
    if [ "$2" -le 1 ]; then
        ip -n "$FABRIC" link add "$(leaf_of 1 1 1 "$1")" type bridge
        ip -n "$FABRIC" link set "$(leaf_of 1 1 1 "$1")" up
        return
    fi
    ip -n "$FABRIC" link add "${p}spine" type bridge
    ip -n "$FABRIC" link set "${p}spine" up
    for l in $(seq 1 "$2"); do
        ip -n "$FABRIC" link add "${p}leaf$l" type bridge
        ip -n "$FABRIC" link set "${p}leaf$l" up
        ip -n "$FABRIC" link add "${p}up$l" type veth peer name "${p}dn$l"
        ip -n "$FABRIC" link set "${p}up$l" master "${p}leaf$l" up
        ip -n "$FABRIC" link set "${p}dn$l" master "${p}spine" up
    done
}

add_rail_link() { # NODE number, RAIL >= 2, NODES, LEAVES: the node's eth<RAIL-1> on its rail
    local i=$1 k=$2 dev="eth$(($2 - 1))"
    # made in the fabric namespace: its names are no one else's there
    ip -n "$FABRIC" link add "$(node_port "$i" "$k")" type veth peer name "$dev" netns "$PREFIX$i"
    ip -n "$FABRIC" link set "$(node_port "$i" "$k")" master "$(leaf_of "$i" "$3" "$4" "$k")" up
    ip -n "$PREFIX$i" addr add "$(rail_subnet "$k").$i/24" dev "$dev"
    ip -n "$PREFIX$i" link set "$dev" up
}

network_up() {
    local nodes=$1 leaves=$2 rails=${3:-1} i k
    add_netns "$FABRIC"
    ip -n "$FABRIC" link set lo up
    for k in $(seq 1 "$rails"); do switches_up "$k" "$leaves"; done
    if [ "$leaves" -le 1 ]; then
        add_namespace "$HEAD" "$SUBNET.254" "${PREFIX}vh" br0
    else
        add_namespace "$HEAD" "$SUBNET.254" "${PREFIX}vh" spine
    fi
    for i in $(seq 1 "$nodes"); do
        add_namespace "$PREFIX$i" "$SUBNET.$i" "${PREFIX}v$i" "$(leaf_of "$i" "$nodes" "$leaves")"
        for k in $(seq 2 "$rails"); do add_rail_link "$i" "$k" "$nodes" "$leaves"; done
    done
}

check_node() { # WHAT NODE: NODE is the number of a node of the cluster that is up
    local nodes
    nodes=$(node_count)
    [ "$nodes" -gt 0 ] || die "not up; run: ci/emucluster.sh up"
    [[ "$2" =~ ^[1-9][0-9]*$ ]] && [ "$2" -le "$nodes" ] ||
        die "$1: node $(printf %q "$2") is not one of 1..$nodes"
}

leaf_count() {
    local l
    l=$(cat "$STATE/leaves" 2>/dev/null || true)
    [[ "$l" =~ ^[1-9][0-9]*$ ]] && echo "$l" || echo 1
}

shape() { # NAMESPACE DEVICE RATE ("none": unshaped)
    if [ "$3" = none ]; then
        ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
    else
        ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" \
            burst "$(cat "$STATE/burst" 2>/dev/null || echo "$TBF_BURST")" latency "$TBF_LATENCY" ||
            die "tc tbf rate $(printf %q "$3") failed; give a tc rate such as 1gbit, 500mbit, 100mbit"
    fi
}

set_uplink_rate() { # RATE, LEAF number or "s" (every uplink), RAIL
    local l targets p
    p=$(rail_prefix "${3:-1}")
    [ "$(node_count)" -gt 0 ] || die "not up; run: ci/emucluster.sh up"
    [ "$(leaf_count)" -ge 2 ] ||
        die "rate --link uplink...: this cluster has one switch; bring it up with --leaves L"
    if [ "$2" = s ]; then
        targets=$(seq 1 "$(leaf_count)")
    else
        [[ "$2" =~ ^[1-9][0-9]*$ ]] && [ "$2" -le "$(leaf_count)" ] ||
            die "rate --link uplink$(printf %q "$2"): use uplink1..uplink$(leaf_count) or uplinks"
        targets=$2
    fi
    for l in $targets; do
        shape "$FABRIC" "${p}up$l" "$1"   # leaf -> spine
        shape "$FABRIC" "${p}dn$l" "$1"   # spine -> leaf
    done
    log "uplink$2${p:+ of rail ${3:-1}} shaped to $1 (tbf, both directions)"
}

set_link_rate() { # RATE NAME RAIL: a node's number or name, uplinkL, or uplinks
    case "$2" in
        uplink*) set_uplink_rate "$1" "${2#uplink}" "$3" ;;
        "$PREFIX"[0-9]*) set_rate "$1" "${2#"$PREFIX"}" "$3" ;;
        *) set_rate "$1" "$2" "$3" ;;
    esac
}

set_port_rate() { # RATE or "none", NODE number or name, RAIL: the switch port's egress toward it only
    local node=${2#"$PREFIX"} rail=${3:-1}
    check_node rate "$node"
    shape "$FABRIC" "$(node_port "$node" "$rail")" "$1"
    log "the switch port toward ${PREFIX}$node on rail $rail shaped to $1 (tbf; the node's own link unchanged)"
}

set_switch_rate() { # RATE or "none", RAIL: every port of the rail's switch(es) toward its nodes
    local i
    check_node rate 1
    for i in $(seq 1 "$(node_count)"); do shape "$FABRIC" "$(node_port "$i" "$2")" "$1"; done
    log "every port of rail $2's switch toward its $(node_count) nodes shaped to $1 (tbf; the nodes' links unchanged)"
}

check_rail() { # RAIL: one of this cluster's rails
    [[ "$1" =~ ^[1-9]$ ]] && [ "$1" -le "$(rail_count)" ] ||
        die "rail $(printf %q "$1") is not one of 1..$(rail_count) (bring the cluster up with --rails K)"
}

set_rate() { # RATE or "none", [NODE number], [RAIL: every rail when empty]
    local rate=$1 only=${2:-} rails targets i k
    if [ -n "${3:-}" ]; then rails=$3; else rails=$(seq 1 "$(rail_count)"); fi
    if [ -n "$only" ]; then
        check_node rate "$only"
        targets=$only
    else
        check_node rate 1
        targets=$(seq 1 "$(node_count)")
    fi
    for i in $targets; do
        for k in $rails; do
            shape "$PREFIX$i" "eth$((k - 1))" "$rate"
            # One node's link is slow both ways: its switch port's egress too (a pair with it
            # then measures the rate, not the mean of two rates). Re-shaping every link leaves
            # the switch ports unshaped: each path then crosses one shaper, the sender's.
            if [ -n "$only" ]; then
                shape "$FABRIC" "$(node_port "$i" "$k")" "$rate"
            else
                shape "$FABRIC" "$(node_port "$i" "$k")" none
            fi
        done
    done
    local which="rail(s) $(echo $rails | tr ' ' ,)"
    if [ -n "$only" ]; then
        log "the link of ${PREFIX}$only shaped to $rate on $which (tbf, both directions)"
    else
        [ -n "${3:-}" ] || printf '%s\n' "$rate" > "$STATE/rate"
        log "node links shaped to $rate on $which (tbf, egress of every node)"
    fi
}

set_link() { # NODE number, "down" or "up", RAIL
    check_node link "$1"
    case "$2" in
        down|up) ip -n "$FABRIC" link set "$(node_port "$1" "${3:-1}")" "$2" ;;
        *) die "link: $(printf %q "$2") is neither down nor up" ;;
    esac
    log "the link of ${PREFIX}$1 on rail ${3:-1} is $2"
}

# ---------------------------------------------------------------------------------------------
# munge and Slurm
# ---------------------------------------------------------------------------------------------

write_slurm_conf() {
    local nodes=$1 leaves=$2 cpus l i members
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
# A batch job starts at the controller's next scheduling pass (about a second), not up to 3 s
# later (Slurm's default batch_sched_delay, for sites that submit jobs by the thousand): sbatch
# to start took 2.5-2.9 s here before, 0.3-0.8 s after, and every ReFrame job of the cluster paid
# it (docs/measurements.md, "ReFrame sessions: their fixed cost").
SchedulerParameters=batch_sched_delay=0
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
    if [ "$leaves" -ge 2 ]; then
        echo "TopologyPlugin=topology/tree" >> "$STATE/slurm.conf"
        {
            echo "# the switch tree of ci/emucluster.sh (read by Slurm's topology/tree)"
            for l in $(seq 1 "$leaves"); do
                members=""
                for i in $(seq 1 "$nodes"); do
                    [ "$(leaf_of "$i" "$nodes" "$leaves")" = "leaf$l" ] && members+=",$PREFIX$i"
                done
                echo "SwitchName=leaf$l Nodes=${members#,}"
            done
            echo "SwitchName=spine Switches=leaf[1-$leaves]"
        } > "$STATE/topology.conf"
    else
        rm -f "$STATE/topology.conf"
    fi
    # a 2-core machine has $cpus CPUs to pin $nodes slurmds to
    echo "$cpus" > "$STATE/cpus"
}

# Without Slurm: mpirun in the head namespace starts its daemons (Open MPI orted, MPICH
# hydra_pmi_proxy) through this agent in place of rsh, and a hostfile names the nodes.
write_rsh_agent() {
    local nodes=$1 cpus i
    cpus=$(cat "$STATE/cpus")
    {
        echo '#!/bin/bash'
        echo '# nsagent HOST COMMAND...: run COMMAND on an emulated node (its network and UTS'
        echo '# namespace, pinned to its core), as rsh would on a real cluster. By ci/emucluster.sh.'
        printf 'prefix=%q subnet=%q nodes=%q cpus=%q\n' "$PREFIX" "$SUBNET" "$nodes" "$cpus"
        cat <<'EOF'
host=${1-}
[ $# -gt 0 ] && shift
# HOST is a node's name (PREFIX1..N) or address (SUBNET.1..N) and nothing else: it is compared
# as a string, never evaluated, and only the node number checked here goes further.
case $host in
    "$prefix"*) n=${host#"$prefix"} ;;
    "$subnet".*) n=${host#"$subnet".} ;;
    *) n= ;;
esac
case $n in
    [1-9] | [1-9][0-9]) ;;
    *) n= ;;
esac
if [ -z "$n" ] || [ "$n" -gt "$nodes" ]; then
    printf 'nsagent: %q is not an emulated node (%s1..%s%s)\n' "$host" "$prefix" "$prefix" "$nodes" >&2
    exit 255
fi
# COMMAND is one command line for the node's shell, as rsh hands it over (mpirun quotes its
# arguments for that); the node's name reaches that shell as an argument, not as code.
exec taskset -c "$(( (n - 1) % cpus ))" nsenter --net="/run/netns/$prefix$n" \
    unshare --uts /bin/sh -c 'hostname "$1" && shift && exec /bin/sh -c "$*"' nsagent "$prefix$n" "$@"
EOF
    } > "$STATE/nsagent"
    chmod +x "$STATE/nsagent"
    : > "$STATE/hostfile"
    for i in $(seq 1 "$nodes"); do echo "$PREFIX$i slots=1" >> "$STATE/hostfile"; done
    # MPICH's hydra reads host:processes
    : > "$STATE/hostfile.hydra"
    for i in $(seq 1 "$nodes"); do echo "$PREFIX$i:1" >> "$STATE/hostfile.hydra"; done
}

# The daemons stay in the foreground (munged -F, slurmctld -D, slurmd -D), in the background of
# this script: the PID it records is the daemon's own from the start, never read back from a file.
start_daemons() {
    local nodes=$1 cpus i deadline
    cpus=$(cat "$STATE/cpus")
    mkdir -p "$STATE"/{munge,run,log,state,tmp}
    rm -f "$STATE/munge/munge.key"
    head -c 1024 /dev/urandom > "$STATE/munge/munge.key"
    chmod 400 "$STATE/munge/munge.key"
    # --force: the state directory may sit below a world-writable one (/tmp)
    start_daemon munged munged --foreground --force --socket="$STATE/munge/munge.socket" \
        --key-file="$STATE/munge/munge.key" --log-file="$STATE/log/munged.log" \
        --pid-file="$STATE/run/munged.pid" --seed-file="$STATE/munge/munged.seed"
    deadline=$((SECONDS + 10))
    until munge --socket="$STATE/munge/munge.socket" --no-input > /dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || {
            log "munged did not answer in 10 s; logs in $STATE/log"
            return 1
        }
        sleep 0.1
    done
    export SLURM_CONF="$STATE/slurm.conf"
    # slurmctld checks that its hostname is the configured one: own UTS namespace. The names
    # reach sh as arguments, not as code.
    start_daemon slurmctld ip netns exec "$HEAD" unshare --uts \
        sh -c 'hostname "$1" && exec slurmctld -D -f "$2"' sh "$HEAD" "$SLURM_CONF"
    for i in $(seq 1 "$nodes"); do
        mkdir -p "$STATE/spool/$PREFIX$i" "$STATE/tmp/$PREFIX$i"
        # nsenter, not `ip netns exec`, and in a mount namespace of its own: a sysfs of the
        # node's network namespace on /sys (its jobs read their node's interfaces there, as on a
        # real node, not the host's), with the real cgroup file systems moved back under it
        # (slurmd needs them).
        start_daemon "slurmd-$PREFIX$i" taskset -c $(((i - 1) % cpus)) \
            nsenter --net="/run/netns/$PREFIX$i" unshare --uts --mount \
            sh -c 'mount --make-rprivate / && cg=$(mktemp -d) &&
                   mount --rbind /sys/fs/cgroup "$cg" && mount -t sysfs sysfs /sys &&
                   mount --move "$cg" /sys/fs/cgroup && rmdir "$cg" &&
                   hostname "$1" && exec slurmd -D -f "$2" -N "$1"' sh "$PREFIX$i" "$SLURM_CONF"
    done
    deadline=$((SECONDS + 30))
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

recorded_namespaces() {
    local ns inode
    [ -f "$STATE/run/namespaces" ] || return 0
    while read -r ns inode; do
        [ -n "$ns" ] && [ "$(ns_inode "$ns")" = "$inode" ] && echo "$ns"
    done < "$STATE/run/namespaces"
    return 0
}

down() {
    # Only what the records of this state directory name: nothing else on the machine.
    if [ -f "$STATE/nodes" ] && [ ! -f "$STATE/run/namespaces" ] && [ ! -f "$STATE/run/daemons" ]; then
        log "no record in $STATE/run of what was started (brought up by an older ci/emucluster.sh?): nothing stopped; end its daemons and ip netns del its namespaces by hand"
    fi
    stop_daemons
    delete_namespaces
    rm -f "$STATE/nodes" "$STATE/rate" "$STATE/declared_rate" "$STATE/leaves" "$STATE/burst" "$STATE/topology.conf" "$STATE/rails"
    rm -rf "$STATE/spool" "$STATE/tmp" "$STATE/state"
}

up() {
    local nodes=4 rate=1gbit leaves=1 uplink_rate=none burst=$TBF_BURST declare=none rails=1 k
    while [ $# -gt 0 ]; do
        case "$1" in
            --rails) rails=${2:?--rails needs a number}; shift 2 ;;
            --burst) burst=${2:?--burst needs a tc size such as 16kb}; shift 2 ;;
            --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
            --rate) rate=${2:?--rate needs a tc rate such as 1gbit}; shift 2 ;;
            --leaves) leaves=${2:?--leaves needs a number}; shift 2 ;;
            --uplink-rate) uplink_rate=${2:?--uplink-rate needs a tc rate such as 1gbit}; shift 2 ;;
            --declare) declare=${2:?--declare needs a tc rate such as 1gbit}; shift 2
                [[ "$declare" =~ ^[0-9]+(\.[0-9]+)?[KkMmGgTt]?bit$ ]] ||
                    die "up --declare $(printf %q "$declare"): give a rate such as 1gbit or 500mbit" ;;
            *) die "up: unknown argument $(printf %q "$1"); use --nodes N, --rate RATE, --leaves L, --uplink-rate RATE, --burst SIZE, --declare RATE and --rails K" ;;
        esac
    done
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] && [ "$nodes" -le 64 ] ||
        die "--nodes $(printf %q "$nodes"): use 1 to 64"
    [[ "$leaves" =~ ^[1-9][0-9]*$ ]] && [ "$leaves" -le "$nodes" ] && [ "$leaves" -le 16 ] ||
        die "--leaves $(printf %q "$leaves"): use 1 to 16, at most one per node"
    [[ "$rails" =~ ^[1-4]$ ]] || die "--rails $(printf %q "$rails"): use 1 to 4"
    [ $(( ${SUBNET##*.} + rails - 1 )) -le 255 ] ||
        die "--rails $rails: rail $rails's subnet would be past ${SUBNET%.*}.255; set FABRICSUITE_EMU_SUBNET lower"
    [[ "$burst" =~ ^[1-9][0-9]{0,5}(kb|mb)$ ]] ||
        die "--burst $(printf %q "$burst"): use a tc size such as 16kb or 64kb"
    mkdir -p "$STATE/run" "$STATE/log"
    # A cluster of this state directory that is up is someone's: refused, never ended by `up`.
    if [ "$(node_count)" -gt 0 ] && { [ -n "$(recorded_namespaces)" ] || running_daemons; }; then
        die "already up ($(node_count) nodes ${PREFIX}1..$(node_count), state in $STATE); run ci/emucluster.sh down first"
    fi
    down   # whatever an earlier, killed run with this state directory left
    # A failure anywhere from here on (a command inside a function under set -e, die, a signal)
    # ends the script through this trap, which ends what this run started and nothing else.
    trap 'rc=$?; set +e; if [ "$rc" -ne 0 ]; then log "bring-up failed; ending what it started"; down; fi' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    network_up "$nodes" "$leaves" "$rails"
    echo "$nodes" > "$STATE/nodes"
    echo "$leaves" > "$STATE/leaves"
    echo "$rails" > "$STATE/rails"
    echo "$burst" > "$STATE/burst"
    # the links' promise (config/systems/emucluster.py's contract), kept when `rate` re-shapes
    # the links later: a link shaped below it then reads as a link below its promise
    [ "$declare" = none ] || echo "$declare" > "$STATE/declared_rate"
    write_slurm_conf "$nodes" "$leaves"
    write_rsh_agent "$nodes"
    start_daemons "$nodes"
    set_rate "$rate"
    if [ "$leaves" -ge 2 ] && [ "$uplink_rate" != none ]; then
        for k in $(seq 1 "$rails"); do set_uplink_rate "$uplink_rate" s "$k"; done
    fi
    trap - EXIT INT TERM
    log "up: $nodes nodes ${PREFIX}1..$nodes, $rails rail(s), links $rate, $leaves switch(es) a rail (uplinks $uplink_rate); state in $STATE"
    log "run checks with: ci/emucluster.sh exec .venv/bin/reframe -C config/settings.py -c checks --system emucluster -r"
}

status() {
    local namespaces
    echo "prefix $PREFIX, state $STATE, nodes $(node_count), rails $(rail_count), switches $(leaf_count), rate $(cat "$STATE/rate" 2>/dev/null || echo -)"
    namespaces=$(recorded_namespaces)
    echo "${namespaces:-no namespaces}"
    [ "$(node_count)" -gt 0 ] && in_head sinfo || true
}

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

main() {
    local command=${1:-}
    [ $# -gt 0 ] && shift
    check_settings
    case "$command" in
        up) need_root; up "$@" ;;
        down) need_root; down; log "down" ;;
        rate)
            need_root
            local rate=${1:?rate needs a tc rate such as 500mbit, or none} node="" link="" port="" switch="" rail=""
            shift
            while [ $# -gt 0 ]; do
                case "$1" in
                    --link) link=${2:?--link needs a node or uplink1..L}; shift 2 ;;
                    --port) port=${2:?--port needs a node}; shift 2 ;;
                    --switch) switch=${2:?--switch needs a rail number}; shift 2 ;;
                    --rail) rail=${2:?--rail needs a rail number}; shift 2 ;;
                    -*) die "rate: unknown option $(printf %q "$1"); use --link NAME, --port NODE, --switch RAIL, --rail RAIL" ;;
                    *) [ -z "$node" ] || die "rate: one node at most"; node=$1; shift ;;
                esac
            done
            [ -z "$rail" ] || check_rail "$rail"
            if [ -n "$switch" ]; then
                check_rail "$switch"
                set_switch_rate "$rate" "$switch"
            elif [ -n "$link" ]; then
                set_link_rate "$rate" "$link" "${rail:-1}"
            elif [ -n "$port" ]; then
                set_port_rate "$rate" "$port" "${rail:-1}"
            else
                set_rate "$rate" "$node" "$rail"
            fi ;;
        link)
            need_root
            local rail=1
            [ "${3:-}" != --rail ] || { rail=${4:?--rail needs a rail number}; check_rail "$rail"; }
            set_link "${1:?link needs a node number}" "${2:?link needs down or up}" "$rail" ;;
        exec)
            [ $# -gt 0 ] || die "exec needs a command"
            [ "$(node_count)" -gt 0 ] || die "not up; run: ci/emucluster.sh up"
            export FABRICSUITE_EMU_DIR="$STATE" FABRICSUITE_EMU_PREFIX="$PREFIX"
            in_head "$@" ;;
        status) status ;;
        *) usage; [ -z "$command" ] || exit 2 ;;
    esac
}

main "$@"
