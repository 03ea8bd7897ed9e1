# Augments pykv/scripting/engine.py when Cython compiles it: the engine and the run context
# become extension types, so the per-script bookkeeping (EVALSHA's hot path) reads and
# writes C fields instead of instance dictionaries. Uncompiled, the .py runs as it is.
cimport cython

from pykv.server._core cimport ClientCore, CommandCore, ServerCore

cpdef tuple reply_to_lua(object reply, int lua_resp)


cdef class RunContext:
    cdef public object caller, name, command, busy_error, argv
    cdef public bint read_only, is_function, wrote, killed, drop_reply, may_yield
    cdef public int lua_resp, slot
    cdef public double start


cdef class FunctionCore:
    cdef public object name, flags
    cdef public Py_ssize_t slot
    cdef public bint no_writes


cdef class Engine:
    cdef public object server, lua, api, _api_run, _api_run_callback, _api_resp_to_lua
    cdef public dict scripts, _commands
    cdef public object client, ctx, _poller, _saved_signals, libraries
    cdef public object _c_binding, _c_scripts, _c_run, _c_functions, _c_run_function
    cdef public list _slots_free
    cdef object _last_name
    cdef object _last_cmd
    cdef public dict function_table
    cdef public object last_sha
    cdef public tuple last_script
    cdef object _user_of
    cdef list _captured
    cdef public Py_ssize_t _slots_used

    # redis.call's path: C calls between its steps (each Python call level showed in
    # EVALSHA's cost)
    cpdef tuple _lua_call(self, tuple args)
    @cython.locals(caller=ClientCore, client=ClientCore, server=ServerCore,
                   function=FunctionCore, slot=Py_ssize_t)
    cpdef run(self, RunContext ctx, fn, Py_ssize_t nkeys, list params, bint as_callback=*)
    cpdef tuple _execute(self, RunContext ctx, list argv)
    @cython.locals(caller=ClientCore, client=ClientCore, server=ServerCore, cmd=CommandCore,
                   captured=list, cached=bint)
    cpdef tuple _run_command(self, RunContext ctx, list argv)
    cdef object __weakref__  # pykv.scripting._luacall's closures refer to it weakly


cdef void _init_context(RunContext ctx, object caller, object name, bint read_only,
                        bint is_function, object command)
@cython.locals(ctx=RunContext)
cpdef RunContext new_context(object caller, object name, bint read_only, bint is_function,
                             object command)
@cython.locals(engine=Engine)
cpdef Engine engine_of(object server)
@cython.locals(engine=Engine)
cpdef Engine function_engine_of(object server)
