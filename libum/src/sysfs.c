// SPDX-License-Identifier: MIT
/*
 * sysfs.c - one number from a sysfs file (a node's PCI NUMA node, umm.ko's
 * knobs), for the parts of libum that read them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "sysfs.h"

int um__read_num(const char *path, long long *out)
{
	char buf[32], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return errno || end == buf ? -EIO : 0;
}
