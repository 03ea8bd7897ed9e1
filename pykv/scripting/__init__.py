"""Lua scripting (EVAL & co., SCRIPT, FUNCTION's running machinery) on lupa's Lua 5.1.

``prelude`` is the Lua side (Redis 7.0's sandboxes for EVAL and FCALL, the ``redis`` API,
Redis's error handler, RESP conversions), ``engine`` the Lua state, the script cache and how
a script runs against the server (BUSY, SCRIPT KILL), ``redis_api`` the argument rules of
the ``redis.*`` C functions, ``_luacall`` (compiled) ``redis.call``/``redis.pcall`` and
EVAL's run as Lua C functions over lupa's own Lua C API (without it, both stay Python
callables behind lupa, with the same replies). The bundled libraries are Python: ``libs`` (bit, struct, and
``Libraries``, which assembles them), ``lua_cjson``, ``lua_cmsgpack``, ``libbase`` (their
shared error and argument helpers). The commands are in ``pykv.commands.scripting``.

Known differences from Redis 7.0 (Lua 5.1 as lupa ships it cannot be patched as Redis
patches its own):

* a number crossing from Lua into Python loses the sign of -0 (``redis.call('echo', -0)``
  sends ``0``; ``cjson.encode(-0)`` gives ``0``; decoding keeps it);
* the builtins the sandbox wraps (``pairs``, ``next``, ``rawget``, ``rawset``,
  ``setmetatable``, ``getmetatable``, ``type``, ``tostring``, ``load``, ``loadstring``,
  ``xpcall``, ``table.insert/remove/sort``) are Lua functions: when a script tail-calls one
  (``return pairs()``) and it raises, Lua has dropped the script's frame, so the error has
  no ``user_script:N:`` position;
* library functions are Python objects to Lua: ``type``, ``tostring`` and ``getmetatable``
  show them as Redis's C functions, but other operators name them ``userdata`` in their
  errors (``attempt to concatenate a userdata value``);
* ``error({1})`` (an error table without a string ``err``) crashes Redis 7.0.15; pykv
  replies ``ERR unknown error``;
* while a script is busy, clients are answered (``-BUSY``, ``SCRIPT KILL``) and new
  connections accepted on every transport as in Redis, except RDMA ones, which are
  accepted once the script ends (their connection manager events are the loop's;
  ``pykv.net.busy``).
"""
