package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A for_each of 30 items in the report as a reader sees it in Chromium:
// one closed section whose summary counts the items, opened by a click,
// its rows in input order; a link to an item opens the closed sections
// around it (no script: the browser does it for the fragment); the
// filter "failed" keeps the group of the failed item and that item only.
func TestReportGroupsInChromium(t *testing.T) {
	chromium(t)
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	var items []string
	for i := range 30 {
		items = append(items, "i"+string(rune('a'+i/10))+string(rune('0'+i%10)))
	}
	os.WriteFile(plan, []byte(`version: 1
name: groups
steps:
  - label: each
    type: command
    for_each: split("`+strings.Join(items, " ")+`", " ")
    max_concurrency: 4
    fail_fast: false
    continue_on_error: true
    run: 'test "${{ item }}" != ib7'
  - {label: after, type: command, run: "true"}
`), 0o644)
	r := runCLI(t, wd, "run", plan, "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	page := filepath.Join(wd, "report.html")
	if r := runCLI(t, wd, "report", bb, "-o", page); r.code != 0 {
		t.Fatalf("report: exit %d %s", r.code, r.stderr)
	}
	d := openDevtools(t, "file://"+page)
	group := `document.getElementById("step-each-1")`
	if got := d.Eval(group + `.open`); got != "false" {
		t.Errorf("the 30 items' group is open by default")
	}
	if got := d.String(group + `.querySelector("summary .group-sum").textContent`); got != "30 items: 29 succeeded, 1 failed" {
		t.Errorf("the group's summary says %q", got)
	}
	if got := d.Eval(`document.querySelector('#steps [data-label="each[0]"]').checkVisibility()`); got != "false" {
		t.Errorf("a closed group's row is shown")
	}
	order := `[...` + group + `.querySelectorAll(":scope > .kids > .step")].map(s => s.dataset.label).join(" ")`
	var want []string
	for i := range 30 {
		want = append(want, "each["+itoa(i)+"]")
	}
	if got := d.String(order); got != strings.Join(want, " ") {
		t.Errorf("the items' rows, in page order: %s", got)
	}
	d.Eval(group + `.querySelector("summary").click()`)
	if got := d.Eval(group + `.open`); got != "true" {
		t.Errorf("a click on its summary does not open the group")
	}
	d.Eval(group + `.open = false`)
	// A shared link to an item.
	d.Eval(`location.hash = "#step-each[17]-1"`)
	d.WaitFor(group+`.open`, "the link to an item to open its group")
	if got := d.Eval(`document.getElementById("step-each[17]-1").checkVisibility()`); got != "true" {
		t.Errorf("the linked item is not shown")
	}
	d.Eval(`document.querySelector('label[for="f-failed"]').click()`)
	visible := `[...document.querySelectorAll("#steps .step")].filter(e => e.checkVisibility()).map(e => e.dataset.label).join(" ")`
	if got := d.String(visible); got != "each each[17]" {
		t.Errorf("filter failed shows %q, want the group and its failed item", got)
	}
}
