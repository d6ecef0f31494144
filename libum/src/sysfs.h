/* SPDX-License-Identifier: MIT */
/* sysfs.h - reading a number from a sysfs file (internal to libum). */
#ifndef UM_SYSFS_H
#define UM_SYSFS_H

/* One decimal number from a file: 0, -errno to open it, -EIO unreadable. */
int um__read_num(const char *path, long long *out);

#endif /* UM_SYSFS_H */
