package browser

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/web"
	"github.com/revkv/revkv/web/webtest"
	"github.com/stretchr/testify/require"
)

// TestMillion: a key with 1,000,000 revisions (puts, a TTL every 250th
// write that runs out before the next, a delete every 1,000th), and the
// time from the timeline page's navigation to its first view drawn, as the
// browser measures it: under a second, the first time (History read
// whole, counted in columns) and again once the key's history is held.
// Behind -million: building the key takes a few seconds.
//
//	go test -run Million -million -v
func TestMillion(t *testing.T) {
	if !*million {
		t.Skip("no -million: the 1M-revision render is measured only when asked")
	}
	ctx := tab(t)
	const n = 1_000_000
	clk := webtest.NewClock(webtest.Start)
	s := revkv.New[[]byte](revkv.WithClock(clk.Now))
	t.Cleanup(func() { s.Close() })
	val := []byte(`{"celsius": 21.5}`)
	built := time.Now()
	for i := 0; s.Rev() < n; i++ {
		var err error
		switch {
		case i%1000 == 999:
			_, err = s.Delete("sensor/1")
		case i%250 == 0:
			_, err = s.PutTTL("sensor/1", val, 500*time.Microsecond)
		default:
			_, err = s.Put("sensor/1", val)
		}
		require.NoError(t, err)
		clk.Add(time.Millisecond)
	}
	t.Logf("built %d revisions of one key in %v", s.Rev(), time.Since(built).Round(time.Millisecond))
	srv := httptest.NewServer(web.New(s, web.Options{Title: "1M revisions"}))
	t.Cleanup(srv.Close)
	for _, run := range []string{"first", "again"} {
		do(t, ctx, open(srv.URL+"/key?key=sensor/1"))
		since := eval[string](t, ctx, `document.getElementById("timeline").dataset.sinceNavigation`)
		api := eval[string](t, ctx, `document.getElementById("timeline").dataset.renderMs`)
		bins := eval[int](t, ctx, `document.querySelectorAll(".timeline .bin").length`)
		ms, err := strconv.Atoi(since)
		require.NoError(t, err)
		fmt.Printf("1M revisions, %s view: drawn %d ms after navigation began (%s ms for the timeline request and drawing), %d columns\n", run, ms, api, bins)
		require.Positive(t, bins)
		require.Less(t, ms, 1000, "%s view of a key with 1M revisions", run)
	}
	// Zoomed into one column: the marks of its entries, drawn one by one.
	do(t, ctx, open(srv.URL+"/key?key=sensor/1&from=500000&to=500300"))
	marks := eval[int](t, ctx, `document.querySelectorAll(".timeline .mark").length`)
	require.Equal(t, 301, marks)
}
