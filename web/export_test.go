package web

// SetStreamStarted sets the hook that runs between an event stream's
// headers and its watch, and returns a function that removes it.
func SetStreamStarted(f func()) func() {
	streamStarted = f
	return func() { streamStarted = nil }
}
