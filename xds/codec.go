package xds

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// wireMsg is a response already in protobuf wire format, made of parts that
// are written back to back. The parts are shared, read-only byte slices (the
// resources of a type version encoded once); only the small per-stream parts
// (the nonce) are new for each send.
type wireMsg struct {
	parts [][]byte
}

// WireParts gives the parts to the lean transport (xds/transport), which
// writes them as they are.
func (m *wireMsg) WireParts() [][]byte { return m.parts }

func nonceField(num protowire.Number, nonce string) []byte {
	return appendStringField(make([]byte, 0, len(nonce)+2), num, nonce)
}

// codec is the server's gRPC codec: it hands wireMsg parts to the transport
// without copying or marshaling them, and leaves every other message to
// grpc-go's proto codec.
type codec struct {
	fallback encoding.CodecV2
}

func newCodec() codec { return codec{fallback: encoding.GetCodecV2(proto.Name)} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*wireMsg); ok {
		out := make(mem.BufferSlice, 0, len(m.parts))
		for _, p := range m.parts {
			if len(p) > 0 {
				out = append(out, mem.SliceBuffer(p))
			}
		}
		return out, nil
	}
	return c.fallback.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.fallback.Unmarshal(data, v) }

func (c codec) Name() string { return proto.Name }
