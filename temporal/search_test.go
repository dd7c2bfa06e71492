package temporal

import (
	"context"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// opsClient is a client whose operator service is fake (the rest panics).
type opsClient struct {
	client.Client
	ops *fakeOps
}

func (c opsClient) OperatorService() operatorservice.OperatorServiceClient { return c.ops }

type fakeOps struct {
	operatorservice.OperatorServiceClient
	have            map[string]enumspb.IndexedValueType
	listErr, addErr error
	added           []string
}

func (f *fakeOps) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.have}, nil
}

func (f *fakeOps) AddSearchAttributes(_ context.Context, r *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	if f.addErr != nil {
		return nil, f.addErr
	}
	for name, typ := range r.SearchAttributes {
		f.have[name] = typ
		f.added = append(f.added, name)
	}
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

// runner registers the search attributes a namespace lacks; where it may
// not, it says once what is missing and how to register it, and runs go
// on without them.
func TestRegisterSearchAttributes(t *testing.T) {
	all := func() map[string]enumspb.IndexedValueType {
		m := map[string]enumspb.IndexedValueType{}
		for k, v := range SearchAttributes {
			m[k] = v
		}
		return m
	}
	denied := status.Error(codes.PermissionDenied, "request unauthorized")
	tests := []struct {
		name  string
		ops   *fakeOps
		ready bool
		added int
		warn  []string // what the one warning says; nil: none
	}{
		{"all there: nothing added", &fakeOps{have: all()}, true, 0, nil},
		{"none there: all four added", &fakeOps{have: map[string]enumspb.IndexedValueType{}}, true, 4, nil},
		{"one there: the other three added", &fakeOps{have: map[string]enumspb.IndexedValueType{"RunnerPlan": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}, true, 3, nil},
		{"not allowed to add", &fakeOps{have: map[string]enumspb.IndexedValueType{"RunnerPlan": enumspb.INDEXED_VALUE_TYPE_KEYWORD}, addErr: denied}, false, 0,
			[]string{"namespace ns lacks runner's search attributes RunnerStatus, RunnerVersion, RunnerWaiting", "may not add them", "request unauthorized",
				"temporal operator search-attribute create --namespace ns --name RunnerWaiting --type Bool"}},
		{"not allowed to list", &fakeOps{listErr: denied}, false, 0, []string{"namespace ns: runner's search attributes", "request unauthorized", "runs go on without them"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warned []string
			ready := RegisterSearchAttributes(context.Background(), opsClient{ops: tt.ops}, "ns", func(msg string) { warned = append(warned, msg) })
			if ready != tt.ready {
				t.Errorf("ready = %v, want %v", ready, tt.ready)
			}
			if len(tt.ops.added) != tt.added {
				t.Errorf("added %v, want %d", tt.ops.added, tt.added)
			}
			switch {
			case tt.warn == nil && len(warned) > 0:
				t.Errorf("warned %q, want no warning", warned)
			case tt.warn != nil && len(warned) != 1:
				t.Errorf("warned %d times (%q), want once", len(warned), warned)
			case tt.warn != nil:
				for _, w := range tt.warn {
					if !strings.Contains(warned[0], w) {
						t.Errorf("the warning lacks %q:\n%s", w, warned[0])
					}
				}
			}
		})
	}
}
