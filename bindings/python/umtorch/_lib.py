# SPDX-License-Identifier: MIT
"""ctypes declarations of libum (um.h) and libumtorch (umtorch.h).

Only what umtorch uses is declared. Every libum call releases the GIL
(ctypes.CDLL does), so libum's own threads can run Python callbacks.
"""

import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
# Looked for in order: $UMTORCH_LIBUM; in the source tree,
# bindings/python/umtorch -> libum/build; installed by make install,
# PREFIX/lib/pythonX.Y/dist-packages/umtorch -> PREFIX/lib; else (pip
# installs the package anywhere) the dynamic linker's search: ld.so.cache
# (/usr/lib, /usr/local/lib after ldconfig), LD_LIBRARY_PATH.
_TREE_LIBUM = os.path.join(_HERE, "..", "..", "..", "libum", "build")
_TREE_SHIM = os.path.join(_HERE, "..", "build")
_INSTALLED = os.path.join(_HERE, "..", "..", "..")


def _load(env, name, dirs):
    """Load name from $env, else the first of dirs holding it, else ld.so."""
    path = os.environ.get(env)
    if not path:
        found = [os.path.join(d, name) for d in dirs
                 if os.path.exists(os.path.join(d, name))]
        path = os.path.normpath(found[0]) if found else name
    try:
        # RTLD_GLOBAL: libumtorch.so (loaded by torch too) binds to this.
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
    except OSError as e:
        if path == name:	# nowhere: say where it was looked for
            raise ImportError(
                "umtorch needs %s, which is not in %s nor where the dynamic "
                "linker looks (%s): install um (make install, or the libum "
                "Debian package), or set %s to its path"
                % (name, " or ".join(os.path.normpath(d) for d in dirs),
                   e, env)) from e
        if "static TLS" not in str(e):
            raise
        # A libum.so from before libum/Makefile linked the CUDA runtime
        # shared: its static cudart's TLS cannot be placed by dlopen().
        raise ImportError("%s was built with the static CUDA runtime (%s); "
                          "rebuild it, or start python with LD_PRELOAD=%s"
                          % (path, e, path)) from e


u32, u64, i32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32
region_t = ctypes.c_uint64
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int,
                          ctypes.c_char_p)


class Config(ctypes.Structure):
    _fields_ = [("size", u32), ("backend", u32), ("device_budget", u64),
                ("sim_capacity", u64), ("pool_size", u64),
                ("pool_chunk", u64), ("chunk_bytes", u64),
                ("spill_dir", ctypes.c_char_p), ("log", LOG_FN),
                ("log_arg", ctypes.c_void_p), ("log_level", i32),
                ("flags", u32),
                # LIBUM_0.2 (um_config_init@@LIBUM_0.2, which dlsym finds);
                # a LIBUM_0.1 libum sets size to the 80 bytes before it
                ("host_budget", u64)]


class RegionDesc(ctypes.Structure):
    _fields_ = [("size", u32), ("kind", u32), ("priority", i32),
                ("backing", u32), ("flags", u32), ("device", u32),
                ("bytes", u64), ("name", ctypes.c_char_p)]


class RegionInfo(ctypes.Structure):
    _fields_ = [("size", u32), ("kind", u32), ("priority", i32),
                ("backing", u32), ("flags", u32), ("residency", u32),
                ("acquired", u32), ("pending", u32), ("bytes", u64),
                ("name", ctypes.c_char * 64)]


class Event(ctypes.Structure):
    _fields_ = [("size", u32), ("type", u32), ("region", region_t),
                ("from_", u32), ("to", u32), ("bytes", u64), ("error", i32),
                ("level", u32), ("ns", u64)]


class Counter(ctypes.Structure):
    _fields_ = [("current", u64), ("peak", u64), ("total", u64)]


MAX_DEVICES, MAX_NODES, KIND_COUNT, EVENT_COUNT = 8, 16, 5, 6


class Stats(ctypes.Structure):
    """struct um_stats, as far as umtorch reads it (libum takes a smaller
    size from older callers)."""
    _fields_ = [("size", u32), ("regions", u32),
                ("device", Counter * MAX_DEVICES),
                ("host", Counter * MAX_NODES), ("host_total", Counter),
                ("spill", Counter), ("kind", Counter * KIND_COUNT),
                ("budget", u64 * MAX_DEVICES), ("migrations", u64),
                ("migrated_bytes", u64), ("migration_ns", u64),
                ("evict_count", u64), ("evict_bytes", u64),
                ("restore_count", u64), ("restore_bytes", u64),
                ("evict_ns", u64), ("restore_ns", u64), ("nomem", u64),
                ("events", u64 * EVENT_COUNT)]


