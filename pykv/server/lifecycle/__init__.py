"""How the server process lives and dies, one small module per job, as redis-server does it.

``redislog`` the log format, logfile and syslog; ``banner`` the start-up lines, logo and
system warnings; ``daemon`` daemonize and the pidfile; ``supervision`` systemd/upstart
notifications; ``proctitle`` the process title; ``oom`` ``oom-score-adj``; ``signals``
SIGTERM/SIGINT/SIGHUP and ``shutdown-on-sig*``; ``crash`` the crash report.
"""
