// SPDX-License-Identifier: MIT
/*
 * The XDP program's loader (daemon/backend/xdp_prog.c): attach and detach,
 * stale programs of crashed processes, foreign programs, on veth pairs.
 * Root, in a network namespace of its own (xdp_prog_fix.h).
 */
#include "xdp_prog_fix.h"

/* ---- attach / detach ----------------------------------------------------------- */

static struct bpf_xdp_query_opts query(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	assert_int_equal(bpf_xdp_query(ifindex, 0, &q), 0);
	return q;
}

static void test_attach_detach(void **state)
{
	static const struct {
		enum xdp_prog_mode mode, used;
	} modes[] = {
		{ XDP_PROG_MODE_NATIVE, XDP_PROG_MODE_NATIVE },
		{ XDP_PROG_MODE_GENERIC, XDP_PROG_MODE_GENERIC },
		{ XDP_PROG_MODE_AUTO, XDP_PROG_MODE_NATIVE },	/* veth has native XDP */
	};
	struct bpf_xdp_query_opts q;
	struct xdp_prog *prog;

	if (!net.veth)
		skip();
	prog = open_prog(0);
	assert_true(xdp_prog_id(prog) > 0);
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		assert_int_equal(xdp_prog_attach(prog, net.mx0, modes[i].mode), 0);
		q = query(net.mx0);
		assert_int_equal(q.prog_id, xdp_prog_id(prog));
		if (modes[i].used == XDP_PROG_MODE_NATIVE) {
			assert_int_equal(q.attach_mode, XDP_ATTACHED_DRV);
			assert_int_equal(q.drv_prog_id, xdp_prog_id(prog));
		} else {
			assert_int_equal(q.attach_mode, XDP_ATTACHED_SKB);
			assert_int_equal(q.skb_prog_id, xdp_prog_id(prog));
		}
		assert_int_equal(xdp_prog_attach_mode(prog, net.mx0), modes[i].used);
		assert_int_equal(xdp_prog_attach(prog, net.mx0, modes[i].mode), 0);	/* no-op */
		assert_int_equal(xdp_prog_detach(prog, net.mx0), 0);
		q = query(net.mx0);
		assert_int_equal(q.prog_id, 0);
		assert_int_equal(q.attach_mode, XDP_ATTACHED_NONE);
		assert_int_equal(xdp_prog_detach(prog, net.mx0), -ENOENT);
		assert_int_equal(xdp_prog_attach_mode(prog, net.mx0), -ENOENT);
	}
	/* one program on two interfaces; close detaches both */
	assert_int_equal(xdp_prog_attach(prog, net.mx0, XDP_PROG_MODE_NATIVE), 0);
	assert_int_equal(xdp_prog_attach(prog, net.mx1, XDP_PROG_MODE_GENERIC), 0);
	assert_int_equal(query(net.mx0).drv_prog_id, xdp_prog_id(prog));
	assert_int_equal(query(net.mx1).skb_prog_id, xdp_prog_id(prog));
	xdp_prog_close(prog);
	assert_int_equal(query(net.mx0).prog_id, 0);
	assert_int_equal(query(net.mx1).prog_id, 0);
}

/*
 * A child process attaches a program and "crashes" (_exit without
 * detaching) when the pipe closes, or at once.  Returns its pid and the id
 * it attached.  legacy: attached by netlink (bpf_xdp_attach), as an mrocd
 * before the bpf_link did, so that it outlives the process; else as mrocd
 * does now (xdp_prog_attach: a bpf_link, gone with the process).
 */
static pid_t spawn_attacher(int ifindex, enum xdp_prog_mode mode, bool wait_for_eof, bool legacy,
			    int *ctl_fd, uint32_t *id)
{
	int up[2], down[2];
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct xdp_prog_opts opts = { .sz = sizeof(opts), .udp_port = PORT };
		struct xdp_prog *prog;
		uint32_t got = 0;
		char c;

		close(up[0]);
		close(down[1]);
		if (!xdp_prog_open(&prog, &opts) &&
		    !(legacy ? bpf_xdp_attach(ifindex, xdp_prog_fd(prog),
					      mode == XDP_PROG_MODE_GENERIC ? XDP_FLAGS_SKB_MODE :
					      XDP_FLAGS_DRV_MODE, NULL) :
			       xdp_prog_attach(prog, ifindex, mode)))
			got = xdp_prog_id(prog);
		if (write(up[1], &got, sizeof(got)) != sizeof(got))
			_exit(1);
		if (wait_for_eof)
			while (read(down[0], &c, 1) > 0)
				;
		_exit(0);	/* the crash: nothing detached, nothing closed */
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], id, sizeof(*id)), sizeof(*id));
	close(up[0]);
	assert_true(*id > 0);
	*ctl_fd = down[1];
	return pid;
}

