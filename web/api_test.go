package web_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web"
	"github.com/revkv/revkv/web/webtest"
	"github.com/stretchr/testify/require"
)

// site serves the fixture's directory read-only, as revkv serve does.
type site struct {
	webtest.Fixture
	s   *revkv.Store[[]byte]
	url string
}

func serve(t *testing.T, opts web.Options) *site {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	f, err := webtest.Build(dir)
	require.NoError(t, err)
	s, err := webtest.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(web.New(s, opts))
	t.Cleanup(srv.Close)
	return &site{Fixture: f, s: s, url: srv.URL}
}

// get fetches path and decodes its JSON answer.
func get(t *testing.T, base, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json", path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m), path)
	return resp.StatusCode, m
}

// TestHostile: requests that ask for what is not there, or more than is
// served, or that do not parse, are 4xx with a JSON error that says why;
// no path reaches a file that is not the page's.
func TestHostile(t *testing.T) {
	st := serve(t, web.Options{})
	long := strings.Repeat("k", 70_000)
	cases := []struct {
		path   string
		status int
		says   string
	}{
		{"/api/timeline?key=cart/42&from=abc", 400, `from="abc" is not a revision`},
		{"/api/timeline?key=cart/42&from=-1", 400, "is not a revision"},
		{"/api/timeline?key=cart/42&to=99999999999999999999", 400, "is not a revision"},
		{"/api/timeline?key=cart/42&from=9&to=3", 400, "from=9 is after to=3"},
		{"/api/timeline?key=cart/42&max=100000", 400, "max=100000 is too many: at most 2000"},
		{"/api/timeline?key=cart/42&max=0", 400, "is not a count"},
		{"/api/timeline", 400, "key is missing"},
		{"/api/timeline?key=nope", 404, `key "nope" has no history here`},
		{"/api/timeline?key=" + long, 400, "key is 70000 bytes long"},
		{"/api/timeline?key_b64=%21%21%21", 400, "key_b64 is not base64"},
		{"/api/history?key=nope", 404, "no history"},
		{"/api/history?key=cart/42&limit=5000", 400, "limit=5000 is too many"},
		{"/api/entry?key=cart/42&rev=5", 404, `key "cart/42" has no entry made at revision 5`},
		{"/api/entry?key=cart/42&rev=999", 404, "revision 999 is not there yet: the latest is 18"},
		{"/api/entry?key=cart/42", 400, "rev is missing"},
		{"/api/entry?key=nope&rev=3", 404, "no history"},
		{"/api/value?key=cart/42&rev=11", 404, "revision 11 deletes the key: it has no value"},
		{"/api/rev?rev=999", 404, "not there yet"},
		{"/api/keys?limit=0", 400, "is not a count"},
		{"/api/keys?limit=1001", 400, "too many"},
		{"/api/keys?prefix=" + long, 400, "prefix is 70000 bytes long"},
		{"/api/state?rev=999", 404, "revision 999 is not there yet: the latest is 18"},
		{"/api/state?rev=1e3", 400, "is not a revision"},
		{"/api/state?at=yesterday", 400, `at="yesterday" is not a time`},
		{"/api/state?at=2999-01-01T00:00:00Z", 404, "not there yet"},
		{"/api/state?rev=3&at=2024-03-01T12:00:00Z", 400, "rev and at both say when"},
		{"/api/diff", 400, "from and to are both needed"},
		{"/api/diff?from=5&to=3", 400, "from=5 is after to=3"},
		{"/api/diff?from=0&to=999", 404, "revision 999 is not there yet"},
		{"/api/diff?from=0&to=5&limit=99999", 400, "too many"},
		{"/api/verify", 400, "rev and digest are both needed"},
		{"/api/verify?rev=3&digest=zz", 400, `digest "zz" is not a digest`},
		{"/api/verify?rev=3&digest=" + strings.Repeat("0", 63), 400, "is not a digest"},
		{"/api/verify?rev=999&digest=" + strings.Repeat("0", 64), 404, "Revision 999 is not in this history yet"},
		{"/api/verify?rev=x&digest=" + strings.Repeat("0", 64), 400, "is not a revision"},
		{"/api/events", 404, "does not change while it is served"},
		{"/api/nope", 404, `"/api/nope" is not a page or an API path`},
		{"/api/keys/", 404, "is not a page"},
		{"/nope", 404, "is not a page"},
		{"/static/page.html", 404, "is not a page"},
		{"/static/../web.go", 404, "is not a page"}, // cleaned to /web.go
		{"/static/%2e%2e/web.go", 404, "is not a page"},
		{"/static/..%2fweb.go", 404, "is not a page"},
		{"/key/../../etc/passwd", 404, "is not a page"},
		{"//etc/passwd", 404, "is not a page"},
	}
	for _, c := range cases {
		status, m := get(t, st.url, c.path)
		require.Equal(t, c.status, status, "%s: %v", c.path, m)
		require.Contains(t, m["error"], c.says, c.path)
		require.Equal(t, float64(c.status), m["status"], c.path)
	}
	// Every method but GET and HEAD, on every kind of path.
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"} {
		for _, path := range []string{"/", "/api/keys", "/api/nope", "/static/app.js"} {
			req, err := http.NewRequest(method, st.url+path, strings.NewReader("x"))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", method, path)
			require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
			require.Contains(t, string(b), "the page is read-only")
		}
	}
	resp, err := http.Head(st.url + "/api/keys")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestCompacted: history below the floor is 410, saying so.
