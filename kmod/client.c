// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/umm: one open file is one client with its own ring of
 * fixed-size event records, its books (what it holds per tier) and the
 * events it still owes an ACK for.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "umm_internal.h"

static ushort dev_mode = 0660;
module_param(dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "Mode of /dev/umm (default 0660)");

/* ---- file operations ------------------------------------------------- */

static int umm_open(struct inode *inode, struct file *file)
{
	char comm[TASK_COMM_LEN];
	struct umm_client *c;
	int ret;

	/* charged to the opener's memory cgroup: a client's memory is its own */
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	c->nodes = kcalloc(nr_node_ids, sizeof(*c->nodes), GFP_KERNEL_ACCOUNT);
	if (!c->nodes) {
		ret = -ENOMEM;
		goto free_client;
	}
	ret = umm_ring_alloc(c, READ_ONCE(umm.queue_len));
	if (ret)
		goto free_nodes;

	INIT_LIST_HEAD(&c->list);
	RB_CLEAR_NODE(&c->level);
	mutex_init(&c->read_mutex);
	c->pid = get_pid(task_tgid(current));
	get_task_comm(comm, current);
	strscpy(c->name, comm, sizeof(c->name));

	mutex_lock(&umm.mutex);
	spin_lock(&umm.lock);
	list_add_tail(&c->list, &umm.unready);
	spin_unlock(&umm.lock);
	mutex_unlock(&umm.mutex);
	atomic_inc(&umm.stats.clients);

	stream_open(inode, file);
	/* lets io_uring try reads inline and arm poll on -EAGAIN */
	file->f_mode |= FMODE_NOWAIT;
	file->private_data = c;
	return 0;

free_nodes:
	kfree(c->nodes);
free_client:
	kfree(c);
	return ret;
}

static void umm_source_account(struct umm_source *s, const struct umm_book *b,
			       int sign)
{
	if (sign > 0) {
		umm_sum_add(&s->resident, b->resident);
		umm_sum_add(&s->reclaimable, b->reclaimable);
	} else {
		umm_sum_sub(&s->resident, b->resident);
		umm_sum_sub(&s->reclaimable, b->reclaimable);
	}
}

/* Add (@sign > 0) or take away a client's books from the sums. */
static void umm_books_account(struct umm_client *c, int sign)
{
	struct umm_node *n;
	int nid, i;

	lockdep_assert_held(&umm.lock);
	for_each_umm_node(n, nid)
		umm_source_account(&n->src, &c->nodes[nid], sign);
	for (i = 0; i < UMM_MAX_GPUS; i++)
		umm_source_account(&umm.gpus[i]->src, &c->gpus[i], sign);
	umm_memcg_books(c, sign);
}

static void umm_recheck_gpus(void)
{
	int i;

	lockdep_assert_held(&umm.mutex);
	for (i = 0; i < UMM_MAX_GPUS; i++)
		umm_gpu_check(umm.gpus[i], false);
}

/* ---- the order clients are asked in ----------------------------------- */

/*
 * Move a client that just shook hands from umm.unready to its place on
 * umm.clients: behind every client of its priority or lower, before the
 * oldest client of the next priority up, which umm.levels finds without
 * walking the list. A priority new to the list enters the tree with @c.
 */
static void umm_client_place(struct umm_client *c)
{
	struct rb_node **link = &umm.levels.rb_node, *parent = NULL, *up;
	struct umm_client *first, *above = NULL;
	bool known = false;

	lockdep_assert_held(&umm.lock);
	while (*link) {
		parent = *link;
		first = rb_entry(parent, struct umm_client, level);
		if (c->priority < first->priority) {
			above = first;
			link = &parent->rb_left;
		} else if (c->priority > first->priority) {
			link = &parent->rb_right;
		} else {
			known = true;
			break;
		}
	}
	if (known) {
		/* its level is there: the next one up starts behind it */
		up = rb_next(parent);
		above = up ? rb_entry(up, struct umm_client, level) : NULL;
	}
	list_move_tail(&c->list, above ? &above->list : &umm.clients);
	if (!known) {
		rb_link_node(&c->level, parent, link);
		rb_insert_color(&c->level, &umm.levels);
	}
}

