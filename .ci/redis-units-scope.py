#!/usr/bin/env python3
"""Prints the tests of Redis test units that revkv-server cannot run, one
per line (unit, test name, the commands and harness helpers that rule it
out): those that call a command outside the scope (DEBUG, OBJECT, CONFIG,
streams, ...) or a helper of the harness that does.
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
hset hsetnx hget hmset hmget hdel hlen hstrlen hexists hkeys hvals hgetall hincrby hincrbyfloat
hscan hrandfield lpush rpush lpushx rpushx lpop rpop llen lindex lset lrange ltrim lrem linsert
lpos lmove rpoplpush blpop brpop blmove brpoplpush lmpop blmpop sadd srem smembers sismember
smismember scard spop srandmember smove sinter sinterstore sintercard sunion sunionstore sdiff
sdiffstore sscan zadd zincrby zrem zcard zscore zmscore zcount zlexcount zrange zrangestore
zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrevrange zrank zrevrank
zremrangebyscore zremrangebyrank zremrangebylex zpopmin zpopmax bzpopmin bzpopmax zmpop bzmpop
zunion zunionstore zinter zinterstore zintercard zdiff zdiffstore zrandmember zscan subscribe
unsubscribe psubscribe punsubscribe publish pubsub
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

def pattern(name):
    """The name as --skiptest takes it: itself, or, for a name made at run
    time ($encoding, [cmd]), a /regexp with each substitution any text."""
    if '$' not in name and '[' not in name:
        return name
    parts = re.split(r'\$\{?[A-Za-z_:]+\}?|\[[^\]]*\]', name)
    return '/^' + '.*'.join(re.escape(p) for p in parts) + '$'


src = sys.argv[1]
for unit in sys.argv[2:]:
    with open(f"{src}/tests/{unit}.tcl") as f:
        text = f.read()
    for name, body in tests(text):
        missing = sorted({c.lower() for c in CALL.findall(body)} - IMPLEMENTED)
        helpers = [h for h in HELPERS if h in body]
        if missing or helpers:
            print(f"{unit}\t{pattern(name)}\t{' '.join(missing)}\t{' '.join(helpers)}")
