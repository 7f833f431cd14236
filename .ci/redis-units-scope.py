#!/usr/bin/env python3
"""Prints the tests of Redis test units that revkv-server cannot run, one
per line (unit, test name, the commands and harness helpers that rule it
out): those that call a command revkv-server does not implement (lists,
sets, DEBUG, OBJECT, CONFIG, ...) or a helper of the harness that does.
Their names are what .ci/redis-units passes to --skiptest, for both servers.

usage: redis-units-scope.py REDIS_SRC UNIT...   (UNIT as unit/type/string)
"""
import re
import sys

# revkv-server's commands, and the words the harness's client takes that
# are not commands (read, channel...) or are meant to fail (foobaredcommand).
IMPLEMENTED = set("""append auth client command copy dbsize decr decrby del discard echo exec
exists expire expireat expiretime flushall flushdb get getdel getex getrange getset hello incr
incrby incrbyfloat info keys mget mset msetnx multi persist pexpire pexpireat pexpiretime ping
psetex pttl quit randomkey rename renamenx scan select set setex setnx setrange strlen substr time
ttl type unlink unwatch watch
read readraw close deferred write flush channel foobaredcommand""".split())

# Helpers of the harness that call what revkv-server does not have.
HELPERS = ["assert_encoding", "assert_refcount", "debug_sleep", "assert_replication_stream",
           "attach_to_replication_stream", "createComplexDataset", "csvdump", "r debug",
           "r object", "r config"]


def braced(text, i):
    """The end of the brace-balanced block starting at text[i] == '{'."""
    depth = 0
    while True:
        c = text[i]
        if c == '\\':
            i += 2
            continue
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                return i
        i += 1


def tests(text):
    """Each test's name and body."""
    for m in re.finditer(r'(?m)^\s*test\s+(\{|")', text):
        start = m.end() - 1
        if text[start] == '{':
            end = braced(text, start)
        else:
            end = text.index('"', start + 1)
        name = text[start + 1:end]
        body_start = text.index('{', end + 1)
        yield name, text[body_start:braced(text, body_start) + 1]


CALL = re.compile(r'(?:^|[\s\[{])(?:r|\$rd\d*|\$r\d*|\$rr|\$primary|\$replica|\$master|\$slave)'
                  r'\s+(?:-\d+\s+)?([A-Za-z.]+)')

src = sys.argv[1]
for unit in sys.argv[2:]:
    with open(f"{src}/tests/{unit}.tcl") as f:
        text = f.read()
    for name, body in tests(text):
        missing = sorted({c.lower() for c in CALL.findall(body)} - IMPLEMENTED)
        helpers = [h for h in HELPERS if h in body]
        if missing or helpers:
            print(f"{unit}\t{name}\t{' '.join(missing)}\t{' '.join(helpers)}")
