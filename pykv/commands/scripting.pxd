# Types for the compiled scripting.py's hot path (EVAL/EVALSHA): the client, its server,
# the engine and the run context are C-level types, so their fields are struct accesses and
# the script cache lookup and Engine.run are C calls.
cimport cython

from pykv.scripting.engine cimport Engine, RunContext, engine_of, new_context
from pykv.server._core cimport ClientCore, ServerCore


@cython.locals(server=ServerCore, engine=Engine, ctx=RunContext, numkeys=Py_ssize_t,
               raw=bytes, entry=tuple)
cpdef _eval(ClientCore c, list argv, bint by_sha, bint read_only, bytes name)
