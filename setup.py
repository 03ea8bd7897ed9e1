"""Builds pykv's compiled hot paths with Cython.

Two kinds of extension modules:

* ``.pyx`` modules written for C speed: the RESP request parser and reply writer, the RDB
  codecs (CRC-64, LZF), long-double arithmetic, HyperLogLog registers, the RDMA transport's
  per-request path (windows, session, endpoint, the software fabric);
* plain ``.py`` modules on the per-command path (the dispatcher, the keyspace, the busiest
  command families), compiled as they are. Their ``.py`` file stays the source of truth and
  runs unchanged without a compiler; after editing one, rebuild with
  ``python setup.py build_ext --inplace`` (``tests/integration/test_compiled.py`` fails when
  a compiled module is older than its source).
"""
import os
import shutil
import subprocess

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PYX_MODULES = [
    "pykv/protocol/_parser.pyx",
    "pykv/protocol/_writer.pyx",
    "pykv/storage/rdb/_codec.pyx",
    "pykv/storage/rdb/_rio.pyx",
    "pykv/storage/rdb/_load.pyx",
    "pykv/storage/_numeric.pyx",
    "pykv/storage/_hll.pyx",
    "pykv/util/_byteio.pyx",  # the C hand-offs between a transport and its client
    "pykv/net/_readmux.pyx",  # client sockets read from C (one epoll set per loop)
    "pykv/net/_sockopt.pyx",  # socket options of every accepted connection
    "pykv/server/_core.pyx",
    "pykv/storage/_aof_feed.pyx",  # the AOF buffer the dispatcher feeds
    "pykv/storage/_listpack.pyx",  # small hashes/zsets packed in one buffer
    "pykv/storage/_stream.pyx",  # stream nodes: one listpack buffer each
    "pykv/storage/_scorelist.pyx",  # a big zset's (score, member) order in C blocks
    "pykv/storage/_intset.pyx",  # sets of integers packed as Redis's intset
    "pykv/storage/_keytable.pyx",  # the keyspace's table: key, value, access clock, memory
    "pykv/storage/_fieldtable.pyx",  # big hashes: one blob per field, no object per field
    "pykv/commands/_counter.pyx",  # INCR/DECR arithmetic on the stored decimal
    "pykv/scripting/_luacall.pyx",  # redis.call/pcall as Lua C functions
    # the RDMA transport's per-request path: windows, session, CQ handler, software fabric
    "pykv/rdma/cverbs.pyx",
    "pykv/rdma/window.pyx",
    "pykv/rdma/session.pyx",
    "pykv/rdma/endpoint.pyx",
    "pykv/rdma/softfabric.pyx",
]

# measured: compiling these cuts the instructions per GET/SET (bench/README.md)
COMPILED_PY_MODULES = [
    "pykv/storage/keyspace.py",
    "pykv/commands/strings.py",
    "pykv/commands/connection.py",  # PING: the ping_inline/ping_mbulk benchmarks' handler
    "pykv/commands/lists.py",
    "pykv/commands/hashes.py",
    "pykv/commands/sets.py",
    "pykv/commands/zsets.py",
    "pykv/storage/list_type.py",
    "pykv/storage/hash_type.py",
    "pykv/storage/set_type.py",
    "pykv/storage/zset_type.py",
    "pykv/storage/rdb/file.py",
    "pykv/storage/rdb/objects.py",
    "pykv/storage/value_types.py",
    "pykv/storage/memory.py",
    "pykv/storage/aof.py",
    "pykv/commands/streams.py",
    "pykv/storage/stream_type.py",
    "pykv/scripting/engine.py",
    "pykv/commands/scripting.py",
    "pykv/commands/functions.py",  # FCALL
    "pykv/server/pubsub.py",
    "pykv/replication/feed.py",  # encodes every write for the replicas
    "pykv/server/watch.py",  # Database.signal_modified: called on every write
    "pykv/commands/transactions.py",  # MULTI and EXEC of every transaction
    # the RDMA control messages, Python client and connection type (per-request work: .pyx)
    "pykv/rdma/messages.py",
    "pykv/rdma/client.py",
    "pykv/net/rdma.py",
]


class BuildExt(build_ext):
    """Extensions built for a wheel or an install lose their debug information (``-g``
    makes them about five times larger: ~40 MB against ~8 MB); in-place development
    builds keep it for gdb."""

    def run(self) -> None:
        super().run()
        strip = shutil.which("strip")
        if self.inplace or strip is None:
            return
        for ext in self.extensions:
            path = self.get_ext_fullpath(ext.name)
            if os.path.exists(path):
                subprocess.run([strip, "--strip-debug", path], check=False)


def _extension(path: str, **kwargs) -> Extension:
    name = path.rsplit(".", 1)[0].replace("/", ".")
    return Extension(name, [path], **kwargs)


def _have_headers(*headers: str) -> bool:
    """Whether every header is in a standard include directory (or CPATH/C_INCLUDE_PATH)."""
    dirs = ["/usr/include", "/usr/local/include"]
    for var in ("CPATH", "C_INCLUDE_PATH"):
        dirs += [d for d in os.environ.get(var, "").split(":") if d]
    return all(any(os.path.exists(os.path.join(d, h)) for d in dirs) for h in headers)


# the compiled RDMA backend on libibverbs/librdmacm: optional, built only when rdma-core's
# headers are present (Debian: libibverbs-dev librdmacm-dev); without it pykv uses pyverbs
# or the software fabric. PYKV_NO_IBVERBS=1 skips it.
RDMA_EXTENSIONS = []
if _have_headers("infiniband/verbs.h", "rdma/rdma_cma.h") \
        and not os.environ.get("PYKV_NO_IBVERBS"):
    RDMA_EXTENSIONS.append(_extension("pykv/rdma/ibverbs.pyx",
                                      libraries=["ibverbs", "rdmacm"]))


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=cythonize(
        [_extension(p) for p in PYX_MODULES] + RDMA_EXTENSIONS,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    ) + cythonize(
        [_extension(p) for p in COMPILED_PY_MODULES],
        language_level=3,
        # plain Python semantics: annotations stay documentation, integers stay unbounded
        compiler_directives={"annotation_typing": False, "binding": True},
    )
)
