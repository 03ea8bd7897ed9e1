# The counter arithmetic's C interface, for the compiled strings.py (see _counter.pyx).
cpdef bytes counter_add(object value, long long delta)
cpdef int write_integer(bytearray out, bytes digits) except -1
