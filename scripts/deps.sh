#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages mroc needs to build, test and benchmark.
#
#   scripts/deps.sh [TARGET...]          install what TARGETs need and is missing (as root;
#                                        apt-get update only then); no TARGET: check
#   scripts/deps.sh --check [TARGET...]  exit 0 if it is all installed, 1 (and list it) if not
#   scripts/deps.sh --list [TARGET...]   print the package list
#
# TARGETs (each includes build): build (libraries, programs, BPF), demo (make demo),
# check (make check: tests, fuzzers, provider, MPI, captures), bench (make bench-*).
#
# Idempotent: with everything installed it only asks dpkg and exits.
set -euo pipefail

# What `make` needs to build the product: compilers, the libraries the Makefile asks
# pkg-config for, bpftool for the BPF skeletons.
BUILD_PKGS=(
	build-essential pkg-config clang llvm
	libconfig-dev liburing-dev libbpf-dev libxdp-dev
	libsystemd-dev libjansson-dev libmnl-dev libisal-dev
	# security modes: SipHash ("token", libsodium), AES-GCM ("aead", OpenSSL libcrypto)
	libsodium-dev libssl-dev
	bpftool
)
# make demo: network namespaces, the fabric's impairments (tc, bpftool), its counters (jq) and
# sysctl (procps: a minimal Debian lacks it).
DEMO_PKGS=(iproute2 jq procps)
# make check: CMocka, libFuzzer's runtime, XDP and network tools, unix sockets (admin,
# sd_notify), man pages, completion, captures, the libfabric provider and MPI over mroc.
CHECK_PKGS=(
	libcmocka-dev libclang-rt-14-dev
	xdp-tools iproute2 ethtool tshark iputils-ping
	socat jq systemd
	groff-base bash-completion
	libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev
	# Python over MPI over mroc: examples/allreduce.py (tests/e2e/test_mpi_python.sh)
	python3-mpi4py python3-numpy
)
# make bench*: plots and kernel-TCP / socket baselines.
BENCH_PKGS=(gnuplot-nox iperf3 sockperf)

usage() {
	sed -n '4,13s/^# \{0,1\}//p' "$0"
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
--check)	mode=check; shift ;;
--list)		mode=list; shift ;;
-h|--help)	usage; exit 0 ;;
-*)		usage >&2; exit 2 ;;
esac
[ $# -gt 0 ] || set -- check

PACKAGES=("${BUILD_PKGS[@]}")
for t in "$@"; do
	case "$t" in
	build)	;;
	demo)	PACKAGES+=("${DEMO_PKGS[@]}") ;;
	check)	PACKAGES+=("${DEMO_PKGS[@]}" "${CHECK_PKGS[@]}") ;;
	bench)	PACKAGES+=("${DEMO_PKGS[@]}" "${CHECK_PKGS[@]}" "${BENCH_PKGS[@]}") ;;
	*)	echo "deps: unknown target '$t' (build, demo, check, bench)" >&2; exit 2 ;;
	esac
done
mapfile -t PACKAGES < <(printf '%s\n' "${PACKAGES[@]}" | awk '!seen[$0]++')
[ "$mode" = list ] && { printf '%s\n' "${PACKAGES[@]}"; exit 0; }

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
