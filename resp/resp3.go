package resp

import "strconv"

// RESP3's types, for a client that sent HELLO 3. Each falls back to RESP2's
// shape otherwise, so a command writes its reply once for both: a map is
// an array of its keys and values, a set an array, a double a bulk
// string, a push an array; RESP3's null (_) replaces both of RESP2's.

// SetRESP3 switches the protocol of the replies built from now on.
func (w *Writer) SetRESP3(on bool) { w.resp3 = on }

// RESP3 reports whether the replies are RESP3's.
func (w *Writer) RESP3() bool { return w.resp3 }

func (w *Writer) header(c byte, n int) {
	w.buf = append(w.buf, c)
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Map starts a map of n key, value pairs (RESP2: an array of 2n).
func (w *Writer) Map(n int) {
	if w.resp3 {
		w.header('%', n)
	} else {
		w.Array(2 * n)
	}
}

// Set starts a set of n elements (RESP2: an array).
func (w *Writer) Set(n int) {
	if w.resp3 {
		w.header('~', n)
	} else {
		w.Array(n)
	}
}

// Push starts an out-of-band push of n elements (RESP2: an array).
func (w *Writer) Push(n int) {
	if w.resp3 {
		w.header('>', n)
	} else {
		w.Array(n)
	}
}

// Double writes a double given as its text (RESP2: a bulk string).
func (w *Writer) Double(text []byte) {
	if !w.resp3 {
		w.Bulk(text)
		return
	}
	w.buf = append(w.buf, ',')
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, '\r', '\n')
}
