package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Anthropic's Message Batches (docs.anthropic.com/en/api/creating-message-batches):
// the requests, each {custom_id, params}, in one POST /v1/messages/batches,
// polled (GET /v1/messages/batches/{id}) until processing_status is
// ended; results at its results_url, a JSONL file whose lines are
// succeeded, errored, canceled or expired results by custom_id. A batch
// carries no metadata, so its key is in each custom_id (customID).

type anBatch struct {
	ID               string `json:"id"`
	ProcessingStatus string `json:"processing_status"`
	ResultsURL       string `json:"results_url"`
	CreatedAt        string `json:"created_at"`
	RequestCounts    struct {
		Processing int `json:"processing"`
		Succeeded  int `json:"succeeded"`
		Errored    int `json:"errored"`
		Canceled   int `json:"canceled"`
		Expired    int `json:"expired"`
	} `json:"request_counts"`
}

func (b *anBatch) requests() int {
	c := b.RequestCounts
	return c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired
}

func (p *anthropic) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("anthropic-version", anthropicVersion)
	h.Set("x-api-key", p.key)
	return h
}

func (p *anthropic) batchExchange(log zerolog.Logger, method, u string, body []byte) *exchange {
	return &exchange{provider: "anthropic", log: log, method: method, url: u, header: p.header(),
		body: body, timeout: p.agent.Timeout, agent: p.agent.Name, mask: p.mask, apiError: anthropicError}
}

func (p *anthropic) batchesURL() string { return p.baseURL + "/v1/messages/batches" }

func (p *anthropic) submit(ctx context.Context, log zerolog.Logger, key string, calls map[string]*Request, adopt func(context.Context) (string, error)) (string, error) {
	ids := make([]string, 0, len(calls))
	for id := range calls {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	type item struct {
		CustomID string     `json:"custom_id"`
		Params   *anRequest `json:"params"`
	}
	body := struct {
		Requests []item `json:"requests"`
	}{}
	for _, id := range ids {
		body.Requests = append(body.Requests, item{CustomID: id, Params: p.wire(calls[id])}) // an ordinary call's body
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("anthropic: %w", err)
	}
	x := p.batchExchange(log, http.MethodPost, p.batchesURL(), raw)
	x.beforeRetry = adoptBody(adopt)
	data, _, err := p.t.post(ctx, x)
	if err != nil {
		return "", err
	}
	var b anBatch
	if err := decodeBatchJSON("anthropic", "message batch", data, &b); err != nil {
		return "", err
	}
	if b.ID == "" {
		return "", fmt.Errorf("anthropic: the message batch has no id: %s", errorBody(200, data))
	}
	return b.ID, nil
}

// find: the newest batch made since the intent with as many requests,
// there being no metadata to tell; results checks its custom_ids.
func (p *anthropic) find(ctx context.Context, log zerolog.Logger, key string, since time.Time, n int) (string, error) {
	after := ""
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after_id", after)
		}
		data, err := p.t.get(ctx, p.batchExchange(log, http.MethodGet, p.batchesURL()+"?"+q.Encode(), nil))
		if err != nil {
			return "", err
		}
		var page struct {
			Data    []anBatch `json:"data"`
			HasMore bool      `json:"has_more"`
			LastID  string    `json:"last_id"`
		}
		if err := decodeBatchJSON("anthropic", "message batch list", data, &page); err != nil {
			return "", err
		}
		old := false
		for _, b := range page.Data {
			t, err := time.Parse(time.RFC3339Nano, b.CreatedAt)
			if err == nil && t.Before(since) {
				old = true
				continue
			}
			if b.requests() == n && b.ProcessingStatus != "canceling" {
				return b.ID, nil
			}
		}
		if old || !page.HasMore || page.LastID == "" {
			return "", nil
		}
		after = page.LastID
	}
}

func (p *anthropic) poll(ctx context.Context, log zerolog.Logger, id string) (batchState, error) {
	data, err := p.t.get(ctx, p.batchExchange(log, http.MethodGet, p.batchesURL()+"/"+url.PathEscape(id), nil))
	if err != nil {
		return batchState{}, err
	}
	var b anBatch
	if err := decodeBatchJSON("anthropic", "message batch", data, &b); err != nil {
		return batchState{}, err
	}
	return batchState{ID: id, Status: b.ProcessingStatus, Ended: b.ProcessingStatus == "ended", ResultsURL: b.ResultsURL}, nil
}

func (p *anthropic) results(ctx context.Context, log zerolog.Logger, st batchState) (map[string]BatchOutcome, error) {
	if st.ResultsURL == "" {
		return nil, fmt.Errorf("anthropic: the ended batch has no results_url")
	}
	// The key goes only where the API is: a results_url elsewhere is
	// not followed.
	ru, err1 := url.Parse(st.ResultsURL)
	bu, err2 := url.Parse(p.baseURL)
	if err1 != nil || err2 != nil || ru.Scheme != bu.Scheme || !strings.EqualFold(ru.Host, bu.Host) {
		return nil, fmt.Errorf("anthropic: the batch's results_url is not at the agent's base_url (%s)", peerURL(p.baseURL))
	}
	data, err := p.t.get(ctx, p.batchExchange(log, http.MethodGet, st.ResultsURL, nil))
	if err != nil {
		return nil, err
	}
	out := map[string]BatchOutcome{}
	err = jsonLines(data, func(line []byte) error {
		var l struct {
			CustomID string `json:"custom_id"`
			Result   struct {
				Type    string          `json:"type"` // succeeded, errored, canceled, expired
				Message json.RawMessage `json:"message"`
				Error   json.RawMessage `json:"error"`
			} `json:"result"`
		}
		if err := decodeBatchJSON("anthropic", "batch result line", line, &l); err != nil {
			return err
		}
		switch l.Result.Type {
		case "succeeded":
			resp, err := parseAnthropic(l.Result.Message)
			if err != nil {
				out[l.CustomID] = BatchOutcome{Reason: err.Error()}
			} else {
				out[l.CustomID] = BatchOutcome{Resp: resp}
			}
		case "errored":
			out[l.CustomID] = BatchOutcome{Reason: "errored: " + anthropicError(400, l.Result.Error).Message}
		default:
			out[l.CustomID] = BatchOutcome{Reason: l.Result.Type}
		}
		return nil
	})
	return out, err
}

func (p *anthropic) cancel(ctx context.Context, log zerolog.Logger, id string) error {
	_, _, err := p.t.post(ctx, p.batchExchange(log, http.MethodPost, p.batchesURL()+"/"+url.PathEscape(id)+"/cancel", nil))
	return err
}
