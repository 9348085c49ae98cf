#!/usr/bin/env bash
# tools/bench-sweep.sh - pipeline shapes for the reduction and copy benchmarks, on the GPU
# machine: prints one line per shape with the xb and baseline GB/s (choosing the defaults).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
XBAR=${XBAR:-.device-bin/xbar}
# SHAPES: stages,KiB-per-stage,blocks-per-SM,consumer-warps tuples, space-separated.
for shape in ${SHAPES:-6,16,2,4 4,32,2,4 8,16,2,4 8,32,1,4 4,32,3,4 8,16,3,4 6,16,2,8 4,48,2,4}; do
  IFS=, read -r -a s <<<"$shape"
  set -- "${s[@]}"
  line=$(timeout 60 "$XBAR" bench --only reduction,copy --stages "$1" --stage-kib "$2" --blocks-per-sm "$3" \
    --consumer-warps "$4" --reps 5 --format markdown 2>&1 |
    awk -F'|' '/xb pipeline|raw PTX pipeline|grid-stride|xb bulk copy|cudaMemcpy/ {gsub(/ /,"",$4); gsub(/ /,"",$5); if ($5 != "") printf "%s=%s ", $4, $5}')
  printf 'stages=%s kib=%s blocks/SM=%s warps=%s: %s\n' "$1" "$2" "$3" "$4" "$line"
done