/*
 * Take a client off whichever list it is on. The oldest of a priority
 * hands its place in umm.levels to the next oldest, which follows it on
 * umm.clients; the last of a priority takes the level out.
 */
static void umm_client_unplace(struct umm_client *c)
{
	struct umm_client *next;

	lockdep_assert_held(&umm.lock);
	if (!RB_EMPTY_NODE(&c->level)) {
		next = list_next_entry(c, list);
		if (!list_entry_is_head(next, &umm.clients, list) &&
		    next->priority == c->priority)
			rb_replace_node(&c->level, &next->level, &umm.levels);
		else
			rb_erase(&c->level, &umm.levels);
		RB_CLEAR_NODE(&c->level);
	}
	list_del(&c->list);
}

static int umm_release(struct inode *inode, struct file *file)
{
	struct umm_client *c = file->private_data;

	mutex_lock(&umm.mutex);
	umm_memcg_untie(c);
	spin_lock(&umm.lock);
	umm_client_unplace(c);
	if (c->ready)
		umm_books_account(c, -1);
	spin_unlock(&umm.lock);
	/* what it held is gone: a GPU may be within budget again */
	if (c->ready)
		umm_recheck_gpus();
	mutex_unlock(&umm.mutex);

	put_pid(c->pid);
	umm_ring_free(c);
	kfree(c->nodes);
	kfree(c);
	atomic_dec(&umm.stats.clients);
	return 0;
}

static bool umm_readable(struct umm_client *c)
{
	return READ_ONCE(c->used) != 0;
}

static ssize_t umm_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct umm_client *c = iocb->ki_filp->private_data;
	bool nowait = (iocb->ki_flags & IOCB_NOWAIT) ||
		      (iocb->ki_filp->f_flags & O_NONBLOCK);
	struct umm_event ev;
	ssize_t done = 0;
	int ret;

	/* pairs with the release in umm_ioc_api(): name, features set */
	if (!smp_load_acquire(&c->ready))
		return -EBADFD;
	if (iov_iter_count(to) < sizeof(ev))
		return -EINVAL;

	for (;;) {
		if (nowait) {
			if (!mutex_trylock(&c->read_mutex))
				return -EAGAIN;
		} else if (mutex_lock_interruptible(&c->read_mutex)) {
			return -ERESTARTSYS;
		}
		while (iov_iter_count(to) >= sizeof(ev) &&
		       umm_ring_peek(c, &ev)) {
			if (copy_to_iter(&ev, sizeof(ev), to) != sizeof(ev)) {
				umm_ring_done(c, false);
				mutex_unlock(&c->read_mutex);
				return done ? done : -EFAULT;
			}
			umm_ring_done(c, true);
			done += sizeof(ev);
		}
		mutex_unlock(&c->read_mutex);
		if (done)
			return done;
		if (nowait)
			return -EAGAIN;
		ret = wait_event_interruptible(c->wq, umm_readable(c));
		if (ret)
			return ret;
	}
}

static __poll_t umm_poll(struct file *file, poll_table *wait)
{
	struct umm_client *c = file->private_data;

	poll_wait(file, &c->wq, wait);
	/* pairs with the release in umm_ioc_api() */
	if (!smp_load_acquire(&c->ready))
		return EPOLLERR;
	return umm_readable(c) ? EPOLLIN | EPOLLRDNORM : 0;
}

/* ---- ioctls ---------------------------------------------------------- */

static bool umm_name_ok(const char *name)
{
	size_t i, len = strnlen(name, UMM_NAME_LEN);

	if (!len || len == UMM_NAME_LEN)
		return false;
	/* printable ASCII: isprint() also passes Latin-1 on some kernels */
	for (i = 0; i < len; i++)
		if ((u8)name[i] < 0x20 || (u8)name[i] > 0x7e)
			return false;
	return true;
}

/*
 * Copy an ioctl's argument in by the extensible-struct rule of the header:
 * the caller's sizeof is the size in the ioctl number, the struct's own
 * size field (its first) must say the same, it must be at least @ksize, and
 * bytes beyond @ksize must be zero (copy_struct_from_user() gives -E2BIG).
 */
