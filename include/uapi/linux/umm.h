/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * umm.h - ABI of umm.ko, the kernel side of the um unified memory manager.
 *
 * /dev/umm is a misc device. One open() is one client. The first ioctl on a
 * file must be UMM_IOC_API (the handshake, modelled on userfaultfd's
 * UFFDIO_API); every other ioctl and read() fail with -EBADFD before it.
 *
 * After the handshake the client:
 *  - read()s fixed 64-byte struct umm_event records (whole records only),
 *    poll()s for readiness, or reads with io_uring (IOCB_NOWAIT honoured);
 *  - tells the module, per tier, what it holds and what it could give back
 *    (UMM_IOC_REPORT);
 *  - acknowledges what it freed after an event asked it to (UMM_IOC_ACK);
 *  - asks for the current level of every node and GPU (UMM_IOC_QUERY).
 *
 * read(): returns as many whole records as fit in the buffer (at least
 * one). A buffer shorter than 64 bytes: -EINVAL. Nothing queued: blocks
 * (interruptibly), or -EAGAIN with O_NONBLOCK or IOCB_NOWAIT (io_uring then
 * waits for poll instead of using a worker thread). Before the handshake:
 * -EBADFD.
 * poll(): EPOLLIN | EPOLLRDNORM when a record is queued; EPOLLERR before the
 * handshake.
 * open(): -ENOBUFS when the event rings of the opener's user's clients
 * (by real uid) together would pass /sys/kernel/mm/umm/ring_bytes_max; a
 * ring is charged to the opener's memory cgroup.
 * An open file holds a reference on the module: rmmod fails while any
 * client exists, with EAGAIN (EWOULDBLOCK, "Resource temporarily
 * unavailable") at once, with or without O_NONBLOCK (the kernel no longer
 * waits for the last reference). An open debugfs file of the module
 * (umm/clients while umctl clients reads it) holds a reference too.
 *
 * Conventions: only fixed-width types; every enum reserves 0; every ioctl
 * argument begins with its own size, callers set it to sizeof the struct as
 * they know it; fields are marked (in) for caller-filled and (out) for
 * module-filled; reserved fields and flag bits not defined here must be 0
 * (else -EINVAL). Units are in the field names (_bytes, _ns, _ms).
 *
 * Extensible structs: an ioctl is matched by its type, number and
 * direction, not by the size encoded in it, so a struct may grow at its end
 * in a later version of this header. The size encoded in the ioctl and the
 * struct's @size must be equal (else -EINVAL), and at least the size this
 * module knows (else -EINVAL). Bytes beyond what the module knows must be
 * zero: then the call acts as with the struct the module knows, and (out)
 * fields are written only there; a non-zero byte beyond is -E2BIG (the
 * caller asked for something this module cannot do). This is the rule of
 * openat2(2) and clone3(2) (copy_struct_from_user()).
 *
 * Byte counts that clients report are at most UMM_TIER_BYTES_MAX each
 * (else -EINVAL); the sums the module shows saturate at 2^64 - 1 instead
 * of wrapping, so no client can make another's usage disappear.
 *
 * Compatibility: this header only grows. New fields go at the end of a
 * struct (see above) or into new ioctls; UMM_API_VERSION changes only if an
 * existing meaning changes.
 */
#ifndef _UAPI_LINUX_UMM_H
#define _UAPI_LINUX_UMM_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define UMM_API_VERSION		1
#define UMM_DEVICE_PATH		"/dev/umm"

#define UMM_NAME_LEN		32	/* client name, including the NUL */
#define UMM_MAX_GPUS		16	/* GPU ids 0 .. UMM_MAX_GPUS - 1 */
#define UMM_REPORT_MAX		256	/* entries in one UMM_IOC_REPORT */
#define UMM_EVENT_SIZE		64	/* sizeof(struct umm_event), fixed */
#define UMM_TIER_BYTES_MAX	(1ULL << 50)	/* a reported count, 1 PiB */

#define UMM_NODE_NONE		(-1)		/* no destination node */
#define UMM_ETA_UNKNOWN		0xffffffffU	/* not declining */

