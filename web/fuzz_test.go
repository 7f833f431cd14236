package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/revkv/revkv/web"
	"github.com/revkv/revkv/web/webtest"
)

// FuzzAPI: whatever path and query a client sends, the handler answers
// without a server error: JSON with an "error" for every refusal, and
// never a 5xx.
//
//	go test ./web -run='^$' -fuzz=FuzzAPI -fuzztime=1m
func FuzzAPI(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "data")
	if _, err := webtest.Build(dir); err != nil {
		f.Fatal(err)
	}
	s, err := webtest.Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := web.New(s, web.Options{})
	for _, seed := range []string{
		"/api/keys?prefix=config/&q=lim&after=config/a&limit=2",
		"/api/timeline?key=cart/42&from=3&to=11&max=2",
		"/api/history?key=cart/42&from=5&limit=1",
		"/api/entry?key=big/text&rev=13&whole=1",
		"/api/value?key=blob/1&rev=8",
		"/api/rev?rev=7",
		"/api/state?prefix=c&at=2024-03-01T12:00:05.000000001Z&after=a&limit=1",
		"/api/state?rev=8",
		"/api/diff?from=2&to=18&prefix=config/&after=a&limit=1",
		"/api/verify?rev=8&digest=" + strings.Repeat("ab", 32),
		"/api/digest", "/api/info", "/key?key_b64=%FF", "/api/keys?key_b64=////",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if strings.Contains(target, "/verify/all") || strings.Contains(target, "/events") {
			return // streams: TestVerifyAPI and TestLiveEvents
		}
		req, err := http.NewRequest("GET", "http://127.0.0.1/", nil)
		if err != nil {
			t.Fatal(err)
		}
		path, query, _ := strings.Cut(target, "?")
		req.URL.Path, req.URL.RawQuery = path, query
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { h.ServeHTTP(rec, req); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%q: no answer in 20 s\n%s", target, buf[:n])
		}
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", target, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var m map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m["error"] == nil {
				t.Fatalf("%q: %d without a JSON error: %s", target, rec.Code, rec.Body)
			}
		}
	})
}
