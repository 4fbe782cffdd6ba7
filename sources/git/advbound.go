package git

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAdvertisement bounds the ref advertisement of a Git server over HTTP
// (GET info/refs), which go-git reads whole into memory before anything
// else: a repository with 100 000 refs advertises about 6 MiB. The pack
// that follows is bounded by the repository size limit (quotaFS); the
// advertisement of a hostile server (a tenant's EnvoySource may name one)
// was not, and could be gigabytes long.
const maxAdvertisement = 32 << 20

// boundedAdvertisements cuts every answer to a ref advertisement request
// at maxAdvertisement.
type boundedAdvertisements struct{ next http.RoundTripper }

func (b boundedAdvertisements) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/info/refs") {
		return resp, err
	}
	resp.Body = &advertisementBody{ReadCloser: resp.Body, left: maxAdvertisement, host: req.URL.Host}
	return resp, nil
}

type advertisementBody struct {
	io.ReadCloser
	left int64
	host string
}

func (b *advertisementBody) Read(p []byte) (int, error) {
	// One byte past the bound tells an answer over it from one at it.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, fmt.Errorf("the ref advertisement of %s is over %d MiB, legate's bound", b.host, maxAdvertisement>>20)
	}
	return n, err
}
