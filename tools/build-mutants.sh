#!/usr/bin/env bash
# tools/build-mutants.sh - builds release conformance binaries from known-wrong versions of
# the native completion engine (engine_sm90_completion.hpp) into .device-bin/mutant-*, to show
# on the H200 that the conformance cases catch them (tools/device-run.sh runs them and
# expects failures). The header is patched in place and restored on exit.
#   token-ahead-of-publish       an arrival counted during step k-1 (in phase k) returns
#                                without waiting for that step's publish, so a wait on its
#                                token's parity on P returns before step k
#   drop-without-lock            a drop lowers E without taking the control word, and the
#                                completer reads E afresh
#   elect-across-barriers        one lane looks for the step for all the lanes of its warp
#                                that arrived together, whichever barrier each arrived on
#   skip-wait-unpublished        a lane that saw its phase end returns without waiting on P
#                                even when its warp's look ran no step (another warp holds it)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091  # the toolchains' environment (tools/install-toolchains.sh)
if [ -f /opt/gpu-toolchains/env.sh ]; then . /opt/gpu-toolchains/env.sh; fi
HEADER=hip-src/include/xbarrier/engine_sm90_completion.hpp
BIN=.device-bin
mkdir -p "$BIN"
cp "$HEADER" /tmp/engine_sm90_completion.hpp.orig
trap 'cp /tmp/engine_sm90_completion.hpp.orig "$HEADER"' EXIT
mutate() {  # name, python code that edits `s`
  cp /tmp/engine_sm90_completion.hpp.orig "$HEADER"
  python3 - "$HEADER" "$2" <<'PY'
import sys
path, code = sys.argv[1], sys.argv[2]
s = open(path).read()
before = s
exec(code)
assert s != before, "the mutation did not apply"
open(path, "w").write(s)
PY
  cargo build --release --tests --features cuda --test conformance --target-dir target/mutant 2>&1 | tail -1
  local newest="" file
  for file in target/mutant/release/deps/conformance-*; do
    if [ ! -x "$file" ] || [ "${file%.d}" != "$file" ]; then continue; fi
    if [ -z "$newest" ] || [ "$file" -nt "$newest" ]; then newest=$file; fi
  done
  cp "$newest" "$BIN/mutant-$1"
  strip --strip-debug "$BIN/mutant-$1"
}
mutate token-ahead-of-publish '
s = s.replace("      while (done_steps(read_control(w)) == d) {\n        if (!settle(w, fn)) (void)mbarrier::try_wait_parity(published(w), bool(d & 1));\n      }\n", "")'
mutate drop-without-lock '
a = s.index("    uint64_t k = platform::load<ms>(control(w), mem_order::relaxed);\n    for (;;) {  // take K")
b = s.index("    membar_cta();  // 4.: then settle sees")
s = s[:a] + "    (void)platform::fetch_add<ms>(control(w), uint64_t(0) - e_one, mem_order::acq_rel);\n    (void)mbarrier::arrive_drop(w);\n" + s[b:]
s = s.replace("const bool nobody_left = participants(k) == 0 && ((k & z_bit) != 0) == bool(done_steps(k) & 1);",
              "const bool nobody_left = participants(read_control(w)) == 0;")
s = s.replace("platform::store<ms>(control(w), after_step(k), mem_order::release);",
              "(void)platform::fetch_add<ms>(control(w), 1, mem_order::release);")'
mutate elect-across-barriers '
s = s.replace("__match_any_sync(__activemask(), reinterpret_cast<unsigned long long>(w))", "__activemask()")'
mutate skip-wait-unpublished '
s = s.replace("if (ended && led != 0) {", "if (ended) return true;\n      if (ended && led != 0) {")'
ls -la "$BIN"/mutant-*
