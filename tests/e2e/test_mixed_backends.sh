#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An AF_XDP daemon and a UDP-backend daemon with the shipped source-port range
# (49152-65535 on both): the control link comes up and stays up, a verified
# write_bw completes both ways round, and neither daemon logs an error (the
# UDP side once dropped every answer to a source port outside a 64-port pool).
# Over IPv4, then again over IPv6 (the two backends build and parse the v6
# headers each their own way: AF_XDP in frame.c, UDP through the kernel).
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
e2e_setup_pair
V=$(printf %x $((E2E_ID % 65536)))
ip -n "$NS_A" addr add "fd0e:$V::1/64" dev "$IF_A" nodad || fail "IPv6 address on a"
ip -n "$NS_B" addr add "fd0e:$V::2/64" dev "$IF_B" nodad || fail "IPv6 address on b"

# family 4|6: both daemons on that family's addresses, the checks, both stopped.
family() {
	local fam=$1 n c
	if [ "$fam" = 6 ]; then
		ADDR_A=fd0e:$V::1 ADDR_B=fd0e:$V::2
	else
		ADDR_A=$IP_A ADDR_B=$IP_B
	fi
	rm -f "$E2E_DIR"/[ab].log
	e2e_config a af_xdp "$IF_A" "$ADDR_A" "$ADDR_B"
	e2e_config b udp "$IF_B" "$ADDR_B" "$ADDR_A"
	# The shipped defaults: no sport_min/sport_max lines.
	sed -i '/sport_min = /d; /sport_max = /d; s/log_level = "debug"/log_level = "info"/' \
		"$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
	jq -e '.backend == "af_xdp"' <<<"$(e2e_admin a status)" >/dev/null || fail "a is not on AF_XDP"
	jq -e '.backend == "udp" and (.backend_detail | contains("49152-65535"))' <<<"$(e2e_admin b status)" \
		>/dev/null || fail "b: expected UDP with the whole range: $(e2e_admin b status)"
	for n in a b; do
		e2e_wait $n links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
			fail "$n: control link never came up: $(e2e_admin $n links)"
	done
	ok "IPv$fam: AF_XDP and UDP daemons on the default source ports: the control link is up"

	# perf SERVER_SIDE CLIENT_SIDE: a verified write_bw from the client's daemon to the server's.
	perf() {
		local s=$1 c=$2 sip cip sns cns
		eval "sns=\$NS_${s^^} cns=\$NS_${c^^} sip=\$ADDR_${s^^}"
		ip netns exec "$sns" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/$s.ctl" --verify -s 65536 \
			-n 400 >"$E2E_DIR/srv.txt" 2>&1 &
		local srv=$!
		sleep 0.3
		ip netns exec "$cns" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/$c.ctl" --verify -s 65536 \
			-n 400 "$sip" >"$E2E_DIR/cli.txt" 2>&1 ||
			{ cat "$E2E_DIR/cli.txt" "$E2E_DIR/srv.txt"; fail "write_bw $c -> $s failed"; }
		wait "$srv" || { cat "$E2E_DIR/srv.txt"; fail "write_bw server $s failed"; }
		tail -1 "$E2E_DIR/cli.txt"
	}
	perf b a
	ok "IPv$fam: verified write_bw AF_XDP -> UDP"
	perf a b
	ok "IPv$fam: verified write_bw UDP -> AF_XDP"
	sleep 1
	for n in a b; do
		grep "<[0-3]>" "$E2E_DIR/$n.log" && fail "$n logged errors"
		grep -q "control connection to .* lost" "$E2E_DIR/$n.log" && fail "$n: the control link flapped"
	done
	c=$(e2e_admin b counters)
	echo "b (udp): $(jq -c '.backend' <<<"$c")"
	ok "IPv$fam: no errors logged, no link lost"
	for n in a b; do
		e2e_stop $n
		[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
	done
}

family 4
family 6
echo "1 passed, 0 failed"
