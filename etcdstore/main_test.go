package etcdstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing the tests started is left running: no
// store goroutine, no watch, no client. The HTTP connections between etcd
// members of a cluster whose member crashed may take a moment longer to go
// than goleak waits; they are etcd's (net/http's), never the store's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
	)
}