static int umm_copy_arg(void *dst, size_t ksize, const void __user *uarg,
			unsigned int cmd)
{
	size_t usize = _IOC_SIZE(cmd);
	u32 size;
	int ret;

	if (usize < ksize)
		return -EINVAL;
	ret = copy_struct_from_user(dst, ksize, uarg, usize);
	if (ret)
		return ret;
	memcpy(&size, dst, sizeof(size));
	return size == usize ? 0 : -EINVAL;
}

static int umm_api_answer(struct umm_client *c, struct umm_api __user *uarg)
{
	u64 features = UMM_API_FEATURES;

	if (!umm_memcg_available())
		features &= ~UMM_FEATURE_CGROUP;
	if (put_user(features, &uarg->features) ||
	    put_user((u64)(BIT(_IOC_NR(UMM_IOC_API)) |
			   BIT(_IOC_NR(UMM_IOC_REPORT)) |
			   BIT(_IOC_NR(UMM_IOC_ACK)) |
			   BIT(_IOC_NR(UMM_IOC_QUERY))), &uarg->ioctls) ||
	    put_user((u32)sizeof(struct umm_event), &uarg->event_size) ||
	    put_user(c->queue_len, &uarg->queue_len) ||
	    put_user((u32)UMM_MAX_GPUS, &uarg->max_gpus) ||
	    put_user((u32)nr_node_ids, &uarg->nr_node_ids))
		return -EFAULT;
	return 0;
}

static long umm_ioc_api(struct umm_client *c, struct umm_api __user *uarg,
			unsigned int cmd)
{
	struct umm_api a;
	long ret;

	ret = umm_copy_arg(&a, sizeof(a), uarg, cmd);
	if (ret)
		return ret;
	if (a.api != UMM_API_VERSION)
		return -EPROTO;
	if ((a.features & ~UMM_API_FEATURES) || a.flags ||
	    !umm_name_ok(a.name))
		return -EINVAL;
	/* pairs with the release below */
	if (smp_load_acquire(&c->ready))
		return -EBUSY;
	/*
	 * Answer first: a handshake the caller never saw must not count. And
	 * answer outside umm.mutex: the caller's page may take as long as it
	 * likes to fault in (userfaultfd), and no one else may wait for it.
	 */
	ret = umm_api_answer(c, uarg);
	if (ret)
		return ret;

	mutex_lock(&umm.mutex);
	if (c->ready) {
		ret = -EBUSY;	/* a racing handshake on the same file won */
		goto unlock;
	}
	spin_lock(&umm.lock);
	memcpy(c->name, a.name, sizeof(c->name));
	c->priority = a.priority;
	c->features = a.features;
	umm_client_place(c);
	/* lockless readers (read, poll, ioctl) see the client complete */
	smp_store_release(&c->ready, true);
	spin_unlock(&umm.lock);
	umm_memcg_follow(c);
	umm_monitor_watch();
unlock:
	mutex_unlock(&umm.mutex);
	return ret;
}

