package wal

import (
	"encoding/binary"
	"testing"
)

// A count of digests whose byte length overflows uint64 passes the length
// check: DecodeDigests panics in make.
func TestRegressDecodeDigestsOverflow(t *testing.T) {
	p := binary.AppendVarint(nil, 1)
	p = binary.AppendUvarint(p, 1<<59+1) // (2^59+1)*32 = 32 mod 2^64
	p = append(p, make([]byte, 32)...)
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("DecodeDigests panicked: %v", r)
		}
	}()
	g, err := DecodeDigests(p)
	t.Logf("%d digests, %v", len(g.Digests), err)
}
