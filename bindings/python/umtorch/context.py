# SPDX-License-Identifier: MIT
"""Context and Region: libum's context and regions as Python objects.

The rule that keeps tensors safe (see README.rst): a tensor made by
Region.tensor() reads the region's memory directly, so it may be touched
only while the region is acquired. When a region is freed (by free() or by
Context.close()), every tensor Region.tensor() made and that is still alive
is emptied in place (``set_`` to zero elements), so using it raises instead
of reading freed memory. Tensors derived from them (slices, ``view``) are
not tracked: do not keep those past the region's life.
"""

import atexit
import collections
import ctypes
import errno
import json
import logging
import math
import threading
import weakref

from . import _lib
from .errors import UmError, UmValueError, bad_type, check, parse_size

log = logging.getLogger("umtorch")

Event = collections.namedtuple(
    "Event", "type region from_tier to_tier bytes error level ns")
Event.__doc__ = """A libum event. type: 'migrated', 'evicted', 'pressure',
'nomem' or 'error'; region: the Region (or the raw handle when umtorch does
not know it, 0 for none); tiers as names ('gpu0', 'host', 'spill');
error: -errno for 'error'/'nomem'; level: pressure 1..3; ns: duration."""

# A line libum logged during a call: (syslog level, text).
_Said = collections.namedtuple("_Said", "level text")
_PY_LEVELS = {3: logging.ERROR, 4: logging.WARNING, 6: logging.INFO,
              7: logging.DEBUG}
_SIZE_FIELDS = ("device_budget", "sim_capacity", "pool_size", "pool_chunk",
                "chunk_bytes", "host_budget")
# 0 would mean "unset" to libum, which then takes the variable: refused
_ZERO_IS_UNSET = {
    "device_budget": "0 is no budget; None takes LIBUM_DEVICE_BUDGET or "
                     "the whole device",
    "host_budget": "0 is no budget; None takes LIBUM_HOST_BUDGET or the "
                   "memory cgroup's limit only",
}


_LIVE = weakref.WeakSet()	# contexts not closed yet


@atexit.register
def _close_at_exit():
    """Close what is still open while the interpreter still works (a
    __del__ at teardown may find modules half gone)."""
    for ctx in list(_LIVE):
        try:
            ctx.close()
        except Exception:	# logged: a traceback at exit helps nobody
            log.exception("umtorch: closing %r at exit failed", ctx)


def live_contexts():
    return [c for c in list(_LIVE) if not c.closed]


_WAIT_FOREVER = (1 << 64) - 1


