#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages mroc needs to build, test and benchmark.
#
#   scripts/deps.sh           install what is missing (as root; apt-get update only then)
#   scripts/deps.sh --check   exit 0 if everything is installed, 1 (and list it) if not
#   scripts/deps.sh --list    print the package list
#
# Idempotent: with everything installed it only asks dpkg and exits.
set -euo pipefail

PACKAGES=(
	# toolchain (libclang-rt: clang's libFuzzer and sanitizer runtimes, for make fuzz)
	build-essential pkg-config clang llvm libclang-rt-14-dev
	# libraries (pkg-config names in the Makefile)
	libcmocka-dev libconfig-dev liburing-dev libbpf-dev libxdp-dev
	libsystemd-dev libjansson-dev libmnl-dev libisal-dev
	# security modes: SipHash ("token", libsodium), AES-GCM ("aead", OpenSSL libcrypto)
	libsodium-dev libssl-dev
	# XDP / network tools for the daemon and end-to-end tests
	xdp-tools bpftool iproute2 ethtool tshark iputils-ping
	# end-to-end tests: talk to unix sockets (admin, sd_notify) and read JSON
	socat jq systemd
	# install test: man pages formatted without warnings; mroc-cli's completion test
	groff-base bash-completion
	# benchmarks: plots and kernel-TCP / socket baselines
	gnuplot-nox iperf3 sockperf
	# libfabric provider and MPI over mroc: headers, fi_info/fi_pingpong, Open MPI
	libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev
)

usage() {
	sed -n '4,9s/^# \{0,1\}//p' "$0"
}

# Print the packages of PACKAGES that dpkg does not list as installed.
missing_packages() {
	local installed
	# One dpkg-query for all; unknown packages only print to stderr.
	installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null |
		    awk '$2 == "installed" { print $1 }' || true)
	local p
	for p in "${PACKAGES[@]}"; do
		grep -qxF "$p" <<<"$installed" || echo "$p"
	done
}

mode=install
case "${1:-}" in
"")		;;
--check)	mode=check ;;
--list)		printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
-h|--help)	usage; exit 0 ;;
*)		usage >&2; exit 2 ;;
esac

mapfile -t missing < <(missing_packages)

if [ "${#missing[@]}" -eq 0 ]; then
	echo "deps: all ${#PACKAGES[@]} packages installed"
	exit 0
fi

if [ "$mode" = check ]; then
	echo "deps: missing ${#missing[@]} package(s): ${missing[*]}" >&2
	exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing ${missing[*]}" >&2
	echo "deps: installing needs root: run 'sudo scripts/deps.sh' (or as root)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Answer the install-time questions: no setuid dumpcap (tshark), no iperf3 daemon.
debconf-set-selections <<'EOF'
wireshark-common wireshark-common/install-setuid boolean false
iperf3 iperf3/start_daemon boolean false
EOF

echo "deps: installing ${missing[*]}"
apt-get update -q
apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	"${missing[@]}"

mapfile -t missing < <(missing_packages)
if [ "${#missing[@]}" -ne 0 ]; then
	echo "deps: still missing after install: ${missing[*]}" >&2
	exit 1
fi
echo "deps: all ${#PACKAGES[@]} packages installed"
