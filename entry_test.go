package revkv

import (
	"testing"
	"unsafe"
)

// TestKeyLogSize: a store holds a keyLog per key, so one that grows past
// 96 bytes, a size class of the allocator, costs every key the next class
// (112): the fields are packed to stay within it.
func TestKeyLogSize(t *testing.T) {
	if got := unsafe.Sizeof(keyLog[[]byte]{}); got > 96 {
		t.Fatalf("keyLog[[]byte] is %d bytes, past the 96 of its size class", got)
	}
}
