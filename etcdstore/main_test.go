package etcdstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing the tests started is left running: no
// store goroutine, no watch, no etcd server or client.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
