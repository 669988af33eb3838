#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for testing beatflow's SLURM profile for real
# (tests/test_slurm.py; CI). Debian 12 (bookworm), as root, no systemd, no cgroups needed.
#
#   bash tests/slurm/cluster.sh start    # install slurm-wlm + munge if missing, start the daemons
#   bash tests/slurm/cluster.sh stop     # stop every daemon this script started, by its PID file
#   bash tests/slurm/cluster.sh status
#   bash tests/slurm/cluster.sh check    # exit 0 if it can start here (root, no other /etc/slurm/slurm.conf), else why not
#
# - Everything lives under $BEATFLOW_SLURM_STATE (default /tmp/beatflow-slurm): slurm.conf, gres.conf,
#   the munge key and socket, spool and state directories, logs, PID files. The only thing outside it:
#   /etc/slurm/slurm.conf and gres.conf are symlinks to the state directory's files while the cluster runs
#   (removed by `stop`), because SLURM_CONF is not enough: inside a job, Snakemake's jobstep plugin starts
#   the rule with `srun` in an environment stripped of every SLURM_* variable, SLURM_CONF included, and
#   srun then finds no configuration. An /etc/slurm/slurm.conf that is not our symlink is never touched
#   (`start` refuses to run).
# - No accounting (no slurmdbd): `sacct` fails, so Snakemake's SLURM plugin must use
#   `slurm-status-command: squeue`, which relies on MinJobAge (>= ~120 s): finished jobs stay in squeue
#   1800 s here, so a test can show every job of its runs with `squeue -t all`.
# - One fake GPU: gres gpu:fake:1 with File=/dev/null (without File= slurmd drops the GPU and the node
#   goes `inval`). Partitions `cpu` (default) and `gpu`, both on this node.
# - Loopback only: SlurmctldHost and NodeAddr are 127.0.0.1, and CommunicationParameters=NoCtldInAddrAny,
#   NoInAddrAny makes slurmctld and slurmd bind that address, not 0.0.0.0; munge is a unix socket.
# - Idempotent: `start` with the cluster up only reports it; `stop` with nothing running does nothing.
set -euo pipefail

STATE=${BEATFLOW_SLURM_STATE:-/tmp/beatflow-slurm}
CONF=$STATE/etc/slurm.conf
MUNGE_DIR=$STATE/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket
PIDS=(munged:$MUNGE_DIR/munged.pid slurmctld:$STATE/run/slurmctld.pid slurmd:$STATE/run/slurmd.pid)
export SLURM_CONF=$CONF
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

say() { printf '[cluster.sh] %s\n' "$*"; }

