package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// TokenEnv is the environment variable the commands read a token from
// when no --token flag is given.
const TokenEnv = "REVKV_TOKEN"

// DefaultAddr is where revkv serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8380"

// Token returns flag if it is not empty, else the environment's
// REVKV_TOKEN.
func Token(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(TokenEnv)
}

// CheckBind refuses to bind addr beyond this machine's loopback without a
// token: an address with no host, 0.0.0.0, [::], a host name other than
// localhost, or any IP that is not a loopback one needs one.
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not an address (HOST:PORT, as 127.0.0.1:8380): %v", addr, err)
	}
	if token == "" && !loopbackHost(host) {
		return fmt.Errorf("binding to %s serves the page beyond this machine, which needs a token (or bind to 127.0.0.1)", addr)
	}
	if token != "" && len(token) < 16 {
		return errors.New("a token must be at least 16 characters long")
	}
	return nil
}

// Listen checks addr against the token and listens there.
func Listen(addr, token string) (net.Listener, error) {
	if err := CheckBind(addr, token); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}

// Server is an http.Server for h with timeouts that let the page's
// streams (/api/events, /api/verify/all) run and stop idle or slow
// clients.
func Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
}

// Serve serves h on ln until ctx is done, then shuts down, giving
// requests in flight up to five seconds.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := Server(h)
	// The streams end when the server stops, not when their clients go.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	srv.BaseContext = func(net.Listener) context.Context { return base }
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	return nil
}