static void reap(pid_t pid, int ctl_fd)
{
	int status;

	close(ctl_fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_stale_program(void **state)
{
	struct xdp_prog *prog;
	uint32_t old;
	int ctl, fd;
	pid_t pid;

	if (!net.veth)
		skip();
	for (int m = XDP_PROG_MODE_NATIVE; m <= XDP_PROG_MODE_GENERIC; m++) {
		pid = spawn_attacher(net.mx0, m, false, true, &ctl, &old);
		reap(pid, ctl);
		/* the dead process's program is still there */
		assert_int_equal(query(net.mx0).prog_id, old);
		prog = open_prog(0);
		assert_int_equal(xdp_prog_attach(prog, net.mx0, XDP_PROG_MODE_NATIVE), 0);
		assert_int_equal(query(net.mx0).drv_prog_id, xdp_prog_id(prog));
		assert_int_equal(query(net.mx0).skb_prog_id, 0);
		/* the stale program had no other reference: it is gone */
		fd = bpf_prog_get_fd_by_id(old);
		assert_true(fd < 0);
		xdp_prog_close(prog);
		assert_int_equal(query(net.mx0).prog_id, 0);
	}
}

/* mrocd's own attachment is a bpf_link: a crash leaves nothing on the interface. */
static void test_crash_leaves_nothing(void **state)
{
	uint32_t old;
	int ctl;
	pid_t pid;

	if (!net.veth)
		skip();
	for (int m = XDP_PROG_MODE_NATIVE; m <= XDP_PROG_MODE_GENERIC; m++) {
		pid = spawn_attacher(net.mx0, m, false, false, &ctl, &old);
		reap(pid, ctl);
		assert_int_equal(query(net.mx0).prog_id, 0);
	}
}

/* A mroc_xdp program of a process that is still alive is not stale. */
static void test_live_owner_refused(void **state)
{
	struct xdp_prog *prog;
	uint32_t other;
	int ctl;
	pid_t pid;

	if (!net.veth)
		skip();
	pid = spawn_attacher(net.mx0, XDP_PROG_MODE_NATIVE, true, false, &ctl, &other);
	prog = open_prog(0);
	assert_int_equal(xdp_prog_attach(prog, net.mx0, XDP_PROG_MODE_NATIVE), -EBUSY);
	assert_int_equal(xdp_prog_attach(prog, net.mx0, XDP_PROG_MODE_AUTO), -EBUSY);
	assert_int_equal(query(net.mx0).drv_prog_id, other);
	reap(pid, ctl);			/* now it crashed */
	assert_int_equal(xdp_prog_attach(prog, net.mx0, XDP_PROG_MODE_NATIVE), 0);
	assert_int_equal(query(net.mx0).drv_prog_id, xdp_prog_id(prog));
	xdp_prog_close(prog);
	assert_int_equal(query(net.mx0).prog_id, 0);
}

/* An XDP program that passes everything, under another name. */
static int load_foreign(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "foreign_pass", "GPL", insns,
			       ARRAY_SIZE(insns), NULL);

	assert_true(fd >= 0);
	return fd;
}

static void test_foreign_refused(void **state)
{
	struct xdp_prog *prog;
	uint32_t fid;
	int ffd;

	if (!net.veth)
		skip();
	ffd = load_foreign();
	prog = open_prog(0);
	for (int fm = XDP_PROG_MODE_NATIVE; fm <= XDP_PROG_MODE_GENERIC; fm++) {
		uint32_t flag = fm == XDP_PROG_MODE_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;

		assert_int_equal(bpf_xdp_attach(net.mx0, ffd, flag, NULL), 0);
		fid = query(net.mx0).prog_id;
		for (int m = XDP_PROG_MODE_AUTO; m <= XDP_PROG_MODE_GENERIC; m++)
			assert_int_equal(xdp_prog_attach(prog, net.mx0, m), -EBUSY);
		assert_int_equal(query(net.mx0).prog_id, fid);
		assert_int_equal(xdp_prog_attach_mode(prog, net.mx0), -ENOENT);
		/* the foreign one is alone in its process-less state too: still refused */
		assert_int_equal(bpf_xdp_detach(net.mx0, flag, NULL), 0);
	}

	/* ours is a bpf_link: netlink cannot replace or remove it behind our back */
	assert_int_equal(xdp_prog_attach(prog, net.mx0, XDP_PROG_MODE_NATIVE), 0);
	assert_int_equal(bpf_xdp_attach(net.mx0, ffd, XDP_FLAGS_DRV_MODE, NULL), -EBUSY);
	assert_int_equal(bpf_xdp_detach(net.mx0, XDP_FLAGS_DRV_MODE, NULL), -EBUSY);
	assert_int_equal(query(net.mx0).drv_prog_id, xdp_prog_id(prog));
	assert_int_equal(xdp_prog_detach(prog, net.mx0), 0);
	assert_int_equal(query(net.mx0).drv_prog_id, 0);
	xdp_prog_close(prog);
	close(ffd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_detach),
		cmocka_unit_test(test_stale_program),
		cmocka_unit_test(test_crash_leaves_nothing),
		cmocka_unit_test(test_live_owner_refused),
		cmocka_unit_test(test_foreign_refused),
	};
	int err = xdp_fix_start("test_xdp_prog_attach");

	if (err)
		return err;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
