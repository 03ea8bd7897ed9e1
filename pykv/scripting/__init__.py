"""Lua scripting (EVAL & co., SCRIPT, FUNCTION's running machinery) on lupa's Lua 5.1.

``prelude`` is the Lua side (sandbox, ``redis`` API, RESP conversions), ``libs`` the bundled
libraries Redis offers (cjson, cmsgpack, bit, struct) written in Python, ``engine`` the Lua
state, the script cache and how a script runs against the server (worker thread, BUSY,
SCRIPT KILL). The commands are in ``pykv.commands.scripting``.
"""