func TestCompacted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, err := webtest.Build(dir)
	require.NoError(t, err)
	s, err := revkv.Open(dir, revkv.BytesCodec())
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Compact(10))
	srv := httptest.NewServer(web.New(s, web.Options{}))
	defer srv.Close()
	gone := revkv.Revision(0) // a revision whose digest went with its entries
	for r := revkv.Revision(1); r < 10 && gone == 0; r++ {
		if _, err := s.DigestAt(r); errors.Is(err, revkv.ErrCompacted) {
			gone = r
		}
	}
	require.NotZero(t, gone)
	for _, c := range []struct{ path, says string }{
		{"/api/state?rev=3", "the state at revision 3 is no longer kept"},
		{"/api/diff?from=2&to=12", "the diff from 2 is no longer kept"},
		{fmt.Sprintf("/api/verify?rev=%d&digest=%s", gone, strings.Repeat("0", 64)), fmt.Sprintf("Revision %d is below this history's floor (10)", gone)},
	} {
		status, m := get(t, srv.URL, c.path)
		require.Equal(t, http.StatusGone, status, "%s: %v", c.path, m)
		require.Contains(t, m["error"], c.says)
	}
	status, m := get(t, srv.URL, "/api/state?rev=12")
	require.Equal(t, http.StatusOK, status, "%v", m)
}