static int umm_report_check(const struct umm_tier_report *t, u32 count)
{
	u32 i, j;

	for (i = 0; i < count; i++) {
		if (t[i].reclaimable_bytes > t[i].resident_bytes ||
		    t[i].resident_bytes > UMM_TIER_BYTES_MAX)
			return -EINVAL;
		switch (t[i].tier_type) {
		case UMM_TIER_HOST_NODE:
			if (t[i].tier_id >= nr_node_ids ||
			    !umm.nodes[t[i].tier_id])
				return -EINVAL;
			break;
		case UMM_TIER_GPU:
			if (t[i].tier_id >= UMM_MAX_GPUS)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (t[j].tier_type == t[i].tier_type &&
			    t[j].tier_id == t[i].tier_id)
				return -EINVAL;
	}
	return 0;
}

static long umm_ioc_report(struct umm_client *c, void __user *uarg,
			   unsigned int cmd)
{
	struct umm_tier_report *t = NULL;
	struct umm_report r;
	struct umm_book *b;
	u32 i;
	int ret;

	ret = umm_copy_arg(&r, sizeof(r), uarg, cmd);
	if (ret)
		return ret;
	if ((r.flags & ~UMM_REPORT_F_UPDATE) || r.reserved)
		return -EINVAL;
	if (r.count > UMM_REPORT_MAX)
		return -E2BIG;
	if (r.count) {
		t = memdup_user(u64_to_user_ptr(r.tiers),
				array_size(r.count, sizeof(*t)));
		if (IS_ERR(t))
			return PTR_ERR(t);
	}
	ret = umm_report_check(t, r.count);
	if (ret)
		goto free_tiers;

	mutex_lock(&umm.mutex);
	spin_lock(&umm.lock);
	umm_books_account(c, -1);
	if (!(r.flags & UMM_REPORT_F_UPDATE)) {
		memset(c->nodes, 0, nr_node_ids * sizeof(*c->nodes));
		memset(c->gpus, 0, sizeof(c->gpus));
	}
	for (i = 0; i < r.count; i++) {
		if (t[i].tier_type == UMM_TIER_HOST_NODE)
			b = &c->nodes[t[i].tier_id];
		else
			b = &c->gpus[t[i].tier_id];
		b->resident = t[i].resident_bytes;
		b->reclaimable = t[i].reclaimable_bytes;
	}
	umm_books_account(c, 1);
	spin_unlock(&umm.lock);
	umm_recheck_gpus();
	mutex_unlock(&umm.mutex);

free_tiers:
	kfree(t);
	return ret;
}

static long umm_ioc_ack(struct umm_client *c, struct umm_ack __user *uarg,
			unsigned int cmd)
{
	struct umm_ack a;
	u64 lat;
	long ret;
	u32 n;

	ret = umm_copy_arg(&a, sizeof(a), uarg, cmd);
	if (ret)
		return ret;
	if (a.flags)
		return -EINVAL;
	ret = umm_pending_latency(c, a.seq, &lat);
	if (ret)
		return ret;
	/* answer first, count after: an ACK the caller never saw is none */
	if (put_user(lat, &uarg->latency_ns))
		return -EFAULT;
	n = umm_pending_retire(c, a.seq, a.bytes_freed);
	return n ? 0 : -ENOENT;	/* a racing ACK took them meanwhile */
}

static void umm_level_fill(struct umm_level_info *li, u32 type, u32 id,
			   struct umm_source *s)
{
	li->tier_type = type;
	li->tier_id = id;
	li->level = s->level;
	li->used_bytes = umm_sum_read(&s->resident);
	li->reclaimable_bytes = umm_sum_read(&s->reclaimable);
	li->eta_ms = UMM_ETA_UNKNOWN;
	if (s->injected)
		li->flags |= UMM_LEVEL_F_INJECTED;
}

/*
 * The nodes' and GPUs' entries, the first @room of them written: O(nodes +
 * GPUs) under umm.lock, the one walk QUERY does there.
 */
static u32 umm_query_sources(struct umm_level_info *li, u32 room)
{
	struct umm_level_info e;
	struct umm_node *n;
	u32 total = 0, i;
	int nid;

	spin_lock(&umm.lock);
	for_each_umm_node(n, nid) {
		memset(&e, 0, sizeof(e));
		umm_level_fill(&e, UMM_TIER_HOST_NODE, nid, &n->src);
		e.free_bytes = n->avail_bytes;
		e.total_bytes = n->total_bytes;
		e.eta_ms = n->eta_ms;
		if (total < room)
			li[total] = e;
		total++;
	}
	for (i = 0; i < UMM_MAX_GPUS; i++) {
		struct umm_gpu *g = umm.gpus[i];
		u64 used = umm_sum_read(&g->src.resident);

		if (!g->budget_bytes && !used && !g->src.injected)
			continue;
		memset(&e, 0, sizeof(e));
		umm_level_fill(&e, UMM_TIER_GPU, i, &g->src);
		e.total_bytes = g->budget_bytes;
		if (g->budget_bytes) {
			e.flags |= UMM_LEVEL_F_BUDGET;
			if (g->budget_bytes > used)
				e.free_bytes = g->budget_bytes - used;
		}
		if (total < room)
			li[total] = e;
		total++;
	}
	spin_unlock(&umm.lock);
	return total;
}

/*
 * Every entry, the first @room written at @li. The caller's buffer was
 * sized before umm.mutex was taken: allocations under it must not enter
 * reclaim (umm_internal.h).
 */
static u32 umm_query_fill(struct umm_client *c, struct umm_level_info *li,
			  u32 room, u32 *enabled)
{
	u32 total, done;

	mutex_lock(&umm.mutex);
	/* the caller may have moved since the last sample */
	umm_memcg_follow(c);
	total = umm_query_sources(li, room);
	if (c->features & UMM_FEATURE_CGROUP) {
		done = min(total, room);
		total += umm_memcg_level_info(c, li + done,
					       room - done);
	}
	*enabled = READ_ONCE(umm.enabled);
	mutex_unlock(&umm.mutex);
	return total;
}

static long umm_ioc_query(struct umm_client *c, struct umm_query __user *uarg,
			  unsigned int cmd)
{
	struct umm_level_info *li = NULL;
	struct umm_query q;
	u32 total, room;
	long ret;

	ret = umm_copy_arg(&q, sizeof(q), uarg, cmd);
	if (ret)
		return ret;
	if (q.flags)
		return -EINVAL;

	/* sources come and go: size again when more came than fit */
	total = nr_node_ids + UMM_MAX_GPUS + READ_ONCE(umm.nr_cgroups);
	for (;;) {
		kfree(li);
		room = min(q.count, total);
		li = room ? kcalloc(room, sizeof(*li), GFP_KERNEL) : NULL;
		if (room && !li)
			return -ENOMEM;
		total = umm_query_fill(c, li, room, &q.enabled);
		if (total <= room || room == q.count)
			break;
	}

	spin_lock(&c->ring_lock);
	q.last_seq = c->seq;
	spin_unlock(&c->ring_lock);

	if (room &&
	    copy_to_user(u64_to_user_ptr(q.levels), li,
			 array_size(min(room, total), sizeof(*li)))) {
		ret = -EFAULT;
		goto free_levels;
	}
	q.count = total;
	if (copy_to_user(uarg, &q, sizeof(q)))
		ret = -EFAULT;
free_levels:
	kfree(li);
	return ret;
}

/* Is @cmd the ioctl @known, at any size (see umm_copy_arg())? */
static bool umm_ioc_is(unsigned int cmd, unsigned int known)
{
	return _IOC_TYPE(cmd) == _IOC_TYPE(known) &&
	       _IOC_NR(cmd) == _IOC_NR(known) &&
	       _IOC_DIR(cmd) == _IOC_DIR(known);
}

static long umm_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct umm_client *c = file->private_data;
	void __user *uarg = (void __user *)arg;

	if (umm_ioc_is(cmd, UMM_IOC_API))
		return umm_ioc_api(c, uarg, cmd);
	/* pairs with the release in umm_ioc_api() */
	if (!smp_load_acquire(&c->ready))
		return -EBADFD;
	if (umm_ioc_is(cmd, UMM_IOC_REPORT))
		return umm_ioc_report(c, uarg, cmd);
	if (umm_ioc_is(cmd, UMM_IOC_ACK))
		return umm_ioc_ack(c, uarg, cmd);
	if (umm_ioc_is(cmd, UMM_IOC_QUERY))
		return umm_ioc_query(c, uarg, cmd);
	return -ENOTTY;
}

static const struct file_operations umm_fops = {
	.owner		= THIS_MODULE,
	.open		= umm_open,
	.release	= umm_release,
	.read_iter	= umm_read_iter,
	.poll		= umm_poll,
	.unlocked_ioctl	= umm_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice umm_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "umm",
	.fops	= &umm_fops,
};

/**
 * umm_dev_init() - register /dev/umm.
 *
 * Open files hold a reference on the module (fops.owner), so the module
 * cannot be removed while a client exists.
 *
 * Return: 0, or -EINVAL for a bad dev_mode, or misc_register()'s error.
 */
int umm_dev_init(void)
{
	if (dev_mode & ~0777) {
		pr_err("dev_mode %#o is not a permission mode\n", dev_mode);
		return -EINVAL;
	}
	umm_misc.mode = dev_mode;
	return misc_register(&umm_misc);
}

/**
 * umm_dev_exit() - remove /dev/umm. No client can exist by then.
 */
void umm_dev_exit(void)
{
	misc_deregister(&umm_misc);
}
