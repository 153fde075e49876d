#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mroc-perf speaks perftest's options (two mrocd on UDP sockets over veth):
# a server and client started with perftest's -F -R -d -i -x -S --cpu_util run;
# MB/sec by default (2^20 bytes, perftest's), Gb/sec with --report_gbits, the
# same figures as the JSON; --out_json_file writes the JSON document while the
# text goes to stdout; --run_infinitely prints a result every -D seconds until
# stopped; --cpu_util adds perftest's CPU_Util[%] column (and the host's and
# the process's share in the JSON); -b runs both directions at once for
# write_bw, read_bw (-t 16 at most) and send_bw (-n and -D): each side's row adds both, so
# its message count is twice -n; -b with a latency test or with --verify is
# refused with a reason; a server without a daemon says so at once instead
# of waiting for a client.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"

out=$(timeout 5 "$PERF" write_bw --mrocd-socket /nonexistent/mrocd.sock 2>&1)
rc=$?
[ $rc = 1 ] || fail "a server without a daemon: exit $rc (124: it waited): $out"
grep -q "cannot use mrocd at /nonexistent/mrocd.sock" <<<"$out" || fail "no reason: $out"
grep -q "Waiting for client" <<<"$out" && fail "waited for a client without a daemon: $out"
out=$("$PERF" write_lat -b 10.0.0.1 2>&1)
[ $? = 2 ] && grep -q "bidirectional runs are bandwidth tests" <<<"$out" || fail "write_lat -b: $out"
out=$("$PERF" send_bw -b --verify 10.0.0.1 2>&1)
[ $? = 2 ] && grep -q "exclude each other" <<<"$out" || fail "-b --verify: $out"
out=$("$PERF" write_bw --run_infinitely 10.0.0.1 2>&1)
[ $? = 2 ] && grep -q "needs -D" <<<"$out" || fail "--run_infinitely without -D: $out"
ok "no daemon: the server fails at once; -b refused with latency tests and --verify; --run_infinitely needs -D"

e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
PERFTEST_ARGS=(-F -R -d mlx5_0 -i 1 -x 3 -S 0 --cpu_util)

# run NAME SERVER_ARGS... -- CLIENT_ARGS...: both succeed; outputs in $E2E_DIR/NAME.{srv,cli}
# ($TEST, write_bw by default, is the test)
run() {
	local name=$1 srv_args=() cli_args=() test=${TEST:-write_bw}
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv_args+=("$1"); shift; done
	shift
	cli_args=("$@")
	ip netns exec "$NS_B" timeout 60 "$PERF" "$test" --mrocd-socket "$E2E_DIR/b.ctl" "${srv_args[@]}" \
		>"$E2E_DIR/$name.srv" 2>&1 &
	local srv=$!
	sleep 0.3
	ip netns exec "$NS_A" timeout 60 "$PERF" "$test" --mrocd-socket "$E2E_DIR/a.ctl" "${cli_args[@]}" \
		"$IP_B" >"$E2E_DIR/$name.cli" 2>&1 || { cat "$E2E_DIR/$name.cli" "$E2E_DIR/$name.srv"; fail "$name: client"; }
	wait $srv || { cat "$E2E_DIR/$name.srv"; fail "$name: server"; }
}

J=$E2E_DIR/out.json
run mb "${PERFTEST_ARGS[@]}" -- "${PERFTEST_ARGS[@]}" -n 300 --out_json_file "$J"
grep -q "note: -d mlx5_0 ignored" "$E2E_DIR/mb.cli" || fail "no note for -d: $(cat "$E2E_DIR/mb.cli")"
grep -q "note: -S 0 ignored: mroc has no service levels" "$E2E_DIR/mb.srv" || fail "no note for -S"
grep -q "BW peak\[MB/sec\] *BW average\[MB/sec\]" "$E2E_DIR/mb.cli" || fail "MB/sec is not the default"
jq -e '.results | length == 1' "$J" >/dev/null || fail "--out_json_file: $(cat "$J")"
gbps=$(jq '.results[0].bw_avg_gbps' "$J")
mb=$(awk '/^ *65536 +300 / { print $4 }' "$E2E_DIR/mb.cli")
[ -n "$mb" ] || fail "no result row: $(cat "$E2E_DIR/mb.cli")"
awk -v g="$gbps" -v m="$mb" 'BEGIN { e = g * 1e9 / 8 / 1048576; exit !(m > e - 0.01 - e / 1000 && m < e + 0.01 + e / 1000) }' ||
	fail "MB/sec $mb is not $gbps Gb/s in perftest's MB (2^20 B)"
