# INCR's counter arithmetic as a C call, for the compiled strings.py (see _counter.pyx).
cpdef bytes counter_add(object value, long long delta)