EVENT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Event))

_P = ctypes.c_void_p
_SIGNATURES = {
    "um_config_init": (None, [ctypes.POINTER(Config)]),
    "um_context_create": (ctypes.c_int, [ctypes.POINTER(Config),
                                         ctypes.POINTER(_P)]),
    "um_context_destroy": (ctypes.c_int, [_P]),
    "um_context_backend": (ctypes.c_int, [_P]),
    "um_alloc": (ctypes.c_int, [_P, ctypes.POINTER(RegionDesc),
                                ctypes.POINTER(region_t)]),
    "um_free": (ctypes.c_int, [_P, region_t]),
    "um_ptr": (ctypes.c_int, [_P, region_t, ctypes.POINTER(_P)]),
    "um_acquire": (ctypes.c_int, [_P, region_t, u32, _P]),
    "um_acquire_timeout": (ctypes.c_int, [_P, region_t, u32, _P, u64]),
    "um_release": (ctypes.c_int, [_P, region_t]),
    "um_evict": (ctypes.c_int, [_P, region_t, u32]),
    "um_wait": (ctypes.c_int, [_P, region_t]),
    "um_wait_all": (ctypes.c_int, [_P]),
    "um_region_info": (ctypes.c_int, [_P, region_t,
                                      ctypes.POINTER(RegionInfo)]),
    "um_budget_set": (ctypes.c_int, [_P, ctypes.c_uint, u64]),
    "um_budget_get": (ctypes.c_int, [_P, ctypes.c_uint,
                                     ctypes.POINTER(u64)]),
    "um_shed": (ctypes.c_int64, [_P, u32, u64, u32]),
    "um_set_event_callback": (ctypes.c_int, [_P, EVENT_FN, _P]),
    "um_stats_get": (ctypes.c_int, [_P, ctypes.POINTER(Stats)]),
    "um_stats_json": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "um_tier_name": (ctypes.c_int, [u32, ctypes.c_char_p, ctypes.c_size_t]),
}

_SHIM_SIGNATURES = {
    "um_torch_malloc": (_P, [ctypes.c_ssize_t, ctypes.c_int, _P]),
    "um_torch_free": (None, [_P, ctypes.c_ssize_t, ctypes.c_int, _P]),
    "um_torch_attach": (ctypes.c_int, [_P]),
    "um_torch_detach": (ctypes.c_int, []),
    "um_torch_last_error": (ctypes.c_int, []),
    "um_torch_error_count": (u64, []),
    "um_torch_live": (ctypes.c_int64, []),
}


def _declare(lib, table):
    for name, (res, args) in table.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


lib, LIBUM_PATH = _load("UMTORCH_LIBUM", "libum.so.0",
                        [_TREE_LIBUM, _INSTALLED])
_declare(lib, _SIGNATURES)

_shim = None
SHIM_PATH = None


def shim():
    """libumtorch.so, loaded on first use (only the allocator needs it)."""
    global _shim, SHIM_PATH
    if _shim is None:
        # installed inside the package (a private library), else the tree's
        _shim, SHIM_PATH = _load("UMTORCH_SHIM", "libumtorch.so",
                                 [_HERE, _TREE_SHIM])
        _declare(_shim, _SHIM_SIGNATURES)
    return _shim


# um.h constants
TIER_DEVICE, TIER_HOST, TIER_SPILL = 1, 2, 3


def tier(kind, ident=0):
    return (kind << 16) | (ident & 0xFFFF)


TIER_NONE = 0
TIER_HOST_ANY = tier(TIER_HOST, 0xFFFF)
TIER_DISK = tier(TIER_SPILL, 0)
BACKENDS = {"auto": 0, "sim": 1, "cuda": 2}
KINDS = {"generic": 0, "optimizer_state": 1, "param": 2, "grad": 3,
         "activation": 4}
EVENTS = {1: "migrated", 2: "evicted", 3: "pressure", 4: "nomem",
          5: "error"}
LOG_LEVELS = {"err": 3, "warn": 4, "info": 6, "debug": 7}