ok "perftest's -F -R -d -i -x -S accepted; MB/sec by default; --out_json_file ($mb MB/sec = $gbps Gb/s)"
grep -q "MsgRate\[Mpps\] *CPU_Util\[%\]$" "$E2E_DIR/mb.cli" || fail "--cpu_util: no column: $(cat "$E2E_DIR/mb.cli")"
cpu=$(awk '/^ *65536 +300 / { print $6 }' "$E2E_DIR/mb.cli")
self=$(jq '.results[0].cpu_util_self_pct' "$J")
# The client busy-polls: it and its mrocd keep the host's CPUs busy during the run.
awk -v c="$cpu" -v s="$self" 'BEGIN { exit !(c > 0 && c <= 100 && s > 0) }' ||
	fail "--cpu_util: host $cpu%, self $self%: $(cat "$J")"
jq -e '.results[0].cpu_util_host_pct > 0' "$J" >/dev/null || fail "--cpu_util JSON: $(cat "$J")"
ok "--cpu_util: CPU_Util[%] $cpu (the host's busy share over the run), this process $self%"

# -b: both sides send; each row adds both directions (2 x 300 messages), on both sides.
out=$("$PERF" read_bw -b 10.0.0.1 2>&1)
[ $? = 2 ] && grep -q "read_bw -b: -t 16 or less" <<<"$out" || fail "read_bw -b -t 128: $out"
for t in write_bw read_bw send_bw; do
	depth=(); [ $t = read_bw ] && depth=(-t 16)
	TEST=$t run "bidir_$t" -j -- -b -n 300 "${depth[@]}" -j
	for side in cli srv; do
		jq -e '.params.bidirectional and (.results | length == 1) and
			.results[0].measured_by == "both" and .results[0].messages == 600' \
			"$E2E_DIR/bidir_$t.$side" >/dev/null || fail "$t -b ($side): $(cat "$E2E_DIR/bidir_$t.$side")"
	done
done
# -D: the counts are exchanged at the end (send_bw: the receivers wait for them).
TEST=send_bw run bidir_d -j -- -b -D 1 -j
jq -e '.results[0].measured_by == "both" and .results[0].messages > 0' "$E2E_DIR/bidir_d.srv" >/dev/null ||
	fail "send_bw -b -D 1: $(cat "$E2E_DIR/bidir_d.srv")"
ok "-b: write_bw, read_bw, send_bw (-n 300: 600 messages on each side's row) and send_bw -D 1"

run gb -- --report_gbits -n 300
grep -q "BW peak\[Gb/sec\] *BW average\[Gb/sec\]" "$E2E_DIR/gb.cli" || fail "--report_gbits: $(cat "$E2E_DIR/gb.cli")"
grep -q "BW peak\[MB/sec\]" "$E2E_DIR/gb.srv" || fail "the server's own unit: $(cat "$E2E_DIR/gb.srv")"
ok "--report_gbits: Gb/sec"

# --run_infinitely -D 1: a result each second until stopped (SIGINT once two results are out:
# a loaded machine may take seconds to connect, so the test waits for rows, not for a time).
inf_rows() {
	grep -Ec "^ *65536 +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$" "$E2E_DIR/inf.cli" 2>/dev/null
}
ip netns exec "$NS_B" timeout 120 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" >"$E2E_DIR/inf.srv" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" timeout 120 "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" -D 1 --run_infinitely \
	"$IP_B" >"$E2E_DIR/inf.cli" 2>&1 &
cli=$!
for _ in $(seq 1100); do
	[ "$(inf_rows)" -ge 2 ] && break
	kill -0 $cli 2>/dev/null || break
	sleep 0.1
done
kill -INT $cli 2>/dev/null
wait $cli
wait $srv
rows=$(inf_rows)
[ "$rows" -ge 2 ] || fail "--run_infinitely: $rows result rows: $(cat "$E2E_DIR/inf.cli")"
ok "--run_infinitely -D 1: $rows results until interrupted"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
