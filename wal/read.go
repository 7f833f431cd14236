package wal

import (
	"encoding/binary"
	"io"
)

// A frameReader reads a file's records in order through a buffer that
// holds the record being read and what one read brought after it, so
// that a log or snapshot of any size is read without holding it whole in
// memory. A payload it returns is valid until the next call.
type frameReader struct {
	r    io.Reader
	buf  []byte // buf[pos:n] are the file's bytes from offset base+pos
	pos  int
	n    int
	base int64
	eof  bool // r has nothing more
}

// readChunk is how much a frameReader asks for at a time.
const readChunk = 1 << 20

func newFrameReader(r io.Reader) *frameReader { return newFrameReaderSize(r, readChunk) }

func newFrameReaderSize(r io.Reader, chunk int) *frameReader {
	return &frameReader{r: r, buf: make([]byte, chunk)}
}

// fill makes at least want bytes available from pos, or every byte the
// file has left. The buffer grows with the bytes read, never with want
// alone: a damaged length asks for much, and gets what the file holds.
func (fr *frameReader) fill(want int) error {
	for fr.n-fr.pos < want && !fr.eof {
		if fr.pos > 0 { // move what is left to the front
			fr.n = copy(fr.buf, fr.buf[fr.pos:fr.n])
			fr.base += int64(fr.pos)
			fr.pos = 0
		}
		if fr.n == len(fr.buf) {
			fr.buf = append(fr.buf, make([]byte, min(len(fr.buf), want-fr.n))...)
			fr.buf = fr.buf[:cap(fr.buf)]
		}
		m, err := fr.r.Read(fr.buf[fr.n:])
		fr.n += m
		if err == io.EOF {
			fr.eof = true
		} else if err != nil {
			return err
		}
	}
	return nil
}

// available returns the bytes read and not consumed.
func (fr *frameReader) available() []byte { return fr.buf[fr.pos:fr.n] }

// offset returns the file offset of the next byte to consume.
func (fr *frameReader) offset() int64 { return fr.base + int64(fr.pos) }

// skip consumes n bytes, which are available.
func (fr *frameReader) skip(n int) { fr.pos += n }

// next parses the record at the offset, as parseFrame would over the rest
// of the file, without consuming it.
func (fr *frameReader) next() (kind Kind, payload []byte, size int, st frameStatus, err error) {
	if err := fr.fill(frameSize); err != nil {
		return 0, nil, 0, 0, err
	}
	if b := fr.available(); len(b) >= frameSize {
		if n := binary.LittleEndian.Uint32(b); n <= maxRecord {
			if err := fr.fill(frameSize + int(n)); err != nil {
				return 0, nil, 0, 0, err
			}
		}
	}
	kind, payload, size, st = parseFrame(fr.available())
	return kind, payload, size, st, nil
}

// endsAfter reports whether the file ends right after the next size bytes.
func (fr *frameReader) endsAfter(size int) (bool, error) {
	if err := fr.fill(size + 1); err != nil {
		return false, err
	}
	return fr.n-fr.pos == size, nil
}

// rest reads the file to its end and returns every byte from the offset
// on, which it leaves unconsumed.
func (fr *frameReader) rest() ([]byte, error) {
	for !fr.eof {
		if err := fr.fill(fr.n - fr.pos + readChunk); err != nil {
			return nil, err
		}
	}
	return fr.available(), nil
}
