package temporal

import (
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// blobEncoding marks a payload that was moved to the Store: its data is
// the blob's name.
const blobEncoding = "binary/runner-blob"

// DefaultBlobThreshold: payloads larger than this travel as a Store name
// (Temporal refuses payloads over 2 MB and histories over 50 MB).
const DefaultBlobThreshold = 64 << 10

// blobCodec moves large payloads (a command's megabyte of output, a big
// model answer, a long workflow input) into the Store.
type blobCodec struct {
	store Store
	limit int
}

// DataConverter is the converter workers and clients must share: JSON,
// with payloads over limit bytes (0: DefaultBlobThreshold) kept in store.
func DataConverter(store Store, limit int) converter.DataConverter {
	if limit <= 0 {
		limit = DefaultBlobThreshold
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), &blobCodec{store: store, limit: limit})
}

func (c *blobCodec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if proto.Size(p) <= c.limit {
			out[i] = p
			continue
		}
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		name, err := c.store.Put(data)
		if err != nil {
			return nil, fmt.Errorf("keeping a %d-byte payload in the store: %w", len(data), err)
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(name)}
	}
	return out, nil
}

func (c *blobCodec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		data, err := c.store.Get(string(p.Data))
		if err != nil {
			return nil, err
		}
		q := &commonpb.Payload{}
		if err := proto.Unmarshal(data, q); err != nil {
			return nil, fmt.Errorf("payload blob %s: %w", p.Data, err)
		}
		out[i] = q
	}
	return out, nil
}
