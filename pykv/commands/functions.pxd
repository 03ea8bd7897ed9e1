# Types for the compiled functions.py's hot path (FCALL): the client, its server, the
# engine and the run context are C-level types, so their fields are struct accesses and
# Engine.run is a C call.
cimport cython

from pykv.scripting.engine cimport (Engine, FunctionCore, RunContext, function_engine_of,
                                    new_context)
from pykv.server._core cimport ClientCore, ServerCore


@cython.locals(server=ServerCore, engine=Engine, ctx=RunContext, numkeys=Py_ssize_t,
               raw=bytes, no_writes=bint, clustered=bint, functions=dict,
               fn=FunctionCore)
cpdef _fcall(ClientCore c, list argv, bint read_only_cmd)
