package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A pipeline's run of writes (pipeline.go) wakes the clients blocked on
// what it wrote, as the same writes one by one would.
func TestPipelineRunWakesBlocked(t *testing.T) {
	_, addr := startServer(t, config{})
	ctx := context.Background()
	blocked := make(chan any, 1)
	go func() { blocked <- do(newClient(t, addr), "blpop", "q", "10") }()
	c := newClient(t, addr)
	for i := 0; ; i++ { // until the BLPOP waits
		clients := do(c, "info", "clients").(string)
		if i > 400 || strings.Contains(clients, "blocked_clients:1\r\n") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "set", "x", "1")
		p.Do(ctx, "rpush", "q", "a")
		p.Do(ctx, "incr", "n")
		return nil
	})
	require.NoError(t, err)
	select {
	case v := <-blocked:
		require.Equal(t, []any{"q", "a"}, v)
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked BLPOP was not woken by the pipeline's RPUSH")
	}
}