// TestHeaders: every answer carries the Content-Security-Policy (no
// inline script, nothing from elsewhere) and nosniff; JSON escapes markup.
func TestHeaders(t *testing.T) {
	st := serve(t, web.Options{})
	for _, path := range []string{"/", "/key?key=x", "/api/keys", "/api/nope", "/static/app.js"} {
		resp, err := http.Get(st.url + path)
		require.NoError(t, err)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'none'", path)
		require.Contains(t, csp, "script-src 'self';", path)
		require.NotContains(t, csp, "unsafe", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
	resp, err := http.Get(st.url + "/api/entry?key=config/name&rev=9")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NotContains(t, string(b), "<script>", "JSON escapes markup too")
	require.Contains(t, string(b), `\u003cscript\u003e`)
	resp, err = http.Get(st.url + "/")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 1, strings.Count(string(b), "<script"), "one script, from a file")
	require.Contains(t, string(b), `<script src="/static/app.js" defer></script>`)
}

// TestAccess: without a token the page answers only to loopback names (a
// site that rebinds its name to 127.0.0.1 reads nothing); with one, every
// request must carry it, as a bearer token or the cookie ?token= sets.
func TestAccess(t *testing.T) {
	st := serve(t, web.Options{})
	req, _ := http.NewRequest("GET", st.url+"/api/keys", nil)
	req.Host = "evil.example:80"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	for _, host := range []string{"localhost:1", "127.0.0.1", "[::1]:8380", "127.0.0.2:9"} {
		req.Host = host
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, host)
	}

	const token = "0123456789abcdef-secret"
	st = serve(t, web.Options{Token: token})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(path, auth string, cookie *http.Cookie) (int, *http.Response) {
		req, _ := http.NewRequest("GET", st.url+path, nil)
		req.Host = "revkv.example" // a token lets any name in
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode, resp
	}
	for _, path := range []string{"/", "/api/keys", "/static/app.js", "/api/nope"} {
		code, _ := status(path, "", nil)
		require.Equal(t, http.StatusUnauthorized, code, path)
		code, _ = status(path, "Bearer wrong", nil)
		require.Equal(t, http.StatusUnauthorized, code, path)
		code, _ = status(path, "Bearer "+token+"x", nil)
		require.Equal(t, http.StatusUnauthorized, code, path)
	}
	code, _ := status("/api/keys", "Bearer "+token, nil)
	require.Equal(t, http.StatusOK, code)
	code, _ = status("/api/keys", "", &http.Cookie{Name: "revkv_token", Value: "nope"})
	require.Equal(t, http.StatusUnauthorized, code)
	code, resp = status("/key?key=cart%2F42&token="+url.QueryEscape(token), "", nil)
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/key?key=cart%2F42", resp.Header.Get("Location"), "the token leaves the address")
	var c *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "revkv_token" {
			c = ck
		}
	}
	require.NotNil(t, c)
	require.True(t, c.HttpOnly)
	code, _ = status("/api/keys", "", c)
	require.Equal(t, http.StatusOK, code)
	code, _ = status("/?token=wrong", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

// TestCheckBind: beyond loopback only with a token of 16 characters or
// more.
func TestCheckBind(t *testing.T) {
	tok := strings.Repeat("t", 16)
	for _, c := range []struct {
		addr, token, err string
	}{
		{"127.0.0.1:8380", "", ""},
		{"localhost:0", "", ""},
		{"[::1]:8380", "", ""},
		{":8380", "", "needs a token"},
		{"0.0.0.0:8380", "", "needs a token"},
		{"[::]:8380", "", "needs a token"},
		{"192.168.1.10:80", "", "needs a token"},
		{"example.com:80", "", "needs a token"},
		{"0.0.0.0:8380", tok, ""},
		{"0.0.0.0:8380", "short", "at least 16 characters"},
		{"8380", "", "is not an address"},
	} {
		err := web.CheckBind(c.addr, c.token)
		if c.err == "" {
			require.NoError(t, err, c.addr)
		} else {
			require.ErrorContains(t, err, c.err, c.addr)
		}
	}
}

// TestValues: JSON pretty-printed, binary in hex and base64, a large value
// cut with its size and whole on asking, and its bytes as a download.
func TestValues(t *testing.T) {
	st := serve(t, web.Options{})
	value := func(path string) map[string]any {
		status, m := get(t, st.url, path)
		require.Equal(t, 200, status, "%v", m)
		return m["value"].(map[string]any)
	}
	v := value("/api/entry?key=config/limits/api&rev=1")
	require.Equal(t, "json", v["kind"])
	require.Equal(t, "{\n  \"rate\": 100,\n  \"burst\": 20\n}", v["text"])
	v = value("/api/entry?key=blob/1&rev=8")
	require.Equal(t, "binary", v["kind"])
	require.True(t, strings.HasPrefix(v["text"].(string), "000102feff000102feff"))
	b, err := base64.StdEncoding.DecodeString(v["base64"].(string))
	require.NoError(t, err)
	got, _, _ := st.s.GetAt("blob/1", 8)
	require.Equal(t, got, b)
	v = value("/api/entry?key=big/text&rev=13")
	require.Equal(t, true, v["cut"])
	require.Equal(t, float64(12400), v["size"])
	require.Len(t, v["text"], 4096)
	v = value("/api/entry?key=big/text&rev=13&whole=1")
	require.Equal(t, false, v["cut"])
	require.Len(t, v["text"], 12400)

	resp, err := http.Get(st.url + "/api/value?key=blob/1&rev=8")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, got, raw)
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	require.Contains(t, resp.Header.Get("Content-Disposition"), "attachment")
}

