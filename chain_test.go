package revkv_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

// auditBase writes a small annotated history on a Mem directory: puts,
// TTLs that expire, deletes, annotated Updates, a compaction, and a
// checkpoint in the middle when ckpt; it returns the FS, closed.
func auditBase(t *testing.T, ckpt bool, opts ...revkv.Option) *vfs.Mem {
	m := vfs.NewMem()
	clock := newClock(time.Date(2026, 11, 24, 14, 2, 0, 0, time.UTC))
	s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(m), revkv.WithClock(clock.Now))...)
	require.NoError(t, err)
	for i := range 40 {
		clock.Add(time.Second)
		k := fmt.Sprintf("k%d", i%7)
		switch i % 5 {
		case 0:
			_, err = s.PutTTL(k, fmt.Sprint("v", i), 1500*time.Millisecond)
		case 1:
			_, err = s.Update(func(tx *revkv.Txn[string]) error {
				tx.Annotate("who", fmt.Sprint("user", i))
				tx.Annotate("why", "ticket-"+k)
				if err := tx.Put(k, "u"); err != nil {
					return err
				}
				return tx.Put(k+"x", "w")
			})
		case 2:
			_, err = s.Delete(k)
			if errors.Is(err, revkv.ErrNotFound) {
				err = nil
			}
		default:
			_, err = s.Put(k, strings.Repeat("x", i))
		}
		require.NoError(t, err)
		if ckpt && i == 25 {
			require.NoError(t, s.Compact(s.Rev()-10))
			require.NoError(t, s.Checkpoint())
		}
	}
	require.NoError(t, s.Close())
	return m
}

// auditState is everything the chain covers, as the store answers it.
func auditState(t *testing.T, s *revkv.Store[string]) string {
	var b strings.Builder
	rev, d, err := s.Digest()
	require.NoError(t, err)
	fmt.Fprintf(&b, "digest %d %x floor %d\n", rev, d, s.Floor())
	for i := range 7 {
		for _, k := range []string{fmt.Sprintf("k%d", i), fmt.Sprintf("k%dx", i)} {
			for _, e := range s.History(k) {
				notes, err := s.Annotations(e.Rev)
				require.NoError(t, err)
				fmt.Fprintf(&b, "%s %v %d %d %d %q %v\n", k, e.Op, e.Rev, e.Time.UnixNano(), e.ExpiresAt.UnixNano(), e.Value, notes)
			}
		}
	}
	return b.String()
}

// TestChainDigestKept: the digest and every answer of the chain are the
// same after a reopen, a checkpoint and a compaction.
func TestChainDigestKept(t *testing.T) {
	m := auditBase(t, true, revkv.WithMemory(-1))
	open := func() *revkv.Store[string] {
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m))
		require.NoError(t, err)
		return s
	}
	s := open()
	want := auditState(t, s)
	h, d, _ := s.Digest()
	require.NoError(t, s.Checkpoint())
	require.Equal(t, want, auditState(t, s))
	require.NoError(t, s.Close())
	s = open()
	require.Equal(t, want, auditState(t, s), "after a checkpoint and a reopen")
	require.NoError(t, s.Compact(h-3))
	h2, d2, _ := s.Digest()
	require.Equal(t, h, h2)
	require.Equal(t, d, d2, "compaction changes no digest")
	require.NoError(t, s.Checkpoint())
	require.NoError(t, s.Close())
	s = open()
	_, d3, _ := s.Digest()
	require.Equal(t, d, d3, "after a compaction, a checkpoint and a reopen")
	require.NoError(t, s.Close())
}

// TestChainFlip: flipping any byte of a chained batch record, or of a
// snapshot's keys, digests or annotations, with the checksum recomputed so
// that only the chain can tell, makes Open fail with ErrCorrupt, or, where
// the byte is one the chain does not cover (a time's location), leaves
// every answer the chain covers as it was, or, in a sealed store's copy of
// an entry a segment holds too, makes VerifySealed fail with ErrCorrupt.
func TestChainFlip(t *testing.T) {
	t.Run("unsealed", func(t *testing.T) { t.Parallel(); chainFlip(t, revkv.WithMemory(-1)) })
	t.Run("sealed", func(t *testing.T) { t.Parallel(); chainFlip(t) })
}

