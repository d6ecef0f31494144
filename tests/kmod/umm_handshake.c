// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the /dev/umm handshake (UMM_IOC_API). Bad sizes, versions,
 * flags, names and unknown feature bits are refused (and refusing consumes
 * nothing: a good handshake still works after); nothing but the handshake
 * works before it; a second handshake is refused; the reply describes the
 * module (event size, queue length, GPU and node limits, ioctls).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

static struct umm_api good_api(void)
{
	struct umm_api a = {
		.size = sizeof(a),
		.api = UMM_API_VERSION,
		.name = "handshake",
	};

	return a;
}

static int api_ioctl(int fd, struct umm_api *a)
{
	return ioctl(fd, UMM_IOC_API, a) < 0 ? -errno : 0;
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = umm_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", UMM_DEVICE_PATH,
				      strerror(-self->fd));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(dev, good_handshake_describes_module)
{
	struct umm_api a = good_api();

	a.features = UMM_API_FEATURES;
	ASSERT_EQ(0, api_ioctl(self->fd, &a));
	EXPECT_EQ(UMM_EVENT_SIZE, a.event_size);
	EXPECT_EQ(sizeof(struct umm_event), a.event_size);
	EXPECT_LT(0, a.queue_len);
	EXPECT_EQ(UMM_MAX_GPUS, a.max_gpus);
	EXPECT_LE(2, a.nr_node_ids) TH_LOG("the VM has two NUMA nodes");
	EXPECT_EQ(UMM_API_FEATURES, a.features & UMM_API_FEATURES);
	EXPECT_EQ(0, a.features & ~UMM_API_FEATURES)
		TH_LOG("module advertises features this header lacks");
	EXPECT_TRUE(a.ioctls & (1ULL << _IOC_NR(UMM_IOC_REPORT)));
	EXPECT_TRUE(a.ioctls & (1ULL << _IOC_NR(UMM_IOC_ACK)));
	EXPECT_TRUE(a.ioctls & (1ULL << _IOC_NR(UMM_IOC_QUERY)));
	EXPECT_EQ(UMM_API_VERSION, a.api);
}

TEST_F(dev, queue_len_follows_knob)
{
	struct umm_api a = good_api();
	uint64_t ql;

	ASSERT_EQ(0, attr_read_u64("queue_len", &ql));
	ASSERT_EQ(0, api_ioctl(self->fd, &a));
	EXPECT_EQ(ql, a.queue_len);
}

TEST_F(dev, bad_sizes_refused)
{
	static const uint32_t sizes[] = {
		0, 4, sizeof(struct umm_api) - 8, sizeof(struct umm_api) - 1,
		sizeof(struct umm_api) + 1, sizeof(struct umm_api) + 8,
		UINT32_MAX,
	};
	struct umm_api a;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		a = good_api();
		a.size = sizes[i];
		EXPECT_EQ(-EINVAL, api_ioctl(self->fd, &a))
			TH_LOG("size %u", sizes[i]);
	}
	a = good_api();
	EXPECT_EQ(0, api_ioctl(self->fd, &a))
		TH_LOG("refusals must not consume the handshake");
}

TEST_F(dev, bad_versions_refused)
{
	static const uint32_t vers[] = {
		0, UMM_API_VERSION + 1, UMM_API_VERSION + 100, UINT32_MAX,
	};
	struct umm_api a;

	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		a = good_api();
		a.api = vers[i];
		EXPECT_EQ(-EPROTO, api_ioctl(self->fd, &a))
			TH_LOG("api %u", vers[i]);
	}
	a = good_api();
	EXPECT_EQ(0, api_ioctl(self->fd, &a));
}

TEST_F(dev, unknown_features_refused)
{
	static const uint64_t bad[] = {
		1ULL << 63, UMM_API_FEATURES + 1, (UMM_API_FEATURES << 1) &
		~UMM_API_FEATURES, ~0ULL, UMM_FEATURE_RELIEF | (1ULL << 40),
	};
	struct umm_api a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = good_api();
		a.features = bad[i];
		EXPECT_EQ(-EINVAL, api_ioctl(self->fd, &a))
			TH_LOG("features 0x%llx", (unsigned long long)bad[i]);
	}
	a = good_api();
	a.features = UMM_FEATURE_RELIEF;
	EXPECT_EQ(0, api_ioctl(self->fd, &a));
}

TEST_F(dev, nonzero_flags_refused)
{
	struct umm_api a = good_api();

	a.flags = 1;
	EXPECT_EQ(-EINVAL, api_ioctl(self->fd, &a));
	a.flags = 0x80000000u;
	EXPECT_EQ(-EINVAL, api_ioctl(self->fd, &a));
	a = good_api();
	EXPECT_EQ(0, api_ioctl(self->fd, &a));
}

