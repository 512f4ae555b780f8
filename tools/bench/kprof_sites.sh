#!/bin/bash
# kprof_sites.sh: names kprof's call sites (KPROF_SITES=1) with the
# unstripped build of the binary that ran, a line a site: calls, the call,
# then the program's functions from the innermost out (the runtime's own
# frames left out), and a total a call with the count per unit given.
#   tools/bench/kprof_sites.sh BINARY KPROF_OUT [UNITS]
# UNITS (e.g. the pairs of the run): the calls a unit too.
set -eu
bin=$1 out=$2 units=${3:-0}
python3 - "$bin" "$out" "$units" <<'PY'
import subprocess, sys, collections
binp, outp, units = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = [l.split() for l in open(outp) if l.startswith("kprof: site ")]
offs = sorted({o for r in rows for o in r[4:]})
names = {}
if offs:
    res = subprocess.run(["addr2line", "-f", "-C", "-e", binp] + offs, capture_output=True,
                         text=True).stdout.split("\n")
    for i, o in enumerate(offs):
        names[o] = (res[2 * i], res[2 * i + 1].rsplit("/", 1)[-1])
tot = collections.Counter()
for r in rows:
    n, call = int(r[2]), r[3]
    tot[call] += n
    chain = []
    for o in r[4:]:
        f, where = names.get(o, ("?", "?"))
        if f.startswith(("cudart::", "cuda", "__cuda", "_ZN6cudart", "?")) and not f.startswith("cuda_"):
            continue
        chain.append("%s (%s)" % (f, where))
    per = " %6.2f/unit" % (n / units) if units else ""
    print("%9d%s %-28s %s" % (n, per, call, " < ".join(chain[:4])))
print()
for call, n in tot.most_common():
    print("%9d%s %s" % (n, " %6.2f/unit" % (n / units) if units else "", call))
PY
