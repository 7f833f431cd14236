package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/revkv/revkv"
)

// FuzzServer feeds one server, input after input, what the fuzzer draws:
// once as raw bytes on a connection, and once as commands (each line of
// the input a command, its words split at spaces, sent as RESP frames so
// that any byte may be in an argument) on another. After each input:
// no command panicked (the server would recover, so panics are counted
// rather than crashing), the connections were let go once their clients
// closed them, a new connection gets PONG, and a key written before the
// input still holds its value unless a revision on the record changed it.
func FuzzServer(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"SET a 1 EX 10 NX GET\r\nINCR a\r\nINCRBYFLOAT a 1e3\r\nGETRANGE a -1 -100\r\nSETRANGE a 3 xyz\r\n",
		"MULTI\r\nSET a 1\r\nKEYS *\r\nEXEC\r\nWATCH a\r\nMULTI\r\nDISCARD\r\n",
		"EXPIRE a 9223372036854775807 GT\r\nPEXPIREAT a -1\r\nSCAN 0 MATCH [a-\\\r\n",
		"REVKV.HISTORY a COUNT 1\r\nREVKV.CHANGES \"\" 0 99\r\nREVKV.COMPACT 1\r\nREVKV.WATCH a 1\r\n",
		"MULTI\r\nREVKV.ANNOTATE who a\r\nSET a 1\r\nEXEC\r\nREVKV.ANNOTATE x y\r\nREVKV.DIGEST\r\nREVKV.DIGEST 1 2\r\nREVKV.HISTORY a\r\n",
		"\"unbalanced\r\n",
		"*1\r\n$99999999999\r\n",
		"*2\r\n$3\r\nGET\r\n$-1\r\n",
		"HELLO 2 AUTH default x SETNAME n\r\nCLIENT SETNAME x\r\nINFO\r\nCOMMAND\r\nFLUSHALL\r\nQUIT\r\n",
		// Integer edges: the arithmetic on what a client sends.
		"SET s hello\nSETRANGE s 9223372036854775807 A\nSETRANGE s 9223372036854775806 AB\nGETRANGE s -9223372036854775808 9223372036854775807\n",
		"SET n 9223372036854775807\nINCR n\nDECRBY n -9223372036854775808\nINCRBY n -9223372036854775808\nAPPEND n x\n",
		"SET f inf\nINCRBYFLOAT f -inf\nINCRBYFLOAT g 0x1p16383\nINCRBYFLOAT g 0x1p16383\nINCRBYFLOAT g 1e-5000\n",
		"SET k v EX 9223372036854\nSET k v PXAT 9223372036854775807\nGETEX k EXAT 9223372036854775\nSETEX k 9223372036854 v\nPSETEX k 9223372036854775807 v\n",
		"EXPIRE k -9223372036854775808\nPEXPIRE k 9223372036854775807\nEXPIREAT k 9223372036854775\nPEXPIREAT k -9223372036854775808\nTTL k\nEXPIRETIME k\n",
		"SCAN -1\nSCAN 18446744073709551615 COUNT 9223372036854775807\nSCAN 0 COUNT -9223372036854775808 MATCH *\nSELECT 2147483648\nCOPY k d DB -1\n",
		"REVKV.GETASOF k -9223372036854775808\nREVKV.GETAT k 9223372036854775807\nREVKV.HISTORY k COUNT 9223372036854775807\nREVKV.CHANGES k 9223372036854775807 -9223372036854775808\n",
		"MULTI\nSET a 1\nSETRANGE a 9223372036854775807 x\nINCRBYFLOAT a inf\nEXEC\nGET a\n",
		// The collection types, their history, blocking and pub/sub.
		"HSET h a 1 b 2\nHINCRBYFLOAT h a 1e308\nHINCRBYFLOAT h a 1e308\nHRANDFIELD h -9223372036854775808 WITHVALUES\nHSCAN h 0 MATCH * COUNT 1\nGET h\nSET h x\nHGETALL h\n",
		"RPUSH l a b c\nLINSERT l BEFORE b x\nLREM l -1 x\nLPOS l c RANK -9223372036854775808\nLTRIM l 9223372036854775807 -9223372036854775808\nLMOVE l l LEFT RIGHT\nLSET l -4 y\n",
		"SADD s 1 2 x\nSPOP s 9223372036854775807\nSRANDMEMBER s -9223372036854775807\nSINTERCARD 9223372036854775807 s\nSMOVE s s 1\nSINTERSTORE s s s\n",
		"ZADD z GT CH INCR 1 a\nZADD z 0x1p1023 b -inf c nan d\nZRANGE z (1 +inf BYSCORE REV LIMIT -9223372036854775808 9223372036854775807 WITHSCORES\nZRANGESTORE z z [a + BYLEX\nZUNIONSTORE z 2 z z WEIGHTS inf -inf\nZRANK z a\n",
		"BLPOP q 0\nBZPOPMIN q 0.001\nBLMPOP 0 2 q r LEFT COUNT 9223372036854775807\nMULTI\nBRPOPLPUSH q r 0\nEXEC\nCLIENT UNBLOCK 1 ERROR\n",
		"SUBSCRIBE a b\nPSUBSCRIBE [\nGET a\nPING x\nPUNSUBSCRIBE\nUNSUBSCRIBE\nPUBLISH a b\nPUBSUB NUMSUB a\n",
		"REVKV.AT REV 1 HGETALL h\nREVKV.AT TIME 2026-11-26T14:02:00Z ZRANGE z 0 -1\nREVKV.AT REV 1 BLPOP q 0\nREVKV.AT TIME -1 REVKV.AT REV 1 GET a\nREVKV.HISTORY h\nREVKV.DIFF 0 5\n",
		"CONFIG SET maxclients 0 client-output-buffer-limit x\nCONFIG GET *\nMEMORY USAGE h SAMPLES 0\nOBJECT ENCODING z\nCLIENT LIST ID 0\nCLIENT KILL ID 9223372036854775807\n",
	} {
		f.Add([]byte(seed))
	}
	var logs syncBuffer
	fresh := func() *server {
		return newServer(revkv.New[[]byte](), config{maxValue: 1 << 16}, slog.New(slog.NewTextHandler(&logs, nil)))
	}
	s := fresh()
	f.Cleanup(func() { s.store.Close() })
	n := 0
	f.Fuzz(func(t *testing.T, in []byte) {
		n++
		key, value := "fuzz:earlier", []byte(strconv.Itoa(n))
		rev, err := s.store.Put(key, value)
		if err != nil {
			t.Fatal(err)
		}
		session(t, s, in)
		session(t, s, frames(in))
		// CONFIG SET is an administrator's: it is meant to change what
		// later connections get (maxclients 1 refuses them). Each input
		// starts from the defaults.
		s.initConfig()
		if p := s.stats.panics.Load(); p > 0 {
			t.Fatalf("%d panics recovered; input %q\n%s", p, in, logs.String())
		}
		if reply := ping(s); reply != "+PONG\r\n" {
			t.Fatalf("PING after the input got %q; input %q", reply, in)
		}
		if v, ok := s.store.Get(key); !ok || !bytes.Equal(v, value) {
			changed := s.store.Floor() > rev // compacted past it: nothing to tell by
			for _, e := range s.store.History(key) {
				changed = changed || e.Rev > rev
			}
			if !changed {
				t.Fatalf("%s was %q, is %q (found %v) with no revision on the record; input %q", key, value, v, ok, in)
			}
		}
		// The server's state is carried from input to input, and the
		// store keeps every revision: inputs that grow a list and then
		// LINSERT into it (a revision for each element it moves) made a
		// worker's history grow without end, to tens of millions of
		// revisions and gigabytes, until the worker stalled or was
		// killed. Past a budget, the next input starts on a fresh server.
		if s.store.Rev() > fuzzRevBudget {
			s.store.Close()
			s = fresh()
		}
	})
}

