# SPDX-License-Identifier: MIT
"""umtorch's exceptions: libum's -errno values as OSError subclasses."""

import errno
import os


class UmError(OSError):
    """A libum call (or umtorch's check before one) failed.

    ``errno`` is the positive error number, ``rc`` the negative value libum
    returned (``-errno``), so ``e.rc == -errno.ENOENT`` reads like C.
    """

    def __init__(self, rc, what, detail=None):
        text = "%s: %s" % (what, os.strerror(-rc))
        if detail:
            text += " (%s)" % detail
        super().__init__(-rc, text)

    @property
    def rc(self):
        return -self.errno


class UmTypeError(UmError, TypeError):
    """An argument of the wrong type; rc is -EINVAL."""


class UmValueError(UmError, ValueError):
    """An argument out of range (a negative size, say); rc is -EINVAL."""


def check(rc, what, detail=None):
    """Return rc when it is not negative, else raise UmError for it."""
    if rc < 0:
        raise UmError(rc, what, detail)
    return rc


def bad_type(what, value, want):
    return UmTypeError(-errno.EINVAL, what, "%s is %s, want %s"
                       % (what, type(value).__name__, want))


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(value, what):
    """Bytes from an int or a string with a K, M, G or T suffix."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise bad_type(what, value, "int or str like '512M'")
    if isinstance(value, str):
        text = value.strip().upper().removesuffix("B").removesuffix("I")
        unit = text[-1:] if text[-1:] in _UNITS else ""
        number = text[:-1] if unit else text
        if not number.isdigit():
            raise UmValueError(-errno.EINVAL, what, "bad size %r" % value)
        value = int(number) * _UNITS[unit]
    if value < 0:
        raise UmValueError(-errno.EINVAL, what, "negative size %d" % value)
    if value >= 1 << 64:		# would wrap in libum's uint64_t
        raise UmValueError(-errno.EINVAL, what, "size %d does not fit 64 "
                           "bits" % value)
    return value
