package temporal

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// A codec server lets Temporal's own tools (the Web UI, `temporal
// workflow show --codec-endpoint`) show what our payloads hold: a payload
// over the blob threshold is only a Store name in the history, and the
// tools ask the codec server (Temporal's remote codec HTTP API: POST
// …/decode and …/encode with a Payloads JSON body) to turn it back into
// the JSON it stands for.

// maxCodecBody bounds a request: a history's payloads are each under 2 MB.
const maxCodecBody = 64 << 20

// CodecHandler serves the remote codec API over store. origins are the
// Web UI origins (scheme://host:port) whose pages may call it (CORS); a
// tool that is no browser needs none.
func CodecHandler(store Store, origins []string) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(readableBlobs{&blobCodec{store: store, limit: DefaultBlobThreshold}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && slices.Contains(origins, o) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", o)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxCodecBody)
		codec.ServeHTTP(w, r)
	})
}

// readableBlobs decodes as blobCodec does, except that a blob it cannot
// read does not fail the whole request (the UI would then show nothing of
// the history): that payload becomes a JSON note naming the blob and why.
type readableBlobs struct{ c *blobCodec }

func (r readableBlobs) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return r.c.Encode(ps)
}

func (r readableBlobs) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		name := string(p.GetData())
		if _, err := hex.DecodeString(name); err != nil || len(name) != 64 {
			out[i] = blobNote(name, "not a blob name (want 64 hex digits)")
			continue
		}
		d, err := r.c.Decode([]*commonpb.Payload{p})
		if err != nil {
			out[i] = blobNote(name, err.Error())
			continue
		}
		out[i] = d[0]
	}
	return out, nil
}

func blobNote(name, why string) *commonpb.Payload {
	data, _ := json.Marshal(map[string]string{"runner_blob": name, "error": why})
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: data}
}