/*
 * enum umm_tier_type - kind of place a client's bytes can live.
 * @UMM_TIER_NONE:	reserved; in events: the event is not about one tier
 *			(OOM, OVERFLOW, SHUTDOWN, ENABLED, DISABLED).
 * @UMM_TIER_HOST_NODE:	host memory on NUMA node <tier id>.
 * @UMM_TIER_GPU:	device memory of GPU <tier id> (0 .. UMM_MAX_GPUS - 1),
 *			as numbered by the clients themselves.
 * @UMM_TIER_CGROUP:	the memory of a cgroup v2 memory cgroup, against the
 *			lowest memory.max or memory.high on its path to the
 *			root. <tier id> is the low 32 bits of its id (the
 *			kernel's cgroup_id(): on 64-bit kernels the inode
 *			number of its directory in cgroupfs, as stat(2) or
 *			name_to_handle_at(2) give it, below 2^32 until 2^31
 *			kernfs nodes were made); UMM_IOC_QUERY gives the high
 *			32 bits. Only in events and QUERY, and only to
 *			clients that asked for UMM_FEATURE_CGROUP; REPORT
 *			refuses it (what a client holds in its cgroup is
 *			what it reports on host nodes).
 */
enum umm_tier_type {
	UMM_TIER_NONE		= 0,
	UMM_TIER_HOST_NODE	= 1,
	UMM_TIER_GPU		= 2,
	UMM_TIER_CGROUP		= 3,
};

/*
 * enum umm_level - how close a source is to running out. Ordered: a larger
 * value is worse, so levels compare with < and >.
 * @UMM_LEVEL_INVALID:	reserved, never reported.
 * @UMM_LEVEL_NORMAL:	above the low watermark (or within budget).
 * @UMM_LEVEL_LOW:	free memory below the low watermark (for a cgroup:
 *			the room left under its limit below the low
 *			threshold, and so on).
 * @UMM_LEVEL_MEDIUM:	below the medium watermark.
 * @UMM_LEVEL_CRITICAL:	below the critical watermark (or over budget for a
 *			GPU: GPUs only use NORMAL and CRITICAL, plus the
 *			levels raised by the inject file).
 */
enum umm_level {
	UMM_LEVEL_INVALID	= 0,
	UMM_LEVEL_NORMAL	= 1,
	UMM_LEVEL_LOW		= 2,
	UMM_LEVEL_MEDIUM	= 3,
	UMM_LEVEL_CRITICAL	= 4,
};

