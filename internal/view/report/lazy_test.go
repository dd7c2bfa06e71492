package report

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

var (
	lazyBox = regexp.MustCompile(`<div class="lazy" style="height:\d+px" data-ids="([^"]*)"><script type="application/gzip">([A-Za-z0-9+/=]*)</script><p class="meta">\d+ closed steps?: [^<]*</p></div>`)
	idAttr  = regexp.MustCompile(`\bid="([^"]+)"`)
)

// unlazy is the page as the script makes it once every box is shown: each
// lazy box replaced by the markup it holds, which must name exactly the
// ids its data-ids says.
func unlazy(t testing.TB, page string) string {
	t.Helper()
	var bad error
	out := lazyBox.ReplaceAllStringFunc(page, func(box string) string {
		m := lazyBox.FindStringSubmatch(box)
		z, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			bad = err
			return box
		}
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			bad = err
			return box
		}
		markup, err := io.ReadAll(zr)
		if err != nil {
			bad = err
			return box
		}
		var ids []string
		for _, id := range idAttr.FindAllStringSubmatch(string(markup), -1) {
			ids = append(ids, id[1])
		}
		if want := strings.Fields(html.UnescapeString(m[1])); !slices.Equal(ids, want) {
			bad = fmt.Errorf("a box's data-ids say %q, its markup has %q", want, ids)
		}
		return string(markup)
	})
	if bad != nil {
		t.Fatal(bad)
	}
	if strings.Contains(out, `class="lazy"`) {
		t.Fatal("a lazy box not in the expected form")
	}
	return out
}

// A long page keeps the steps that start closed out of its markup, as
// gzipped data its one script (allowed by its hash, nothing else) shows;
// steps that start open stay markup, a short page has no script at all,
// and every step is in the page once, in order, whichever way.
func TestReportLazyClosedSteps(t *testing.T) {
	for _, c := range []struct {
		n      int
		failed int // the visit that fails (0: none): open in a run of up to 500
		lazy   bool
	}{
		{n: 10, failed: 3},
		{n: 150, failed: 0},
		{n: 250, failed: 7, lazy: true},
		{n: 600, failed: 7, lazy: true},
	} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			b := board.New(board.Run{ID: "r", StartedAt: t0})
			for i := 1; i <= c.n; i++ {
				st := "succeeded"
				if i == c.failed {
					st = "failed"
				}
				b.AddStep(step("s", i, "", st, i*10, 5, `{"output":"out <b>`+fmt.Sprint(i)+`</b>"}`))
			}
			var buf bytes.Buffer
			if err := WriteAt(&buf, b, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			raw := buf.String()
			scripts := strings.Count(raw, "<script")
			csp := regexp.MustCompile(`script-src '(sha256-[^']+)'`).FindStringSubmatch(html.UnescapeString(raw))
			if !c.lazy {
				if scripts != 0 || csp != nil || strings.Contains(raw, `class="lazy"`) {
					t.Fatalf("a page of %d steps has a script or lazy boxes", c.n)
				}
				return
			}
			if csp == nil {
				t.Fatal("no script-src in the CSP")
			}
			h := sha256.Sum256([]byte(lazyScript))
			if csp[1] != "sha256-"+base64.StdEncoding.EncodeToString(h[:]) || !strings.Contains(raw, "<script>"+lazyScript+"</script>") {
				t.Error("the CSP's hash is not the page's script's")
			}
			if got := strings.Count(raw, "<script>"); got != 1 {
				t.Errorf("%d scripts that run, want 1", got)
			}
			boxes := lazyBox.FindAllString(raw, -1)
			if len(boxes) == 0 || scripts != len(boxes)+1 {
				t.Errorf("%d lazy boxes, %d script elements", len(boxes), scripts)
			}
			open := c.n <= 500 && c.failed > 0
			for i := 1; i <= c.n; i++ {
				in := strings.Contains(raw, fmt.Sprintf(`id="step-s-%d"`, i))
				if want := open && i == c.failed; in != want {
					t.Fatalf("visit %d as markup: %v, want %v", i, in, want)
				}
			}
			all := unlazy(t, raw)
			last := -1
			for i := 1; i <= c.n; i++ {
				id := fmt.Sprintf(`id="step-s-%d"`, i)
				if strings.Count(all, id) != 1 || strings.Index(all, id) < last {
					t.Fatalf("visit %d not once, in order", i)
				}
				last = strings.Index(all, id)
				if !strings.Contains(all, fmt.Sprintf("out &lt;b&gt;%d&lt;/b&gt;", i)) {
					t.Fatalf("visit %d's output is not there, escaped", i)
				}
			}
		})
	}
}
