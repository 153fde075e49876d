# SPDX-License-Identifier: MIT
#
# mroc top-level Makefile (GNU make, non-recursive).
#
#   make                      libraries, programs and test binaries into build/
#   make check                install missing packages (scripts/deps.sh), build, run every test
#   make bench                the simulation benchmark, then real packets over veth and the
#                             multi-plane fabric (root): mroc vs RoCEv2 mode vs TCP
#   make bench-sim            cluster simulation (issues #7, #16): CSV, PNG and tables into docs/perf/
#   make bench-scale          1 .. 4,000 QPs (and 1x256, 4x64, 16x250) on one daemon pair vs TCP,
#                             memory, CPU per GB (issues #10, #22, root; QUIET=1: each run at load < 1)
#   make bench-mpi            libfabric fi_pingpong and Open MPI over mroc vs TCP (issue #14, root)
#   make bench-lat            latency tables and plot (issue 17) into docs/perf/ (root)
#   make bench-nccl           ring AllReduce over the NCCL net plugin vs kernel TCP (issue 26, root)
#   make demo                 two mrocd over a 4-plane fabric, mroc-perf, mroc-cli (root)
#   make fuzz [FUZZ_TIME=60]  libFuzzer harnesses (clang, build-fuzz/), each FUZZ_TIME seconds
#   make sim-sweep [SWEEP_ARGS="--runs 300 --seed 1"]
#                             robustness sweep: random seeds and parameters through mroc-sim
#                             built with SANITIZE=address,undefined (not in check)
#   make clean                remove build/ and build-*/
#   make V=1                  print full commands (and, with check, every test's output)
#   make WERROR=1             warnings are errors (automatic when CI is set)
#   make SANITIZE=address,undefined
#                             -fsanitize=... build in its own folder, build-address-undefined/
#                             (SANITIZE=thread gives build-thread/); check and bench work there too
#   make LTO=0                mrocd, mroc-sim and tools/ without link-time optimisation (on by
#                             default with gcc, off with SANITIZE): quicker relinks while editing
#
# Sources are found with $(wildcard): a new engine/*.c, daemon/*/*.c, sim/*.c or
# tests/{unit,sim}/test_*.c is picked up without editing this file.

.DEFAULT_GOAL := all

# ---- verbosity ------------------------------------------------------------

V ?= 0
ifeq ($(V),1)
Q :=
say :=
else
Q := @
# $(call say,TAG,name) prints "  TAG     name".
say = @printf '  %-7s %s\n' '$(1)' '$(2)';
endif

# ---- build folder -------------------------------------------------------------

comma := ,
ifneq ($(SANITIZE),)
BUILD ?= build-$(subst $(comma),-,$(SANITIZE))
else
BUILD ?= build
endif
# One spelling of each object's path: -MMD names the target as -o spells it, so
# a build with BUILD=$PWD/build (test_install.sh, the bench scripts) left .d files
# whose header dependencies a later `make` (BUILD=build) never matched, and a
# changed header rebuilt nothing.
override BUILD := $(patsubst $(CURDIR)/%,%,$(abspath $(BUILD)))
OBJ := $(BUILD)/obj

# ---- toolchain and flags ------------------------------------------------------

PKG_CONFIG ?= pkg-config

# CFLAGS, CPPFLAGS, LDFLAGS and LDLIBS are yours to set (make CFLAGS=-O0);
# the project's own flags are added to them.
CFLAGS ?= -O2 -g
WARNINGS := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -Wmissing-prototypes
MROC_CFLAGS := -std=gnu11 $(CFLAGS) $(WARNINGS) -D_GNU_SOURCE -MMD -MP -Icommon
MROC_LDFLAGS := $(LDFLAGS)
MROC_LDLIBS := $(LDLIBS) -lm

# CI=true (set by CI) turns warnings into errors; CI=false or CI=0 does not.
ifneq ($(filter-out 0 false,$(CI)),)
WERROR := 1
endif
ifeq ($(WERROR),1)
MROC_CFLAGS += -Werror
endif

ifneq ($(SANITIZE),)
MROC_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
MROC_LDFLAGS += -fsanitize=$(SANITIZE)
endif

# Link-time optimisation of the programs that move packets (issue #22): mrocd, mroc-sim and
# tools/ (pkt-cost, xsk-baseline) are linked with -flto, so the engine's many small calls
# across files (peer_room, cc_pace, qp_lookup, the wire puts, frame.c) are inlined where
# they are used.  Their objects (engine/, daemon/, sim/, tools/) are "fat": GIMPLE for the
# LTO links and machine code besides, so the test binaries link them as usual without
# running the LTO step each (60-odd links).  Not the client library, the libfabric
# provider or the NCCL plugin (installed or loaded by programs built with other compilers),
# not SANITIZE builds (and so not make fuzz).  gcc only; LTO=0 turns it off, LTO=1 forces it.
ifeq ($(origin LTO),undefined)
LTO := $(if $(SANITIZE),0,$(if $(shell $(CC) -v 2>&1 | grep '^gcc version'),1,0))
endif
ifeq ($(LTO),1)
LTO_CFLAGS := -flto -ffat-lto-objects
# The LTO step compiles at link time: with the compile flags (and -Werror), in
# LTO_JOBS threads (gcc's -flto=auto found no job server in make's recipes
# and said "using serial compilation"), and the archiver that writes the LTO
# symbol index.
LTO_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
LTO_LDFLAGS := $(CFLAGS) $(WARNINGS) $(if $(filter 1,$(WERROR)),-Werror) -flto=$(LTO_JOBS)
ifeq ($(origin AR),default)
AR := gcc-ar
endif
# The other links take the fat objects' machine code: without -fno-lto, gcc's linker plugin
# ran the LTO step for each test binary as well (a full build: 4-5 x the CPU).
NO_LTO_LDFLAGS := -fno-lto
endif

# ---- dependencies (pkg-config) ----------------------------------------------
# One FOO_CFLAGS / FOO_LIBS pair per library.  Only cmocka is used today; the
# others are for the daemon, client library and tools (issues #3, #4, #5) and
# are not needed to build the engine, the simulator or the tests.