/*
 * enum umm_event_type - what a struct umm_event says.
 * @UMM_EVENT_INVALID:	 reserved, never sent.
 * @UMM_EVENT_PRESSURE:	 a host node's level rose. tier = the node; level =
 *			 the new level; bytes_to_free = this client's share of
 *			 what would bring the node back above its low
 *			 watermark plus the hysteresis (asked of the clients
 *			 holding bytes there, lowest priority first: first
 *			 what they declared reclaimable, then the rest of what
 *			 they hold; 0 when the client is told only for
 *			 information, see UMM_FEATURE_ALL_PRESSURE). Sent on a
 *			 rise, and again every repeat_interval_ms while the
 *			 node stays at LOW or worse. bytes_free = available
 *			 bytes on the node; dest_node = the node with most headroom;
 *			 eta_ms = estimated ms until the critical level.
 *			 Or (UMM_FEATURE_CGROUP) a memory cgroup's level rose:
 *			 tier = the cgroup; sent only to clients in that
 *			 cgroup or below it; bytes_to_free = this client's
 *			 share of what would bring the cgroup's room back
 *			 above its low threshold plus the hysteresis (asked
 *			 as for a node, from what the clients there declared
 *			 on all host nodes together); bytes_free = room left
 *			 under the limit; dest_node = UMM_NODE_NONE (moving
 *			 between nodes frees nothing in a cgroup).
 * @UMM_EVENT_RELIEF:	 a source's level dropped (only with
 *			 UMM_FEATURE_RELIEF). tier, level (the new one),
 *			 bytes_free as for PRESSURE/GPU_BUDGET.
 * @UMM_EVENT_SHRINK:	 the kernel is reclaiming on a node that is short of
 *			 memory (the umm shrinker was called there, and the
 *			 node is below its zones' high watermarks; not for
 *			 drop_caches or memory.reclaim while it is not short).
 *			 tier = the node; bytes_to_free = this client's share
 *			 of how far the node is below those watermarks (at
 *			 least 1/16 of all that was declared reclaimable on
 *			 the node), at most what the client declared
 *			 reclaimable there. Only those clients get it.
 * @UMM_EVENT_OOM:	 an OOM, in one of two kinds:
 *			 tier NONE: a system-wide OOM (the kernel's OOM
 *			 notifier chain, which a memory cgroup's OOM does not
 *			 call); the OOM killer goes on at once, without
 *			 waiting for any client. level CRITICAL;
 *			 bytes_to_free = everything the client declared
 *			 reclaimable on host nodes, sent only to clients that
 *			 declared some: giving it back helps the allocations
 *			 after this one.
 *			 tier CGROUP (UMM_FEATURE_CGROUP): the OOM killer
 *			 killed a task in that watched cgroup or below it
 *			 (its memory.events oom_kill rose), whichever OOM
 *			 chose it: the cgroup's own limit, an ancestor's, or
 *			 a system-wide OOM. Told after the kill, at the next
 *			 sample, once however many kills came since the last
 *			 sample, to every client in the cgroup or below it
 *			 (a client in nested watched cgroups gets one per
 *			 watched cgroup). level, bytes_free, eta_ms as for
 *			 PRESSURE; bytes_to_free 0 (information).
 * @UMM_EVENT_GPU_BUDGET: the clients' resident bytes on a GPU exceed its
 *			 budget_bytes (or a level was injected). tier = the
 *			 GPU; bytes_to_free = this client's share of the
 *			 excess (asked as for PRESSURE, lowest priority
 *			 first); bytes_free = budget left (0 when over).
 * @UMM_EVENT_OVERFLOW:	 the client's ring was full; lost = number of records
 *			 dropped since the previous OVERFLOW (their seq
 *			 numbers were used: the gap is visible). It is queued
 *			 in a slot kept for it, after the last record that
 *			 fitted; seq is that of the last record dropped, so
 *			 records seq - lost + 1 .. seq are the lost ones.
 * @UMM_EVENT_SHUTDOWN:	 reserved for a module going away under its clients
 *			 (close the file). Never sent by API version 1: every
 *			 open file holds a module reference, so rmmod is
 *			 refused while a client exists and exit runs with none
 *			 left to tell.
 * @UMM_EVENT_ENABLED:	 the enabled knob went from 0 to 1.
 * @UMM_EVENT_DISABLED:	 the enabled knob went from 1 to 0: no more pressure
 *			 events until ENABLED; the client should fall back to
 *			 its own budgets.
 */
enum umm_event_type {
	UMM_EVENT_INVALID	= 0,
	UMM_EVENT_PRESSURE	= 1,
	UMM_EVENT_RELIEF	= 2,
	UMM_EVENT_SHRINK	= 3,
	UMM_EVENT_OOM		= 4,
	UMM_EVENT_GPU_BUDGET	= 5,
	UMM_EVENT_OVERFLOW	= 6,
	UMM_EVENT_SHUTDOWN	= 7,
	UMM_EVENT_ENABLED	= 8,
	UMM_EVENT_DISABLED	= 9,
};

/* struct umm_event.flags */
#define UMM_EVENT_F_ACK		_BITUL(0) /* asks to free: UMM_IOC_ACK it */
#define UMM_EVENT_F_INJECTED	_BITUL(1) /* caused by the inject file */

/**
 * struct umm_event - one record read from /dev/umm. All fields (out).
 * @type:	enum umm_event_type.
 * @size:	sizeof(struct umm_event) == UMM_EVENT_SIZE (64).
 * @flags:	UMM_EVENT_F_*.
 * @tier_type:	enum umm_tier_type of the source (NONE if not about one).
 * @seq:	per-client sequence number, starting at 1 and incrementing by 1
 *		for every record queued *or dropped*: a gap means loss (and an
 *		OVERFLOW record says how many).
 * @ts_ns:	CLOCK_MONOTONIC time the event was raised, in ns.
 * @tier_id:	node id or GPU id of the source (0 when tier_type is NONE);
 *		for a cgroup the low 32 bits of its id (see @tier_id_hi).
 * @level:	enum umm_level of the source now (CRITICAL for OOM).
 * @bytes_to_free: bytes this client is asked to give back (0: information
 *		only). UMM_EVENT_F_ACK is set exactly when it is non-zero.
 * @lost:	OVERFLOW only (shares storage with bytes_to_free): records
 *		dropped.
 * @bytes_free:	free bytes on the source now (node: available memory, what
 *		it could give without an OOM kill, page cache counted; GPU:
 *		budget left, 0 when over budget or no budget; cgroup: room
 *		left under its limit by its working set).
 * @dest_node:	a host node with headroom (most available bytes above its low
 *		watermark plus the hysteresis band) to move bytes to, or
 *		UMM_NODE_NONE (-1); always UMM_NODE_NONE for a cgroup.
 * @tier_id_hi:	for a cgroup (tier_type UMM_TIER_CGROUP), to a client
 *		that asked for UMM_FEATURE_CGROUP_ID64: the high 32 bits of
 *		its id (shares storage with @dest_node, which a cgroup event
 *		does not use). Without the feature that storage reads
 *		UMM_NODE_NONE, as for clients built before the feature.
 * @eta_ms:	estimated ms until the source reaches the critical level at
 *		the current rate of decline; 0 if it is critical already;
 *		UMM_ETA_UNKNOWN if it is not declining or not a node or
 *		cgroup.
 */
