"""C's long long limits, which bound Redis's integer arguments, counters and timeouts."""

LLONG_MAX = (1 << 63) - 1
LLONG_MIN = -(1 << 63)