// TestKeysCounts: the keys view's counts are the store's: live keys as
// Scan yields them, revisions as Changes does, each key's as History.
func TestKeysCounts(t *testing.T) {
	st := serve(t, web.Options{})
	for _, prefix := range []string{"", "config/", "cart/", "nothing/"} {
		status, m := get(t, st.url, "/api/keys?prefix="+prefix)
		require.Equal(t, 200, status)
		live, revs := 0, 0
		for range st.s.Scan(prefix) {
			live++
		}
		for _, err := range st.s.Changes(prefix, 1, st.s.Rev()) {
			require.NoError(t, err)
			revs++
		}
		require.Equal(t, float64(live), m["live_keys"], prefix)
		require.Equal(t, float64(revs), m["revisions"], prefix)
		for _, k := range m["keys"].([]any) {
			k := k.(map[string]any)
			key := k["key"].(string)
			require.Equal(t, float64(len(st.s.History(key))), k["revisions"], key)
			_, ok := st.s.Get(key)
			require.Equal(t, ok, k["live"], key)
		}
	}
	// Search, and pages of two.
	_, m := get(t, st.url, "/api/keys?q=LIMITS")
	require.Equal(t, float64(2), m["matched"])
	var seen []string
	after := ""
	for {
		_, m := get(t, st.url, "/api/keys?limit=2&after="+url.QueryEscape(after))
		for _, k := range m["keys"].([]any) {
			seen = append(seen, k.(map[string]any)["key"].(string))
		}
		next, ok := m["next_after"].(string)
		if !ok {
			break
		}
		after = next
	}
	require.Equal(t, []string{"big/text", "blob/1", "cart/42", "config/feature/dark", "config/limits/api", "config/limits/web", "config/name", "session/abc"}, seen)
}

// TestTimelineWindows: a key with more entries than max is counted in
// columns that hold them all, each kind apart; a window of at most max
// has a mark each, and a put knows when the next entry replaced it.
func TestTimelineWindows(t *testing.T) {
	clk := webtest.NewClock(webtest.Start)
	s := revkv.New[[]byte](revkv.WithClock(clk.Now))
	defer s.Close()
	for i := range 5000 {
		var err error
		switch {
		case i%100 == 99:
			_, err = s.Delete("k")
		case i%50 == 0:
			_, err = s.PutTTL("k", []byte("v"), 500*1000)
		default:
			_, err = s.Put("k", []byte(fmt.Sprint(i)))
		}
		require.NoError(t, err)
		clk.Add(1_000_000)
	}
	srv := httptest.NewServer(web.New(s, web.Options{}))
	defer srv.Close()
	var puts, deletes, expires int
	for _, e := range s.History("k") {
		switch e.Op {
		case revkv.OpPut:
			puts++
		case revkv.OpDelete:
			deletes++
		default:
			expires++
		}
	}
	_, m := get(t, srv.URL, "/api/timeline?key=k&max=100")
	require.Nil(t, m["marks"])
	var bp, bd, be float64
	for _, b := range m["bins"].([]any) {
		b := b.(map[string]any)
		bp, bd, be = bp+b["puts"].(float64), bd+b["deletes"].(float64), be+b["expires"].(float64)
	}
	require.Equal(t, []float64{float64(puts), float64(deletes), float64(expires)}, []float64{bp, bd, be})
	_, m = get(t, srv.URL, "/api/timeline?key=k&from=1000&to=1099")
	marks := m["marks"].([]any)
	require.Len(t, marks, 100)
	first := marks[0].(map[string]any)
	require.Equal(t, float64(1000), first["rev"])
	second := marks[1].(map[string]any)
	if first["op"] == "put" {
		require.Equal(t, second["time_ns"], first["next_ns"])
	}
	_, m = get(t, srv.URL, "/api/history?key=k&from=4990&limit=5")
	require.Len(t, m["entries"], 5)
	require.Equal(t, float64(4995), m["next_from"])
}