/* Each name on a fresh file, so that one wrongly accepted name does not
 * turn the following cases into -EBUSY. */
static int try_name(const char *name, size_t len)
{
	struct umm_api a = good_api();
	int fd = umm_open(0), ret;

	if (fd < 0)
		return fd;
	memset(a.name, 0, sizeof(a.name));
	memcpy(a.name, name, len);
	ret = api_ioctl(fd, &a);
	close(fd);
	return ret;
}

TEST(bad_names_refused)
{
	char longest[UMM_NAME_LEN], unterminated[UMM_NAME_LEN];

	memset(longest, 'y', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	memset(unterminated, 'x', sizeof(unterminated));

	EXPECT_EQ(-EINVAL, try_name("", 0)) TH_LOG("empty name");
	EXPECT_EQ(-EINVAL, try_name(unterminated, sizeof(unterminated)))
		TH_LOG("no NUL within UMM_NAME_LEN");
	EXPECT_EQ(-EINVAL, try_name("bad\nname", 8)) TH_LOG("control char");
	EXPECT_EQ(-EINVAL, try_name("tab\there", 8)) TH_LOG("tab");
	EXPECT_EQ(-EINVAL, try_name("del\x7f", 4)) TH_LOG("DEL");
	EXPECT_EQ(-EINVAL, try_name("bad\x80", 4)) TH_LOG("non-ASCII 0x80");
	EXPECT_EQ(-EINVAL, try_name("caf\xe9", 4))
		TH_LOG("non-ASCII 0xe9 (Latin-1 printable, not ASCII)");
	EXPECT_EQ(0, try_name(longest, sizeof(longest)));
	EXPECT_EQ(0, try_name("a b-c_d.e/f:1", 13)) TH_LOG("printable ASCII");
}

TEST_F(dev, any_priority_accepted)
{
	struct umm_api a = good_api();
	int fd2;

	a.priority = INT_MIN;
	EXPECT_EQ(0, api_ioctl(self->fd, &a));
	fd2 = umm_open(0);
	ASSERT_LE(0, fd2);
	a = good_api();
	a.priority = INT_MAX;
	EXPECT_EQ(0, api_ioctl(fd2, &a));
	close(fd2);
}

TEST_F(dev, bad_pointer_faults)
{
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_API, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_API, NULL));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(dev, nothing_works_before_handshake)
{
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_HOST_NODE, .resident_bytes = 4096,
	};
	struct umm_report r = {
		.size = sizeof(r), .count = 1, .tiers = (uintptr_t)&t,
	};
	struct umm_ack ack = { .size = sizeof(ack), .seq = 1 };
	struct umm_query q = { .size = sizeof(q) };
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	struct umm_event ev;

	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_REPORT, &r));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_ACK, &ack));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_QUERY, &q));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_TRUE(p.revents & POLLERR);
	EXPECT_FALSE(p.revents & POLLIN);
	/* and the handshake still works after all that */
	EXPECT_EQ(0, umm_handshake(self->fd, "late", 0, 0, NULL));
	EXPECT_EQ(0, umm_query(self->fd, NULL, 0, NULL) < 0);
}

TEST_F(dev, second_handshake_refused)
{
	struct umm_api a = good_api();

	ASSERT_EQ(0, api_ioctl(self->fd, &a));
	a = good_api();
	EXPECT_EQ(-EBUSY, api_ioctl(self->fd, &a));
	a = good_api();
	a.api = 0;	/* busy wins over anything else wrong */
	EXPECT_NE(0, api_ioctl(self->fd, &a));
	/* the first handshake is still in force */
	EXPECT_LE(0, umm_query(self->fd, NULL, 0, NULL));
}

TEST_F(dev, unknown_ioctls_refused)
{
	char buf[256] = { 0 };

	ASSERT_EQ(0, umm_handshake(self->fd, "ioctls", 0, 0, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(UMM_IOC_MAGIC, 0x3f, buf), buf));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR('x', 0x00, struct umm_api), buf));
	EXPECT_EQ(ENOTTY, errno);
	/* the API number with a different argument size is not the API */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(UMM_IOC_MAGIC, 0x00, char[8]),
			    buf));
	EXPECT_TRUE(errno == ENOTTY || errno == EINVAL) TH_LOG("%d", errno);
}

TEST(two_opens_are_two_clients)
{
	int a = umm_client("one", 0, 0, 0);
	int b = umm_client("two", 0, 0, 0);
	uint64_t before, after;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, attr_read_u64("clients", &before));
	EXPECT_LE(2, before);
	close(b);
	ASSERT_EQ(0, attr_read_u64("clients", &after));
	EXPECT_EQ(before - 1, after);
	close(a);
}

TEST_HARNESS_MAIN
