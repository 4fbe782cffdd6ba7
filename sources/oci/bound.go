package oci

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/legate-dev/legate/sources"
)

// Bounds of what a registry's answers may make legate hold, besides the
// layer (bounded by the extractor): a tenant's EnvoySource may name a
// registry of its own, and an answer of gigabytes, or tag pages that never
// end, would exhaust the memory every namespace shares.
const (
	// maxAnswerBytes bounds each answer but a blob: a manifest (an
	// artifact's is about 1 KiB), a page of tags, a token.
	maxAnswerBytes = 4 << 20
	// maxTagPages and maxTags bound a semver source's tag listing.
	maxTagPages = 100
	maxTags     = 100000
)

// boundedAnswers cuts every answer but a blob download (or its redirect
// to the registry's storage) at maxAnswerBytes.
type boundedAnswers struct{ next http.RoundTripper }

func (b boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil || isBlobRequest(req) {
		return resp, err
	}
	resp.Body = sources.BoundBody(resp.Body, maxAnswerBytes, fmt.Errorf("the answer of %s is over %d bytes, the bound of anything but a layer", req.URL.Host, maxAnswerBytes))
	return resp, nil
}

// isBlobRequest reports whether req downloads a blob, or follows the
// redirect of one.
func isBlobRequest(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return strings.Contains(first.URL.Path, "/blobs/")
}

// listTags lists repo's tags within maxTagPages pages and maxTags tags.
func listTags(ctx context.Context, repo name.Repository, opts []remote.Option) ([]string, error) {
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, repo)
	if err != nil {
		return nil, err
	}
	var tags []string
	for pages := 0; lister.HasNext(); pages++ {
		if pages == maxTagPages {
			return nil, fmt.Errorf("the registry lists tags in more than %d pages: pin a tag or a digest", maxTagPages)
		}
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, err
		}
		if tags = append(tags, page.Tags...); len(tags) > maxTags {
			return nil, fmt.Errorf("the registry lists more than %d tags: pin a tag or a digest", maxTags)
		}
	}
	return tags, nil
}
