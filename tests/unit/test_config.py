"""Unit tests for the config system: value types, the table, CONFIG SET atomicity, the
start-up loader (command line + file) and the CONFIG REWRITE algorithm. Pure logic, no
servers; the facts checked here were taken from redis-server 7.0.15."""
from __future__ import annotations

import os

import pytest

from pykv.config import Config, ConfigError, ConfigSetError, parse_value
from pykv.config.loader import CommandLine, ConfigLoadError, load_config
from pykv.config.rewrite import SIGNATURE, rewrite_config
from pykv.config.table import BY_NAME, ENTRIES
from pykv.config.values import format_memory_rewrite, parse_memory, quote_repr, string2ll


def parse(name: str, *args: str):
    return parse_value(BY_NAME[name], list(args))


def reason(name: str, *args: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse(name, *args)
    return str(info.value)


# -- value types ---------------------------------------------------------------------------
@pytest.mark.parametrize("text,value", [
    ("0", 0), ("1", 1), ("1k", 1000), ("1kb", 1024), ("2M", 2_000_000), ("2mb", 2 << 20),
    ("1g", 10 ** 9), ("1GB", 1 << 30), ("", 0), ("b", 0), ("7B", 7),
])
def test_memory_units(text, value):
    assert parse_memory(text) == value


@pytest.mark.parametrize("text", ["-1", " 5", "1.5gb", "1tb", "5 kb", "x"])
def test_memory_rejects(text):
    assert parse_memory(text) is None


def test_memory_wraps_like_c():
    assert parse_memory("18446744073709551616") == (1 << 64) - 1  # strtoull saturates
    assert parse_memory("17179869184gb") == 0  # 2**34 * 2**30 wraps to 0


@pytest.mark.parametrize("text,value", [("0", 0), ("-5", -5), ("123", 123)])
def test_string2ll_accepts(text, value):
    assert string2ll(text) == value


@pytest.mark.parametrize("text", ["+5", " 5", "05", "-0", "5k", "", "-", "9223372036854775808"])
def test_string2ll_rejects(text):
    assert string2ll(text) is None


def test_int_errors_and_bounds():
    assert parse("hz", "20") == 20
    assert reason("hz", "5k") == "argument couldn't be parsed into an integer"
    assert reason("timeout", "-1") == "argument must be between 0 and 2147483647 inclusive"
    assert reason("maxclients", "0") == "argument must be between 1 and 4294967295 inclusive"


def test_hz_is_clamped():
    assert parse("hz", "1000") == 500
    assert parse("hz", "0") == 1


def test_memory_entries():
    assert parse("maxmemory", "1gb") == 1 << 30
    assert reason("maxmemory", "1.5gb") == "argument must be a memory value"
    assert reason("proto-max-bulk-len", "1") == (
        "argument must be between 1048576 and 9223372036854775807 inclusive")
    assert parse("hash-max-listpack-value", "5k") == 5000


def test_percent_memory():
    assert parse("maxmemory-clients", "10%") == -10
    assert Config().matching(["maxmemory-clients"]) == {"maxmemory-clients": "0"}
    assert reason("maxmemory-clients", "101%") == "percentage argument must be less or equal to 100"
    assert reason("maxmemory-clients", "x%") == "argument must be a memory or percent value"


def test_octal():
    assert parse("unixsocketperm", "700") == 0o700
    assert reason("unixsocketperm", "999") == "argument couldn't be parsed as an octal number"
    assert reason("unixsocketperm", "1000") == "argument must be between 0 and 777 inclusive"


def test_bool_and_enum():
    assert parse("protected-mode", "YES") is True
    assert reason("protected-mode", "1") == "argument must be 'yes' or 'no'"
    assert parse("loglevel", "WARNING") == "warning"
    assert reason("loglevel", "nothing") == (
        "argument(s) must be one of the following: debug, verbose, notice, warning")
    assert parse("oom-score-adj", "relative") == "yes"  # the same value in Redis
    assert reason("activedefrag", "yes").startswith("Active defragmentation cannot be enabled")


def test_special_types():
    assert parse("save", "900", "1", "300", "10") == [(900, 1), (300, 10)]
    assert parse("save", "") == []
    for bad in (["100"], ["0", "1"], ["1", "-1"], ["10", "x"]):
        assert reason("save", *bad) == "Invalid save parameters"
    limits = parse("client-output-buffer-limit", "normal", "1mb", "2mb", "3")
    assert limits["normal"] == (1 << 20, 2 << 20, 3)
    assert limits["pubsub"] == (32 << 20, 8 << 20, 60)
    assert reason("client-output-buffer-limit", "master", "1", "1", "1") == (
        "Invalid client class specified in buffer limit configuration.")
    assert reason("client-output-buffer-limit", "normal", "1") == (
        "Wrong number of arguments in buffer limit configuration.")
    assert parse("shutdown-on-sigint", "default", "now") == ("now",)
    assert reason("shutdown-on-sigint", "save", "nosave") == (
        "shutdown options SAVE and NOSAVE can't be used simultaneously")
    assert parse("notify-keyspace-events", "KEA") == "AKE"
    assert parse("notify-keyspace-events", "Kgx") == "gxK"
    assert reason("notify-keyspace-events", "Q") == (
        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    assert reason("dbfilename", "a/b") == "dbfilename can't be a path, just a filename"
    assert reason("bind", *["127.0.0.1"] * 17) == "Too many bind addresses specified."


def test_quote_repr():
    assert quote_repr('a"b\\c') == '"a\\"b\\\\c"'
    assert quote_repr("é\n") == '"\\xc3\\xa9\\n"'


def test_format_memory_rewrite():
    assert [format_memory_rewrite(v) for v in (0, 1024, 3 << 20, 1 << 30, 1000)] == [
        "0", "1kb", "3mb", "1gb", "1000"]


def test_table_names_unique_and_defaults_format():
    seen = set()
    config = Config()
    for entry in ENTRIES:
        for name in (entry.name, *entry.aliases):
            assert name not in seen
            seen.add(name)
        config.get_text(entry.name)  # every default formats
    assert config.get_text("client-output-buffer-limit") == (
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
    assert config.get_text("save") == "3600 1 300 100 60 10000"
    assert config.get_text("bind") == "127.0.0.1 -::1"
    assert config.get_text("latency-tracking-info-percentiles") == "50 99 99.9"


# -- CONFIG GET matching and CONFIG SET ----------------------------------------------------
def test_matching():
    config = Config()
    assert config.matching(["PORT"]) == {"PORT": "6379"}
    assert config.matching(["port", "PORT", "po*"]) == {"port": "6379"}
    assert set(config.matching(["*slave-read*"])) == {"slave-read-only"}
    assert config.matching(["key-load-delay"]) == {"key-load-delay": "0"}  # hidden: exact only
    assert config.matching(["key-load*"]) == {}
    assert config.matching(["nonexistent"]) == {}


def set_error(config: Config, *pairs: str) -> str:
    with pytest.raises(ConfigSetError) as info:
        config.set_many(list(zip(pairs[::2], pairs[1::2], strict=True)))
    return str(info.value)


def test_set_many_first_error_wins():
    config = Config()
    assert set_error(config, "unknown-x", "1", "port", "1") == (
        "ERR Unknown option or number of arguments for CONFIG SET - 'unknown-x'")
    assert set_error(config, "daemonize", "yes", "unknown", "1") == (
        "ERR CONFIG SET failed (possibly related to argument 'daemonize') - "
        "can't set immutable config")
    assert set_error(config, "port", "1", "PORT", "2") == (
        "ERR CONFIG SET failed (possibly related to argument 'PORT') - duplicate parameter")
    assert set_error(config, "dir", "/tmp") == (
        "ERR CONFIG SET failed (possibly related to argument 'dir') - "
        "can't set protected config")
    # a parse failure names the canonical option
    assert set_error(config, "HZ", "x") == (
        "ERR CONFIG SET failed (possibly related to argument 'hz') - "
        "argument couldn't be parsed into an integer")


def test_set_many_is_atomic():
    config = Config()
    set_error(config, "hz", "20", "maxmemory", "5mb", "maxmemory-policy", "bad")
    assert (config.hz, config.maxmemory, config.maxmemory_policy) == (10, 0, "noeviction")
    config.set_many([("hz", "20"), ("maxmemory", "5mb")])
    assert (config.hz, config.maxmemory) == (20, 5 << 20)


def test_failed_hook_rolls_back_and_reapplies():
    config = Config()
    applied = []

    def bind_hook(value):
        if value == ["bad"]:
            raise ConfigError("Failed to bind to specified addresses.")
        applied.append(value)

    config.on_change("bind", bind_hook)
    config.on_change("timeout", applied.append)
    assert set_error(config, "timeout", "5", "bind", "bad") == (
        "ERR CONFIG SET failed (possibly related to argument 'bind') - "
        "Failed to bind to specified addresses.")
    assert config.timeout == 0 and config.bind == ["127.0.0.1", "-::1"]
    # timeout applied; then both re-applied with the old values, as Redis re-runs them all
    assert applied == [5, 0, ["127.0.0.1", "-::1"]]


def test_hooks_run_only_on_change():
    config = Config()
    seen = []
    config.on_change("lua-time-limit", seen.append)  # aliases name the same entry
    config.set_many([("busy-reply-threshold", "5000")])
    config.set_many([("busy-reply-threshold", "7")])
    assert seen == [7]


def test_config_set_splits_multi_values_on_spaces():
    config = Config()
    config.set_many([("save", "10 1 20 2"), ("bind", "127.0.0.1 ::1")])
    assert config.save == [(10, 1), (20, 2)]
    assert config.bind == ["127.0.0.1", "::1"]
    config.set_many([("bind", "")])
    assert config.bind == []


# -- the command line and the file -------------------------------------------------------
def test_command_line_to_config_text():
    assert CommandLine(["--port", "7000", "--bind", "a", "b"]).options == (
        'port "7000" \nbind "a" "b" ')
    assert CommandLine(["--save", "--port", "1"]).options == 'save ""\nport "1" '
    assert CommandLine(["--port", "--bind", "x"]).options == 'port "--bind" "x" '
    line = CommandLine(["/etc/x.conf", "--hz", "5", "-"])
    assert (line.config_file, line.from_stdin) == ("/etc/x.conf", True)


def load_error(argv, **kw) -> str:
    with pytest.raises(ConfigLoadError) as info:
        load_config(argv, **kw)
    return str(info.value)


def test_load_errors_match_redis():
    assert load_error(["--port", "abc"]) == (
        "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n"
        "Reading the configuration file, at line 2\n"
        ">>> 'port \"abc\"'\nargument couldn't be parsed into an integer\n")
    assert "at line 2\n>>> 'foo \"bar\"'\nBad directive or wrong number of arguments\n" in \
        load_error(["--foo", "bar"])
    assert ">>> 'port \"1\" \"2\"'\nwrong number of arguments\n" in load_error(
        ["--port", "1", "2"])
    assert "at line 3\n>>> 'port \"x\"'" in load_error(["--save", "--port", "x"])
    assert "Can't open the log file: No such file or directory" in load_error(
        ["--logfile", "/nonexistent/dir/x.log"])
    assert ">>> 'dir \"/nonexistent/dir\"'\nNo such file or directory" in load_error(
        ["--dir", "/nonexistent/dir"])


def test_file_plus_arguments(tmp_path):
    conf = tmp_path / "pykv.conf"
    conf.write_text('# comment\nport 7001\n\nsave 900 1\nsave 300 10\nrequirepass "a b"\n'
                    "bind 127.0.0.1 ::1\nlist-max-ziplist-entries 5\n")
    config = load_config([str(conf), "--port", "7002", "--hz", "20"])
    assert config.port == 7002 and config.hz == 20
    assert config.save == [(900, 1), (300, 10)]
    assert config.requirepass == "a b"
    assert config.bind == ["127.0.0.1", "::1"]
    assert config.config_file == str(conf)
    assert load_config([str(conf), "--save", ""]).save == []


def test_file_errors_have_line_numbers(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text('port 7000\n\n# c\nbind "127.0.0.1\nhz 5\n')
    assert "at line 4\n>>> 'bind \"127.0.0.1'\nUnbalanced quotes in configuration line\n" in \
        load_error([str(conf)])
    missing = str(tmp_path / "missing.conf")
    err = load_error([missing])
    assert err == f"Fatal error, can't open config file '{missing}': No such file or directory"


def test_include_and_stdin(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "a.conf").write_text("hz 11\n")
    (tmp_path / "conf.d" / "b.conf").write_text("maxclients 77\n")
    main = tmp_path / "main.conf"
    main.write_text(f"include {tmp_path}/conf.d/*.conf\ntimeout 3\n")
    config = load_config([str(main), "-"], stdin_text=lambda: "tcp-keepalive 9\n")
    assert (config.hz, config.maxclients, config.timeout, config.tcp_keepalive) == (
        11, 77, 3, 9)


def test_listener_directive():
    config = load_config(["--listener", "tcp,bind=127.0.0.1,port=7000",
                          "--listener", "unix,path=/tmp/x.sock,perm=700"])
    assert config.listeners == ["tcp,bind=127.0.0.1,port=7000", "unix,path=/tmp/x.sock,perm=700"]
    assert "port 'x' is not a number" in load_error(["--listener", "tcp,port=x"])


# -- CONFIG REWRITE ------------------------------------------------------------------------
def test_rewrite_keeps_layout(tmp_path):
    conf = tmp_path / "r.conf"
    conf.write_text("# top\nport 7003\nsave 900 1\nsave 300 10\nslave-read-only yes\n\n"
                    "# another\nhz 20\n\n\n\nmaxmemory 100mb\nlist-max-ziplist-entries 5\n")
    config = load_config([str(conf)])
    config.dir = str(tmp_path)
    config.set_many([("hz", "30"), ("save", "60 5"), ("replica-read-only", "no"),
                     ("timeout", "7"), ("maxmemory", "3mb"), ("notify-keyspace-events", "KEA")])
    rewrite_config(config)
    lines = conf.read_text().split("\n")
    assert lines[:12] == [
        "# top", "port 7003", "save 60 5", "", "replica-read-only no", "", "# another",
        "hz 30", "", "maxmemory 3mb", "# ??? list-max-ziplist-entries 5", ""]
    assert lines[12] == SIGNATURE
    appended = set(lines[13:])
    assert {"timeout 7", 'notify-keyspace-events "AKE"', f'dir "{tmp_path}"',
            "latency-tracking-info-percentiles 50 99 99.9",
            "user default on nopass ~* &* +@all"} <= appended
    assert not any(line.startswith("port") for line in lines[13:])
    # the rewritten file loads back to the same values
    again = load_config([str(conf)])
    assert (again.hz, again.save, again.timeout, again.maxmemory) == (30, [(60, 5)], 7, 3 << 20)
    assert oct(os.stat(conf).st_mode & 0o777) == oct(0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_loglevel_change_reaches_the_logger():
    import logging

    from pykv.main import VERBOSE, setup_logging

    config = Config()
    setup_logging(config)
    logger = logging.getLogger("pykv")
    assert logger.level == logging.INFO  # notice
    config.set_many([("loglevel", "verbose")])
    assert logger.level == VERBOSE
    config.set_many([("loglevel", "warning")])
    assert logger.level == logging.WARNING
