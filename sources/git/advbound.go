package git

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/legate-dev/legate/sources"
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
	resp.Body = sources.BoundBody(resp.Body, maxAdvertisement, fmt.Errorf("the ref advertisement of %s is over %d MiB, legate's bound", req.URL.Host, maxAdvertisement>>20))
	return resp, nil
}
