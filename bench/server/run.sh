#!/usr/bin/env bash
# revkv-server beside redis-server under redis-benchmark, on this machine,
# one after the other, test by test: in memory at -P 1 and -P 16, then
# durable (revkv --sync always against Redis appendfsync always) with SET
# at -P 1 and -P 16. Prints redis-benchmark's CSV, each line prefixed by
# the server and the mode: ops/s and latency percentiles.
#
#   bench/server/run.sh [requests]     (default 1000000)
#
# PIN=1 runs each server on core 0 (taskset -c 0) and redis-benchmark on
# core 1, the fair comparison with a single-threaded Redis on a 2-core
# machine; unpinned otherwise. TESTS overrides the in-memory tests
# (redis-benchmark -t), the issue's list by default. Durable runs use a
# twentieth of the requests. Last, memory: 1 M SETs of 16-byte values
# over a million random keys, then each server's used_memory (INFO) and
# resident set, in bytes: revkv-server with all history and with
# --max-history 1. bench/server/ratio.py turns the CSV into a table of
# revkv's rate over Redis's. REVKV_BIN runs a revkv-server built
# elsewhere (another commit's, for a before and after) instead of this
# tree's. PIPELINES overrides the in-memory depths ("1 16"). PROFILE=DIR
# has revkv-server write a CPU and an allocation profile of each run into
# DIR (TEST-PN.cpu and TEST-PN.mem; durable-set-PN.*), for go tool pprof.
set -euo pipefail
if [ -n "${PROFILE:-}" ]; then
  PROFILE=$(realpath -m "$PROFILE") # from where the script was run, before the cd
fi
cd "$(dirname "$0")/../.."
n=${1:-1000000}
tests=${TESTS:-set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset}
srv=() cli=()
if [ "${PIN:-0}" = 1 ]; then
  srv=(taskset -c 0) cli=(taskset -c 1)
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -n "${REVKV_BIN:-}" ]; then
  cp "$REVKV_BIN" "$work/revkv-server"
else
  go build -o "$work/revkv-server" ./cmd/revkv-server
fi
# wait_up PORT PID: the server we started answers (not another one on the port).
wait_up() {
  for _ in $(seq 200); do
    kill -0 "$2" 2>/dev/null || { echo "the server on port $1 exited"; exit 1; }
    redis-cli -p "$1" ping >/dev/null 2>&1 && return
    sleep 0.05
  done
  echo "port $1 did not answer"; exit 1
}
for port in 6391 6392; do
  if redis-cli -p $port ping >/dev/null 2>&1; then echo "port $port is taken"; exit 1; fi
done
bench() { # bench NAME PORT ARGS...
  local name=$1 port=$2; shift 2
  "${cli[@]}" redis-benchmark -p "$port" -r 100000 -c 50 "$@" --csv | sed "s/^/$name,/" | grep -v '^'"$name"',"test"'
}
run() { # run LABEL REVKV-FLAGS -- REDIS-FLAGS -- BENCH-ARGS: each server afresh
  local label=$1; shift
  local rflags=() sflags=() bargs=()
  while [ "$1" != -- ]; do rflags+=("$1"); shift; done; shift
  while [ "$1" != -- ]; do sflags+=("$1"); shift; done; shift
  bargs=("$@")
  if [ -n "${PROFILE:-}" ]; then
    mkdir -p "$PROFILE"
    rflags+=(--cpuprofile "$PROFILE/$tag.cpu" --memprofile "$PROFILE/$tag.mem")
  fi
  rm -rf "$work/data" "$work/appendonlydir"
  "${srv[@]}" "$work/revkv-server" --addr 127.0.0.1:6391 "${rflags[@]}" 2>/dev/null & local rp=$!
  wait_up 6391 $rp
  bench "revkv,$label" 6391 "${bargs[@]}"
  kill $rp; wait $rp 2>/dev/null || true
  "${srv[@]}" redis-server --port 6392 --save '' "${sflags[@]}" --dir "$work" >/dev/null & local sp=$!
  wait_up 6392 $sp
  bench "redis,$label" 6392 "${bargs[@]}"
  kill $sp; wait $sp 2>/dev/null || true
}
echo 'server,mode,"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"'
for t in ${tests//,/ }; do
  for p in ${PIPELINES:-1 16}; do
    tag=$t-P$p
    run "memory P$p" -- --appendonly no -- -t "$t" -n "$n" -P $p
  done
done
for p in 1 16; do
  tag=durable-set-P$p
  run "durable P$p" --dir "$work/data" --sync always -- --appendonly yes --appendfsync always -- -t set -n $((n / 20)) -P $p
done
rss() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }
# MEMORY PURGE after the fill: revkv-server's used_memory is then its live
# heap, as Redis's is its live allocations (Redis's does not change).
fill() {
  "${cli[@]}" redis-benchmark -p "$1" -t set -n 1000000 -r 1000000 -d 16 -c 50 -P 16 -q >/dev/null
  redis-cli -p "$1" memory purge >/dev/null
}
for hist in all 1; do
  flags=()
  [ "$hist" = 1 ] && flags=(--max-history 1)
  "${srv[@]}" "$work/revkv-server" --addr 127.0.0.1:6391 "${flags[@]}" 2>/dev/null & rp=$!
  wait_up 6391 $rp
  fill 6391
  echo "revkv,memory history=$hist,rss,$(rss $rp)"
  echo "revkv,memory history=$hist,used_memory,$(redis-cli -p 6391 info memory | awk -F: '/^used_memory:/ {print $2+0}')"
  kill $rp; wait $rp 2>/dev/null || true
done
"${srv[@]}" redis-server --port 6392 --save '' --appendonly no --dir "$work" >/dev/null & sp=$!
wait_up 6392 $sp
fill 6392
echo "redis,memory,used_memory,$(redis-cli -p 6392 info memory | awk -F: '/^used_memory:/ {print $2+0}')"
echo "redis,memory,rss,$(rss $sp)"
echo "redis,memory,keys,$(redis-cli -p 6392 dbsize)"
kill $sp; wait $sp 2>/dev/null || true