struct umm_event {
	__u32 type;
	__u32 size;
	__u32 flags;
	__u32 tier_type;
	__u64 seq;
	__u64 ts_ns;
	__u32 tier_id;
	__u32 level;
	union {
		__u64 bytes_to_free;
		__u64 lost;
	};
	__u64 bytes_free;
	union {
		__s32 dest_node;
		__u32 tier_id_hi;
	};
	__u32 eta_ms;
};

/*
 * Features for struct umm_api.features. Each is an optional event class a
 * client opts into; the other event types are always delivered.
 * UMM_FEATURE_RELIEF:	     deliver RELIEF events when a level drops.
 * UMM_FEATURE_ALL_PRESSURE: deliver PRESSURE and GPU_BUDGET events for
 *			     every source (bytes_to_free 0 when this client
 *			     is not asked for anything). Without it a client
 *			     only gets the PRESSURE/GPU_BUDGET events that ask
 *			     it to free bytes.
 * UMM_FEATURE_CGROUP:	     the client is tied to the memory cgroup (v2) of
 *			     the process that opened the file (not of whoever
 *			     holds the file later: a passed or inherited file
 *			     stays with its opener's cgroup; once the opener
 *			     exits, with the last one), and follows it when it
 *			     moves; it gets the PRESSURE and OOM (and,
 *			     with UMM_FEATURE_RELIEF, RELIEF) events of
 *			     UMM_TIER_CGROUP about that cgroup and QUERY lists
 *			     the watched cgroups. Granted always; the reply
 *			     of the handshake carries it only where the memory
 *			     controller is on the cgroup v2 hierarchy (with
 *			     no memory controller, or on cgroup v1, there are
 *			     no cgroup events).
 * UMM_FEATURE_CGROUP_ID64:  events about a cgroup carry the high 32 bits
 *			     of its id in struct umm_event.tier_id_hi (where
 *			     dest_node would be; tier_id has the low 32 bits
 *			     as before). Without it, that field reads
 *			     UMM_NODE_NONE.
 */
#define UMM_FEATURE_RELIEF		_BITULL(0)
#define UMM_FEATURE_ALL_PRESSURE	_BITULL(1)
#define UMM_FEATURE_CGROUP		_BITULL(2)
#define UMM_FEATURE_CGROUP_ID64		_BITULL(3)
#define UMM_API_FEATURES	(UMM_FEATURE_RELIEF | UMM_FEATURE_ALL_PRESSURE | \
				 UMM_FEATURE_CGROUP | UMM_FEATURE_CGROUP_ID64)

/**
 * struct umm_api - UMM_IOC_API, the handshake. Must be the first ioctl on a
 * file, and succeeds once per file.
 * @size:	(in) sizeof(struct umm_api).
 * @api:	(in) UMM_API_VERSION.
 * @features:	(in) UMM_FEATURE_* the client wants; (out) every feature this
 *		module supports (the client gets what it asked for;
 *		UMM_FEATURE_CGROUP is left out where it can do nothing).
 * @priority:	(in) client priority: lower values are asked to free first;
 *		0 is the usual value. Any s32.
 * @flags:	(in) reserved, must be 0.
 * @name:	(in) client name, NUL-terminated within UMM_NAME_LEN bytes,
 *		at least one character, printable ASCII.
 * @ioctls:	(out) bitmask: bit _IOC_NR(cmd) set for every ioctl available
 *		after the handshake.
 * @event_size:	(out) sizeof(struct umm_event), 64.
 * @queue_len:	(out) records the client's ring holds (the queue_len knob
 *		when the file was opened).
 * @max_gpus:	(out) UMM_MAX_GPUS.
 * @nr_node_ids: (out) node ids are < nr_node_ids.
 *
 * The answer is written before the handshake counts, and outside every
 * lock the module shares between clients: a caller whose answer cannot be
 * written gets -EFAULT and may try again, and one whose page is slow to
 * fault in delays no one else.
 * Errors: -EINVAL: bad size (see Extensible structs), a features bit is
 * unknown (none is granted then), flags not 0, bad name. -E2BIG: a non-zero
 * byte beyond the struct this module knows. -EPROTO: api is not
 * UMM_API_VERSION. -EBUSY: the handshake was done already on this file.
 * -EFAULT: bad pointer.
 */
