package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/revkv/revkv/web"
)

func init() {
	commands = append(commands, &command{
		name: "serve", args: "[--addr HOST:PORT] [--token TOKEN]", max: 0,
		flags: []string{"addr", "token"}, run: cmdServe,
		summary: "serve a read-only page over the directory: timeline, state, diff, verify",
		doc: `Serve opens the directory read-only and serves a page (and its JSON API
under /api/) that shows the keys, a key's history as a timeline, the state
at any revision or time, the diff between two revisions, and the hash
chain's digest, which it verifies. It changes nothing in the directory and
runs until interrupted (Ctrl-C).

  --addr HOST:PORT  where to listen (default ` + web.DefaultAddr + `)
  --token TOKEN     required on every request (default: $` + web.TokenEnv + `);
                    binding anywhere but a loopback address needs one`,
		example: "revkv --dir data serve --addr 127.0.0.1:8380",
	})
}

func cmdServe(c *cli, _ []string) error {
	addr := c.addr
	if addr == "" {
		addr = web.DefaultAddr
	}
	token := web.Token(c.token)
	if err := web.CheckBind(addr, token); err != nil {
		return usagef("serve: %v: give one with --token or $%s", err, web.TokenEnv)
	}
	s, err := c.openRead()
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := web.Listen(addr, token)
	if err != nil {
		return fmt.Errorf("serve: %v", err)
	}
	how := ""
	if token != "" {
		how = " (open it once with ?token=TOKEN)"
	}
	fmt.Fprintf(c.out, "serving %s read-only at http://%s/%s, revision %d; Ctrl-C stops\n", c.dir, ln.Addr(), how, s.Rev())
	if err := c.out.Flush(); err != nil {
		ln.Close()
		return err
	}
	ctx := c.ctx
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	h := web.New(s, web.Options{Token: token, Title: c.dir})
	if err := web.Serve(ctx, ln, h); err != nil {
		return fmt.Errorf("serve: %v", err)
	}
	return nil
}