def _timeout_ns(timeout):
    """None for a plain um_acquire, else um_acquire_timeout's nanoseconds
    (seconds given: int or float, >= 0; math.inf waits without limit)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise bad_type("timeout", timeout, "seconds (int or float) or None")
    if math.isnan(timeout) or timeout < 0:
        raise UmValueError(-errno.EINVAL, "timeout",
                           "%r is not a number of seconds >= 0" % timeout)
    if math.isinf(timeout):
        return _WAIT_FOREVER
    return min(int(timeout * 1e9), _WAIT_FOREVER - 1)


def tier_name(tier):
    buf = ctypes.create_string_buffer(32)
    _lib.lib.um_tier_name(tier, buf, len(buf))
    return buf.value.decode()


class Context:
    """A libum context: backend, per-device budget, regions, stats, events.

    Keyword arguments mirror struct um_config; each one left at None takes
    its LIBUM_* environment variable, else libum's default (as in C).
    Sizes are ints or strings with K/M/G/T ('256M'). backend: 'sim',
    'cuda' or 'auto'. libum's log lines go to the 'umtorch' logger.
    Use it as a context manager, or call close().
    """

    def __init__(self, backend=None, device_budget=None, sim_capacity=None,
                 pool_size=None, pool_chunk=None, chunk_bytes=None,
                 spill_dir=None, log_level=None, host_budget=None):
        self._handle = None
        self._history = None	# memory.History while recording
        self._peaks = {}	# peaks since reset_peak_memory_stats()
        self._backend = None	# asked of libum once: it never changes
        self._regions = weakref.WeakValueDictionary()
        self._offloads = weakref.WeakSet()
        self._handlers = []
        self._tls = threading.local()
        cfg = self._config(backend, spill_dir, log_level, {
            f: v for f, v in zip(_SIZE_FIELDS, (
                device_budget, sim_capacity, pool_size, pool_chunk,
                chunk_bytes, host_budget))})
        out = ctypes.c_void_p()
        self._call("um_context_create", ctypes.byref(cfg), ctypes.byref(out))
        self._handle = out.value
        self._event_fn = _lib.EVENT_FN(self._on_event)
        self._call("um_set_event_callback", self._handle, self._event_fn,
                   None)
        _LIVE.add(self)

    def _config(self, backend, spill_dir, log_level, sizes):
        cfg = _lib.Config()
        _lib.lib.um_config_init(ctypes.byref(cfg))
        if backend is not None:
            if backend not in _lib.BACKENDS:
                raise bad_type("backend", backend, "'sim', 'cuda' or 'auto'")
            cfg.backend = _lib.BACKENDS[backend]
        for field, value in sizes.items():
            if value is not None:
                value = parse_size(value, field)
                if field in _ZERO_IS_UNSET and value == 0:
                    # libum reads 0 as unset (and refuses the variable at
                    # 0): None says that plainly
                    raise UmValueError(-errno.EINVAL, field,
                                       _ZERO_IS_UNSET[field])
                if cfg.size < getattr(_lib.Config, field).offset + 8:
                    # a libum of LIBUM_0.1 (80 bytes) would not see it
                    raise UmError(-errno.EOPNOTSUPP, field,
                                  "this libum has no %s field (it is older "
                                  "than LIBUM_0.2); set LIBUM_%s"
                                  % (field, field.upper()))
                setattr(cfg, field, value)
        if spill_dir is not None:
            self._spill_dir = str(spill_dir).encode()
            cfg.spill_dir = self._spill_dir
        if log_level is not None:
            if log_level not in _lib.LOG_LEVELS:
                raise bad_type("log_level", log_level,
                               "one of %s" % sorted(_lib.LOG_LEVELS))
            cfg.log_level = _lib.LOG_LEVELS[log_level]
        # Kept on self: libum calls it for the context's whole life.
        self._log_fn = _lib.LOG_FN(self._on_log)
        cfg.log = self._log_fn
        return cfg

    # ---- plumbing -----------------------------------------------------

    def _on_log(self, _arg, level, msg):
        text = msg.decode(errors="replace")
        said = getattr(self._tls, "last_err", None)
        if level <= 6 and (said is None or level <= said.level):
            # kept for the exception of the failing call: the most severe
            self._tls.last_err = _Said(level, text)
        if level <= 3 and getattr(self._tls, "quiet", False):
            level = 7		# an attempt that may fail: not an error
        log.log(_PY_LEVELS.get(level, logging.DEBUG), "%s", text)

    def _call(self, name, *args):
        """Call um_<name>; raise UmError on -errno with libum's line on it:
        its ERR line, or the INFO line of a refusal libum does not count
        as an error (an acquire that does not fit the budget).
        A call made inside it (an event handler's stats, while libum's
        call runs) keeps its own ERR line apart: the outer one's stays."""
        outer = getattr(self._tls, "last_err", None)
        self._tls.last_err = None
        try:
            rc = getattr(_lib.lib, name)(*args)
            said = self._tls.last_err
        finally:
            self._tls.last_err = outer
        return check(rc, name, said and said.text)

    def _try_acquire(self, region, stream=None):
        """region.acquire() that may fail (an acquire ahead, to restore
        early): libum's ERR line for it is logged at debug level. Returns
        whether it was acquired."""
        self._tls.quiet = True
        try:
            region.acquire(stream=stream)
            return True
        except UmError:
            return False
        finally:
            self._tls.quiet = False

    def _ctx(self, what):
        """The C context pointer; -EBADF once the context is closed."""
        if self._handle is None:
            raise UmError(-errno.EBADF, what, "context is closed")
        return self._handle

    def _on_event(self, _arg, evp):
        ev = evp.contents
        event = Event(_lib.EVENTS.get(ev.type, str(ev.type)),
                      self._regions.get(ev.region, ev.region),
                      tier_name(ev.from_), tier_name(ev.to), ev.bytes,
                      ev.error, ev.level, ev.ns)
        free = None
        if self._handle is not None:
            st = self.raw_stats()	# samples the peaks
            free = max(st.budget[0] - st.device[0].current, 0)
        if self._history is not None:
            self._history.event(event, free)
        for fn, types in list(self._handlers):
            if types is None or event.type in types:
                try:
                    fn(event)
                except Exception:	# never unwind into libum's C frames
                    log.exception("umtorch event handler %r failed", fn)

    # ---- public -------------------------------------------------------

    @property
    def closed(self):
        return self._handle is None

    @property
    def backend(self):
        """'sim' or 'cuda': the backend in use."""
        handle = self._ctx("backend")
        if self._backend is None:
            rc = check(_lib.lib.um_context_backend(handle), "backend")
            self._backend = {v: k for k, v in _lib.BACKENDS.items()}[rc]
        return self._backend

    def tensor_device(self, device=0):
        """The torch device a view of this context's regions lives on."""
        return "cuda:%d" % device if self.backend == "cuda" else "cpu"

    def alloc(self, nbytes, kind="generic", name=None, priority=0,
              device=0, no_spill=False):
        """A new Region of nbytes (int or '4M'); kind as in um.h."""
        return Region(self, nbytes, kind, name, priority, device, no_spill)

    def budget(self, device=0):
        value = _lib.u64()
        self._call("um_budget_get", self._ctx("budget"), device,
                   ctypes.byref(value))
        return value.value

    def set_budget(self, nbytes, device=0):
        """Set the device budget; -EBUSY (raised) if acquired regions hold
        more, in which case it is set anyway and met as they release."""
        self._call("um_budget_set", self._ctx("set_budget"), device,
                   parse_size(nbytes, "nbytes"))

    def shed(self, nbytes, device=0):
        """Evict released regions from the device; returns bytes scheduled."""
        return self._call("um_shed", self._ctx("shed"),
                          _lib.tier(_lib.TIER_DEVICE, device),
                          parse_size(nbytes, "nbytes"), _lib.TIER_NONE)

    def wait_all(self):
        self._call("um_wait_all", self._ctx("wait_all"))

    def stats(self):
        """um_stats_json as a dict (counters, per-tier bytes, regions)."""
        ctx = self._ctx("stats")
        size = self._call("um_stats_json", ctx, None, 0) + 1
        while True:
            # the text can grow between the calls (libum's threads count
            # on): a cut one was once read as JSON and failed to parse
            buf = ctypes.create_string_buffer(size)
            need = self._call("um_stats_json", ctx, buf, size)
            if need < size:
                return json.loads(buf.value.decode())
            size = need + 256

    def raw_stats(self):
        """um_stats_get as a ctypes struct (cheap: no JSON); updates the
        peaks reset_peak_memory_stats() restarts."""
        st = _lib.Stats(size=ctypes.sizeof(_lib.Stats))
        self._call("um_stats_get", self._ctx("stats"), ctypes.byref(st))
        for key, counter in (("device", st.device[0]),
                             ("host", st.host_total), ("spill", st.spill)):
            self._peaks[key] = max(self._peaks.get(key, 0), counter.current)
        allocated = sum(c.current for c in st.kind)
        self._peaks["allocated"] = max(self._peaks.get("allocated", 0),
                                       allocated)
        if self._history is not None:
            self._history.sampled(st.device[0].current)
        return st

    def device_bytes(self, device=0):
        """Bytes of regions on the device now."""
        return self.raw_stats().device[device].current

    def _history_step(self, offload):
        if self._history is not None:
            self._history.step(self, offload)

    def on_event(self, fn, types=None):
        """Call fn(Event) for libum's events (all, or those named in
        types, e.g. {'evicted', 'pressure'}). Handlers run in the thread
        that made the libum call (or libum's pressure thread) with no libum
        lock held; exceptions are logged, not raised. Returns fn."""
        if not callable(fn):
            raise bad_type("fn", fn, "a callable")
        self._handlers.append((fn, None if types is None else set(types)))
        return fn

    def close(self):
        """Detach optimizer offloads, free the regions still alive and
        destroy the context. Returns how many regions were still alive
        (0 for a clean teardown); idempotent."""
        if self._handle is None:
            return 0
        for offload in list(self._offloads):
            offload.detach()
        alive = [r for r in list(self._regions.values()) if not r.freed]
        for region in alive:	# closing frees them: that is no error
            log.debug("umtorch: region %s freed by close", region)
            region.free()
        _lib.lib.um_set_event_callback(self._handle, _lib.EVENT_FN(), None)
        leaks = _lib.lib.um_context_destroy(self._handle)
        self._handle = None
        _LIVE.discard(self)
        return len(alive) + max(leaks, 0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()


class Region:
    """One libum region: a buffer with a pointer stable for its life.

    acquire()/release() (or ``with region:``) make it resident and
    evictable again; tensor() makes a torch tensor over its bytes, valid
    only while it is acquired.
    """

    def __init__(self, ctx, nbytes, kind, name, priority, device, no_spill):
        if not isinstance(ctx, Context):
            raise bad_type("ctx", ctx, "umtorch.Context")
        if kind not in _lib.KINDS:
            raise bad_type("kind", kind, "one of %s" % sorted(_lib.KINDS))
        if name is not None and not isinstance(name, str):
            raise bad_type("name", name, "str")
        for what, v in (("priority", priority), ("device", device)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise bad_type(what, v, "int")
        if device < 0:
            raise UmValueError(-errno.EINVAL, "device", "negative device")
        self.ctx, self.kind, self.name = ctx, kind, name
        self.nbytes = parse_size(nbytes, "nbytes")
        self.device = device
        self.freed = False
        self._views = []
        self._ptr = None
        self._storages = {}	# (dtype, offset, numel): a storage (views.py)
        desc = _lib.RegionDesc(
            size=ctypes.sizeof(_lib.RegionDesc), kind=_lib.KINDS[kind],
            priority=priority, device=device, bytes=self.nbytes,
            flags=2 if no_spill else 0,
            name=name.encode() if name else None)
        handle = _lib.region_t()
        ctx._call("um_alloc", ctx._ctx("alloc"), ctypes.byref(desc),
                  ctypes.byref(handle))
        self.handle = handle.value
        ctx._regions[self.handle] = self
        # Collected while alive (an optimizer dropped with its offload):
        # freed then, as torch frees a tensor's memory.
        self._finalizer = weakref.finalize(self, _free_collected, ctx,
                                           self.handle, self._views)
        self._finalizer.atexit = False	# at exit, close() frees it
        if ctx._history is not None:
            ctx._history.alloc(self)

    def __repr__(self):
        return "<umtorch.Region %s %d bytes %s%s>" % (
            self.name or hex(self.handle), self.nbytes, self.kind,
            " freed" if self.freed else "")

    def _tier(self, tier):
        if tier is None or tier == "device":
            return _lib.tier(_lib.TIER_DEVICE, self.device)
        named = {"host": _lib.TIER_HOST_ANY, "disk": _lib.TIER_DISK,
                 "spill": _lib.TIER_DISK}
        if isinstance(tier, str) and tier in named:
            return named[tier]
        if isinstance(tier, int) and not isinstance(tier, bool):
            return tier
        raise bad_type("tier", tier, "'device', 'host', 'disk' or an int")

    @property
    def ptr(self):
        """The stable address (device view); touch it only when acquired.
        Asked of libum once: it does not change for the region's life."""
        if self._ptr is None:
            out = ctypes.c_void_p()
            self.ctx._call("um_ptr", self.ctx._ctx("ptr"), self.handle,
                           ctypes.byref(out))
            self._ptr = out.value
        return self._ptr

    def acquire(self, tier=None, stream=None, timeout=None):
        """Make the bytes resident on tier (default: the device). stream:
        a torch.cuda.Stream or a raw cudaStream_t int (cuda only).
        timeout: seconds to wait for room that other threads' releases
        make (math.inf: no limit; None or 0: fail at once with ENOMEM);
        raises ETIMEDOUT when it runs out, EDEADLK when only this thread
        could make the room (um_acquire_timeout(3))."""
        stream = getattr(stream, "cuda_stream", stream)
        if stream is not None and not isinstance(stream, int):
            raise bad_type("stream", stream, "torch.cuda.Stream or int")
        args = (self.ctx._ctx("acquire"), self.handle, self._tier(tier),
                stream)
        wait_ns = _timeout_ns(timeout)
        if wait_ns is None:
            self.ctx._call("um_acquire", *args)
        else:
            self.ctx._call("um_acquire_timeout", *args, wait_ns)
        self.ctx.raw_stats()		# samples the peaks
        return self

    def release(self):
        self.ctx._call("um_release", self.ctx._ctx("release"), self.handle)

    def evict(self, tier="host"):
        """Move the (released) bytes to 'host' or 'disk' asynchronously."""
        self.ctx._call("um_evict", self.ctx._ctx("evict"), self.handle,
                       self._tier(tier))

    def wait(self):
        self.ctx._call("um_wait", self.ctx._ctx("wait"), self.handle)

    def info(self):
        """um_region_info as a dict (residency as a tier name)."""
        info = _lib.RegionInfo(size=ctypes.sizeof(_lib.RegionInfo))
        self.ctx._call("um_region_info", self.ctx._ctx("info"), self.handle,
                       ctypes.byref(info))
        return {"kind": self.kind, "priority": info.priority,
                "residency": tier_name(info.residency),
                "acquired": info.acquired, "pending": info.pending,
                "bytes": info.bytes, "name": info.name.decode()}

    def tensor(self, dtype, shape, offset=0):
        """A tensor of dtype and shape over the bytes at offset: on the
        CPU (sim backend) or on the GPU (cuda). Valid while acquired."""
        from . import views
        view = views.make(self, dtype, shape, offset)
        self._views.append(weakref.ref(view))
        return view

    def free(self):
        """Free the region; tensors from tensor() are emptied first. A
        second free raises UmError with rc -ENOENT (libum's answer)."""
        from . import views
        for ref in self._views:
            views.empty(ref())
        del self._views[:]
        self._storages.clear()
        self.ctx._call("um_free", self.ctx._ctx("free"), self.handle)
        self.freed = True
        self._finalizer.detach()
        if self.ctx._history is not None:
            self.ctx._history.free(self)

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _free_collected(ctx, handle, view_refs):
    """A Region's finalizer: free its handle if the context is open."""
    from . import views
    for ref in view_refs:
        views.empty(ref())
    if ctx._handle is not None:
        _lib.lib.um_free(ctx._handle, handle)
        if ctx._history is not None:
            ctx._history.free_handle(handle)
