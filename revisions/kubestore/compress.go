package kubestore

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// compress is a large revision's resources as spec.compressedResources
// holds them: gzip of their JSON.
func compress(rs []v1alpha1.RevisionResources) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(rs); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decompress reads spec.compressedResources, within maxUncompressed.
func decompress(data []byte) ([]v1alpha1.RevisionResources, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxUncompressed+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxUncompressed {
		return nil, fmt.Errorf("expands past %d bytes", maxUncompressed)
	}
	var rs []v1alpha1.RevisionResources
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, err
	}
	return rs, nil
}
