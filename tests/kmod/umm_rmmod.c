// SPDX-License-Identifier: GPL-2.0
/*
 * Description: unloading umm.ko. While any client holds /dev/umm (idle, in
 * a blocking read, or with an io_uring read pending) removing the module is
 * refused (EWOULDBLOCK/EBUSY/EAGAIN), by the syscall and by busybox rmmod,
 * and the client keeps working; if a module ever allows it, the client must
 * be woken with a SHUTDOWN record and POLLHUP instead. With no client the
 * module unloads (its device and sysfs tree go away) and loads again,
 * several times, and honours its dev_mode parameter (with 0666 an
 * unprivileged client works but still reaches no knob and no other
 * client's data). Runs last: it unloads
 * the module. The kernel log of this section must stay clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define UMM_KO "/lib/um/umm.ko"

static int rmmod_umm(void)
{
	return syscall(SYS_delete_module, "umm", O_NONBLOCK) ? -errno : 0;
}

static int insmod_umm(const char *params)
{
	int fd = open(UMM_KO, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int loaded(void)
{
	return access(UMM_SYSFS, F_OK) == 0;
}

/* As the header says: EAGAIN (EWOULDBLOCK) with O_NONBLOCK, not EBUSY. */
static int refused(int err)
{
	return err == -EAGAIN;
}

/*
 * Try to remove the module while @fd is a client. Refused: fine, and the
 * client must still get events. Allowed: the client must have been told
 * (SHUTDOWN, then end of file and POLLHUP); reload for the next test.
 */
static void rmmod_with_client(struct __test_metadata *_metadata, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct umm_event ev;
	int ret = rmmod_umm();

	if (ret == 0) {
		TH_LOG("module unloaded under a client: checking it was told");
		ASSERT_EQ(1, umm_wait_type(fd, UMM_EVENT_SHUTDOWN, &ev, 5000));
		EXPECT_EQ(0, read(fd, &ev, sizeof(ev)));
		EXPECT_EQ(1, poll(&p, 1, 0));
		EXPECT_TRUE(p.revents & POLLHUP);
		ASSERT_EQ(0, insmod_umm(""));
		return;
	}
	EXPECT_TRUE(refused(ret)) TH_LOG("delete_module: %s", strerror(-ret));
	EXPECT_TRUE(loaded());
	ASSERT_EQ(0, attr_write("enabled", "0"));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	EXPECT_EQ(1, umm_wait_type(fd, UMM_EVENT_DISABLED, &ev, 5000))
		TH_LOG("the client must keep working");
}

TEST(refused_while_client_open)
{
	int fd = umm_client("holder", 0, 0, 0);

	ASSERT_LE(0, fd);
	rmmod_with_client(_metadata, fd);
	close(fd);
}

TEST(refused_while_open_before_handshake)
{
	int fd = umm_open(0);

	ASSERT_LE(0, fd);
	EXPECT_TRUE(refused(rmmod_umm()));
	EXPECT_EQ(0, umm_handshake(fd, "late", 0, 0, NULL));
	close(fd);
}

/*
 * Without O_NONBLOCK delete_module(2) does not wait for the last client
 * (the kernel dropped that wait long ago): EAGAIN at once, as with it.
 */
TEST(refused_at_once_without_nonblock)
{
	int fd = umm_client("holder", 0, 0, 0), ret;

	ASSERT_LE(0, fd);
	ret = syscall(SYS_delete_module, "umm", 0) ? -errno : 0;
	EXPECT_TRUE(refused(ret)) TH_LOG("delete_module: %s", strerror(-ret));
	close(fd);
	if (!ret)
		ASSERT_EQ(0, insmod_umm(""));
}

