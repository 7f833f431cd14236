package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web"
)

// The page (package web) over the live store, when --http is given: the
// same page as 'revkv serve', following new revisions as they commit.
var (
	httpAddr  = new(string)
	httpToken = new(string)
)

// pageFlags adds --http and --http-token to the server's flags.
func pageFlags(fs *flag.FlagSet) {
	fs.StringVar(httpAddr, "http", "", "also serve the read-only page (timeline, state, diff, verify) at `HOST:PORT`, as 127.0.0.1:8381")
	fs.StringVar(httpToken, "http-token", "", "the page requires `TOKEN` on every request (default: $"+web.TokenEnv+"); needed to bind beyond loopback")
}

// startPage serves the page over store when --http is given, and returns
// what stops it (waiting for it to stop).
func startPage(store *revkv.Store[[]byte], title string, log *slog.Logger) (stop func(), err error) {
	if *httpAddr == "" {
		return func() {}, nil
	}
	token := web.Token(*httpToken)
	if err := web.CheckBind(*httpAddr, token); err != nil {
		return nil, fmt.Errorf("--http: %v: give one with --http-token or $%s", err, web.TokenEnv)
	}
	ln, err := web.Listen(*httpAddr, token)
	if err != nil {
		return nil, fmt.Errorf("--http: %v", err)
	}
	if title == "" {
		title = "in memory"
	}
	h := web.New(store, web.Options{Token: token, Live: true, Title: "revkv-server · " + title, Hide: internal})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := web.Serve(ctx, ln, h); err != nil {
			log.Error("serving the page failed", "err", err)
		}
	}()
	log.Info("page ready", "url", "http://"+ln.Addr().String()+"/", "token", token != "")
	return func() { cancel(); <-done }, nil
}