pkg_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pkg_libs = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

HAVE_CMOCKA := $(shell $(PKG_CONFIG) --exists cmocka 2>/dev/null && echo 1)
CMOCKA_CFLAGS := $(call pkg_cflags,cmocka)
CMOCKA_LIBS := $(call pkg_libs,cmocka)

# The daemon's libraries: set with = so pkg-config only runs once a rule uses them.
LIBBPF_CFLAGS = $(call pkg_cflags,libbpf)
LIBBPF_LIBS = $(call pkg_libs,libbpf)
LIBXDP_CFLAGS = $(call pkg_cflags,libxdp)
LIBXDP_LIBS = $(call pkg_libs,libxdp)
LIBURING_CFLAGS = $(call pkg_cflags,liburing)
LIBURING_LIBS = $(call pkg_libs,liburing)
LIBCONFIG_CFLAGS = $(call pkg_cflags,libconfig)
LIBCONFIG_LIBS = $(call pkg_libs,libconfig)
LIBSYSTEMD_CFLAGS = $(call pkg_cflags,libsystemd)
LIBSYSTEMD_LIBS = $(call pkg_libs,libsystemd)
LIBMNL_CFLAGS = $(call pkg_cflags,libmnl)
LIBMNL_LIBS = $(call pkg_libs,libmnl)
JANSSON_CFLAGS = $(call pkg_cflags,jansson)
JANSSON_LIBS = $(call pkg_libs,jansson)
# The engine's one library: libsodium's SipHash for security mode "token".
ENGINE_CFLAGS = $(call pkg_cflags,libsodium)
ENGINE_LIBS = $(call pkg_libs,libsodium)
# libcrypto: AES-GCM for security mode "aead" (daemon/dataplane/aead.c).
DAEMON_PKGS := libbpf libxdp liburing libconfig libsystemd libmnl jansson libisal libcrypto \
	libsodium
DAEMON_CFLAGS = $(call pkg_cflags,$(DAEMON_PKGS))
DAEMON_LIBS = $(call pkg_libs,$(DAEMON_PKGS)) -lpthread

CLANG ?= clang
BPFTOOL ?= bpftool
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
BPF_CFLAGS := -O2 -g -Wall -target bpf $(if $(MULTIARCH),-I/usr/include/$(MULTIARCH))

# ---- sources ----------------------------------------------------------------

