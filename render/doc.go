// Package render turns a tree of configuration files into validated, hashed,
// per-node sets of Envoy v3 resources, or into a complete, positioned list of
// what is wrong with them. It is pure: no network, no clock, no store.
//
// The pipeline, in order:
//
//  1. Load walks an fs.FS (limits, symlinks, binary files) and gives each
//     file its node IDs (nodes/<nodeID>/ directories, legate.yaml files);
//     Options.Generators may add documents (CUE).
//  2. Each document is parsed keeping line and column (YAML through
//     go.yaml.in/yaml/v3's node API, JSON through a small parser building the
//     same nodes) and classified: filesystem-xDS DiscoveryResponse, single
//     "@type" resource, bootstrap static_resources, legate or MARIN3R
//     EnvoyConfig.
//  3. Every resource is decoded strictly with protojson; a decode error
//     column is mapped back to the YAML node it points at.
//  4. PGV ValidateAll runs on the resource and, recursively, on every message
//     packed in an Any; per-message rules (router last, unique domains) run
//     on the same walk, which also collects the names each resource uses.
//  5. Names are indexed per node and type; references, duplicate names and
//     listener addresses are checked per node.
//  6. Options.Checks (CUE policies) see every decoded resource.
//  7. Resources are serialized deterministically and hashed per type and
//     per node.
//
// Diagnostic.String is compiler-style; WriteDiagnostics prints text, JSON
// or GitHub workflow annotations. Decode turns a Resource.Body back into
// its message.
package render
