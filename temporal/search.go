package temporal

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The search attributes a run keeps up to date, so Temporal's own tools
// find runs by plan, status and version, and the runs waiting for a
// person: `temporal workflow list --query 'RunnerWaiting=true'`. A
// namespace must have them registered: runner registers those it lacks
// when a worker or a run starts (RegisterSearchAttributes), where the
// namespace lets it (a dev server, a self-hosted cluster); where it does
// not (Temporal Cloud, an API key without the right), it says so once
// and runs go on without them.
var (
	saPlan    = temporal.NewSearchAttributeKeyKeyword("RunnerPlan")
	saStatus  = temporal.NewSearchAttributeKeyKeyword("RunnerStatus")
	saWaiting = temporal.NewSearchAttributeKeyBool("RunnerWaiting")
	saVersion = temporal.NewSearchAttributeKeyKeyword("RunnerVersion")
)

// SearchAttributes are the attributes' names and types, as
// `temporal operator search-attribute create` takes them.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	"RunnerPlan":    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"RunnerStatus":  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"RunnerWaiting": enumspb.INDEXED_VALUE_TYPE_BOOL,
	"RunnerVersion": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// MissingSearchAttributes lists the attributes namespace ns lacks (or
// holds with another type), sorted; none means runs may set them.
func MissingSearchAttributes(ctx context.Context, c client.Client, ns string) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("listing the namespace's search attributes: %w", err)
	}
	var missing []string
	for name, typ := range SearchAttributes {
		if resp.GetCustomAttributes()[name] != typ {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// startAttributes are a run's attributes when it starts.
func startAttributes(plan, version string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(saPlan.ValueSet(plan), saVersion.ValueSet(version),
		saStatus.ValueSet("running"), saWaiting.ValueSet(false))
}

// upsert sets attributes when the run was started with them
// (Options.SearchAttributes: decided by the starter, recorded in the
// history, so a replay does the same).
func (it *interp) upsert(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) {
	if !it.in.Options.SearchAttributes {
		return
	}
	// An attribute the namespace lost since the start fails only this
	// update, not the run.
	_ = workflow.UpsertTypedSearchAttributes(ctx, updates...)
}

// RegisterSearchAttributes adds to namespace ns the search attributes it
// lacks and reports whether it has them all now; when it does not, warn
// is called once with what is missing, why, and how to register them.
func RegisterSearchAttributes(ctx context.Context, c client.Client, ns string, warn func(string)) bool {
	missing, err := MissingSearchAttributes(ctx, c, ns)
	if err == nil && len(missing) > 0 {
		add := map[string]enumspb.IndexedValueType{}
		for _, name := range missing {
			add[name] = SearchAttributes[name]
		}
		_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: add})
		if err == nil {
			missing, err = addedSearchAttributes(ctx, c, ns)
		}
	}
	switch {
	case err != nil && len(missing) == 0:
		warn(fmt.Sprintf("namespace %s: runner's search attributes: %v; runs go on without them", ns, err))
	case err != nil || len(missing) > 0:
		var how []string
		for _, name := range missing {
			how = append(how, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s",
				ns, name, searchAttributeType(SearchAttributes[name])))
		}
		why := "they are not listed after adding them"
		if err != nil {
			why = fmt.Sprintf("runner may not add them (%v)", err)
		}
		warn(fmt.Sprintf("namespace %s lacks runner's search attributes %s and %s; runs go on without them. Register them with:\n  %s",
			ns, strings.Join(missing, ", "), why, strings.Join(how, "\n  ")))
	default:
		return true
	}
	return false
}

// addedSearchAttributes waits (a few seconds at most) for attributes
// just added to be listed: a run may set them once they are.
func addedSearchAttributes(ctx context.Context, c client.Client, ns string) ([]string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		missing, err := MissingSearchAttributes(ctx, c, ns)
		if err != nil || len(missing) == 0 || time.Now().After(deadline) {
			return missing, err
		}
		select {
		case <-ctx.Done():
			return missing, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// searchAttributeType is a type as `temporal operator search-attribute
// create --type` takes it.
func searchAttributeType(t enumspb.IndexedValueType) string {
	if t == enumspb.INDEXED_VALUE_TYPE_BOOL {
		return "Bool"
	}
	return "Keyword"
}
