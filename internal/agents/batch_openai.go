package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"time"

	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// OpenAI's Batch API (platform.openai.com/docs/api-reference/batch): the
// requests as a JSONL file uploaded with purpose batch (POST /files),
// a batch over it (POST /batches), polled (GET /batches/{id}) until it
// is completed, failed, expired or cancelled; answers in its output file,
// failures in its error file, each line naming its request's custom_id.

type oaBatch struct {
	ID           string            `json:"id"`
	Status       string            `json:"status"`
	OutputFileID string            `json:"output_file_id"`
	ErrorFileID  string            `json:"error_file_id"`
	CreatedAt    int64             `json:"created_at"`
	Metadata     map[string]string `json:"metadata"`
	Errors       *struct {
		Data []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"data"`
	} `json:"errors"`
}

// endpoint is the batch endpoint of the agent's API.
func (p *openAI) endpoint() string {
	if p.api() == plans.APIResponses {
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

func (p *openAI) batchExchange(log zerolog.Logger, method, path string, body []byte) *exchange {
	return &exchange{provider: "openai", log: log, method: method, url: p.baseURL + path, header: p.header(false),
		body: body, timeout: p.agent.Timeout, agent: p.agent.Name, mask: p.mask, apiError: openAIError}
}

func (p *openAI) submit(ctx context.Context, log zerolog.Logger, key string, calls map[string]*Request, adopt func(context.Context) (string, error)) (string, error) {
	ids := make([]string, 0, len(calls))
	for id := range calls {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var jsonl bytes.Buffer
	for _, id := range ids {
		// The bodies are an ordinary call's, made by the same encoder.
		var body any = p.wire(calls[id])
		if p.api() == plans.APIResponses {
			body = p.responsesWire(calls[id])
		}
		line, err := json.Marshal(map[string]any{"custom_id": id, "method": "POST", "url": p.endpoint(), "body": body})
		if err != nil {
			return "", fmt.Errorf("openai: %w", err)
		}
		jsonl.Write(line)
		jsonl.WriteByte('\n')
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("purpose", "batch")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="batch.jsonl"`)
	h.Set("Content-Type", "application/jsonl")
	fw, _ := mw.CreatePart(h)
	_, _ = fw.Write(jsonl.Bytes())
	_ = mw.Close()
	x := p.batchExchange(log, http.MethodPost, "/files", form.Bytes())
	x.header.Set("Content-Type", mw.FormDataContentType())
	data, _, err := p.t.post(ctx, x)
	if err != nil {
		return "", err
	}
	var file struct {
		ID string `json:"id"`
	}
	if err := decodeBatchJSON("openai", "file", data, &file); err != nil {
		return "", err
	}
	if file.ID == "" {
		return "", fmt.Errorf("openai: the uploaded file has no id: %s", errorBody(200, data))
	}
	body, _ := json.Marshal(map[string]any{"input_file_id": file.ID, "endpoint": p.endpoint(),
		"completion_window": "24h", "metadata": map[string]string{batchKeyMeta: key}})
	x = p.batchExchange(log, http.MethodPost, "/batches", body)
	x.beforeRetry = adoptBody(adopt)
	data, _, err = p.t.post(ctx, x)
	if err != nil {
		return "", err
	}
	var b oaBatch
	if err := decodeBatchJSON("openai", "batch", data, &b); err != nil {
		return "", err
	}
	if b.ID == "" {
		return "", fmt.Errorf("openai: the batch has no id: %s", errorBody(200, data))
	}
	return b.ID, nil
}

func (p *openAI) find(ctx context.Context, log zerolog.Logger, key string, since time.Time, n int) (string, error) {
	after := ""
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		data, err := p.t.get(ctx, p.batchExchange(log, http.MethodGet, "/batches?"+q.Encode(), nil))
		if err != nil {
			return "", err
		}
		var page struct {
			Data    []oaBatch `json:"data"`
			HasMore bool      `json:"has_more"`
			LastID  string    `json:"last_id"`
		}
		if err := decodeBatchJSON("openai", "batch list", data, &page); err != nil {
			return "", err
		}
		for _, b := range page.Data {
			if b.Metadata[batchKeyMeta] == key {
				return b.ID, nil
			}
		}
		// Newest first: past the intent's time, no batch can be ours.
		if !page.HasMore || len(page.Data) == 0 || page.LastID == "" ||
			time.Unix(page.Data[len(page.Data)-1].CreatedAt, 0).Before(since) {
			return "", nil
		}
		after = page.LastID
	}
}

func (p *openAI) poll(ctx context.Context, log zerolog.Logger, id string) (batchState, error) {
	data, err := p.t.get(ctx, p.batchExchange(log, http.MethodGet, "/batches/"+url.PathEscape(id), nil))
	if err != nil {
		return batchState{}, err
	}
	var b oaBatch
	if err := decodeBatchJSON("openai", "batch", data, &b); err != nil {
		return batchState{}, err
	}
	st := batchState{ID: id, Status: b.Status, OutputFile: b.OutputFileID, ErrorFile: b.ErrorFileID}
	switch b.Status {
	case "completed", "failed", "expired", "cancelled":
		st.Ended = true
	}
	if b.Status == "failed" {
		st.Reason = "failed"
		if b.Errors != nil && len(b.Errors.Data) > 0 {
			st.Reason = b.Errors.Data[0].Code + ": " + b.Errors.Data[0].Message
		}
	}
	return st, nil
}

func (p *openAI) results(ctx context.Context, log zerolog.Logger, st batchState) (map[string]BatchOutcome, error) {
	out := map[string]BatchOutcome{}
	for _, file := range []string{st.ErrorFile, st.OutputFile} { // an answer wins over an error
		if file == "" {
			continue
		}
		data, err := p.t.get(ctx, p.batchExchange(log, http.MethodGet, "/files/"+url.PathEscape(file)+"/content", nil))
		if err != nil {
			return nil, err
		}
		err = jsonLines(data, func(line []byte) error {
			var l struct {
				CustomID string `json:"custom_id"`
				Response *struct {
					StatusCode int             `json:"status_code"`
					Body       json.RawMessage `json:"body"`
				} `json:"response"`
				Error *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := decodeBatchJSON("openai", "batch result line", line, &l); err != nil {
				return err
			}
			switch {
			case l.Response != nil && l.Response.StatusCode/100 == 2:
				var resp *Response
				var err error
				if p.api() == plans.APIResponses {
					resp, err = parseResponses(l.Response.Body)
				} else {
					resp, err = parseOpenAI(l.Response.Body)
				}
				if err != nil {
					out[l.CustomID] = BatchOutcome{Reason: err.Error()}
				} else {
					out[l.CustomID] = BatchOutcome{Resp: resp}
				}
			case l.Response != nil:
				out[l.CustomID] = BatchOutcome{Reason: openAIError(l.Response.StatusCode, l.Response.Body).Error()}
			case l.Error != nil:
				out[l.CustomID] = BatchOutcome{Reason: l.Error.Code + ": " + l.Error.Message}
			default:
				out[l.CustomID] = BatchOutcome{Reason: "no response"}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p *openAI) cancel(ctx context.Context, log zerolog.Logger, id string) error {
	_, _, err := p.t.post(ctx, p.batchExchange(log, http.MethodPost, "/batches/"+url.PathEscape(id)+"/cancel", nil))
	return err
}
