// Package web serves a read-only page over a revkv store: the keys under
// a prefix, a key's history as a timeline, the state at any revision or
// time, the diff between two moments, and the hash chain's digest, with
// the JSON API under /api/ that the page itself uses (documented in the
// README). cmd/revkv's serve command and revkv-server's --http flag serve
// it; the root package never imports it.
//
// The page is html/template and embedded files (HTML, CSS, one script):
// no build step, nothing fetched at run time. Every value reaches the
// page as JSON and is put there as text, never as markup; the
// Content-Security-Policy allows scripts and styles from the page's own
// origin only. There is no write endpoint: every method but GET and HEAD
// is 405.
//
// Access: with no token, the handler answers only requests whose Host is
// a loopback name (localhost, 127.0.0.1, [::1]), so a web site that
// rebinds its name to 127.0.0.1 reads nothing; CheckBind refuses to bind
// anywhere else without a token. With a token, every request must carry
// it: "Authorization: Bearer TOKEN", or ?token=TOKEN once, which the
// handler turns into a cookie for the page's own later requests.
package web

import (
	"crypto/subtle"
	"embed"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/revkv/revkv"
)

// Store is the store the page reads: every revkv directory holds []byte
// values.
type Store = revkv.Store[[]byte]

// Entry is one entry of the store's history.
type Entry = revkv.Entry[[]byte]

// Options configure a Handler.
type Options struct {
	// Token, if not empty, is required on every request.
	Token string
	// Live says the store is being written while the page is served (by
	// revkv-server): the page follows new revisions (/api/events).
	Live bool
	// Title names what is served (a directory, a server's address).
	Title string
	// Hide, if not empty, is a key prefix the page leaves out of its lists
	// of keys, its counts, its state, its diffs and its events:
	// revkv-server's internal records of its collections' elements. A key
	// asked for by name is still shown.
	Hide string
}

// Handler is the page and its API over one store. It only reads the
// store; it never closes it.
type Handler struct {
	s    *Store
	opts Options
	mux  *http.ServeMux
	page *template.Template

	mu      sync.Mutex // guards hist and verifyN
	hist    histCache
	verifyN int // whole-history verifications running

	countsMu sync.Mutex     // guards prefixes; held while a walk brings one up to date
	prefixes []*prefixCount // most recently used first
}

//go:embed assets
var assets embed.FS

// views are the page's paths; each is the same page, which reads its
// query and asks the API.
var views = map[string]string{
	"/": "keys", "/key": "key", "/state": "state", "/diff": "diff", "/verify": "verify", "/entry": "entry",
}

// hidden reports whether the page leaves key out of its lists (Options.Hide).
func (h *Handler) hidden(key string) bool {
	return h.opts.Hide != "" && strings.HasPrefix(key, h.opts.Hide)
}

// New returns the handler for s.
func New(s *Store, opts Options) *Handler {
	h := &Handler{s: s, opts: opts, mux: http.NewServeMux()}
	h.page = template.Must(template.ParseFS(assets, "assets/page.html"))
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	for _, name := range []string{"app.js", "app.css", "favicon.svg"} {
		h.mux.Handle("/static/"+name, http.StripPrefix("/static", files))
	}
	for path, view := range views {
		h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				h.notFound(w, r)
				return
			}
			h.servePage(w, view)
		})
	}
	h.routeAPI()
	return h
}

// ServeHTTP checks the method, the host and the token, sets the security
// headers, and serves the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		h.fail(w, http.StatusMethodNotAllowed, "the page is read-only: only GET and HEAD are served, not %s", r.Method)
		return
	}
	if !h.allowed(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// allowed checks the token, or without one the Host header, and answers
// the request when it is refused. A ?token= that matches sets the cookie
// and redirects to the same URL without it.
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.Token == "" {
		if !loopbackHost(r.Host) {
			h.fail(w, http.StatusForbidden, "this page answers only to localhost, 127.0.0.1 or [::1], not %q (serve it with a token to reach it by another name)", r.Host)
			return false
		}
		return true
	}
	if q := r.URL.Query(); q.Has("token") && h.tokenIs(q.Get("token")) {
		http.SetCookie(w, &http.Cookie{Name: "revkv_token", Value: h.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h.tokenIs(bearer) {
		return true
	}
	if c, err := r.Cookie("revkv_token"); err == nil && h.tokenIs(c.Value) {
		return true
	}
	hd := w.Header()
	hd.Set("WWW-Authenticate", `Bearer realm="revkv"`)
	h.fail(w, http.StatusUnauthorized, "a token is required: open the page once with ?token=TOKEN, or send Authorization: Bearer TOKEN")
	return false
}

func (h *Handler) tokenIs(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(h.opts.Token)) == 1
}

// loopbackHost says whether a Host header names this machine's loopback.
func loopbackHost(host string) bool {
	if hp, _, err := net.SplitHostPort(host); err == nil {
		host = hp
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pageData is what the page's template is given.
type pageData struct {
	View, Title string
	Live        bool
}

func (h *Handler) servePage(w http.ResponseWriter, view string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	title := h.opts.Title
	if title == "" {
		title = "revkv"
	}
	if err := h.page.Execute(w, pageData{View: view, Title: title, Live: h.opts.Live}); err != nil {
		// The header is written: nothing better to do than stop.
		return
	}
}
