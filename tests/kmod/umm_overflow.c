// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a client's ring overflows. With a small queue_len, more
 * records than fit are raised: the client gets what fitted, then an OVERFLOW
 * record whose count is exactly what was dropped, with the drop visible in
 * the sequence numbers (the OVERFLOW record carries the seq of the last
 * record dropped, so records seq - lost + 1 .. seq are the lost ones, and
 * every other record is its predecessor + 1); nothing is lost silently, the
 * module's
 * counters agree, and the ring works normally once drained. queue_len only
 * applies to files opened after it changed.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define SMALL_QUEUE	4

FIXTURE(small) {
	uint64_t old_qlen;
	int fd;
};

FIXTURE_SETUP(small)
{
	struct umm_api api;

	self->fd = -1;
	ASSERT_EQ(0, attr_read_u64("queue_len", &self->old_qlen));
	ASSERT_EQ(0, attr_write_u64("queue_len", SMALL_QUEUE));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	self->fd = umm_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, umm_handshake(self->fd, "overflow", 0, 0, &api));
	ASSERT_EQ(SMALL_QUEUE, api.queue_len);
}

FIXTURE_TEARDOWN(small)
{
	attr_write("enabled", "1");
	attr_write_u64("queue_len", self->old_qlen);
	if (self->fd >= 0)
		close(self->fd);
}

/* Raise @n records in every client (alternating DISABLED/ENABLED). */
static int raise_records(int n)
{
	for (int i = 0; i < n; i++) {
		int ret = attr_write("enabled", (i & 1) ? "1" : "0");

		if (ret)
			return ret;
	}
	return 0;
}

struct tally {
	int records;		/* non-OVERFLOW records read */
	int overflows;		/* OVERFLOW records read */
	uint64_t lost;		/* sum of their counts */
	uint64_t last_seq;	/* seq of the record read before */
	int bad_seq;		/* records whose seq does not follow */
};

static void tally_all(int fd, struct tally *t)
{
	struct umm_event ev;

	while (umm_next_event(fd, &ev, 0) == 1) {
		uint64_t want = t->last_seq +
			(ev.type == UMM_EVENT_OVERFLOW ? ev.lost : 1);

		if (ev.seq != want) {
			t->bad_seq++;
			TH_LOG("%s seq %llu after %llu (lost %llu)",
			       umm_event_name(ev.type),
			       (unsigned long long)ev.seq,
			       (unsigned long long)t->last_seq,
			       (unsigned long long)ev.lost);
		}
		t->last_seq = ev.seq;
		if (ev.type == UMM_EVENT_OVERFLOW) {
			t->overflows++;
			t->lost += ev.lost;
		} else {
			t->records++;
		}
	}
}

TEST_F(small, overflow_counts_every_lost_record)
{
	uint64_t drops0, drops1, ovf0, ovf1;
	struct tally t = { 0 };
	const int n = 20;

	ASSERT_EQ(0, attr_read_u64("events_dropped", &drops0));
	ASSERT_EQ(0, attr_read_u64("overflows", &ovf0));
	ASSERT_EQ(0, raise_records(n));
	tally_all(self->fd, &t);
	EXPECT_EQ(0, t.bad_seq);
	EXPECT_LE(1, t.overflows);
	EXPECT_GE(SMALL_QUEUE, t.records);
	EXPECT_LE(1, t.records);
	EXPECT_EQ((uint64_t)n, t.records + t.lost)
		TH_LOG("%d read + %llu lost != %d raised", t.records,
		       (unsigned long long)t.lost, n);
	EXPECT_EQ((uint64_t)n, t.last_seq) TH_LOG("a fresh client's seq");
	ASSERT_EQ(0, attr_read_u64("events_dropped", &drops1));
	ASSERT_EQ(0, attr_read_u64("overflows", &ovf1));
	EXPECT_EQ(t.lost, drops1 - drops0);
	EXPECT_EQ((uint64_t)t.overflows, ovf1 - ovf0);
}

TEST_F(small, exactly_full_is_no_overflow)
{
	struct tally t = { 0 };

	ASSERT_EQ(0, raise_records(SMALL_QUEUE));
	tally_all(self->fd, &t);
	EXPECT_EQ(SMALL_QUEUE, t.records);
	EXPECT_EQ(0, t.overflows);
	EXPECT_EQ(0, t.bad_seq);
}

TEST_F(small, ring_recovers_after_overflow)
{
	struct tally t = { 0 };
	struct umm_event ev;

	ASSERT_EQ(0, raise_records(3 * SMALL_QUEUE));
	tally_all(self->fd, &t);
	ASSERT_LE(1, t.overflows);
	/* a second round: the same accounting, seq continues */
	ASSERT_EQ(0, raise_records(2));
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 10000));
	EXPECT_EQ(t.last_seq + 1, ev.seq);
	EXPECT_EQ(UMM_EVENT_DISABLED, ev.type);
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 10000));
	EXPECT_EQ(t.last_seq + 2, ev.seq);
	EXPECT_EQ(UMM_EVENT_ENABLED, ev.type);
	EXPECT_EQ(0, umm_drain(self->fd));
}

TEST_F(small, overflow_after_partial_read)
{
	struct tally t = { 0 };
	struct umm_event ev;
	uint64_t first;
	int n = 0;

	/* fill, read one (room for one more), overflow again */
	ASSERT_EQ(0, raise_records(SMALL_QUEUE));
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 0));
	first = ev.seq;
	ASSERT_EQ(0, raise_records(SMALL_QUEUE));	/* 1 fits, 3 drop */
	t.last_seq = first;
	tally_all(self->fd, &t);
	n = t.records + 1;
	EXPECT_EQ(2 * SMALL_QUEUE, n + (int)t.lost);
	EXPECT_EQ(1, t.overflows);
	EXPECT_EQ(SMALL_QUEUE - 1, t.lost);
	EXPECT_EQ(0, t.bad_seq);
}

TEST(queue_len_applies_to_new_files_only)
{
	struct umm_api a1, a2;
	uint64_t old;
	int fd1, fd2;

	ASSERT_EQ(0, attr_read_u64("queue_len", &old));
	fd1 = umm_open(0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, attr_write_u64("queue_len", old + 7));
	ASSERT_EQ(0, umm_handshake(fd1, "old", 0, 0, &a1));
	fd2 = umm_client("new", 0, 0, 0);
	ASSERT_LE(0, fd2);
	close(fd2);
	fd2 = umm_open(0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, umm_handshake(fd2, "new", 0, 0, &a2));
	EXPECT_EQ(old, a1.queue_len) TH_LOG("taken when the file was opened");
	EXPECT_EQ(old + 7, a2.queue_len);
	EXPECT_EQ(0, attr_write_u64("queue_len", old));
	close(fd1);
	close(fd2);
}

TEST_HARNESS_MAIN
