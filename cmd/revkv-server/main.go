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
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
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
		fs          = flag.NewFlagSet("revkv-server", flag.ContinueOnError)
		dir         = fs.String("dir", "", "keep the store in directory `DIR` (default: in memory)")
		syncMode    = fs.String("sync", "always", "with --dir, when a write is synced: `MODE` always, interval (every second) or never")
		maxHistory  = fs.Int("max-history", 0, "keep at most `N` entries per key (0: all)")
		retention   = fs.Duration("retention", 0, "forget history older than `DURATION` (0: keep it all)")
		expiryEvery = fs.Duration("expiry-interval", 100*time.Millisecond, "write the expiries due every `DURATION` (0: only on writes)")
		memory      = fs.Int64("memory", revkv.DefaultMemory, "with --dir, hold about `BYTES` of history in memory beyond each key's newest entry and seal the rest into segment files (-1: hold it all)")
		showVersion = fs.Bool("version", false, "print the version and exit")
		logLevel    = fs.String("log-level", "info", "log at `LEVEL`: debug, info, warn or error")
		cpuProfile  = fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
		memProfile  = fs.String("memprofile", "", "write a profile of the whole run's allocations to `FILE` when the server stops")
	)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:6380", "listen on `HOST:PORT`")
	fs.StringVar(&cfg.requirepass, "requirepass", "", "clients must AUTH with `PASSWORD` (default: no password)")
	fs.IntVar(&cfg.maxClients, "max-clients", 10000, "serve at most `N` connections at once (0: no limit)")
	fs.Int64Var(&cfg.maxValue, "max-value", 512<<20, "the largest bulk string a client may send, in `BYTES` (Redis's proto-max-bulk-len)")
	fs.Int64Var(&cfg.zsetCache, "zset-rank-cache", defaultZsetCache, "keep the trees that make ZRANK, ZCOUNT and ZRANGE by rank O(log n) for up to `N` sorted-set members in all (0: none)")
	pageFlags(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(os.Stdout, fs)
			return
		}
		fatal("%v (see 'revkv-server --help')", err)
	}
	if *showVersion {
		fmt.Println("revkv-server", version)
		return
	}
	if cfg.zsetCache <= 0 { // the flag's 0 is none; config's, the default
		cfg.zsetCache = -1
	}
	if fs.NArg() > 0 {
		fatal("unexpected argument %q (see 'revkv-server --help')", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fatal("--log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	opts, err := storeOptions(*syncMode, *maxHistory, *retention, *expiryEvery, *memory)
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
	var allocs *os.File // created now, so that a bad path fails at startup
	if *memProfile != "" {
		if allocs, err = os.Create(*memProfile); err != nil {
			fatal("--memprofile: %v", err)
		}
	}
	store, err := openStore(*dir, opts, log)
	if err != nil {
		fatal("%v", err)
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
	if *dir != "" {
		log.Info("revkv-server ready", "addr", ln.Addr().String(), "dir", *dir, "sync", *syncMode, "version", version)
	} else { // nothing to sync
		log.Info("revkv-server ready", "addr", ln.Addr().String(), "store", "in memory", "version", version)
	}

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
	err = s.shutdown(ln, 5*time.Second)
	if allocs != nil {
		if err := writeAllocs(allocs); err != nil {
			log.Error("--memprofile", "err", err)
		}
	}
	if err != nil {
		log.Error("closing the store", "err", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	log.Info("stopped", "rev", store.Rev())
}

// writeAllocs writes to f the profile of every allocation sampled since
// the server started (pprof's allocs: go tool pprof
// -sample_index=alloc_space), after a collection, as the profile holds the
// allocations up to the last one (go test -memprofile does the same).
func writeAllocs(f *os.File) error {
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openStore opens the store: on dir, or in memory if dir is empty. Bytes
// of the log that were not whole records (a torn tail Open cut) are logged
// at WARN: nothing is passed over in silence.
func openStore(dir string, opts []revkv.Option, log *slog.Logger) (*revkv.Store[[]byte], error) {
	if dir == "" {
		return revkv.New[[]byte](opts...), nil
	}
	store, err := revkv.Open(dir, revkv.BytesCodec(), opts...)
	if err != nil {
		return nil, err
	}
	if r, ok := store.Recovery(); ok {
		log.Warn("the log held bytes that are not whole records: "+r.String(),
			"file", r.File, "offset", r.Offset, "bytes", r.Bytes, "from_rev", int64(r.Rev), "reads_to", int64(r.Reads), "cut", r.Cut)
	}
	return store, nil
}

// usage is --help: what the server is, its flags and an example.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `revkv-server serves a revkv store over the Redis protocol: redis-cli and
every Redis client read and write it, with Redis's commands for strings,
expiry and transactions, and REVKV.* commands for its history.

Usage: revkv-server [flags]

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += " " + name
		}
		def := ""
		switch f.DefValue {
		case "", "0", "0s", "false":
		default:
			def = " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "  %-27s %s%s\n", arg, help, def)
	})
	fmt.Fprint(w, `
SIGINT and SIGTERM stop accepting connections, finish the commands each
client sent, and close the store. With --dir, bytes at the end of the log
that are not whole records (a torn write) are cut at startup and logged at
WARN.

Examples:
  revkv-server                                 # in memory, 127.0.0.1:6380
  revkv-server --dir data --sync always        # on a directory
  redis-cli -p 6380 set greeting hello
  redis-cli -p 6380 revkv.history greeting
`)
}

// storeOptions turns the flags into the store's options, refusing values
// the store would panic on.
func storeOptions(syncMode string, maxHistory int, retention, expiry time.Duration, memory int64) ([]revkv.Option, error) {
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
		revkv.WithRetention(retention), revkv.WithExpiryInterval(expiry), revkv.WithMemory(memory)}, nil
}

// port is the port the server listens on, for INFO.
func (s *server) port() string {
	if a, ok := s.addr.(*net.TCPAddr); ok {
		return strconv.Itoa(a.Port)
	}
	return ""
}