// fuzzRevBudget is how many revisions FuzzServer's server may keep before
// it is replaced by a fresh one: large enough that state is carried across
// many inputs, small enough that what an input inherits stays small. It
// bounds what an input inherits, not what one input adds: an input of k
// LINSERTs near the head of an inherited list of n elements adds about 2kn
// revisions (it is sent twice), and the budget keeps n at most 65,536.
const fuzzRevBudget = 1 << 16

// session writes in on a new connection and closes it; the server must
// let the connection go.
func session(t *testing.T, s *server, in []byte) {
	client, conn := net.Pipe()
	s.accept(conn)
	read := make(chan struct{})
	go func() { io.Copy(io.Discard, client); close(read) }()
	client.SetWriteDeadline(time.Now().Add(2 * time.Second))
	client.Write(in)
	client.Close()
	<-read
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // generous: fuzz workers share two busy cores; a hang waits forever
		t.Fatalf("the connection was not let go after the client closed it; input %q", in)
	}
}

// ping sends PING on a new connection and returns the reply.
func ping(s *server) string {
	client, conn := net.Pipe()
	s.accept(conn)
	defer client.Close()
	client.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		return err.Error()
	}
	reply := make([]byte, 7)
	if _, err := io.ReadFull(client, reply); err != nil {
		return err.Error()
	}
	return string(reply)
}

// frames turns each line of in into a RESP command of its space-separated
// words, any bytes in them.
func frames(in []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(in, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		var args [][]byte
		for _, w := range bytes.Split(line, []byte(" ")) {
			if len(w) > 0 {
				args = append(args, w)
			}
		}
		if len(args) == 0 {
			continue
		}
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return b.Bytes()
}

// syncBuffer is a log the server's connections write to at once.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (sb *syncBuffer) Write(p []byte) (int, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.b.Write(p)
}

func (sb *syncBuffer) String() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.b.String()
}