struct umm_api {
	__u32 size;
	__u32 api;
	__u64 features;
	__s32 priority;
	__u32 flags;
	char name[UMM_NAME_LEN];
	__u64 ioctls;
	__u32 event_size;
	__u32 queue_len;
	__u32 max_gpus;
	__u32 nr_node_ids;
};

/**
 * struct umm_tier_report - what a client holds on one tier.
 * @tier_type:	(in) UMM_TIER_HOST_NODE or UMM_TIER_GPU.
 * @tier_id:	(in) node id (< nr_node_ids, a node that has memory) or GPU id
 *		(< UMM_MAX_GPUS).
 * @resident_bytes:    (in) bytes the client holds there, at most
 *		UMM_TIER_BYTES_MAX.
 * @reclaimable_bytes: (in) bytes of those it could give back when asked;
 *		must be <= resident_bytes.
 */
struct umm_tier_report {
	__u32 tier_type;
	__u32 tier_id;
	__u64 resident_bytes;
	__u64 reclaimable_bytes;
};

/* struct umm_report.flags */
#define UMM_REPORT_F_UPDATE	_BITUL(0) /* change only the listed tiers */

/**
 * struct umm_report - UMM_IOC_REPORT: the client's holdings per tier.
 * @size:	(in) sizeof(struct umm_report).
 * @flags:	(in) 0: the list replaces everything reported before (tiers
 *		not listed become 0); UMM_REPORT_F_UPDATE: only the listed
 *		tiers change.
 * @count:	(in) entries at @tiers, 0 .. UMM_REPORT_MAX.
 * @reserved:	(in) must be 0.
 * @tiers:	(in) user pointer to @count struct umm_tier_report. Each tier
 *		may appear once.
 *
 * A report is taken whole or not at all. It updates the books at once (the
 * GPU budgets are checked again before the ioctl returns).
 * Errors: -EINVAL: bad size, flags, reserved, tier type or id, duplicate
 * tier, reclaimable > resident, resident > UMM_TIER_BYTES_MAX. -E2BIG:
 * count > UMM_REPORT_MAX, or a non-zero byte beyond the struct.
 * -EFAULT: bad pointer. -EBADFD: no handshake yet.
 */
struct umm_report {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 reserved;
	__u64 tiers;
};

/**
 * struct umm_ack - UMM_IOC_ACK: the client freed bytes after an event.
 * @size:	(in) sizeof(struct umm_ack).
 * @flags:	(in) must be 0.
 * @seq:	(in) seq of the event acknowledged. It also acknowledges
 *		every earlier event of this client still waiting for an ACK.
 * @bytes_freed: (in) bytes given back in answer (may be 0).
 * @latency_ns:	(out) time from the newest event acknowledged to this ACK
 *		(never negative: 0 at the least).
 *
 * The module remembers the last 32 events per client that asked to free
 * (UMM_EVENT_F_ACK); event-to-ACK latencies feed the ack_latency_* figures
 * and @bytes_freed the bytes_freed figure, both sums saturating at
 * 2^64 - 1. The answer (@latency_ns) is written first: an ACK whose answer
 * cannot be written fails with -EFAULT, counts nothing and leaves the
 * events waiting, so it can be sent again.
 * Errors: -EINVAL: bad size or flags, seq 0 or a seq not issued yet.
 * -E2BIG: a non-zero byte beyond the struct. -EFAULT: bad pointer.
 * -ENOENT: no event with that seq (or older) is waiting for an ACK (already
 * acknowledged or forgotten); nothing is counted. -EBADFD: no handshake yet.
 */
struct umm_ack {
	__u32 size;
	__u32 flags;
	__u64 seq;
	__u64 bytes_freed;
	__u64 latency_ns;
};

