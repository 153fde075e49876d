#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's main job, `make demo` (scripts/demo.sh), runs through and shows
# what it promises: two mrocd on AF_XDP over a 4-plane fabric, mroc-perf's
# verified write_bw, the sender's paths mid-transfer (with -d's columns) and
# the receiver's, the loss on plane 2 repaired (retransmissions), and no command of it refused
# (its mid-transfer `path show -d` once printed "unexpected argument" and
# nothing noticed).  A shorter transfer (DURATION=4) and a fabric of its own.
set -u
. "$(dirname "$0")/lib.sh"

e2e_require
E2E_DIR=$(mktemp -d /tmp/mroc-e2e.XXXXXX)
trap 'rm -rf "$E2E_DIR"' EXIT
out=$E2E_DIR/demo.out
DEMO_NAME=t$(($$ % 100000)) DURATION=4 BUILD=$BUILD "$E2E_TOP/scripts/demo.sh" >"$out" 2>&1
rc=$?
[ $rc = 0 ] || { tail -n 60 "$out"; fail "demo.sh exited $rc"; }
# Every section, in order, with what it must show.
sender=$(sed -n '/path show on host A (sender), mid-transfer/,/loss recovered/p' "$out")
grep -Eq "QPN +PEER +PATH +SPORT +PORT +DOWN +STATE +HEALTH .*RTO_TIMER" <<<"$sender" ||
	fail "no sender path table with -d's columns: $sender"
[ "$(grep -Ec "^ *[0-9]+ +[0-9.]+ +[0-9]+ +[0-9]+ +p[1-4] " <<<"$sender")" -ge 8 ] ||
	fail "the sender's table has fewer than 8 path rows: $sender"
# (Paths may all have left plane 2 by then: the per-port lines name the ports they are on.)
grep -Eq "^  p[1-4] now: [0-9]+ paths?, sent [0-9]+, retransmitted [0-9]+" "$out" &&
	grep -Eq "^  all paths: retransmitted [1-9][0-9]*, declared lost [0-9]+" "$out" ||
	fail "no loss repaired in the summary: $(sed -n '/loss recovered/,+6p' "$out")"
receiver=$(sed -n '/path show on host B (receiver)/,/mroc-perf result/p' "$out")
grep -Eq "QPN +PATH +SPORT +PORT +STATE +HEALTH" <<<"$receiver" ||
	fail "no receiver path table: $receiver"
grep -Eq "^ 65536 +[0-9]+ +[0-9.]+ +[0-9.]+" "$out" || fail "no mroc-perf result line"
grep -Eq "^2 +to[01] +10000 " "$out" || fail "plane 2 is not shown losing 1 %"
# Nothing the demo ran was refused or failed.
bad=$(grep -Ei "unexpected argument|unknown (option|object|command)|^Try |^demo: |error|failed" "$out")
[ -z "$bad" ] || fail "the demo printed: $bad"
ok "make demo: verified write_bw, both ends' paths, plane 2's loss repaired, nothing refused"