func chainFlip(t *testing.T, opts ...revkv.Option) {
	sealed := len(opts) == 0
	base := auditBase(t, true, opts...)
	s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(base), revkv.WithReadOnly())...)
	require.NoError(t, err)
	want := auditState(t, s)
	require.NoError(t, s.Close())
	files, err := base.List("/db")
	require.NoError(t, err)
	caught, flips, verified := 0, 0, 0
	for _, name := range files {
		if !strings.HasSuffix(name, ".log") && !strings.HasSuffix(name, ".snap") {
			continue
		}
		path := "/db/" + name
		orig := base.Bytes(path)
		for _, off := range recordOffsets(orig) {
			n := int(binary.LittleEndian.Uint32(orig[off:]))
			switch wal.Kind(orig[off+8]) {
			case wal.KindChained, wal.KindKey, wal.KindDigests, wal.KindNotes:
			default:
				continue // not the chain's: the checksum alone guards them
			}
			for i := off + 9; i < off+9+n; i++ {
				for _, x := range []byte{0x01, 0x80} {
					data := slices.Clone(orig)
					data[i] ^= x
					binary.LittleEndian.PutUint32(data[off+4:], crc32.Update(crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), data[off+8:off+9]), crc32.MakeTable(crc32.Castagnoli), data[off+9:off+9+n]))
					c := base.Crash(nil)
					c.WriteFile(path, data)
					flips++
					s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c), revkv.WithReadOnly())
					if err != nil {
						require.ErrorIs(t, err, revkv.ErrCorrupt, "%s byte %d", name, i)
						caught++
						continue
					}
					if got := auditState(t, s); sealed && !reflect.DeepEqual(want, got) {
						// A sealed store's snapshot carries each key's newest
						// entry, which a segment holds too: Open leaves its
						// link to VerifySealed, which must find the change.
						_, verr := s.VerifySealed(nil)
						require.ErrorIs(t, verr, revkv.ErrCorrupt, "%s byte %d ^ %#x: opened with other answers, and VerifySealed finds nothing", name, i, x)
						verified++
					}
					require.NoError(t, s.Close())
				}
			}
		}
	}
	t.Logf("%d of %d flips refused, %d more found by VerifySealed", caught, flips, verified)
	if sealed {
		// Most of a sealed store's snapshot is each key's newest entry,
		// which VerifySealed checks: Open re-hashes only the log.
		require.Greater(t, caught+verified, flips/2)
	} else {
		require.Greater(t, caught, flips*3/4)
	}
}

// TestChainNamesRevision: a value changed in the log, checksum and all, is
// refused naming the revision whose digest breaks.
func TestChainNamesRevision(t *testing.T) {
	base := auditBase(t, false, revkv.WithMemory(-1)) // its log stays
	files, _ := base.List("/db")
	path := "/db/" + files[slices.IndexFunc(files, func(n string) bool { return strings.HasSuffix(n, ".log") })]
	data := base.Bytes(path)
	i := strings.Index(string(data), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") // revision of the 39-x put
	require.Positive(t, i)
	data[i] = 'y'
	offs := recordOffsets(data)
	off := offs[recordAt(offs, i)]
	n := int(binary.LittleEndian.Uint32(data[off:]))
	tab := crc32.MakeTable(crc32.Castagnoli)
	binary.LittleEndian.PutUint32(data[off+4:], crc32.Update(crc32.Update(0, tab, data[off+8:off+9]), tab, data[off+9:off+9+n]))
	b, err := wal.DecodeEntries(wal.KindChained, data[off+9:off+9+n])
	require.NoError(t, err)
	base.WriteFile(path, data)
	_, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(base))
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	require.Contains(t, err.Error(), fmt.Sprintf("revision %d: the hash chain breaks", b[len(b)-1].Rev))
}

// TestDigestOfNew: New's store keeps no chain.
func TestDigestOfNew(t *testing.T) {
	s := revkv.New[string]()
	_, _, err := s.Digest()
	require.ErrorIs(t, err, errors.ErrUnsupported)
	_, err = s.DigestAt(0)
	require.ErrorIs(t, err, errors.ErrUnsupported)
}
