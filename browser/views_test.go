package browser

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web/webtest"
	"github.com/stretchr/testify/require"
)

// TestTimeline: the timeline of a key with puts, deletes, a TTL and an
// expiry draws one mark of the right kind for each entry, a TTL span for
// each put with a TTL ending exactly at its expiry (the expiry mark's
// time, to the nanosecond, and its x), a flag on the annotated entry; a
// mark reached with the keyboard opens its entry.
func TestTimeline(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	type marks struct {
		Puts, Deletes, Expires, TTLs, Noted int
		TTLEnd, ExpireTime                  string
		TTLx2, Expirex                      float64
	}
	do(t, ctx, open(st.url+"/key?key="+webtest.Timeline))
	got := eval[marks](t, ctx, `(() => {
			const q = (s) => document.querySelectorAll(s);
			const exp = document.querySelector(".timeline .mark.expire");
			const expRev = exp.dataset.rev;
			// The TTL that ran out: the one whose expiry is the expire mark's time.
			const row = document.querySelector('#entries tr[data-rev="' + expRev + '"] .time-cell').textContent;
			const ttl = [...q(".timeline .ttl")].find((l) => l.dataset.expires === row);
			const shape = exp.querySelector(".shape").getAttribute("d"); // M x y ...
			return {
				puts: q(".timeline .mark.put").length, deletes: q(".timeline .mark.delete").length,
				expires: q(".timeline .mark.expire").length, ttls: q(".timeline .ttl").length,
				noted: q(".timeline .mark.noted").length,
				ttlEnd: ttl ? ttl.dataset.expires : "", expireTime: row,
				ttlx2: ttl ? Number(ttl.getAttribute("x2")) : -1, expirex: Number(shape.slice(1).split(" ")[0]),
			};
		})()`)
	require.Equal(t, st.Puts, got.Puts, "put marks")
	require.Equal(t, st.Deletes, got.Deletes, "delete marks")
	require.Equal(t, st.Expires, got.Expires, "expiry marks")
	require.Equal(t, st.TTLs, got.TTLs, "TTL spans")
	require.Equal(t, 1, got.Noted, "the annotated put has a flag")
	var expired revkv.Entry[[]byte]
	for _, e := range st.s.History(webtest.Timeline) {
		if e.Op == revkv.OpExpire {
			expired = e
		}
	}
	require.Equal(t, expired.Time.UTC().Format(time.RFC3339Nano), got.ExpireTime)
	require.Equal(t, got.ExpireTime, got.TTLEnd, "the TTL span ends at the exact expiry")
	require.InDelta(t, got.Expirex, got.TTLx2, 0.01, "and is drawn to the expiry mark")

	// The keyboard: focus the delete mark, press Enter, read its entry.
	var del revkv.Entry[[]byte]
	for _, e := range st.s.History(webtest.Timeline) {
		if e.Op == revkv.OpDelete {
			del = e
		}
	}
	do(t, ctx, chromedp.Focus(chromedp.CSS(`.timeline .mark.delete`)), chromedp.KeyEvent("\r"))
	require.Equal(t, fmt.Sprint(del.Rev), text(t, ctx, `#detail-rev`))
}

// shownRow is a row of the state view as the browser shows it.
type shownRow struct {
	Key, Kind, Text string
	Rev             int64
}

const stateRows = `[...document.querySelectorAll("#state tbody tr")].filter((tr) => tr.querySelector("pre")).map((tr) => ({
	key: tr.querySelector("td.key").textContent, rev: Number(tr.children[2].textContent.replace(/,/g, "")),
	kind: tr.querySelector("pre").className.replace("value kind-", ""), text: tr.querySelector("pre").textContent }))`

// wantShown is how the page must show value v: JSON pretty-printed (here
// compared compacted), other text as it is, bytes in hex; cut at 4 KiB.
func wantShown(t *testing.T, row shownRow, v []byte) {
	t.Helper()
	switch row.Kind {
	case "json":
		var a, b bytes.Buffer
		require.NoError(t, json.Compact(&a, []byte(row.Text)), row.Key)
		require.NoError(t, json.Compact(&b, v), row.Key)
		require.Equal(t, b.String(), a.String(), row.Key)
	case "binary":
		require.Equal(t, hex.EncodeToString(v), row.Text, row.Key)
	default:
		if len(v) > 4096 {
			require.Equal(t, string(v[:4096]), row.Text, "%s: cut at 4 KiB", row.Key)
			return
		}
		require.Equal(t, string(v), row.Text, row.Key)
	}
}

