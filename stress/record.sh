#!/bin/sh
# Run a stress script and keep its output, with the commit, the command, the load and
# the elapsed time, in stress/results/<name>.txt (the figures the README quotes).
#
#   . .venv/bin/activate && sh stress/record.sh kill9-1000 python -m stress.kill9 --rounds 1000
#   . .venv/bin/activate && sh stress/record.sh multiprocess-20 python -m stress.multiprocess --rounds 20
#
# (python -m stress.powerloss writes its own result file.)
set -u
name=$1; shift
out="$(dirname "$0")/results/$name.txt"
{
    echo "# commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!stress/results' || echo ' (with uncommitted changes)')"
    echo "# command: $*"
    echo "# started $(date -u +%Y-%m-%dT%H:%M:%S+00:00), load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"
/usr/bin/time -f "# /usr/bin/time: %e s wall, %U s user, %S s sys, rc %x" -a -o "$out.time" "$@" 2>&1 | tee -a "$out"
rc=$?
cat "$out.time" >> "$out" 2>/dev/null; rm -f "$out.time"
echo "# finished $(date -u +%Y-%m-%dT%H:%M:%S+00:00), load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
exit $rc
