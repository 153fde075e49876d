#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libfabric's own fi_pingpong over the mroc provider (build/libmroc-fi.so)
# between two network namespaces, each with a real mrocd on AF_XDP:
# fi_info lists the provider; FI_EP_MSG (connect/accept through the passive
# endpoint) and FI_EP_RDM (connections on demand under the AV), untagged and
# tagged, every default size from 64 B to 1 MiB with fi_pingpong's data check (-c).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fi_lib.sh"

PROV=$BUILD/libmroc-fi.so
e2e_require
e2e_require_unsanitized fi_pingpong
command -v fi_pingpong >/dev/null || skip "needs fi_pingpong (libfabric-bin; scripts/deps.sh installs it)"
[ -f "$PROV" ] || skip "$PROV not built (libfabric-dev missing?)"

e2e_setup_pair
FI_PROVIDER_PATH=$BUILD fi_info -p mroc >"$E2E_DIR/fi_info.out" 2>&1 ||
	fail "fi_info -p mroc: $(cat "$E2E_DIR/fi_info.out")"
for t in FI_EP_RDM FI_EP_MSG; do
	grep -q "type: $t" "$E2E_DIR/fi_info.out" || fail "fi_info -p mroc does not list $t"
done
ok "fi_info -p mroc lists FI_EP_RDM and FI_EP_MSG"

e2e_pair_up

# fi NS NAME IP ARGS...: fi_pingpong in a namespace, on that host's mrocd.
fipp() {
	local ns=$1 name=$2 ip=$3
	shift 3
	ip netns exec "$ns" env FI_PROVIDER_PATH="$BUILD" MROC_SOCKET="$E2E_DIR/$name.ctl" \
		FI_MROC_ADDR="$ip" timeout 120 fi_pingpong -p mroc "$@"
}

# pingpong PORT ARGS...: server in B, client in A, both must pass and agree (fi_lib.sh).
srv_b() { fipp "$NS_B" b "$IP_B" "$@"; }
cli_a() { fipp "$NS_A" a "$IP_A" "$@"; }
pingpong() {
	local port=$1
	shift
	pp_pair "$port" "$NS_B" srv_b cli_a "$IP_B" "$@"
}

pingpong 47610 -e msg -I 10 -c || fail "fi_pingpong -e msg"
ok "fi_pingpong -p mroc -e msg: 64 B .. 1 MiB, data checked"
pingpong 47611 -e rdm -I 10 -c || fail "fi_pingpong -e rdm"
ok "fi_pingpong -p mroc -e rdm: 64 B .. 1 MiB, data checked"
pingpong 47612 -e rdm -m tagged -I 10 -c || fail "fi_pingpong -e rdm -m tagged"
ok "fi_pingpong -p mroc -e rdm -m tagged: 64 B .. 1 MiB, data checked"
