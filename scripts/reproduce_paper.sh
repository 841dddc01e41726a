#!/usr/bin/env bash
# Reproduce the paper's experiments: sweeps, figures and the slope table.
#
#   scripts/reproduce_paper.sh [--quick] [--out DIR] [--workers N]
#
# Full: about 3 minutes on 2 cores; --quick: a reduced version (smaller n and d, fewer
# steps and seeds) in under 2 minutes, used by the test suite. Writes DIR/fig1, DIR/fig2
# (Parquet parts, compacted at the end; a rerun resumes), the figures of each sweep,
# DIR/fig1_setup{A,B}_interp_ring_gt.{png,pdf} and DIR/fig2_setup{A,B}_ring_gt.{png,pdf},
# and DIR/slopes.md (both sweeps' slopes, transient cells, points not drawn).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="results/paper"
quick=0
workers=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out="$2"; shift ;;
    --workers) workers=(--workers "$2"); shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option: $1 (allowed: --quick, --out DIR, --workers N)" >&2; exit 2 ;;
  esac
  shift
done
fastgt="${FASTGT:-fastgt}"
if [ "$quick" = 1 ]; then
  # same sweeps, reduced: n = 60 / 40, d = 20, 2 seeds, fewer points and steps
  fig1=(--set n=60 --set d=20 --set steps=8000 --set record_every=100
        --param alpha=0.5,0.8,0.9,0.95,0.99 --param seed=0,1)
  fig2=(--set n=40 --set d=20 --set steps=16000 --set record_every=200
        --param self_weight=0.3333333333333333,0.1,0.03,0.01 --param seed=0,1)
else
  fig1=()
  fig2=()
fi
# ${a[@]+"${a[@]}"}: empty arrays expand to nothing under set -u, also in bash < 4.4
"$fastgt" grid "$here/paper/fig1_constant_c.toml" --out "$out/fig1" ${workers[@]+"${workers[@]}"} ${fig1[@]+"${fig1[@]}"}
"$fastgt" grid "$here/paper/fig2_constant_p.toml" --out "$out/fig2" ${workers[@]+"${workers[@]}"} ${fig2[@]+"${fig2[@]}"}
"$fastgt" report "$out"
