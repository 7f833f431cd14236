#!/usr/bin/env bash
# revkv-server beside redis-server under redis-benchmark, on this machine,
# one after the other: in memory, with and without pipelining, then
# durable with a sync per write (revkv --sync always, Redis appendfsync
# always); then revkv-server again in memory with GOMAXPROCS=1, the one
# core Redis uses, leaving the other to the benchmark client. Prints
# redis-benchmark's CSV: ops/s and latency percentiles.
#
#   bench/server/run.sh [requests]     (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-1000000}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/revkv-server" ./cmd/revkv-server
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
  redis-benchmark -p "$port" -t set,get -r 100000 -c 50 "$@" --csv | sed "s/^/$name,/" | grep -v '^'"$name"',"test"'
}
run() { # run LABEL REVKV-FLAGS -- REDIS-FLAGS -- BENCH-ARGS
  local label=$1; shift
  local rflags=() sflags=() bargs=()
  while [ "$1" != -- ]; do rflags+=("$1"); shift; done; shift
  while [ "$1" != -- ]; do sflags+=("$1"); shift; done; shift
  bargs=("$@")
  "$work/revkv-server" --addr 127.0.0.1:6391 "${rflags[@]}" 2>/dev/null & local rp=$!
  wait_up 6391 $rp
  bench "revkv $label" 6391 "${bargs[@]}"
  kill $rp; wait $rp 2>/dev/null || true
  redis-server --port 6392 --save '' "${sflags[@]}" --dir "$work" >/dev/null & local sp=$!
  wait_up 6392 $sp
  bench "redis $label" 6392 "${bargs[@]}"
  kill $sp; wait $sp 2>/dev/null || true
}
echo 'server,"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"'
run "memory P16" -- --appendonly no -- -n "$n" -P 16
run "memory P1" -- --appendonly no -- -n "$n" -P 1
rm -rf "$work/data" "$work/appendonlydir"
run "durable P1" --dir "$work/data" --sync always -- --appendonly yes --appendfsync always -- -n $((n / 20)) -P 1
for p in 16 1; do
  GOMAXPROCS=1 "$work/revkv-server" --addr 127.0.0.1:6391 2>/dev/null & rp=$!
  wait_up 6391 $rp
  bench "revkv memory P$p GOMAXPROCS=1" 6391 -n "$n" -P $p
  kill $rp; wait $rp 2>/dev/null || true
done