// TestStateMatchesAt: the state view at a revision shows what
// At(rev).Scan yields, key by key, value by value, with each key's
// revision; at a time, given to the nanosecond, what AsOf shows, one
// nanosecond before a revision the one before it.
func TestStateMatchesAt(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	check := func(path string, rev revkv.Revision) {
		do(t, ctx, open(st.url+path))
		rows := eval[[]shownRow](t, ctx, stateRows)
		require.Equal(t, fmt.Sprint(rev), text(t, ctx, `#state-rev`), path)
		v, err := st.s.At(rev)
		require.NoError(t, err)
		defer v.Close()
		i := 0
		for k, val := range v.Scan("") {
			require.Less(t, i, len(rows), "%s: the page shows fewer keys than At(%d).Scan", path, rev)
			require.Equal(t, k, rows[i].Key, path)
			e, _ := v.Entry(k)
			require.Equal(t, int64(e.Rev), rows[i].Rev, path)
			wantShown(t, rows[i], val)
			i++
		}
		require.Equal(t, i, len(rows), "%s: the page shows more keys than At(%d).Scan", path, rev)
	}
	for _, rev := range []revkv.Revision{0, 1, st.Mid, st.Head} {
		check(fmt.Sprintf("/state?rev=%d", rev), rev)
	}
	var mid revkv.Entry[[]byte]
	for e := range st.s.Changes("", st.Mid, st.Mid) {
		mid = e
	}
	at := mid.Time.UTC()
	check("/state?at="+at.Format(time.RFC3339Nano), st.Mid)
	check("/state?at="+at.Add(-time.Nanosecond).Format(time.RFC3339Nano), st.Mid-1)
}

// TestDiffMatches: the diff view lists what Diff yields, key by key, each
// with the kind of change told from the key's history (an expiry is not a
// delete), the counts of each kind, and a changed value's difference
// highlighted.
func TestDiffMatches(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	kinds := map[string]int{} // over every range: each kind is seen
	for _, r := range [][2]revkv.Revision{{0, st.Head}, {3, st.Head}, {st.Mid, st.Head}, {2, st.Mid}, {4, 7}, {14, st.Head}, {st.Head, st.Head}} {
		do(t, ctx, open(fmt.Sprintf("%s/diff?from=%d&to=%d", st.url, r[0], r[1])))
		rows := eval[[]struct{ Key, Kind, Mark string }](t, ctx, `[...document.querySelectorAll("#diff tbody tr[data-kind]")].map((tr) => ({key: tr.querySelector("td.key").textContent,
				kind: tr.dataset.kind, mark: [...tr.querySelectorAll("mark.d-add")].map((m) => m.textContent).join("|")}))`)
		counts := eval[map[string]string](t, ctx, `Object.fromEntries(["added","changed","deleted","expired"].map((k) => [k, document.getElementById("count-"+k).textContent]))`)
		want := map[string]int{}
		i := 0
		for d, err := range st.s.Diff("", r[0], r[1]) {
			require.NoError(t, err)
			kind := "changed"
			switch {
			case d.Before.Rev == 0:
				kind = "added"
			case d.After.Rev == 0:
				kind = "deleted"
				var last revkv.Entry[[]byte]
				for _, e := range st.s.History(d.Key) {
					if e.Rev <= r[1] {
						last = e
					}
				}
				if last.Op == revkv.OpExpire {
					kind = "expired"
				}
			}
			want[kind]++
			kinds[kind]++
			require.Less(t, i, len(rows), "%v: the page shows fewer keys than Diff", r)
			require.Equal(t, d.Key, rows[i].Key, "%v", r)
			require.Equal(t, kind, rows[i].Kind, "%v %s", r, d.Key)
			if d.Key == "config/limits/api" && kind == "changed" {
				require.Equal(t, "2|,|  \"note\": \"raised\"\n", rows[i].Mark, "only what changed is highlighted")
			}
			i++
		}
		require.Equal(t, i, len(rows), "%v: the page shows more keys than Diff", r)
		for _, k := range []string{"added", "changed", "deleted", "expired"} {
			require.Equal(t, fmt.Sprint(want[k]), counts[k], "%v: count of %s", r, k)
		}
	}
	for _, k := range []string{"added", "changed", "deleted", "expired"} {
		require.Positive(t, kinds[k], "no range shows a key %s", k)
	}
}

