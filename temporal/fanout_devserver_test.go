package temporal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// A 200-item fan-out under a 300-event bound on a dev server: the run
// continues as new between items several times, no part's history passes
// the bound by more than the items under way add, and the saved board is
// the in-process run's, record for record.
func TestDevServerFanOutAcrossParts(t *testing.T) {
	c := newCluster(t)
	c.worker(t)
	src := `
version: 1
steps:
  - label: each
    type: command
    for_each: '0..199'
    max_concurrency: 5
    run: "echo ${{ item }}"
  - {label: seen, type: command, run: "echo ${{ len(steps.each.outputs) }} ${{ steps.each.outputs[0] }} ${{ steps.each.outputs[199] }}"}
`
	plan := writePlan(t, c.work, src)
	out := filepath.Join(c.work, "bb.json")
	const bound = 300
	run := c.run(t, plan, out, "--max-history-events", "300")
	if code := run.wait(t, 20*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%.4000s", code, run.out)
	}
	e := endOf(t, run.out.String())
	if e.Parts < 2 {
		t.Errorf("the run took %d part(s); want the for_each to continue as new between items", e.Parts+1)
	}
	got := loadBoard(t, out)
	want, _ := inProcess(t, src)
	if got.Run().Status != "succeeded" || !strings.Contains(string(lastRecord(got, "seen").Result), `"output":"200 0 199"`) {
		t.Errorf("run %s %q; seen %s", got.Run().Status, got.Run().Error, lastRecord(got, "seen").Result)
	}
	if d := sameCross(want, got); d != "" {
		t.Errorf("the boards differ from the in-process run: %s", d)
	}
	tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowId = '" + WorkflowIDOf(got.Run()) + "'"})
	if err != nil {
		t.Fatal(err)
	}
	most := int64(0)
	for _, x := range resp.Executions {
		most = max(most, x.HistoryLength)
	}
	// The items under way when the bound is reached still finish in the
	// part: 5 at most here, about 6 events each, and a few tasks'.
	if len(resp.Executions) < 3 || most > bound+5*eventsPerStep+20 {
		t.Errorf("%d runs, the longest %d events; want several, each near the bound %d", len(resp.Executions), most, bound)
	}
	t.Logf("200 items: %d parts, the longest history %d events", len(resp.Executions), most)
}
