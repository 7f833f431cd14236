package revkv

import (
	"encoding/json"
)

// Codec turns values into bytes for a store on a directory (Open) and back.
// Its methods are called from several goroutines at once (writers and
// checkpoints encode, Open decodes on every core), so they must be safe for
// concurrent use, as the three here are.
type Codec[V any] interface {
	// Encode appends v's encoding to dst.
	Encode(dst []byte, v V) ([]byte, error)
	// Decode returns the value data encodes. It must not keep data.
	Decode(data []byte) (V, error)
}

// BytesCodec stores []byte values as they are; Decode returns a copy.
func BytesCodec() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Encode(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }
func (bytesCodec) Decode(data []byte) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	return append([]byte{}, data...), nil
}

// StringCodec stores strings as their bytes, UTF-8 or not.
func StringCodec() Codec[string] { return stringCodec{} }

type stringCodec struct{}

func (stringCodec) Encode(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil }
func (stringCodec) Decode(data []byte) (string, error)          { return string(data), nil }

// JSONCodec stores values as encoding/json does. A value json cannot encode
// (a channel, a func, a cycle) makes the write that carries it fail, writing
// nothing.
func JSONCodec[V any]() Codec[V] { return jsonCodec[V]{} }

type jsonCodec[V any] struct{}

func (jsonCodec[V]) Encode(dst []byte, v V) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func (jsonCodec[V]) Decode(data []byte) (V, error) {
	var v V
	err := json.Unmarshal(data, &v)
	return v, err
}
