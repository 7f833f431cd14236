package browser

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestScreenshots writes a PNG of each view into the -screenshots
// directory (the README shows them from docs/page): at 1280 px, the
// timeline also in dark and on a phone.
//
//	go test -run Screenshots -screenshots ../docs/page
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("no -screenshots DIR: no pictures to write")
	}
	ctx := tab(t)
	st := serve(t)
	require.NoError(t, os.MkdirAll(*screenshots, 0o755))
	dm, err := st.s.DigestAt(st.Mid)
	require.NoError(t, err)
	shoot := func(name string, w, h int64, steps ...chromedp.Action[chromedp.Void]) {
		do(t, ctx, chromedp.EmulateViewport(w, h))
		do(t, ctx, steps...)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644))
	}
	dark := func(on bool) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			p := emulation.SetEmulatedMediaParams{}
			if on {
				p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
			}
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, p)
			return err
		})
	}
	timeline := []chromedp.Action[chromedp.Void]{open(st.url + "/key?key=cart/42"), chromedp.Click(chromedp.CSS(`.timeline .mark.noted .shape`))}
	shoot("keys", 1280, 800, open(st.url+"/"))
	shoot("timeline", 1280, 800, timeline...)
	shoot("state", 1280, 800, open(fmt.Sprintf("%s/state?rev=%d", st.url, st.Mid)))
	shoot("diff", 1280, 800, open(fmt.Sprintf("%s/diff?from=3&to=%d", st.url, st.Head)))
	shoot("verify", 1280, 800, open(fmt.Sprintf("%s/verify?rev=%d&digest=%s", st.url, st.Mid, hex.EncodeToString(dm[:]))),
		chromedp.Click(chromedp.CSS(`#verify-all`)), chromedp.WaitReady(chromedp.CSS(`#whole-sentence`)))
	shoot("timeline-dark", 1280, 800, append([]chromedp.Action[chromedp.Void]{dark(true)}, timeline...)...)
	do(t, ctx, dark(false))
	shoot("timeline-phone", 390, 844, timeline...)
}
