// Package browser tests revkv's page (package web) in a real browser:
// headless Chromium driven by chromedp. It is a module of its own so that
// chromedp is no dependency of revkv's. The tests skip, saying so, where
// no Chromium is installed (.ci/run installs Debian's chromium).
//
//	go test ./...                                  # the page's behaviour
//	go test -run Screenshots -screenshots ../docs/page   # the README's pictures
//	go test -run Million -million -v               # the 1M-revision render figure
package browser

import (
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web"
	"github.com/revkv/revkv/web/webtest"
	"github.com/stretchr/testify/require"
)

var (
	screenshots = flag.String("screenshots", "", "write a PNG of each view into this directory")
	million     = flag.Bool("million", false, "measure the first render of a key with 1M revisions")
)

// chromium finds the browser: $CHROMIUM, else chromium, chromium-browser
// or google-chrome on PATH.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
)

// TestMain starts no browser itself; the first test that needs one does,
// and the process's end stops it.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if browserCtx != nil {
		chromedp.Cancel(browserCtx)
	}
	os.Exit(code)
}

// tab opens a new tab of the shared headless browser, 1280 px wide, or
// skips the test when there is no browser.
func tab(t *testing.T) context.Context {
	t.Helper()
	exe := chromium()
	if exe == "" {
		t.Skip("no Chromium here (install Debian's chromium, or set $CHROMIUM): the browser tests are skipped")
	}
	browserOnce.Do(func() {
		dir, err := os.MkdirTemp("", "revkv-chromium-")
		if err != nil {
			browserErr = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(exe), chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
			chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			// Without these it waits on the network, which a closed machine does not have.
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
		}
		alloc, _ := chromedp.NewExecAllocator(context.Background(), opts...)
		browserCtx, _ = chromedp.NewContext(alloc)
		browserErr = chromedp.Do(browserCtx) // starts it
	})
	require.NoError(t, browserErr, "starting %s", exe)
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	ctx, cancel2 := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel2)
	return ctx
}

// site is the fixture's directory served read-only, as revkv serve serves
// it.
type site struct {
	webtest.Fixture
	s   *revkv.Store[[]byte]
	url string
}

func serve(t *testing.T) *site {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	f, err := webtest.Build(dir)
	require.NoError(t, err)
	s, err := webtest.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(web.New(s, web.Options{Title: "fixture"}))
	t.Cleanup(srv.Close)
	return &site{Fixture: f, s: s, url: srv.URL}
}

// open navigates to path and waits until the view has drawn itself.
func open(path string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Navigate(path), chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`)))
}

// do runs steps in the tab, failing the test on an error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// eval returns what expr evaluates to in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// text returns the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	require.NoError(t, err, sel)
	return v
}