alive() {  # $1 = pid file: true when it names a live process (of the daemon named in the file's name)
    local pid name
    [ -s "$1" ] || return 1
    pid=$(cat "$1") name=$(basename "$1" .pid)
    kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

wait_for() {  # $1 = seconds, rest = command
    local n=$1; shift
    for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
    say "timed out after ${n}s waiting for: $*" >&2
    return 1
}

stop_one() {  # $1 = name:pidfile
    local name=${1%%:*} file=${1#*:} pid
    alive "$file" || { rm -f "$file"; return 0; }
    pid=$(cat "$file")
    kill "$pid"
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; sleep 0.5; fi
    rm -f "$file"
    say "stopped $name (pid $pid)"
}

stop() {  # reverse start order
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_one "${PIDS[$i]}"; done
    unlink_etc
}

versions() {
    dpkg-query -W -f='${Package} ${Version}\n' slurm-wlm slurmctld slurmd munge 2>/dev/null || true
}

install_packages() {
    local missing=()
    for cmd in slurmctld slurmd sbatch squeue sinfo scontrol munged mungekey munge unmunge; do
        command -v "$cmd" >/dev/null || missing+=("$cmd")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing slurm-wlm munge (missing: ${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
}

ETC=${BEATFLOW_SLURM_ETC:-/etc/slurm}  # where srun looks; another directory only for testing `check`
ETC_LINKS=($ETC/slurm.conf:$CONF $ETC/gres.conf:$STATE/etc/gres.conf)

link_etc() {  # /etc/slurm/{slurm,gres}.conf -> the state directory's files; never replace a real file
    local entry link target
    install -d -m 0755 "$ETC"
    for entry in "${ETC_LINKS[@]}"; do
        link=${entry%%:*} target=${entry#*:}
        if [ -e "$link" ] && [ "$(readlink "$link")" != "$target" ]; then
            say "$link exists and is not this test cluster's: not touching it (stop that cluster first)" >&2
            return 1
        fi
        ln -sfn "$target" "$link"
    done
}

check() {  # can this machine start the test cluster? (root, and /etc/slurm free for our links); says why not
    local entry link
    if [ "$(id -u)" -ne 0 ]; then
        say "cannot start the test cluster: needs root (to install slurm-wlm and munge, run munged as munge and slurmctld as slurm, and link /etc/slurm); this is uid $(id -u)" >&2
        return 1
    fi
    for entry in "${ETC_LINKS[@]}"; do
        link=${entry%%:*}
        if [ -e "$link" ] || [ -L "$link" ]; then
            if [ "$(readlink "$link")" != "${entry#*:}" ]; then
                say "cannot start the test cluster: $link exists and is not this test cluster's (a real SLURM installation?)" >&2
                return 1
            fi
        fi
    done
    say "the test cluster can start here"
}

unlink_etc() {
    local entry link
    for entry in "${ETC_LINKS[@]}"; do
        link=${entry%%:*}
        if [ -L "$link" ] && [ "$(readlink "$link")" = "${entry#*:}" ]; then rm -f "$link"; fi
    done
}

write_config() {
    local node ncpu mem
    node=$(hostname -s)
    ncpu=$(nproc)
    mem=$(($(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p') * 8 / 10))
    install -d -m 0755 "$STATE" "$STATE/etc" "$STATE/run" "$STATE/log"
    install -d -o slurm -g slurm -m 0755 "$STATE/slurmctld" "$STATE/log/slurm"
    install -d -m 0755 "$STATE/slurmd"
    cat > "$CONF" <<EOF
# Written by tests/slurm/cluster.sh: a one-node test cluster on loopback, no accounting, one fake GPU.
ClusterName=beatflow-ci
SlurmctldHost=${node}(127.0.0.1)
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${MUNGE_SOCKET}
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurm/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
# no cgroups needed (works in containers): plain /proc tracking, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
# finished jobs stay visible in squeue this long: Snakemake's squeue status mode relies on it (>= ~120 s),
# and the test prints every job of its runs from squeue -t all
MinJobAge=1800
GresTypes=gpu
# no accounting: sacct answers "Slurm accounting storage is disabled"
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=${node} NodeAddr=127.0.0.1 CPUs=${ncpu} RealMemory=${mem} Gres=gpu:fake:1 State=UNKNOWN
PartitionName=cpu Nodes=ALL Default=YES MaxTime=60 State=UP
PartitionName=gpu Nodes=ALL MaxTime=60 State=UP
EOF
    # A GPU gres without File= is dropped by slurmd ("Removing file-less GPU"): point it at /dev/null.
    cat > "$STATE/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=${node} Name=gpu Type=fake File=/dev/null Count=1
EOF
}

start_munged() {
    install -d -o munge -g munge -m 0755 "$MUNGE_DIR"
    if [ ! -s "$MUNGE_DIR/munge.key" ]; then
        mungekey --create --keyfile="$MUNGE_DIR/munge.key"
        chown munge:munge "$MUNGE_DIR/munge.key"
        chmod 0400 "$MUNGE_DIR/munge.key"
    fi
    runuser -u munge -- /usr/sbin/munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed"
    wait_for 10 sh -c "munge -S '$MUNGE_SOCKET' -n | unmunge -S '$MUNGE_SOCKET'"
}

start() {
    check
    install_packages
    if alive "$MUNGE_DIR/munged.pid" && alive "$STATE/run/slurmctld.pid" && alive "$STATE/run/slurmd.pid" \
        && scontrol ping >/dev/null 2>&1; then
        link_etc
        say "already running (state in $STATE)"
    else
        stop  # whatever is left of an earlier, partial start
        link_etc
        write_config
        start_munged
        /usr/sbin/slurmctld -c
        wait_for 30 scontrol ping
        /usr/sbin/slurmd
        wait_for 60 sh -c "sinfo -h -N -o '%T' | grep -qx idle"
        say "started (state in $STATE)"
    fi
    for entry in "${PIDS[@]}"; do say "${entry%%:*} pid $(cat "${entry#*:}")"; done
    versions
    sinfo
}

status() {
    local rc=0
    for entry in "${PIDS[@]}"; do
        if alive "${entry#*:}"; then say "${entry%%:*} running (pid $(cat "${entry#*:}"))"
        else say "${entry%%:*} not running"; rc=1; fi
    done
    [ $rc -eq 0 ] && sinfo
    return $rc
}

case ${1:-} in
    start) start ;;
    stop) stop; say "stopped (state left in $STATE)" ;;
    status) status ;;
    check) check ;;
    *) echo "usage: $0 start|stop|status|check   (state: \$BEATFLOW_SLURM_STATE, default /tmp/beatflow-slurm)" >&2
       exit 2 ;;
esac
