package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/revkv/revkv/vfs"
)

// The manifest says which segments make up a store's sealed history. A
// segment file not named in it does not count (a seal or merge that
// crashed before its manifest was renamed into place left it), and one
// named in it must be there. It is replaced whole, never changed in
// place: written to ManifestName+".tmp", synced, renamed over the old
// one, and the directory synced, so that a crash leaves the old manifest
// or the new one, each whole.
//
//	"revkvMAN", version u32, generation u64, uvarint count, then per
//	segment: uvarint name length, name, uvarint first, uvarint last,
//	uvarint size, digest at last [32]; then CRC-32C of all before u32.

// ManifestName is the manifest's file name in a store's directory.
const ManifestName = "MANIFEST"

var manifestMagic = []byte("revkvMAN")

// Manifest is the list of a store's segments, oldest first: their
// revision ranges follow one another without overlapping.
type Manifest struct {
	Gen      int64 // raised by every write: the newest manifest wins
	Segments []Ref
}

// Ref is one segment of a manifest.
type Ref struct {
	First, Last int64
	Size        int64    // the file's size in bytes
	Digest      [32]byte // the chain's digest at Last, as the footer says
}

// Name returns the segment's file name, which its range decides.
func (r Ref) Name() string { return fmt.Sprintf("%016x-%016x.seg", r.First, r.Last) }

// check returns why m could not have been written by WriteManifest.
func (m *Manifest) check() error {
	for i, r := range m.Segments {
		switch {
		case r.First < 1 || r.Last < r.First || r.Size < headerSize+footerSize:
			return fmt.Errorf("segment %d [%d, %d] of %d bytes is impossible", i, r.First, r.Last, r.Size)
		case i > 0 && r.First <= m.Segments[i-1].Last:
			return fmt.Errorf("segment %d [%d, %d] overlaps or precedes the one before", i, r.First, r.Last)
		}
	}
	return nil
}

// AppendManifest encodes m.
func AppendManifest(b []byte, m *Manifest) []byte {
	start := len(b)
	b = append(b, manifestMagic...)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.Gen))
	b = binary.AppendUvarint(b, uint64(len(m.Segments)))
	for _, r := range m.Segments {
		name := r.Name()
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(r.First))
		b = binary.AppendUvarint(b, uint64(r.Last))
		b = binary.AppendUvarint(b, uint64(r.Size))
		b = append(b, r.Digest[:]...)
	}
	return binary.LittleEndian.AppendUint32(b, checksum(b[start:]))
}

// DecodeManifest decodes and checks a manifest: damage is ErrCorrupt, a
// format this build does not know ErrVersion.
func DecodeManifest(b []byte) (Manifest, error) {
	bad := func(what string) (Manifest, error) {
		return Manifest{}, fmt.Errorf("%w: manifest: %s", ErrCorrupt, what)
	}
	if len(b) < 8+4+8+1+4 || !bytes.Equal(b[:8], manifestMagic) {
		return bad("no manifest header")
	}
	body := b[:len(b)-4]
	if checksum(body) != binary.LittleEndian.Uint32(b[len(body):]) {
		return bad("fails its checksum")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != version {
		return Manifest{}, fmt.Errorf("%w: manifest version %d, this build reads %d", ErrVersion, v, version)
	}
	m := Manifest{Gen: int64(binary.LittleEndian.Uint64(b[12:]))}
	d := decoder{b: body[20:]}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(body)) {
		return bad("no segment count")
	}
	for i := uint64(0); i < n; i++ {
		name := string(d.bytes(d.uvarint()))
		r := Ref{First: int64(d.uvarint()), Last: int64(d.uvarint()), Size: int64(d.uvarint())}
		copy(r.Digest[:], d.bytes(32))
		if d.err != nil {
			return bad(fmt.Sprintf("segment %d: %v", i, d.err))
		}
		if name != r.Name() {
			return bad(fmt.Sprintf("segment %d is named %q, its range [%d, %d] says %q", i, name, r.First, r.Last, r.Name()))
		}
		m.Segments = append(m.Segments, r)
	}
	if d.rest() != 0 {
		return bad("bytes after the last segment")
	}
	if err := m.check(); err != nil {
		return bad(err.Error())
	}
	return m, nil
}

// WriteManifest replaces dir's manifest with m, durably: when it returns
// nil, a crash leaves m; when it fails or the machine crashes during it,
// the old manifest or m, whole.
func WriteManifest(fsys vfs.FS, dir string, m *Manifest) error {
	if err := m.check(); err != nil {
		return fmt.Errorf("write manifest: %w: %v", ErrOrder, err)
	}
	tmp, final := filepath.Join(dir, ManifestName+".tmp"), filepath.Join(dir, ManifestName)
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	_, err = f.Write(AppendManifest(nil, m))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, final)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// ReadManifest reads dir's manifest; ok is false if there is none (a
// store that never sealed). A leftover ManifestName+".tmp" is ignored.
func ReadManifest(fsys vfs.FS, dir string) (m Manifest, ok bool, err error) {
	r, err := fsys.OpenRead(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, false, nil
	}
	if err != nil {
		return Manifest{}, false, fmt.Errorf("read manifest: %w", err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return Manifest{}, false, fmt.Errorf("read manifest: %w", err)
	}
	m, err = DecodeManifest(b)
	if err != nil {
		return Manifest{}, false, err
	}
	return m, true, nil
}