/* An open debugfs file (umctl clients reading it) holds the module too. */
TEST(refused_while_debugfs_clients_open)
{
	int fd = open(UMM_DEBUGFS "/clients", O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		SKIP(return, "no debugfs clients file: %s", strerror(errno));
	ret = rmmod_umm();
	EXPECT_TRUE(refused(ret)) TH_LOG("delete_module: %s", strerror(-ret));
	close(fd);
	if (!ret)
		ASSERT_EQ(0, insmod_umm(""));
}

struct reader {
	int fd;
	ssize_t ret;
	struct umm_event ev;
};

static void *blocked_read(void *arg)
{
	struct reader *r = arg;

	r->ret = read(r->fd, &r->ev, sizeof(r->ev));
	return NULL;
}

TEST(refused_while_reader_blocked)
{
	struct reader r = { .fd = umm_client("reader", 0, 0, 0) };
	pthread_t t;
	int ret;

	ASSERT_LE(0, r.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_read, &r));
	usleep(200 * 1000);
	ret = rmmod_umm();
	if (ret == 0) {		/* allowed: the reader must see SHUTDOWN */
		pthread_join(t, NULL);
		EXPECT_EQ(sizeof(r.ev), r.ret);
		EXPECT_EQ(UMM_EVENT_SHUTDOWN, r.ev.type);
		ASSERT_EQ(0, insmod_umm(""));
	} else {
		EXPECT_TRUE(refused(ret)) TH_LOG("%s", strerror(-ret));
		ASSERT_EQ(0, attr_write("enabled", "0"));
		pthread_join(t, NULL);
		EXPECT_EQ(sizeof(r.ev), r.ret);
		EXPECT_EQ(UMM_EVENT_DISABLED, r.ev.type);
		attr_write("enabled", "1");
	}
	close(r.fd);
}

TEST(refused_while_io_uring_read_pending)
{
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct umm_event ev;
	int fd = umm_client("uring", 0, 0, 0), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	ASSERT_NONNULL(sqe);
	io_uring_prep_read(sqe, fd, &ev, sizeof(ev), -1);
	ASSERT_EQ(1, io_uring_submit(&ring));
	close(fd);	/* the pending request still holds the file */
	ret = rmmod_umm();
	if (ret == 0) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		EXPECT_TRUE(cqe->res == 0 || (cqe->res == sizeof(ev) &&
			    ev.type == UMM_EVENT_SHUTDOWN));
		io_uring_cqe_seen(&ring, cqe);
		ASSERT_EQ(0, insmod_umm(""));
	} else {
		EXPECT_TRUE(refused(ret)) TH_LOG("%s", strerror(-ret));
		ASSERT_EQ(0, attr_write("enabled", "0"));
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		EXPECT_EQ(sizeof(ev), cqe->res);
		EXPECT_EQ(UMM_EVENT_DISABLED, ev.type);
		io_uring_cqe_seen(&ring, cqe);
		attr_write("enabled", "1");
	}
	io_uring_queue_exit(&ring);
}

