// Package extensions registers every Envoy v3 API type, core and contrib,
// and the cncf/xds types with the protobuf global registry by importing
// their Go packages. Importing it for its side effect lets protojson resolve
// any "@type" a configuration names.
//
// extensions_gen.go is generated: run `go generate ./render/internal/extensions`
// after changing the go-control-plane versions in go.mod.
package extensions

//go:generate go run ../extgen extensions_gen.go
