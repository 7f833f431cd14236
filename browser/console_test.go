package browser

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web"
	"github.com/stretchr/testify/require"
)

// TestConsoleClean: no view logs an error, an exception or a warning
// (a Content-Security-Policy violation is one) while it draws and is
// used.
func TestConsoleClean(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	var mu sync.Mutex
	var bad []string
	watch, stop := context.WithCancel(ctx)
	msgs := chromedp.Console(watch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil || watch.Err() != nil {
				return
			}
			if m.Type == "error" || m.Type == "warning" || m.Type == chromedp.ConsoleException {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s: %s", m.Type, m.Text))
				mu.Unlock()
			}
		}
	}()
	for _, path := range []string{"/", "/?prefix=config/&q=limits", "/key?key=cart/42", "/entry?key=big/text&rev=13",
		fmt.Sprintf("/state?rev=%d", st.Mid), "/state?at=2024-03-01T12:00:05.000000001Z", fmt.Sprintf("/diff?from=0&to=%d", st.Head), "/verify"} {
		do(t, ctx, open(st.url+path))
	}
	do(t, ctx, open(st.url+"/key?key=cart/42"), chromedp.Click(chromedp.CSS(`.timeline .mark.put .shape`)),
		chromedp.Click(chromedp.CSS(`#zoom-in`)), chromedp.WaitReady(chromedp.CSS(`#timeline`)), chromedp.Sleep(200*time.Millisecond))
	do(t, ctx, open(st.url+"/verify"), chromedp.Click(chromedp.CSS(`#verify-all`)), chromedp.WaitReady(chromedp.CSS(`#whole-sentence`)))
	time.Sleep(200 * time.Millisecond)
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
}

// TestLive: over a live store (revkv-server --http), a revision committed
// while the page is open appears on the key's timeline and in the head
// without a reload.
func TestLive(t *testing.T) {
	s := revkv.New[[]byte]()
	t.Cleanup(func() { s.Close() })
	_, err := s.Put("door", []byte("closed"))
	require.NoError(t, err)
	srv := httptest.NewServer(web.New(s, web.Options{Live: true, Title: "live"}))
	t.Cleanup(srv.Close)
	ctx := tab(t) // closed before the server, which waits for the page's event stream
	do(t, ctx, open(srv.URL+"/key?key=door"))
	require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll(".timeline .mark").length`))
	time.Sleep(300 * time.Millisecond) // the page's event stream is open
	_, err = s.Put("door", []byte("open"))
	require.NoError(t, err)
	_, err = s.Delete("door")
	require.NoError(t, err)
	n, err := chromedp.Run(ctx, chromedp.Poll[int](`document.querySelectorAll(".timeline .mark").length === 3 && 3`,
		chromedp.WithPollingTimeout(5*time.Second)))
	require.NoError(t, err, "the new revisions did not appear")
	require.Equal(t, 3, n)
	require.Contains(t, text(t, ctx, "#head"), "revision 3")
}