/* struct umm_level_info.flags */
#define UMM_LEVEL_F_BUDGET	_BITUL(0) /* GPU: a budget; cgroup: a limit */
#define UMM_LEVEL_F_INJECTED	_BITUL(1) /* level held by the inject file */

/**
 * struct umm_level_info - one source in UMM_IOC_QUERY. All (out).
 * @tier_type:	UMM_TIER_HOST_NODE, UMM_TIER_GPU or UMM_TIER_CGROUP.
 * @tier_id:	node id, GPU id, or the low 32 bits of a cgroup's id.
 * @level:	enum umm_level.
 * @flags:	UMM_LEVEL_F_*.
 * @free_bytes:	node: available memory; GPU: budget left (0 if over or
 *		none); cgroup: room left under its limit by the working set
 *		(usage less inactive file pages), the least over it and its
 *		ancestors (U64_MAX: no limit).
 * @total_bytes: node: its memory; GPU: budget_bytes (0: no budget);
 *		cgroup: the effective limit, the lowest memory.max or
 *		memory.high on its path to the root (0: none).
 * @used_bytes:	node, GPU: sum of resident_bytes all clients reported there
 *		(saturating at 2^64 - 1); cgroup: its memory usage
 *		(memory.current).
 * @reclaimable_bytes: sum of reclaimable_bytes all clients reported there
 *		(saturating); cgroup: what the clients in it and below it
 *		declared on host nodes.
 * @eta_ms:	as struct umm_event.eta_ms.
 * @reserved:	0 for a node or GPU.
 * @tier_id_hi:	cgroup: the high 32 bits of its id (shares storage with
 *		@reserved).
 */
struct umm_level_info {
	__u32 tier_type;
	__u32 tier_id;
	__u32 level;
	__u32 flags;
	__u64 free_bytes;
	__u64 total_bytes;
	__u64 used_bytes;
	__u64 reclaimable_bytes;
	__u32 eta_ms;
	union {
		__u32 reserved;
		__u32 tier_id_hi;
	};
};

/**
 * struct umm_query - UMM_IOC_QUERY: current levels of every source.
 * @size:	(in) sizeof(struct umm_query).
 * @flags:	(in) must be 0.
 * @count:	(in) room at @levels, in entries (0 to only learn the
 *		number); (out) entries that exist: every node with memory,
 *		then every GPU with a budget or reported bytes, then (for a
 *		client with UMM_FEATURE_CGROUP) the watched memory cgroups
 *		(those that hold such clients) at or below the cgroup the
 *		client follows: its own subtree, inside its cgroup namespace.
 *		A client in the root cgroup sees them all with CAP_SYS_ADMIN,
 *		none without. If larger than the room given, only that many
 *		were written.
 * @enabled:	(out) 1 if the module's enabled knob is 1, else 0.
 * @levels:	(in) user pointer to @count struct umm_level_info.
 * @last_seq:	(out) seq of the last record this client was given (queued
 *		or dropped).
 *
 * Errors: -EINVAL: bad size or flags. -E2BIG: a non-zero byte beyond the
 * struct. -EFAULT. -EBADFD: no handshake yet.
 */
struct umm_query {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 enabled;
	__u64 levels;
	__u64 last_seq;
};

/*
 * ioctl magic 0xE7, numbers 0x00-0x03: a line for the kernel's
 * Documentation/userspace-api/ioctl/ioctl-number.rst (where 0xE7 is free
 * as of 6.1) is in Documentation/design/umm.rst, "The ABI".
 */
#define UMM_IOC_MAGIC	0xE7
#define UMM_IOC_API	_IOWR(UMM_IOC_MAGIC, 0x00, struct umm_api)
#define UMM_IOC_REPORT	_IOW(UMM_IOC_MAGIC, 0x01, struct umm_report)
#define UMM_IOC_ACK	_IOWR(UMM_IOC_MAGIC, 0x02, struct umm_ack)
#define UMM_IOC_QUERY	_IOWR(UMM_IOC_MAGIC, 0x03, struct umm_query)

#if !defined(__KERNEL__)
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(struct umm_event) == UMM_EVENT_SIZE,
	      "struct umm_event must be 64 bytes");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct umm_event) == UMM_EVENT_SIZE,
	       "struct umm_event must be 64 bytes");
#endif
#endif

#endif /* _UAPI_LINUX_UMM_H */