TEST(busybox_rmmod_refused_while_client_open)
{
	int fd = umm_client("holder", 0, 0, 0), status;
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);	/* "rmmod: can't unload module" */
		execlp("rmmod", "rmmod", "umm", (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_NE(127, WEXITSTATUS(status)) TH_LOG("no rmmod in the VM");
	if (WEXITSTATUS(status) == 0) {
		EXPECT_FALSE(loaded()) TH_LOG("rmmod said yes, module is there");
		close(fd);
		ASSERT_EQ(0, insmod_umm(""));
		return;
	}
	EXPECT_TRUE(loaded());
	EXPECT_LE(0, umm_query(fd, NULL, 0, NULL));
	close(fd);
}

/* As uid 65534 with /dev/umm 0666: its own client works; the knobs, the
 * inject file and the other clients' table stay out of reach. */
static int nobody_with_open_device(void *arg)
{
	char buf[256];
	int fd;

	(void)arg;
	fd = umm_client("nobody", 0, 0, 0);
	if (fd < 0)
		return fd > -100 ? 100 - fd : 30;	/* 100 + errno */
	if (umm_query(fd, NULL, 0, NULL) < 2)
		return 31;
	if (attr_write("enabled", "0") != -EACCES)
		return 32;
	if (umm_inject("oom") != -EACCES)
		return 33;
	if (attr_read(UMM_DEBUGFS "/clients", buf, sizeof(buf)) >= 0)
		return 34;
	close(fd);
	return 0;
}

/* Write every per-node and per-GPU knob, over and over, until killed. */
static void knob_writer(void)
{
	char p[64];

	for (;;) {
		for (int g = 0; g < UMM_MAX_GPUS; g++) {
			snprintf(p, sizeof(p), "gpus/gpu%d/budget_bytes", g);
			attr_write(p, "1048576");
			attr_write(p, "0");
		}
		for (int n = 0; n < 2; n++) {
			snprintf(p, sizeof(p), "nodes/node%d/low_bp", n);
			attr_write(p, "2000");
		}
		attr_write("inject", "gpu 3 clear");
	}
}

/*
 * Unload while knobs are being written: the files go first, so no write
 * can reach the node and GPU state freed after them (a write that did would
 * read freed memory; the rig's dmesg judge fails on any oops or warning).
 */
TEST(unload_while_knobs_written)
{
	pid_t w[2];
	int status;

	for (int i = 0; i < 2; i++) {
		w[i] = fork();
		ASSERT_LE(0, w[i]);
		if (w[i] == 0) {
			knob_writer();
			_exit(0);
		}
	}
	for (int round = 0; round < 20; round++) {
		ASSERT_EQ(0, rmmod_umm()) TH_LOG("round %d", round);
		ASSERT_EQ(0, insmod_umm("")) TH_LOG("round %d", round);
		usleep(20000);
	}
	for (int i = 0; i < 2; i++) {
		kill(w[i], SIGKILL);
		waitpid(w[i], &status, 0);
	}
	EXPECT_TRUE(loaded());
	EXPECT_EQ(0, attr_read_u64("gpus/gpu0/budget_bytes",
				   &(uint64_t){ 0 }));
}

TEST(unload_and_reload_when_idle)
{
	struct stat st;
	int fd;

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, rmmod_umm()) TH_LOG("round %d", i);
		EXPECT_FALSE(loaded());
		EXPECT_NE(0, access(UMM_DEVICE_PATH, F_OK));
		EXPECT_NE(0, access(UMM_DEBUGFS, F_OK));
		ASSERT_EQ(0, insmod_umm(""));
		ASSERT_TRUE(loaded());
		fd = umm_client("reloaded", 0, 0, 0);
		ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
		close(fd);
	}
	/* a module parameter: the device's mode */
	ASSERT_EQ(0, rmmod_umm());
	ASSERT_EQ(0, insmod_umm("dev_mode=0600"));
	ASSERT_EQ(0, stat(UMM_DEVICE_PATH, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
	ASSERT_EQ(0, rmmod_umm());
	ASSERT_EQ(0, insmod_umm("dev_mode=0666"));
	ASSERT_EQ(0, stat(UMM_DEVICE_PATH, &st));
	EXPECT_EQ(0666, st.st_mode & 07777);
	fd = umm_client("root-too", 0, 0, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, run_as_nobody(nobody_with_open_device, NULL))
		TH_LOG("30s: what it could do; 100 + errno: open failed");
	close(fd);
	ASSERT_EQ(0, rmmod_umm());
	EXPECT_EQ(-EINVAL, insmod_umm("dev_mode=01777"))
		TH_LOG("not a permission mode");
	EXPECT_FALSE(loaded());
	ASSERT_EQ(0, insmod_umm(""));
	ASSERT_EQ(0, stat(UMM_DEVICE_PATH, &st));
	EXPECT_EQ(0660, st.st_mode & 07777);
}

TEST_HARNESS_MAIN
