#!/bin/bash
# slurm.sh: the Slurm recipe on a real one-node Slurm cluster that this test
# starts and stops itself (Debian's slurm-wlm and munge, as root): munged,
# slurmctld and slurmd on private ports and folders, then
#     sbatch --array=0-2 tools/slurm/gmatch-array.sh pairs.jsonl out/
# over a manifest of the bench's stills; the three tasks' lines, merged by
# tools/gmatch-merge.py, must be the lines of one unsharded run.  Then a task
# is run again (a requeue): it adds nothing.
#
# usage: tests/cli/slurm.sh path/to/gmatch   (from the repository root)
# Exit 77 (skipped) when not root, when Slurm and munge are not installed
# (tools/setup.sh installs them) or when the cluster does not start here (the
# daemons' logs are printed; tests/cli/batch.sh still runs the script with
# sbatch replaced by a loop); 1 when a job fails or the result differs.
set -u
gm=${1:?usage: slurm.sh GMATCH}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
root=$PWD
for c in sbatch squeue sinfo /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged; do
    command -v "$c" > /dev/null || { echo "slurm.sh: $c not installed (tools/setup.sh): skipped"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "slurm.sh: the daemons run as root here: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-slurm.XXXXXX") || exit 1
chmod 755 "$tmp"
export SLURM_CONF=$tmp/slurm.conf
stop() {
    for p in slurmd slurmctld munged; do
        [ -f "$tmp/run/$p.pid" ] && kill "$(cat "$tmp/run/$p.pid")" 2> /dev/null
    done
    sleep 1
    rm -rf "$tmp"
}
trap stop EXIT
logs() { for f in "$tmp"/log/*; do echo "== $f"; tail -20 "$f"; done; }
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/run" "$tmp/work"
head -c 1024 /dev/urandom > "$tmp/munge.key"
chmod 600 "$tmp/munge.key"
/usr/sbin/munged --force --key-file="$tmp/munge.key" --socket="$tmp/run/munge.sock" \
    --pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" \
    --seed-file="$tmp/run/munge.seed" || { echo "slurm.sh: munged did not start: skipped"; logs; exit 77; }
port=$((20000 + RANDOM % 20000))
host=$(hostname -s)
cat > "$SLURM_CONF" <<CONF
ClusterName=gmtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/run/munge.sock
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=gm Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
/usr/sbin/slurmctld -f "$SLURM_CONF" && /usr/sbin/slurmd -f "$SLURM_CONF" ||
    { echo "slurm.sh: slurmctld or slurmd did not start: skipped"; logs; exit 77; }
for _ in $(seq 60); do
    sinfo -h -o %t 2> /dev/null | grep -q idle && break
    sleep 1
done
sinfo -h -o %t 2> /dev/null | grep -q idle || { echo "slurm.sh: the node is not idle after 60 s: skipped"; sinfo; logs; exit 77; }

# the manifest: every bench still, shuffled, relative to its folder
w=$tmp/work
ln -s "$root/data/bench" "$w/bench"
python3 - "$w/pairs.jsonl" <<'PY'
import json, random, sys
rows = [{"ref": "bench/ref_%s.jpg" % r, "query": "bench/q_%s_%s.jpg" % (r, q)}
        for r in ("cell", "gravel", "hubble_deep_field", "retina", "text")
        for q in ("00_easy", "01_medium", "02_medium", "neg")]
random.Random(9).shuffle(rows)
open(sys.argv[1], "w").writelines(json.dumps(r) + "\n" for r in rows)
PY
(cd "$w" && "$gm" --batch pairs.jsonl -o all.jsonl -q) || { echo "slurm.sh: the unsharded run failed"; exit 1; }
strip() {
    python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); r.pop("time_ms", None); print(json.dumps(r))' "$1"
}
submit() {
    (cd "$w" && GMATCH=$gm sbatch --parsable --export=ALL --array=0-2 --output="$w/task-%a.log" \
        "$root/tools/slurm/gmatch-array.sh" pairs.jsonl out)
}
wait_job() {
    for _ in $(seq 300); do
        [ -z "$(squeue -h -j "$1" 2> /dev/null)" ] && return 0
        sleep 1
    done
    return 1
}
fails=0
job=$(submit) || { echo "slurm.sh: sbatch failed"; logs; exit 1; }
wait_job "$job" || { echo "slurm.sh: job $job not done after 300 s"; squeue; logs; exit 1; }
ls "$w"/out/out.*.jsonl > /dev/null 2>&1 || { echo "slurm.sh: no output"; cat "$w"/task-*.log; logs; exit 1; }
[ "$(ls "$w"/out/out.*.jsonl | wc -l)" -eq 3 ] || { echo "FAIL: not 3 shard files"; fails=1; }
python3 "$root/tools/gmatch-merge.py" "$w"/out/out.*.jsonl > "$w/merged.jsonl"
cmp -s <(strip "$w/all.jsonl") <(strip "$w/merged.jsonl") || { echo "FAIL: the array's merged lines are not the unsharded run's"; cat "$w"/task-*.log; fails=1; }
# the whole array again (a requeue of every task): nothing added
job=$(submit) && wait_job "$job" || { echo "slurm.sh: the second job failed"; logs; exit 1; }
python3 "$root/tools/gmatch-merge.py" "$w"/out/out.*.jsonl > "$w/merged2.jsonl"
cmp -s "$w/merged.jsonl" "$w/merged2.jsonl" || { echo "FAIL: the array run again changed the results"; fails=1; }
[ "$fails" -eq 0 ] && echo "slurm.sh: all passed (one-node cluster, Slurm $(sinfo -V | cut -d' ' -f2))"
exit "$fails"