// TestVerify: the page shows the latest digest; a digest taken at a
// revision verifies and one differing in one hex digit does not, each in
// one sentence; the whole history re-hashes with a progress bar to a yes.
func TestVerify(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	head, d, err := st.s.Digest()
	require.NoError(t, err)
	do(t, ctx, open(st.url+"/verify"), chromedp.WaitReady(chromedp.CSS(`#digest`)))
	require.Equal(t, hex.EncodeToString(d[:]), text(t, ctx, `#digest`))
	require.Equal(t, fmt.Sprint(head), text(t, ctx, `#digest-rev`))

	dm, err := st.s.DigestAt(st.Mid)
	require.NoError(t, err)
	good := hex.EncodeToString(dm[:])
	bad := good[:10] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", good[10])+1)%16]) + good[11:]
	for _, c := range []struct {
		digest, ok, begins string
	}{{good, "true", "Yes: "}, {bad, "false", "No: "}, {strings.ToUpper(good), "true", "Yes: "}} {
		// Typed into the form and submitted with the keyboard.
		do(t, ctx, open(st.url+"/verify"),
			chromedp.SendKeys(chromedp.CSS(`#verify-rev`), fmt.Sprint(st.Mid)),
			chromedp.SendKeys(chromedp.CSS(`#verify-digest`), c.digest+"\r"),
			chromedp.WaitReady(chromedp.CSS(`#sentence`)))
		sentence := text(t, ctx, `#sentence`)
		require.Equal(t, c.ok, eval[string](t, ctx, `document.getElementById("sentence").dataset.ok`), sentence)
		require.True(t, strings.HasPrefix(sentence, c.begins), sentence)
		require.True(t, strings.HasSuffix(sentence, ".") && !strings.Contains(sentence, ". "), "one sentence: %s", sentence)
	}

	do(t, ctx, open(st.url+"/verify"), chromedp.Click(chromedp.CSS(`#verify-all`)), chromedp.WaitReady(chromedp.CSS(`#whole-sentence`)))
	whole := text(t, ctx, `#whole-sentence`)
	require.Equal(t, "true", eval[string](t, ctx, `document.getElementById("whole-sentence").dataset.ok`), whole)
	require.Contains(t, whole, hex.EncodeToString(d[:]))
}

// TestScriptIsText: a value holding <script> and an <img onerror> shows
// as its text on every view that shows it, and runs nothing: no element
// of it reaches the page, and the global it would set stays unset.
func TestScriptIsText(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	for _, path := range []string{"/state", "/key?key=config/name", "/entry?key=config/name&rev=9", "/diff?from=0&to=" + fmt.Sprint(st.Head), "/?q=name"} {
		type page struct {
			Pwned   string
			Scripts int
			Imgs    int
			Shown   bool
		}
		do(t, ctx, open(st.url+path), chromedp.Sleep(100*time.Millisecond))
		got := eval[page](t, ctx, `({
			pwned: String(window.__pwned), scripts: document.scripts.length, imgs: document.images.length,
			shown: [...document.querySelectorAll("pre, a, td")].some((n) => n.textContent === `+jsString(webtest.Script)+`) ||
				[...document.querySelectorAll("td.key")].some((n) => n.textContent === "config/name") })`)
		require.Equal(t, "undefined", got.Pwned, path)
		require.Equal(t, 1, got.Scripts, "%s: only the page's own script", path)
		require.Zero(t, got.Imgs, path)
		require.True(t, got.Shown, "%s shows the value (or its key) as text", path)
	}
	do(t, ctx, open(st.url+"/entry?key=config/name&rev=9"))
	require.Equal(t, webtest.Script, text(t, ctx, `.entry pre.value`))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestKeys: the keys view counts the live keys and the revisions under
// the prefix as the store does, browses into a prefix by its link, and
// searches by a part of the name.
func TestKeys(t *testing.T) {
	ctx := tab(t)
	st := serve(t)
	do(t, ctx, open(st.url+"/"))
	revs := 0
	for range st.s.Changes("", 1, st.s.Rev()) {
		revs++
	}
	require.Equal(t, fmt.Sprint(st.s.Len()), text(t, ctx, "#live-keys"))
	require.Equal(t, fmt.Sprint(revs), text(t, ctx, "#revisions"))
	rows := `[...document.querySelectorAll("#keys tbody td.key")].map((td) => td.textContent)`
	require.Len(t, eval[[]string](t, ctx, rows), 8)

	// Into config/ by its link, with the keyboard.
	do(t, ctx, chromedp.Focus(chromedp.CSS(`nav.children a[href="/?prefix=config%2F"]`)), chromedp.KeyEvent("\r"),
		arrived("prefix=config%2F"))
	require.Equal(t, []string{"config/feature/dark", "config/limits/api", "config/limits/web", "config/name"}, eval[[]string](t, ctx, rows))
	live := 0
	for range st.s.Scan("config/") {
		live++
	}
	require.Equal(t, fmt.Sprint(live), text(t, ctx, "#live-keys"))

	do(t, ctx, open(st.url+"/"), chromedp.SendKeys(chromedp.CSS(`input[name=q]`), "LIMITS\r"), arrived("q=LIMITS"))
	require.Equal(t, []string{"config/limits/api", "config/limits/web"}, eval[[]string](t, ctx, rows))
}

// arrived waits until the page navigated to an address holding query and
// drew itself (asking again while the navigation replaces the page).
func arrived(query string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		expr := `location.search.includes(` + jsString(query) + `) && document.body.dataset.ready === "1"`
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
				return nil
			}
		}
		return fmt.Errorf("the page did not arrive at %q", query)
	})
}
