// Command revkv-server serves a revkv store over the Redis protocol: any
// Redis client (redis-cli, go-redis, redis-py, ioredis) reads and writes
// it, with Redis's commands and replies for strings, expiry and
// transactions, and REVKV.* commands for its history.
//
//	go run ./cmd/revkv-server                      # in memory, 127.0.0.1:6380
//	go run ./cmd/revkv-server --dir data --sync always
//	redis-cli -p 6380 set greeting hello
//	redis-cli -p 6380 revkv.history greeting
//
// It differs from Redis where revkv does: values are strings only (no
// lists, hashes...: WRONGTYPE never arises), one database (SELECT 0), and
// every write, delete and expiry is a revision kept in history. See the
// README's Server section for the command table.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/revkv/revkv"
)

const version = "0.1.0"

var pid = os.Getpid()

func main() {
	var (
		cfg         config
		dir         = flag.String("dir", "", "keep the store in this directory (default: in memory)")
		syncMode    = flag.String("sync", "always", "with --dir: always, interval (every second) or never")
		maxHistory  = flag.Int("max-history", 0, "keep at most this many entries per key (0: all)")
		retention   = flag.Duration("retention", 0, "forget history older than this (0: keep)")
		expiryEvery = flag.Duration("expiry-interval", 100*time.Millisecond, "how often expiries due are written (0: only on writes)")
		showVersion = flag.Bool("version", false, "print the version and exit")
		logLevel    = flag.String("log-level", "info", "debug, info, warn or error")
		cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	)
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6380", "address to listen on")
	flag.StringVar(&cfg.requirepass, "requirepass", "", "password clients must AUTH with (default: none)")
	flag.IntVar(&cfg.maxClients, "max-clients", 10000, "connections served at once (0: no limit)")
	flag.Int64Var(&cfg.maxValue, "max-value", 512<<20, "largest bulk string a client may send, in bytes")
	flag.Parse()
	if *showVersion {
		fmt.Println("revkv-server", version)
		return
	}
	if flag.NArg() > 0 {
		fatal("unexpected argument %q", flag.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fatal("--log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	opts, err := storeOptions(*syncMode, *maxHistory, *retention, *expiryEvery)
	if err != nil {
		fatal("%v", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fatal("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal("--cpuprofile: %v", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	var store *revkv.Store[[]byte]
	if *dir != "" {
		store, err = revkv.Open(*dir, revkv.BytesCodec(), opts...)
		if err != nil {
			fatal("%v", err)
		}
	} else {
		store = revkv.New[[]byte](opts...)
	}
	ln, err := listen(cfg.addr)
	if err != nil {
		store.Close()
		fatal("%v", err)
	}
	stopPage, err := startPage(store, *dir, log)
	if err != nil {
		ln.Close()
		store.Close()
		fatal("%v", err)
	}
	s := newServer(store, cfg, log)
	s.dir = *dir
	s.addr = ln.Addr()
	log.Info("revkv-server ready", "addr", ln.Addr().String(), "dir", *dir, "sync", *syncMode, "version", version)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	served := make(chan error, 1)
	go func() { served <- s.serve(ln) }()
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-served:
		log.Error("accepting connections failed", "err", err)
	}
	stopPage()
	if err := s.shutdown(ln, 5*time.Second); err != nil {
		log.Error("closing the store", "err", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	log.Info("stopped", "rev", store.Rev())
}

// storeOptions turns the flags into the store's options, refusing values
// the store would panic on.
func storeOptions(syncMode string, maxHistory int, retention, expiry time.Duration) ([]revkv.Option, error) {
	modes := map[string]revkv.SyncMode{"always": revkv.SyncAlways, "interval": revkv.SyncInterval, "never": revkv.SyncNever}
	mode, ok := modes[syncMode]
	switch {
	case !ok:
		return nil, fmt.Errorf("--sync: %q is not always, interval or never", syncMode)
	case maxHistory < 0:
		return nil, fmt.Errorf("--max-history: %d is negative", maxHistory)
	case retention < 0:
		return nil, fmt.Errorf("--retention: %v is negative", retention)
	case expiry < 0:
		return nil, fmt.Errorf("--expiry-interval: %v is negative", expiry)
	}
	return []revkv.Option{revkv.WithSync(mode), revkv.WithMaxHistory(maxHistory),
		revkv.WithRetention(retention), revkv.WithExpiryInterval(expiry)}, nil
}

// port is the port the server listens on, for INFO.
func (s *server) port() string {
	if a, ok := s.addr.(*net.TCPAddr); ok {
		return strconv.Itoa(a.Port)
	}
	return ""
}
