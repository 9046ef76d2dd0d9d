#!/usr/bin/env bash
# What hiding the state dir from workers costs a run: runs of one mode (MODE=-r, -w or -i) with
# the fake worker, the state dir hidden (the normal case) against not hidden (HOME inside the
# state dir, where Pitroom skips the hiding), alternating, N rounds each; prints the medians.
# Needs a debug build: cargo build -p pitroom -p pitroom-testkit.
set -euo pipefail
N=${N:-15}
MODE=${MODE:--r}
bin=$(cd "$(dirname "$0")/.." && pwd)/target/debug
root=$(mktemp -d)
repo=$root/repo
mkdir -p "$repo" "$root/a-home" "$root/b/home"
cd "$repo"
git init -q
echo 'def f(): return 1' >calc.py
git add .
git -c user.email=a@b -c user.name=a commit -qm init
export PITROOM_OPENCODE_BIN=$bin/pitroom-fake-worker
export PITROOM_FAKE_SCRIPT='[{"sh":"ls"},{"text":"SUMMARY: ok"}]'
export GIT_CONFIG_NOSYSTEM=1

# Milliseconds one run of MODE takes with state dir $1 and HOME $2.
run() {
  local start end
  start=$(date +%s%N)
  HOME=$2 PITROOM_HOME=$1 "$bin/pitroom" "$MODE" "look" >/dev/null 2>&1
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

hidden=()
plain=()
for _ in $(seq "$N"); do
  hidden+=("$(run "$root/a-state" "$root/a-home")")
  plain+=("$(run "$root/b" "$root/b/home")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "$MODE run, state dir hidden: median $(median "${hidden[@]}") ms; not hidden: median" \
  "$(median "${plain[@]}") ms (N=$N, debug build, load $(cut -d' ' -f1 /proc/loadavg))"
# Each side did what it claims: every hidden run's record says so, no plain run's does.
test "$(grep -l '"state_hidden": true' "$root"/a-state/runs/*/record.json | wc -l)" -eq "$N"
if grep -q '"state_hidden"' "$root"/b/runs/*/record.json; then
  echo "a run whose HOME is inside its state dir hid the state dir" >&2
  exit 1
fi
rm -rf "$root"
