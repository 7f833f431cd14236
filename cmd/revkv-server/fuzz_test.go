package main

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/revkv/revkv"
)

// FuzzServer writes arbitrary bytes on a connection: the server never
// panics, answers or closes, and lets the connection go when the client
// does; the next input finds it serving.
func FuzzServer(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"SET a 1 EX 10 NX GET\r\nINCR a\r\nINCRBYFLOAT a 1e3\r\nGETRANGE a -1 -100\r\nSETRANGE a 3 xyz\r\n",
		"MULTI\r\nSET a 1\r\nKEYS *\r\nEXEC\r\nWATCH a\r\nMULTI\r\nDISCARD\r\n",
		"EXPIRE a 9223372036854775807 GT\r\nPEXPIREAT a -1\r\nSCAN 0 MATCH [a-\\\r\n",
		"REVKV.HISTORY a COUNT 1\r\nREVKV.CHANGES \"\" 0 99\r\nREVKV.COMPACT 1\r\nREVKV.WATCH a 1\r\n",
		"\"unbalanced\r\n",
		"*1\r\n$99999999999\r\n",
		"*2\r\n$3\r\nGET\r\n$-1\r\n",
		"HELLO 2 AUTH default x SETNAME n\r\nCLIENT SETNAME x\r\nINFO\r\nCOMMAND\r\nFLUSHALL\r\nQUIT\r\n",
	} {
		f.Add([]byte(seed))
	}
	s := newServer(revkv.New[[]byte](), config{maxValue: 1 << 16}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.Cleanup(func() { s.store.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		client, conn := net.Pipe()
		s.accept(conn)
		replies := make(chan struct{})
		go func() { io.Copy(io.Discard, client); close(replies) }()
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(in)
		client.Close()
		<-replies
		done := make(chan struct{})
		go func() { s.conns.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the connection was not let go after the client closed it; input %q", in)
		}
	})
}