// TestVerifyAPI: the digest verifies at its revision, a wrong one does
// not, each in one sentence; the whole history re-hashes to yes.
func TestVerifyAPI(t *testing.T) {
	st := serve(t, web.Options{})
	_, m := get(t, st.url, "/api/digest")
	head, d, err := st.s.Digest()
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%x", d), m["digest"])
	require.Equal(t, float64(head), m["rev"])
	for rev := revkv.Revision(0); rev <= head; rev++ {
		dr, err := st.s.DigestAt(rev)
		require.NoError(t, err)
		_, m = get(t, st.url, fmt.Sprintf("/api/verify?rev=%d&digest=%x", rev, dr))
		require.Equal(t, true, m["ok"], "%v", m)
		require.True(t, strings.HasPrefix(m["sentence"].(string), "Yes: "))
		dr[31] ^= 1
		_, m = get(t, st.url, fmt.Sprintf("/api/verify?rev=%d&digest=%x", rev, dr))
		require.Equal(t, false, m["ok"], "%v", m)
		require.True(t, strings.HasPrefix(m["sentence"].(string), "No: "))
	}
	resp, err := streamClient.Get(st.url + "/api/verify/all")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := readEvents(t, resp.Body, "result")
	res := events[len(events)-1]
	require.Equal(t, "result", res.name, "%v", events)
	require.Equal(t, true, res.data["ok"], "%v", res.data)
	require.Equal(t, float64(head), res.data["rehashed"])
	require.Equal(t, fmt.Sprintf("%x", d), res.data["digest"])

	// A store made by New keeps no chain: said so, not an error of the server.
	s := revkv.New[[]byte]()
	defer s.Close()
	srv := httptest.NewServer(web.New(s, web.Options{}))
	defer srv.Close()
	_, m = get(t, srv.URL, "/api/digest")
	require.Equal(t, false, m["chain"])
	status, m := get(t, srv.URL, "/api/verify/all")
	require.Equal(t, 404, status)
	require.Contains(t, m["error"], "keeps no hash chain")
}

type event struct {
	name string
	data map[string]any
}

// streamClient reads event streams: an event that never comes fails the
// test in seconds, not at the test binary's deadline.
var streamClient = &http.Client{Timeout: 30 * time.Second}

// readEvents reads server-sent events until one named last.
func readEvents(t *testing.T, r io.Reader, last string) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(r)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m))
			out = append(out, event{name, m})
			if name == last || name == "failure" {
				return out
			}
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// TestLiveEvents: on a live store, the page is told of each new revision
// and of the keys written, as they commit.
func TestLiveEvents(t *testing.T) {
	s := revkv.New[[]byte]()
	defer s.Close()
	srv := httptest.NewServer(web.New(s, web.Options{Live: true}))
	defer srv.Close()
	resp, err := streamClient.Get(srv.URL + "/api/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	rev, err := s.Put("a/1", []byte("x"))
	require.NoError(t, err)
	ev := readEvents(t, resp.Body, "revision")
	require.Equal(t, float64(rev), ev[len(ev)-1].data["rev"])
	require.Equal(t, []any{"a/1"}, ev[len(ev)-1].data["keys"])
	s.Put("a/2", []byte("y"))
	rev, _ = s.Delete("a/1")
	for {
		ev = readEvents(t, resp.Body, "revision")
		if ev[len(ev)-1].data["rev"] == float64(rev) {
			break
		}
	}
}

// TestLiveEventsFromTheRequest: a revision committed after the stream's
// headers are sent but before its watch starts is still told. (Watching
// from "what comes next" lost it, and the page waited for ever.)
func TestLiveEventsFromTheRequest(t *testing.T) {
	s := revkv.New[[]byte]()
	defer s.Close()
	var rev revkv.Revision
	defer web.SetStreamStarted(func() {
		var err error
		rev, err = s.Put("early", []byte("x"))
		require.NoError(t, err)
	})()
	srv := httptest.NewServer(web.New(s, web.Options{Live: true}))
	defer srv.Close()
	resp, err := streamClient.Get(srv.URL + "/api/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	ev := readEvents(t, resp.Body, "revision")
	require.NotEmpty(t, ev, "the stream ended before telling revision %d", rev)
	require.Equal(t, float64(rev), ev[len(ev)-1].data["rev"])
	require.Equal(t, []any{"early"}, ev[len(ev)-1].data["keys"])
}
