package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// A client blocked on a key is served by the write that unblocks it before
// the writer's next command, pipelined or not (as in Redis): a run of
// writes is not formed while a client waits.
func TestPipelineServesBlockedFirst(t *testing.T) {
	_, addr := startServer(t, config{})
	ctx := context.Background()
	blocked := make(chan any, 1)
	go func() { blocked <- do(newClient(t, addr), "blpop", "q", "5") }()
	c := newClient(t, addr)
	for i := 0; i < 400 && !strings.Contains(do(c, "info", "clients").(string), "blocked_clients:1\r\n"); i++ {
		time.Sleep(5 * time.Millisecond) // until the BLPOP waits
	}
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "rpush", "q", "a")
		p.Do(ctx, "lpop", "q")
		return nil
	})
	require.ErrorIs(t, err, redis.Nil)
	require.Equal(t, redis.Nil, cmds[1].Err(), "the LPOP after the RPUSH finds the list served to the blocked client")
	require.Equal(t, []any{"q", "a"}, <-blocked)
}

// REVKV.ANNOTATE outside MULTI is an error in a pipeline too, and
// annotates nothing.
func TestPipelineAnnotateAlone(t *testing.T) {
	s, addr := startServer(t, config{})
	ctx := context.Background()
	c := newClient(t, addr)
	cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "set", "a", "1")
		p.Do(ctx, "revkv.annotate", "who", "mallory")
		p.Do(ctx, "set", "b", "2")
		return nil
	})
	require.NoError(t, cmds[0].Err())
	require.ErrorContains(t, cmds[1].Err(), "use it between MULTI and EXEC")
	require.NoError(t, cmds[2].Err())
	for r := revkv.Revision(1); r <= s.store.Rev(); r++ {
		notes, err := s.store.Annotations(r)
		require.NoError(t, err)
		require.Nil(t, notes, "revision %d", r)
	}
}
