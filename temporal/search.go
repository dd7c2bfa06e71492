package temporal

import (
	"context"
	"fmt"
	"sort"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The search attributes a run keeps up to date, so Temporal's own tools
// find runs by plan, status and version, and the runs waiting for a
// person: `temporal workflow list --query 'RunnerWaiting=true'`. A
// namespace must have them registered (a dev server with
// --search-attribute, a cluster with `temporal operator search-attribute
// create`); where it does not, runs go on without them.
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