# Engine: every engine/*.c -> libmroc_engine.a.  It sees only its own headers.
ENGINE_SRCS := $(sort $(wildcard engine/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(OBJ)/%.o)
ENGINE_LIB := $(BUILD)/libmroc_engine.a
$(ENGINE_OBJS): INCLUDES = -Iengine $(ENGINE_CFLAGS)

# Simulator: sim/*.c except mroc_sim.c -> libmroc_sim.a (run_cli.c, cluster_cli.c and
# enginebench.c, the other commands, too); mroc_sim.c -> mroc-sim.
SIM_MAIN := $(wildcard sim/mroc_sim.c)
SIM_SRCS := $(filter-out sim/mroc_sim.c,$(sort $(wildcard sim/*.c)))
SIM_OBJS := $(SIM_SRCS:%.c=$(OBJ)/%.o)
SIM_LIB := $(if $(SIM_SRCS),$(BUILD)/libmroc_sim.a)
SIM_BIN := $(if $(SIM_MAIN),$(BUILD)/mroc-sim)
$(SIM_OBJS) $(SIM_MAIN:%.c=$(OBJ)/%.o): INCLUDES := -Isim -Iengine

# BPF: bpf/*.bpf.c -> build/bpf/*.bpf.o and a libbpf skeleton build/bpf/*.skel.h
# (generated, never committed).
BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))
BPF_OBJS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
BPF_SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.skel.h)

# Daemon: daemon/*.c and daemon/<room>/*.c except main.c -> libmrocd.a; main.c -> mrocd.
# Each room is on the include path, so a file names a header by its name alone.
DAEMON_MAIN := $(wildcard daemon/main.c)
DAEMON_ROOMS := daemon $(patsubst %/,%,$(sort $(dir $(wildcard daemon/*/*.[ch]))))
DAEMON_INC := $(addprefix -I,$(DAEMON_ROOMS))
DAEMON_SRCS := $(filter-out daemon/main.c,$(sort $(foreach d,$(DAEMON_ROOMS),$(wildcard $(d)/*.c))))
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(OBJ)/%.o)
DAEMON_LIB := $(if $(DAEMON_SRCS),$(BUILD)/libmrocd.a)
DAEMON_BIN := $(if $(DAEMON_MAIN),$(BUILD)/mrocd)
$(DAEMON_OBJS) $(DAEMON_MAIN:%.c=$(OBJ)/%.o): INCLUDES = $(DAEMON_INC) -Iengine -Ibpf -I$(BUILD)/bpf $(DAEMON_CFLAGS)
# Skeletons exist before any daemon object compiles.
$(DAEMON_OBJS) $(DAEMON_MAIN:%.c=$(OBJ)/%.o): | $(BPF_SKELS)

# Client library: libclient/*.c -> libmroc.a and libmroc.so.$(LIBMROC_VERSION) (soname
# libmroc.so.0), position-independent objects apart, exports limited by libmroc.map.
LIBMROC_MAJOR := 0
LIBMROC_VERSION := $(LIBMROC_MAJOR).1.0
LIBMROC_SRCS := $(sort $(wildcard libclient/*.c))
LIBMROC_OBJS := $(LIBMROC_SRCS:%.c=$(OBJ)/%.o)
LIBMROC_PIC_OBJS := $(LIBMROC_SRCS:%.c=$(BUILD)/obj-pic/%.o)
LIBMROC_A := $(if $(LIBMROC_SRCS),$(BUILD)/libmroc.a)
LIBMROC_SO := $(if $(LIBMROC_SRCS),$(BUILD)/libmroc.so.$(LIBMROC_VERSION))
$(LIBMROC_OBJS) $(LIBMROC_PIC_OBJS): INCLUDES := -Ilibclient -Ilibclient/include
# Daemon objects include the ABI and ring headers shared with the library.
$(DAEMON_OBJS) $(DAEMON_MAIN:%.c=$(OBJ)/%.o): INCLUDES += -Ilibclient -Ilibclient/include

# mroc-perf: cli/perf/*.c, linked with the static libmroc.
PERF_SRCS := $(sort $(wildcard cli/perf/*.c))
PERF_OBJS := $(PERF_SRCS:%.c=$(OBJ)/%.o)
PERF_BIN := $(if $(PERF_SRCS),$(BUILD)/mroc-perf)
$(PERF_OBJS): INCLUDES := -Ilibclient/include -Icli/perf

# Examples: examples/*.c -> build/examples/*, whole programs against libmroc's public
# header and the static library (installed as documentation, with examples/Makefile).
EXAMPLE_SRCS := $(sort $(wildcard examples/*.c))
EXAMPLE_BINS := $(EXAMPLE_SRCS:%.c=$(BUILD)/%)
$(EXAMPLE_SRCS:%.c=$(OBJ)/%.o): INCLUDES := -Ilibclient/include

# Tools: tools/*.c -> build/*, one program per file, linked with the daemon's library
# (xsk-baseline uses mrocd's XDP program loader and frame builder).
TOOL_SRCS := $(sort $(wildcard tools/*.c))
TOOL_BINS := $(patsubst tools/%.c,$(BUILD)/%,$(subst _,-,$(TOOL_SRCS)))
$(TOOL_SRCS:%.c=$(OBJ)/%.o): INCLUDES = $(DAEMON_INC) -Iengine -Ibpf -I$(BUILD)/bpf $(DAEMON_CFLAGS)
$(TOOL_SRCS:%.c=$(OBJ)/%.o): | $(BPF_SKELS)

# Tests: tests/{unit,sim}/test_*.c -> build/tests/{unit,sim}/test_*, one binary
# per file.  Other .c files in the same folder are helpers linked into each
# test binary of that folder.
TEST_DIRS := tests/unit tests/sim
TEST_SRCS := $(foreach d,$(TEST_DIRS),$(sort $(wildcard $(d)/test_*.c)))
TEST_BINS := $(TEST_SRCS:%.c=$(BUILD)/%)
TEST_HELPER_SRCS := $(filter-out $(TEST_SRCS),$(foreach d,$(TEST_DIRS),$(wildcard $(d)/*.c)))
TEST_OBJS := $(TEST_SRCS:%.c=$(OBJ)/%.o) $(TEST_HELPER_SRCS:%.c=$(OBJ)/%.o)
$(TEST_OBJS): INCLUDES = -Isim $(DAEMON_INC) -Iengine -Ibpf -I$(BUILD)/bpf -Ilibclient \
	-Ilibclient/include $(CMOCKA_CFLAGS) $(if $(DAEMON_LIB),$(DAEMON_CFLAGS))
$(TEST_OBJS): | $(BPF_SKELS)
# End-to-end tests: executable scripts tests/e2e/test_*.sh (root, network namespaces; exit 77 to skip),
# and the helper programs they run, tests/e2e/*.c -> build/tests/e2e/*.
E2E_TESTS := $(sort $(wildcard tests/e2e/test_*.sh))
# Checks of the tree itself: tests/lint/test_*.sh (READMEs name every file, --help every option).
LINT_TESTS := $(sort $(wildcard tests/lint/test_*.sh))
E2E_TOOL_SRCS := $(sort $(wildcard tests/e2e/*.c))
E2E_TOOLS := $(E2E_TOOL_SRCS:%.c=$(BUILD)/%)
$(E2E_TOOL_SRCS:%.c=$(OBJ)/%.o): INCLUDES := -Ilibclient -Ilibclient/include
# Helper objects of the folder a test binary lives in.
test_helpers = $(patsubst %.c,$(OBJ)/%.o,$(filter $(patsubst $(BUILD)/%,%,$(dir $(1)))%,$(TEST_HELPER_SRCS)))

ALL_OBJS := $(ENGINE_OBJS) $(SIM_OBJS) $(SIM_MAIN:%.c=$(OBJ)/%.o) $(TEST_OBJS) $(DAEMON_OBJS) \
	$(DAEMON_MAIN:%.c=$(OBJ)/%.o) $(LIBMROC_OBJS) $(LIBMROC_PIC_OBJS) $(PERF_OBJS) \
	$(E2E_TOOL_SRCS:%.c=$(OBJ)/%.o) $(TOOL_SRCS:%.c=$(OBJ)/%.o) $(EXAMPLE_SRCS:%.c=$(OBJ)/%.o)

# The objects of the LTO-linked programs (LTO above).
$(ENGINE_OBJS) $(SIM_OBJS) $(SIM_MAIN:%.c=$(OBJ)/%.o) $(DAEMON_OBJS) $(DAEMON_MAIN:%.c=$(OBJ)/%.o) \
	$(TOOL_SRCS:%.c=$(OBJ)/%.o): OBJ_LTO = $(LTO_CFLAGS)

# ---- top-level targets ------------------------------------------------------

.PHONY: all libs tests check bench bench-lat bench-sim bench-scale bench-mpi bench-nccl demo clean help \
	sim-sweep

ifeq ($(HAVE_CMOCKA),1)
all: libs $(SIM_BIN) $(DAEMON_BIN) $(PERF_BIN) $(TOOL_BINS) $(EXAMPLE_BINS) tests
else
all: libs $(SIM_BIN) $(DAEMON_BIN) $(PERF_BIN) $(TOOL_BINS) $(EXAMPLE_BINS)
	@echo "note: test binaries not built: cmocka not found by pkg-config (scripts/deps.sh installs it)"
endif

libs: $(ENGINE_LIB) $(SIM_LIB) $(DAEMON_LIB) $(LIBMROC_A) $(LIBMROC_SO) $(BPF_OBJS)

# BPF objects are wanted themselves (scripts/fabric loads impair.bpf.o), not only for skeletons.
.SECONDARY: $(BPF_OBJS)

tests: $(TEST_BINS) $(E2E_TOOLS)
	@:

# deps.sh runs first; the build (everything, not only the tests) then runs in
# a fresh make so that pkg-config sees what deps.sh may just have installed.
# SKIP_DEPS=1 skips deps.sh.
check:
ifneq ($(SKIP_DEPS),1)
	$(Q)scripts/deps.sh --check check >/dev/null || scripts/deps.sh check
endif
	$(Q)$(MAKE) --no-print-directory $(if $(filter 1,$(V)),,-s) all tests $(if $(FUZZ_TESTS),fuzz-build)
	$(Q)$(if $(filter 1,$(V) $(VERBOSE)),VERBOSE=1 )BUILD=$(BUILD) scripts/run-tests.sh $(LINT_TESTS) $(TEST_BINS) $(E2E_TESTS) \
		$(FUZZ_TESTS)

# Two hosts over a 4-plane fabric in network namespaces, mrocd on AF_XDP on each,
# mroc-perf moving verified data, mroc-cli showing the paths (root).
demo:
	$(Q)scripts/deps.sh --check demo >/dev/null || scripts/deps.sh demo
	$(Q)$(MAKE) --no-print-directory -s all
	$(Q)BUILD=$(abspath $(BUILD)) scripts/demo.sh

# The simulation benchmark, then real packets (root) over veth and over the multi-plane
# fabric: mroc vs RoCEv2 mode vs TCP; then hosts with a port per plane (bench-ports.sh);
# then 1 .. 4,000 QPs (bench-scale) and the libfabric provider and MPI (bench-mpi); latency
# (bench-lat); what each security.mode costs (bench-sec.sh).
bench: all
	$(SIM_BIN) bench
	BUILD=$(abspath $(BUILD)) scripts/bench-net.sh
	BUILD=$(abspath $(BUILD)) scripts/bench-fabric.sh
	BUILD=$(abspath $(BUILD)) scripts/bench-ports.sh
	BUILD=$(abspath $(BUILD)) scripts/bench-scale.sh
	BUILD=$(abspath $(BUILD)) scripts/bench-mpi.sh
	BUILD=$(abspath $(BUILD)) scripts/bench-lat.sh
	BUILD=$(abspath $(BUILD)) scripts/bench-sec.sh

# The benchmarks' packages (plots, iperf3, sockperf) on top of the tests'.
BENCH_TARGETS := bench bench-scale bench-mpi bench-lat bench-sim
.PHONY: bench-deps
$(BENCH_TARGETS): bench-deps
bench-deps:
	$(Q)scripts/deps.sh --check bench >/dev/null || scripts/deps.sh bench

# 1, 16, 256, 1,000 and 4,000 QPs over two mrocd on AF_XDP (4-plane fabric) beside kernel
# TCP with as many connections; the engine alone; the cluster AllToAll (about 15 minutes).
bench-scale: all
	BUILD=$(abspath $(BUILD)) scripts/bench-scale.sh

# fi_pingpong -p mroc vs libfabric's tcp and udp;ofi_rxd, Open MPI allreduce over mroc vs
# its TCP path, lossless and at 1% loss on one plane (about 10 minutes).
bench-mpi: all
	BUILD=$(abspath $(BUILD)) scripts/bench-mpi.sh

# NCCL (issue 26): all_reduce_perf-style busbw and time, 8 B .. 64 MiB, 4 ranks on 4 and 2
# hosts, over the NCCL net plugin and over kernel TCP, lossless and at 1% loss on a plane
# (root, about 5 minutes): docs/perf/nccl-*.
bench-nccl: all tests
	BUILD=$(abspath $(BUILD)) scripts/bench-nccl.sh

# Latency (issue 17): write/send/read_lat in both completion modes and sockperf, on a veth
# pair and a 2/4-plane fabric, idle and under a write_bw, ECN off and on (root, ~20 min).
bench-lat: all
	BUILD=$(abspath $(BUILD)) scripts/bench-lat.sh

# 64 simulated hosts running the engine, MetaRoCE vs the RoCEv2 baselines over 5 seeds
# (about 15 minutes of CPU, two runs at a time).
bench-sim: all
	BUILD=$(abspath $(BUILD)) scripts/bench-sim.sh

# Any seed, any fabric: mroc-sim run, incast, cluster --verify and engine over random seeds and
# parameters, sanitizers on; failures with their command lines (scripts/sim-sweep.sh --help).
sim-sweep:
	scripts/sim-sweep.sh $(SWEEP_ARGS)

clean:
	$(call say,CLEAN,build build-*)
	$(Q)rm -rf build build-*/

help:
	@sed -n '5,/^#$$/s/^# \{0,1\}//p' Makefile

# ---- rules ------------------------------------------------------------------

# Flags are part of what an object depends on: a change of CFLAGS, SANITIZE or
# WERROR rebuilds everything.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW := $(CC) $(CPPFLAGS) $(MROC_CFLAGS) $(MROC_LDFLAGS) $(MROC_LDLIBS) $(LTO_CFLAGS)
ifeq ($(filter clean help,$(MAKECMDGOALS)),)
ifneq ($(shell cat $(FLAGS_STAMP) 2>/dev/null),$(strip $(FLAGS_NOW)))
$(shell mkdir -p $(BUILD) && echo '$(strip $(FLAGS_NOW))' > $(FLAGS_STAMP))
endif
endif
$(FLAGS_STAMP):
	@mkdir -p $(@D) && echo '$(strip $(FLAGS_NOW))' > $@

$(OBJ)/%.o: %.c $(FLAGS_STAMP)
	$(call say,CC,$*.o)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(INCLUDES) $(MROC_CFLAGS) $(OBJ_LTO) -c -o $@ $<

# Without cmocka, test objects fail with a plain message instead of
# "cmocka.h: No such file".
ifneq ($(HAVE_CMOCKA),1)
$(TEST_OBJS):
	$(error cmocka not found by pkg-config: run scripts/deps.sh (as root))
endif

# rm first, so an object whose source was deleted leaves the archive too.
$(ENGINE_LIB): $(ENGINE_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/libmroc_sim.a: $(SIM_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/mroc-sim: $(OBJ)/sim/mroc_sim.o $(SIM_LIB) $(ENGINE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) $(LTO_LDFLAGS) -o $@ $^ $(ENGINE_LIBS) $(MROC_LDLIBS)

$(BUILD)/obj-pic/%.o: %.c $(FLAGS_STAMP)
	$(call say,CC,$*.o [pic])
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(INCLUDES) $(MROC_CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/libmroc.a: $(LIBMROC_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/libmroc.so.$(LIBMROC_VERSION): $(LIBMROC_PIC_OBJS) libclient/libmroc.map
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) -shared -Wl,-soname,libmroc.so.$(LIBMROC_MAJOR) \
		-Wl,--version-script=libclient/libmroc.map -o $@ $(LIBMROC_PIC_OBJS)
	$(Q)ln -sf libmroc.so.$(LIBMROC_VERSION) $(BUILD)/libmroc.so.$(LIBMROC_MAJOR)
	$(Q)ln -sf libmroc.so.$(LIBMROC_MAJOR) $(BUILD)/libmroc.so

$(BUILD)/mroc-perf: $(PERF_OBJS) $(LIBMROC_A)
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) -o $@ $^ -lpthread $(MROC_LDLIBS)

# libfabric provider "mroc": libfabric/*.c -> libmroc-fi.so (the name libfabric looks for in
# FI_PROVIDER_PATH), with libmroc's position-independent objects linked in so it needs no
# libmroc.so at run time; only fi_prov_ini is exported (libfabric/libmroc-fi.map).  Built when
# libfabric-dev is installed.  Its pure parts (AV table, matching, CQ FIFO, atomics, error
# mapping) are also linked into tests/unit/test_fi_*.
HAVE_LIBFABRIC := $(shell $(PKG_CONFIG) --exists libfabric 2>/dev/null && echo 1)
LIBFABRIC_CFLAGS = $(call pkg_cflags,libfabric)
FI_SRCS := $(sort $(wildcard libfabric/*.c))
FI_PIC_OBJS := $(FI_SRCS:%.c=$(BUILD)/obj-pic/%.o)
FI_PURE_OBJS := $(OBJ)/libfabric/av_table.o $(OBJ)/libfabric/match.o $(OBJ)/libfabric/cqring.o \
		$(OBJ)/libfabric/atomic_ops.o $(OBJ)/libfabric/errmap.o
FI_PROV := $(if $(and $(FI_SRCS),$(HAVE_LIBFABRIC)),$(BUILD)/libmroc-fi.so)
$(FI_PIC_OBJS) $(FI_PURE_OBJS): INCLUDES = -Ilibfabric -Ilibclient/include $(LIBFABRIC_CFLAGS)
ALL_OBJS += $(FI_PIC_OBJS) $(FI_PURE_OBJS)
FI_TESTS := $(filter $(BUILD)/tests/unit/test_fi_%,$(TEST_BINS))
ifeq ($(HAVE_LIBFABRIC),1)
all: $(FI_PROV)
$(FI_TESTS): $(FI_PURE_OBJS)
$(FI_TESTS:$(BUILD)/%=$(OBJ)/%.o): INCLUDES += -Ilibfabric $(LIBFABRIC_CFLAGS)
else
# Without libfabric-dev there is nothing to test them against.
TEST_BINS := $(filter-out $(FI_TESTS),$(TEST_BINS))
endif

$(BUILD)/libmroc-fi.so: $(FI_PIC_OBJS) $(LIBMROC_PIC_OBJS) libfabric/libmroc-fi.map
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) -shared -Wl,--version-script=libfabric/libmroc-fi.map \
		-Wl,-z,defs -o $@ $(FI_PIC_OBJS) $(LIBMROC_PIC_OBJS) -lfabric -lpthread

# NCCL net plugin: nccl/*.c -> libnccl-net-mroc.so (the name NCCL_NET_PLUGIN=mroc makes NCCL
# dlopen), libmroc's position-independent objects linked in; only ncclNetPlugin_v8 .. _v12 are
# exported (nccl/libnccl-net-mroc.map).  tests/nccl/*.c -> build/tests/nccl/*: the harness that
# drives it as NCCL would (dlopen by path), or the same ring over kernel TCP or a libfabric
# provider (tests/nccl/fi_net.c), run by tests/e2e/test_nccl.sh and make bench-nccl.
NCCL_SRCS := $(sort $(wildcard nccl/*.c))
NCCL_PIC_OBJS := $(NCCL_SRCS:%.c=$(BUILD)/obj-pic/%.o)
NCCL_PLUGIN := $(if $(NCCL_SRCS),$(BUILD)/libnccl-net-mroc.so)
$(NCCL_PIC_OBJS): INCLUDES := -Inccl -Ilibclient/include
ALL_OBJS += $(NCCL_PIC_OBJS)
all: $(NCCL_PLUGIN)

$(BUILD)/libnccl-net-mroc.so: $(NCCL_PIC_OBJS) $(LIBMROC_PIC_OBJS) nccl/libnccl-net-mroc.map
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) -shared -Wl,--version-script=nccl/libnccl-net-mroc.map \
		-Wl,-z,defs -o $@ $(NCCL_PIC_OBJS) $(LIBMROC_PIC_OBJS) -lpthread

# fi_net.c (the ring over a libfabric provider) only where libfabric-dev is installed.
NCCL_TEST_SRCS := $(filter-out $(if $(HAVE_LIBFABRIC),,tests/nccl/fi_net.c),\
		  $(sort $(wildcard tests/nccl/*.c)))
NCCL_HARNESS := $(if $(NCCL_TEST_SRCS),$(BUILD)/tests/nccl/nccl-harness)
$(NCCL_TEST_SRCS:%.c=$(OBJ)/%.o): INCLUDES := -Inccl -Itests/nccl -Itests/fi \
	$(if $(HAVE_LIBFABRIC),-DH_HAVE_FI $(LIBFABRIC_CFLAGS))
ALL_OBJS += $(NCCL_TEST_SRCS:%.c=$(OBJ)/%.o)
tests: $(NCCL_HARNESS) $(NCCL_PLUGIN)
$(NCCL_HARNESS): $(NCCL_TEST_SRCS:%.c=$(OBJ)/%.o)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(MROC_LDFLAGS) -o $@ $^ -ldl $(if $(HAVE_LIBFABRIC),-lfabric) -lpthread $(MROC_LDLIBS)

# MPI programs: tests/mpi/*.c -> build/tests/mpi/* with mpicc (Open MPI, openmpi-bin and
# libopenmpi-dev), written with MPI only; tests/e2e/test_mpi.sh and scripts/bench-mpi.sh run them.
MPICC ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo 1)
MPI_SRCS := $(sort $(wildcard tests/mpi/*.c))
MPI_BINS := $(if $(HAVE_MPICC),$(MPI_SRCS:%.c=$(BUILD)/%))
tests: $(MPI_BINS)
$(MPI_BINS): $(BUILD)/%: %.c $(FLAGS_STAMP)
	$(call say,MPICC,$@)
	@mkdir -p $(@D)
	$(Q)$(MPICC) -std=gnu11 $(CFLAGS) $(WARNINGS) $(if $(filter 1,$(WERROR)),-Werror) -o $@ $<

# libfabric programs: tests/fi/*.c -> build/tests/fi/*, written with libfabric only (no mroc
# header); tests/e2e/test_fi_*.sh run them over the provider.  Built when libfabric-dev is installed,
# with the sanitizers of a SANITIZE build (they load the sanitized provider).
FI_PROG_SRCS := $(sort $(wildcard tests/fi/*.c))
FI_PROGS := $(if $(HAVE_LIBFABRIC),$(FI_PROG_SRCS:%.c=$(BUILD)/%))
tests: $(FI_PROGS)
# One program's sources ($(filter %.c,$^)) compiled and linked in one step.
FI_PROG_CC = $(CC) -std=gnu11 $(CFLAGS) $(WARNINGS) $(if $(filter 1,$(WERROR)),-Werror) \
	$(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer) \
	$(LIBFABRIC_CFLAGS) -Itests/fi $(FI_PROG_CFLAGS) -o $@ $(filter %.c,$^) $(FI_PROG_LIBS) \
	$(call pkg_libs,libfabric)
$(FI_PROGS): $(BUILD)/%: %.c tests/fi/fi_common.h $(FLAGS_STAMP)
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(FI_PROG_CC)
# fi_suite (tests/fi/suite/, one file per concern): fabtests' quick and standard lists written
# anew; its zcopy test reads the provider's traffic counters (libfabric/fi_mroc.h).
FI_SUITE_SRCS := $(sort $(wildcard tests/fi/suite/*.c))
FI_SUITE := $(if $(HAVE_LIBFABRIC),$(BUILD)/tests/fi/fi_suite)
tests: $(FI_SUITE)
$(FI_SUITE): $(FI_SUITE_SRCS) tests/fi/suite/suite.h tests/fi/fi_common.h libfabric/fi_mroc.h \
	     $(FLAGS_STAMP)
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(FI_PROG_CC)
$(FI_SUITE): FI_PROG_CFLAGS = -Ilibfabric
# fi_hostile (tests/fi/hostile/, one file per concern) is also a hostile peer: it speaks
# the provider's protocol (libfabric/proto.h) itself over libmroc, and reads the
# provider's counters (libfabric/fi_mroc.h).
FI_HOSTILE_SRCS := $(sort $(wildcard tests/fi/hostile/*.c))
FI_HOSTILE := $(if $(HAVE_LIBFABRIC),$(BUILD)/tests/fi/fi_hostile)
tests: $(FI_HOSTILE)
$(FI_HOSTILE): $(FI_HOSTILE_SRCS) tests/fi/hostile/hostile.h tests/fi/fi_common.h $(LIBMROC_A) \
	       libfabric/proto.h libfabric/fi_mroc.h libfabric/av_table.h $(FLAGS_STAMP)
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(FI_PROG_CC)
$(FI_HOSTILE): FI_PROG_CFLAGS = -Ilibfabric -Ilibclient/include
$(FI_HOSTILE): FI_PROG_LIBS = $(LIBMROC_A) -lpthread $(MROC_LDLIBS)

# mroc-cli: cli/*.c (cli/perf/ is mroc-perf's), linked with jansson.  Its helpers
# and print layer (cli/fmt.c, cli/print.c) are also linked into tests/unit/test_cli_print.
CLI_SRCS := $(sort $(wildcard cli/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(OBJ)/%.o)
CLI_BIN := $(if $(CLI_SRCS),$(BUILD)/mroc-cli)
$(CLI_OBJS): INCLUDES = -Icli $(JANSSON_CFLAGS)
ALL_OBJS += $(CLI_OBJS)
all: $(CLI_BIN)
$(BUILD)/tests/unit/test_cli_print: $(OBJ)/cli/fmt.o $(OBJ)/cli/print.o
$(OBJ)/tests/unit/test_cli_print.o: INCLUDES += -Icli

$(BUILD)/mroc-cli: $(CLI_OBJS)
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(MROC_LDLIBS)

$(BUILD)/libmrocd.a: $(DAEMON_OBJS)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/mrocd: $(OBJ)/daemon/main.o $(DAEMON_LIB) $(ENGINE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) $(LTO_LDFLAGS) -o $@ $^ $(DAEMON_LIBS) $(MROC_LDLIBS)

$(TOOL_BINS): $(BUILD)/%: $(OBJ)/tools/%.o $(DAEMON_LIB) $(ENGINE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(MROC_LDFLAGS) $(LTO_LDFLAGS) -o $@ $^ $(DAEMON_LIBS) $(MROC_LDLIBS)

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h)
	$(call say,CLANG,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Ibpf -c -o $@ $<

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call say,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

# link_hog drives the engine itself (an attacker's daemon, test_links_hog_net.sh).
$(OBJ)/tests/e2e/link_hog.o: INCLUDES := -Iengine $(ENGINE_CFLAGS)
$(BUILD)/tests/e2e/link_hog: $(ENGINE_LIB)
$(BUILD)/tests/e2e/link_hog: MROC_LDLIBS += $(ENGINE_LIBS)
$(E2E_TOOLS) $(EXAMPLE_BINS): $(BUILD)/%: $(OBJ)/%.o $(LIBMROC_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(MROC_LDFLAGS) -o $@ $^ $(MROC_LDLIBS)

.SECONDEXPANSION:
$(TEST_BINS): $(BUILD)/%: $(OBJ)/%.o $$(call test_helpers,$$@) $(SIM_LIB) $(DAEMON_LIB) $(ENGINE_LIB) \
		$(LIBMROC_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(MROC_LDFLAGS) $(NO_LTO_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) \
		$(if $(DAEMON_LIB),$(DAEMON_LIBS)) $(ENGINE_LIBS) $(MROC_LDLIBS)

# ---- fuzzing (tests/fuzz/README.md) -----------------------------------------------
#
#   make fuzz [FUZZ_TIME=60]   build the libFuzzer harnesses, then run each for FUZZ_TIME s
#                              on its corpus (build-fuzz/corpus/NAME, seeded from real packets)
#   make fuzz-build            only build them (make check does, then runs each briefly;
#                              make check FUZZ_TESTS= leaves them out)
#
# tests/fuzz/fuzz_*.c are harnesses, built only in build-fuzz/ with clang: there every object
# (engine, daemon, library) is compiled with -fsanitize=fuzzer-no-link,address,undefined and the
# harnesses link with -fsanitize=fuzzer.  tests/fuzz/gen_seeds.c writes the seed corpora.
FUZZ_BUILD := build-fuzz
FUZZ_SANITIZE := fuzzer-no-link,address,undefined
FUZZ_TIME ?= 60
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRCS:tests/fuzz/%.c=%)
FUZZ_BINS := $(FUZZ_SRCS:%.c=$(BUILD)/%)
FUZZ_GEN := $(BUILD)/tests/fuzz/gen_seeds
FUZZ_SEEDS := $(BUILD)/tests/fuzz/seeds/.done
FUZZ_TESTS := $(wildcard tests/fuzz/test_*.sh)
FUZZ_OBJS := $(FUZZ_SRCS:%.c=$(OBJ)/%.o) $(OBJ)/tests/fuzz/gen_seeds.o
$(FUZZ_OBJS): INCLUDES = $(DAEMON_INC) -Iengine -Ibpf -I$(BUILD)/bpf -Ilibclient \
	-Ilibclient/include -Itests/unit $(CMOCKA_CFLAGS) $(DAEMON_CFLAGS)
$(FUZZ_OBJS): | $(BPF_SKELS)
ALL_OBJS += $(FUZZ_OBJS)

.PHONY: fuzz fuzz-build fuzz-bins

fuzz-build:
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang SANITIZE=$(FUZZ_SANITIZE) LTO=0 fuzz-bins

fuzz: fuzz-build
	$(Q)FUZZ_TIME=$(FUZZ_TIME) FUZZ_RUNS=-1 FUZZ_CORPUS=$(FUZZ_BUILD)/corpus tests/fuzz/test_fuzz.sh

fuzz-bins: $(FUZZ_BINS) $(FUZZ_SEEDS)

$(FUZZ_BINS): $(BUILD)/%: $(OBJ)/%.o $(OBJ)/tests/unit/engine_pair.o $(DAEMON_LIB) $(ENGINE_LIB) \
		$(LIBMROC_A)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(MROC_LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(CMOCKA_LIBS) $(DAEMON_LIBS) $(MROC_LDLIBS)

# fuzz_client hands one AIO context to every input's clients table (fuzz_client.c).
$(BUILD)/tests/fuzz/fuzz_client: MROC_LDFLAGS += \
	-Wl,--wrap=evfd_signaller_create,--wrap=evfd_signaller_destroy

$(FUZZ_GEN): $(OBJ)/tests/fuzz/gen_seeds.o $(OBJ)/tests/unit/engine_pair.o $(ENGINE_LIB)
	$(call say,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(MROC_LDFLAGS) $(NO_LTO_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(ENGINE_LIBS) $(MROC_LDLIBS)

# Seeds are regenerated whenever the generator (or the engine it runs) changes.
$(FUZZ_SEEDS): $(FUZZ_GEN) $(wildcard conf/*.conf tests/fuzz/*.conf)
	$(call say,GEN,$(@D))
	$(Q)rm -rf $(@D) && $(FUZZ_GEN) $(@D) conf/mrocd.conf $(wildcard tests/fuzz/*.conf) && touch $@

-include $(ALL_OBJS:.o=.d)

# ---- install ------------------------------------------------------------------
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   builds what is missing first
#   make uninstall [PREFIX=...] [DESTDIR=...]     removes what install put there
#
# The configuration goes to $(SYSCONFDIR)/mroc/mrocd.conf (/etc, whatever the prefix)
# and is never overwritten; uninstall removes it only if it is still the shipped one.
# With PREFIX=/usr the unit goes to /lib/systemd/system (Debian), else under PREFIX.
# Installing into the running system (no DESTDIR, as root) also creates user and group mroc
# (sysusers.d), runs ldconfig and, under systemd, systemctl daemon-reload.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
ifeq ($(PREFIX),/usr)
UNITDIR ?= /lib/systemd/system
else
UNITDIR ?= $(PREFIX)/lib/systemd/system
endif
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# The dissector goes where Wireshark looks for Lua plugins whatever the prefix (as the
# configuration goes to /etc): the global folder tshark reports, else Debian's.
WIRESHARK_LUADIR ?= $(or $(shell tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p'),$(PREFIX)/lib/$(MULTIARCH)/wireshark/plugins)
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
EXAMPLEDIR ?= $(PREFIX)/share/doc/mroc/examples
INSTALL ?= install

# Programs that exist in this tree (CLI_BIN: mroc-cli's rules define it).
INSTALL_BINS := $(PERF_BIN) $(CLI_BIN)
INSTALL_SBINS := $(DAEMON_BIN)
INSTALL_MANS := $(sort $(wildcard man/*.[1-8]))
# Only a library that is built gets its header and pkg-config file.
INSTALL_LIB := $(if $(LIBMROC_SO),1)

subst_paths = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
	-e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	-e 's|@VERSION@|$(LIBMROC_VERSION)|g'

.PHONY: install uninstall

install: $(INSTALL_SBINS) $(INSTALL_BINS) $(LIBMROC_SO) $(LIBMROC_A) $(FI_PROV) $(NCCL_PLUGIN)
	$(call say,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(SYSCONFDIR)/mroc $(sort $(foreach m,$(INSTALL_MANS),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))))
	$(Q)$(foreach f,$(INSTALL_SBINS),$(INSTALL) -m 0755 $(f) $(DESTDIR)$(SBINDIR)/ &&) true
	$(Q)$(foreach f,$(INSTALL_BINS),$(INSTALL) -m 0755 $(f) $(DESTDIR)$(BINDIR)/ &&) true
ifeq ($(INSTALL_LIB),1)
	$(Q)$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR)/mroc
	$(Q)$(INSTALL) -m 0755 $(LIBMROC_SO) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sfn libmroc.so.$(LIBMROC_VERSION) $(DESTDIR)$(LIBDIR)/libmroc.so.$(LIBMROC_MAJOR)
	$(Q)ln -sfn libmroc.so.$(LIBMROC_MAJOR) $(DESTDIR)$(LIBDIR)/libmroc.so
	$(Q)$(INSTALL) -m 0644 $(LIBMROC_A) $(DESTDIR)$(LIBDIR)/
	$(Q)$(INSTALL) -m 0644 libclient/include/mroc/mroc.h $(DESTDIR)$(INCLUDEDIR)/mroc/
	$(Q)$(subst_paths) -e '/^#/d' libclient/libmroc.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libmroc.pc && \
		chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/libmroc.pc
endif
ifneq ($(NCCL_PLUGIN),)
	$(Q)$(INSTALL) -d $(DESTDIR)$(LIBDIR)
	$(Q)$(INSTALL) -m 0755 $(NCCL_PLUGIN) $(DESTDIR)$(LIBDIR)/
endif
ifneq ($(FI_PROV),)
	$(Q)$(INSTALL) -d $(DESTDIR)$(LIBDIR)/libfabric
	$(Q)$(INSTALL) -m 0755 $(FI_PROV) $(DESTDIR)$(LIBDIR)/libfabric/
endif
	$(Q)$(subst_paths) systemd/mrocd.service > $(DESTDIR)$(UNITDIR)/mrocd.service && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/mrocd.service
	$(Q)$(INSTALL) -m 0644 systemd/mroc.sysusers $(DESTDIR)$(SYSUSERSDIR)/mroc.conf
	$(Q)$(INSTALL) -D -m 0644 tools/wireshark/mroc.lua $(DESTDIR)$(WIRESHARK_LUADIR)/mroc.lua
	$(Q)$(INSTALL) -D -m 0644 cli/bash-completion/mroc-cli $(DESTDIR)$(BASHCOMPDIR)/mroc-cli
	$(Q)$(INSTALL) -d $(DESTDIR)$(EXAMPLEDIR)
	$(Q)$(INSTALL) -m 0644 $(EXAMPLE_SRCS) examples/allreduce.py examples/Makefile examples/README.md $(DESTDIR)$(EXAMPLEDIR)/
	$(Q)$(foreach m,$(INSTALL_MANS),$(INSTALL) -m 0644 $(m) \
		$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/ &&) true
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf ]; then \
		echo "  KEEP    $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf (exists; the shipped one is conf/mrocd.conf)"; \
	else \
		$(INSTALL) -m 0644 conf/mrocd.conf $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf; \
	fi
ifeq ($(DESTDIR),)
	$(Q)if [ "$$(id -u)" = 0 ]; then \
		if command -v systemd-sysusers >/dev/null; then \
			systemd-sysusers $(SYSUSERSDIR)/mroc.conf; \
		else \
			getent group mroc >/dev/null || groupadd --system mroc; \
			getent passwd mroc >/dev/null || useradd --system --gid mroc --home-dir / \
				--shell /usr/sbin/nologin --comment "MetaRoCE daemon (mrocd)" mroc; \
		fi; \
		ldconfig; \
		if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	fi
endif

uninstall:
	$(call say,RM,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR)$(SBINDIR)/,$(notdir $(INSTALL_SBINS))) \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(INSTALL_BINS))) \
		$(DESTDIR)$(LIBDIR)/libmroc.so.$(LIBMROC_VERSION) $(DESTDIR)$(LIBDIR)/libmroc.so.$(LIBMROC_MAJOR) \
		$(DESTDIR)$(LIBDIR)/libmroc.so $(DESTDIR)$(LIBDIR)/libmroc.a $(DESTDIR)$(INCLUDEDIR)/mroc/mroc.h \
		$(DESTDIR)$(LIBDIR)/libfabric/libmroc-fi.so $(DESTDIR)$(LIBDIR)/libnccl-net-mroc.so \
		$(DESTDIR)$(PKGCONFIGDIR)/libmroc.pc $(DESTDIR)$(UNITDIR)/mrocd.service $(DESTDIR)$(SYSUSERSDIR)/mroc.conf \
		$(DESTDIR)$(WIRESHARK_LUADIR)/mroc.lua $(DESTDIR)$(BASHCOMPDIR)/mroc-cli \
		$(addprefix $(DESTDIR)$(EXAMPLEDIR)/,$(notdir $(EXAMPLE_SRCS)) allreduce.py Makefile README.md) \
		$(foreach m,$(INSTALL_MANS),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	$(Q)if cmp -s conf/mrocd.conf $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf ]; then \
		echo "  KEEP    $(DESTDIR)$(SYSCONFDIR)/mroc/mrocd.conf (changed since install)"; \
	fi
	$(Q)rmdir $(DESTDIR)$(INCLUDEDIR)/mroc $(DESTDIR)$(SYSCONFDIR)/mroc 2>/dev/null || true
	$(Q)rmdir $(DESTDIR)$(LIBDIR)/libfabric 2>/dev/null || true
	$(Q)rmdir $(DESTDIR)$(EXAMPLEDIR) $(DESTDIR)$(PREFIX)/share/doc/mroc 2>/dev/null || true
ifeq ($(DESTDIR),)
	$(Q)if [ "$$(id -u)" = 0 ]; then \
		ldconfig; \
		if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	fi
endif
